//! [`LeanIndex`]: exact search at distance ≤ 3 in about 15.5 bytes per entry — two tables, one per
//! 32-bit half, and query-side one-bit flips (HEngine: Liu, Shen and Torng, *Large scale Hamming
//! distance query processing*, ICDE 2011).
//!
//! Two fingerprints within distance 3 differ in at most one bit in one of their two halves (the
//! pigeonhole principle with two blocks), so looking up the query's half and its 32 one-bit
//! variants in a table per half finds every match: 66 probes instead of the block tables' four to
//! ten, in exchange for storing each entry in full only once.
//!
//! # Representation
//! - The **primary** table holds the entries sorted by fingerprint: a directory of `u32` offsets
//!   over the top `d` bits ([`lean_directory_bits`], 16 ≤ `d` ≤ 24) and three parallel arrays —
//!   the fingerprint's bits 0..31 (`u32`), its bits 32..47 (`u16`; bits 48..63 are the slot's),
//!   and the handle (`u32`). It answers the high half.
//! - The **secondary** table answers the low half without a copy of the fingerprints: sorted by
//!   the low half, each entry is a `u32` position in the primary table and an 8-bit tag (the low
//!   half's 8 bits below its own `d`-bit directory), so a probe reads the primary only for entries
//!   whose tag matches. The slot of a primary position (the fingerprint's top bits) is found from
//!   a hint per 64 positions.
//!
//! 10 + 5 bytes per entry, two directories (`4 * 2^d` bytes each, `2^d` about `n / 16`) and the
//! hints: 15.4–15.6 bytes per entry from a million entries up.
//!
//! A large batch ([`LeanIndex::search_batch`] from 16,384 queries) is searched one table at a
//! time, the queries in the order of that table's half so that the tables are read nearly in
//! order, and the secondary's candidates confirmed in the order of their primary positions.
//!
//! # Invariants
//! - Results are exact and each live entry is reported once: the primary reports entries whose
//!   high half is within `f` bits of the query's, the secondary those whose low half is within
//!   `f` bits and whose high half is not, where `f` is 1 for `k >= 2` and 0 otherwise.
//! - The index is built once ([`LeanIndex::build`]); it has no inserts or removals.
//!
//! # Example
//! ```
//! use neardup_index::LeanIndex;
//! let index = LeanIndex::build(&[(0xdead_beef, 1), (0xdead_beef ^ (1 << 40) ^ 0b11, 2)]).unwrap();
//! let hits = index.search(0xdead_beef, 3).unwrap();
//! assert_eq!(hits.iter().map(|m| (m.handle, m.distance)).collect::<Vec<_>>(), [(1, 0), (2, 3)]);
//! assert!(index.search(0, 4).is_err()); // the lean index answers distances up to 3
//! ```
use crate::batch::{by_query, order_by_prefix, sorted_batch, KeyOrder, ORDER_BITS};
use crate::error::{Error, Result};
use crate::index::{all_sorted, check_len, first_found, Match};
use crate::table::{huge_vec, prefetch};
use rayon::prelude::*;
use std::ops::ControlFlow;

/// The largest distance a [`LeanIndex`] answers.
pub const LEAN_MAX_DISTANCE: u32 = 3;

/// Primary positions per slot hint.
const HINT_SHIFT: u32 = 6;

/// Most probes of one half: the query's own slot and one per directory bit.
const MAX_PROBES: usize = 25;

/// Entries a filter block tests at once; the filter arrays carry this many past their end.
const PAD: usize = 32;

/// Directory bits of a lean index of `n` entries: `clamp(log2(n) - 4, 16, 24)` — 16 to 32
/// entries per slot (a cache line or two of the filter arrays), and a directory of at most
/// half a byte per entry per table.
pub fn lean_directory_bits(n: u64) -> u32 {
    let lg = 63 - n.max(1).leading_zeros();
    lg.saturating_sub(4).clamp(16, 24)
}

