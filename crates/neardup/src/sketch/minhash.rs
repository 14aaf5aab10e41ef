//! MinHash signatures, Jaccard estimation and LSH banding (spec: `docs/fingerprint-spec.md`,
//! section "MinHash v1").
//!
//! A document becomes a set of **shingles** (character n-grams of its letters and digits, or
//! word n-grams; see [`Shingles`]). Each shingle is hashed **once** with XXH3-64 (seed 0) and
//! folded to 32 bits `x`; then `n` random affine permutations of the 32-bit integers,
//! `π_i(x) = (a_i · x + b_i) mod 2^32` with `a_i` odd, play the role of the `n` random
//! permutations, and the signature keeps the minimum of each. The `(a_i, b_i)` come from
//! SplitMix64 seeded with [`MinHashOptions::seed`]. The inner loop is branch-free 32-bit
//! arithmetic, compiled twice (baseline and AVX2, chosen at run time) so it runs 8 lanes at a
//! time; both give identical results. (A 64-bit multiply-add-shift variant measured 2.5–3×
//! slower; the keys are already XXH3 outputs, so the affine maps only have to decorrelate the
//! `n` orders, which the property tests check against the binomial error bound.)
//!
//! The fraction of equal signature entries estimates the Jaccard similarity of the two shingle
//! sets; its standard error is `sqrt(J(1−J)/n)` (binomial).
//!
//! [`MinHashLsh`] bands the signature into `b` bands of `r` rows; two documents are
//! *candidates* when one whole band agrees, which happens with probability `1 − (1 − s^r)^b` for
//! Jaccard `s`. [`optimal_param`] chooses `(b, r)` from a threshold exactly like datasketch's
//! `MinHashLSH` (minimising the weighted false-positive and false-negative areas under that
//! S-curve). [`MinHashDetector`] confirms candidates by estimated (or exact) Jaccard.
//!
//! ```
//! use neardup::minhash::{MinHasher, MinHashOptions};
//! let mh = MinHasher::new(&MinHashOptions::default()).unwrap();
//! let a = mh.signature_normalized("the quick brown fox jumps over the lazy dog today").unwrap();
//! let b = mh.signature_normalized("the quick brown fox jumped over the lazy dog today").unwrap();
//! let j = neardup::minhash::jaccard_estimate(&a, &b);
//! assert!(j > 0.2 && j < 0.9, "{j}");
//! ```

use neardup_index::random::SplitMix64;
use serde::{Deserialize, Serialize};

use crate::detect::{Detector, Verdict};
use crate::error::{Error, Result};
use crate::exact::Chains;
use crate::features::{detect_method, words_each, Method};
use crate::fingerprint::Fingerprinter;
use crate::hash::xxh3;
use crate::normalize::Normalizer;

/// Version of the MinHash specification implemented here ("MinHash v1").
pub const MINHASH_VERSION: u32 = 1;

/// Which shingles a document is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Shingles {
    /// Word n-grams (`word_ngram`) for text written with spaces (the simhash `auto` rule
    /// picks `words`), character n-grams (`char_ngram`) otherwise.
    #[default]
    Auto,
    /// Character n-grams of the letters and digits ([`chars_each`](crate::features::chars_each)).
    Chars,
    /// Word n-grams ([`words_each`]).
    Words,
}

/// MinHash options (serde defaults = [`Default`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MinHashOptions {
    /// Number of hash functions ("permutations"), 1..=1024. Default 128.
    pub num_perm: usize,
    /// Shingle kind. Default `auto`.
    pub shingles: Shingles,
    /// `n` of character shingles, 1..=64. Default 5.
    pub char_ngram: usize,
    /// `n` of word shingles, 1..=16. Default 3.
    pub word_ngram: usize,
    /// Seed of the SplitMix64 stream giving `(a_i, b_i)`. Default 1.
    pub seed: u64,
}

