//! The lean index against brute force: every distance up to 3, halves that agree exactly or by
//! one bit, crowded slots and tags, duplicate entries, every directory size.
use neardup_index::random::{flip_bits, SplitMix64};
use neardup_index::{linear_search, Error, LeanIndex, LEAN_MAX_DISTANCE};
use proptest::prelude::*;
use std::ops::ControlFlow;

/// Entries around centres: neighbours at every distance 0..=4, neighbours that keep one half and
/// change the other by two or three bits (found only through the other half's table), entries
/// sharing a half exactly with the centre (crowding its slot and tag), duplicate fingerprints.
fn planted(seed: u64, centres: usize) -> (Vec<(u64, u32)>, Vec<u64>) {
    let mut rng = SplitMix64::new(seed);
    let mut fps = Vec::new();
    let mut queries = Vec::new();
    for _ in 0..centres {
        let c = rng.next();
        queries.push(c);
        queries.push(flip_bits(c, 1, &mut rng));
        for d in 0..=4 {
            fps.push(flip_bits(c, d, &mut rng));
        }
        let hi = c & 0xFFFF_FFFF_0000_0000;
        let lo = c & 0xFFFF_FFFF;
        for _ in 0..3 {
            // Same high half, low half 0–3 bits away; same low half, high half 1–4 bits away.
            let low_flip = flip_bits(lo, rng.below(4) as u32, &mut rng) & 0xFFFF_FFFF;
            fps.push(hi | low_flip);
            let high_bits = flip_bits(0, 1 + rng.below(4) as u32, &mut rng) & 0xFFFF_FFFF;
            fps.push(c ^ (high_bits << 32));
            // A low half one bit away with a high half two bits away: distance 3.
            let one = 1u64 << rng.below(32);
            let two = flip_bits(0, 2, &mut rng) & 0xFFFF_FFFF;
            fps.push(c ^ one ^ (two << 32));
        }
        fps.push(hi | rng.next() & 0xFFFF_FFFF);
        fps.push(rng.next() & 0xFFFF_FFFF_0000_0000 | lo);
        fps.push(c);
        fps.push(rng.next());
    }
    queries.push(rng.next());
    let entries = fps
        .into_iter()
        .enumerate()
        .map(|(i, f)| (f, i as u32))
        .collect();
    (entries, queries)
}

fn check(index: &LeanIndex, entries: &[(u64, u32)], queries: &[u64]) {
    for &q in queries {
        for k in 0..=LEAN_MAX_DISTANCE {
            assert_eq!(
                index.search(q, k).unwrap(),
                linear_search(entries, q, k),
                "q={q:x} k={k}"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, .. ProptestConfig::default() })]

    #[test]
    fn lean_search_equals_linear_scan(seed in any::<u64>(), centres in 1usize..60, d in prop::sample::select(vec![16u32, 17, 19, 24])) {
        let (entries, queries) = planted(seed, centres);
        let index = LeanIndex::build_with_directory_bits(&entries, d).unwrap();
        prop_assert_eq!(index.len(), entries.len());
        check(&index, &entries, &queries);
    }
}

#[test]
fn lean_search_is_exact_on_random_data_with_the_default_directory() {
    let (mut entries, queries) = planted(7, 100);
    let mut rng = SplitMix64::new(11);
    let n = entries.len();
    entries.extend((0..100_000u32).map(|i| (rng.next(), n as u32 + i)));
    let index = LeanIndex::build(&entries).unwrap();
    check(&index, &entries, &queries);
    let batch = index.search_batch(&queries, 3).unwrap();
    for (q, got) in queries.iter().zip(&batch) {
        assert_eq!(got, &linear_search(&entries, *q, 3));
    }
}

/// A batch large enough to be searched table by table in sorted order
/// (`LeanIndex::search_batch` past 16,384 queries) answers each query as `search` does (itself
/// checked against the scan above), at every distance and directory size; repeated queries
/// included.
#[test]
fn lean_sorted_batch_equals_one_query_at_a_time() {
    let (entries, mut queries) = planted(5, 2_000);
    let mut rng = SplitMix64::new(9);
    let planted_queries = queries.len();
    for i in 0..20_000 {
        let q = queries[i % planted_queries];
        queries.push(flip_bits(q, rng.below(4) as u32, &mut rng));
    }
    queries.extend_from_within(..100);
    assert!(queries.len() > 16_384);
    for d in [16, 19] {
        let index = LeanIndex::build_with_directory_bits(&entries, d).unwrap();
        for k in 0..=LEAN_MAX_DISTANCE {
            let batch = index.search_batch(&queries, k).unwrap();
            let found = crate::assert_batch_equals_one_at_a_time(
                &queries,
                &batch,
                |q| index.search(q, k).unwrap(),
                &format!("k={k} d={d}"),
            );
            assert!(found > queries.len() / 2, "d={d} k={k}: {found} matches");
        }
    }
    // And against the scan itself on a sample.
    let index = LeanIndex::build(&entries).unwrap();
    let batch = index.search_batch(&queries, 3).unwrap();
    for i in (0..queries.len()).step_by(97) {
        assert_eq!(batch[i], linear_search(&entries, queries[i], 3));
    }
}

