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
//!
//! A table that will take no more slots, or only a few (a time segment that has passed), is
//! [frozen](BandTable::frozen): its `(tag, slot)` pairs grouped by the tag's top `d` bits
//! (`d` two or three below `log2` of the slots) behind a directory of offsets, each entry
//! four bytes: the tag's next bits down to its lowest three, over the slot — about 5 bytes a
//! slot instead of 16. A lookup gives the slots of every tag that agrees with its own but in
//! those three low bits ([`UNKEPT_TAG_BITS`]): about `8 n / 2³²` more per lookup among `n`
//! distinct tags, dropped by the same check. Slots added afterwards go into a growing part as
//! before, searched after the frozen one.

/// The `next` link (and head) of no slot.
const NONE: u32 = u32::MAX;
/// The smallest heads array.
const MIN_CAPACITY: usize = 16;
/// Slots below which freezing a table is not done: from 2¹⁴ slots a frozen table (a
/// directory of at least 2¹² entries and 4 bytes a slot) is less than half the growing one,
/// and a lookup reads a group of entries instead of a chain of slots.
pub(crate) const MIN_FROZEN: usize = 1 << 14;

/// One band's multimap of tags to slots (see the module docs).
#[derive(Debug, Clone, Default)]
pub(crate) struct BandTable {
    /// `(tag, head slot)`; a head of [`NONE`] marks a free entry.
    heads: Vec<(u32, u32)>,
    /// Distinct tags held.
    tags: usize,
    /// Per slot from `base` on, the next (older) slot of its chain.
    next: Vec<u32>,
    /// The slots below `base`, frozen.
    frozen: Option<Box<Frozen>>,
    /// The first slot of the growing part (every slot below it is frozen).
    base: u32,
}

/// The frozen slots of a table: grouped by the tag's top `d` bits.
#[derive(Debug, Clone)]
struct Frozen {
    /// `d`, the tag bits a group stands for: two to three below `log2` of the slots, so that
    /// a group holds four to eight entries (16–32 bytes, in one cache line or two).
    d: u32,
    /// `2^d + 1` offsets into `entries`: group `g` is `dir[g]..dir[g + 1]`.
    dir: Box<[u32]>,
    /// Each entry: the tag's bits below the group's and above [`UNKEPT_TAG_BITS`], over the
    /// slot in its low `d + 3` bits (more than every slot needs). A group's entries are
    /// sorted, so by those tag bits and then by slot.
    entries: Box<[u32]>,
}

/// The tag's low bits a frozen entry does not keep: a lookup also gives the slots of tags
/// that differ from its own only there, about `8 n / 2³²` more per lookup among `n` distinct
/// tags, which the callers' check drops with the rest (see the module docs).
pub(crate) const UNKEPT_TAG_BITS: u32 = 3;

impl Frozen {
    /// Slot bits of an entry.
    fn slot_bits(&self) -> u32 {
        self.d + UNKEPT_TAG_BITS
    }

    /// The tag bits an entry keeps, in place (above the slot bits).
    fn tag_field(&self, tag: u32) -> u32 {
        // Bits `UNKEPT_TAG_BITS .. 32 − d` of the tag, moved to the top `29 − d` bits.
        let kept = 32 - self.d - UNKEPT_TAG_BITS;
        let t = (tag >> UNKEPT_TAG_BITS) & ((1u32 << kept) - 1);
        t << self.slot_bits()
    }

