//! Block layouts (the pigeonhole principle) and the planner that chooses one.
//!
//! The 64 bits of a fingerprint are split into `m` contiguous blocks. Two fingerprints within
//! Hamming distance `k` differ in at most `k` blocks, so they agree exactly on at least `m - k`
//! whole blocks. A layout with `c` *key blocks* per table keeps one table for every choice of `c`
//! blocks out of `m` (`C(m, c)` tables); in each table a fingerprint is permuted so that its key
//! blocks come first (most significant bits). Any pair within distance `m - c` agrees on the key of
//! at least one table, so looking up the query's key in every table and checking the true distance
//! of what is found is exact for every `k <= m - c` ([`Layout::max_distance`]).
//!
//! Block `i` covers the bits from the top: block 0 holds the most significant bits. With
//! [`Layout::new`] blocks are as even as possible (the first `64 % m` blocks are one bit longer).
//!
//! Names: `m4` is 4 blocks with one key block (4 tables of 16-bit keys, distance <= 3);
//! `m5x2` is 5 blocks with 2 key blocks (10 tables of 25/26-bit keys, distance <= 3). In general
//! `mMxC` has `M` blocks and `C` key blocks and answers distances up to `M - C`.
//!
//! # Planner cost model
//!
//! [`Layout::plan`] (indexes) and [`Layout::plan_self_join`] (all pairs) enumerate the layouts
//! `m = k+1 ..= k+12` with `c = m - k` key blocks and at most [`MAX_TABLES`] tables, estimate each
//! one's cost and memory, and keep the cheapest that fits the memory budget (if none fits, the one
//! with the least memory). For an index of `n` entries, table `t` has a key of `b_t` bits and a
//! directory over the top `d_t` bits ([`directory_bits`]); a query scans
//! `n / 2^min(b_t, d_t)` entries in `2^(d_t - min(b_t, d_t))` directory slots, so the estimated
//! time of one query is
//!
//! ```text
//! sum over tables of  PROBE_NS + slots * SLOT_NS + n / 2^min(b, d) * ENTRY_NS
//! ```
//!
//! (`PROBE_NS` = 100 covers permuting the query and a few overlapping cache misses, `SLOT_NS` = 2,
//! `ENTRY_NS` = 1.2 for streaming a 4-byte filter word and its xor + popcount; fitted on the
//! `scale` example and the benches at 1M, 10M and 50M: `m4` wins below about 5M entries, `m5x2`
//! above when its memory fits), and the memory is
//! `sum over tables of 10 * n + 4 * 2^d` bytes (a 48-bit residual and a 32-bit handle per entry,
//! and a `u32` offset per directory slot). This is Manku's trade-off: more tables (more blocks
//! in the key) mean smaller buckets and fewer comparisons per query, at the price of memory.
//! For all pairs each table is sorted once (`SORT_NS` = 45 per entry) and every pair within a
//! key group is compared (`n^2 / 2^(b+1)` comparisons, 1 ns each); memory is one table at a time.
use crate::error::{Error, Result};
use std::fmt;

/// Largest number of tables a layout may have.
pub const MAX_TABLES: usize = 1024;

/// Fewest directory bits of a table (the residual below them then fits in 48 bits).
pub const MIN_DIR_BITS: u32 = 16;
/// Most directory bits of a table.
pub const MAX_DIR_BITS: u32 = 28;

const PROBE_NS: f64 = 100.0;
const SLOT_NS: f64 = 2.0;
const ENTRY_NS: f64 = 1.2;
const SORT_NS: f64 = 45.0;
const PAIR_NS: f64 = 1.0;

/// A block layout: how the 64 bits are cut into blocks and how many blocks form a table's key.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Layout {
    /// `(start, len)` of each block, `start` counted from the least significant bit; block 0 is
    /// the most significant.
    blocks: Vec<(u8, u8)>,
    key_blocks: u8,
    tables: Vec<TableSpec>,
}

