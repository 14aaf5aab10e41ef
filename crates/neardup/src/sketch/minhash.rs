//! MinHash signatures and Jaccard estimation (spec: `docs/fingerprint-spec.md`, sections
//! "MinHash v3", "MinHash v2" and "MinHash v1"); LSH banding is [`crate::sketch::lsh`] and the detector
//! [`crate::detect::minhash`], both re-exported here.
//!
//! A document becomes a set of **shingles** (character n-grams of its letters and digits, or
//! word n-grams; see [`Shingles`]). Each shingle is hashed **once** with XXH3-64 (seed 0) and
//! folded to 32 bits `x` — or, under v3, a character n-gram of up to six letters is keyed from
//! its code points ([`code_point_key`]). Then, by [`Scheme`]:
//!
//! - **v3, [`Scheme::CodePointSketch`]** (default): v2's sketch of code-point keys, cut and
//!   keyed in the pass that finds the letters.
//! - **v2, [`Scheme::SimilaritySketch`]**: fast similarity sketching (Dahlgaard,
//!   Knudsen & Thorup 2017). Rounds of one mix per key each send every key to one of the `n`
//!   bins, which keep their smallest `(round, mix)`, until no bin is empty: one or two rounds
//!   for a long document, so a signature costs about what cutting and hashing the shingles
//!   costs; a short document is spread over the bins before a key repeats, so the estimate
//!   errs less than with `n` independent permutations.
//! - **v1, [`Scheme::Permutations`]**: `n` random affine permutations of the 32-bit integers,
//!   `π_i(x) = (a_i · x + b_i) mod 2^32` with `a_i` odd, and the signature keeps the minimum of
//!   each. The inner loop is branch-free 32-bit arithmetic, compiled twice (baseline and AVX2,
//!   chosen at run time) so it runs 8 lanes at a time; both give identical results.
//!
//! The hash functions come from SplitMix64 seeded with [`MinHashOptions::seed`]. The fraction of
//! equal signature entries estimates the Jaccard similarity of the two shingle sets; with v1 its
//! standard error is `sqrt(J(1−J)/n)` (binomial), with v2 at most that.
//!
//! [`MinHashLsh`] bands the signature into `b` bands of `r` rows; two documents are
//! *candidates* when one whole band agrees, which happens with probability `1 − (1 − s^r)^b` for
//! Jaccard `s`. [`optimal_param`] chooses `(b, r)` from a threshold exactly like datasketch's
//! `MinHashLSH`. [`MinHashDetector`] confirms candidates by estimated (or exact) Jaccard.
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

use crate::error::{Error, Result};
use crate::features::{
    detect_method, spaceless_share, words_each, Method, PackedChars, MAX_CODES, PACK_PIECE,
};
use crate::hash::xxh3;
use crate::text::packed::char_codes_scan;

pub use super::lsh::{
    band_key, band_key_of, candidate_probability, false_negative_area, false_positive_area,
    optimal_param, LshOptions, MinHashLsh,
};
pub(crate) use super::lsh::{FrozenTables, MIN_FROZEN};
pub use crate::detect::minhash::{
    Confirm, MinHashDetector, MinHashDetectorOptions, MinHashSketch, DEFAULT_BITS,
    DEFAULT_THRESHOLD, SCRIPT_BAND,
};

/// Version of the MinHash specification of the default scheme ("MinHash v3",
/// [`Scheme::CodePointSketch`]; v2 is [`Scheme::SimilaritySketch`], v1
/// [`Scheme::Permutations`]). See [`Scheme::version`].
pub const MINHASH_VERSION: u32 = 3;

/// How a signature is computed from the shingle keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Scheme {
    /// MinHash v3: v2's sketch, with the key of a character n-gram of up to six letters and
    /// digits computed from its code points packed into one integer ([`code_point_key`], one
    /// multiply and an avalanche) instead of XXH3 of its UTF-8 bytes, cut in the same pass that
    /// finds the letters ([`char_codes_each`](crate::features::char_codes_each)). Word n-grams
    /// and longer character n-grams keep v2's keys. The default.
    #[default]
    CodePointSketch,
    /// MinHash v2: **fast similarity sketching** (Dahlgaard, Knudsen & Thorup 2017). In round
    /// `i < n` every key goes to one bin, picked by its round-`i` mix, with value `(i, mix)`; in
    /// round `n + j` every key goes to bin `j`; a bin keeps its smallest value, and the rounds
    /// stop as soon as every bin holds one (later rounds only bring larger values). A document
    /// with many more shingles than bins costs one or two mixes and minimums per shingle
    /// instead of `n` multiply-adds; one with few shingles is spread over the bins without
    /// repeating a shingle in two bins until it must, so it errs less than `n` independent
    /// permutations.
    SimilaritySketch,
    /// MinHash v1: `n` affine permutations, one multiply-add per shingle per entry.
    Permutations,
}

