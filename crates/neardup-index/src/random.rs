//! Deterministic randomness: [`SplitMix64`], the one generator of the workspace (the MinHash
//! v1 permutation parameters, the evaluation corpora, tests and benches all draw from it), and
//! synthetic fingerprints for tests, benches and the scale example.
//!
//! Invariant: `SplitMix64::new(seed)` yields the reference SplitMix64 stream (Steele, Lea,
//! Flood 2014) bit for bit; persisted specs (MinHash v1) depend on it, so it never changes.
//!
//! [`corpus`] is the benchmark distribution: uniform 64-bit fingerprints, plus 2% near-duplicates
//! of an earlier fingerprint at distance 0 to 3 and 1% at distance 4 to 6. [`clustered`] plants
//! a hot block: `cluster` fingerprints share their top 16 bits (block 0 of the `m4` layout).

/// The SplitMix64 generator (small, fast, deterministic; not for cryptography).
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`; returns 0 for `n == 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            ((self.next() as u128 * n as u128) >> 64) as u64
        }
    }
}

/// `fp` with exactly `d` distinct random bits flipped (`d <= 64`).
pub fn flip_bits(fp: u64, d: u32, rng: &mut SplitMix64) -> u64 {
    let mut mask = 0u64;
    while mask.count_ones() < d.min(64) {
        mask |= 1 << rng.below(64);
    }
    fp ^ mask
}

/// `n` fingerprints: uniform, with 2% near-duplicates (distance 0–3) and 1% (distance 4–6) of
/// earlier ones.
pub fn corpus(n: usize, seed: u64) -> Vec<u64> {
    let mut rng = SplitMix64::new(seed);
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let u = rng.below(100);
        let f = if i > 0 && u < 2 {
            let base = out[rng.below(i as u64) as usize];
            let d = rng.below(4) as u32;
            flip_bits(base, d, &mut rng)
        } else if i > 0 && u < 3 {
            let base = out[rng.below(i as u64) as usize];
            let d = 4 + rng.below(3) as u32;
            flip_bits(base, d, &mut rng)
        } else {
            rng.next()
        };
        out.push(f);
    }
    out
}

/// `n` uniform fingerprints of which `cluster` (spread evenly) share the top 16 bits `0xabcd`.
pub fn clustered(n: usize, cluster: usize, seed: u64) -> Vec<u64> {
    let mut rng = SplitMix64::new(seed);
    let mut out: Vec<u64> = (0..n).map(|_| rng.next()).collect();
    let cluster = cluster.min(n);
    if let Some(step) = n.checked_div(cluster) {
        for c in 0..cluster {
            let i = c * step;
            out[i] = (out[i] & !(0xffffu64 << 48)) | (0xabcdu64 << 48);
        }
    }
    out
}