    /// Groups `pairs` (`tag << 32 | slot`, every slot below `pairs.len()`), sorted within each
    /// group by tag and slot.
    fn build(pairs: &[u64]) -> Frozen {
        let n = pairs.len();
        assert!(
            n < 1 << 31,
            "a band table freezes fewer than 2^31 slots ({n} given)"
        );
        let d = (usize::BITS - 1 - n.max(1).leading_zeros())
            .saturating_sub(2)
            .clamp(12, 28);
        let groups = 1usize << d;
        let mut dir = vec![0u32; groups + 1];
        let group = |p: u64| (p >> (64 - d)) as usize;
        for &p in pairs {
            dir[group(p) + 1] += 1;
        }
        for g in 0..groups {
            dir[g + 1] += dir[g];
        }
        let mut frozen = Frozen {
            d,
            dir: dir.into_boxed_slice(),
            entries: Box::new([]),
        };
        let mut fill: Vec<u32> = frozen.dir[..groups].to_vec();
        let mut entries = vec![0u32; n];
        for &p in pairs {
            let slot = p as u32;
            debug_assert!((slot as usize) < n, "slot {slot} of {n}");
            let g = group(p);
            entries[fill[g] as usize] = frozen.tag_field((p >> 32) as u32) | slot;
            fill[g] += 1;
        }
        drop(fill);
        for g in 0..groups {
            let group = &mut entries[frozen.dir[g] as usize..frozen.dir[g + 1] as usize];
            if group.len() > 1 {
                group.sort_unstable();
            }
        }
        frozen.entries = entries.into_boxed_slice();
        frozen
    }

    fn group(&self, tag: u32) -> std::ops::Range<usize> {
        let g = (tag >> (32 - self.d)) as usize;
        self.dir[g] as usize..self.dir[g + 1] as usize
    }

    fn for_each(&self, tag: u32, f: &mut impl FnMut(u32)) {
        let want = self.tag_field(tag);
        let slots = (1u32 << self.slot_bits()) - 1;
        for &e in &self.entries[self.group(tag)] {
            if e & !slots == want {
                f(e & slots);
            }
        }
    }

    /// Every `(tag, slot)` it holds, as `tag << 32 | slot`, the tag's unkept low bits zero.
    fn pairs(&self, out: &mut Vec<u64>) {
        let sb = self.slot_bits();
        let slots = (1u32 << sb) - 1;
        for g in 0..self.dir.len() - 1 {
            let hi = (g as u32) << (32 - self.d);
            for &e in &self.entries[self.dir[g] as usize..self.dir[g + 1] as usize] {
                let tag = hi | (e >> sb) << UNKEPT_TAG_BITS;
                out.push((tag as u64) << 32 | (e & slots) as u64);
            }
        }
    }

    fn heap_bytes(&self) -> usize {
        self.dir.len() * 4 + self.entries.len() * 4
    }
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
        debug_assert!(
            slot >= self.base,
            "slot {slot} is below the frozen part's end"
        );
        if (self.tags + 1) * 4 > self.heads.len() * 3 {
            self.grow();
        }
        let t = tag(key);
        let s = (slot - self.base) as usize;
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

    /// Prefetches the heads entry where an insert or a lookup of `key` starts (and the
    /// frozen part's directory entry), so that the bands of a signature can wait for memory
    /// together.
    pub(crate) fn prefetch(&self, key: u64) {
        if let Some(f) = &self.frozen {
            neardup_index::prefetch(
                f.dir
                    .as_ptr()
                    .wrapping_add((tag(key) >> (32 - f.d)) as usize),
            );
        }
        let cap = self.heads.len();
        if cap > 0 {
            neardup_index::prefetch(self.heads.as_ptr().wrapping_add(home(tag(key), cap)));
        }
    }

    /// Prefetches the frozen entries a lookup of `key` reads (after [`BandTable::prefetch`]:
    /// this reads the directory entry).
    pub(crate) fn prefetch_entries(&self, key: u64) {
        if let Some(f) = &self.frozen {
            let start = f.dir[(tag(key) >> (32 - f.d)) as usize] as usize;
            neardup_index::prefetch(f.entries.as_ptr().wrapping_add(start));
        }
    }