impl Scheme {
    /// Its version in the specification (`docs/fingerprint-spec.md`): 1, 2 or 3.
    pub fn version(self) -> u32 {
        match self {
            Scheme::Permutations => 1,
            Scheme::SimilaritySketch => 2,
            Scheme::CodePointSketch => 3,
        }
    }
}

impl std::str::FromStr for Scheme {
    type Err = Error;
    /// `v1`, `v2`, `v3` or the serialised names (`permutations`, `similarity_sketch`,
    /// `code_point_sketch`).
    fn from_str(s: &str) -> Result<Scheme> {
        match s {
            "v1" | "permutations" => Ok(Scheme::Permutations),
            "v2" | "similarity_sketch" => Ok(Scheme::SimilaritySketch),
            "v3" | "code_point_sketch" => Ok(Scheme::CodePointSketch),
            _ => Err(Error::Config(format!(
                "MinHash scheme `{s}`: use v3 (code_point_sketch, the default), v2 \
                 (similarity_sketch) or v1 (permutations)"
            ))),
        }
    }
}

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
    /// Seed of the SplitMix64 stream giving the hash functions (v1: `(a_i, b_i)`; v2: the
    /// rounds' mix keys). Default 1.
    pub seed: u64,
    /// Signature scheme. Default [`Scheme::CodePointSketch`] (MinHash v3).
    pub scheme: Scheme,
}

impl Default for MinHashOptions {
    fn default() -> Self {
        MinHashOptions {
            num_perm: 128,
            shingles: Shingles::Auto,
            char_ngram: 5,
            word_ngram: 3,
            seed: 1,
            scheme: Scheme::default(),
        }
    }
}

/// Computes MinHash signatures with one fixed set of hash functions.
#[derive(Debug, Clone)]
pub struct MinHasher {
    opts: MinHashOptions,
    /// v1: the multipliers `a_i`.
    a: Vec<u32>,
    /// v1: the increments `b_i`.
    b: Vec<u32>,
    /// v2: the mix key of each of the `2n` rounds.
    rounds: Vec<u32>,
}