impl Default for MinHashOptions {
    fn default() -> Self {
        MinHashOptions {
            num_perm: 128,
            shingles: Shingles::Auto,
            char_ngram: 5,
            word_ngram: 3,
            seed: 1,
        }
    }
}

/// Computes MinHash signatures with one fixed set of hash functions.
#[derive(Debug, Clone)]
pub struct MinHasher {
    opts: MinHashOptions,
    a: Vec<u32>,
    b: Vec<u32>,
}

/// Folds a 64-bit shingle hash to the 32-bit key of the spec: `(h ^ (h >> 32)) mod 2^32`.
#[inline]
pub fn fold32(h: u64) -> u32 {
    (h ^ (h >> 32)) as u32
}

#[inline(always)]
fn kernel(sig: &mut [u32], a: &[u32], b: &[u32], xs: &[u32]) {
    let n = sig.len().min(a.len()).min(b.len());
    let (sig, a, b) = (&mut sig[..n], &a[..n], &b[..n]);
    for &x in xs {
        for ((s, &ai), &bi) in sig.iter_mut().zip(a).zip(b) {
            *s = (*s).min(ai.wrapping_mul(x).wrapping_add(bi));
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn kernel_avx2(sig: &mut [u32], a: &[u32], b: &[u32], xs: &[u32]) {
    kernel(sig, a, b, xs)
}

fn kernel_dispatch(sig: &mut [u32], a: &[u32], b: &[u32], xs: &[u32]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above).
            unsafe { kernel_avx2(sig, a, b, xs) };
            return;
        }
    }
    kernel(sig, a, b, xs)
}

impl MinHasher {
    /// Builds the hash functions; fails on out-of-range options.
    pub fn new(opts: &MinHashOptions) -> Result<Self> {
        if opts.num_perm == 0 || opts.num_perm > 1024 {
            return Err(Error::Config(format!(
                "num_perm = {} is out of range; use 1..=1024 (default 128)",
                opts.num_perm
            )));
        }
        if opts.char_ngram == 0 || opts.char_ngram > 64 {
            return Err(Error::Config(format!(
                "minhash char_ngram = {} is out of range; use 1..=64 (default 5)",
                opts.char_ngram
            )));
        }
        if opts.word_ngram == 0 || opts.word_ngram > 16 {
            return Err(Error::Config(format!(
                "minhash word_ngram = {} is out of range; use 1..=16 (default 3)",
                opts.word_ngram
            )));
        }
        let mut rng = SplitMix64::new(opts.seed);
        let mut a = Vec::with_capacity(opts.num_perm);
        let mut b = Vec::with_capacity(opts.num_perm);
        for _ in 0..opts.num_perm {
            a.push(rng.next() as u32 | 1);
            b.push(rng.next() as u32);
        }
        Ok(MinHasher {
            opts: opts.clone(),
            a,
            b,
        })
    }

    /// The options.
    pub fn options(&self) -> &MinHashOptions {
        &self.opts
    }

    /// Number of hash functions.
    pub fn num_perm(&self) -> usize {
        self.opts.num_perm
    }

    /// The shingle kind used for `text` (resolves [`Shingles::Auto`]).
    pub fn shingles_for(&self, text: &str) -> Shingles {
        match self.opts.shingles {
            Shingles::Auto => {
                if detect_method(text) == Method::Words {
                    Shingles::Words
                } else {
                    Shingles::Chars
                }
            }
            s => s,
        }
    }

    /// Calls `f` with the bytes of every shingle occurrence of normalised `text`.
    pub fn shingles_each(&self, text: &str, f: &mut dyn FnMut(&[u8])) {
        match self.shingles_for(text) {
            Shingles::Words => words_each(text, self.opts.word_ngram, f),
            _ => crate::features::chars_each(text, self.opts.char_ngram, f),
        }
    }