/// Nanoseconds a probe of a lean index costs when it misses memory (fitted at 50 M entries on
/// the `scale` example: 44 probes in 2.35 µs).
const LEAN_PROBE_NS: f64 = 53.0;
/// Nanoseconds per filter entry a probe tests.
const LEAN_ENTRY_NS: f64 = 0.3;

/// Estimated nanoseconds per query at distance `k` and heap bytes of a [`LeanIndex`] of `n`
/// entries: `probes * (LEAN_PROBE_NS + n / 2^d * LEAN_ENTRY_NS)` with `2 * (1 + d)` probes for
/// `k >= 2` (two for `k <= 1`), and `15 * n` bytes of entries plus the two directories and the
/// hints. Like the block tables' model ([`crate::layout`]) it is pessimistic while the index
/// fits in the processor's caches (at 1 M entries: 575 ns measured).
pub fn lean_estimate(n: u64, k: u32) -> (f64, u64) {
    let d = lean_directory_bits(n);
    let bytes =
        15 * n + 2 * PAD as u64 + 2 * 4 * ((1u64 << d) + 1) + 4 * n.div_ceil(1 << HINT_SHIFT);
    let probes = if k >= 2 { 2 * (1 + d) } else { 2 } as f64;
    let per_slot = n as f64 / (1u64 << d) as f64;
    (probes * (LEAN_PROBE_NS + per_slot * LEAN_ENTRY_NS), bytes)
}

/// An exact Hamming-distance index over `(fingerprint, handle)` entries for distances up to
/// [`LEAN_MAX_DISTANCE`], in about 15.5 bytes per entry: one table per 32-bit half, each entry
/// stored in full once, and the query's halves flipped one bit at a time (HEngine).
///
/// Entries form a multiset, as in [`crate::HammingIndex`]; searches return [`Match`]es sorted the
/// same way.
#[derive(Clone, Debug)]
pub struct LeanIndex {
    d: u32,
    pdir: Vec<u32>,
    plo: Vec<u32>,
    pmid: Vec<u16>,
    handles: Vec<u32>,
    hint: Vec<u32>,
    sdir: Vec<u32>,
    stag: Vec<u8>,
    spos: Vec<u32>,
}

/// The count of each slot in `slots`, turned into a directory of `2^d + 1` start offsets.
fn directory(d: u32, slots: impl Iterator<Item = usize>) -> Vec<u32> {
    let mut dir = huge_vec((1usize << d) + 1, 0u32);
    for s in slots {
        dir[s + 1] += 1;
    }
    for s in 1..dir.len() {
        dir[s] += dir[s - 1];
    }
    dir
}

impl LeanIndex {
    /// Builds the index from `entries`.
    ///
    /// # Errors
    /// [`Error::TooManyEntries`] if there are more than [`crate::MAX_ENTRIES`].
    pub fn build(entries: &[(u64, u32)]) -> Result<LeanIndex> {
        LeanIndex::build_with_directory_bits(entries, lean_directory_bits(entries.len() as u64))
    }

    /// [`LeanIndex::build`] with `d` directory bits (clamped to 16..=24) instead of
    /// [`lean_directory_bits`]: the same answers at another speed and size (for tests and tuning).
    ///
    /// # Errors
    /// [`Error::TooManyEntries`] if there are more than [`crate::MAX_ENTRIES`].
    pub fn build_with_directory_bits(entries: &[(u64, u32)], d: u32) -> Result<LeanIndex> {
        check_len(entries.len())?;
        Ok(LeanIndex::build_from(entries.len(), d, || {
            entries.iter().copied()
        }))
    }

