//! One LSH band's table: band key → the slots stored under it, in about 16 bytes a slot.
//!
//! A head per distinct key and a `next` link per slot, like [`crate::exact`]'s chains, but the
//! heads are an open-addressed array of `(tag, head)` pairs — 8 bytes, against a general hash
//! map's 17 and its slack — where the tag is the key's high 32 bits. The array grows by a
//! quarter (its load stays between 0.6 and 0.75), and a key's home is its tag scaled to the
//! capacity, so growing never needs the keys again.
//!
//! Two keys that share their high 32 bits share a chain: a lookup gives every slot whose key
//! has the looked-up tag — the slots of the key itself, and, with probability about
//! `n / 2³²` per lookup in a table of `n` distinct keys, those of another key. Callers that
//! keep the signatures check the band ([`crate::minhash::MinHashLsh::candidates_where`]).

/// The `next` link (and head) of no slot.
const NONE: u32 = u32::MAX;
/// The smallest heads array.
const MIN_CAPACITY: usize = 16;

/// One band's multimap of tags to slots (see the module docs).
#[derive(Debug, Clone, Default)]
pub(crate) struct BandTable {
    /// `(tag, head slot)`; a head of [`NONE`] marks a free entry.
    heads: Vec<(u32, u32)>,
    /// Distinct tags held.
    tags: usize,
    /// Per slot, the next (older) slot of its chain.
    next: Vec<u32>,
}

/// The tag of a band key.
fn tag(key: u64) -> u32 {
    (key >> 32) as u32
}

/// The home of `tag` in `capacity` entries: the tag scaled to the capacity (order-preserving,
/// so every capacity spreads uniform tags uniformly).
fn home(tag: u32, capacity: usize) -> usize {
    ((tag as u64 * capacity as u64) >> 32) as usize
}

impl BandTable {
    /// Adds `slot` under `key`. Slots are dense numbers below `u32::MAX`, each added once.
    pub(crate) fn insert(&mut self, key: u64, slot: u32) {
        debug_assert_ne!(slot, NONE);
        if (self.tags + 1) * 4 > self.heads.len() * 3 {
            self.grow();
        }
        let t = tag(key);
        let s = slot as usize;
        if self.next.len() <= s {
            // Doubling: the capacity beyond the length is never touched, so it is address
            // space, not resident memory (growing by an eighth measured no smaller, and
            // slower: the allocator keeps the blocks it gave up).
            self.next.resize(s + 1, NONE);
        }
        let cap = self.heads.len();
        let mut i = home(t, cap);
        loop {
            let (et, head) = self.heads[i];
            if head == NONE {
                self.heads[i] = (t, slot);
                self.tags += 1;
                self.next[s] = NONE;
                return;
            }
            if et == t {
                self.heads[i].1 = slot;
                self.next[s] = head;
                return;
            }
            i = if i + 1 == cap { 0 } else { i + 1 };
        }
    }

    /// Prefetches the heads entry where an insert or a lookup of `key` starts, so that the
    /// bands of a signature can wait for memory together.
    pub(crate) fn prefetch(&self, key: u64) {
        let cap = self.heads.len();
        if cap > 0 {
            neardup_index::prefetch(self.heads.as_ptr().wrapping_add(home(tag(key), cap)));
        }
    }

    /// Calls `f` with every slot whose key has `key`'s tag, newest first.
    pub(crate) fn for_each(&self, key: u64, mut f: impl FnMut(u32)) {
        let cap = self.heads.len();
        if cap == 0 {
            return;
        }
        let t = tag(key);
        let mut i = home(t, cap);
        loop {
            let (et, head) = self.heads[i];
            if head == NONE {
                return;
            }
            if et == t {
                let mut cur = head;
                while cur != NONE {
                    f(cur);
                    cur = self.next[cur as usize];
                }
                return;
            }
            i = if i + 1 == cap { 0 } else { i + 1 };
        }
    }

