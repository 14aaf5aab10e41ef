//! Block tables: which bits of a fingerprint name the Redis key of each table.
//!
//! The 64 bits are cut into `m` contiguous blocks (`m >= k + 1`). Two fingerprints within
//! Hamming distance `k` differ in at most `k` blocks, so they agree exactly on at least `m - k`
//! of them (pigeonhole). There is one table per choice of `m - k` blocks out of `m`; the
//! table's key value is those blocks' bits concatenated. Near-duplicates therefore always
//! share the key of at least one table — the invariant every lookup relies on.
//!
//! `m = k + 1` (the default) gives `k + 1` tables of `64 / (k + 1)` bits each (seed 003: four
//! 16-bit tables for `k = 3`); larger `m` gives more tables with longer keys (fewer candidates
//! per lookup, more memory per fingerprint).
//!
//! The split itself is [`neardup_index::Layout`]'s (blocks as even as possible, the longer ones
//! first; tables in lexicographic order of their key blocks); this type adds the Redis limits
//! and the name recorded with the index. Invariant: `key_value` is byte-identical to the
//! pre-sharing implementation, so existing Redis keys stay valid.

use crate::Error;

/// Most tables a layout may have (each table is one key per stored fingerprint).
pub const MAX_TABLES: usize = 64;

/// The table layout for distance `k` with `m` blocks: the block split and table order of
/// [`neardup_index::Layout::new`]`(m, k)`, with this crate's limits (`k <= 32`, at most
/// [`MAX_TABLES`] tables) and its `m<M>k<K>` name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    k: u32,
    /// `m` blocks, `m - k` key blocks per table.
    index: neardup_index::Layout,
}

impl Layout {
    /// The layout with `blocks` blocks for distance `k` (`blocks = 0` means `k + 1`).
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] when `k > 32`, `blocks` is not in `k + 1 ..= 64`, or the
    /// layout would need more than [`MAX_TABLES`] tables.
    pub fn new(k: u32, blocks: u32) -> Result<Layout, Error> {
        if k > 32 {
            return Err(Error::InvalidConfig(format!(
                "distance {k} is too large; at most 32 is supported"
            )));
        }
        let m = if blocks == 0 { k + 1 } else { blocks };
        if m < k + 1 || m > 64 {
            return Err(Error::InvalidConfig(format!(
                "blocks must be between distance+1 ({}) and 64, got {m}",
                k + 1
            )));
        }
        let tables = binomial(m, m - k);
        if tables > MAX_TABLES as u128 {
            return Err(Error::InvalidConfig(format!(
                "{m} blocks at distance {k} need {tables} tables; at most {MAX_TABLES} are allowed (use fewer blocks)"
            )));
        }
        let index =
            neardup_index::Layout::new(m, k).map_err(|e| Error::InvalidConfig(e.to_string()))?;
        Ok(Layout { k, index })
    }

    /// The distance this layout guarantees to find.
    pub fn distance(&self) -> u32 {
        self.k
    }

    /// Number of tables (Redis keys written per stored fingerprint, besides the id key).
    pub fn tables(&self) -> usize {
        self.index.tables()
    }

    /// Number of blocks.
    pub fn blocks(&self) -> usize {
        self.index.blocks()
    }

    /// Key bits of table `t`.
    pub fn key_bits(&self, t: usize) -> u32 {
        self.index.key_bits(t)
    }

    /// The key value of `fp` in table `t` (the table's blocks concatenated, right-aligned).
    pub fn key_value(&self, t: usize, fp: u64) -> u64 {
        self.index.key_value(t, fp)
    }

    /// A short name such as `m4k3` (recorded in the index metadata).
    pub fn name(&self) -> String {
        format!("m{}k{}", self.index.blocks(), self.k)
    }
}

