//! Set containment — how much of one text lies inside another — estimated from a bottom-k
//! sample of one side and the full shingle set of the other.
//!
//! A text's shingles are the high 32 bits of the XXH3 hashes of its character `n`-grams
//! (letters and digits of the normalised text, [`crate::features::chars_each`]): half the
//! memory of full hashes, and at the sizes compared here (a few thousand shingles) a chance
//! collision moves an estimate by well under one sample in a million. A [`BottomK`] keeps the `k` smallest
//! distinct hashes: a uniform sample of the set, and within hash values up to its largest kept
//! one, the set's complete content. So, with `X` a full set and `A` a bottom-k sample:
//!
//! - [`contained_sample_in_set`]: `|A ∩ X| / |A|` over the sample, estimating `|A ∩ X| / |A|`
//!   — how much of `A`'s text is in `X`'s;
//! - [`contained_set_in_sample`]: over the elements of `X` whose hash lies in `A`'s complete
//!   range, the share found in `A`, estimating `|X ∩ A| / |X|`; `None` when no element of `X`
//!   falls in that range (too little to judge).
//!
//! Both are exact when the sample holds the whole set (`|A| ≤ k`).
//!
//! ```
//! use neardup::detect::containment::{contained_sample_in_set, contained_set_in_sample, shingle_set, BottomK};
//! let long = shingle_set("the quick brown fox jumps over the lazy dog near the river bank", 5);
//! let part = shingle_set("jumps over the lazy dog", 5);
//! let other = shingle_set("an entirely different sentence about something else", 5);
//! let sample = BottomK::new(&long, 64);
//! assert_eq!(contained_set_in_sample(&part, &sample), Some(1.0));
//! assert_eq!(contained_sample_in_set(&BottomK::new(&part, 64), &long), 1.0);
//! assert_eq!(contained_set_in_sample(&other, &sample), Some(0.0));
//! ```

use crate::features::PackedChars;
use crate::hash::xxh3;
use crate::sort::sort_u32;

/// The sorted, distinct shingle hashes (character `n`-grams of letters and digits) of
/// normalised `text`.
pub fn shingle_set(text: &str, n: usize) -> Vec<u32> {
    let mut v = Vec::new();
    crate::features::chars_each(text, n, |g: &[u8]| v.push((xxh3(g) >> 32) as u32));
    sort_u32(&mut v);
    v.dedup();
    v
}

/// [`shingle_set`] of a text already packed ([`PackedChars`] of the normalised text).
pub fn shingle_set_packed(packed: &PackedChars, n: usize) -> Vec<u32> {
    let mut v = Vec::with_capacity(packed.len());
    packed.ngrams_each(n, |g: &[u8]| v.push((xxh3(g) >> 32) as u32));
    sort_u32(&mut v);
    v.dedup();
    v
}

/// The `k` smallest distinct hashes of a set, ascending.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BottomK {
    /// The kept hashes, ascending.
    pub hashes: Box<[u32]>,
    /// Whether the sample holds the whole set (it had at most `k` elements).
    pub complete: bool,
}

impl BottomK {
    /// The sample of sorted, distinct `set`.
    pub fn new(set: &[u32], k: usize) -> BottomK {
        debug_assert!(set.windows(2).all(|w| w[0] < w[1]));
        BottomK {
            hashes: set[..set.len().min(k)].into(),
            complete: set.len() <= k,
        }
    }

    /// Largest hash value up to which the sample is the set's complete content.
    fn reach(&self) -> u32 {
        if self.complete {
            u32::MAX
        } else {
            self.hashes.last().copied().unwrap_or(0)
        }
    }

    /// Bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.hashes.len() * 4
    }
}

/// Estimated share of the sampled set found in sorted `set` (0 for an empty sample).
pub fn contained_sample_in_set(sample: &BottomK, set: &[u32]) -> f64 {
    if sample.hashes.is_empty() {
        return 0.0;
    }
    let found = sample
        .hashes
        .iter()
        .filter(|h| set.binary_search(h).is_ok())
        .count();
    found as f64 / sample.hashes.len() as f64
}

/// Estimated share of sorted `set` found in the sampled set; `None` when no element of `set`
/// lies within the sample's complete range.
pub fn contained_set_in_sample(set: &[u32], sample: &BottomK) -> Option<f64> {
    let reach = sample.reach();
    let mut seen = 0usize;
    let mut found = 0usize;
    for h in set.iter().take_while(|&&h| h <= reach) {
        seen += 1;
        found += usize::from(sample.hashes.binary_search(h).is_ok());
    }
    (seen > 0).then(|| found as f64 / seen as f64)
}

/// A [`BottomK`] as an index keeps it: the gaps between its hashes (the first from 0),
/// bit-packed at the width of the largest. A bottom-256 sample of a set of `n` uniform 32-bit
/// hashes has gaps of about 2³²/`n`, so a sample of a few thousand shingles takes ~23 bits a
/// hash instead of 32. Lossless: [`PackedBottomK::unpack`] gives back the sample.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PackedBottomK {
    complete: bool,
    len: u32,
    width: u8,
    bits: Box<[u8]>,
}

