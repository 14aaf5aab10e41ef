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

use crate::Error;

/// Most tables a layout may have (each table is one key per stored fingerprint).
pub const MAX_TABLES: usize = 64;

/// The table layout for distance `k` with `m` blocks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    k: u32,
    /// (shift, width) of each block, most significant first.
    blocks: Vec<(u32, u32)>,
    /// Block indices of each table.
    tables: Vec<Vec<usize>>,
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
        let keep = (m - k) as usize;
        let tables = combinations(m as usize, keep);
        if tables.len() > MAX_TABLES {
            return Err(Error::InvalidConfig(format!(
                "{m} blocks at distance {k} need {} tables; at most {MAX_TABLES} are allowed (use fewer blocks)",
                tables.len()
            )));
        }
        let mut blocks = Vec::with_capacity(m as usize);
        let mut hi = 64u32;
        for i in 0..m {
            let width = 64 / m + u32::from(i < 64 % m);
            hi -= width;
            blocks.push((hi, width));
        }
        Ok(Layout { k, blocks, tables })
    }

    /// The distance this layout guarantees to find.
    pub fn distance(&self) -> u32 {
        self.k
    }

    /// Number of tables (Redis keys written per stored fingerprint, besides the id key).
    pub fn tables(&self) -> usize {
        self.tables.len()
    }

    /// Number of blocks.
    pub fn blocks(&self) -> usize {
        self.blocks.len()
    }

    /// Key bits of table `t`.
    pub fn key_bits(&self, t: usize) -> u32 {
        self.tables[t].iter().map(|&b| self.blocks[b].1).sum()
    }

    /// The key value of `fp` in table `t` (the table's blocks concatenated, right-aligned).
    pub fn key_value(&self, t: usize, fp: u64) -> u64 {
        let mut v = 0u64;
        for &b in &self.tables[t] {
            let (shift, width) = self.blocks[b];
            let mask = if width == 64 {
                u64::MAX
            } else {
                (1u64 << width) - 1
            };
            v = if width == 64 { 0 } else { v << width } | ((fp >> shift) & mask);
        }
        v
    }

    /// A short name such as `m4k3` (recorded in the index metadata).
    pub fn name(&self) -> String {
        format!("m{}k{}", self.blocks.len(), self.k)
    }
}

fn combinations(n: usize, r: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    let mut cur = Vec::with_capacity(r);
    fn rec(start: usize, n: usize, r: usize, cur: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        if cur.len() == r {
            out.push(cur.clone());
            return;
        }
        if out.len() > MAX_TABLES {
            return;
        }
        for i in start..n {
            if n - i < r - cur.len() {
                break;
            }
            cur.push(i);
            rec(i + 1, n, r, cur, out);
            cur.pop();
        }
    }
    rec(0, n, r, &mut cur, &mut out);
    out
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