    /// Builds from `items`, called twice, yielding the same `n` entries each time (no copy of
    /// the input beyond the sorted one).
    fn build_from<I, F>(n: usize, d: u32, items: F) -> LeanIndex
    where
        I: Iterator<Item = (u64, u32)>,
        F: Fn() -> I,
    {
        let d = d.clamp(16, 24);
        let pshift = 64 - d;
        // Primary: counting sort on the top d bits, then each slot sorted by (fingerprint,
        // handle) so that the order does not depend on the input's.
        let pdir = directory(d, items().map(|(f, _)| (f >> pshift) as usize));
        let mut sorted: Vec<(u64, u32)> = vec![(0, 0); n];
        let mut cur = pdir.clone();
        for (f, h) in items() {
            let s = (f >> pshift) as usize;
            sorted[cur[s] as usize] = (f, h);
            cur[s] += 1;
        }
        drop(cur);
        sorted
            .par_chunk_by_mut(|a, b| a.0 >> pshift == b.0 >> pshift)
            .for_each(|slot| slot.sort_unstable());
        // Probed at random: backed by huge pages where Linux allows (a TLB miss per probe
        // otherwise).
        let mut plo = huge_vec(n, 0u32);
        let mut pmid = huge_vec(n + PAD, 0u16);
        let mut handles = huge_vec(n, 0u32);
        for (i, &(f, h)) in sorted.iter().enumerate() {
            plo[i] = f as u32;
            pmid[i] = (f >> 32) as u16;
            handles[i] = h;
        }
        drop(sorted);
        let mut hint = Vec::with_capacity(n.div_ceil(1 << HINT_SHIFT));
        let mut s = 0usize;
        for p in (0..n).step_by(1 << HINT_SHIFT) {
            while pdir[s + 1] as usize <= p {
                s += 1;
            }
            hint.push(s as u32);
        }
        // Secondary: positions bucketed by the low half's top d bits, each slot sorted by (low
        // half, position).
        let sshift = 32 - d;
        let sdir = directory(d, plo.iter().map(|&lo| (lo >> sshift) as usize));
        let mut spos = huge_vec(n, 0u32);
        let mut cur = sdir.clone();
        for (p, &lo) in plo.iter().enumerate() {
            let s = (lo >> sshift) as usize;
            spos[cur[s] as usize] = p as u32;
            cur[s] += 1;
        }
        drop(cur);
        for w in sdir.windows(2) {
            spos[w[0] as usize..w[1] as usize].sort_unstable_by_key(|&p| (plo[p as usize], p));
        }
        let mut stag = huge_vec(n + PAD, 0u8);
        for (t, &p) in stag.iter_mut().zip(&spos) {
            *t = (plo[p as usize] >> (24 - d)) as u8;
        }
        LeanIndex {
            d,
            pdir,
            plo,
            pmid,
            handles,
            hint,
            sdir,
            stag,
            spos,
        }
    }

    /// Builds the index whose handles are the positions in `fps`.
    ///
    /// # Errors
    /// [`Error::TooManyEntries`] if there are more than [`crate::MAX_ENTRIES`].
    pub fn from_fingerprints(fps: &[u64]) -> Result<LeanIndex> {
        check_len(fps.len())?;
        Ok(LeanIndex::build_from(
            fps.len(),
            lean_directory_bits(fps.len() as u64),
            || fps.iter().enumerate().map(|(i, &f)| (f, i as u32)),
        ))
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.plo.len()
    }

    /// True when there are no entries.
    pub fn is_empty(&self) -> bool {
        self.plo.is_empty()
    }

    /// Largest distance a search may ask for ([`LEAN_MAX_DISTANCE`]).
    pub fn max_distance(&self) -> u32 {
        LEAN_MAX_DISTANCE
    }

    /// Heap bytes held by the index.
    pub fn heap_bytes(&self) -> usize {
        (self.pdir.capacity() + self.sdir.capacity() + self.hint.capacity()) * 4
            + self.plo.capacity() * 4
            + self.pmid.capacity() * 2
            + self.handles.capacity() * 4
            + self.stag.capacity()
            + self.spos.capacity() * 4
    }

