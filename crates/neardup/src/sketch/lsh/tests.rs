//! The LSH index against its definitions: candidates, ranking, freezing.
use super::*;

/// Two band keys that share their high 32 bits share a table's chain: `candidates` may give
/// both, `candidates_where` only the slot whose key agrees.
#[test]
fn candidates_where_drops_keys_that_share_only_their_high_bits() {
    let lsh = |keys: &[[u64; 2]]| {
        let mut l = MinHashLsh::new(
            8,
            &LshOptions {
                params: Some((2, 4)),
                ..LshOptions::default()
            },
        )
        .unwrap();
        for k in keys {
            l.insert_keys(k);
        }
        l
    };
    let hi = 0xABCD_0123u64 << 32;
    let [k10, k20, k30, k40, k99] = [10u64, 20, 30, 40, 99].map(|k| k << 32);
    let stored = [[hi | 1, k10], [hi | 2, k20], [k30, k40]];
    let l = lsh(&stored);
    let query = [hi | 2, k99];
    assert_eq!(l.candidates(&query), vec![0, 1]);
    let key_of = |slot: u32, band: usize| stored[slot as usize][band];
    assert_eq!(l.candidates_where(&query, key_of), vec![1]);
    // A slot is kept when any of its bands agrees.
    assert_eq!(l.candidates_where(&[hi | 7, k40], key_of), vec![2]);
    assert_eq!(l.candidates_where(&[hi | 1, k20], key_of), vec![0, 1]);
}

proptest::proptest! {
    /// A band's key is XXH3-64 of its rows as little-endian bytes, seeded by the band (the
    /// spec), however its rows lie in memory.
    #[test]
    fn band_key_is_the_hash_of_the_rows_little_endian_bytes(
        sig in proptest::collection::vec(proptest::prelude::any::<u32>(), 1..140),
        rows in 1usize..40,
    ) {
        let rows = rows.min(sig.len());
        for band in 0..sig.len() / rows {
            let part = &sig[band * rows..(band + 1) * rows];
            let bytes: Vec<u8> = part.iter().flat_map(|v| v.to_le_bytes()).collect();
            proptest::prop_assert_eq!(
                band_key(&sig, band, rows),
                crate::hash::xxh3_seeded(&bytes, band as u64)
            );
        }
    }

    /// `candidates_at_most` is `candidates` when there are at most `max`; otherwise the
    /// `max` slots sharing the most bands (of equally many, the earliest), ascending —
    /// against counting every slot's shared bands by brute force.
    #[test]
    fn candidates_at_most_keeps_the_slots_sharing_most_bands(
        stored in proptest::collection::vec(proptest::collection::vec(0u64..4, 4), 1..60),
        query in proptest::collection::vec(0u64..4, 4),
        max in 1usize..20,
    ) {
        let mut l = MinHashLsh::new(
            8,
            &LshOptions { params: Some((4, 2)), ..LshOptions::default() },
        )
        .unwrap();
        // Keys are per band; distinct high bits so tags never collide.
        let key = |band: usize, v: u64| (v + 1) << 40 | (band as u64) << 32 | 7;
        for doc in &stored {
            let keys: Vec<u64> = doc.iter().enumerate().map(|(b, &v)| key(b, v)).collect();
            l.insert_keys(&keys);
        }
        let q: Vec<u64> = query.iter().enumerate().map(|(b, &v)| key(b, v)).collect();
        let mut shared: Vec<(usize, u32)> = stored
            .iter()
            .enumerate()
            .map(|(slot, doc)| {
                (doc.iter().zip(&query).filter(|(a, b)| a == b).count(), slot as u32)
            })
            .filter(|&(n, _)| n > 0)
            .collect();
        let all: Vec<u32> = shared.iter().map(|&(_, s)| s).collect();
        proptest::prop_assert_eq!(l.candidates(&q), all.clone());
        shared.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut want: Vec<u32> = shared.iter().take(max).map(|&(_, s)| s).collect();
        want.sort_unstable();
        proptest::prop_assert_eq!(l.candidates_at_most(&q, max), want);
    }
}

/// Tables deferred and then built at once (a restart's bulk load) give the candidates of
/// tables built one slot at a time: built frozen past `MIN_FROZEN` slots, growing below,
/// and taking slots one by one afterwards either way.
#[test]
fn deferred_tables_give_the_candidates_of_tables_built_slot_by_slot() {
    // Document i shares its band-b key with document i / 3 on every third band.
    let keys = |i: u64| -> Vec<u64> {
        (0..18u64)
            .map(|b| {
                let j = if b % 3 == 0 { i / 3 } else { i };
                crate::hash::xxh3_seeded(&j.to_le_bytes(), b)
            })
            .collect()
    };
    let opts = LshOptions {
        params: Some((18, 7)),
        ..LshOptions::default()
    };
    for n in [1000u64, MIN_FROZEN as u64 + 500] {
        let mut direct = MinHashLsh::new(128, &opts).unwrap();
        let mut deferred = MinHashLsh::new(128, &opts).unwrap();
        deferred.defer_tables();
        deferred.reserve(n as usize);
        for i in 0..n {
            assert_eq!(direct.insert_keys(&keys(i)), deferred.insert_keys(&keys(i)));
        }
        deferred.finish_deferred();
        let frozen = deferred.tables.iter().all(|t| t.unfrozen() == 0);
        assert_eq!(frozen, n as usize >= MIN_FROZEN, "n = {n}");
        for i in n..n + 10 {
            direct.insert_keys(&keys(i));
            deferred.insert_keys(&keys(i));
        }
        // Candidates checked against their band keys (a frozen table keeps fewer bits of
        // each tag, so unchecked ones may differ).
        let key_of = |slot: u32, band: usize| keys(slot as u64)[band];
        for i in (0..n + 10).step_by(97).chain([n + 20]) {
            let q = keys(i);
            let found = deferred.candidates_where(&q, key_of);
            assert_eq!(found, direct.candidates_where(&q, key_of), "document {i}");
            assert!(i > n + 10 || found.contains(&(i as u32)));
        }
    }
}

