//! Batch deduplication of a corpus into clusters, over any [`Detector`].
//!
//! Documents are numbered `0, 1, 2, …` in input order. A [`Deduper`] takes them in batches:
//! the sketches of a batch are computed in parallel (rayon), then every document is decided
//! **serially, in input order**: the detector is asked which earlier documents it is a
//! near-duplicate of, and the document joins a cluster or starts one. Nothing depends on
//! thread timing: the same input gives the same output at any thread count.
//!
//! [`run_pipelined`] runs a corpus through a deduper in three overlapping stages (read batch
//! N + 2, sketch N + 1, decide N), as `neardup dedup` does, with the decisions of the
//! sequential run ([`pipeline`] module docs). [`Clustering::report`] and
//! [`Clustering::summary`] say what was found in numbers ([`RunSummary`] is the JSON of
//! `neardup dedup --report`).
//!
//! # What the results mean
//!
//! - **The online rule** ([`Linkage::Kept`], the default) is the decision `neardup serve` takes
//!   when the same documents arrive in the same order: only kept documents are indexed; a
//!   document with a near-duplicate among them is a duplicate of the strongest match (smallest
//!   distance, then highest similarity, then earliest — [`crate::detect::best_verdict`]) and
//!   joins its cluster; otherwise it is kept and starts a cluster. Every cluster holds exactly
//!   one kept document, numbered by it.
//! - [`Linkage::Components`] indexes every document, duplicates included: clusters are the
//!   connected components of the near-duplicate graph (single linkage, union-find), numbered
//!   by their first document; chains of drifting copies join one cluster, and a document that
//!   bridges two clusters merges them (such a cluster holds two documents kept on arrival).
//! - With [`Keep::First`], a document's `duplicate_of` is decided on arrival and never changes.
//! - With [`Keep::Longest`], decisions wait for the end of the input: each cluster's
//!   representative is its longest document (in characters; ties → the earliest), every other
//!   member's `duplicate_of` is that representative.
//! - `matched`/`distance`/`similarity`/`stage` describe the strongest earlier match — the
//!   evidence for the decision.
//! - **Empty documents** (nothing left after normalisation, [`Error::EmptyDocument`]) are never
//!   dropped: each is its own cluster, kept, with [`Assignment::empty`] set; they are not indexed.
//!
//! Memory: the detector's index plus ~40 bytes per document; texts are not retained.
//!
//! ```
//! use neardup::dedup::{dedup, Keep};
//! use neardup::detect::SimhashDetector;
//! use neardup::{FingerprintConfig, Fingerprinter};
//! let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
//! let det = SimhashDetector::new(fp, 3).unwrap();
//! let docs = [
//!     "the quick brown fox jumps over the lazy dog, again and again",
//!     "something else entirely, about ice cream and summer evenings",
//!     "The quick brown fox jumps over the lazy dog, again and again!",
//! ];
//! let result = dedup(det, &docs, Keep::First).unwrap();
//! assert_eq!(result.outcomes[2].duplicate_of, Some(0));
//! assert_eq!(result.outcomes[2].cluster, 0);
//! assert_eq!(result.outcomes[1].duplicate_of, None);
//! assert_eq!(result.report(3).clusters, 2);
//! ```

use rayon::prelude::*;
use serde::Serialize;

use crate::detect::{best_verdict, Detector, Stage};
use crate::error::Error;

pub mod pipeline;
mod report;
pub mod spill;
pub mod union_find;

use union_find::UnionFind;

pub use pipeline::{run_pipelined, PipelineError};
pub use report::{ClusterSummary, LargestCluster, Report, RunFacts, RunSummary, SizeCount};

/// Documents per batch of batch dedup (`neardup dedup`, the Python `dedup`): a batch is
/// observed ([`Detector::observe_batch`]) and sketched at once, so batch boundaries are part of
/// what the template veto decides.
pub const BATCH_DOCS: usize = 4096;

/// Text bytes (UTF-8) per batch of batch dedup: a batch ends at [`BATCH_DOCS`] documents or
/// once its texts hold this many bytes, whichever comes first.
pub const BATCH_BYTES: usize = 8 << 20;

