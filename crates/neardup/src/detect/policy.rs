//! The `auto` method: a per-document choice of detector by normalised length.
//!
//! For every document (normalised once):
//!
//! 1. **Exact** digest ([`crate::exact`]): byte-identical normalised texts always match.
//! 2. Let `L` = number of letters/digits. If `L ≤ short.max_chars` (default 140) the document
//!    takes the **short-text path** ([`crate::shorttext`]: MinHash LSH candidates on character
//!    2/3-grams, confirmed by Levenshtein similarity ≥ 0.8 on the stored text, or by
//!    containment — the shorter text inside the longer, [`crate::detect::Stage::Containment`]).
//! 3. Otherwise the **long path**: MinHash LSH (default; Jaccard ≥ 0.6 ([`crate::minhash::DEFAULT_THRESHOLD`]) of character 5-grams
//!    or word 3-grams, 128-slot MinHash v2 signatures, estimated from them), or simhash within
//!    Hamming distance `simhash_k` (default 3), or either ([`LongMethod`]).
//! 4. **Passages** ([`crate::detect::passages`], [`PolicyOptions::passages`]): a long text is
//!    also indexed by its sentences, and a text within the short path's reach whose sentences
//!    (at least 80 % of its letters, one run of the source) are one long text's is its
//!    duplicate — a quote ([`crate::detect::Stage::Passage`]).
//!
//! The long path cuts a text into characters when Han or another spaceless script makes up
//! at least 30 % of its letters, into words below; two signatures of different shingles share
//! nothing, so a text whose share lies within 0.2–0.4 ([`crate::minhash::SCRIPT_BAND`]) is
//! also searched by the other kind (never indexed by it): a page with code and its excerpt on
//! the other side of the cut still meet.
//!
//! So that pairs straddling the boundary are not lost, documents with
//! `max_chars < L ≤ short.reach()` are also indexed in, and searched against, the short-text
//! index: up to `⌈max_chars / short.threshold⌉` (175 by default) the measure can match them,
//! and up to `⌈max_chars / containment.min_share⌉` (467) containment can — a short post inside
//! a repost that adds a comment. Beyond 175 letters a pair is compared on the short path only
//! when one of the two is a short text, and only by containment.
//!
//! ## Why these defaults (measured)
//!
//! `cargo run --release -p neardup --example methods_eval -- /work/shared/corpora`: base
//! documents from the corpora, cleaned of pre-existing near-duplicates by brute force, half of
//! them given a perturbed copy (short: 1 to len/15 character edits plus punctuation noise;
//! long: 0.5–2 % character edits, half the time also a dropped 5 % chunk or an added header
//! line), shuffled; pairwise precision / recall:
//!
//! | set (docs) | simhash k=3 P / R | k=10 P / R | MinHash t=0.5 P / R | short path P / R | auto P / R |
//! |---|---|---|---|---|---|
//! | short zh (fortunes, 3000) | 0.231 / 0.597 | 0.217 / 0.808 | 1.000 / 0.876 | 1.000 / 0.996 | 1.000 / 0.996 |
//! | short en (Moby-Dick sentences, 3000) | 1.000 / 0.028 | 0.673 / 0.396 | 1.000 / 0.224 | 1.000 / 1.000 | 1.000 / 1.000 |
//! | long zh (debian docs, 600) | 0.956 / 0.650 | 0.700 / 0.990 | 1.000 / 0.990 | — | 1.000 / 0.990 |
//! | long en (State of the Union, 350) | 0.008 / 0.983 | 0.002 / 1.000 | 1.000 / 0.966 | — | 1.000 / 0.966 |
//!
//! Simhash (word unigrams) cannot tell long English speeches apart (they share most of their
//! vocabulary) and loses Chinese copies with dropped chunks at k = 3; MinHash on 5-grams /
//! word 3-grams is better on both, so it is the long-path default. The short path is the only
//! method meeting F1 ≥ 0.95 with precision ≥ 0.98 on short texts.
//!
//! Caveat (real, not planted, pairs): run on the raw `zh_fortunes` texts of 15–140 characters
//! (`methods_eval -- DIR inspect`), the short path reports 9 identical and 54 near pairs; about
//! 14 of them share a template rather than content (Debian reference-card lines ending in the
//! same attribution, 詩經 "有其義而亡其辭" stubs differing only in the title, two different
//! 论语 sentences with the same opening), the rest are the same quote in two editions. Raising
//! `short.threshold` to 0.9 removes most template pairs at the cost of pairs whose attribution
//! lines differ.
//!
//! ```
//! use neardup::detect::Detector;
//! use neardup::policy::{AutoDetector, PolicyOptions};
//! use neardup::{FingerprintConfig, Fingerprinter};
//! let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
//! let mut d = AutoDetector::new(fp, PolicyOptions::default()).unwrap();
//! let a = d.sketch("今天天气真好，我们去公园散步吧").unwrap();
//! d.insert(0, a);
//! let b = d.sketch("今天天气真好,我们去公园散步吧!!").unwrap();
//! assert_eq!(d.find(&b)[0].of, 0);
//! ```

