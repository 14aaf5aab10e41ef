//! I-Match digests with randomised sub-lexicons (Chowdhury et al. 2002; Kołcz et al. 2004;
//! seed 004). Spec: `docs/fingerprint-spec.md`, section "I-Match v1".
//!
//! **Lexicon.** The words of the IDF dictionary (the fingerprinter's: bundled jieba one or the
//! user's) whose IDF lies in the middle band: with the dictionary's IDF values sorted
//! ascending (`N` of them), `lo` = the value at index `⌊low_fraction·N⌋` and `hi` = the value
//! at index `min(⌈(1−high_fraction)·N⌉, N−1)`; a term is in the lexicon iff `idf ≥ lo` and
//! (`high_fraction = 0` or `idf < hi`). Words missing from the dictionary get the median IDF,
//! so they are in the lexicon (English text and new words count).
//!
//! **Terms of a document.** Those of the simhash feature method chosen for it (`auto`: jieba
//! terms for Han-heavy text, words otherwise, character n-grams for other spaceless scripts),
//! without stop words and words shorter than `min_word_chars`, kept when in the lexicon.
//!
//! **Digests.** Digest 0 is XXH3-128 (seed 0) of the sorted distinct lexicon terms, each as a
//! 4-byte little-endian length followed by its UTF-8 bytes. Sub-lexicon `j` (1..=K) drops each
//! term `t` with `XXH3-64(t, seed + j) < drop_fraction·2^64` (a seeded random subset, the same
//! for every document); digest `j` hashes what remains. A digest exists only if it covers at
//! least `min_terms` terms: short texts with fewer lexicon terms get **no** I-Match signature
//! (too few terms make false matches likely, seed 004) and never match by I-Match.
//!
//! Two documents are duplicates when some digest `j` is equal (same `j`). One changed lexicon
//! word changes digest 0 but, with probability ≈ 1 − (1 − drop_fraction)^K, some sub-lexicon
//! dropped that word and still matches.
//!
//! ```
//! use neardup::imatch::{IMatcher, IMatchOptions};
//! use neardup::{FingerprintConfig, Fingerprinter};
//! let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
//! let im = IMatcher::new(&fp, IMatchOptions { min_terms: 3, ..Default::default() }).unwrap();
//! let a = im.digests("wombats dig burrows using strong claws and teeth").unwrap();
//! let b = im.digests("Wombats dig burrows, using their strong claws and the teeth!").unwrap();
//! assert_eq!(a[0], b[0]); // stop words and punctuation are outside the lexicon
//! ```

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::detect::{Detector, Verdict};
use crate::error::{Error, Result};
use crate::exact::Chains;
use crate::fingerprint::Fingerprinter;
use crate::hash::{xxh3_seeded, FastBuild};
use crate::idf::BUNDLED_IDF;

/// Version of the I-Match specification implemented here.
pub const IMATCH_VERSION: u32 = 1;

/// I-Match options (serde defaults = [`Default`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IMatchOptions {
    /// Fraction of the dictionary (lowest IDF: most common words) left out, in [0, 1). Default 0.05.
    pub low_fraction: f64,
    /// Fraction of the dictionary (highest IDF: rarest words) left out, in [0, 1). Default 0.
    pub high_fraction: f64,
    /// Number K of randomised sub-lexicons. Default 4 (0..=64).
    pub sub_lexicons: usize,
    /// Fraction of the lexicon each sub-lexicon drops, in [0, 1). Default 0.2.
    pub drop_fraction: f64,
    /// Minimum number of terms a digest covers. Default 8.
    pub min_terms: usize,
    /// Seed of the sub-lexicon choice. Default 1.
    pub seed: u64,
}

impl Default for IMatchOptions {
    fn default() -> Self {
        IMatchOptions {
            low_fraction: 0.05,
            high_fraction: 0.0,
            sub_lexicons: 4,
            drop_fraction: 0.2,
            min_terms: 8,
            seed: 1,
        }
    }
}

/// Computes I-Match digests.
#[derive(Debug, Clone)]
pub struct IMatcher {
    fp: Fingerprinter,
    opts: IMatchOptions,
    lo: f64,
    hi: f64,
}

/// A document's digests: `(j, digest)` for each lexicon `j` (0 = full) with enough terms.
pub type Digests = Vec<(u8, u128)>;

impl IMatcher {
    /// Builds the lexicon bounds from `fp`'s IDF dictionary.
    pub fn new(fp: &Fingerprinter, opts: IMatchOptions) -> Result<Self> {
        let frac = |name: &str, v: f64| {
            if (0.0..1.0).contains(&v) {
                Ok(())
            } else {
                Err(Error::Config(format!(
                    "imatch {name} = {v} is out of range; use a fraction in [0, 1)"
                )))
            }
        };
        frac("low_fraction", opts.low_fraction)?;
        frac("high_fraction", opts.high_fraction)?;
        frac("drop_fraction", opts.drop_fraction)?;
        if opts.low_fraction + opts.high_fraction >= 1.0 {
            return Err(Error::Config(
                "imatch low_fraction + high_fraction must be below 1 (the lexicon would be empty)"
                    .into(),
            ));
        }
        if opts.sub_lexicons > 64 {
            return Err(Error::Config(format!(
                "imatch sub_lexicons = {} is out of range; use 0..=64 (default 4)",
                opts.sub_lexicons
            )));
        }
        if opts.min_terms == 0 {
            return Err(Error::Config(
                "imatch min_terms must be at least 1 (default 8)".into(),
            ));
        }
        let owned;
        let text: &str = match &fp.config().features.idf_file {
            Some(p) => {
                owned = read(p)?;
                &owned
            }
            None => BUNDLED_IDF,
        };
        let mut values: Vec<f64> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .filter_map(|l| l.split_whitespace().nth(1)?.parse().ok())
            .collect();
        if values.is_empty() {
            return Err(Error::Config("the IDF dictionary has no entries".into()));
        }
        values.sort_unstable_by(f64::total_cmp);
        let n = values.len();
        let lo = values[((opts.low_fraction * n as f64).floor() as usize).min(n - 1)];
        let hi = if opts.high_fraction == 0.0 {
            f64::INFINITY
        } else {
            values[(((1.0 - opts.high_fraction) * n as f64).ceil() as usize).min(n - 1)]
        };
        Ok(IMatcher {
            fp: fp.clone(),
            opts,
            lo,
            hi,
        })
    }