    /// The full fingerprint of primary position `p` in slot `s`.
    #[inline(always)]
    fn fingerprint(&self, s: usize, p: usize) -> u64 {
        ((s as u64) << (64 - self.d)) | (self.pmid[p] as u64) << 32 | self.plo[p] as u64
    }

    /// The primary slot holding position `p`.
    #[inline]
    fn slot_of(&self, p: usize) -> usize {
        let mut s = self.hint[p >> HINT_SHIFT] as usize;
        while self.pdir[s + 1] as usize <= p {
            s += 1;
        }
        s
    }

    /// Every entry within distance `k` of `q`, sorted by handle, then fingerprint.
    ///
    /// # Errors
    /// [`Error::DistanceTooLarge`] if `k > 3`.
    pub fn search(&self, q: u64, k: u32) -> Result<Vec<Match>> {
        all_sorted(|f| self.search_with(q, k, f))
    }

    /// Searches many queries in parallel (rayon); result `i` is [`LeanIndex::search`] of
    /// `queries[i]`. A batch of [`crate::SORTED_BATCH`] queries or more is searched table by
    /// table in sorted order (see the module docs).
    ///
    /// # Errors
    /// [`Error::DistanceTooLarge`] if `k > 3`.
    pub fn search_batch(&self, queries: &[u64], k: u32) -> Result<Vec<Vec<Match>>> {
        check_distance(k)?;
        if self.is_empty() {
            return Ok(vec![Vec::new(); queries.len()]);
        }
        if !sorted_batch(queries.len()) {
            // One query at a time: grouping queries through the stages (2, 4 or 8 at once)
            // was slower, its prefetches more than a core keeps in flight.
            return queries.par_iter().map(|&q| self.search(q, k)).collect();
        }
        Ok(self.search_sorted(queries, k))
    }

    /// [`search_batch`](Self::search_batch) of many queries, each table in turn, the queries
    /// taken in the order of that table's half: a query's probes then fall close to the
    /// previous query's, so the tables are read almost in order and mostly from cache, where
    /// one query alone waits on a cache miss per probe.
    fn search_sorted(&self, queries: &[u64], k: u32) -> Vec<Vec<Match>> {
        let mut order = KeyOrder::new(queries.len());
        let shares = self.sorted_pass(&mut order, queries, k, 0, |q, i, ranges, out| {
            let (qh, ql) = ((q >> 32) as u32, q as u32);
            let _ = self.scan_primary(qh, ql, ranges, k, &mut |m| {
                out.push((i, m));
                ControlFlow::Continue(())
            });
        });
        let mut found: Vec<(u32, Match)> = shares.into_iter().flatten().collect();
        if k > 0 {
            // The secondary's candidates point into the primary at random: each share's are
            // confirmed in the order of their positions' top bits, so that those reads go
            // forward too.
            let shift =
                (u32::BITS - (self.len() as u32).leading_zeros()).saturating_sub(ORDER_BITS);
            let shares: Vec<Vec<(Candidate, u32, u32)>> =
                self.sorted_pass(&mut order, queries, k, 32, |q, i, ranges, out| {
                    let (qh, ql) = ((q >> 32) as u32, q as u32);
                    let _ = self.secondary_candidates(ql, ranges, k, &mut |c| {
                        out.push((c, qh, i));
                        ControlFlow::Continue(())
                    });
                });
            let confirmed: Vec<Vec<(u32, Match)>> = shares
                .into_par_iter()
                .map(|mut candidates| {
                    order_by_prefix(&mut candidates, &mut Vec::new(), |(c, _, _)| c.p >> shift);
                    let mut out = Vec::new();
                    for &(c, qh, i) in &candidates {
                        let _ = self.confirm(c, qh, k, &mut |m| {
                            out.push((i, m));
                            ControlFlow::Continue(())
                        });
                    }
                    out
                })
                .collect();
            found.extend(confirmed.into_iter().flatten());
        }
        by_query(found, queries.len())
    }

