//! [`HammingIndex`]: the mutable exact index.
use crate::batch::{by_query, sorted_batch, KeyOrder};
use crate::error::{Error, Result};
use crate::layout::{Layout, TableSpec};
use crate::table::Table;
use rayon::prelude::*;
use std::ops::ControlFlow;

/// One stored entry within the query distance.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct Match {
    /// The handle stored with the fingerprint.
    pub handle: u32,
    /// The stored fingerprint.
    pub fingerprint: u64,
    /// Hamming distance between the query and `fingerprint`.
    pub distance: u8,
}

/// Inserts are merged into the main arrays once the delta exceeds
/// `max(MERGE_MIN, main / MERGE_FRACTION)` entries.
const MERGE_MIN: usize = 1 << 16;
const MERGE_FRACTION: usize = 8;
/// Tombstones are compacted once they exceed `max(COMPACT_MIN, main / COMPACT_FRACTION)`.
const COMPACT_MIN: usize = 1 << 12;
const COMPACT_FRACTION: usize = 4;

/// Maximum number of entries of one index.
pub const MAX_ENTRIES: u64 = u32::MAX as u64 - 1;

/// An exact Hamming-distance index over `(fingerprint, handle)` entries: one permuted table per
/// key-block choice of its [`Layout`].
///
/// Entries form a multiset: the same `(fingerprint, handle)` may be inserted twice and is then
/// reported twice. Every search returns exactly the live entries within the distance, each once.
///
/// Memory: per table 10 bytes per entry (48-bit residual + 32-bit handle) plus a directory of
/// `4 * 2^d` bytes; inserts go to a small bucketed delta (16 bytes per entry per table) merged in
/// batches; removals set a tombstone bit and are compacted in batches.
#[derive(Clone, Debug)]
pub struct HammingIndex {
    layout: Layout,
    tables: Vec<Table>,
}

impl HammingIndex {
    /// An empty index with `layout`.
    pub fn new(layout: Layout) -> HammingIndex {
        let tables = layout
            .specs()
            .iter()
            .map(|s| Table::empty(s.key_bits))
            .collect();
        HammingIndex { layout, tables }
    }

    /// Builds an index from `entries` (parallel over tables).
    ///
    /// # Errors
    /// [`Error::TooManyEntries`] if there are more than [`MAX_ENTRIES`].
    pub fn build(layout: Layout, entries: &[(u64, u32)]) -> Result<HammingIndex> {
        HammingIndex::build_parts(layout, &[entries])
    }

    /// Builds an index from the concatenation of `parts` without copying them into one buffer
    /// (parallel over tables). Same result as [`HammingIndex::build`] on the concatenation.
    ///
    /// # Errors
    /// [`Error::TooManyEntries`] if there are more than [`MAX_ENTRIES`].
    pub fn build_parts(layout: Layout, parts: &[&[(u64, u32)]]) -> Result<HammingIndex> {
        let n = parts.iter().map(|p| p.len()).sum();
        check_len(n)?;
        let tables = layout
            .specs()
            .par_iter()
            .map(|s| {
                Table::build_from(s.key_bits, n, || {
                    parts
                        .iter()
                        .flat_map(|p| p.iter())
                        .map(|&(f, h)| (s.permute(f), h))
                })
            })
            .collect();
        Ok(HammingIndex { layout, tables })
    }

    /// Builds an index whose handles are the positions in `fps`.
    ///
    /// # Errors
    /// [`Error::TooManyEntries`] if there are more than [`MAX_ENTRIES`].
    pub fn from_fingerprints(layout: Layout, fps: &[u64]) -> Result<HammingIndex> {
        check_len(fps.len())?;
        let tables = layout
            .specs()
            .par_iter()
            .map(|s| {
                Table::build_from(s.key_bits, fps.len(), || {
                    fps.iter()
                        .enumerate()
                        .map(|(i, &f)| (s.permute(f), i as u32))
                })
            })
            .collect();
        Ok(HammingIndex { layout, tables })
    }

    /// The layout.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Largest distance a search may ask for.
    pub fn max_distance(&self) -> u32 {
        self.layout.max_distance()
    }

    /// Number of live entries.
    pub fn len(&self) -> usize {
        self.tables[0].len()
    }

    /// True when there are no live entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Heap bytes held by the index (capacities, not just lengths).
    pub fn heap_bytes(&self) -> usize {
        self.tables.iter().map(Table::heap_bytes).sum::<usize>()
            + self.tables.capacity() * std::mem::size_of::<Table>()
    }

