//! Detectors: the near-duplicate decision shared by batch dedup and the online engine.
//!
//! A [`Detector`] turns a document into a *sketch* (pure, run in parallel over documents), and
//! keeps an index of the sketches inserted so far, answering which earlier documents a new
//! sketch is a near-duplicate of. Documents are named by dense `u32` numbers given by the
//! caller (input order in batch dedup).
//!
//! ```
//! use neardup::detect::{Detector, SimhashDetector};
//! use neardup::{FingerprintConfig, Fingerprinter};
//! let mut d = SimhashDetector::new(Fingerprinter::new(FingerprintConfig::default()).unwrap(), 3).unwrap();
//! let a = d.sketch("the quick brown fox jumps over the lazy dog, again and again").unwrap();
//! let b = d.sketch("The quick brown fox jumps over the lazy dog, again and again!").unwrap();
//! assert!(d.find(&a).is_empty());
//! d.insert(0, a);
//! assert_eq!(d.find(&b)[0].of, 0);
//! ```

pub mod alignment;
pub mod containment;
pub mod minhash;
pub mod passages;
pub mod policy;
pub mod shorttext;
pub mod spec;
pub mod template_veto;

use crate::error::{Error, Result};
use crate::fingerprint::Fingerprinter;
use neardup_index::{HammingIndex, Layout};

/// Which stage of a detector matched a pair.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    /// Identical normalised text (exact digest).
    #[default]
    Exact,
    /// The short-text path: MinHash candidates confirmed by an edit-distance measure.
    Short,
    /// MinHash LSH, confirmed by estimated (or exact) Jaccard similarity.
    Minhash,
    /// Simhash within a Hamming distance.
    Simhash,
    /// I-Match (identical filtered term set).
    Imatch,
    /// The same document id is already stored (online engine).
    Id,
    /// The short-text path's containment relation: one text lies inside the other (a repost
    /// with a comment or forwarding marker added, a quotation), confirmed by
    /// [`alignment::contained_similarity`].
    Containment,
    /// A passage of a longer document: the text's sentences (all but an attribution at an
    /// edge) are sentences of one stored long document — a quote
    /// ([`crate::detect::passages`]).
    Passage,
}

impl Stage {
    /// The stage's name as reports print it.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Exact => "exact",
            Stage::Short => "short",
            Stage::Minhash => "minhash",
            Stage::Simhash => "simhash",
            Stage::Imatch => "imatch",
            Stage::Id => "id",
            Stage::Containment => "containment",
            Stage::Passage => "passage",
        }
    }
}

impl std::fmt::Display for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One earlier document a new one is a near-duplicate of.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Verdict {
    /// The earlier document's number.
    pub of: u32,
    /// Hamming distance, for fingerprint methods.
    pub distance: Option<u32>,
    /// Similarity in [0, 1] (Jaccard, edit ratio, …), for set and text methods.
    pub similarity: Option<f64>,
    /// The stage that matched.
    pub stage: Stage,
}

/// Checks a script band (`setting` names it in the message): two shares `0 ≤ lo ≤ hi ≤ 1`.
pub(crate) fn check_script_band(
    setting: &str,
    band: Option<(f64, f64)>,
    default: (f64, f64),
) -> Result<()> {
    match band {
        Some((lo, hi)) if !(0.0 <= lo && lo <= hi && hi <= 1.0) => Err(Error::Config(format!(
            "{setting} = ({lo}, {hi}) must be two shares 0 ≤ lo ≤ hi ≤ 1 (default {default:?})"
        ))),
        _ => Ok(()),
    }
}

