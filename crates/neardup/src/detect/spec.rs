//! Which detector, with which settings: a typed description ([`DetectorSpec`]) that every face
//! builds from (the `dedup` command's flags, a program's configuration), so the defaults live in
//! one place and the detector is built the same way everywhere.
//!
//! Detectors have different sketch types, so [`DetectorSpec::build`] hands a *maker* of the
//! chosen detector to a [`WithDetector`] visitor, which is generic over the detector type (the
//! batch pipeline builds two identical detectors: one sketches the next batch while the other
//! decides).
//!
//! ```
//! use neardup::dedup::{Deduper, Keep};
//! use neardup::detect::spec::{DetectorSpec, WithDetector};
//! use neardup::detect::Detector;
//! use neardup::{FingerprintConfig, Fingerprinter};
//!
//! /// Deduplicates a few texts with whatever detector the spec names.
//! struct Run<'a>(&'a [&'a str]);
//! impl WithDetector for Run<'_> {
//!     type Output = neardup::Result<Vec<Option<u32>>>;
//!     fn with<D: Detector>(self, make: impl Fn() -> neardup::Result<D>) -> Self::Output {
//!         let mut dd = Deduper::new(make()?);
//!         dd.push_batch(self.0).map_err(|e| e.source)?;
//!         Ok(dd.finish(Keep::First).outcomes.iter().map(|o| o.duplicate_of).collect())
//!     }
//! }
//! let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
//! let texts = ["the cat sat on the mat", "the cat sat on a mat", "a different text entirely"];
//! let out = DetectorSpec::default().build(&fp, Run(&texts)).unwrap();
//! assert_eq!(out, [None, Some(0), None]);
//! ```

use crate::detect::template_veto::{TemplateVeto, TemplateVetoOptions};
use crate::detect::{Detector, SimhashDetector};
use crate::error::{Error, Result};
use crate::exact::ExactDetector;
use crate::fingerprint::Fingerprinter;
use crate::imatch::{IMatchDetector, IMatchOptions};
use crate::minhash::{MinHashDetector, MinHashDetectorOptions, MinHashOptions, DEFAULT_THRESHOLD};
use crate::policy::{AutoDetector, LongMethod, PolicyOptions};
use crate::shorttext::{ShortTextDetector, ShortTextOptions};

/// The detector methods.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Method {
    /// Exact digest, then the short-text path, then MinHash LSH ([`crate::policy`]).
    #[default]
    Auto,
    /// Simhash within a Hamming distance.
    Simhash,
    /// MinHash LSH alone.
    Minhash,
    /// I-Match alone.
    Imatch,
    /// The exact digest alone.
    Exact,
    /// The short-text path alone.
    Short,
}

impl Method {
    /// Every method, in the order the command line lists them.
    pub const ALL: [Method; 6] = [
        Method::Auto,
        Method::Simhash,
        Method::Minhash,
        Method::Imatch,
        Method::Exact,
        Method::Short,
    ];

    /// Its name (`auto`, `simhash`, …).
    pub fn name(self) -> &'static str {
        match self {
            Method::Auto => "auto",
            Method::Simhash => "simhash",
            Method::Minhash => "minhash",
            Method::Imatch => "imatch",
            Method::Exact => "exact",
            Method::Short => "short",
        }
    }

    /// Whether the method reads the Hamming distance ([`DetectorSpec::distance`]).
    pub fn uses_distance(self) -> bool {
        self == Method::Simhash
    }

    /// Whether the method reads the Jaccard threshold ([`DetectorSpec::threshold`]).
    pub fn uses_threshold(self) -> bool {
        matches!(self, Method::Minhash | Method::Auto)
    }

    /// Whether the template veto wraps the method by default (the set-similarity methods,
    /// which a long shared template can fool).
    pub fn vetoed(self) -> bool {
        matches!(self, Method::Minhash | Method::Auto)
    }
}

impl std::str::FromStr for Method {
    type Err = Error;
    fn from_str(s: &str) -> Result<Method> {
        Method::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                Error::Config(format!(
                    "unknown method `{s}`; use auto, simhash, minhash, imatch, exact or short"
                ))
            })
    }
}

/// The MinHash threshold of `auto`'s long path under the template veto (batch dedup's
/// default): the veto keeps the precision a lower threshold would give away on documents that
/// share template lines, so the recall of 0.5 comes without that cost (docs/quality.md).
/// Without the veto (the online engine, `--no-template-veto`) the threshold stays
/// [`DEFAULT_THRESHOLD`].
pub const VETOED_AUTO_THRESHOLD: f64 = 0.5;