    /// The options.
    pub fn options(&self) -> &IMatchOptions {
        &self.opts
    }

    /// The IDF band `[lo, hi)` of the lexicon.
    pub fn band(&self) -> (f64, f64) {
        (self.lo, self.hi)
    }

    /// Whether `term` is in the lexicon.
    pub fn in_lexicon(&self, term: &str) -> bool {
        let idf = self.fp.extractor().idf().idf(term);
        idf >= self.lo && idf < self.hi
    }

    /// The sorted distinct lexicon terms of normalised `text`.
    pub fn terms_normalized(&self, text: &str) -> Vec<String> {
        let fx = self.fp.extractor();
        let min_chars = fx.options().min_word_chars;
        let (features, _) = fx.features_with_method(text);
        let mut terms: Vec<String> = features
            .into_iter()
            .map(|f| f.text)
            .filter(|t| {
                t.chars().count() >= min_chars && !fx.stopwords().contains(t) && self.in_lexicon(t)
            })
            .collect();
        terms.sort_unstable();
        terms.dedup();
        terms
    }

    /// The digests of normalised `text` (empty when it has fewer than `min_terms` lexicon
    /// terms).
    pub fn digests_normalized(&self, text: &str) -> Digests {
        let terms = self.terms_normalized(text);
        let mut out = Vec::new();
        let mut buf = Vec::new();
        for j in 0..=self.opts.sub_lexicons {
            buf.clear();
            let mut count = 0;
            for t in &terms {
                if j > 0 && self.dropped(t, j) {
                    continue;
                }
                count += 1;
                buf.extend_from_slice(&(t.len() as u32).to_le_bytes());
                buf.extend_from_slice(t.as_bytes());
            }
            if count >= self.opts.min_terms {
                out.push((j as u8, crate::hash::xxh3_128(&buf)));
            }
        }
        out
    }

    /// Whether sub-lexicon `j` (≥ 1) drops `term`.
    pub fn dropped(&self, term: &str, j: usize) -> bool {
        let h = xxh3_seeded(term.as_bytes(), self.opts.seed.wrapping_add(j as u64));
        (h as f64) < self.opts.drop_fraction * 18_446_744_073_709_551_616.0
    }

    /// The digests of raw `text` (normalised with the fingerprinter's configuration); fails
    /// with [`Error::EmptyDocument`] when it has no letter or digit.
    pub fn digests(&self, text: &str) -> Result<Digests> {
        let n = self.fp.normalize(text);
        if !n.chars().any(crate::features::is_word_char) {
            return Err(Error::EmptyDocument {
                input_bytes: text.len(),
            });
        }
        Ok(self.digests_normalized(&n))
    }
}

fn read(p: &Path) -> Result<String> {
    std::fs::read_to_string(p).map_err(|source| Error::Io {
        path: p.to_owned(),
        source,
    })
}

/// I-Match detector: duplicate when any digest (same sub-lexicon) is equal.
#[derive(Debug, Clone)]
pub struct IMatchDetector {
    im: IMatcher,
    /// One multimap per lexicon `j` (a slot has at most one digest per lexicon).
    chains: Vec<Chains>,
    docs: Vec<u32>,
}

impl IMatchDetector {
    /// A detector with `fp`'s normalisation, features and IDF dictionary.
    pub fn new(fp: &Fingerprinter, opts: IMatchOptions) -> Result<Self> {
        let k = opts.sub_lexicons;
        Ok(IMatchDetector {
            im: IMatcher::new(fp, opts)?,
            chains: (0..=k).map(|_| Chains::default()).collect(),
            docs: Vec::new(),
        })
    }

    /// The digest computer.
    pub fn matcher(&self) -> &IMatcher {
        &self.im
    }
}

impl Detector for IMatchDetector {
    type Sketch = Digests;

    fn name(&self) -> String {
        format!(
            "imatch(K={},min_terms={})",
            self.im.opts.sub_lexicons, self.im.opts.min_terms
        )
    }

    fn sketch(&self, text: &str) -> Result<Digests> {
        self.im.digests(text)
    }

    fn find(&self, s: &Digests) -> Vec<Verdict> {
        let mut seen: std::collections::HashSet<u32, FastBuild> = Default::default();
        let mut out = Vec::new();
        for (j, d) in s {
            let Some(chains) = self.chains.get(*j as usize) else {
                continue;
            };
            chains.for_each(d, |slot| {
                if seen.insert(slot) {
                    out.push(Verdict {
                        of: self.docs[slot as usize],
                        distance: None,
                        similarity: None,
                        stage: crate::detect::Stage::Imatch,
                    });
                }
            });
        }
        out
    }

    fn insert(&mut self, doc: u32, s: Digests) {
        if s.is_empty() {
            return;
        }
        let slot = self.docs.len() as u32;
        self.docs.push(doc);
        for (j, d) in s {
            if let Some(c) = self.chains.get_mut(j as usize) {
                c.insert(d, slot);
            }
        }
    }

    fn heap_bytes(&self) -> usize {
        self.chains.iter().map(Chains::heap_bytes).sum::<usize>() + self.docs.capacity() * 4
    }
}
