//! Batch dedup in bounded memory: MinHash band buckets spilled to disk.
//!
//! Question: how does a corpus whose index would not fit in memory get the clusters of
//! `neardup dedup --method minhash --no-template-veto` (either linkage)?
//!
//! [`SpillingDeduper`] sketches every document (in parallel, batch by batch), writes its
//! signature to a file and its LSH band keys to an external sort (`sort.rs`). [`finish`] then
//! works the way the Spark path (`neardup.spark`) does, on one machine:
//!
//! 1. **collapse**: documents with identical signatures share every band key, so they meet in
//!    one bucket of the first band; there each is mapped to its earliest copy, its
//!    representative. Copies are candidates of each other and estimate Jaccard 1, and any third
//!    document is a candidate of, and confirmed against, all of them or none: one node stands
//!    for them all, and a bucket of many exact copies yields no pairs.
//! 2. **candidates**: every two representatives sharing a bucket in any band are a pair
//!    (later, earlier), spilled to a second external sort, each pair once.
//! 3. **decide**: documents in input order, each with its sorted pairs, confirmed by the
//!    detector's own rule ([`MinHashDetector::confirm_signatures`]). Under single linkage
//!    ([`Linkage::Components`]) confirmed pairs are unions (a union-find whose roots are the
//!    smallest members) and the evidence is the most similar earlier document, ties to the
//!    earliest. Under the online rule ([`Linkage::Kept`]) a document matches the strongest
//!    confirmed *kept* document; a copy sees what its representative saw when decided plus
//!    the kept documents since that confirm it (`KeptState`).
//!
//! Invariant: the outcomes equal the in-memory [`Deduper`](super::Deduper)'s with the same
//! linkage on the same texts, whatever the memory budget (property test
//! `spilled_equals_in_memory`).
//!
//! Memory: the budget bounds the sort buffers (half for band keys, half for pairs), plus 12
//! bytes a document (lengths, representatives, the union-find; 32 more under the online rule)
//! and the largest bucket. Disk:
//! 4·`num_perm` bytes a document of signatures, 16 bytes a band key and 8 a pair, in anonymous
//! files in the spill directory (gone when the process ends, however it ends).
//!
//! ```
//! use neardup::dedup::spill::{SpillOptions, SpillingDeduper};
//! use neardup::dedup::Keep;
//! use neardup::minhash::{MinHashDetector, MinHashDetectorOptions};
//! use neardup::{FingerprintConfig, Fingerprinter};
//! let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
//! let det = MinHashDetector::new(fp, MinHashDetectorOptions::default()).unwrap();
//! let dir = std::env::temp_dir();
//! let mut dd = SpillingDeduper::new(det, SpillOptions::new(8 << 20, &dir)).unwrap();
//! dd.push_batch(&[
//!     "the quick brown fox jumps over the lazy dog, again and again and again",
//!     "something else entirely, about ice cream and long summer evenings",
//!     "The quick brown fox jumps over the lazy dog, again and again and again!",
//! ])
//! .unwrap();
//! let clusters = dd.finish(Keep::First).unwrap();
//! let outcomes: Vec<_> = clusters.outcomes().map(Result::unwrap).collect();
//! assert_eq!(outcomes[2].duplicate_of, Some(0));
//! assert_eq!(outcomes[1].duplicate_of, None);
//! ```
//!
//! [`finish`]: SpillingDeduper::finish

mod buckets;
mod decide;
mod files;
pub(crate) mod sort;

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::union_find::UnionFind;
use super::{sketch_batch, Assignment, Keep, Linkage, SketchFailure};
use crate::detect::{Detector, Stage};
use crate::error::{Error, Result};
use crate::minhash::{Confirm, MinHashDetector};
use buckets::Buckets;
use decide::{stronger, KeptState};
pub use files::read_exact_at;
use files::{decode, Outcome, OutcomeWriter, Signatures, OUTCOME_BYTES};
use sort::Sorter;

/// The smallest memory budget accepted.
pub const MIN_MEMORY: usize = 4 << 20;

/// Where and how much [`SpillingDeduper`] may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpillOptions {
    /// Bytes the sort buffers may hold (at least [`MIN_MEMORY`]).
    pub memory_bytes: usize,
    /// The directory of the spill files (anonymous: nothing is left behind).
    pub dir: PathBuf,
    /// How a near-duplicate joins a cluster (default: the online rule).
    pub linkage: Linkage,
}