use serde::{Deserialize, Serialize};

use crate::detect::passages::{PassageIndex, PassageOptions, PassageSketch};
use crate::detect::{Detector, SimhashDetector, Verdict};
use crate::error::{Error, Result};
use crate::exact::ExactDetector;
use crate::features::is_word_char;
use crate::fingerprint::Fingerprinter;
use crate::minhash::{
    FrozenTables, MinHashDetector, MinHashDetectorOptions, MinHashLsh, MinHashSketch,
};
use crate::normalize::Normalizer;
use crate::shorttext::{
    ShortCandidates, ShortQuery, ShortSketch, ShortTextDetector, ShortTextOptions,
};

/// The detector(s) of the long path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum LongMethod {
    /// Simhash within `simhash_k`.
    Simhash,
    /// MinHash LSH with Jaccard confirmation (default: measured best, see the module docs).
    #[default]
    Minhash,
    /// A duplicate if either says so.
    Either,
}

/// Options of the `auto` policy (serde defaults = [`Default`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PolicyOptions {
    /// Check the exact digest first. Default true.
    pub exact: bool,
    /// The short-text path (its `max_chars` is the length boundary).
    pub short: ShortTextOptions,
    /// The long path's method. Default `minhash`.
    pub long: LongMethod,
    /// Hamming distance of the long path's simhash. Default 3.
    pub simhash_k: u32,
    /// Expected number of documents (sizes the simhash index layout). Default 2^20.
    pub capacity: u64,
    /// The long path's MinHash.
    pub minhash: MinHashDetectorOptions,
    /// Passages: long texts also indexed by their sentences, so that a quote of one to three
    /// of them is found ([`crate::detect::passages`]). Default on
    /// ([`PassageOptions::default`]); `None`: off. Not written when off, so a recorded
    /// configuration without it reads as off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passages: Option<PassageOptions>,
}

impl Default for PolicyOptions {
    fn default() -> Self {
        PolicyOptions {
            exact: true,
            short: ShortTextOptions::default(),
            long: LongMethod::Minhash,
            simhash_k: 3,
            capacity: 1 << 20,
            minhash: MinHashDetectorOptions {
                script_band: Some(crate::minhash::SCRIPT_BAND),
                ..MinHashDetectorOptions::default()
            },
            passages: Some(PassageOptions::default()),
        }
    }
}

/// A document's sketch under the `auto` policy.
#[derive(Debug, Clone, PartialEq)]
pub struct AutoSketch {
    /// Exact digest of the normalised text.
    pub exact: u128,
    /// Letters/digits in the normalised text.
    pub chars: usize,
    /// Short-path sketch (when `chars` is within the short index's reach).
    pub short: Option<ShortSketch>,
    /// Simhash (long path).
    pub simhash: Option<u64>,
    /// MinHash (long path).
    pub minhash: Option<MinHashSketch>,
    /// Passages (with [`PolicyOptions::passages`]): the fragments a long text is indexed by,
    /// those a text within the short path's reach looks up.
    pub passages: Option<Box<PassageSketch>>,
}

/// Which path a document takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Path {
    /// Short-text path.
    Short,
    /// Long path.
    Long,
}