/// The end (exclusive) of the batch starting at `start`, for documents whose texts hold
/// `bytes[i]` UTF-8 bytes: at most [`BATCH_DOCS`] documents, and the batch closes once it holds
/// [`BATCH_BYTES`] bytes. `neardup dedup` and the Python `dedup` cut their input with this rule.
///
/// ```
/// use neardup::dedup::{batch_end, BATCH_BYTES, BATCH_DOCS};
/// assert_eq!(batch_end(&vec![10; 5000], 0), BATCH_DOCS);
/// assert_eq!(batch_end(&vec![10; 5000], 4096), 5000);
/// let big = vec![BATCH_BYTES / 2; 5];
/// assert_eq!(batch_end(&big, 0), 2); // closes once it holds BATCH_BYTES
/// assert_eq!(batch_end(&big, 4), 5);
/// ```
pub fn batch_end(bytes: &[usize], start: usize) -> usize {
    let mut end = start;
    let mut total = 0;
    while end < bytes.len() && end - start < BATCH_DOCS && total < BATCH_BYTES {
        total += bytes[end];
        end += 1;
    }
    end
}

/// Which document of a cluster is kept (serialised `"first"`, `"longest"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Keep {
    /// The first in input order; decided on arrival (streaming).
    #[default]
    First,
    /// The longest (characters; ties → earliest); decided after the whole input.
    Longest,
}

impl std::str::FromStr for Keep {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "first" => Ok(Keep::First),
            "longest" => Ok(Keep::Longest),
            _ => Err(Error::Config(format!("keep `{s}`: use first or longest"))),
        }
    }
}

/// How a near-duplicate joins a cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Linkage {
    /// **The online rule** (default): only kept documents are indexed; a document with a
    /// near-duplicate among them joins the cluster of the strongest match (smallest distance,
    /// then highest similarity, then earliest) and is not indexed. Every cluster is a star
    /// around exactly one kept document, and the decision is the one `neardup serve` takes when
    /// the same documents arrive in the same order.
    #[default]
    Kept,
    /// Single linkage: every document is indexed, duplicates included, and clusters are the
    /// connected components of the near-duplicate graph (union-find). Chains of drifting copies
    /// join one cluster; a document that bridges two clusters merges them, so a cluster may
    /// hold two documents that were kept on arrival.
    Components,
}

/// A document whose sketch could not be computed for a reason other than being empty.
#[derive(Debug, thiserror::Error)]
#[error("document {doc}: {source}")]
pub struct SketchFailure {
    /// The document's number (0-based input position).
    pub doc: u32,
    /// What went wrong; see its documentation for the fix.
    #[source]
    pub source: Error,
}

/// The decision about one document.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Assignment {
    /// The kept document this one is a duplicate of (`None`: kept).
    pub duplicate_of: Option<u32>,
    /// The cluster: the number of its first document. Final only after [`Deduper::finish`].
    pub cluster: u32,
    /// The closest earlier near-duplicate (the evidence), if any.
    pub matched: Option<u32>,
    /// Distance to `matched` (fingerprint methods).
    pub distance: Option<u32>,
    /// Similarity to `matched` (set and text methods).
    pub similarity: Option<f64>,
    /// The stage that matched `matched` (exact, short, minhash, simhash, imatch).
    pub stage: Option<Stage>,
    /// Nothing was left after normalisation: own cluster, kept, not indexed.
    pub empty: bool,
}

/// Streaming, order-preserving deduplication over a [`Detector`].
#[derive(Debug)]
pub struct Deduper<D: Detector> {
    detector: D,
    linkage: Linkage,
    uf: UnionFind,
    outcomes: Vec<Assignment>,
    lengths: Vec<u32>,
}

impl<D: Detector> Deduper<D> {
    /// A deduper with an empty index and the online rule ([`Linkage::Kept`]).
    pub fn new(detector: D) -> Self {
        Self::with_linkage(detector, Linkage::Kept)
    }

    /// A deduper with an empty index and the given linkage.
    pub fn with_linkage(detector: D, linkage: Linkage) -> Self {
        Deduper {
            detector,
            linkage,
            uf: UnionFind::default(),
            outcomes: Vec::new(),
            lengths: Vec::new(),
        }
    }