impl SpillOptions {
    /// A budget of `memory_bytes`, spilling to `dir`.
    pub fn new(memory_bytes: usize, dir: &Path) -> Self {
        SpillOptions {
            memory_bytes,
            dir: dir.to_path_buf(),
            linkage: Linkage::Kept,
        }
    }
}

/// What a spilled run moved through its files.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpillStats {
    /// Band keys written (one per band of each non-empty document).
    pub band_keys: u64,
    /// Bytes of sorted runs written to disk (band keys and pairs; 0 when both fit in memory).
    pub spilled_bytes: u64,
    /// Distinct candidate pairs (after collapsing identical signatures).
    pub candidate_pairs: u64,
    /// Candidate pairs confirmed as near-duplicates.
    pub confirmed_pairs: u64,
    /// Most distinct signatures in one bucket (its pairs grow with its square).
    pub largest_bucket: u64,
}

/// Sketches documents into spill files; [`SpillingDeduper::finish`] decides them.
pub struct SpillingDeduper {
    det: MinHashDetector,
    opts: SpillOptions,
    sigs: BufWriter<File>,
    bands: Sorter<u128>,
    lengths: Vec<u32>,
    empty: Vec<u64>,
    stats: SpillStats,
}

fn spill_error(dir: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |source| Error::Spill {
        dir: dir.to_path_buf(),
        source,
    }
}

impl SpillingDeduper {
    /// A deduper over `det`'s signatures, bands and confirmation.
    ///
    /// # Errors
    /// [`Error::Config`] if `det` confirms otherwise than by estimated Jaccard or the budget is
    /// under [`MIN_MEMORY`]; [`Error::Spill`] if no file can be made in `opts.dir`.
    pub fn new(det: MinHashDetector, opts: SpillOptions) -> Result<Self> {
        if opts.memory_bytes < MIN_MEMORY {
            return Err(Error::Config(format!(
                "memory budget {} bytes: give at least {} MiB",
                opts.memory_bytes,
                MIN_MEMORY >> 20
            )));
        }
        Self::with_any_budget(det, opts)
    }

    /// [`SpillingDeduper::new`] without the smallest budget (tests spill a few keys a run).
    fn with_any_budget(det: MinHashDetector, opts: SpillOptions) -> Result<Self> {
        if det.confirm() != Confirm::Estimate {
            return Err(Error::Config(
                "bounded-memory dedup confirms pairs by their signatures: use the estimated \
                 Jaccard confirmation (the default)"
                    .into(),
            ));
        }
        let file = tempfile::tempfile_in(&opts.dir).map_err(spill_error(&opts.dir))?;
        Ok(SpillingDeduper {
            sigs: BufWriter::with_capacity(1 << 20, file),
            bands: Sorter::new(opts.memory_bytes / 2, &opts.dir),
            det,
            opts,
            lengths: Vec::new(),
            empty: Vec::new(),
            stats: SpillStats::default(),
        })
    }

    /// Documents pushed so far.
    pub fn len(&self) -> usize {
        self.lengths.len()
    }

    /// Whether no document was pushed.
    pub fn is_empty(&self) -> bool {
        self.lengths.is_empty()
    }

    /// Sketches a batch in parallel and spills its signatures and band keys. Empty documents
    /// (nothing left after normalisation) are recorded as such, as the in-memory deduper does.
    ///
    /// # Errors
    /// A document whose sketch failed otherwise ([`SketchFailure`], nothing of the batch is
    /// kept), or [`Error::Spill`] (as the failure's source, naming the batch's first document).
    pub fn push_batch<S: AsRef<str> + Sync>(
        &mut self,
        texts: &[S],
    ) -> std::result::Result<(), SketchFailure> {
        let start = self.lengths.len();
        let sketches = super::usable(sketch_batch(&self.det, texts), start)?;
        let lengths: Vec<u32> = texts.par_iter().map(|t| super::chars(t.as_ref())).collect();
        let failure = |source| SketchFailure {
            doc: start as u32,
            source,
        };
        let zeros = vec![0u8; 4 * self.det.hasher().num_perm()];
        let mut bytes = Vec::with_capacity(zeros.len());
        for (i, s) in sketches.into_iter().enumerate() {
            let doc = (start + i) as u32;
            if doc as usize / 64 >= self.empty.len() {
                self.empty.push(0);
            }
            match s {
                Ok(s) => {
                    bytes.clear();
                    bytes.extend(s.signature.iter().flat_map(|v| v.to_le_bytes()));
                    self.sigs
                        .write_all(&bytes)
                        .map_err(|e| failure(spill_error(&self.opts.dir)(e)))?;
                    for (band, &key) in s.keys.iter().enumerate() {
                        let k = (band as u128) << 96 | u128::from(key) << 32 | u128::from(doc);
                        self.bands
                            .push(k)
                            .map_err(|e| failure(spill_error(&self.opts.dir)(e)))?;
                    }
                    self.stats.band_keys += s.keys.len() as u64;
                }
                Err(_) => {
                    self.empty[doc as usize / 64] |= 1 << (doc % 64);
                    self.sigs
                        .write_all(&zeros)
                        .map_err(|e| failure(spill_error(&self.opts.dir)(e)))?;
                }
            }
        }
        self.lengths.extend_from_slice(&lengths);
        Ok(())
    }