/// The `auto` detector (see the module docs).
#[derive(Debug)]
pub struct AutoDetector {
    fp: Fingerprinter,
    /// `fp`'s normaliser (remembering: a wrapping template veto normalises the text again).
    normalizer: Normalizer,
    opts: PolicyOptions,
    exact: ExactDetector,
    short: ShortTextDetector,
    simhash: Option<SimhashDetector>,
    minhash: Option<MinHashDetector>,
    /// With [`PolicyOptions::passages`]: the index.
    passages: Option<PassageIndex>,
}

/// An [`AutoDetector`]'s band tables, shared to be frozen ([`AutoDetector::share_tables`]).
#[derive(Debug)]
pub(crate) struct AutoFrozen {
    long: Option<FrozenTables>,
    short: Option<FrozenTables>,
}

impl AutoFrozen {
    /// Builds the frozen form of every table (see [`FrozenTables::freeze`]).
    pub(crate) fn freeze(&mut self) {
        self.long
            .iter_mut()
            .chain(&mut self.short)
            .for_each(FrozenTables::freeze);
    }
}

impl AutoDetector {
    /// Builds the policy's detectors.
    pub fn new(fp: Fingerprinter, opts: PolicyOptions) -> Result<Self> {
        if opts.short.max_chars == 0 {
            return Err(Error::Config(
                "short.max_chars must be at least 1 (default 140); set it to 1 to send almost everything down the long path".into(),
            ));
        }
        let simhash = matches!(opts.long, LongMethod::Simhash | LongMethod::Either)
            .then(|| SimhashDetector::with_capacity(fp.clone(), opts.simhash_k, opts.capacity))
            .transpose()?;
        let minhash = matches!(opts.long, LongMethod::Minhash | LongMethod::Either)
            .then(|| MinHashDetector::new(fp.clone(), opts.minhash.clone()))
            .transpose()?;
        let passages = match &opts.passages {
            Some(p) => {
                p.check()?;
                Some(PassageIndex::new(p.clone()))
            }
            None => None,
        };
        Ok(AutoDetector {
            passages,
            normalizer: Normalizer::new(fp.config().normalize.clone()),
            exact: ExactDetector::new(fp.clone()),
            short: ShortTextDetector::new(fp.clone(), opts.short.clone())?,
            fp,
            opts,
            simhash,
            minhash,
        })
    }

    /// The MinHash sketch of inserted document `doc` rebuilt from the index (its signature as
    /// stored for confirmation, its band keys recomputed); `None` when the document has none or
    /// the index keeps no signatures. Documents must have been inserted in ascending order.
    pub fn minhash_sketch_of(&self, doc: u32) -> Option<MinHashSketch> {
        let m = self.minhash.as_ref()?;
        let signature = m.signature_of(doc)?;
        Some(MinHashSketch {
            keys: m.band_keys(&signature),
            signature,
            shingles: None,
            other: None,
        })
    }

    /// The confirmation text the short path keeps of document `doc`, when it is a short one.
    pub(crate) fn short_text_of(&self, doc: u32) -> Option<&str> {
        self.short.text_of(doc)
    }

    /// Bytes of the short path's texts in a spill file.
    pub(crate) fn spilled_bytes(&self) -> u64 {
        self.short.spilled_bytes()
    }

    /// Lets go of the short path's spill file pages that reads mapped.
    pub(crate) fn release_pages(&self) {
        self.short.release_pages();
    }

    /// The long path's MinHash detector, when the policy has one.
    pub fn minhash(&self) -> Option<&MinHashDetector> {
        self.minhash.as_ref()
    }

    /// Whether the long path's MinHash index keeps each document's signature (so that
    /// [`AutoDetector::minhash_sketch_of`] can give it back).
    pub fn keeps_signatures(&self) -> bool {
        self.minhash
            .as_ref()
            .is_some_and(|m| m.confirm() != crate::minhash::Confirm::None)
    }