    /// The detector.
    pub fn detector(&self) -> &D {
        &self.detector
    }

    /// Documents decided so far.
    pub fn len(&self) -> usize {
        self.outcomes.len()
    }

    /// Whether no document was decided yet.
    pub fn is_empty(&self) -> bool {
        self.outcomes.is_empty()
    }

    /// Sketches texts in parallel (pure; may run while another batch is being read).
    pub fn sketch_batch<S: AsRef<str> + Sync>(&self, texts: &[S]) -> Vec<crate::Result<D::Sketch>> {
        sketch_batch(&self.detector, texts)
    }

    /// Decides a batch in order: `sketches[i]` belongs to a document of `lengths[i]` characters.
    /// Returns the batch's outcomes (with `duplicate_of` final for [`Keep::First`]).
    ///
    /// An [`Error::EmptyDocument`] sketch is recorded as an empty document; any other error
    /// stops with a [`SketchFailure`] naming the document (nothing of the batch is decided).
    pub fn decide_batch(
        &mut self,
        sketches: Vec<crate::Result<D::Sketch>>,
        lengths: &[u32],
    ) -> Result<&[Assignment], SketchFailure> {
        let start = self.outcomes.len();
        let sketches = usable(sketches, start)?;
        for (i, s) in sketches.into_iter().enumerate() {
            let len = lengths.get(i).copied().unwrap_or(0);
            self.decide_one(s.ok(), len);
        }
        self.detector.tidy();
        Ok(&self.outcomes[start..])
    }

    /// Sketches (in parallel) and decides (in order) a batch of texts.
    pub fn push_batch<S: AsRef<str> + Sync>(
        &mut self,
        texts: &[S],
    ) -> Result<&[Assignment], SketchFailure> {
        let sketches = self.sketch_batch(texts);
        let lengths: Vec<u32> = texts.par_iter().map(|t| chars(t.as_ref())).collect();
        self.decide_batch(sketches, &lengths)
    }

    /// Decides one document from its sketch (`None`: empty document).
    pub fn decide_one(&mut self, sketch: Option<D::Sketch>, chars: u32) -> Assignment {
        let doc = self.uf.push();
        self.lengths.push(chars);
        let Some(sketch) = sketch else {
            let o = Assignment {
                cluster: doc,
                empty: true,
                ..Assignment::default()
            };
            self.outcomes.push(o);
            return o;
        };
        // A sketch put off after an exact copy is completed unless that copy decides it.
        let sketch = self
            .detector
            .resolve(sketch, self.linkage == Linkage::Components);
        let verdicts = self.detector.find(&sketch);
        let best = best_verdict(&verdicts);
        let mut root = doc;
        match self.linkage {
            Linkage::Kept => {
                if let Some(b) = best {
                    root = self.uf.union(root, b.of);
                }
            }
            Linkage::Components => {
                for v in &verdicts {
                    root = self.uf.union(root, v.of);
                }
            }
        }
        let first = root;
        let o = Assignment {
            duplicate_of: (first != doc).then_some(first),
            cluster: first,
            matched: best.map(|b| b.of),
            distance: best.and_then(|b| b.distance),
            similarity: best.and_then(|b| b.similarity),
            stage: best.map(|b| b.stage),
            empty: false,
        };
        if self.linkage == Linkage::Components || best.is_none() {
            self.detector.insert(doc, sketch);
        }
        self.outcomes.push(o);
        o
    }

    /// Adds a document as kept without asking the detector (e.g. a reference set known to be
    /// kept): it starts its own cluster and is indexed (`None`: an empty document, not indexed).
    pub fn add_one(&mut self, sketch: Option<D::Sketch>, chars: u32) -> Assignment {
        let doc = self.uf.push();
        self.lengths.push(chars);
        let o = Assignment {
            cluster: doc,
            empty: sketch.is_none(),
            ..Assignment::default()
        };
        if let Some(s) = sketch {
            // A sketch put off after an identical text (`Detector::sketch_nth`) is completed:
            // an indexed document needs all of it.
            let s = self.detector.resolve(s, true);
            self.detector.insert(doc, s);
            self.detector.tidy();
        }
        self.outcomes.push(o);
        o
    }