/// A growing index (batch dedup's) freezes from `MIN_FROZEN` slots, then again only once
/// an eighth more came, and finds the same candidates frozen as growing.
#[test]
fn a_growing_index_freezes_again_after_an_eighth_more() {
    let opts = LshOptions {
        params: Some((4, 2)),
        ..LshOptions::default()
    };
    // Document i shares its band keys with document i / 5.
    let keys = |i: u64| -> Vec<u64> {
        (0..4)
            .map(|b| crate::hash::xxh3_seeded(&(i / 5).to_le_bytes(), b))
            .collect()
    };
    let mut l = MinHashLsh::new(8, &opts).unwrap();
    let mut freezes = Vec::new();
    let n = MIN_FROZEN as u64 * 3 / 2;
    for i in 0..n {
        l.insert_keys(&keys(i));
        if l.freeze_if_worth() {
            freezes.push(i + 1);
        }
    }
    assert_eq!(freezes.first(), Some(&(MIN_FROZEN as u64)), "{freezes:?}");
    for w in freezes.windows(2) {
        assert!(w[1] >= w[0] + w[0] / 8, "{freezes:?}");
    }
    assert!(freezes.len() >= 3, "{freezes:?}");
    let mut growing = MinHashLsh::new(8, &opts).unwrap();
    for i in 0..n {
        growing.insert_keys(&keys(i));
    }
    for i in (0..n).step_by(101) {
        let found = l.candidates(&keys(i));
        assert_eq!(found, growing.candidates(&keys(i)), "document {i}");
        assert_eq!(found.len(), 5, "document {i}: {found:?}");
    }
}

/// An index whose candidates are taken unchecked (`Confirm::None`) never freezes, so every
/// candidate shares a whole 32-bit tag: neither maintenance nor a restart's bulk load
/// freezes its tables.
#[test]
fn whole_tag_tables_are_never_frozen() {
    let opts = LshOptions {
        params: Some((4, 2)),
        ..LshOptions::default()
    };
    let key = |i: u64, b: u64| crate::hash::xxh3_seeded(&i.to_le_bytes(), b);
    let n = MIN_FROZEN as u64 + 10;
    let mut grown = MinHashLsh::new(8, &opts).unwrap().whole_tags();
    let mut loaded = MinHashLsh::new(8, &opts).unwrap().whole_tags();
    loaded.defer_tables();
    for i in 0..n {
        let k: Vec<u64> = (0..4).map(|b| key(i, b)).collect();
        grown.insert_keys(&k);
        loaded.insert_keys(&k);
    }
    loaded.finish_deferred();
    assert!(!grown.worth_freezing(MIN_FROZEN));
    assert!(loaded.tables.iter().all(|t| t.unfrozen() == n as usize));
    // The same index without `whole_tags` freezes.
    let mut plain = MinHashLsh::new(8, &opts).unwrap();
    for i in 0..n {
        plain.insert_keys(&(0..4).map(|b| key(i, b)).collect::<Vec<_>>());
    }
    assert!(plain.worth_freezing(MIN_FROZEN));
}

/// Slots inserted while the tables are shared to be frozen are kept aside without copying
/// a table, found all the same, and put into the frozen tables with them; a clone of the
/// index inserts into its tables as before.
#[test]
fn slots_inserted_while_the_tables_are_shared_are_found_without_a_copy() {
    let keys = |i: u64| -> Vec<u64> {
        (0..18u64)
            .map(|b| crate::hash::xxh3_seeded(&(i / 2).to_le_bytes(), b ^ ((i & 1) * (b % 2))))
            .collect()
    };
    let opts = LshOptions {
        params: Some((18, 7)),
        ..LshOptions::default()
    };
    let mut direct = MinHashLsh::new(128, &opts).unwrap();
    let mut l = MinHashLsh::new(128, &opts).unwrap();
    for i in 0..500 {
        direct.insert_keys(&keys(i));
        l.insert_keys(&keys(i));
    }
    let mut shared = l.share_tables();
    let table = Arc::as_ptr(&l.tables[0]);
    for i in 500..510 {
        direct.insert_keys(&keys(i));
        l.insert_keys(&keys(i));
    }
    assert_eq!(
        Arc::as_ptr(&l.tables[0]),
        table,
        "a shared table was copied"
    );
    assert_eq!(l.late.len(), 10);
    let same = |l: &MinHashLsh| {
        for i in (0..515).step_by(7) {
            assert_eq!(l.candidates(&keys(i)), direct.candidates(&keys(i)), "{i}");
            let at_most = |l: &MinHashLsh| l.candidates_at_most(&keys(i), 3);
            assert_eq!(at_most(l), at_most(&direct), "{i}");
        }
    };
    same(&l);
    // A clone's tables are not being frozen: its next insert puts the late slots in them.
    let mut clone = l.clone();
    clone.insert_keys(&keys(600));
    assert!(clone.late.is_empty());
    assert!(clone.candidates(&keys(505)).contains(&505));
    shared.freeze();
    drop(l.put_frozen(shared));
    assert!(l.late.is_empty());
    same(&l);
}