    /// [`Detector::sketch`], but without the long path's sketch (MinHash, simhash) when
    /// `known(exact digest)` says an exact copy of a long text is indexed: an exact match
    /// outranks every other, so a caller that needs only the strongest match can put that
    /// sketch off (the engine: until the copy turns out to have left). Returns the sketch and
    /// whether its long part was left out.
    pub fn sketch_unless(
        &self,
        text: &str,
        known: impl Fn(u128) -> bool,
    ) -> Result<(AutoSketch, bool)> {
        // Passages cut the text at line breaks too, which normalisation folds into spaces.
        let (n, breaks) = if self.opts.passages.is_some() {
            self.normalizer.normalize_remembered_with_breaks(text)
        } else {
            (self.normalizer.normalize_remembered(text), Vec::new())
        };
        let bytes = text.len();
        let exact = self.exact.sketch_normalized(&n, bytes)?;
        let chars = n.chars().filter(|&c| is_word_char(c)).count();
        let short = (chars <= self.short.reach())
            .then(|| self.short.sketch_normalized(&n, bytes))
            .transpose()?;
        let long = chars > self.opts.short.max_chars;
        let skip = long && self.opts.exact && known(exact);
        let long = long && !skip;
        let simhash = match &self.simhash {
            Some(_) if long => Some(self.fp.fingerprint_normalized(&n, bytes)?.simhash),
            _ => None,
        };
        let minhash = match &self.minhash {
            Some(m) if long => Some(m.sketch_normalized(&n, bytes)?),
            _ => None,
        };
        let passages = match &self.opts.passages {
            Some(o) => {
                let stored = chars > self.opts.short.max_chars;
                let checked = chars <= self.short.reach();
                let p = PassageSketch::of_text(&n, &breaks, o, stored, checked);
                (p.is_stored() || p.is_checked()).then(|| Box::new(p))
            }
            None => None,
        };
        Ok((
            AutoSketch {
                exact,
                chars,
                short,
                simhash,
                minhash,
                passages,
            },
            skip,
        ))
    }

    /// The exact digest document `doc` was indexed with (`None` when the exact stage is off).
    pub fn exact_of(&self, doc: u32) -> Option<u128> {
        self.opts.exact.then(|| self.exact.digest_of(doc)).flatten()
    }

    /// Asks for the memory an insert of a document with exact digest `digest` reads first.
    #[inline]
    pub fn prefetch_exact(&self, digest: u128) {
        if self.opts.exact {
            self.exact.prefetch(digest);
        }
    }

    /// Whether the exact stage keeps each document's digest ([`AutoDetector::exact_of`]).
    pub fn keeps_exact(&self) -> bool {
        self.opts.exact
    }

    /// Whether a document whose normalised text has exact digest `digest` is indexed (always
    /// `false` when the exact stage is off).
    pub fn has_exact(&self, digest: u128) -> bool {
        self.opts.exact && self.exact.contains(digest)
    }

    /// Makes room for `documents` more documents, `long` of them with a MinHash sketch, so that
    /// inserting them never grows a table (a restart knows how many it will insert).
    pub fn reserve(&mut self, documents: usize, long: usize) {
        if self.opts.exact {
            self.exact.reserve(documents);
        }
        if let Some(m) = self.minhash.as_mut() {
            m.reserve(long);
        }
    }

    /// The band tables of the long and short paths that are worth freezing
    /// (`MinHashLsh::worth_freezing` at `min_slots`), shared without a copy:
    /// [`AutoFrozen::freeze`] builds their frozen form outside any lock,
    /// [`AutoDetector::put_frozen`] puts it in place; documents inserted meanwhile are
    /// searched beside the tables. `None` when none is worth it.
    pub(crate) fn share_tables(&self, min_slots: usize) -> Option<AutoFrozen> {
        let long = self
            .minhash
            .as_ref()
            .map(|m| m.lsh())
            .filter(|l| l.worth_freezing(min_slots))
            .map(MinHashLsh::share_tables);
        let short = Some(self.short.lsh())
            .filter(|l| l.worth_freezing(min_slots))
            .map(MinHashLsh::share_tables);
        (long.is_some() || short.is_some()).then_some(AutoFrozen { long, short })
    }

    /// Puts tables from [`AutoDetector::share_tables`] (frozen) in place, with the documents
    /// inserted since, and gives back those they replace (to be dropped outside a lock).
    pub(crate) fn put_frozen(&mut self, frozen: AutoFrozen) -> AutoFrozen {
        let long = match (self.minhash.as_mut(), frozen.long) {
            (Some(m), Some(f)) => Some(m.lsh_mut().put_frozen(f)),
            _ => None,
        };
        let short = frozen.short.map(|f| self.short.lsh_mut().put_frozen(f));
        AutoFrozen { long, short }
    }

