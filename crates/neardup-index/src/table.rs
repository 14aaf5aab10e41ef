//! One permuted table: a bucket directory over the top `d` bits of the permuted fingerprint,
//! contiguous residual arrays (structure of arrays), a tombstone bitmap and a small bucketed
//! delta for inserts.
//!
//! Invariants:
//! - `dir.len() == 2^d + 1`, `dir[0] == 0`, non-decreasing, `dir[2^d] == top.len()`; the entries of
//!   slot `s` (those whose permuted top `d` bits equal `s`) are `dir[s]..dir[s+1]`.
//! - `top[i] << 16 | bot[i]` is the residual (the permuted fingerprint's low `64 - d` bits,
//!   `d >= 16` so it fits 48 bits); `handles[i]` is its handle.
//! - when `d < key_bits`, every slot with more than `SMALL_SLOT` entries is sorted by residual.
//! - `dead` is empty or has one bit per main entry; a set bit is a removed entry.
//! - `delta` is empty or has `2^DELTA_BITS` buckets of `(permuted fingerprint, handle)` keyed by
//!   the top `DELTA_BITS` bits.
use crate::layout::{directory_bits, MIN_DIR_BITS};
use std::ops::ControlFlow;

/// Slots larger than this are kept sorted by residual when the directory is coarser than the key.
const SMALL_SLOT: usize = 32;

/// Bits of the delta's bucket key.
pub(crate) const DELTA_BITS: u32 = MIN_DIR_BITS;

#[derive(Clone, Debug, Default)]
pub(crate) struct Table {
    key_bits: u32,
    d: u32,
    dir: Vec<u32>,
    top: Vec<u32>,
    bot: Vec<u16>,
    handles: Vec<u32>,
    dead: Vec<u64>,
    dead_count: usize,
    delta: Vec<Vec<(u64, u32)>>,
    delta_len: usize,
}

#[inline(always)]
fn lowmask(bits: u32) -> u64 {
    if bits >= 64 {
        !0
    } else {
        (1u64 << bits) - 1
    }
}

/// Asks the kernel to back a large array with transparent huge pages (Linux, `madvise` mode):
/// random probes into multi-GiB tables otherwise pay a TLB miss (a page walk) on nearly every
/// access. Must be called before the pages are first written. Purely advisory: errors are
/// ignored and other platforms do nothing.
fn advise_huge<T>(v: &[T]) {
    advise_huge_range(v.as_ptr() as usize, std::mem::size_of_val(v));
}