    /// One table's pass of [`search_sorted`](Self::search_sorted): the queries ordered by the
    /// table's half (`rot`: 0 for the high half, 32 for the low), one share of them a thread
    /// ([`KeyOrder`]); `each(query, position, probe ranges, out)` collects what a query
    /// yields, each share's apart.
    fn sorted_pass<T, E>(
        &self,
        order: &mut KeyOrder,
        queries: &[u64],
        k: u32,
        rot: u32,
        each: E,
    ) -> Vec<Vec<T>>
    where
        T: Send,
        E: Fn(u64, u32, &[(u32, u32)], &mut Vec<T>) + Sync,
    {
        let dir = if rot == 0 { &self.pdir } else { &self.sdir };
        let probes = if k >= 2 { 1 + self.d as usize } else { 1 };
        // Keyed by the fingerprint with this table's half on top: sorted by the half.
        order.each(
            queries,
            |q| q.rotate_left(rot),
            |key, i, out| {
                let own = (key >> (64 - self.d)) as usize;
                let mut ranges = [(0, 0); MAX_PROBES];
                for (p, r) in ranges[..probes].iter_mut().enumerate() {
                    let s = slot(own, p);
                    *r = (dir[s], dir[s + 1]);
                }
                each(key.rotate_right(rot), i, &ranges[..probes], out);
            },
        )
    }

    /// The first entry found within distance `k` of `q` (not necessarily the nearest).
    ///
    /// # Errors
    /// [`Error::DistanceTooLarge`] if `k > 3`.
    pub fn find_any(&self, q: u64, k: u32) -> Result<Option<Match>> {
        first_found(|f| self.search_with(q, k, f))
    }

    /// Calls `f` for every entry within distance `k` of `q`, in no particular order, until it
    /// returns `Break`; returns `Break` if `f` did.
    ///
    /// # Errors
    /// [`Error::DistanceTooLarge`] if `k > 3`.
    pub fn search_with<F>(&self, q: u64, k: u32, mut f: F) -> Result<ControlFlow<()>>
    where
        F: FnMut(Match) -> ControlFlow<()>,
    {
        check_distance(k)?;
        if self.is_empty() {
            return Ok(ControlFlow::Continue(()));
        }
        let mut probe = self.probe_directories(q, k);
        self.probe_slots(&mut probe);
        Ok(self.scan(&probe, k, &mut f))
    }

    /// Stage 1 of a search: the query's probes, their directory entries prefetched.
    #[inline(always)]
    fn probe_directories(&self, q: u64, k: u32) -> Probe {
        let flips = u32::from(k >= 2);
        let shift = 32 - self.d;
        let (qh, ql) = ((q >> 32) as u32, q as u32);
        let (hs, ls) = ((qh >> shift) as usize, (ql >> shift) as usize);
        // Probe 0 is the query's own slot; probe i > 0 flips the slot's bit i - 1. The halves'
        // bits below the slot are flipped inside the own slot's scan.
        let probes = if flips == 1 { 1 + self.d as usize } else { 1 };
        for i in 0..probes {
            prefetch(self.pdir.as_ptr().wrapping_add(slot(hs, i)));
            prefetch(self.sdir.as_ptr().wrapping_add(slot(ls, i)));
        }
        Probe {
            qh,
            ql,
            probes,
            pr: [(0, 0); MAX_PROBES],
            sr: [(0, 0); MAX_PROBES],
        }
    }

    /// Stage 2: every probe's range of entries, its filter prefetched.
    #[inline(always)]
    fn probe_slots(&self, p: &mut Probe) {
        let shift = 32 - self.d;
        let (hs, ls) = ((p.qh >> shift) as usize, (p.ql >> shift) as usize);
        for i in 0..p.probes {
            let s = slot(hs, i);
            p.pr[i] = (self.pdir[s], self.pdir[s + 1]);
            prefetch(self.pmid.as_ptr().wrapping_add(p.pr[i].0 as usize));
            let s = slot(ls, i);
            p.sr[i] = (self.sdir[s], self.sdir[s + 1]);
            prefetch(self.stag.as_ptr().wrapping_add(p.sr[i].0 as usize));
        }
    }