    /// Defers the band tables of the long and short paths (`MinHashLsh::defer_tables`): a
    /// restart's bulk load, finished by [`AutoDetector::finish_deferred`] before any search.
    pub(crate) fn defer_tables(&mut self) {
        if let Some(m) = self.minhash.as_mut() {
            m.lsh_mut().defer_tables();
        }
        self.short.lsh_mut().defer_tables();
    }

    /// Puts the slots inserted since [`AutoDetector::defer_tables`] into the tables, built
    /// frozen when they are large enough.
    pub(crate) fn finish_deferred(&mut self) {
        if let Some(m) = self.minhash.as_mut() {
            m.lsh_mut().finish_deferred();
        }
        self.short.lsh_mut().finish_deferred();
    }

    /// The path a sketch takes.
    pub fn path(&self, s: &AutoSketch) -> Path {
        if s.chars <= self.opts.short.max_chars {
            Path::Short
        } else {
            Path::Long
        }
    }
}

fn push_unique(out: &mut Vec<Verdict>, v: Verdict) {
    if !out.iter().any(|o| o.of == v.of) {
        out.push(v);
    }
}

impl AutoDetector {
    /// The short path's candidates of `s` (see [`ShortCandidates`]); `None` when `s` is not
    /// on the short path.
    pub(crate) fn short_candidates(&self, s: &AutoSketch) -> Option<ShortCandidates> {
        s.short.as_ref().map(|sh| self.short.candidates(sh))
    }

    /// `s`'s short sketch prepared for [`AutoDetector::find_planned`] in this detector or any
    /// made with the same options.
    pub(crate) fn short_query<'a>(&self, s: &'a AutoSketch) -> Option<ShortQuery<'a>> {
        s.short.as_ref().map(|sh| self.short.query(sh))
    }

    /// [`Detector::find`] but for passages, with the short path confirming the slots `short.1`
    /// (chosen from [`AutoDetector::short_candidates`], across detectors) with `s` prepared as
    /// `short.0`; without, it confirms none.
    pub(crate) fn find_planned(
        &self,
        s: &AutoSketch,
        short: Option<(&mut ShortQuery, &[u32])>,
    ) -> Vec<Verdict> {
        let mut out = Vec::new();
        if self.opts.exact {
            out.extend(self.exact.find(&s.exact));
        }
        if let (Some(sh), Some((query, slots))) = (&s.short, short) {
            let mut found = Vec::new();
            self.short.confirm(sh, query, slots, &mut found);
            for v in found {
                push_unique(&mut out, v);
            }
        }
        if let (Some(d), Some(h)) = (&self.simhash, &s.simhash) {
            for v in d.find(h) {
                push_unique(&mut out, v);
            }
        }
        if let (Some(d), Some(m)) = (&self.minhash, &s.minhash) {
            for v in d.find(m) {
                push_unique(&mut out, v);
            }
        }
        out
    }

    /// The passage index (with [`PolicyOptions::passages`]): [`Detector::find`] searches it
    /// after [`AutoDetector::find_planned`]; the engine searches its segments' together
    /// ([`crate::detect::passages::find_across`]).
    pub(crate) fn passage_index(&self) -> Option<&PassageIndex> {
        self.passages.as_ref()
    }

    /// Adds a passage verdict to `out` as [`Detector::find`] does: unless `out` already holds
    /// a verdict on the same document (found by a stage before it).
    pub(crate) fn add_passage_verdict(out: &mut Vec<Verdict>, v: Verdict) {
        push_unique(out, v);
    }
}

impl Detector for AutoDetector {
    type Sketch = AutoSketch;

    fn name(&self) -> String {
        format!(
            "auto(short≤{}: {}; long: {:?})",
            self.opts.short.max_chars,
            self.short.name(),
            self.opts.long
        )
        .to_lowercase()
    }

    fn sketch(&self, text: &str) -> Result<AutoSketch> {
        self.sketch_unless(text, |_| false).map(|(s, _)| s)
    }

    /// Leaves out a long text's MinHash (and simhash) sketch, as the engine does for a text
    /// whose exact copy is indexed ([`AutoDetector::sketch_unless`]); `None` without the exact
    /// stage.
    fn sketch_exact_copy(&self, text: &str) -> Option<Result<AutoSketch>> {
        self.opts
            .exact
            .then(|| self.sketch_unless(text, |_| true).map(|(s, _)| s))
    }