/// One table of a layout: which blocks form its key and how fingerprints are permuted.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub(crate) struct TableSpec {
    /// Bit `i` set when block `i` is in the key.
    pub key_set: u64,
    /// Number of key bits (the top bits of the permuted fingerprint).
    pub key_bits: u32,
    /// Index of the highest-numbered key block.
    pub max_block: u32,
    /// `(src_start, len, dst_start)` moves, key blocks first.
    moves: Vec<(u8, u8, u8)>,
    /// Mask of each block (in block order) at its position in the permuted fingerprint.
    pub perm_block_masks: Vec<u64>,
}

#[inline(always)]
fn mask(len: u32) -> u64 {
    if len >= 64 {
        !0
    } else {
        (1u64 << len) - 1
    }
}

impl TableSpec {
    /// Permutes `fp` so that the key blocks are the most significant bits.
    #[inline]
    pub fn permute(&self, fp: u64) -> u64 {
        let mut out = 0u64;
        for &(s, l, d) in &self.moves {
            out |= ((fp >> s) & mask(l as u32)) << d;
        }
        out
    }

    /// Inverse of [`TableSpec::permute`].
    #[inline]
    pub fn unpermute(&self, p: u64) -> u64 {
        let mut out = 0u64;
        for &(s, l, d) in &self.moves {
            out |= ((p >> d) & mask(l as u32)) << s;
        }
        out
    }
}

fn binomial(n: u64, k: u64) -> u64 {
    let k = k.min(n - k);
    let mut r: u64 = 1;
    for i in 0..k {
        r = r.saturating_mul(n - i) / (i + 1);
        if r > 1 << 40 {
            return r;
        }
    }
    r
}

/// Directory bits used for a table of `n` entries whose key has `key_bits` bits:
/// `clamp(min(key_bits, log2(n) - 2), 16, 28)` — about 4 to 8 entries per slot, never
/// more bits than the key (extra bits would only enlarge the directory), never fewer than 16 (so
/// that the residual stored per entry fits in 48 bits).
pub fn directory_bits(n: u64, key_bits: u32) -> u32 {
    let lg = 63 - n.max(1).leading_zeros();
    key_bits
        .min(lg.saturating_sub(2))
        .clamp(MIN_DIR_BITS, MAX_DIR_BITS)
}

impl Layout {
    /// The layout with `m` blocks (as even as possible) answering distances up to `k`: every
    /// table's key is `m - k` blocks, `C(m, k)` tables. `Layout::new(4, 3)` is the classic
    /// 4 tables with 16-bit keys.
    ///
    /// # Errors
    /// [`Error::InvalidLayout`] unless `0 <= k < m <= 64` and `C(m, k) <= MAX_TABLES`.
    pub fn new(m: u32, k: u32) -> Result<Layout> {
        if m == 0 || m > 64 || k >= m {
            return Err(Error::InvalidLayout {
                reason: format!("need 0 <= k < m <= 64 blocks, got m = {m}, k = {k}"),
            });
        }
        let base = 64 / m;
        let extra = 64 % m;
        let lens: Vec<u8> = (0..m)
            .map(|i| (base + u32::from(i < extra)) as u8)
            .collect();
        Layout::from_block_lengths(&lens, (m - k) as u8)
    }

