//! Document records in memory: a slab of fixed-size slots addressed by 32-bit handles, their
//! ids in per-chunk byte arenas (no allocation per document), and an open-addressing id map.
//!
//! # Invariants
//! - Handle `h` lives in chunk `h / CHUNK` at position `h % CHUNK`; chunks never move.
//! - A slot's id is `chunk.ids[id_off .. id_off + id_len]`, valid UTF-8 (copied from a `&str`).
//!   A `FREE` slot has `id_len == 0`. Bytes of ids no slot refers to any more are counted in
//!   `chunk.garbage`; a chunk's arena is compacted (live ids copied into a fresh buffer, offsets
//!   rewritten) when an id is stored into it while its garbage exceeds
//!   `max(live bytes, COMPACT_MIN)`, so an arena holds at most about twice its live bytes and
//!   compaction costs amortised O(1) per stored byte. Arenas hold at most
//!   `CHUNK * MAX_ID_BYTES * 2 + COMPACT_MIN` bytes, so `u32` offsets never overflow.
//! - [`IdMap`]: each entry is `key << 32 | handle` where `key` is the high half of `xxh3(id)`;
//!   linear probing from the home bucket `key`'s top `bits` bits, no tombstones (backward-shift
//!   deletion), load at most 4/5. An id has at most one entry; entries with equal keys are told
//!   apart by comparing the slots' ids.

use super::state::FREE;
use super::{CHUNK, MAX_ID_BYTES};

/// Arena garbage below this is never compacted (compaction would cost more than it saves);
/// tiny under unit tests so that they exercise compaction.
#[cfg(not(test))]
const COMPACT_MIN: usize = 64 << 10;
#[cfg(test)]
const COMPACT_MIN: usize = 64;

/// One document record (24 bytes).
pub(super) struct Slot {
    pub fp: u64,
    pub ts: i64,
    id_off: u32,
    id_len: u16,
    pub state: u8,
}

const _: () = assert!(std::mem::size_of::<Slot>() == 24);
const _: () = assert!((CHUNK * MAX_ID_BYTES * 2 + COMPACT_MIN) < u32::MAX as usize);

/// `CHUNK` slots and the arena holding their ids.
#[derive(Default)]
pub(super) struct Chunk {
    slots: Vec<Slot>,
    ids: Vec<u8>,
    garbage: usize,
}

impl Chunk {
    /// An empty chunk with room for `slots` slots and `id_bytes` id bytes.
    pub fn with_capacity(slots: usize, id_bytes: usize) -> Chunk {
        Chunk {
            slots: Vec::with_capacity(slots),
            ids: Vec::with_capacity(id_bytes),
            garbage: 0,
        }
    }

    /// Appends a live slot (bulk loading; the chunk must not be full).
    pub fn push(&mut self, fp: u64, ts: i64, id: &str, state: u8) {
        debug_assert!(self.slots.len() < CHUNK);
        let (id_off, id_len) = self.put_id(id);
        self.slots.push(Slot {
            fp,
            ts,
            id_off,
            id_len,
            state,
        });
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    #[inline]
    fn id(&self, s: &Slot) -> &str {
        let b = &self.ids[s.id_off as usize..s.id_off as usize + s.id_len as usize];
        // SAFETY: the bytes were copied from a `&str` by `put_id` (or moved intact by
        // `compact`), and a slot's range never changes while it refers to them.
        unsafe { std::str::from_utf8_unchecked(b) }
    }

    /// Copies `id` into the arena (compacting it first if it is mostly garbage).
    fn put_id(&mut self, id: &str) -> (u32, u16) {
        debug_assert!(id.len() <= MAX_ID_BYTES);
        if self.garbage > COMPACT_MIN.max(self.ids.len() - self.garbage) {
            self.compact();
        }
        let off = self.ids.len() as u32;
        self.ids.extend_from_slice(id.as_bytes());
        (off, id.len() as u16)
    }

    /// Drops the arena's garbage: the ids of non-free slots move to a fresh buffer.
    fn compact(&mut self) {
        let mut ids = Vec::with_capacity(self.ids.len() - self.garbage + COMPACT_MIN);
        for s in &mut self.slots {
            if s.state != FREE {
                let start = s.id_off as usize;
                let off = ids.len() as u32;
                ids.extend_from_slice(&self.ids[start..start + s.id_len as usize]);
                s.id_off = off;
            }
        }
        self.ids = ids;
        self.garbage = 0;
    }

    fn heap_bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<Slot>() + self.ids.capacity()
    }
}