#[test]
fn lean_find_any_and_early_exit() {
    let (entries, queries) = planted(3, 50);
    let index = LeanIndex::build(&entries).unwrap();
    for &q in &queries {
        let all = linear_search(&entries, q, 3);
        let any = index.find_any(q, 3).unwrap();
        assert_eq!(any.is_some(), !all.is_empty());
        if let Some(m) = any {
            assert!(all.contains(&m), "{m:?} not among {all:?}");
        }
        let mut calls = 0;
        let flow = index
            .search_with(q, 3, |_| {
                calls += 1;
                ControlFlow::Break(())
            })
            .unwrap();
        assert_eq!(calls, usize::from(!all.is_empty()));
        assert_eq!(flow.is_break(), !all.is_empty());
    }
}

#[test]
fn lean_refuses_distances_above_three_and_handles_empty() {
    let empty = LeanIndex::build(&[]).unwrap();
    assert!(empty.is_empty());
    assert_eq!(empty.search(42, 3).unwrap(), []);
    match empty.search(42, 4) {
        Err(Error::DistanceTooLarge {
            k: 4,
            max: 3,
            layout,
        }) => assert_eq!(layout, "lean"),
        other => panic!("expected DistanceTooLarge, got {other:?}"),
    }
    let one = LeanIndex::from_fingerprints(&[u64::MAX]).unwrap();
    assert_eq!(one.search(u64::MAX ^ 0b111, 3).unwrap()[0].handle, 0);
    assert_eq!(one.search(0, 3).unwrap(), []);
}

#[test]
fn lean_index_is_at_most_16_bytes_per_entry_at_a_million() {
    let mut rng = SplitMix64::new(5);
    let fps: Vec<u64> = (0..1_000_000).map(|_| rng.next()).collect();
    let index = LeanIndex::from_fingerprints(&fps).unwrap();
    let per = index.heap_bytes() as f64 / fps.len() as f64;
    assert!(per <= 16.0, "{per} bytes per entry");
    // Every entry finds itself.
    for (i, &f) in fps.iter().enumerate().step_by(997) {
        assert!(index
            .search(f, 0)
            .unwrap()
            .iter()
            .any(|m| m.handle == i as u32));
    }
}

#[test]
fn planner_prefers_the_faster_index_that_fits_and_says_why() {
    use neardup_index::{plan_index, IndexChoice};
    const GIB: u64 = 1 << 30;
    // 50 M fingerprints: m4 needs ~1.9 GiB, the lean index ~0.7 GiB and is faster by the model.
    let p = plan_index(50_000_000, 3, 2 * GIB).unwrap();
    assert_eq!(p.choice, IndexChoice::Lean, "{}", p.reason);
    assert!(p.reason.contains("fastest"), "{}", p.reason);
    let p = plan_index(50_000_000, 3, GIB).unwrap();
    assert_eq!(p.choice, IndexChoice::Lean, "{}", p.reason);
    assert!(p.reason.contains("no block layout fits"), "{}", p.reason);
    // A larger budget buys ten tables, faster than either.
    let p = plan_index(50_000_000, 3, 6 * GIB).unwrap();
    assert!(
        matches!(p.choice, IndexChoice::Tables(ref l) if l.tables() > 4),
        "{}",
        p.reason
    );
    // Small indexes stay with the block tables; distances past 3 never get the lean index.
    let p = plan_index(1_000_000, 3, 6 * GIB).unwrap();
    assert!(matches!(p.choice, IndexChoice::Tables(_)), "{}", p.reason);
    let p = plan_index(50_000_000, 4, GIB).unwrap();
    assert!(matches!(p.choice, IndexChoice::Tables(_)), "{}", p.reason);
    assert!(p.reason.contains("up to 3"), "{}", p.reason);
    // Nothing fits: the smaller of the two.
    let p = plan_index(50_000_000, 3, 0).unwrap();
    assert_eq!(p.choice, IndexChoice::Lean, "{}", p.reason);
    assert!(p.reason.contains("least memory"), "{}", p.reason);
}