fn advise_huge_range(start: usize, len: usize) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let end = start + len;
        let a = start.div_ceil(HUGE) * HUGE;
        let b = end / HUGE * HUGE;
        if b > a {
            // SAFETY: the range lies inside one live allocation; MADV_HUGEPAGE does not change
            // its contents or validity, only how the kernel backs it.
            unsafe {
                libc::madvise(a as *mut libc::c_void, b - a, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (start, len);
}

/// `vec![value; n]` backed by transparent huge pages where Linux allows (advised before the
/// pages are first written). For large tables probed at random — an id hash table, say — where
/// 4 KiB pages would cost a TLB miss per probe.
pub fn huge_vec<T: Clone>(n: usize, value: T) -> Vec<T> {
    let mut v = Vec::with_capacity(n);
    advise_huge_range(v.as_ptr() as usize, n * std::mem::size_of::<T>());
    v.resize(n, value);
    v
}

/// Most cache lines of one slot's prefilter that a query prefetches.
const PREFETCH_LINES: usize = 8;

/// Asks the processor to bring the cache line at `p` closer (a hint: any address is allowed,
/// nothing is read). A no-op off x86-64.
#[inline(always)]
pub fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is a hint; it never faults, whatever the address.
    #[allow(unused_unsafe)]
    unsafe {
        std::arch::x86_64::_mm_prefetch(p as *const i8, std::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

impl Table {
    /// An empty table.
    pub fn empty(key_bits: u32) -> Table {
        Table::build_from(key_bits, 0, std::iter::empty)
    }

    /// Builds the main arrays by a two-pass radix sort on the top `d` bits (first on the top 8
    /// bits into a temporary buffer, then a counting sort of each part, whose directory segment
    /// and output ranges stay in cache); `items` is called twice and must yield the same `n`
    /// `(permuted fingerprint, handle)` items both times. Entries keep their input order within a
    /// slot.
    pub fn build_from<I, F>(key_bits: u32, n: usize, items: F) -> Table
    where
        I: Iterator<Item = (u64, u32)>,
        F: Fn() -> I,
    {
        const R: u32 = 8;
        let d = directory_bits(n as u64, key_bits);
        let shift = 64 - d;
        let slots = 1usize << d;
        let sub = 1usize << (d - R);
        let mut starts = [0usize; (1 << R) + 1];
        for (p, _) in items() {
            starts[(p >> (64 - R)) as usize + 1] += 1;
        }
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        let mut tmp_p: Vec<u64> = vec![0; n];
        let mut tmp_h: Vec<u32> = vec![0; n];
        advise_huge(&tmp_p);
        advise_huge(&tmp_h);
        let mut cur = starts;
        for (p, h) in items() {
            let b = (p >> (64 - R)) as usize;
            tmp_p[cur[b]] = p;
            tmp_h[cur[b]] = h;
            cur[b] += 1;
        }
        let mut dir = vec![0u32; slots + 1];
        let mut top = vec![0u32; n];
        let mut bot = vec![0u16; n];
        let mut handles = vec![0u32; n];
        advise_huge(&dir);
        advise_huge(&top);
        advise_huge(&bot);
        advise_huge(&handles);
        let rm = lowmask(shift);
        let mut cnt = vec![0u32; sub];
        let mut sort_buf: Vec<(u64, u32)> = Vec::new();
        for b in 0..1usize << R {
            let part = &tmp_p[starts[b]..starts[b + 1]];
            let part_h = &tmp_h[starts[b]..starts[b + 1]];
            cnt.iter_mut().for_each(|c| *c = 0);
            for &p in part {
                cnt[((p >> shift) as usize) & (sub - 1)] += 1;
            }
            let mut acc = starts[b] as u32;
            for (i, c) in cnt.iter_mut().enumerate() {
                dir[b * sub + i] = acc;
                let next = acc + *c;
                *c = acc;
                acc = next;
            }
            for (&p, &h) in part.iter().zip(part_h) {
                let c = &mut cnt[((p >> shift) as usize) & (sub - 1)];
                let i = *c as usize;
                *c += 1;
                let r = p & rm;
                top[i] = (r >> 16) as u32;
                bot[i] = r as u16;
                handles[i] = h;
            }
            if d < key_bits {
                // The directory is coarser than the key: sort big slots by residual so that a
                // query can binary-search its key's sub-range (hot prefixes stay cheap).
                for sl in b * sub..(b + 1) * sub {
                    let (a, e) = (dir[sl] as usize, cnt[sl - b * sub] as usize);
                    if e - a > SMALL_SLOT {
                        sort_buf.clear();
                        sort_buf.extend(
                            (a..e).map(|i| ((top[i] as u64) << 16 | bot[i] as u64, handles[i])),
                        );
                        sort_buf.sort_unstable();
                        for (i, &(r, h)) in (a..e).zip(&sort_buf) {
                            top[i] = (r >> 16) as u32;
                            bot[i] = r as u16;
                            handles[i] = h;
                        }
                    }
                }
            }
        }
        dir[slots] = n as u32;
        Table {
            key_bits,
            d,
            dir,
            top,
            bot,
            handles,
            ..Table::default()
        }
    }

    /// Live entries (main, then delta) as `(permuted fingerprint, handle)`.
    pub fn iter_live(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        let shift = 64 - self.d;
        let slots = self.dir.len() - 1;
        (0..slots)
            .flat_map(move |s| {
                (self.dir[s] as usize..self.dir[s + 1] as usize)
                    .filter(move |&i| !self.is_dead(i))
                    .map(move |i| (((s as u64) << shift) | self.resid(i), self.handles[i]))
            })
            .chain(self.delta.iter().flatten().copied())
    }

    /// Rebuilds the main arrays from the live entries (merging the delta, dropping tombstones).
    pub fn rebuild(&mut self) {
        let n = self.len();
        let fresh = Table::build_from(self.key_bits, n, || self.iter_live());
        *self = fresh;
    }

    #[inline(always)]
    fn resid(&self, i: usize) -> u64 {
        (self.top[i] as u64) << 16 | self.bot[i] as u64
    }

    /// Number of entries in `a..b` (sorted by residual) whose residual is below `x`.
    fn partition(&self, a: usize, b: usize, x: u64) -> usize {
        let (mut lo, mut hi) = (a, b);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.resid(mid) < x {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo - a
    }

    #[inline(always)]
    fn is_dead(&self, i: usize) -> bool {
        !self.dead.is_empty() && self.dead[i / 64] >> (i % 64) & 1 == 1
    }

    /// Live entries.
    pub fn len(&self) -> usize {
        self.top.len() - self.dead_count + self.delta_len
    }

    pub fn main_len(&self) -> usize {
        self.top.len()
    }

    pub fn delta_len(&self) -> usize {
        self.delta_len
    }

    pub fn dead_count(&self) -> usize {
        self.dead_count
    }

    pub fn heap_bytes(&self) -> usize {
        self.dir.capacity() * 4
            + self.top.capacity() * 4
            + self.bot.capacity() * 2
            + self.handles.capacity() * 4
            + self.dead.capacity() * 8
            + self.delta.capacity() * std::mem::size_of::<Vec<(u64, u32)>>()
            + self
                .delta
                .iter()
                .map(|b| b.capacity() * std::mem::size_of::<(u64, u32)>())
                .sum::<usize>()
    }

    pub fn insert(&mut self, p: u64, h: u32) {
        if self.delta.is_empty() {
            self.delta = vec![Vec::new(); 1 << DELTA_BITS];
        }
        self.delta[(p >> (64 - DELTA_BITS)) as usize].push((p, h));
        self.delta_len += 1;
    }

    /// Removes one copy of `(p, h)`; false if absent.
    pub fn remove(&mut self, p: u64, h: u32) -> bool {
        if !self.delta.is_empty() {
            let b = &mut self.delta[(p >> (64 - DELTA_BITS)) as usize];
            if let Some(i) = b.iter().position(|&e| e == (p, h)) {
                b.swap_remove(i);
                self.delta_len -= 1;
                return true;
            }
        }
        let shift = 64 - self.d;
        let s = (p >> shift) as usize;
        let r = p & lowmask(shift);
        let (rt, rb) = ((r >> 16) as u32, r as u16);
        for i in self.dir[s] as usize..self.dir[s + 1] as usize {
            if self.top[i] == rt && self.bot[i] == rb && self.handles[i] == h && !self.is_dead(i) {
                if self.dead.is_empty() {
                    self.dead = vec![0u64; self.top.len().div_ceil(64)];
                }
                self.dead[i / 64] |= 1 << (i % 64);
                self.dead_count += 1;
                return true;
            }
        }
        false
    }

    /// Prefetches the directory entry of the permuted query `qp` (first of three stages; see
    /// `HammingIndex::search_with`).
    /// Also prefetches the delta bucket's header (its pointer and length) when the query reads
    /// exactly one bucket.
    #[inline(always)]
    pub fn prefetch_dir(&self, qp: u64) {
        if self.d <= self.key_bits && !self.top.is_empty() {
            prefetch(
                self.dir
                    .as_ptr()
                    .wrapping_add((qp >> (64 - self.d)) as usize),
            );
        }
        if self.key_bits >= DELTA_BITS && !self.delta.is_empty() {
            prefetch(
                self.delta
                    .as_ptr()
                    .wrapping_add((qp >> (64 - DELTA_BITS)) as usize),
            );
        }
    }

    /// Prefetches the first residuals of the query's slot and the first entries of its delta
    /// bucket (second stage; reads what the first stage fetched).
    #[inline(always)]
    pub fn prefetch_data(&self, qp: u64) {
        if self.d <= self.key_bits && !self.top.is_empty() {
            let s = (qp >> (64 - self.d)) as usize;
            let a = self.dir[s] as usize;
            let b = self.dir[s + 1] as usize;
            // Every cache line of the slot's 32-bit prefilter (the scan reads all of them), up
            // to PREFETCH_LINES: a large slot then streams in parallel with the other probes
            // instead of missing line by line.
            let end = b.min(a + PREFETCH_LINES * 16);
            let mut i = a;
            while i < end {
                prefetch(self.top.as_ptr().wrapping_add(i));
                i += 16;
            }
            prefetch(self.bot.as_ptr().wrapping_add(a));
        }
        if self.key_bits >= DELTA_BITS && !self.delta.is_empty() {
            prefetch(self.delta[(qp >> (64 - DELTA_BITS)) as usize].as_ptr());
        }
    }

    /// Calls `f(handle, permuted fingerprint, distance)` for every live entry within distance
    /// `k` of the permuted query `qp` whose key (top `key_bits` bits) equals the query's. May also
    /// report entries with other keys (when the directory is coarser than the key); all reported
    /// distances are exact.
    #[inline]
    pub fn scan<F>(&self, qp: u64, k: u32, f: &mut F) -> ControlFlow<()>
    where
        F: FnMut(u32, u64, u32) -> ControlFlow<()>,
    {
        if !self.top.is_empty() {
            let shift = 64 - self.d;
            let qres = qp & lowmask(shift);
            let qslot = qp >> shift;
            if self.d <= self.key_bits {
                self.scan_slot(qslot as usize, qres, k, 0, f)?;
            } else {
                let extra = self.d - self.key_bits;
                let first = (qp >> (64 - self.key_bits)) << extra;
                for s in first..first + (1u64 << extra) {
                    let td = (s ^ qslot).count_ones();
                    if td <= k {
                        self.scan_slot(s as usize, qres, k - td, td, f)?;
                    }
                }
            }
        }
        if !self.delta.is_empty() {
            let qb = qp >> (64 - DELTA_BITS);
            if self.key_bits >= DELTA_BITS {
                Self::scan_delta(&self.delta[qb as usize], qp, k, f)?;
            } else {
                let extra = DELTA_BITS - self.key_bits;
                let first = (qp >> (64 - self.key_bits)) << extra;
                for b in first..first + (1u64 << extra) {
                    if (b ^ qb).count_ones() <= k {
                        Self::scan_delta(&self.delta[b as usize], qp, k, f)?;
                    }
                }
            }
        }
        ControlFlow::Continue(())
    }

    #[inline]
    fn scan_delta<F>(bucket: &[(u64, u32)], qp: u64, k: u32, f: &mut F) -> ControlFlow<()>
    where
        F: FnMut(u32, u64, u32) -> ControlFlow<()>,
    {
        for &(p, h) in bucket {
            let dist = (p ^ qp).count_ones();
            if dist <= k {
                f(h, p, dist)?;
            }
        }
        ControlFlow::Continue(())
    }

    #[inline]
    fn scan_slot<F>(&self, s: usize, qres: u64, thr: u32, td: u32, f: &mut F) -> ControlFlow<()>
    where
        F: FnMut(u32, u64, u32) -> ControlFlow<()>,
    {
        let mut a = self.dir[s] as usize;
        let mut b = self.dir[s + 1] as usize;
        if self.d < self.key_bits && b - a > SMALL_SLOT {
            // Sorted slot: only entries with the query's key can be reported from this table,
            // and they are the residuals in [lower, upper).
            let low = 64 - self.key_bits;
            let lower = (qres >> low) << low;
            let upper = lower + (1u64 << low);
            a += self.partition(a, b, lower);
            b = a + self.partition(a, b, upper);
        }
        if a == b {
            return ControlFlow::Continue(());
        }
        let top = (s as u64) << (64 - self.d);
        crate::kernel::scan(
            &self.top[a..b],
            &self.bot[a..b],
            qres,
            thr,
            &mut |i, dist| {
                let pos = a + i;
                if self.is_dead(pos) {
                    return ControlFlow::Continue(());
                }
                f(self.handles[pos], top | self.resid(pos), dist + td)
            },
        )
    }
}
