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
//! extractors use [`UnitAccumulator`] (weight 1 per occurrence, carry-save adders, the fast path
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
///
/// It keeps, per position, the weight of the features whose bit is set there, and the total
/// weight: a position's signed sum is `set - (total - set)`. Adding a feature is then a masked
/// add per position, the masks of each hash byte read from a table, which vectorises.
#[derive(Debug, Clone)]
pub struct WeightedAccumulator {
    set: [i64; 64],
    total: i64,
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
        WeightedAccumulator {
            set: [0; 64],
            total: 0,
            n: 0,
        }
    }

    /// Adds one feature.
    #[inline]
    pub fn add(&mut self, hash: u64, weight: u64) {
        let w = weight.min(i64::MAX as u64 / 1024) as i64;
        for (k, set) in self.set.chunks_exact_mut(8).enumerate() {
            let masks = &BIT_MASKS[(hash >> (8 * k)) as u8 as usize];
            for (s, &m) in set.iter_mut().zip(masks) {
                *s += w & m;
            }
        }
        self.total += w;
        self.n += 1;
    }

    /// Number of features added.
    pub fn count(&self) -> u64 {
        self.n
    }

    /// The fingerprint.
    pub fn finish(&self) -> u64 {
        let mut out = 0u64;
        for (b, &s) in self.set.iter().enumerate() {
            // The signed sum `s - (total - s)` is positive.
            if s > self.total - s {
                out |= 1 << b;
            }
        }
        out
    }
}

/// `BIT_MASKS[b][i]` is all ones when bit `i` of `b` is set, else zero.
static BIT_MASKS: [[i64; 8]; 256] = {
    let mut t = [[0i64; 8]; 256];
    let mut b = 0;
    while b < 256 {
        let mut i = 0;
        while i < 8 {
            t[b][i] = -(((b >> i) & 1) as i64);
            i += 1;
        }
        b += 1;
    }
    t
};

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

/// Counts set bits per position for features of weight 1 (one call per occurrence).
/// Equivalent to [`WeightedAccumulator`] with weight = number of occurrences.
///
/// Hashes are counted sixteen at a time by a carry-save adder tree (Harley & Seal): the
/// counts modulo 16 of all 64 positions live bit-sliced in four words, and only the carries
/// out of them (one in sixteen) are counted per position, eight positions per `u64` in byte
/// lanes flushed every 255 groups. That is a few bitwise operations a hash instead of a
/// counter update per byte.
#[derive(Debug, Clone)]
pub struct UnitAccumulator {
    /// Hashes not yet counted: fewer than 16.
    buf: [u64; 16],
    buffered: usize,
    /// Bit `b` of `ones`, `twos`, `fours`, `eights`: bit 0–3 of position `b`'s count mod 16.
    ones: u64,
    twos: u64,
    fours: u64,
    eights: u64,
    /// Carries out of `eights` (sixteens) per position, in byte lanes.
    lanes: [u64; 8],
    pending: u32,
    /// Flushed sixteens per position.
    sixteens: [u64; 64],
    n: u64,
}

impl Default for UnitAccumulator {
    fn default() -> Self {
        Self::new()
    }
}

/// Carry-save adder: `(carry, sum)` of three bit vectors, bit by bit.
#[inline(always)]
fn csa(a: u64, b: u64, c: u64) -> (u64, u64) {
    let u = a ^ b;
    ((a & b) | (u & c), u ^ c)
}

impl UnitAccumulator {
    /// An empty accumulator.
    pub fn new() -> Self {
        UnitAccumulator {
            buf: [0; 16],
            buffered: 0,
            ones: 0,
            twos: 0,
            fours: 0,
            eights: 0,
            lanes: [0; 8],
            pending: 0,
            sixteens: [0; 64],
            n: 0,
        }
    }

    /// Adds one occurrence of a feature.
    #[inline]
    pub fn add(&mut self, hash: u64) {
        self.buf[self.buffered] = hash;
        self.buffered += 1;
        self.n += 1;
        if self.buffered == 16 {
            self.buffered = 0;
            self.count_group();
        }
    }

    /// Counts the sixteen buffered hashes into the bit-sliced counters.
    fn count_group(&mut self) {
        let d = &self.buf;
        let (twos_a, ones) = csa(self.ones, d[0], d[1]);
        let (twos_b, ones) = csa(ones, d[2], d[3]);
        let (fours_a, twos) = csa(self.twos, twos_a, twos_b);
        let (twos_a, ones) = csa(ones, d[4], d[5]);
        let (twos_b, ones) = csa(ones, d[6], d[7]);
        let (fours_b, twos) = csa(twos, twos_a, twos_b);
        let (eights_a, fours) = csa(self.fours, fours_a, fours_b);
        let (twos_a, ones) = csa(ones, d[8], d[9]);
        let (twos_b, ones) = csa(ones, d[10], d[11]);
        let (fours_a, twos) = csa(twos, twos_a, twos_b);
        let (twos_a, ones) = csa(ones, d[12], d[13]);
        let (twos_b, ones) = csa(ones, d[14], d[15]);
        let (fours_b, twos) = csa(twos, twos_a, twos_b);
        let (eights_b, fours) = csa(fours, fours_a, fours_b);
        let (sixteens, eights) = csa(self.eights, eights_a, eights_b);
        (self.ones, self.twos, self.fours, self.eights) = (ones, twos, fours, eights);
        for (j, lane) in self.lanes.iter_mut().enumerate() {
            *lane += SPREAD[((sixteens >> (8 * j)) & 0xFF) as usize];
        }
        self.pending += 1;
        if self.pending == 255 {
            self.flush();
        }
    }

    fn flush(&mut self) {
        for (j, lane) in self.lanes.iter_mut().enumerate() {
            let l = *lane;
            for i in 0..8 {
                self.sixteens[8 * j + i] += (l >> (8 * i)) & 0xFF;
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
            let bit = |w: u64| (w >> b) & 1;
            let buffered: u64 = self.buf[..self.buffered].iter().map(|&h| bit(h)).sum();
            let ones = 16 * self.sixteens[b]
                + 8 * bit(self.eights)
                + 4 * bit(self.fours)
                + 2 * bit(self.twos)
                + bit(self.ones)
                + buffered;
            *x = 2 * ones as i64 - self.n as i64;
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
        fn unit_equals_reference(hashes in proptest::collection::vec(any::<u64>(), 0..1500), dup in 0usize..4) {
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

        /// The weighted accumulator is Charikar's signed sum per bit, weights capped as
        /// documented, written out here the slow way.
        #[test]
        fn weighted_equals_signed_sums(f in proptest::collection::vec((any::<u64>(), prop_oneof![1u64..1_000, 1u64..1_000_000_000_000_000, Just(u64::MAX)]), 0..200)) {
            let mut v = [0i128; 64];
            for &(h, w) in &f {
                let w = w.min(i64::MAX as u64 / 1024) as i128;
                for (b, x) in v.iter_mut().enumerate() {
                    *x += if h >> b & 1 == 1 { w } else { -w };
                }
            }
            let reference = v.iter().enumerate().fold(0u64, |out, (b, &x)| out | (((x > 0) as u64) << b));
            prop_assert_eq!(simhash64(f.iter().copied()), reference);
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