    /// Calls `f` with every slot whose key has `key`'s tag: the frozen ones in ascending order,
    /// then the others newest first.
    pub(crate) fn for_each(&self, key: u64, mut f: impl FnMut(u32)) {
        let t = tag(key);
        if let Some(fz) = &self.frozen {
            fz.for_each(t, &mut f);
        }
        let cap = self.heads.len();
        if cap == 0 {
            return;
        }
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
                    cur = self.next[(cur - self.base) as usize];
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
        // The first insert after a freeze sizes the growing part for an eighth of the frozen
        // slots (when the table is frozen again), so that the inserts until then do not
        // rehash every quarter (each a pause of every band at once); a table that takes no
        // more inserts (a past segment) never allocates it.
        let after_freeze = match &self.frozen {
            Some(f) if self.heads.is_empty() => f.entries.len() / 8 * 5 / 3,
            _ => 0,
        };
        self.rehash(
            (self.heads.len() + self.heads.len() / 4)
                .max(MIN_CAPACITY)
                .max(after_freeze),
        );
        self.next.reserve(after_freeze * 3 / 5);
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

    /// Slots added since the table was last frozen (all of them if it never was).
    pub(crate) fn unfrozen(&self) -> usize {
        self.next.len()
    }

    /// The same table with every slot frozen (see the module docs; it pays from
    /// [`MIN_FROZEN`] slots). Built from `&self`, so that a reader can go on searching this one
    /// meanwhile.
    pub(crate) fn frozen(&self) -> BandTable {
        let total = self.base as usize + self.next.len();
        let mut pairs = Vec::with_capacity(total);
        if let Some(f) = &self.frozen {
            f.pairs(&mut pairs);
        }
        for &(t, head) in &self.heads {
            let mut cur = head;
            while cur != NONE {
                pairs.push((t as u64) << 32 | cur as u64);
                cur = self.next[(cur - self.base) as usize];
            }
        }
        BandTable::frozen_from(&pairs, total)
    }

    /// A frozen table of `pairs` (`tag << 32 | slot`, in any order), which hold every slot
    /// below `slots` once: a restart's table, built from its documents' band keys at once.
    pub(crate) fn frozen_from(pairs: &[u64], slots: usize) -> BandTable {
        debug_assert_eq!(pairs.len(), slots);
        BandTable {
            heads: Vec::new(),
            tags: 0,
            next: Vec::new(),
            frozen: Some(Box::new(Frozen::build(pairs))),
            base: slots as u32,
        }
    }

    /// Whether it holds no slot.
    pub(crate) fn is_empty(&self) -> bool {
        self.base == 0 && self.next.is_empty()
    }

    /// Heap bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.heads.capacity() * 8
            + self.next.capacity() * 4
            + self.frozen.as_ref().map_or(0, |f| f.heap_bytes())
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

        /// Frozen any number of times between inserts, a table gives the same slots as a map
        /// of tags: the slots of the tag itself and of the tags that differ from it only in
        /// the [`UNKEPT_TAG_BITS`] low bits once any of them was frozen; tags that differ in
        /// any bit above (inside or below the directory's bits) are told apart.
        #[test]
        fn frozen_lookups_equal_a_map_of_tags(
            keys in proptest::collection::vec((0u32..4, 0u32..4, 0u32..4, 0u32..12, 0u8..24), 0..300),
            probes in proptest::collection::vec((0u32..4, 0u32..4, 0u32..4, 0u32..12), 0..40),
        ) {
            // Tags varying in their top bits, their middle bits, just above the unkept bits,
            // and in the unkept bits.
            let key = |(a, b, c, e): (u32, u32, u32, u32)| {
                let t = a << 30 | b << 18 | c << UNKEPT_TAG_BITS | (e % (1 << UNKEPT_TAG_BITS));
                (t as u64) << 32 | 0xABCD
            };
            let coarse = |k: u64| tag(k) >> UNKEPT_TAG_BITS;
            let mut table = BandTable::default();
            // Slots by their full tag while growing, by their coarse tag once frozen.
            let mut growing: HashMap<u32, Vec<u32>> = HashMap::new();
            let mut frozen: HashMap<u32, Vec<u32>> = HashMap::new();
            for (slot, &(a, b, c, e, freeze)) in keys.iter().enumerate() {
                let k = key((a, b, c, e));
                table.insert(k, slot as u32);
                growing.entry(tag(k)).or_default().push(slot as u32);
                // Now and then (each freeze walks a directory of at least 2¹² groups).
                if freeze == 0 {
                    table = table.frozen();
                    for (t, slots) in growing.drain() {
                        frozen.entry(t >> UNKEPT_TAG_BITS).or_default().extend(slots);
                    }
                }
            }
            let all = keys.iter().map(|&(a, b, c, e, _)| (a, b, c, e));
            for p in probes.iter().copied().chain(all) {
                let mut got = Vec::new();
                table.for_each(key(p), |s| got.push(s));
                got.sort_unstable();
                let mut want = frozen.get(&coarse(key(p))).cloned().unwrap_or_default();
                want.extend(growing.get(&tag(key(p))).into_iter().flatten());
                want.sort_unstable();
                prop_assert_eq!(got, want);
            }
        }
    }