    /// Stage 3: the probes' entries tested, matches reported to `f`.
    #[inline(always)]
    fn scan<F>(&self, probe: &Probe, k: u32, f: &mut F) -> ControlFlow<()>
    where
        F: FnMut(Match) -> ControlFlow<()>,
    {
        let Probe {
            qh,
            ql,
            probes,
            ref pr,
            ref sr,
        } = *probe;
        self.scan_primary(qh, ql, &pr[..probes], k, f)?;
        if k == 0 {
            return ControlFlow::Continue(());
        }
        self.scan_secondary(qh, ql, &sr[..probes], k, f)
    }

    /// The primary's part of stage 3, `pr` the ranges of the query's probes: it reports high
    /// halves within `flips` bits of the query's — in the own slot, those whose bits 32..47
    /// are; in a flipped slot, exactly the flipped half.
    #[inline(always)]
    fn scan_primary<F>(
        &self,
        qh: u32,
        ql: u32,
        pr: &[(u32, u32)],
        k: u32,
        f: &mut F,
    ) -> ControlFlow<()>
    where
        F: FnMut(Match) -> ControlFlow<()>,
    {
        let flips = u32::from(k >= 2);
        let shift = 32 - self.d;
        let hs = (qh >> shift) as usize;
        let hmid = qh as u16;
        for (i, &(a, b)) in pr.iter().enumerate() {
            let s = slot(hs, i);
            let (want, hd) = if i == 0 {
                (hmid, 0)
            } else {
                // Slot bits below 16 are also bits of `pmid`.
                (((qh ^ (1 << (shift + i as u32 - 1))) as u16), 1)
            };
            if i == 0 && flips == 1 {
                matches(
                    &self.pmid,
                    a,
                    b,
                    |m| {
                        let x = m ^ want;
                        x & x.wrapping_sub(1) == 0
                    },
                    |p| {
                        let hd = (self.pmid[p] ^ want).count_ones();
                        self.report(s, p, hd + (self.plo[p] ^ ql).count_ones(), k, f)
                    },
                )?;
            } else {
                matches(
                    &self.pmid,
                    a,
                    b,
                    |m| m == want,
                    |p| self.report(s, p, hd + (self.plo[p] ^ ql).count_ones(), k, f),
                )?;
            }
        }
        ControlFlow::Continue(())
    }

    /// The secondary's part of stage 3 (for `k >= 1`), `sr` the ranges of the query's probes:
    /// it reports low halves within `flips` bits whose high half is not — tags within `flips`
    /// bits in the own slot, equal tags in a flipped one (the flipped bit is above the tag),
    /// then the primary's low half read to confirm.
    #[inline(always)]
    fn scan_secondary<F>(
        &self,
        qh: u32,
        ql: u32,
        sr: &[(u32, u32)],
        k: u32,
        f: &mut F,
    ) -> ControlFlow<()>
    where
        F: FnMut(Match) -> ControlFlow<()>,
    {
        self.secondary_candidates(ql, sr, k, &mut |c| self.confirm(c, qh, k, f))
    }

    /// The secondary entries whose tags pass, as candidates for [`confirm`](Self::confirm).
    #[inline(always)]
    fn secondary_candidates<C>(
        &self,
        ql: u32,
        sr: &[(u32, u32)],
        k: u32,
        c: &mut C,
    ) -> ControlFlow<()>
    where
        C: FnMut(Candidate) -> ControlFlow<()>,
    {
        let flips = u32::from(k >= 2);
        let shift = 32 - self.d;
        let tag = (ql >> (24 - self.d)) as u8;
        for (i, &(a, b)) in sr.iter().enumerate() {
            let low = if i == 0 {
                ql
            } else {
                ql ^ (1 << (shift + i as u32 - 1))
            };
            let mut candidate = |j: usize| {
                c(Candidate {
                    p: self.spos[j],
                    low,
                    flipped: i != 0,
                })
            };
            if i == 0 && flips == 1 {
                matches(
                    &self.stag,
                    a,
                    b,
                    |t| {
                        let x = t ^ tag;
                        x & x.wrapping_sub(1) == 0
                    },
                    &mut candidate,
                )?;
            } else {
                matches(&self.stag, a, b, |t| t == tag, &mut candidate)?;
            }
        }
        ControlFlow::Continue(())
    }