/// A detector and its settings; [`Default`] is the defaults of `neardup dedup`.
#[derive(Debug, Clone, PartialEq)]
pub struct DetectorSpec {
    /// The method (default `auto`).
    pub method: Method,
    /// Hamming distance of simhash (default 3).
    pub distance: u32,
    /// Jaccard threshold of MinHash, for `minhash` and `auto`'s long path (default
    /// [`DetectorSpec::default_threshold`]: [`VETOED_AUTO_THRESHOLD`] for `auto` under the
    /// template veto, [`DEFAULT_THRESHOLD`] otherwise).
    pub threshold: f64,
    /// Wrap `minhash` and `auto` in the template veto (default true; batch only: it learns
    /// which lines repeat across the corpus).
    pub template_veto: bool,
    /// `n` of MinHash's character shingles (Han-heavy and spaceless text), for `minhash` and
    /// `auto`'s long path, 1..=64 (default 5, [`MinHashOptions`]).
    pub char_ngram: usize,
    /// `n` of MinHash's word shingles (other text), 1..=16 (default 3).
    pub word_ngram: usize,
    /// MinHash's signature scheme (default [`MinHashOptions`]'s: v3,
    /// [`Scheme::CodePointSketch`](crate::minhash::Scheme::CodePointSketch)).
    pub scheme: crate::minhash::Scheme,
    /// Bits kept of each MinHash signature entry, 8, 16 or 32 (default
    /// [`DEFAULT_BITS`](crate::minhash::DEFAULT_BITS); [`MinHashDetectorOptions::bits`]).
    pub bits: u32,
    /// The short path's quotes: the share of a shorter text that may lie outside the longer
    /// at one edge, for `auto` and `short`, 0 to 0.5, 0 off (default 0.2,
    /// [`ContainmentOptions::edge`](crate::shorttext::ContainmentOptions::edge)).
    pub quote_edge: f64,
    /// Quotes of long texts: `auto` also indexes each long text by its sentences, so that one
    /// to three of them quoted in a shorter text are found (default true,
    /// [`PolicyOptions::passages`], [`crate::detect::passages`]).
    pub passages: bool,
}

impl Default for DetectorSpec {
    fn default() -> Self {
        let m = MinHashOptions::default();
        DetectorSpec {
            method: Method::Auto,
            distance: 3,
            threshold: VETOED_AUTO_THRESHOLD,
            template_veto: true,
            char_ngram: m.char_ngram,
            word_ngram: m.word_ngram,
            scheme: m.scheme,
            bits: crate::minhash::DEFAULT_BITS,
            quote_edge: crate::shorttext::ContainmentOptions::default().edge,
            passages: true,
        }
    }
}

impl DetectorSpec {
    /// The default Jaccard threshold of `method` with or without the template veto.
    ///
    /// ```
    /// use neardup::detect::spec::{DetectorSpec, Method};
    /// assert_eq!(DetectorSpec::default_threshold(Method::Auto, true), 0.5);
    /// assert_eq!(DetectorSpec::default_threshold(Method::Auto, false), 0.6);
    /// assert_eq!(DetectorSpec::default_threshold(Method::Minhash, true), 0.6);
    /// ```
    pub fn default_threshold(method: Method, template_veto: bool) -> f64 {
        if method == Method::Auto && template_veto {
            VETOED_AUTO_THRESHOLD
        } else {
            DEFAULT_THRESHOLD
        }
    }
}

/// What to do with the detector a spec names: called with a maker of identical detectors.
pub trait WithDetector {
    /// What it returns.
    type Output;
    /// Runs with `make`, which builds the detector (as often as needed, identically). Detectors
    /// own their indexes (`'static`), so a visitor may keep one (e.g. boxed behind a trait).
    fn with<D: Detector + 'static>(self, make: impl Fn() -> Result<D>) -> Self::Output;
}

impl DetectorSpec {
    /// The `auto` policy's options under this spec.
    pub fn policy(&self) -> PolicyOptions {
        let mut opts = PolicyOptions {
            simhash_k: self.distance,
            ..PolicyOptions::default()
        };
        opts.minhash.lsh.threshold = self.threshold;
        opts.minhash.minhash.char_ngram = self.char_ngram;
        opts.minhash.minhash.word_ngram = self.word_ngram;
        opts.minhash.minhash.scheme = self.scheme;
        opts.minhash.bits = self.bits;
        opts.short = self.short_options();
        if !self.passages {
            opts.passages = None;
        }
        opts
    }