    /// A layout from explicit block lengths (most significant block first; they must add up to
    /// 64) and the number of key blocks per table.
    ///
    /// # Errors
    /// [`Error::InvalidLayout`] if a length is 0, the lengths do not sum to 64, `key_blocks` is
    /// not in `1..=blocks`, or there would be more than [`MAX_TABLES`] tables.
    pub fn from_block_lengths(lens: &[u8], key_blocks: u8) -> Result<Layout> {
        let m = lens.len();
        let total: u32 = lens.iter().map(|&l| l as u32).sum();
        if m == 0 || m > 64 || total != 64 || lens.contains(&0) {
            return Err(Error::InvalidLayout {
                reason: format!(
                    "block lengths {lens:?} must be 1 to 64 non-zero lengths adding up to 64"
                ),
            });
        }
        if key_blocks == 0 || key_blocks as usize > m {
            return Err(Error::InvalidLayout {
                reason: format!("key blocks per table must be in 1..={m}, got {key_blocks}"),
            });
        }
        let nt = binomial(m as u64, key_blocks as u64);
        if nt > MAX_TABLES as u64 {
            return Err(Error::InvalidLayout {
                reason: format!("C({m}, {key_blocks}) = {nt} tables is more than the maximum {MAX_TABLES}; use fewer blocks"),
            });
        }
        let mut blocks = Vec::with_capacity(m);
        let mut top = 64u32;
        for &l in lens {
            top -= l as u32;
            blocks.push((top as u8, l));
        }
        let mut tables = Vec::with_capacity(nt as usize);
        // Enumerate key sets in lexicographic order of their sorted block indices.
        let c = key_blocks as usize;
        let mut comb: Vec<usize> = (0..c).collect();
        loop {
            tables.push(Self::spec(&blocks, &comb));
            // next combination
            let mut i = c;
            loop {
                if i == 0 {
                    return Ok(Layout {
                        blocks,
                        key_blocks,
                        tables,
                    });
                }
                i -= 1;
                if comb[i] < m - c + i {
                    comb[i] += 1;
                    for j in i + 1..c {
                        comb[j] = comb[j - 1] + 1;
                    }
                    break;
                }
            }
        }
    }

    fn spec(blocks: &[(u8, u8)], key: &[usize]) -> TableSpec {
        let mut order: Vec<usize> = key.to_vec();
        order.extend((0..blocks.len()).filter(|b| !key.contains(b)));
        let mut moves = Vec::with_capacity(blocks.len());
        let mut perm_block_masks = vec![0u64; blocks.len()];
        let mut top = 64u32;
        for &b in &order {
            let (s, l) = blocks[b];
            top -= l as u32;
            moves.push((s, l, top as u8));
            perm_block_masks[b] = mask(l as u32) << top;
        }
        TableSpec {
            key_set: key.iter().fold(0u64, |a, &b| a | 1 << b),
            key_bits: key.iter().map(|&b| blocks[b].1 as u32).sum(),
            max_block: *key.iter().max().unwrap_or(&0) as u32,
            moves,
            perm_block_masks,
        }
    }

    /// Number of blocks `m`.
    pub fn blocks(&self) -> usize {
        self.blocks.len()
    }

    /// `(start, len)` of each block, `start` counted from the least significant bit, block 0 first
    /// (the most significant).
    pub fn block_bounds(&self) -> &[(u8, u8)] {
        &self.blocks
    }

    /// Number of key blocks per table.
    pub fn key_blocks(&self) -> usize {
        self.key_blocks as usize
    }

    /// Number of tables, `C(m, key_blocks)`.
    pub fn tables(&self) -> usize {
        self.tables.len()
    }

    /// Key width in bits of table `t` (`t < self.tables()`).
    pub fn key_bits(&self, t: usize) -> u32 {
        self.tables[t].key_bits
    }

    /// The key of `fp` in table `t`: the bits of the table's key blocks, most significant
    /// block first, concatenated and right-aligned (`key_bits(t)` bits).
    pub fn key_value(&self, t: usize, fp: u64) -> u64 {
        let spec = &self.tables[t];
        spec.permute(fp) >> (64 - spec.key_bits)
    }

    /// Smallest key width in bits over the tables.
    pub fn min_key_bits(&self) -> u32 {
        self.tables.iter().map(|t| t.key_bits).min().unwrap_or(0)
    }

    /// Largest distance this layout answers exactly: `m - key_blocks`.
    pub fn max_distance(&self) -> u32 {
        (self.blocks.len() - self.key_blocks as usize) as u32
    }

    /// The short name, e.g. `m4` or `m5x2` (see the module docs).
    pub fn name(&self) -> String {
        if self.key_blocks == 1 {
            format!("m{}", self.blocks.len())
        } else {
            format!("m{}x{}", self.blocks.len(), self.key_blocks)
        }
    }

