//! The MinHash LSH detector: candidates from the bands ([`crate::sketch::lsh`]), confirmed by
//! the estimated (or exact) Jaccard similarity of the signatures ([`crate::minhash`]).

use serde::{Deserialize, Serialize};

use crate::detect::{Detector, Verdict};
use crate::error::{Error, Result};
use crate::fingerprint::Fingerprinter;
use crate::minhash::{
    band_key, band_key_of, from_equal_fraction, jaccard_sorted, keep_low_bits, LshOptions,
    MinHashLsh, MinHashOptions, MinHasher, Shingles, SIGNATURE_BITS,
};
use crate::normalize::Normalizer;

/// How candidates are confirmed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Confirm {
    /// Estimated Jaccard of the stored signatures ≥ threshold (stores `bits / 8 · num_perm`
    /// bytes a doc; see [`MinHashDetectorOptions::bits`]).
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

/// The bits the detector keeps of each signature entry by default ([`MinHashDetectorOptions::bits`];
/// `docs/quality.md` has the tables that chose it).
pub const DEFAULT_BITS: u32 = 8;

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
    /// Bits kept of each signature entry, 8, 16 or 32 (b-bit MinHash,
    /// [`keep_low_bits`]): the signatures the detector sketches,
    /// bands and stores are of these entries, and its estimate of their Jaccard similarity
    /// discounts the chance agreement of unrelated entries
    /// ([`jaccard_estimate_bits`](crate::minhash::jaccard_estimate_bits)). Default
    /// [`DEFAULT_BITS`].
    pub bits: u32,
    /// Under [`Shingles::Auto`]: a text whose share of letters in Han or another spaceless
    /// script ([`spaceless_share`](crate::features::spaceless_share)) lies in `[lo, hi)`
    /// around the rule's cut (0.3: characters from there on, words below) is searched by both
    /// kinds of shingles — its own, and the other's, which a copy on the other side of the
    /// cut was indexed by (an excerpt or an ad moves the share; two signatures of different
    /// shingles share nothing). The document is indexed by its own kind only. `None` (the
    /// default): searched by its own kind only. `auto` searches `[0.2, 0.4)`
    /// ([`SCRIPT_BAND`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub script_band: Option<(f64, f64)>,
}

/// The band of [`MinHashDetectorOptions::script_band`] under the `auto` detector
/// (docs/quality.md, "Texts near the script cut").
pub const SCRIPT_BAND: (f64, f64) = (0.2, 0.4);