    /// The short path's options under this spec (the quote edge).
    pub fn short_options(&self) -> ShortTextOptions {
        let mut opts = ShortTextOptions::default();
        if let Some(c) = opts.containment.as_mut() {
            c.edge = self.quote_edge;
        }
        opts
    }

    /// The options of `--method minhash` under this spec (threshold and shingle sizes).
    pub fn minhash_options(&self) -> MinHashDetectorOptions {
        let mut opts = MinHashDetectorOptions::default();
        opts.lsh.threshold = self.threshold;
        opts.minhash.char_ngram = self.char_ngram;
        opts.minhash.word_ngram = self.word_ngram;
        opts.minhash.scheme = self.scheme;
        opts.bits = self.bits;
        opts
    }

    /// Hands `w` a maker of the detector this spec names, with `fp`'s normalisation and
    /// features. Loads jieba's dictionary first when the method uses word features.
    pub fn build<W: WithDetector>(&self, fp: &Fingerprinter, w: W) -> W::Output {
        let veto = self.template_veto && self.method.vetoed();
        match self.method {
            Method::Simhash => {
                fp.warm_up();
                let k = self.distance;
                w.with(|| SimhashDetector::new(fp.clone(), k))
            }
            Method::Imatch => {
                fp.warm_up();
                w.with(|| IMatchDetector::new(fp, IMatchOptions::default()))
            }
            Method::Exact => w.with(|| Ok(ExactDetector::new(fp.clone()))),
            Method::Short => {
                let opts = self.short_options();
                w.with(move || ShortTextDetector::new(fp.clone(), opts.clone()))
            }
            Method::Minhash => {
                let opts = self.minhash_options();
                let make = move || MinHashDetector::new(fp.clone(), opts.clone());
                with_veto(w, make, fp, veto)
            }
            Method::Auto => {
                let opts = self.policy();
                // Only the simhash long path uses the feature method (jieba's dictionary,
                // ~0.1 s to load); the MinHash and short paths hash characters or words.
                if opts.long != LongMethod::Minhash {
                    fp.warm_up();
                }
                let make = move || AutoDetector::new(fp.clone(), opts.clone());
                with_veto(w, make, fp, veto)
            }
        }
    }
}

/// `w` with `make`'s detector, wrapped in the template veto when `veto`.
fn with_veto<W: WithDetector, D: Detector + 'static>(
    w: W,
    make: impl Fn() -> Result<D>,
    fp: &Fingerprinter,
    veto: bool,
) -> W::Output {
    if veto {
        w.with(|| {
            TemplateVeto::with_body_index(
                make()?,
                make()?,
                fp.clone(),
                TemplateVetoOptions::default(),
            )
        })
    } else {
        w.with(make)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dedup::{Deduper, Keep};
    use crate::FingerprintConfig;

    /// Whether the second text is decided a duplicate of the first.
    struct Pair<'a>(&'a [&'a str; 2]);
    impl WithDetector for Pair<'_> {
        type Output = Result<bool>;
        fn with<D: Detector>(self, make: impl Fn() -> Result<D>) -> Result<bool> {
            let mut dd = Deduper::new(make()?);
            dd.push_batch(self.0).map_err(|e| e.source)?;
            Ok(dd.finish(Keep::First).outcomes[1].duplicate_of == Some(0))
        }
    }

    /// The shingle sizes reach MinHash in both methods that use it: the same words in another
    /// order are one set of single words but not of word triples, and a size out of range is
    /// refused with a message naming it.
    #[test]
    fn shingle_sizes_reach_minhash() {
        let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
        let words: Vec<String> = (0..60).map(|i| format!("word{i}")).collect();
        let a = words.join(" ");
        let b = words.iter().rev().cloned().collect::<Vec<_>>().join(" ");
        let texts = [a.as_str(), b.as_str()];
        for method in [Method::Minhash, Method::Auto] {
            let spec = |word_ngram| DetectorSpec {
                method,
                template_veto: false,
                threshold: 0.6,
                word_ngram,
                ..DetectorSpec::default()
            };
            assert!(spec(1).build(&fp, Pair(&texts)).unwrap(), "{method:?}");
            assert!(!spec(3).build(&fp, Pair(&texts)).unwrap(), "{method:?}");
            let e = spec(17).build(&fp, Pair(&texts)).unwrap_err();
            assert!(e.to_string().contains("word_ngram = 17"), "{e}");
            let e = DetectorSpec {
                method,
                char_ngram: 0,
                ..DetectorSpec::default()
            }
            .build(&fp, Pair(&texts))
            .unwrap_err();
            assert!(e.to_string().contains("char_ngram = 0"), "{e}");
        }
    }
}