    /// The sorted, distinct 64-bit shingle hashes of normalised `text` (for exact Jaccard).
    pub fn shingle_set(&self, text: &str) -> Vec<u64> {
        let mut v = Vec::new();
        self.shingles_each(text, &mut |g| v.push(xxh3(g)));
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The signature of a set of 32-bit shingle keys ([`fold32`] of the XXH3-64 hashes); all
    /// `u32::MAX` for an empty set.
    pub fn signature_of_keys(&self, keys: &[u32]) -> Vec<u32> {
        let mut sig = vec![u32::MAX; self.opts.num_perm];
        for chunk in keys.chunks(256) {
            kernel_dispatch(&mut sig, &self.a, &self.b, chunk);
        }
        sig
    }

    /// The signature of **normalised** `text`; `None` when it has no shingle (no letter or
    /// digit).
    pub fn signature_normalized(&self, text: &str) -> Option<Vec<u32>> {
        let mut sig = vec![u32::MAX; self.opts.num_perm];
        let mut buf: Vec<u32> = Vec::with_capacity(256);
        let mut any = false;
        self.shingles_each(text, &mut |g| {
            buf.push(fold32(xxh3(g)));
            if buf.len() == 256 {
                kernel_dispatch(&mut sig, &self.a, &self.b, &buf);
                buf.clear();
                any = true;
            }
        });
        if !buf.is_empty() {
            kernel_dispatch(&mut sig, &self.a, &self.b, &buf);
            any = true;
        }
        any.then_some(sig)
    }
}

/// Estimated Jaccard similarity: the fraction of equal entries (0 if lengths differ or empty).
pub fn jaccard_estimate(a: &[u32], b: &[u32]) -> f64 {
    if a.len() != b.len() || a.is_empty() {
        return 0.0;
    }
    let eq = a.iter().zip(b).filter(|(x, y)| x == y).count();
    eq as f64 / a.len() as f64
}

/// Exact Jaccard similarity of two sorted, distinct slices (1 for two empty sets).
pub fn jaccard_sorted(a: &[u64], b: &[u64]) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let (mut i, mut j, mut inter) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                inter += 1;
                i += 1;
                j += 1;
            }
        }
    }
    inter as f64 / (a.len() + b.len() - inter) as f64
}

/// Probability that two documents of Jaccard `s` share at least one of `b` bands of `r` rows.
pub fn candidate_probability(s: f64, b: usize, r: usize) -> f64 {
    1.0 - (1.0 - s.powi(r as i32)).powi(b as i32)
}

/// ∫ f over [lo, hi] by composite Gauss–Legendre (5 points on 64 sub-intervals); exact to
/// ~1e-12 for the smooth S-curves here, which matches scipy's `quad` used by datasketch.
fn integrate(f: impl Fn(f64) -> f64, lo: f64, hi: f64) -> f64 {
    const X: [f64; 5] = [
        0.0,
        -0.538_469_310_105_683,
        0.538_469_310_105_683,
        -0.906_179_845_938_664,
        0.906_179_845_938_664,
    ];
    const W: [f64; 5] = [
        0.568_888_888_888_889,
        0.478_628_670_499_366,
        0.478_628_670_499_366,
        0.236_926_885_056_189,
        0.236_926_885_056_189,
    ];
    const N: usize = 64;
    let h = (hi - lo) / N as f64;
    let mut sum = 0.0;
    for k in 0..N {
        let mid = lo + (k as f64 + 0.5) * h;
        for (x, w) in X.iter().zip(W) {
            sum += w * f(mid + 0.5 * h * x);
        }
    }
    sum * 0.5 * h
}

/// False-positive area: ∫₀^t P(candidate | s) ds.
pub fn false_positive_area(threshold: f64, b: usize, r: usize) -> f64 {
    integrate(|s| candidate_probability(s, b, r), 0.0, threshold)
}

/// False-negative area: ∫ₜ¹ (1 − P(candidate | s)) ds.
pub fn false_negative_area(threshold: f64, b: usize, r: usize) -> f64 {
    integrate(|s| 1.0 - candidate_probability(s, b, r), threshold, 1.0)
}