/// Orders two verdicts by strength of evidence: smaller distance, then higher similarity, then
/// the earlier document (`a_arrival`, `b_arrival`: the two documents' arrival order). Batch
/// dedup and the online engine pick the evidence for a decision with this one rule.
pub fn compare_verdicts(
    a: &Verdict,
    a_arrival: u64,
    b: &Verdict,
    b_arrival: u64,
) -> std::cmp::Ordering {
    a.distance
        .unwrap_or(0)
        .cmp(&b.distance.unwrap_or(0))
        .then_with(|| {
            b.similarity
                .unwrap_or(0.0)
                .total_cmp(&a.similarity.unwrap_or(0.0))
        })
        .then_with(|| a_arrival.cmp(&b_arrival))
}

/// The strongest verdict (see [`compare_verdicts`]); documents arrive in `of` order.
pub fn best_verdict(vs: &[Verdict]) -> Option<Verdict> {
    vs.iter()
        .copied()
        .min_by(|a, b| compare_verdicts(a, u64::from(a.of), b, u64::from(b.of)))
}

/// Adds `v` to `found`, or, when `found` holds a verdict of the same document (one found in
/// two indexes, e.g. by its whole text and by its body), keeps the stronger of the two
/// ([`compare_verdicts`]; `arrival`: that document's arrival order).
///
/// ```
/// use neardup::detect::{keep_stronger, Stage, Verdict};
/// let v = |of, sim| Verdict { of, distance: None, similarity: Some(sim), stage: Stage::Minhash };
/// let mut found = vec![v(3, 0.6)];
/// keep_stronger(&mut found, v(3, 0.9), 3); // document 3 again, by its body: the stronger stays
/// keep_stronger(&mut found, v(3, 0.7), 3);
/// keep_stronger(&mut found, v(5, 0.5), 5); // another document is added
/// assert_eq!(found, [v(3, 0.9), v(5, 0.5)]);
/// ```
pub fn keep_stronger(found: &mut Vec<Verdict>, v: Verdict, arrival: u64) {
    match found.iter_mut().find(|o| o.of == v.of) {
        Some(o) if compare_verdicts(&v, arrival, o, arrival).is_lt() => *o = v,
        Some(_) => {}
        None => found.push(v),
    }
}

/// A near-duplicate decision procedure with an index of what it has seen.
pub trait Detector: Send + Sync {
    /// What is computed per document.
    type Sketch: Send + Sync;

    /// A short name for reports (`simhash`, `minhash`, …).
    fn name(&self) -> String;

    /// Learns corpus statistics from a batch before it is sketched (e.g. lines repeated across
    /// documents, see [`crate::template_veto`]). Called serially, in input order, once per batch;
    /// the default does nothing.
    fn observe_batch(&self, _texts: &[&str]) {}

    /// Computes a document's sketch. Pure: safe to run in parallel.
    fn sketch(&self, text: &str) -> Result<Self::Sketch>;

    /// The sketch of `text`, the `i`-th text of the batch last observed
    /// ([`observe_batch`](Self::observe_batch)). A detector that saw an identical text earlier
    /// in the input may leave out what only a match other than an exact one needs, for
    /// [`resolve`](Self::resolve) to complete when that is not enough. Pure, like
    /// [`sketch`](Self::sketch), which the default calls.
    fn sketch_nth(&self, _i: usize, text: &str) -> Result<Self::Sketch> {
        self.sketch(text)
    }

    /// Makes a sketch of [`sketch_nth`](Self::sketch_nth) ready to be decided: as it is when
    /// the exact copy it was sketched after is indexed (the exact match is then the strongest,
    /// and the only one a decision of the online rule needs), else completed to what
    /// [`sketch`](Self::sketch) gives. `all_matches`: the caller uses every match (single
    /// linkage) or indexes the document whatever it finds, so it is always completed. The
    /// default returns the sketch as it is. (Completing cannot fail where the first sketch
    /// succeeded: it computes what the identical text's sketch computed.)
    fn resolve(&self, sketch: Self::Sketch, _all_matches: bool) -> Self::Sketch {
        sketch
    }