    /// Parses a name made by [`Layout::name`] for even blocks: `mM` or `mMxC`.
    ///
    /// # Errors
    /// [`Error::BadLayoutName`] if the text is not of that form, [`Error::InvalidLayout`] if the
    /// numbers do not make a layout.
    pub fn from_name(name: &str) -> Result<Layout> {
        let bad = || Error::BadLayoutName {
            name: name.to_string(),
        };
        let rest = name.trim().strip_prefix(['m', 'M']).ok_or_else(bad)?;
        let (m, c) = match rest.split_once(['x', 'X']) {
            Some((m, c)) => (
                m.parse::<u32>().map_err(|_| bad())?,
                c.parse::<u32>().map_err(|_| bad())?,
            ),
            None => (rest.parse::<u32>().map_err(|_| bad())?, 1),
        };
        if c == 0 || c > m {
            return Err(Error::InvalidLayout {
                reason: format!("{name}: key blocks {c} must be in 1..={m}"),
            });
        }
        Layout::new(m, m - c)
    }

    pub(crate) fn specs(&self) -> &[TableSpec] {
        &self.tables
    }

    /// The table a match is reported from: the one whose key is the lowest-numbered
    /// `key_blocks` blocks on which `diff` (query xor entry, in the table's permuted space
    /// described by `masks`) is zero. Returns that key set as a bit set of block indices.
    #[inline]
    pub(crate) fn canonical_key_set(&self, masks: &[u64], diff: u64) -> u64 {
        let mut sel = 0u64;
        let mut need = self.key_blocks;
        for (b, &mk) in masks.iter().enumerate() {
            if diff & mk == 0 {
                sel |= 1 << b;
                need -= 1;
                if need == 0 {
                    break;
                }
            }
        }
        sel
    }

    /// Block masks in the original (unpermuted) bit positions.
    pub(crate) fn original_block_masks(&self) -> Vec<u64> {
        self.blocks
            .iter()
            .map(|&(s, l)| mask(l as u32) << s)
            .collect()
    }

    /// Checks that this layout answers distance `k`.
    ///
    /// # Errors
    /// [`Error::DistanceTooLarge`] if `k > self.max_distance()`.
    pub fn check_distance(&self, k: u32) -> Result<()> {
        if k > self.max_distance() {
            return Err(Error::DistanceTooLarge {
                k,
                max: self.max_distance(),
                layout: self.name(),
            });
        }
        Ok(())
    }

    /// Estimated nanoseconds per query (distance `k`) and heap bytes of an index of `n` entries
    /// with this layout (see the module docs for the model).
    pub fn estimate_index(&self, n: u64, k: u32) -> (f64, u64) {
        let kb = self.key_blocks as u32;
        let mut ns = 0.0;
        let mut bytes = 0u64;
        for t in &self.tables {
            let d = directory_bits(n, t.key_bits);
            bytes += 10 * n + 4 * ((1u64 << d) + 1);
            if t.max_block >= kb + k {
                continue; // not scanned for this k
            }
            let eff = t.key_bits.min(d);
            let slots = (1u64 << (d - eff)) as f64;
            ns += PROBE_NS + slots * SLOT_NS + n as f64 / 2f64.powi(eff as i32) * ENTRY_NS;
        }
        (ns, bytes)
    }

    /// Estimated seconds and peak extra bytes of [`crate::all_pairs_with`] over `n`
    /// fingerprints with this layout.
    pub fn estimate_self_join(&self, n: u64, k: u32) -> (f64, u64) {
        let kb = self.key_blocks as u32;
        let mut ns = 0.0;
        for t in &self.tables {
            if t.max_block >= kb + k {
                continue;
            }
            let nf = n as f64;
            ns += nf * SORT_NS + nf * nf / 2f64.powi(t.key_bits as i32 + 1) * PAIR_NS;
        }
        (ns / 1e9, 16 * n)
    }

    fn candidates(k: u32) -> Result<Vec<Layout>> {
        if k >= 64 {
            return Err(Error::DistanceTooLarge {
                k,
                max: 63,
                layout: "any".into(),
            });
        }
        let mut out = Vec::new();
        for m in k + 1..=(k + 12).min(64) {
            if let Ok(l) = Layout::new(m, k) {
                out.push(l);
            }
        }
        if out.is_empty() {
            // Very large k: fall back to the cheapest valid layout.
            out.push(Layout::new(k + 1, k)?);
        }
        Ok(out)
    }