impl PackedBottomK {
    /// Packs `sample`.
    pub fn pack(sample: &BottomK) -> PackedBottomK {
        let h = &sample.hashes;
        let gap = |i: usize| h[i] - if i == 0 { 0 } else { h[i - 1] };
        let widest = (0..h.len()).map(gap).max().unwrap_or(0);
        let width = (32 - widest.leading_zeros()) as usize;
        let mut bits = vec![0u8; (h.len() * width).div_ceil(8)];
        let (mut acc, mut held, mut at) = (0u64, 0usize, 0usize);
        for i in 0..h.len() {
            acc |= (gap(i) as u64) << held;
            held += width;
            if held >= 32 {
                bits[at..at + 4].copy_from_slice(&(acc as u32).to_le_bytes());
                at += 4;
                acc >>= 32;
                held -= 32;
            }
        }
        while held > 0 {
            bits[at] = acc as u8;
            at += 1;
            acc >>= 8;
            held = held.saturating_sub(8);
        }
        PackedBottomK {
            complete: sample.complete,
            len: h.len() as u32,
            width: width as u8,
            bits: bits.into(),
        }
    }

    /// The packed form as an encoding writes it: whether the sample is complete, its number of
    /// hashes, the width of a gap in bits and the packed gaps (`⌈len · width / 8⌉` bytes).
    pub fn parts(&self) -> (bool, u32, u8, &[u8]) {
        (self.complete, self.len, self.width, &self.bits)
    }

    /// A packed sample from [`PackedBottomK::parts`], checked: a width of at most 32 bits,
    /// as many bytes as the gaps take, and hashes that ascend strictly within 32 bits. `Err`
    /// says what is wrong.
    pub fn from_parts(
        complete: bool,
        len: u32,
        width: u8,
        bits: Box<[u8]>,
    ) -> Result<PackedBottomK, String> {
        if width > 32 {
            return Err(format!(
                "a guard sample's gaps of {width} bits (at most 32)"
            ));
        }
        let want = (u64::from(len) * u64::from(width)).div_ceil(8);
        if bits.len() as u64 != want {
            return Err(format!(
                "a guard sample of {len} gaps of {width} bits in {} bytes ({want} expected)",
                bits.len()
            ));
        }
        let p = PackedBottomK {
            complete,
            len,
            width,
            bits,
        };
        let (mut sum, mut i, mut ok) = (0u64, 0usize, true);
        p.for_each_gap(|g| {
            ok &= i == 0 || g > 0;
            sum += u64::from(g);
            ok &= sum <= u64::from(u32::MAX);
            i += 1;
        });
        if !ok {
            return Err("distinct part: a guard sample is not ascending".into());
        }
        Ok(p)
    }

    /// The sample.
    pub fn unpack(&self) -> BottomK {
        let mut hashes = Vec::with_capacity(self.len as usize);
        self.for_each_hash(|h| hashes.push(h));
        BottomK {
            hashes: hashes.into(),
            complete: self.complete,
        }
    }

    /// Calls `f` with each hash of the sample, ascending: each gap read from the eight bytes
    /// where it starts (a width of at most 32 bits and a shift of at most 7 fit in them).
    fn for_each_hash(&self, mut f: impl FnMut(u32)) {
        let mut last = 0u32;
        self.for_each_gap(|g| {
            last = last.wrapping_add(g);
            f(last);
        });
    }

    /// Calls `f` with each gap of the sample (the first from 0), in order.
    #[inline(always)]
    fn for_each_gap(&self, mut f: impl FnMut(u32)) {
        let width = self.width as usize;
        let mask = (1u64 << width) - 1;
        let bits = &self.bits;
        for i in 0..self.len as usize {
            let at = i * width;
            let byte = at / 8;
            let word = match bits.get(byte..byte + 8) {
                Some(b) => u64::from_le_bytes(b.try_into().expect("eight bytes")),
                None => {
                    let mut b = [0u8; 8];
                    let tail = &bits[byte.min(bits.len())..];
                    b[..tail.len()].copy_from_slice(tail);
                    u64::from_le_bytes(b)
                }
            };
            f(((word >> (at % 8)) & mask) as u32);
        }
    }

    /// [`contained_set_in_sample`] of sorted `set` in the sample, read as it is packed (no
    /// copy): the two walked together in ascending order.
    pub fn contains_set(&self, set: &[u32]) -> Option<f64> {
        if self.len == 0 {
            return contained_set_in_sample(set, &self.unpack());
        }
        let (found, seen) = self.set_within_reach(set);
        (seen > 0).then(|| found as f64 / seen as f64)
    }