    /// Makes room for `more` slots under as many new keys, so that they go in without growing
    /// (a restart knows how many documents a segment holds before it indexes them). The
    /// array is sized for a load of 0.6, the bottom of its range: a table filled to 0.75 would
    /// grow at the next insert and probe further until then.
    pub(crate) fn reserve(&mut self, more: usize) {
        let need = (self.tags + more) * 5 / 3 + 1;
        if need > self.heads.len() {
            self.rehash(need.max(MIN_CAPACITY));
        }
        self.next.reserve(more);
    }

    /// The heads array a quarter larger, every head placed again from its tag.
    fn grow(&mut self) {
        self.rehash((self.heads.len() + self.heads.len() / 4).max(MIN_CAPACITY));
    }

    /// The heads array at `cap` entries, every head placed again from its tag.
    fn rehash(&mut self, cap: usize) {
        let old = std::mem::replace(&mut self.heads, vec![(0, NONE); cap]);
        for (t, head) in old {
            if head == NONE {
                continue;
            }
            let mut i = home(t, cap);
            while self.heads[i].1 != NONE {
                i = if i + 1 == cap { 0 } else { i + 1 };
            }
            self.heads[i] = (t, head);
        }
    }

    /// Heap bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.heads.capacity() * 8 + self.next.capacity() * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    proptest! {
        /// Against a map of full keys: a lookup gives the key's slots, newest first, plus only
        /// slots of keys with the same tag.
        #[test]
        fn lookups_equal_a_map_of_keys(
            keys in proptest::collection::vec((0u64..6, 0u64..40), 0..400),
            probes in proptest::collection::vec((0u64..6, 0u64..40), 0..50),
        ) {
            // Few distinct high halves, so tags collide; few low halves, so keys repeat.
            let key = |(hi, lo): (u64, u64)| (hi.wrapping_mul(0x9E37_79B9_7F4A_7C15) & !0xFFFF_FFFF) | lo;
            let mut table = BandTable::default();
            let mut by_tag: HashMap<u32, Vec<u32>> = HashMap::new();
            for (slot, &k) in keys.iter().enumerate() {
                table.insert(key(k), slot as u32);
                by_tag.entry(tag(key(k))).or_default().push(slot as u32);
            }
            for &p in probes.iter().chain(&keys) {
                let mut got = Vec::new();
                table.for_each(key(p), |s| got.push(s));
                let mut want = by_tag.get(&tag(key(p))).cloned().unwrap_or_default();
                want.reverse();
                prop_assert_eq!(got, want);
            }
        }
    }

    /// Growing keeps every chain: many distinct uniform tags, far past several growths.
    #[test]
    fn growth_keeps_every_slot() {
        let mut table = BandTable::default();
        let key = |i: u64| crate::hash::xxh3_seeded(&i.to_le_bytes(), 3);
        for i in 0..50_000u64 {
            table.insert(key(i), i as u32);
        }
        for i in (0..50_000u64).step_by(7) {
            let mut got = Vec::new();
            table.for_each(key(i), |s| got.push(s));
            assert!(got.contains(&(i as u32)), "slot {i} lost");
        }
        let mut none = 0;
        table.for_each(key(1 << 40), |_| none += 1);
        assert_eq!(none, 0);
        assert!(table.tags * 4 <= table.heads.len() * 3);
    }

    /// A table reserved for its slots takes them without growing, and keeps what it held.
    #[test]
    fn reserved_tables_do_not_grow() {
        let key = |i: u64| crate::hash::xxh3_seeded(&i.to_le_bytes(), 5);
        let mut table = BandTable::default();
        for i in 0..1000u64 {
            table.insert(key(i), i as u32);
        }
        table.reserve(20_000);
        let cap = table.heads.len();
        for i in 1000..21_000u64 {
            table.insert(key(i), i as u32);
        }
        assert_eq!(table.heads.len(), cap);
        for i in (0..21_000u64).step_by(3) {
            let mut got = Vec::new();
            table.for_each(key(i), |s| got.push(s));
            assert!(got.contains(&(i as u32)), "slot {i} lost");
        }
    }
}