    /// Chooses the layout for an index expected to hold `n` entries and answer distances up to
    /// `k`, using at most about `memory_budget_bytes` of heap: the fastest by the cost model in
    /// the module docs among those within budget, or the smallest if none fits.
    ///
    /// # Errors
    /// [`Error::DistanceTooLarge`] if `k >= 64`.
    pub fn plan(n: u64, k: u32, memory_budget_bytes: u64) -> Result<Layout> {
        let cands = Self::candidates(k)?;
        let mut best: Option<(f64, Layout)> = None;
        let mut smallest: Option<(u64, Layout)> = None;
        for l in cands {
            let (ns, bytes) = l.estimate_index(n, k);
            if bytes <= memory_budget_bytes && best.as_ref().is_none_or(|(b, _)| ns < *b) {
                best = Some((ns, l.clone()));
            }
            if smallest.as_ref().is_none_or(|(b, _)| bytes < *b) {
                smallest = Some((bytes, l));
            }
        }
        Ok(best
            .map(|b| b.1)
            .or(smallest.map(|s| s.1))
            .expect("at least one candidate"))
    }

    /// Chooses the layout for an all-pairs self-join of `n` fingerprints at distance `k`:
    /// the fastest by the cost model in the module docs.
    ///
    /// # Errors
    /// [`Error::DistanceTooLarge`] if `k >= 64`.
    pub fn plan_self_join(n: u64, k: u32) -> Result<Layout> {
        let mut best: Option<(f64, Layout)> = None;
        for l in Self::candidates(k)? {
            let (s, _) = l.estimate_self_join(n, k);
            if best.as_ref().is_none_or(|(b, _)| s < *b) {
                best = Some((s, l));
            }
        }
        Ok(best.expect("at least one candidate").1)
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl fmt::Debug for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Layout")
            .field("name", &self.name())
            .field("blocks", &self.blocks)
            .field("key_blocks", &self.key_blocks)
            .field("tables", &self.tables.len())
            .finish()
    }
}

impl std::str::FromStr for Layout {
    type Err = Error;
    fn from_str(s: &str) -> Result<Layout> {
        Layout::from_name(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permute_roundtrip_and_key_on_top() {
        for (m, k) in [(1, 0), (4, 3), (5, 3), (7, 2), (9, 8), (64, 1)] {
            let l = Layout::new(m, k).unwrap();
            assert_eq!(l.tables(), binomial(m as u64, k as u64) as usize);
            for t in l.specs() {
                for fp in [0u64, !0, 0x0123_4567_89ab_cdef, 0xdead_beef_0bad_f00d] {
                    let p = t.permute(fp);
                    assert_eq!(t.unpermute(p), fp);
                    assert_eq!(p.count_ones(), fp.count_ones());
                }
            }
        }
    }

    #[test]
    fn names_roundtrip() {
        for n in ["m4", "m5x2", "m6x3", "m1"] {
            assert_eq!(Layout::from_name(n).unwrap().name(), n);
        }
        assert!(Layout::from_name("q4").is_err());
        assert!(Layout::from_name("m4x0").is_err());
        assert_eq!(Layout::new(5, 3).unwrap().tables(), 10);
        assert_eq!(Layout::new(5, 3).unwrap().min_key_bits(), 25);
    }

    #[test]
    fn planner_respects_budget() {
        let l = Layout::plan(50_000_000, 3, 4 << 30).unwrap();
        assert!(l.estimate_index(50_000_000, 3).1 <= 4 << 30, "{l:?}");
        assert_eq!(l.max_distance(), 3);
        for k in 0..=8 {
            let l = Layout::plan(1_000_000, k, 1 << 30).unwrap();
            assert_eq!(l.max_distance(), k);
        }
        let l = Layout::plan_self_join(50_000_000, 3).unwrap();
        assert!(l.min_key_bits() >= 25, "{l:?}");
    }
}