/// The slots of all documents, live or not.
#[derive(Default)]
pub(super) struct Slab {
    pub chunks: Vec<Chunk>,
    pub len: usize,
}

impl Slab {
    /// A slab made of full chunks (all but the last) from bulk loading.
    pub fn from_chunks(chunks: Vec<Chunk>) -> Slab {
        debug_assert!(chunks.iter().rev().skip(1).all(|c| c.len() == CHUNK));
        let len = chunks.iter().map(Chunk::len).sum();
        Slab { chunks, len }
    }

    #[inline]
    pub fn get(&self, h: u32) -> &Slot {
        let h = h as usize;
        &self.chunks[h / CHUNK].slots[h % CHUNK]
    }

    #[inline]
    pub fn get_mut(&mut self, h: u32) -> &mut Slot {
        let h = h as usize;
        &mut self.chunks[h / CHUNK].slots[h % CHUNK]
    }

    /// The id of slot `h`.
    #[inline]
    pub fn id(&self, h: u32) -> &str {
        let h = h as usize;
        let c = &self.chunks[h / CHUNK];
        c.id(&c.slots[h % CHUNK])
    }

    /// Appends a live slot; returns its handle.
    pub fn push(&mut self, fp: u64, ts: i64, id: &str, state: u8) -> u32 {
        if self.len.is_multiple_of(CHUNK) {
            self.chunks.push(Chunk::with_capacity(CHUNK, 0));
        }
        self.chunks
            .last_mut()
            .expect("chunk")
            .push(fp, ts, id, state);
        self.len += 1;
        (self.len - 1) as u32
    }

    /// Reuses the free slot `h` for a new record.
    pub fn set(&mut self, h: u32, fp: u64, ts: i64, id: &str, state: u8) {
        let h = h as usize;
        let c = &mut self.chunks[h / CHUNK];
        debug_assert!(c.slots[h % CHUNK].state == FREE);
        let (id_off, id_len) = c.put_id(id);
        c.slots[h % CHUNK] = Slot {
            fp,
            ts,
            id_off,
            id_len,
            state,
        };
    }

    /// Marks slot `h` free; its id bytes become garbage.
    pub fn free(&mut self, h: u32) {
        let h = h as usize;
        let c = &mut self.chunks[h / CHUNK];
        let s = &mut c.slots[h % CHUNK];
        c.garbage += s.id_len as usize;
        s.id_len = 0;
        s.id_off = 0;
        s.state = FREE;
    }

    /// Heap bytes of slots and ids.
    pub fn heap_bytes(&self) -> usize {
        self.chunks.iter().map(Chunk::heap_bytes).sum::<usize>()
            + self.chunks.capacity() * std::mem::size_of::<Chunk>()
    }
}

const EMPTY: u64 = u64::MAX;

/// The map key of an id hash.
#[inline]
pub(super) fn id_key(hash: u64) -> u32 {
    (hash >> 32) as u32
}

/// id → handle, as an open-addressing table of `key << 32 | handle` (see the module docs).
pub(super) struct IdMap {
    table: Vec<u64>,
    bits: u32,
    len: usize,
}

impl Default for IdMap {
    fn default() -> Self {
        IdMap::with_capacity(0)
    }
}