    fn indexes_exact_copy(&self, s: &AutoSketch) -> bool {
        self.has_exact(s.exact)
    }

    fn find(&self, s: &AutoSketch) -> Vec<Verdict> {
        let mut short = s
            .short
            .as_ref()
            .map(|sh| (self.short.query(sh), self.short.candidates(sh).slots()));
        let mut out = self.find_planned(s, short.as_mut().map(|(q, slots)| (q, &slots[..])));
        if let (Some(index), Some(p)) = (&self.passages, &s.passages) {
            if let Some(v) = index.find(p) {
                push_unique(&mut out, v);
            }
        }
        out
    }

    fn insert(&mut self, doc: u32, s: AutoSketch) {
        if self.opts.exact {
            self.exact.insert(doc, s.exact);
        }
        if let Some(sh) = s.short {
            self.short.insert(doc, sh);
        }
        if let (Some(d), Some(h)) = (&mut self.simhash, s.simhash) {
            d.insert(doc, h);
        }
        if let (Some(d), Some(m)) = (&mut self.minhash, s.minhash) {
            d.insert(doc, m);
        }
        if let (Some(index), Some(p)) = (&mut self.passages, s.passages) {
            index.insert(doc, &p);
        }
    }

    /// Without the passage index: a body's fragments are its whole text's, which the index of
    /// whole texts holds (bodies are still looked up there).
    fn into_body_index(mut self) -> Self {
        self.passages = None;
        self
    }

    fn tidy(&mut self) {
        self.short.tidy();
        if let Some(d) = &mut self.minhash {
            d.tidy();
        }
    }

    /// The short path's confirmation texts ([`ShortTextDetector::spill_texts`]).
    fn spill_texts(&mut self, dir: &std::path::Path) {
        self.short.spill_texts(dir);
    }

    fn heap_bytes(&self) -> usize {
        self.exact.heap_bytes()
            + self.short.heap_bytes()
            + self.simhash.as_ref().map_or(0, |d| d.heap_bytes())
            + self.minhash.as_ref().map_or(0, |d| d.heap_bytes())
            + self.passages.as_ref().map_or(0, |p| p.heap_bytes())
    }
}

/// Why two documents are, or are not, near-duplicates under the `auto` detector: what each
/// stage measures on the pair, and the verdict (see [`explain`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    /// The path each document takes (`short` or `long`).
    pub paths: [&'static str; 2],
    /// Identical normalised text.
    pub exact: bool,
    /// The short path's measure on the two confirmation texts (when both are within its
    /// reach), and its threshold.
    pub short_similarity: Option<f64>,
    /// Whether the short path's digit-run rule lets the pair match.
    pub same_numbers: Option<bool>,
    /// The short path's containment measure: how well the shorter confirmation text aligns
    /// inside the longer ([`crate::detect::alignment::contained_similarity`]), when both are
    /// within the short path's reach and containment is on.
    pub short_containment: Option<f64>,
    /// The short path's quotes, when the shorter text does not align whole at the containment
    /// threshold: the share of it that occurs verbatim in the longer once `k` characters at
    /// its beginning or end (at most its `edge`; an attribution) are left out, and `k`
    /// ([`crate::shorttext::ContainmentOptions::edge`]).
    pub short_quote: Option<(f64, usize)>,
    /// With passages on, when the first is a long text and the second within the short
    /// path's reach: the share of the second's letters in sentences of the first (a quote
    /// matches from [`PassageOptions::min_share`], 0.8 by default; [`crate::detect::passages`]).
    pub passage_share: Option<f64>,
    /// Estimated Jaccard of the MinHash signatures (when both take the long path), and the
    /// threshold it is compared with.
    pub minhash_similarity: Option<f64>,
    /// Whether that estimate is of the second text's signature by the other kind of shingles
    /// than its own: the two lie on either side of the script cut
    /// ([`MinHashDetectorOptions::script_band`](crate::minhash::MinHashDetectorOptions::script_band)).
    pub minhash_other_kind: bool,
    /// The thresholds: `(short path, MinHash)`.
    pub thresholds: (f64, f64),
    /// The strongest verdict of the detector with the first document inserted and the second
    /// searched: `None` means not near-duplicates.
    pub verdict: Option<Verdict>,
}