    /// Decides every document: the outcomes of an in-memory deduper with the options' linkage
    /// on the same texts.
    ///
    /// # Errors
    /// [`Error::Spill`] if a spill file cannot be written or read.
    pub fn finish(self, keep: Keep) -> Result<SpilledClustering> {
        let spill_dir = self.opts.dir.clone();
        let dir = spill_dir.as_path();
        let io = spill_error(dir);
        let SpillingDeduper {
            det,
            opts,
            sigs,
            bands,
            lengths,
            empty,
            mut stats,
        } = self;
        let n = lengths.len();
        let num_perm = det.hasher().num_perm();
        let sigs = Signatures {
            file: sigs.into_inner().map_err(|e| io(e.into_error()))?,
            num_perm,
        };
        stats.spilled_bytes += bands.spilled_bytes();

        // 1 and 2: collapse identical signatures in the first band's buckets; every bucket's
        // distinct nodes give their pairs.
        let mut rep: Vec<u32> = (0..n as u32).collect();
        let mut pairs = Sorter::<u64>::new(opts.memory_bytes / 2, dir);
        let mut bucket: Vec<u32> = Vec::new();
        let mut current = None;
        let mut buckets = Buckets {
            sigs: &sigs,
            rep: &mut rep,
            pairs: &mut pairs,
            stats: &mut stats,
            seen: rustc_hash::FxHashMap::default(),
            nodes: Vec::new(),
        };
        for k in bands.finish().map_err(&io)? {
            let k = k.map_err(&io)?;
            let band_key = k >> 32;
            if current != Some(band_key) {
                if let Some(b) = current {
                    buckets.close((b >> 64) as u32, &mut bucket).map_err(&io)?;
                }
                current = Some(band_key);
            }
            bucket.push(k as u32);
        }
        if let Some(b) = current {
            buckets.close((b >> 64) as u32, &mut bucket).map_err(&io)?;
        }
        drop(buckets);
        stats.spilled_bytes += pairs.spilled_bytes();

        // 3: decide in input order.
        let mut uf = UnionFind::new(n);
        let mut outcomes = OutcomeWriter::new(dir).map_err(&io)?;
        let mut stream = pairs.finish().map_err(&io)?.peekable();
        let (mut sig_j, mut sig_a) = (vec![0u32; num_perm], vec![0u32; num_perm]);
        let mut confirmed: Vec<(u32, f64)> = Vec::new();
        let mut kept = KeptState::new(opts.linkage, n);
        for j in 0..n as u32 {
            // j's distinct candidate pairs (only representatives have any), confirmed.
            confirmed.clear();
            let mut loaded = false;
            let mut last = None;
            loop {
                let p = match stream.peek() {
                    Some(Ok(p)) if (p >> 32) as u32 == j => *p,
                    Some(Err(_)) => {
                        let e = stream.next().and_then(|r| r.err());
                        return Err(io(e.unwrap_or_else(|| std::io::Error::other("pair stream"))));
                    }
                    _ => break,
                };
                stream.next();
                if last == Some(p) {
                    continue;
                }
                last = Some(p);
                stats.candidate_pairs += 1;
                let a = p as u32;
                if !loaded {
                    sigs.read(j, &mut sig_j).map_err(&io)?;
                    loaded = true;
                }
                sigs.read(a, &mut sig_a).map_err(&io)?;
                let (sim, duplicate) = det.confirm_signatures(&sig_j, &sig_a);
                if duplicate {
                    stats.confirmed_pairs += 1;
                    confirmed.push((a, sim));
                }
            }
            let r = rep[j as usize];
            let outcome = match &mut kept {
                // Single linkage: a copy joins its representative, a representative every
                // confirmed earlier one; the evidence is the strongest of them.
                None => {
                    let mut best = None;
                    if r != j {
                        uf.union(j, r);
                        best = Some((r, 1.0));
                    }
                    for &(a, sim) in &confirmed {
                        uf.union(j, a);
                        if stronger((a, sim), best) {
                            best = Some((a, sim));
                        }
                    }
                    let root = uf.find(j);
                    Outcome {
                        duplicate_of: (root != j).then_some(root),
                        matched: best,
                    }
                }
                Some(k) => {
                    let best = k.decide(j, r, &confirmed);
                    if let Some((b, _)) = best {
                        uf.union(j, b);
                    }
                    Outcome {
                        duplicate_of: best.map(|b| b.0),
                        matched: best,
                    }
                }
            };
            outcomes.push(outcome).map_err(&io)?;
        }
        drop(stream);
        drop(sigs);
        let roots = uf.into_roots();
        let keepers = (keep == Keep::Longest).then(|| {
            // Reuse the representatives' memory: the longest member of each cluster, ties to
            // the earliest.
            let mut keeper = rep;
            keeper.fill(u32::MAX);
            for (i, &r) in roots.iter().enumerate() {
                let cur = keeper[r as usize];
                if cur == u32::MAX || lengths[i] > lengths[cur as usize] {
                    keeper[r as usize] = i as u32;
                }
            }
            keeper
        });
        Ok(SpilledClustering {
            method: det.name(),
            keep,
            roots,
            keepers,
            empty,
            outcomes: outcomes.finish().map_err(&io)?,
            dir: spill_dir.clone(),
            stats,
        })
    }
}