/// The `(bands, rows)` minimising `fp_weight · FP area + fn_weight · FN area` over all
/// `b·r ≤ num_perm`, scanning `b` then `r` upward and keeping the first strict minimum —
/// datasketch's `_optimal_param`. Fails on a threshold outside (0, 1) or bad weights.
pub fn optimal_param(
    threshold: f64,
    num_perm: usize,
    fp_weight: f64,
    fn_weight: f64,
) -> Result<(usize, usize)> {
    if !(threshold > 0.0 && threshold < 1.0) {
        return Err(Error::Config(format!(
            "LSH threshold {threshold} is out of range; use a Jaccard similarity strictly between 0 and 1 (e.g. 0.7)"
        )));
    }
    if !(fp_weight >= 0.0 && fn_weight >= 0.0 && fp_weight + fn_weight > 0.0) {
        return Err(Error::Config(format!(
            "LSH weights ({fp_weight}, {fn_weight}) are invalid; use non-negative weights that are not both 0 (e.g. 0.5, 0.5)"
        )));
    }
    if num_perm == 0 {
        return Err(Error::Config("num_perm must be at least 1".into()));
    }
    let mut best = f64::INFINITY;
    let mut opt = (1, 1);
    for b in 1..=num_perm {
        for r in 1..=num_perm / b {
            let err = false_positive_area(threshold, b, r) * fp_weight
                + false_negative_area(threshold, b, r) * fn_weight;
            if err < best {
                best = err;
                opt = (b, r);
            }
        }
    }
    Ok(opt)
}

/// LSH banding options (serde defaults = [`Default`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LshOptions {
    /// Jaccard threshold, in (0, 1). Default 0.5.
    pub threshold: f64,
    /// Weight of the false-positive area in the `(b, r)` choice. Default 0.5.
    pub false_positive_weight: f64,
    /// Weight of the false-negative area. Default 0.5.
    pub false_negative_weight: f64,
    /// Explicit `(bands, rows)` instead of the optimum; `b·r ≤ num_perm`.
    pub params: Option<(usize, usize)>,
}

impl Default for LshOptions {
    fn default() -> Self {
        LshOptions {
            threshold: 0.5,
            false_positive_weight: 0.5,
            false_negative_weight: 0.5,
            params: None,
        }
    }
}

/// An in-memory LSH index: for each band, band key → chain of slots.
#[derive(Debug, Clone)]
pub struct MinHashLsh {
    bands: usize,
    rows: usize,
    tables: Vec<Chains<u64>>,
    slots: usize,
}

/// The band key of the spec: XXH3-64 (seed = band index) of the band's `r` entries as
/// little-endian u32s.
pub fn band_key(sig: &[u32], band: usize, rows: usize) -> u64 {
    let mut buf = [0u8; 4 * 64];
    let part = &sig[band * rows..(band + 1) * rows];
    if rows <= 64 {
        for (i, v) in part.iter().enumerate() {
            buf[4 * i..4 * i + 4].copy_from_slice(&v.to_le_bytes());
        }
        crate::hash::xxh3_seeded(&buf[..4 * rows], band as u64)
    } else {
        let bytes: Vec<u8> = part.iter().flat_map(|v| v.to_le_bytes()).collect();
        crate::hash::xxh3_seeded(&bytes, band as u64)
    }
}

impl MinHashLsh {
    /// An index for signatures of `num_perm` entries.
    pub fn new(num_perm: usize, opts: &LshOptions) -> Result<Self> {
        let (bands, rows) = match opts.params {
            Some((b, r)) => {
                if b == 0 || r == 0 || b * r > num_perm {
                    return Err(Error::Config(format!(
                        "LSH params ({b}, {r}) need b ≥ 1, r ≥ 1 and b·r ≤ num_perm = {num_perm}"
                    )));
                }
                (b, r)
            }
            None => optimal_param(
                opts.threshold,
                num_perm,
                opts.false_positive_weight,
                opts.false_negative_weight,
            )?,
        };
        Ok(MinHashLsh {
            bands,
            rows,
            tables: (0..bands).map(|_| Chains::default()).collect(),
            slots: 0,
        })
    }

