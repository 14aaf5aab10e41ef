//! The MinHash LSH detector: candidates from the bands ([`crate::sketch::lsh`]), confirmed by
//! the estimated (or exact) Jaccard similarity of the signatures ([`crate::minhash`]).

use serde::{Deserialize, Serialize};

use crate::detect::{Detector, Verdict};
use crate::error::{Error, Result};
use crate::fingerprint::Fingerprinter;
use crate::minhash::{
    band_key, jaccard_estimate, jaccard_sorted, LshOptions, MinHashLsh, MinHashOptions, MinHasher,
};
use crate::normalize::Normalizer;

/// How candidates are confirmed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Confirm {
    /// Estimated Jaccard of the stored signatures ≥ threshold (stores 4·num_perm bytes a doc).
    #[default]
    Estimate,
    /// Exact Jaccard of the stored shingle-hash sets ≥ threshold (stores 8 bytes per distinct
    /// shingle a doc).
    Exact,
    /// Every LSH candidate is a duplicate (no storage beyond the index).
    None,
}

/// The Jaccard threshold of MinHash near-duplicates by default — in `neardup dedup`, the
/// online engine and the library alike (`docs/quality.md` has the tables that chose it).
pub const DEFAULT_THRESHOLD: f64 = 0.6;

/// Options of [`MinHashDetector`] (serde defaults = [`Default`]; the threshold is
/// [`DEFAULT_THRESHOLD`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MinHashDetectorOptions {
    /// Signatures.
    pub minhash: MinHashOptions,
    /// Banding; `lsh.threshold` is also the confirmation threshold.
    pub lsh: LshOptions,
    /// Confirmation.
    pub confirm: Confirm,
}

impl Default for MinHashDetectorOptions {
    fn default() -> Self {
        MinHashDetectorOptions {
            minhash: MinHashOptions::default(),
            lsh: LshOptions {
                threshold: DEFAULT_THRESHOLD,
                ..LshOptions::default()
            },
            confirm: Confirm::default(),
        }
    }
}

/// A document's MinHash sketch.
#[derive(Debug, Clone, PartialEq)]
pub struct MinHashSketch {
    /// The signature.
    pub signature: Vec<u32>,
    /// LSH band keys; empty when they were not kept with the signature (a stored sketch read
    /// back), and then computed from it by [`Detector::insert`].
    pub keys: Vec<u64>,
    /// Sorted distinct shingle hashes, when confirmation is exact.
    pub shingles: Option<Vec<u64>>,
}

/// MinHash LSH near-duplicate detector (candidates from bands, confirmed by Jaccard).
#[derive(Debug, Clone)]
pub struct MinHashDetector {
    /// `fp`'s normaliser (remembering: a wrapping template veto normalises the text again).
    normalizer: Normalizer,
    hasher: MinHasher,
    lsh: MinHashLsh,
    opts: MinHashDetectorOptions,
    docs: Vec<u32>,
    sigs: Signatures,
    sets: Vec<Box<[u64]>>,
}

impl MinHashDetector {
    /// A detector normalising with `fp`'s configuration.
    pub fn new(fp: Fingerprinter, opts: MinHashDetectorOptions) -> Result<Self> {
        let hasher = MinHasher::new(&opts.minhash)?;
        let lsh = MinHashLsh::new(opts.minhash.num_perm, &opts.lsh)?;
        let num_perm = hasher.num_perm();
        Ok(MinHashDetector {
            normalizer: Normalizer::new(fp.config().normalize.clone()),
            hasher,
            lsh,
            opts,
            docs: Vec::new(),
            sigs: Signatures::new(num_perm),
            sets: Vec::new(),
        })
    }

    /// The signature computer.
    pub fn hasher(&self) -> &MinHasher {
        &self.hasher
    }

    /// `(bands, rows)` in use.
    pub fn params(&self) -> (usize, usize) {
        self.lsh.params()
    }

    /// The LSH index (its band keys: [`MinHashLsh::keys`]).
    pub fn lsh(&self) -> &MinHashLsh {
        &self.lsh
    }

    /// The stored signature of document `doc` (needs documents inserted in ascending order, and a
    /// confirmation that keeps signatures); with [`MinHashDetector::band_keys`] it gives back
    /// the document's sketch, so an owner need not keep a second copy.
    pub fn signature_of(&self, doc: u32) -> Option<&[u32]> {
        let i = self.docs.binary_search(&doc).ok()?;
        self.sigs.get(i)
    }

    /// How candidates are confirmed.
    pub fn confirm(&self) -> Confirm {
        self.opts.confirm
    }

    /// The LSH band keys of a signature.
    pub fn band_keys(&self, signature: &[u32]) -> Vec<u64> {
        self.lsh.keys(signature)
    }

    /// The confirmation of a candidate pair from its two signatures, as [`Detector::find`]
    /// confirms an LSH candidate under [`Confirm::Estimate`]: the estimated Jaccard similarity,
    /// and whether it reaches the threshold. (Under [`Confirm::None`] every candidate is a
    /// duplicate; [`Confirm::Exact`] needs the shingle sets.)
    pub fn confirm_signatures(&self, a: &[u32], b: &[u32]) -> (f64, bool) {
        if self.opts.confirm == Confirm::None {
            return (1.0, true);
        }
        let sim = jaccard_estimate(a, b);
        (sim, sim >= self.opts.lsh.threshold)
    }