    /// Entries waiting in the insert delta (per table).
    pub fn pending_inserts(&self) -> usize {
        self.tables[0].delta_len()
    }

    /// Adds `(fp, handle)`. Amortised O(tables): the entry goes to a delta that is merged into
    /// the main arrays (a linear rebuild of each table, in parallel) once it exceeds an eighth of
    /// them.
    ///
    /// # Errors
    /// [`Error::TooManyEntries`] if the index already holds [`MAX_ENTRIES`].
    pub fn insert(&mut self, fp: u64, handle: u32) -> Result<()> {
        check_len(self.tables[0].main_len() + self.tables[0].delta_len() + 1)?;
        for (t, s) in self.tables.iter_mut().zip(self.layout.specs()) {
            t.insert(s.permute(fp), handle);
        }
        let t0 = &self.tables[0];
        if t0.delta_len() > MERGE_MIN.max(t0.main_len() / MERGE_FRACTION) {
            self.flush();
        }
        Ok(())
    }

    /// Removes one copy of `(fp, handle)`; returns false (and changes nothing) if absent.
    pub fn remove(&mut self, fp: u64, handle: u32) -> bool {
        let specs = self.layout.specs();
        if !self.tables[0].remove(specs[0].permute(fp), handle) {
            return false;
        }
        for (t, s) in self.tables.iter_mut().zip(specs).skip(1) {
            let found = t.remove(s.permute(fp), handle);
            debug_assert!(found, "tables out of step");
        }
        let t0 = &self.tables[0];
        if t0.dead_count() > COMPACT_MIN.max(t0.main_len() / COMPACT_FRACTION) {
            self.flush();
        }
        true
    }

    /// Merges pending inserts and drops removed entries now (normally automatic).
    pub fn flush(&mut self) {
        self.tables.par_iter_mut().for_each(Table::rebuild);
    }