/// The decisions of a [`SpillingDeduper`], read back from its outcome file in input order.
pub struct SpilledClustering {
    method: String,
    keep: Keep,
    roots: Vec<u32>,
    keepers: Option<Vec<u32>>,
    empty: Vec<u64>,
    outcomes: File,
    dir: PathBuf,
    stats: SpillStats,
}

impl SpilledClustering {
    /// The detector's name.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// How representatives were chosen.
    pub fn keep(&self) -> Keep {
        self.keep
    }

    /// Number of documents.
    pub fn len(&self) -> usize {
        self.roots.len()
    }

    /// Whether there are no documents.
    pub fn is_empty(&self) -> bool {
        self.roots.is_empty()
    }

    /// What went through the spill files.
    pub fn stats(&self) -> SpillStats {
        self.stats
    }

    /// Every document's assignment, in input order, as [`super::Deduper::finish`] gives them
    /// (clusters final). Each call reads the outcome file from its start.
    pub fn outcomes(&self) -> impl Iterator<Item = Result<Assignment>> + '_ {
        let io = spill_error(&self.dir);
        let mut buf = vec![0u8; 4096 * OUTCOME_BYTES];
        let (mut filled, mut pos, mut at) = (0usize, 0usize, 0u64);
        (0..self.roots.len() as u32).map(move |i| {
            if pos == filled {
                let left = (self.roots.len() - i as usize) * OUTCOME_BYTES;
                filled = left.min(buf.len());
                read_exact_at(&self.outcomes, &mut buf[..filled], at).map_err(&io)?;
                at += filled as u64;
                pos = 0;
            }
            let o = decode(&buf[pos..pos + OUTCOME_BYTES]);
            pos += OUTCOME_BYTES;
            Ok(self.assignment(i, o))
        })
    }

    fn assignment(&self, i: u32, o: Outcome) -> Assignment {
        let root = self.roots[i as usize];
        let duplicate_of = match &self.keepers {
            Some(k) => Some(k[root as usize]).filter(|&k| k != i),
            None => o.duplicate_of,
        };
        Assignment {
            duplicate_of,
            cluster: root,
            matched: o.matched.map(|m| m.0),
            distance: None,
            similarity: o.matched.map(|m| m.1),
            stage: o.matched.map(|_| Stage::Minhash),
            empty: self.empty[i as usize / 64] >> (i % 64) & 1 == 1,
        }
    }
}

#[cfg(test)]
mod tests;