/// `C(n, r)`, exact for `n <= 64` (at most `C(64, 32)` < 2^63).
fn binomial(n: u32, r: u32) -> u128 {
    let r = r.min(n - r);
    (0..r).fold(1u128, |acc, i| acc * u128::from(n - i) / u128::from(i + 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn default_layout_is_seed_003() {
        let l = Layout::new(3, 0).unwrap();
        assert_eq!(l.tables(), 4);
        assert!((0..4).all(|t| l.key_bits(t) == 16));
        assert_eq!(l.key_value(0, 0xabcd_0000_0000_0000), 0xabcd);
        assert_eq!(l.key_value(3, 0x1234), 0x1234);
        let l = Layout::new(3, 5).unwrap();
        assert_eq!(l.tables(), 10);
        assert!(Layout::new(3, 3).is_err());
        assert!(Layout::new(40, 0).is_err());
        assert!(Layout::new(8, 20).is_err());
        let l = Layout::new(0, 0).unwrap();
        assert_eq!(l.key_value(0, u64::MAX - 5), u64::MAX - 5);
    }

    /// The block split as this crate derived it before it used `neardup_index::Layout`:
    /// the oracle that keeps Redis keys byte-identical.
    fn reference_key_value(k: u32, m: u32, t: usize, fp: u64) -> u64 {
        fn combos(
            n: usize,
            r: usize,
            start: usize,
            cur: &mut Vec<usize>,
            out: &mut Vec<Vec<usize>>,
        ) {
            if cur.len() == r {
                out.push(cur.clone());
                return;
            }
            for i in start..n {
                if n - i < r - cur.len() {
                    break;
                }
                cur.push(i);
                combos(n, r, i + 1, cur, out);
                cur.pop();
            }
        }
        let mut tables = Vec::new();
        combos(
            m as usize,
            (m - k) as usize,
            0,
            &mut Vec::new(),
            &mut tables,
        );
        let mut blocks = Vec::new();
        let mut hi = 64u32;
        for i in 0..m {
            let width = 64 / m + u32::from(i < 64 % m);
            hi -= width;
            blocks.push((hi, width));
        }
        let mut v = 0u64;
        for &b in &tables[t] {
            let (shift, width) = blocks[b];
            let mask = if width == 64 {
                u64::MAX
            } else {
                (1u64 << width) - 1
            };
            v = if width == 64 { 0 } else { v << width } | ((fp >> shift) & mask);
        }
        v
    }

    #[test]
    fn keys_match_the_reference_split() {
        let fps = [
            0u64,
            u64::MAX,
            0x0123_4567_89ab_cdef,
            0xdead_beef_0000_0007,
            1 << 63,
            1,
        ];
        for k in 0..=8u32 {
            for m in k + 1..=(k + 4).min(64) {
                let Ok(l) = Layout::new(k, m) else { continue };
                for t in 0..l.tables() {
                    for &fp in &fps {
                        assert_eq!(
                            l.key_value(t, fp),
                            reference_key_value(k, m, t, fp),
                            "k={k} m={m} t={t}"
                        );
                    }
                }
            }
        }
        for (k, m) in [(0, 1), (0, 64), (31, 32), (32, 33)] {
            let l = Layout::new(k, m).unwrap();
            for t in 0..l.tables() {
                for &fp in &fps {
                    assert_eq!(
                        l.key_value(t, fp),
                        reference_key_value(k, m, t, fp),
                        "k={k} m={m} t={t}"
                    );
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// Pigeonhole: within distance k, some table key agrees.
        #[test]
        fn near_fingerprints_share_a_key(fp: u64, flips in proptest::collection::vec(0u32..64, 0..=4), extra in 0u32..3) {
            let k = 4u32;
            let l = Layout::new(k, k + 1 + extra).unwrap();
            let mut other = fp;
            for f in flips { other ^= 1 << f; }
            prop_assert!((other ^ fp).count_ones() <= k);
            prop_assert!((0..l.tables()).any(|t| l.key_value(t, fp) == l.key_value(t, other)));
        }
    }
}