    /// All live entries as `(fingerprint, handle)`, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        let s = &self.layout.specs()[0];
        self.tables[0]
            .iter_live()
            .map(move |(p, h)| (s.unpermute(p), h))
    }

    /// Calls `f` for every live entry within distance `k` of `q` (each exactly once, in no
    /// particular order) until `f` returns `Break`. Returns `Break` if `f` stopped it.
    ///
    /// # Errors
    /// [`Error::DistanceTooLarge`] if `k > self.max_distance()`.
    pub fn search_with<F>(&self, q: u64, k: u32, mut f: F) -> Result<ControlFlow<()>>
    where
        F: FnMut(Match) -> ControlFlow<()>,
    {
        self.layout.check_distance(k)?;
        let kb = self.layout.key_blocks() as u32;
        let specs = self.layout.specs();
        // Issue the independent memory accesses of all tables before scanning any of them, so
        // that their cache misses overlap.
        self.prefetch_dirs(q, k);
        self.prefetch_data(q, k);
        for (t, s) in self.tables.iter().zip(specs) {
            if s.max_block >= kb + k {
                // Never the reporting table for a match within k (see `canonical_key_set`).
                continue;
            }
            let flow = self.scan_table(t, s, s.permute(q), k, &mut f);
            if flow.is_break() {
                return Ok(flow);
            }
        }
        Ok(ControlFlow::Continue(()))
    }

    /// Table `t`'s entries within `k` of the permuted query `qp`, each reported to `f` only
    /// from the table that reports it (see `canonical_key_set`).
    #[inline(always)]
    fn scan_table<F>(&self, t: &Table, s: &TableSpec, qp: u64, k: u32, f: &mut F) -> ControlFlow<()>
    where
        F: FnMut(Match) -> ControlFlow<()>,
    {
        t.scan(qp, k, &mut |handle, p, dist| {
            if self.layout.canonical_key_set(&s.perm_block_masks, qp ^ p) != s.key_set {
                return ControlFlow::Continue(());
            }
            f(Match {
                handle,
                fingerprint: s.unpermute(p),
                distance: dist as u8,
            })
        })
    }

    /// Issues the memory prefetches of a search for `q` within `k` without searching, in two
    /// stages: `stage` 0 fetches the directory entries (and insert-delta bucket headers) of every
    /// table the search will probe, `stage` 1 reads them and fetches the first entries of each
    /// probed slot. A caller searching several indexes (e.g. time partitions) calls stage 0 on
    /// all of them, then stage 1 on all, then searches: their cache misses then overlap instead
    /// of adding up. Purely a hint: results never depend on it; any other `stage` does nothing.
    #[inline]
    pub fn prefetch(&self, q: u64, k: u32, stage: u8) {
        if k > self.layout.max_distance() {
            return;
        }
        match stage {
            0 => self.prefetch_dirs(q, k),
            1 => self.prefetch_data(q, k),
            _ => {}
        }
    }

    /// First prefetch stage of a query: the directory entries of every table it will probe.
    #[inline]
    fn prefetch_dirs(&self, q: u64, k: u32) {
        let kb = self.layout.key_blocks() as u32;
        for (t, s) in self.tables.iter().zip(self.layout.specs()) {
            if s.max_block < kb + k {
                t.prefetch_dir(s.permute(q));
            }
        }
    }

    /// Second prefetch stage: the first residuals of every probed slot (reads the directory).
    #[inline]
    fn prefetch_data(&self, q: u64, k: u32) {
        let kb = self.layout.key_blocks() as u32;
        for (t, s) in self.tables.iter().zip(self.layout.specs()) {
            if s.max_block < kb + k {
                t.prefetch_data(s.permute(q));
            }
        }
    }

    /// Every live entry within distance `k` of `q`, sorted by handle then fingerprint.
    ///
    /// # Errors
    /// [`Error::DistanceTooLarge`] if `k > self.max_distance()`.
    pub fn search(&self, q: u64, k: u32) -> Result<Vec<Match>> {
        all_sorted(|f| self.search_with(q, k, f))
    }

    /// Some live entry within distance `k` of `q`, if any (stops at the first found).
    ///
    /// # Errors
    /// [`Error::DistanceTooLarge`] if `k > self.max_distance()`.
    pub fn find_any(&self, q: u64, k: u32) -> Result<Option<Match>> {
        first_found(|f| self.search_with(q, k, f))
    }

    /// [`HammingIndex::search`] for each query, in parallel over the queries (rayon).
    ///
    /// A batch of [`crate::SORTED_BATCH`] queries or more is searched one table at a time, the
    /// queries in the order of that table's permuted key (its top bits: see `batch.rs`): each
    /// query's slot then lies just past the previous one's, so the table is read nearly in
    /// order instead of a cache miss a probe.
    ///
    /// # Errors
    /// [`Error::DistanceTooLarge`] if `k > self.max_distance()`.
    pub fn search_batch(&self, queries: &[u64], k: u32) -> Result<Vec<Vec<Match>>> {
        self.layout.check_distance(k)?;
        if !sorted_batch(queries.len()) {
            return queries.par_iter().map(|&q| self.search(q, k)).collect();
        }
        let kb = self.layout.key_blocks() as u32;
        let mut found: Vec<(u32, Match)> = Vec::new();
        let mut order = KeyOrder::new(queries.len());
        for (t, s) in self.tables.iter().zip(self.layout.specs()) {
            if s.max_block >= kb + k {
                continue; // as in `search_with`
            }
            for share in order.each(
                queries,
                |q| s.permute(q),
                |qp, i, out| {
                    let _ = self.scan_table(t, s, qp, k, &mut |m| {
                        out.push((i, m));
                        ControlFlow::Continue(())
                    });
                },
            ) {
                found.extend(share);
            }
        }
        Ok(by_query(found, queries.len()))
    }
}

/// A search's callback as the shared helpers pass it.
pub(crate) type Sink<'a> = &'a mut dyn FnMut(Match) -> ControlFlow<()>;

/// Every match `search` reports, sorted (what both indexes' `search` return).
pub(crate) fn all_sorted(
    search: impl FnOnce(Sink<'_>) -> Result<ControlFlow<()>>,
) -> Result<Vec<Match>> {
    let mut out = Vec::new();
    let _ = search(&mut |m| {
        out.push(m);
        ControlFlow::Continue(())
    })?;
    out.sort_unstable();
    Ok(out)
}

/// The first match `search` reports, the search stopped there (both indexes' `find_any`).
pub(crate) fn first_found(
    search: impl FnOnce(Sink<'_>) -> Result<ControlFlow<()>>,
) -> Result<Option<Match>> {
    let mut found = None;
    let _ = search(&mut |m| {
        found = Some(m);
        ControlFlow::Break(())
    })?;
    Ok(found)
}

pub(crate) fn check_len(n: usize) -> Result<()> {
    if n as u64 > MAX_ENTRIES {
        return Err(Error::TooManyEntries {
            n: n as u64,
            max: MAX_ENTRIES,
        });
    }
    Ok(())
}