    /// Of sorted `set`'s elements within the sample's reach (all, for a complete sample), how
    /// many the sample holds and how many there are: the counts behind
    /// [`contains_set`](Self::contains_set).
    pub fn set_within_reach(&self, set: &[u32]) -> (usize, usize) {
        if self.len == 0 {
            return (0, if self.complete { set.len() } else { 0 });
        }
        let (mut at, mut seen, mut found) = (0usize, 0usize, 0usize);
        self.for_each_hash(|h| {
            while at < set.len() && set[at] < h {
                at += 1;
                seen += 1;
            }
            if set.get(at) == Some(&h) {
                at += 1;
                seen += 1;
                found += 1;
            }
        });
        if self.complete {
            // Every hash is within a complete sample's reach.
            seen += set.len() - at;
        }
        (found, seen)
    }

    /// [`contained_sample_in_set`] of the sample, read as it is packed (no copy).
    pub fn contained_in_set(&self, set: &[u32]) -> f64 {
        if self.len == 0 {
            return 0.0;
        }
        let mut found = 0usize;
        self.for_each_hash(|h| found += usize::from(set.binary_search(&h).is_ok()));
        found as f64 / self.len as f64
    }

    /// Estimated number of the sampled set's elements that sorted `set` does not hold: those of
    /// the sample it lacks, scaled by the share of the hash space the sample covers (exact for
    /// a complete sample).
    pub fn outside_set(&self, set: &[u32]) -> f64 {
        let (mut outside, mut last) = (0usize, 0u32);
        self.for_each_hash(|h| {
            outside += usize::from(set.binary_search(&h).is_err());
            last = h;
        });
        if self.complete || outside == 0 {
            return outside as f64;
        }
        // The sample is every element of the set up to its largest hash.
        outside as f64 * (f64::from(u32::MAX) + 1.0) / (f64::from(last) + 1.0)
    }

    /// Bytes held on the heap.
    pub fn heap_bytes(&self) -> usize {
        self.bits.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn exact(a: &[u32], b: &[u32]) -> f64 {
        a.iter().filter(|h| b.binary_search(h).is_ok()).count() as f64 / a.len() as f64
    }

    proptest! {
        /// Packing is lossless, whatever the gaps (0 and `u32::MAX` included), and never larger.
        #[test]
        fn packed_samples_unpack_to_themselves(
            set in proptest::collection::btree_set(any::<u32>(), 0..300),
            extremes in any::<bool>(),
            narrow in 0u32..33,
        ) {
            let mut set: Vec<u32> =
                set.into_iter().map(|h| h.checked_shr(narrow).unwrap_or(0)).collect();
            if extremes {
                set.extend([0, u32::MAX]);
            }
            set.sort_unstable();
            set.dedup();
            for k in [1usize, 7, 256] {
                let sample = BottomK::new(&set, k);
                let packed = PackedBottomK::pack(&sample);
                prop_assert_eq!(packed.unpack(), sample.clone());
                prop_assert!(packed.heap_bytes() <= sample.hashes.len() * 4);
                let other: Vec<u32> = set.iter().step_by(3).copied().collect();
                prop_assert_eq!(
                    packed.contained_in_set(&other).to_bits(),
                    contained_sample_in_set(&sample, &other).to_bits()
                );
                for part in [&other[..], &set[..], &set[set.len() / 2..]] {
                    prop_assert_eq!(
                        packed.contains_set(part).map(f64::to_bits),
                        contained_set_in_sample(part, &sample).map(f64::to_bits)
                    );
                }
            }
        }

        /// The radix sort orders exactly as the standard sort, duplicates and all.
        /// With a sample as large as the set, both estimates are the exact containment.
        #[test]
        fn complete_samples_are_exact(a in proptest::collection::btree_set(0u32..500, 1..60),
                                      b in proptest::collection::btree_set(0u32..500, 1..60)) {
            let a: Vec<u32> = a.into_iter().collect();
            let b: Vec<u32> = b.into_iter().collect();
            let sa = BottomK::new(&a, 64);
            prop_assert!(sa.complete);
            prop_assert_eq!(contained_sample_in_set(&sa, &b), exact(&a, &b));
            prop_assert_eq!(contained_set_in_sample(&b, &sa), Some(exact(&b, &a)));
        }

        /// A subset is wholly contained, whatever the sample size.
        #[test]
        fn subsets_are_contained(a in proptest::collection::btree_set(any::<u32>(), 1..400),
                                 keep in 1usize..8, k in 1usize..64) {
            let a: Vec<u32> = a.into_iter().collect();
            let sub: Vec<u32> = a.iter().copied().step_by(keep).collect();
            let sample = BottomK::new(&a, k);
            prop_assert!(contained_set_in_sample(&sub, &sample).is_none_or(|c| c == 1.0));
            prop_assert_eq!(contained_sample_in_set(&BottomK::new(&sub, k), &a), 1.0);
        }
    }
}