    /// A table past [`MIN_FROZEN`] slots is frozen into fewer bytes, finds every slot, and
    /// takes more slots after it.
    #[test]
    fn large_tables_freeze_into_fewer_bytes() {
        let key = |i: u64| crate::hash::xxh3_seeded(&i.to_le_bytes(), 9);
        let n = MIN_FROZEN as u64 + 1000;
        let mut table = BandTable::default();
        for i in 0..n {
            table.insert(key(i), i as u32);
        }
        let before = table.heap_bytes();
        let mut frozen = table.frozen();
        assert!(frozen.frozen.is_some() && frozen.unfrozen() == 0);
        assert!(
            frozen.heap_bytes() * 2 < before,
            "{} against {before} bytes",
            frozen.heap_bytes()
        );
        for i in n..n + 100 {
            frozen.insert(key(i), i as u32);
        }
        // Each lookup finds its slot, and besides it only slots whose tag agrees above the
        // unkept bits: a few in all.
        let coarse = |k: u64| tag(k) >> UNKEPT_TAG_BITS;
        let mut others = 0;
        for i in (0..n + 100).step_by(11) {
            let mut got = Vec::new();
            frozen.for_each(key(i), |s| got.push(s));
            assert!(got.contains(&(i as u32)), "slot {i}: {got:?}");
            for &s in got.iter().filter(|&&s| s != i as u32) {
                assert_eq!(coarse(key(s as u64)), coarse(key(i)), "slot {i}: {s}");
                others += 1;
            }
        }
        assert!(others < 30, "{others} slots of other tags");
    }

    /// After a freeze the first insert sizes the growing part for an eighth of the frozen
    /// slots, so that the inserts until the next freeze (the current segment's) never rehash;
    /// a frozen table that takes no insert allocates none.
    #[test]
    fn inserts_after_a_freeze_do_not_rehash_until_the_next() {
        let key = |i: u64| crate::hash::xxh3_seeded(&i.to_le_bytes(), 7);
        let n = MIN_FROZEN as u64;
        let mut table = BandTable::default();
        for i in 0..n {
            table.insert(key(i), i as u32);
        }
        let mut frozen = table.frozen();
        assert!(
            frozen.heads.is_empty(),
            "a frozen table holds no growing part"
        );
        frozen.insert(key(n), n as u32);
        let cap = frozen.heads.len();
        assert!(cap >= MIN_FROZEN / 8, "{cap}");
        for i in n + 1..n + n / 8 {
            frozen.insert(key(i), i as u32);
        }
        assert_eq!(frozen.heads.len(), cap, "no rehash before an eighth more");
        for i in (0..n + n / 8).step_by(13) {
            let mut got = Vec::new();
            frozen.for_each(key(i), |s| got.push(s));
            assert!(got.contains(&(i as u32)), "slot {i} lost");
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