/// Explains the decision of the `auto` detector `opts` on documents `a` (earlier) and `b`.
///
/// ```
/// use neardup::policy::{explain, PolicyOptions};
/// use neardup::detect::Stage;
/// use neardup::{FingerprintConfig, Fingerprinter};
/// let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
/// let e = explain(&fp, &PolicyOptions::default(), "the cat sat on the mat", "the cat sat on a mat").unwrap();
/// assert_eq!(e.verdict.unwrap().stage, Stage::Short);
/// assert!(e.short_similarity.unwrap() >= 0.8);
/// let post = "今天终于把那本三国演义读完了，诸葛亮真是太令人佩服了";
/// let e = explain(&fp, &PolicyOptions::default(), post, &format!("//@小明同学: 转发微博 好文，收藏了。{post}")).unwrap();
/// assert_eq!(e.verdict.unwrap().stage, Stage::Containment);
/// assert_eq!(e.short_containment, Some(1.0));
/// ```
///
/// # Errors
/// [`Error::EmptyDocument`] when either has nothing left after normalisation; configuration
/// errors of `opts`.
pub fn explain(fp: &Fingerprinter, opts: &PolicyOptions, a: &str, b: &str) -> Result<Explanation> {
    let mut det = AutoDetector::new(fp.clone(), opts.clone())?;
    let sa = det.sketch(a)?;
    let sb = det.sketch(b)?;
    let path = |s: &AutoSketch| match det.path(s) {
        Path::Short => "short",
        Path::Long => "long",
    };
    let paths = [path(&sa), path(&sb)];
    let (short_similarity, same_numbers) = match (&sa.short, &sb.short) {
        (Some(x), Some(y)) if x.han == y.han => {
            let n = if x.han {
                opts.short.han_ngram
            } else {
                opts.short.other_ngram
            };
            (
                Some(crate::shorttext::similarity(
                    opts.short.measure,
                    &x.text,
                    &y.text,
                    n,
                )),
                Some(crate::shorttext::same_numbers(&x.text, &y.text)),
            )
        }
        _ => (None, None),
    };
    let (short_containment, short_quote) = match (&sa.short, &sb.short, &opts.short.containment) {
        (Some(x), Some(y), Some(c)) if x.han == y.han => {
            let (short, long) = if x.chars <= y.chars {
                (&x.text, &y.text)
            } else {
                (&y.text, &x.text)
            };
            let whole = crate::detect::alignment::contained_similarity(short, long);
            let quote = (whole < c.threshold)
                .then(|| crate::shorttext::contained_with_edge(c, short, long))
                .flatten();
            (Some(whole), quote)
        }
        _ => (None, None),
    };
    // As the detector compares them (`a` indexed, `b` searched): `a`'s signature against
    // `b`'s, and against `b`'s by the other kind of shingles when `b` is near the script cut
    // (`MinHashSketch::other`); the stronger estimate is the pair's.
    let (minhash_similarity, minhash_other_kind) = match (&sa.minhash, &sb.minhash) {
        (Some(x), Some(y)) => {
            let estimate = |b: &MinHashSketch| {
                crate::minhash::jaccard_estimate_bits(&x.signature, &b.signature, opts.minhash.bits)
            };
            let own = estimate(y);
            match y.other.as_deref().map(estimate) {
                Some(other) if other > own => (Some(other), true),
                _ => (Some(own), false),
            }
        }
        _ => (None, false),
    };
    let passage_share = match (&opts.passages, &sa.passages, &sb.passages) {
        (Some(o), Some(x), Some(y)) if x.is_stored() && y.is_checked() => {
            let mut index = PassageIndex::new(o.clone());
            index.insert(0, x);
            Some(index.best_share(y).map_or(0.0, |(_, share)| share))
        }
        _ => None,
    };
    let exact = sa.exact == sb.exact;
    det.insert(0, sa);
    let verdict = crate::detect::best_verdict(&det.find(&sb));
    Ok(Explanation {
        paths,
        exact,
        short_similarity,
        same_numbers,
        short_containment,
        short_quote,
        passage_share,
        minhash_similarity,
        minhash_other_kind,
        thresholds: (opts.short.threshold, opts.minhash.lsh.threshold),
        verdict,
    })
}