    /// Makes room for `more` documents, so that inserting them never grows a band table (a
    /// restart knows how many it will insert).
    pub fn reserve(&mut self, more: usize) {
        self.lsh.reserve(more);
        self.docs.reserve(more);
    }

    /// The Jaccard threshold.
    pub fn threshold(&self) -> f64 {
        self.opts.lsh.threshold
    }

    /// The sketch of already-normalised text (`input_bytes` is for the error message).
    pub fn sketch_normalized(&self, text: &str, input_bytes: usize) -> Result<MinHashSketch> {
        let signature = self
            .hasher
            .signature_normalized(text)
            .ok_or(Error::EmptyDocument { input_bytes })?;
        let keys = self.lsh.keys(&signature);
        let shingles = (self.opts.confirm == Confirm::Exact).then(|| self.hasher.shingle_set(text));
        Ok(MinHashSketch {
            signature,
            keys,
            shingles,
        })
    }
}

impl Detector for MinHashDetector {
    type Sketch = MinHashSketch;

    fn name(&self) -> String {
        let (b, r) = self.lsh.params();
        format!(
            "minhash(n={},t={},b={b},r={r})",
            self.hasher.num_perm(),
            self.opts.lsh.threshold
        )
    }

    fn sketch(&self, text: &str) -> Result<MinHashSketch> {
        let n = self.normalizer.normalize_remembered(text);
        self.sketch_normalized(&n, text.len())
    }

    fn find(&self, s: &MinHashSketch) -> Vec<Verdict> {
        let t = self.opts.lsh.threshold;
        let mut out = Vec::new();
        let candidates = if self.opts.confirm == Confirm::None {
            // No signatures are kept to check a band with (see `MinHashLsh`).
            self.lsh.candidates(&s.keys)
        } else {
            let rows = self.lsh.params().1;
            self.lsh.candidates_where(&s.keys, |slot, band| {
                band_key(self.sigs.at(slot as usize), band, rows)
            })
        };
        for slot in candidates {
            let i = slot as usize;
            let (sim, duplicate) = match (self.opts.confirm, &s.shingles) {
                (Confirm::None, _) => (1.0, true),
                (Confirm::Exact, Some(q)) => {
                    let sim = jaccard_sorted(q, &self.sets[i]);
                    (sim, sim >= t)
                }
                _ => self.confirm_signatures(&s.signature, self.sigs.at(i)),
            };
            if duplicate {
                out.push(Verdict {
                    of: self.docs[i],
                    distance: None,
                    similarity: (self.opts.confirm != Confirm::None).then_some(sim),
                    stage: crate::detect::Stage::Minhash,
                });
            }
        }
        out
    }

    fn insert(&mut self, doc: u32, s: MinHashSketch) {
        if s.keys.is_empty() {
            self.lsh.insert_keys(&self.lsh.keys(&s.signature));
        } else {
            self.lsh.insert_keys(&s.keys);
        }
        self.docs.push(doc);
        match self.opts.confirm {
            Confirm::Estimate => self.sigs.push(&s.signature),
            Confirm::Exact => {
                self.sigs.push(&s.signature);
                self.sets
                    .push(s.shingles.unwrap_or_default().into_boxed_slice());
            }
            Confirm::None => {}
        }
    }

    fn heap_bytes(&self) -> usize {
        self.lsh.heap_bytes()
            + self.docs.capacity() * 4
            + self.sigs.heap_bytes()
            + self.sets.iter().map(|s| s.len() * 8 + 16).sum::<usize>()
    }
}

/// The kept signatures, in chunks of a fixed number: no array is ever copied to grow, and at
/// most one chunk is partly empty.
#[derive(Debug, Clone)]
struct Signatures {
    num_perm: usize,
    chunks: Vec<Vec<u32>>,
    len: usize,
}

/// Signatures a chunk holds (2 MiB of 128-slot signatures).
const CHUNK: usize = 4096;

impl Signatures {
    fn new(num_perm: usize) -> Signatures {
        Signatures {
            num_perm,
            chunks: Vec::new(),
            len: 0,
        }
    }

    fn push(&mut self, signature: &[u32]) {
        debug_assert_eq!(signature.len(), self.num_perm);
        if self.len.is_multiple_of(CHUNK) {
            self.chunks.push(Vec::with_capacity(CHUNK * self.num_perm));
        }
        self.chunks
            .last_mut()
            .expect("a chunk was just made")
            .extend_from_slice(signature);
        self.len += 1;
    }

    /// The `i`-th signature, when kept.
    fn get(&self, i: usize) -> Option<&[u32]> {
        (i < self.len).then(|| self.at(i))
    }

    /// The `i`-th signature; `i` must be below the count kept.
    fn at(&self, i: usize) -> &[u32] {
        let at = (i % CHUNK) * self.num_perm;
        &self.chunks[i / CHUNK][at..at + self.num_perm]
    }

    fn heap_bytes(&self) -> usize {
        self.chunks.iter().map(|c| c.capacity() * 4).sum::<usize>() + self.chunks.capacity() * 24
    }
}