    /// Final clusters (and, for [`Keep::Longest`], representatives).
    pub fn finish(mut self, keep: Keep) -> Clustering {
        let n = self.outcomes.len();
        let roots: Vec<u32> = (0..n as u32).map(|i| self.uf.find(i)).collect();
        let mut rep: Vec<u32> = vec![u32::MAX; n];
        if keep == Keep::Longest {
            for (i, &root) in roots.iter().enumerate() {
                let r = root as usize;
                let cur = rep[r];
                if cur == u32::MAX || self.lengths[i] > self.lengths[cur as usize] {
                    rep[r] = i as u32;
                }
            }
        }
        for (i, o) in self.outcomes.iter_mut().enumerate() {
            let r = roots[i] as usize;
            o.cluster = roots[i];
            if keep == Keep::Longest {
                o.duplicate_of = (rep[r] != i as u32).then_some(rep[r]);
            }
        }
        Clustering {
            method: self.detector.name(),
            outcomes: self.outcomes,
            keep,
        }
    }
}

/// The sketches of a batch whose first document is `start`, unless one failed for another
/// reason than being empty: then that failure, naming the document.
pub(crate) fn usable<T>(
    sketches: Vec<crate::Result<T>>,
    start: usize,
) -> Result<Vec<crate::Result<T>>, SketchFailure> {
    let failed =
        |s: &crate::Result<T>| matches!(s, Err(e) if !matches!(e, Error::EmptyDocument { .. }));
    match sketches.iter().position(failed) {
        None => Ok(sketches),
        Some(i) => {
            let source = sketches.into_iter().nth(i).and_then(|s| s.err());
            Err(SketchFailure {
                doc: (start + i) as u32,
                source: source.unwrap_or_else(|| Error::Config("sketch failed".into())),
            })
        }
    }
}

/// A text's length in characters, as [`Keep::Longest`] compares them (saturating).
fn chars(text: &str) -> u32 {
    text.chars().count().min(u32::MAX as usize) as u32
}

/// Lets `detector` observe a batch ([`Detector::observe_batch`]), then sketches it in parallel
/// (rayon); what [`Deduper::sketch_batch`] does with the deduper's own detector.
///
/// Sketches depend only on a detector's configuration and on the batches it observed, never
/// on what was inserted. So a second, identically configured detector that observes the same
/// batches in the same order gives exactly the deduper's sketches — and it can sketch batch
/// `N + 1` while the deduper decides batch `N` ([`Deduper::decide_batch`] needs `&mut`;
/// [`run_pipelined`] does this, and reads batch `N + 2` meanwhile):
///
/// ```
/// use neardup::dedup::{sketch_batch, Deduper, Keep};
/// use neardup::minhash::{MinHashDetector, MinHashDetectorOptions};
/// use neardup::{FingerprintConfig, Fingerprinter};
/// let make = || {
///     let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
///     MinHashDetector::new(fp, MinHashDetectorOptions::default()).unwrap()
/// };
/// let batches = [
///     vec!["the quick brown fox jumps over the lazy dog, again and again and again"],
///     vec!["the quick brown fox jumps over the lazy dog, again and again and again!"],
/// ];
/// let sketcher = make();
/// let mut dd = Deduper::new(make());
/// let mut sketches = sketch_batch(&sketcher, &batches[0]);
/// for (i, batch) in batches.iter().enumerate() {
///     let lengths: Vec<u32> = batch.iter().map(|t| t.chars().count() as u32).collect();
///     let next = batches.get(i + 1).map(|b| b.as_slice()).unwrap_or(&[]);
///     let (decided, next_sketches) = rayon::join(
///         || dd.decide_batch(std::mem::take(&mut sketches), &lengths).map(|o| o.len()),
///         || sketch_batch(&sketcher, next),
///     );
///     decided.unwrap();
///     sketches = next_sketches;
/// }
/// assert_eq!(dd.finish(Keep::First).outcomes[1].duplicate_of, Some(0));
/// ```
pub fn sketch_batch<D: Detector, S: AsRef<str> + Sync>(
    detector: &D,
    texts: &[S],
) -> Vec<crate::Result<D::Sketch>> {
    let refs: Vec<&str> = texts.iter().map(|t| t.as_ref()).collect();
    detector.observe_batch(&refs);
    refs.par_iter()
        .enumerate()
        .map(|(i, t)| detector.sketch_nth(i, t))
        .collect()
}

