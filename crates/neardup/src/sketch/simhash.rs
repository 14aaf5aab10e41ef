//! 64-bit simhash (Charikar 2002) and Hamming distance.
//!
//! For features `f` with 64-bit hashes `h_f` and integer weights `w_f`:
//!
//! ```text
//! V_b = Σ_f w_f · (2·bit_b(h_f) − 1)        for b in 0..64 (bit 0 = least significant)
//! simhash bit b = 1  iff  V_b > 0            (a tie at zero gives 0)
//! ```
//!
//! Integer weights make the sum exact, so the fingerprint does not depend on the order of the
//! features, nor on the platform. [`simhash64`] is the reference implementation; the feature
//! extractors use [`UnitAccumulator`] (weight 1 per occurrence, SWAR byte lanes, the fast path
//! for shingles) and [`WeightedAccumulator`], both proven equal to it by property tests.
//!
//! ```
//! use neardup::simhash::{simhash64, hamming};
//! let a = simhash64([(0xF0F0, 2), (0x0FF0, 1)]);
//! // bits 4–7: +2+1; bits 8–11: −2+1; bits 12–15: +2−1; all others −3.
//! assert_eq!(a, 0xF0F0);
//! assert_eq!(hamming(a, a ^ 0b101), 2);
//! ```

/// Hamming distance: the number of differing bits.
#[inline]
pub fn hamming(a: u64, b: u64) -> u32 {
    (a ^ b).count_ones()
}

/// Reference simhash of `(hash, weight)` pairs; see the module docs. An empty input gives 0.
pub fn simhash64<I: IntoIterator<Item = (u64, u64)>>(features: I) -> u64 {
    let mut acc = WeightedAccumulator::new();
    for (h, w) in features {
        acc.add(h, w);
    }
    acc.finish()
}

/// Sums signed integer weights per bit.
#[derive(Debug, Clone)]
pub struct WeightedAccumulator {
    v: [i64; 64],
    n: u64,
}

impl Default for WeightedAccumulator {
    fn default() -> Self {
        Self::new()
    }
}

impl WeightedAccumulator {
    /// An empty accumulator.
    pub fn new() -> Self {
        WeightedAccumulator { v: [0; 64], n: 0 }
    }

    /// Adds one feature.
    #[inline]
    pub fn add(&mut self, hash: u64, weight: u64) {
        let w = weight.min(i64::MAX as u64 / 1024) as i64;
        for (b, v) in self.v.iter_mut().enumerate() {
            let bit = ((hash >> b) & 1) as i64;
            *v += (2 * bit - 1) * w;
        }
        self.n += 1;
    }

    /// Number of features added.
    pub fn count(&self) -> u64 {
        self.n
    }

    /// The fingerprint.
    pub fn finish(&self) -> u64 {
        sign_bits(&self.v)
    }
}

fn sign_bits(v: &[i64; 64]) -> u64 {
    let mut out = 0u64;
    for (b, &x) in v.iter().enumerate() {
        if x > 0 {
            out |= 1 << b;
        }
    }
    out
}

/// `SPREAD[b]` has byte lane `i` equal to bit `i` of `b`.
const SPREAD: [u64; 256] = {
    let mut t = [0u64; 256];
    let mut b = 0;
    while b < 256 {
        let mut i = 0;
        while i < 8 {
            t[b] |= (((b >> i) & 1) as u64) << (8 * i);
            i += 1;
        }
        b += 1;
    }
    t
};

/// Counts set bits per position for features of weight 1 (one call per occurrence), eight
/// positions per `u64` in byte lanes, flushed every 255 features. Equivalent to
/// [`WeightedAccumulator`] with weight = number of occurrences.
#[derive(Debug, Clone)]
pub struct UnitAccumulator {
    lanes: [u64; 8],
    pending: u32,
    ones: [u64; 64],
    n: u64,
}

impl Default for UnitAccumulator {
    fn default() -> Self {
        Self::new()
    }
}

impl UnitAccumulator {
    /// An empty accumulator.
    pub fn new() -> Self {
        UnitAccumulator {
            lanes: [0; 8],
            pending: 0,
            ones: [0; 64],
            n: 0,
        }
    }

    /// Adds one occurrence of a feature.
    #[inline]
    pub fn add(&mut self, hash: u64) {
        for (j, lane) in self.lanes.iter_mut().enumerate() {
            *lane += SPREAD[((hash >> (8 * j)) & 0xFF) as usize];
        }
        self.pending += 1;
        self.n += 1;
        if self.pending == 255 {
            self.flush();
        }
    }

    #[inline]
    fn flush(&mut self) {
        for (j, lane) in self.lanes.iter_mut().enumerate() {
            let l = *lane;
            for i in 0..8 {
                self.ones[8 * j + i] += (l >> (8 * i)) & 0xFF;
            }
            *lane = 0;
        }
        self.pending = 0;
    }

    /// Number of occurrences added.
    pub fn count(&self) -> u64 {
        self.n
    }

    /// The fingerprint.
    pub fn finish(&mut self) -> u64 {
        self.flush();
        let mut v = [0i64; 64];
        for (b, x) in v.iter_mut().enumerate() {
            *x = 2 * self.ones[b] as i64 - self.n as i64;
        }
        sign_bits(&v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn unit_equals_reference(hashes in proptest::collection::vec(any::<u64>(), 0..700), dup in 0usize..4) {
            let mut u = UnitAccumulator::new();
            let mut counts = std::collections::HashMap::new();
            for h in &hashes {
                for _ in 0..=dup {
                    u.add(*h);
                    *counts.entry(*h).or_insert(0u64) += 1;
                }
            }
            let reference = simhash64(counts.into_iter());
            prop_assert_eq!(u.finish(), reference);
        }

        #[test]
        fn order_does_not_matter(mut f in proptest::collection::vec((any::<u64>(), 1u64..1_000_000), 0..60), seed in any::<u64>()) {
            let a = simhash64(f.iter().copied());
            // A deterministic shuffle.
            let mut s = seed | 1;
            for i in (1..f.len()).rev() {
                s ^= s << 13; s ^= s >> 7; s ^= s << 17;
                f.swap(i, (s % (i as u64 + 1)) as usize);
            }
            prop_assert_eq!(a, simhash64(f.iter().copied()));
        }

        #[test]
        fn distance_is_popcount_and_symmetric(a in any::<u64>(), b in any::<u64>()) {
            prop_assert_eq!(hamming(a, b), (a ^ b).count_ones());
            prop_assert_eq!(hamming(a, b), hamming(b, a));
            prop_assert_eq!(hamming(a, a), 0);
            prop_assert!(hamming(a, b) <= 64);
        }
    }

    #[test]
    fn ties_at_zero_give_zero_bits() {
        // Two features with opposite bits and equal weight cancel everywhere.
        assert_eq!(
            simhash64([(0xFFFF_0000_FFFF_0000, 3), (0x0000_FFFF_0000_FFFF, 3)]),
            0
        );
        assert_eq!(simhash64(std::iter::empty()), 0);
        assert_eq!(simhash64([(u64::MAX, 1)]), u64::MAX);
    }
}