impl IdMap {
    /// A map holding up to `n` entries without growing.
    pub fn with_capacity(n: usize) -> IdMap {
        let bits = (n.saturating_mul(5) / 4 + 1)
            .next_power_of_two()
            .trailing_zeros()
            .clamp(4, 32);
        IdMap {
            table: neardup_index::huge_vec(1 << bits, EMPTY),
            bits,
            len: 0,
        }
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn heap_bytes(&self) -> usize {
        self.table.capacity() * 8
    }

    #[inline]
    fn home(&self, key: u32) -> usize {
        ((u64::from(key) << self.bits) >> 32) as usize
    }

    #[inline]
    fn mask(&self) -> usize {
        self.table.len() - 1
    }

    /// Position of the entry with `key` whose handle satisfies `is`.
    #[inline]
    pub fn find(&self, key: u32, mut is: impl FnMut(u32) -> bool) -> Option<usize> {
        let mut i = self.home(key);
        loop {
            let e = self.table[i];
            if e == EMPTY {
                return None;
            }
            if (e >> 32) as u32 == key && is(e as u32) {
                return Some(i);
            }
            i = (i + 1) & self.mask();
        }
    }

    /// Prefetches the slot where a [`find`](Self::find) of `key` starts.
    #[inline]
    pub fn prefetch(&self, key: u32) {
        neardup_index::prefetch(self.table.as_ptr().wrapping_add(self.home(key)));
    }

    /// The handle at position `pos` (from [`find`](Self::find)).
    #[inline]
    pub fn handle_at(&self, pos: usize) -> u32 {
        self.table[pos] as u32
    }

    /// Points the entry at `pos` to another handle (same id).
    pub fn set_at(&mut self, pos: usize, handle: u32) {
        self.table[pos] = (self.table[pos] & !0xffff_ffff) | u64::from(handle);
    }

    /// Adds an entry (the caller has checked that its id has none).
    pub fn insert(&mut self, key: u32, handle: u32) {
        if (self.len + 1) * 5 > self.table.len() * 4 {
            self.grow();
        }
        self.place(u64::from(key) << 32 | u64::from(handle));
        self.len += 1;
    }

    fn place(&mut self, e: u64) {
        let mut i = self.home((e >> 32) as u32);
        while self.table[i] != EMPTY {
            i = (i + 1) & self.mask();
        }
        self.table[i] = e;
    }

    fn grow(&mut self) {
        let old = std::mem::replace(
            &mut self.table,
            neardup_index::huge_vec(1 << (self.bits + 1), EMPTY),
        );
        self.bits += 1;
        // Doubling keeps the old order roughly sorted by the new home: writes move forward
        // through the new table (cache friendly).
        for e in old {
            if e != EMPTY {
                self.place(e);
            }
        }
    }

    /// Removes the entry at `pos` (backward-shift deletion: no tombstones).
    pub fn remove_at(&mut self, pos: usize) {
        let mask = self.mask();
        let mut hole = pos;
        let mut j = pos;
        loop {
            j = (j + 1) & mask;
            let e = self.table[j];
            if e == EMPTY {
                break;
            }
            let h = self.home((e >> 32) as u32);
            // `e` may move into the hole unless its home lies cyclically in (hole, j].
            let stays = if hole <= j {
                hole < h && h <= j
            } else {
                hole < h || h <= j
            };
            if !stays {
                self.table[hole] = e;
                hole = j;
            }
        }
        self.table[hole] = EMPTY;
        self.len -= 1;
    }

    /// Bulk insertion of the keys in `parts` (`key << 32 | handle`). They are first grouped by
    /// the top bits of their home bucket (one counting-sort pass), so that the insertions walk
    /// the table instead of jumping around it. `same(old, new)` tells whether two handles with
    /// equal keys have the same id; `pick(old, new)` then returns the one to keep, and the
    /// other is passed to `lost`.
    pub fn insert_bulk(
        &mut self,
        parts: Vec<Vec<u64>>,
        mut same: impl FnMut(u32, u32) -> bool,
        mut pick: impl FnMut(u32, u32) -> u32,
        mut lost: impl FnMut(u32),
    ) {
        let total: usize = parts.iter().map(Vec::len).sum();
        while (self.len + total) * 5 > self.table.len() * 4 {
            self.grow();
        }
        let pbits = self.bits.min(12);
        let group = |k: u64| ((k >> 32) as usize) >> (32 - pbits);
        let mut starts = vec![0usize; (1 << pbits) + 1];
        for p in &parts {
            for &k in p {
                starts[group(k) + 1] += 1;
            }
        }
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        let mut sorted = vec![0u64; total];
        for p in parts {
            for k in p {
                let g = &mut starts[group(k)];
                sorted[*g] = k;
                *g += 1;
            }
        }
        for k in sorted {
            let (key, h) = ((k >> 32) as u32, k as u32);
            match self.find(key, |o| same(o, h)) {
                Some(pos) => {
                    let o = self.handle_at(pos);
                    let keep = pick(o, h);
                    self.set_at(pos, keep);
                    lost(if keep == o { h } else { o });
                }
                None => {
                    self.place(k);
                    self.len += 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        /// The id map against a `HashMap`, with few distinct keys (many equal-key entries and
        /// long probe runs) and many removals.
        #[test]
        fn id_map_matches_hashmap(ops in prop::collection::vec((0u32..40, 0u32..8, any::<bool>()), 1..400)) {
            // id = (key, tag): equal keys, different ids.
            let mut m = IdMap::with_capacity(0);
            let mut ids: Vec<(u32, u32)> = Vec::new(); // handle -> id
            let mut model: HashMap<(u32, u32), u32> = HashMap::new();
            for (key, tag, ins) in ops {
                let key = key.wrapping_mul(0x9e37_79b9) >> 3 << 3; // clustered keys
                let found = m.find(key, |h| ids[h as usize] == (key, tag));
                prop_assert_eq!(found.map(|p| m.handle_at(p)), model.get(&(key, tag)).copied());
                if ins {
                    let h = ids.len() as u32;
                    ids.push((key, tag));
                    match found {
                        Some(p) => m.set_at(p, h),
                        None => m.insert(key, h),
                    }
                    model.insert((key, tag), h);
                } else if let Some(p) = found {
                    m.remove_at(p);
                    model.remove(&(key, tag));
                }
                prop_assert_eq!(m.len(), model.len());
            }
            for (&(key, tag), &h) in &model {
                let p = m.find(key, |x| ids[x as usize] == (key, tag));
                prop_assert_eq!(p.map(|p| m.handle_at(p)), Some(h));
            }
        }

        /// Arena ids survive reuse of free slots and compaction.
        #[test]
        fn arena_keeps_ids(ops in prop::collection::vec((0usize..300, 0usize..40), 1..600)) {
            let mut slab = Slab::default();
            let mut model: Vec<Option<String>> = Vec::new();
            let mut free: Vec<u32> = Vec::new();
            for (i, (pick, len)) in ops.into_iter().enumerate() {
                if pick % 3 == 0 && !model.is_empty() {
                    let h = pick % model.len();
                    if model[h].is_some() {
                        slab.free(h as u32);
                        model[h] = None;
                        free.push(h as u32);
                    }
                } else {
                    let id: String = format!("{i}-").repeat(len / 3 + 1);
                    let h = match free.pop() {
                        Some(h) => { slab.set(h, 1, 2, &id, super::super::LIVE); h }
                        None => slab.push(1, 2, &id, super::super::LIVE),
                    };
                    if model.len() <= h as usize { model.resize(h as usize + 1, None); }
                    model[h as usize] = Some(id);
                }
                for (h, m) in model.iter().enumerate() {
                    prop_assert_eq!(slab.id(h as u32), m.as_deref().unwrap_or(""));
                }
                let c = &slab.chunks[0];
                prop_assert!(c.ids.len() <= 2 * (c.ids.len() - c.garbage) + COMPACT_MIN + MAX_ID_BYTES);
            }
        }
    }
}