    /// `(bands, rows)`.
    pub fn params(&self) -> (usize, usize) {
        (self.bands, self.rows)
    }

    /// The band keys of a signature (precompute them in the parallel sketch step).
    pub fn keys(&self, sig: &[u32]) -> Vec<u64> {
        (0..self.bands)
            .map(|b| band_key(sig, b, self.rows))
            .collect()
    }

    /// Adds the next slot (0, 1, 2, …) with its band keys; returns the slot.
    pub fn insert_keys(&mut self, keys: &[u64]) -> u32 {
        let slot = self.slots as u32;
        for (t, &k) in self.tables.iter_mut().zip(keys) {
            t.insert(k, slot);
        }
        self.slots += 1;
        slot
    }

    /// Distinct slots sharing at least one band key, ascending.
    pub fn candidates(&self, keys: &[u64]) -> Vec<u32> {
        let mut out = Vec::new();
        for (t, &k) in self.tables.iter().zip(keys) {
            t.for_each(&k, |s| out.push(s));
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Number of slots.
    pub fn len(&self) -> usize {
        self.slots
    }

    /// Whether empty.
    pub fn is_empty(&self) -> bool {
        self.slots == 0
    }

    /// Approximate heap bytes.
    pub fn heap_bytes(&self) -> usize {
        self.tables.iter().map(Chains::heap_bytes).sum()
    }
}

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
    /// LSH band keys.
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
    sigs: Vec<u32>,
    sets: Vec<Box<[u64]>>,
}

impl MinHashDetector {
    /// A detector normalising with `fp`'s configuration.
    pub fn new(fp: Fingerprinter, opts: MinHashDetectorOptions) -> Result<Self> {
        let hasher = MinHasher::new(&opts.minhash)?;
        let lsh = MinHashLsh::new(opts.minhash.num_perm, &opts.lsh)?;
        Ok(MinHashDetector {
            normalizer: Normalizer::new(fp.config().normalize.clone()),
            hasher,
            lsh,
            opts,
            docs: Vec::new(),
            sigs: Vec::new(),
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

    /// The stored signature of document `doc` (needs documents inserted in ascending order, and a
    /// confirmation that keeps signatures); with [`MinHashDetector::band_keys`] it gives back
    /// the document's sketch, so an owner need not keep a second copy.
    pub fn signature_of(&self, doc: u32) -> Option<&[u32]> {
        let n = self.hasher.num_perm();
        let i = self.docs.binary_search(&doc).ok()?;
        self.sigs.get(i * n..(i + 1) * n)
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
        let n = self.hasher.num_perm();
        let t = self.opts.lsh.threshold;
        let mut out = Vec::new();
        for slot in self.lsh.candidates(&s.keys) {
            let i = slot as usize;
            let (sim, duplicate) = match (self.opts.confirm, &s.shingles) {
                (Confirm::None, _) => (1.0, true),
                (Confirm::Exact, Some(q)) => {
                    let sim = jaccard_sorted(q, &self.sets[i]);
                    (sim, sim >= t)
                }
                _ => self.confirm_signatures(&s.signature, &self.sigs[i * n..(i + 1) * n]),
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
        self.lsh.insert_keys(&s.keys);
        self.docs.push(doc);
        match self.opts.confirm {
            Confirm::Estimate => self.sigs.extend_from_slice(&s.signature),
            Confirm::Exact => {
                self.sigs.extend_from_slice(&s.signature);
                self.sets
                    .push(s.shingles.unwrap_or_default().into_boxed_slice());
            }
            Confirm::None => {}
        }
    }

    fn heap_bytes(&self) -> usize {
        self.lsh.heap_bytes()
            + self.docs.capacity() * 4
            + self.sigs.capacity() * 4
            + self.sets.iter().map(|s| s.len() * 8 + 16).sum::<usize>()
    }
}