    /// Reports candidate `c` of a query whose high half is `qh` when its low half is within
    /// `flips` bits and its high half is not (the primary reported those), and the whole within
    /// `k`.
    #[inline(always)]
    fn confirm<F>(&self, c: Candidate, qh: u32, k: u32, f: &mut F) -> ControlFlow<()>
    where
        F: FnMut(Match) -> ControlFlow<()>,
    {
        let flips = u32::from(k >= 2);
        let p = c.p as usize;
        let ld = (self.plo[p] ^ c.low).count_ones() + u32::from(c.flipped);
        if ld > flips {
            return ControlFlow::Continue(());
        }
        let s = self.slot_of(p);
        let hd = ((self.fingerprint(s, p) >> 32) as u32 ^ qh).count_ones();
        if hd <= flips {
            return ControlFlow::Continue(()); // the primary reported it
        }
        self.report(s, p, hd + ld, k, f)
    }

    /// Calls `f` with primary position `p` of slot `s` when `dist <= k`.
    #[inline(always)]
    fn report<F>(&self, s: usize, p: usize, dist: u32, k: u32, f: &mut F) -> ControlFlow<()>
    where
        F: FnMut(Match) -> ControlFlow<()>,
    {
        if dist > k {
            return ControlFlow::Continue(());
        }
        f(Match {
            handle: self.handles[p],
            fingerprint: self.fingerprint(s, p),
            distance: dist as u8,
        })
    }
}

/// One query's probes between the stages of a search.
struct Probe {
    qh: u32,
    ql: u32,
    probes: usize,
    pr: [(u32, u32); MAX_PROBES],
    sr: [(u32, u32); MAX_PROBES],
}

/// A secondary entry whose tag passed: its primary position, the query's low half as the probe
/// flipped it, and whether it did.
#[derive(Clone, Copy)]
struct Candidate {
    p: u32,
    low: u32,
    flipped: bool,
}

/// Probe `i` of a half whose own slot is `own`: the slot itself, then one per flipped bit.
#[inline(always)]
fn slot(own: usize, i: usize) -> usize {
    if i == 0 {
        own
    } else {
        own ^ (1 << (i - 1))
    }
}

/// Calls `f(i)` for every `i` in `a..b` with `keep(arr[i])`, testing 32 entries at a time
/// without branches (`arr` has [`PAD`] entries past the last slot, so a block may run past `b`).
#[inline(always)]
fn matches<T: Copy>(
    arr: &[T],
    a: u32,
    b: u32,
    keep: impl Fn(T) -> bool,
    mut f: impl FnMut(usize) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let (mut base, b) = (a as usize, b as usize);
    while base < b {
        let block: &[T; PAD] = arr[base..base + PAD].try_into().expect("padded");
        let mut m = 0u32;
        for (j, &x) in block.iter().enumerate() {
            m |= u32::from(keep(x)) << j;
        }
        if b - base < PAD {
            m &= (1u32 << (b - base)) - 1;
        }
        while m != 0 {
            let j = m.trailing_zeros() as usize;
            m &= m - 1;
            f(base + j)?;
        }
        base += PAD;
    }
    ControlFlow::Continue(())
}

fn check_distance(k: u32) -> Result<()> {
    if k > LEAN_MAX_DISTANCE {
        return Err(Error::DistanceTooLarge {
            k,
            max: LEAN_MAX_DISTANCE,
            layout: "lean".into(),
        });
    }
    Ok(())
}