    /// [`sketch`](Self::sketch) without what only a match other than an exact one needs, for
    /// a text an identical copy of which may be indexed; `None` when this detector puts
    /// nothing off (the default). See [`indexes_exact_copy`](Self::indexes_exact_copy).
    fn sketch_exact_copy(&self, _text: &str) -> Option<Result<Self::Sketch>> {
        None
    }

    /// Whether a document identical to the one `sketch` was made of is indexed, so that its
    /// exact match decides (the default: `false`).
    fn indexes_exact_copy(&self, _sketch: &Self::Sketch) -> bool {
        false
    }

    /// Every inserted document the sketch is a near-duplicate of (in any order).
    fn find(&self, sketch: &Self::Sketch) -> Vec<Verdict>;

    /// Adds a document.
    fn insert(&mut self, doc: u32, sketch: Self::Sketch);

    /// This detector as the index of bodies kept beside a detector of whole texts built the
    /// same way ([`TemplateVeto::with_body_index`](crate::template_veto::TemplateVeto::with_body_index)):
    /// it may leave out what the whole texts' index already answers. Default: itself.
    fn into_body_index(self) -> Self
    where
        Self: Sized,
    {
        self
    }

    /// Reorganises the index for faster lookups (band tables that grew by an eighth since
    /// they were last frozen are frozen again: `sketch/band_table.rs`), between batches of
    /// inserts. Never changes what [`find`](Self::find) returns. The default does nothing.
    fn tidy(&mut self) {}

    /// Keeps what the index holds of each text only to confirm a candidate (the short path's
    /// normalised texts) in an anonymous file of `dir` from then on: the page cache holds it,
    /// not the heap (`crate::spill_store`). Never changes what [`find`](Self::find) returns.
    /// The default has nothing to spill.
    fn spill_texts(&mut self, _dir: &std::path::Path) {}

    /// Bytes of memory held by the index, approximately.
    fn heap_bytes(&self) -> usize {
        0
    }
}

/// Simhash within Hamming distance `k` (inclusive), over the exact [`HammingIndex`].
#[derive(Debug)]
pub struct SimhashDetector {
    fp: Fingerprinter,
    k: u32,
    index: HammingIndex,
}

impl SimhashDetector {
    /// A detector with the index layout planned for ~1M documents.
    pub fn new(fp: Fingerprinter, k: u32) -> Result<Self> {
        Self::with_capacity(fp, k, 1 << 20)
    }

    /// A detector whose index layout is planned for about `n` documents.
    pub fn with_capacity(fp: Fingerprinter, k: u32, n: u64) -> Result<Self> {
        let layout = Layout::plan(n.max(1), k, 8 << 30)
            .map_err(|e| Error::Config(format!("distance {k}: {e}")))?;
        Ok(SimhashDetector {
            fp,
            k,
            index: HammingIndex::new(layout),
        })
    }

    /// The fingerprinter.
    pub fn fingerprinter(&self) -> &Fingerprinter {
        &self.fp
    }
}

impl Detector for SimhashDetector {
    type Sketch = u64;

    fn name(&self) -> String {
        format!("simhash(k={})", self.k)
    }

    fn sketch(&self, text: &str) -> Result<u64> {
        self.fp.simhash(text)
    }

    fn find(&self, sketch: &u64) -> Vec<Verdict> {
        match self.index.search(*sketch, self.k) {
            Ok(ms) => ms
                .into_iter()
                .map(|m| Verdict {
                    of: m.handle,
                    distance: Some(u32::from(m.distance)),
                    similarity: None,
                    stage: Stage::Simhash,
                })
                .collect(),
            Err(_) => Vec::new(), // k was validated against the layout at construction
        }
    }

    fn insert(&mut self, doc: u32, sketch: u64) {
        // Fails only past MAX_ENTRIES (4 billion) documents.
        let _ = self.index.insert(sketch, doc);
    }

    fn heap_bytes(&self) -> usize {
        self.index.heap_bytes()
    }
}