/// Deduplicates a whole slice of texts, in the batches `neardup dedup` reads ([`batch_end`]),
/// so the decisions are the command's.
pub fn dedup<D: Detector, S: AsRef<str> + Sync>(
    detector: D,
    texts: &[S],
    keep: Keep,
) -> Result<Clustering, SketchFailure> {
    let mut d = Deduper::new(detector);
    let bytes: Vec<usize> = texts.iter().map(|t| t.as_ref().len()).collect();
    let mut start = 0;
    while start < texts.len() {
        let end = batch_end(&bytes, start);
        d.push_batch(&texts[start..end])?;
        start = end;
    }
    Ok(d.finish(keep))
}

/// Deduplicates precomputed sketches (e.g. the same fingerprints at several distances).
/// `lengths[i]` is document `i`'s length in characters (used by [`Keep::Longest`]); `None`
/// sketches are empty documents.
pub fn dedup_sketches<D: Detector>(
    detector: D,
    sketches: impl IntoIterator<Item = Option<D::Sketch>>,
    lengths: &[u32],
    keep: Keep,
) -> Clustering {
    let mut d = Deduper::new(detector);
    for (i, s) in sketches.into_iter().enumerate() {
        d.decide_one(s, lengths.get(i).copied().unwrap_or(0));
    }
    d.finish(keep)
}

/// The result of a deduplication.
#[derive(Debug, Clone)]
pub struct Clustering {
    /// The detector's name (e.g. `simhash(k=3)`).
    pub method: String,
    /// One outcome per document, in input order.
    pub outcomes: Vec<Assignment>,
    /// How representatives were chosen.
    pub keep: Keep,
}

impl Clustering {
    /// The members of every cluster of two or more documents, keyed by cluster number, in order.
    pub fn groups(&self) -> Vec<(u32, Vec<u32>)> {
        let mut members: rustc_hash::FxHashMap<u32, Vec<u32>> = Default::default();
        for (i, o) in self.outcomes.iter().enumerate() {
            members.entry(o.cluster).or_default().push(i as u32);
        }
        let mut v: Vec<(u32, Vec<u32>)> =
            members.into_iter().filter(|(_, m)| m.len() > 1).collect();
        v.sort_unstable_by_key(|(c, _)| *c);
        v
    }

    /// For [`Keep::First`]: per document, the first kept document of its cluster when this one
    /// is a later kept document of the same cluster (under [`Linkage::Components`] a later
    /// document bridged two clusters that were apart when both were kept); `None` otherwise.
    /// All `None` under [`Keep::Longest`].
    pub fn shared_clusters(&self) -> Vec<Option<u32>> {
        let mut shared = SharedClusters::new(self.outcomes.len(), self.keep);
        (0..)
            .zip(&self.outcomes)
            .map(|(i, o)| shared.next(i, o))
            .collect()
    }
}

/// [`Clustering::shared_clusters`] one document at a time, in input order (4 bytes a document).
#[derive(Debug)]
pub struct SharedClusters {
    first_kept: Vec<u32>,
}

impl SharedClusters {
    /// For `n` documents kept under `keep` (never any under [`Keep::Longest`]).
    pub fn new(n: usize, keep: Keep) -> Self {
        SharedClusters {
            first_kept: if keep == Keep::First {
                vec![u32::MAX; n]
            } else {
                Vec::new()
            },
        }
    }

    /// Document `i`'s entry: the first kept document of its cluster when `i` is a later kept
    /// one. Call for every document in input order.
    pub fn next(&mut self, i: u32, o: &Assignment) -> Option<u32> {
        if self.first_kept.is_empty() || o.duplicate_of.is_some() {
            return None;
        }
        let slot = &mut self.first_kept[o.cluster as usize];
        if *slot == u32::MAX {
            *slot = i;
            None
        } else {
            Some(*slot)
        }
    }
}