/// MinHash v2's key mix: a bijection of the 32-bit integers (XOR with the round's key, then
/// MurmurHash3's `fmix32`).
#[inline(always)]
fn mix32(x: u32, key: u32) -> u32 {
    let mut h = x ^ key;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

/// The bin of a mixed key among `n`: its high bits, `(y · n) >> 32`.
#[inline(always)]
fn bin_of(y: u32, n: usize) -> usize {
    ((y as u64 * n as u64) >> 32) as usize
}

/// MinHash v3's key of a character n-gram packed by
/// [`char_codes_each`](crate::features::char_codes_each): with `lo`, `hi` the low and high 64
/// bits of `g`, the 128-bit product `(lo ^ 0x9E3779B185EBCA87) · (hi ^ 0xC2B2AE3D27D4EB4F)`
/// folded to 64 bits (low ^ high), XXH3's avalanche (`h ^= h >> 37; h *= 0x165667919E3779F9;
/// h ^= h >> 32`), then [`fold32`].
#[inline(always)]
pub fn code_point_key(g: u128) -> u32 {
    let lo = (g as u64) ^ 0x9E37_79B1_85EB_CA87;
    let hi = ((g >> 64) as u64) ^ 0xC2B2_AE3D_27D4_EB4F;
    let m = lo as u128 * hi as u128;
    let mut h = (m as u64) ^ ((m >> 64) as u64);
    h ^= h >> 37;
    h = h.wrapping_mul(0x1656_6791_9E37_79F9);
    fold32(h ^ (h >> 32))
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
        let n = opts.num_perm;
        let (mut a, mut b, mut rounds) = (Vec::new(), Vec::new(), Vec::new());
        let mut rng = SplitMix64::new(opts.seed);
        match opts.scheme {
            Scheme::SimilaritySketch | Scheme::CodePointSketch => {
                for _ in 0..2 * n {
                    rounds.push(rng.next() as u32);
                }
            }
            Scheme::Permutations => {
                for _ in 0..n {
                    a.push(rng.next() as u32 | 1);
                    b.push(rng.next() as u32);
                }
            }
        }
        Ok(MinHasher {
            opts: opts.clone(),
            a,
            b,
            rounds,
        })
    }

    /// MinHash v2 of a set of keys ([`Scheme::SimilaritySketch`]); `None` without keys. Each
    /// entry is `mix ^ (round · 0x9E3779B9)` of the bin's smallest `(round, mix)`.
    fn similarity_sketch(&self, keys: &[u32]) -> Option<Vec<u32>> {
        self.similarity_sketch_from(keys, vec![u64::MAX; self.opts.num_perm], 0)
    }

    /// [`MinHasher::similarity_sketch`] with the bins `s` as rounds `0..first` left them.
    fn similarity_sketch_from(
        &self,
        keys: &[u32],
        mut s: Vec<u64>,
        first: usize,
    ) -> Option<Vec<u32>> {
        if keys.is_empty() {
            return None;
        }
        let n = self.opts.num_perm;
        for (i, &k) in self.rounds.iter().enumerate().skip(first) {
            if first > 0 && i == first && s.iter().all(|&v| v != u64::MAX) {
                break;
            }
            if i < n {
                for &x in keys {
                    let y = mix32(x, k);
                    if let Some(b) = s.get_mut(bin_of(y, n)) {
                        *b = (*b).min((i as u64) << 32 | y as u64);
                    }
                }
            } else if s[i - n] == u64::MAX {
                let y = keys.iter().map(|&x| mix32(x, k)).min().unwrap_or(u32::MAX);
                s[i - n] = (i as u64) << 32 | y as u64;
            }
            if s.iter().all(|&v| v != u64::MAX) {
                break;
            }
        }
        Some(
            s.iter()
                .map(|&v| (v as u32) ^ ((v >> 32) as u32).wrapping_mul(0x9E37_79B9))
                .collect(),
        )
    }

    /// The signature of the key chunks `each` yields (v1 or v2); `None` when there is no key.
    fn signature_with(&self, each: impl FnOnce(&mut dyn FnMut(&[u32]))) -> Option<Vec<u32>> {
        match self.opts.scheme {
            Scheme::SimilaritySketch | Scheme::CodePointSketch => {
                let mut keys = Vec::new();
                each(&mut |xs| keys.extend_from_slice(xs));
                self.similarity_sketch(&keys)
            }
            Scheme::Permutations => {
                let mut sig = vec![u32::MAX; self.opts.num_perm];
                let mut any = false;
                each(&mut |xs| {
                    any |= !xs.is_empty();
                    kernel_dispatch(&mut sig, &self.a, &self.b, xs);
                });
                any.then_some(sig)
            }
        }
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
        self.shingles_for_each(text, f)
    }

    /// [`MinHasher::shingles_each`], generic over `f` so that the hashing inlines into the
    /// character path.
    fn shingles_for_each<F: FnMut(&[u8])>(&self, text: &str, mut f: F) {
        match self.opts.shingles {
            Shingles::Words => words_each(text, self.opts.word_ngram, &mut f),
            Shingles::Chars => crate::features::chars_each(text, self.opts.char_ngram, f),
            // ASCII text has no spaceless script: `auto` picks words.
            Shingles::Auto if text.is_ascii() => words_each(text, self.opts.word_ngram, &mut f),
            // A long text is classified first, then cut a piece at a time (bounded memory).
            Shingles::Auto if text.len() > PACK_PIECE => {
                if detect_method(text) == Method::Words {
                    words_each(text, self.opts.word_ngram, &mut f)
                } else {
                    crate::features::chars_each(text, self.opts.char_ngram, f)
                }
            }
            Shingles::Auto => {
                // One pass packs the characters and counts the scripts `auto` decides on.
                let packed = PackedChars::new(text);
                if packed.method() == Method::Words {
                    words_each(text, self.opts.word_ngram, &mut f)
                } else {
                    packed.ngrams_each(self.opts.char_ngram, f)
                }
            }
        }
    }

    /// MinHash v3 of normalised `text`: v2's sketch of the code-point keys of its character
    /// n-grams when it is cut into characters and `char_ngram` ≤ 6 (the sketch's first round
    /// taken as the keys are made), of v2's keys otherwise.
    fn code_point_sketch(&self, text: &str) -> Option<Vec<u32>> {
        self.code_point_sketch_share(text).0
    }

    /// [`MinHasher::code_point_sketch`] and, when it cut the text into characters, the share
    /// of its letters in Han or another spaceless script, counted on the way.
    fn code_point_sketch_share(&self, text: &str) -> (Option<Vec<u32>>, Option<f64>) {
        let n = self.opts.char_ngram;
        let mut keys: Vec<u32> = Vec::with_capacity(text.len() / 3 + 1);
        let chars = match self.opts.shingles {
            Shingles::Words => false,
            Shingles::Chars => true,
            Shingles::Auto => !text.is_ascii(),
        };
        if chars && n <= MAX_CODES {
            let bins = self.opts.num_perm;
            let mut s = vec![u64::MAX; bins];
            let k0 = self.rounds[0];
            let (method, share) = char_codes_scan(text, n, |g| {
                let x = code_point_key(g);
                keys.push(x);
                // Round 0 of the sketch: values `(0, y)` compare as `y`.
                let y = mix32(x, k0);
                if let Some(b) = s.get_mut(bin_of(y, bins)) {
                    *b = (*b).min(y as u64);
                }
            });
            if self.opts.shingles == Shingles::Chars || method != Method::Words {
                return (self.similarity_sketch_from(&keys, s, 1), share);
            }
            keys.clear();
            words_each(text, self.opts.word_ngram, &mut |g| {
                keys.push(fold32(xxh3(g)))
            });
            return (self.similarity_sketch(&keys), share);
        }
        self.shingles_for_each(text, |g| keys.push(fold32(xxh3(g))));
        (self.similarity_sketch(&keys), None)
    }

    /// [`MinHasher::signature_normalized`] and the share of `text`'s letters in Han or another
    /// spaceless script ([`spaceless_share`]; `None` for ASCII text, whose share is 0), from
    /// one pass where the scheme allows.
    pub fn signature_and_share(&self, text: &str) -> (Option<Vec<u32>>, Option<f64>) {
        if self.opts.scheme == Scheme::CodePointSketch {
            let (signature, share) = self.code_point_sketch_share(text);
            if share.is_some() || text.is_ascii() {
                return (signature, share);
            }
            return (signature, spaceless_share(text));
        }
        (self.signature_normalized(text), spaceless_share(text))
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
        self.signature_with(|f| {
            for chunk in keys.chunks(256) {
                f(chunk)
            }
        })
        .unwrap_or_else(|| vec![u32::MAX; self.opts.num_perm])
    }

    /// The signature of **normalised** `text`; `None` when it has no shingle (no letter or
    /// digit).
    pub fn signature_normalized(&self, text: &str) -> Option<Vec<u32>> {
        if self.opts.scheme == Scheme::CodePointSketch {
            return self.code_point_sketch(text);
        }
        if self.opts.scheme == Scheme::SimilaritySketch {
            let mut keys: Vec<u32> = Vec::with_capacity(text.len() / 3 + 1);
            self.shingles_for_each(text, |g| keys.push(fold32(xxh3(g))));
            return self.similarity_sketch(&keys);
        }
        self.signature_with(|f| {
            let mut buf: Vec<u32> = Vec::with_capacity(256);
            self.shingles_for_each(text, |g| {
                buf.push(fold32(xxh3(g)));
                if buf.len() == 256 {
                    f(&buf);
                    buf.clear();
                }
            });
            f(&buf);
        })
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

/// The widths, in bits, a signature's entries may be kept at ([`keep_low_bits`]).
pub const SIGNATURE_BITS: [u32; 3] = [8, 16, 32];

/// Keeps the low `bits` bits of every entry (**b-bit MinHash**, Li & König 2010): a signature
/// of `b`-bit entries takes `b / 32` of the memory, and two entries that differ are still told
/// apart but with probability `2^-b`. `bits` is 8, 16 or 32 ([`SIGNATURE_BITS`]; 32 changes
/// nothing).
///
/// ```
/// let mut sig = vec![0x1234_5678, 0xFFFF_FF01];
/// neardup::minhash::keep_low_bits(&mut sig, 8);
/// assert_eq!(sig, [0x78, 0x01]);
/// ```
pub fn keep_low_bits(sig: &mut [u32], bits: u32) {
    if bits < 32 {
        let mask = (1u32 << bits) - 1;
        sig.iter_mut().for_each(|v| *v &= mask);
    }
}

/// Estimated Jaccard similarity of two signatures whose entries were kept at `bits` bits
/// ([`keep_low_bits`]): with `f` the fraction of equal entries, `(f − 2^-b) / (1 − 2^-b)`,
/// at least 0 (two unrelated entries are equal with probability `2^-b`, which this removes);
/// at 32 bits it is [`jaccard_estimate`].
///
/// ```
/// use neardup::minhash::jaccard_estimate_bits;
/// let a: Vec<u32> = (0..128).map(|i| i % 256).collect();
/// assert_eq!(jaccard_estimate_bits(&a, &a, 8), 1.0);
/// let mut b = a.clone();
/// b[..64].iter_mut().for_each(|v| *v = (*v + 1) % 256);
/// let half = jaccard_estimate_bits(&a, &b, 8);
/// assert!(half < 0.5 && half > 0.49, "{half}");
/// ```
pub fn jaccard_estimate_bits(a: &[u32], b: &[u32], bits: u32) -> f64 {
    let f = jaccard_estimate(a, b);
    from_equal_fraction(f, bits)
}

/// The Jaccard estimate of `bits`-bit signatures whose entries agree in fraction `f`.
pub(crate) fn from_equal_fraction(f: f64, bits: u32) -> f64 {
    if bits >= 32 {
        return f;
    }
    let chance = (-(bits as f64)).exp2();
    ((f - chance) / (1.0 - chance)).max(0.0)
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