impl Default for MinHashDetectorOptions {
    fn default() -> Self {
        MinHashDetectorOptions {
            minhash: MinHashOptions::default(),
            lsh: LshOptions {
                threshold: DEFAULT_THRESHOLD,
                ..LshOptions::default()
            },
            confirm: Confirm::default(),
            bits: DEFAULT_BITS,
            script_band: None,
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
    /// For a text near the script cut ([`MinHashDetectorOptions::script_band`]), its sketch by
    /// the other kind of shingles: searched too, never indexed nor stored.
    pub other: Option<Box<MinHashSketch>>,
}

/// MinHash LSH near-duplicate detector (candidates from bands, confirmed by Jaccard).
#[derive(Debug, Clone)]
pub struct MinHashDetector {
    /// `fp`'s normaliser (remembering: a wrapping template veto normalises the text again).
    normalizer: Normalizer,
    hasher: MinHasher,
    /// Hashers by characters and by words, for texts near the script cut
    /// ([`MinHashDetectorOptions::script_band`]).
    by_kind: Option<Box<(MinHasher, MinHasher)>>,
    lsh: MinHashLsh,
    opts: MinHashDetectorOptions,
    docs: Vec<u32>,
    sigs: Signatures,
    sets: Vec<Box<[u64]>>,
}

impl MinHashDetector {
    /// A detector normalising with `fp`'s configuration.
    pub fn new(fp: Fingerprinter, opts: MinHashDetectorOptions) -> Result<Self> {
        if !SIGNATURE_BITS.contains(&opts.bits) {
            return Err(Error::Config(format!(
                "minhash bits = {} is not supported; use 8, 16 or 32 (default {DEFAULT_BITS})",
                opts.bits
            )));
        }
        let hasher = MinHasher::new(&opts.minhash)?;
        crate::detect::check_script_band("minhash script_band", opts.script_band, SCRIPT_BAND)?;
        let by_kind = (opts.script_band.is_some() && opts.minhash.shingles == Shingles::Auto)
            .then(|| -> Result<_> {
                let kind = |shingles| {
                    MinHasher::new(&MinHashOptions {
                        shingles,
                        ..opts.minhash.clone()
                    })
                };
                Ok(Box::new((kind(Shingles::Chars)?, kind(Shingles::Words)?)))
            })
            .transpose()?;
        let mut lsh = MinHashLsh::new(opts.minhash.num_perm, &opts.lsh)?;
        if opts.confirm == Confirm::None {
            // Every candidate is a duplicate: none may come from part of a tag.
            lsh = lsh.whole_tags();
        }
        let (num_perm, bits) = (hasher.num_perm(), opts.bits);
        Ok(MinHashDetector {
            normalizer: Normalizer::new(fp.config().normalize.clone()),
            hasher,
            by_kind,
            lsh,
            opts,
            docs: Vec::new(),
            sigs: Signatures::new(num_perm, bits),
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

    /// The LSH index, to put frozen tables in place ([`MinHashLsh::put_frozen`]).
    pub(crate) fn lsh_mut(&mut self) -> &mut MinHashLsh {
        &mut self.lsh
    }

    /// The stored signature of document `doc` (needs documents inserted in ascending order, and a
    /// confirmation that keeps signatures); with [`MinHashDetector::band_keys`] it gives back
    /// the document's sketch, so an owner need not keep a second copy.
    pub fn signature_of(&self, doc: u32) -> Option<Vec<u32>> {
        let i = self.docs.binary_search(&doc).ok()?;
        self.sigs.get(i)
    }

    /// Bits kept of each signature entry ([`MinHashDetectorOptions::bits`]).
    pub fn bits(&self) -> u32 {
        self.opts.bits
    }

    /// The estimated Jaccard similarity of two of this detector's signatures (of entries kept
    /// at [`MinHashDetector::bits`]).
    pub fn estimate(&self, a: &[u32], b: &[u32]) -> f64 {
        crate::minhash::jaccard_estimate_bits(a, b, self.opts.bits)
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
        if a.len() != b.len() {
            return self.judged(0, 0);
        }
        self.judged(a.iter().zip(b).filter(|(x, y)| x == y).count(), a.len())
    }

    /// The estimate from `equal` agreeing entries of `n` (0 without entries), and whether it
    /// reaches the threshold: the one confirmation rule of [`Confirm::Estimate`].
    fn judged(&self, equal: usize, n: usize) -> (f64, bool) {
        let sim = if n == 0 {
            0.0
        } else {
            from_equal_fraction(equal as f64 / n as f64, self.opts.bits)
        };
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
        let (signature, share) = match self.by_kind {
            Some(_) => self.hasher.signature_and_share(text),
            None => (self.hasher.signature_normalized(text), None),
        };
        let mut signature = signature.ok_or(Error::EmptyDocument { input_bytes })?;
        keep_low_bits(&mut signature, self.opts.bits);
        let keys = self.lsh.keys(&signature);
        let shingles = (self.opts.confirm == Confirm::Exact).then(|| self.hasher.shingle_set(text));
        Ok(MinHashSketch {
            signature,
            keys,
            other: self.other_sketch(text, share, shingles.is_some()),
            shingles,
        })
    }

    /// The sketch of normalised `text` by the other kind of shingles than its own, when its
    /// script share lies in [`MinHashDetectorOptions::script_band`].
    fn other_sketch(
        &self,
        text: &str,
        share: Option<f64>,
        exact: bool,
    ) -> Option<Box<MinHashSketch>> {
        let ((lo, hi), kinds) = (self.opts.script_band?, self.by_kind.as_deref()?);
        let share = share?;
        if share < lo || share >= hi {
            return None;
        }
        let other = match self.hasher.shingles_for(text) {
            Shingles::Chars => &kinds.1,
            _ => &kinds.0,
        };
        let mut signature = other.signature_normalized(text)?;
        keep_low_bits(&mut signature, self.opts.bits);
        Some(Box::new(MinHashSketch {
            keys: self.lsh.keys(&signature),
            signature,
            shingles: exact.then(|| other.shingle_set(text)),
            other: None,
        }))
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
        let mut out = Vec::new();
        self.find_into(s, &mut out);
        if let Some(other) = &s.other {
            let mine = out.len();
            let mut more = Vec::new();
            self.find_into(other, &mut more);
            for v in more {
                // A document found both ways keeps its stronger similarity.
                match out[..mine].iter_mut().find(|w| w.of == v.of) {
                    Some(w) => {
                        if v.similarity > w.similarity {
                            *w = v;
                        }
                    }
                    None => out.push(v),
                }
            }
        }
        out
    }

    fn tidy(&mut self) {
        self.lsh.freeze_if_worth();
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

impl MinHashDetector {
    /// The documents `s` finds by its own band keys, confirmed, appended to `out`.
    fn find_into(&self, s: &MinHashSketch, out: &mut Vec<Verdict>) {
        let t = self.opts.lsh.threshold;
        let candidates = if self.opts.confirm == Confirm::None {
            // No signatures are kept to check a band with (see `MinHashLsh`).
            self.lsh.candidates(&s.keys)
        } else {
            let rows = self.lsh.params().1;
            self.lsh.candidates_where(&s.keys, |slot, band| {
                self.sigs.band_key(slot as usize, band, rows)
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
                _ => self.judged(self.sigs.equal_entries(i, &s.signature), s.signature.len()),
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
    }
}

/// The kept signatures, in chunks of a fixed number: no array is ever copied to grow, and at
/// most one chunk is partly empty. Each entry takes `bits / 8` bytes (little endian).
#[derive(Debug, Clone)]
struct Signatures {
    num_perm: usize,
    /// Bytes an entry takes: 1, 2 or 4.
    width: usize,
    chunks: Vec<Vec<u8>>,
    len: usize,
}

/// Signatures a chunk holds (2 MiB of 128-slot signatures of 32-bit entries).
const CHUNK: usize = 4096;

impl Signatures {
    fn new(num_perm: usize, bits: u32) -> Signatures {
        Signatures {
            num_perm,
            width: bits as usize / 8,
            chunks: Vec::new(),
            len: 0,
        }
    }

    fn push(&mut self, signature: &[u32]) {
        debug_assert_eq!(signature.len(), self.num_perm);
        if self.len.is_multiple_of(CHUNK) {
            self.chunks
                .push(Vec::with_capacity(CHUNK * self.num_perm * self.width));
        }
        let chunk = self.chunks.last_mut().expect("a chunk was just made");
        match self.width {
            1 => chunk.extend(signature.iter().map(|&v| v as u8)),
            2 => signature
                .iter()
                .for_each(|&v| chunk.extend_from_slice(&(v as u16).to_le_bytes())),
            _ => signature
                .iter()
                .for_each(|&v| chunk.extend_from_slice(&v.to_le_bytes())),
        }
        self.len += 1;
    }

    /// The bytes of the `i`-th signature; `i` must be below the count kept.
    fn bytes(&self, i: usize) -> &[u8] {
        let size = self.num_perm * self.width;
        let at = (i % CHUNK) * size;
        &self.chunks[i / CHUNK][at..at + size]
    }

    /// The entries `from..to` of the `i`-th signature, into `out`.
    fn entries(&self, i: usize, from: usize, to: usize, out: &mut [u32]) {
        let w = self.width;
        let bytes = &self.bytes(i)[from * w..to * w];
        match w {
            1 => out.iter_mut().zip(bytes).for_each(|(o, &b)| *o = b as u32),
            2 => out
                .iter_mut()
                .zip(bytes.chunks_exact(2))
                .for_each(|(o, b)| *o = u16::from_le_bytes([b[0], b[1]]) as u32),
            _ => out
                .iter_mut()
                .zip(bytes.chunks_exact(4))
                .for_each(|(o, b)| *o = u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        }
    }

    /// The `i`-th signature, when kept.
    fn get(&self, i: usize) -> Option<Vec<u32>> {
        (i < self.len).then(|| {
            let mut out = vec![0; self.num_perm];
            self.entries(i, 0, self.num_perm, &mut out);
            out
        })
    }

    /// The key of band `band` (of `rows` rows) of the `i`-th signature, as
    /// [`band_key`] of the whole signature.
    fn band_key(&self, i: usize, band: usize, rows: usize) -> u64 {
        let mut buf = [0u32; 64];
        if rows <= buf.len() {
            self.entries(i, band * rows, (band + 1) * rows, &mut buf[..rows]);
            band_key_of(&buf[..rows], band)
        } else {
            let sig = self.get(i).expect("a kept signature");
            band_key(&sig, band, rows)
        }
    }

    /// How many entries of the `i`-th signature equal those of `q`.
    fn equal_entries(&self, i: usize, q: &[u32]) -> usize {
        let bytes = self.bytes(i);
        match self.width {
            1 => bytes.iter().zip(q).filter(|(&b, &v)| b as u32 == v).count(),
            2 => bytes
                .chunks_exact(2)
                .zip(q)
                .filter(|(b, &v)| u16::from_le_bytes([b[0], b[1]]) as u32 == v)
                .count(),
            _ => bytes
                .chunks_exact(4)
                .zip(q)
                .filter(|(b, &v)| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) == v)
                .count(),
        }
    }

    fn heap_bytes(&self) -> usize {
        self.chunks.iter().map(|c| c.capacity()).sum::<usize>() + self.chunks.capacity() * 24
    }
}
