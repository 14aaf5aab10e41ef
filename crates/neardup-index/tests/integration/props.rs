//! Property tests of the index and all-pairs against brute force.
use neardup_index::random::{flip_bits, SplitMix64};
use neardup_index::{all_pairs_with, linear_all_pairs, linear_search, HammingIndex, Layout};
use proptest::prelude::*;
use std::ops::ControlFlow;

/// Layouts exercised: (m, k) pairs, small enough for debug-mode tests.
const LAYOUTS: &[(u32, u32)] = &[
    (1, 0),
    (2, 1),
    (4, 3),
    (5, 3),
    (3, 2),
    (6, 3),
    (7, 4),
    (9, 8),
    (10, 8),
    (6, 2),
];

/// Entries around a few centres, with neighbours planted at exactly k and k + 1.
fn planted(seed: u64, n: usize, k: u32) -> (Vec<(u64, u32)>, Vec<u64>) {
    let mut rng = SplitMix64::new(seed);
    let mut entries = Vec::with_capacity(n);
    let mut queries = Vec::new();
    while entries.len() < n {
        let c = rng.next();
        queries.push(c);
        let h = entries.len() as u32;
        entries.push((flip_bits(c, k, &mut rng), h));
        entries.push((flip_bits(c, k + 1, &mut rng), h + 1));
        entries.push((
            flip_bits(c, rng.below(k as u64 + 1) as u32, &mut rng),
            h + 2,
        ));
        entries.push((c, h + 3));
        entries.push((c, h + 4)); // duplicate fingerprint, different handle
        entries.push((rng.next(), h + 5));
    }
    queries.push(rng.next());
    (entries, queries)
}

fn check_all(index: &HammingIndex, entries: &[(u64, u32)], queries: &[u64], k: u32) {
    for &q in queries {
        for kk in 0..=k {
            let got = index.search(q, kk).unwrap();
            assert_eq!(
                got,
                linear_search(entries, q, kk),
                "q={q:x} k={kk} layout={}",
                index.layout()
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, .. ProptestConfig::default() })]

    #[test]
    fn search_equals_brute_force(seed in any::<u64>(), n in 0usize..300, li in 0..LAYOUTS.len()) {
        let (m, k) = LAYOUTS[li];
        let layout = Layout::new(m, k).unwrap();
        let (entries, queries) = planted(seed, n, k);
        let index = HammingIndex::build(layout, &entries).unwrap();
        prop_assert_eq!(index.len(), entries.len());
        check_all(&index, &entries, &queries, k);
        let batch = index.search_batch(&queries, k).unwrap();
        for (q, b) in queries.iter().zip(batch) {
            prop_assert_eq!(b, linear_search(&entries, *q, k));
        }
    }

    #[test]
    fn insert_remove_interleavings(seed in any::<u64>(), ops in 1usize..400, li in 0..LAYOUTS.len()) {
        let (m, k) = LAYOUTS[li];
        let layout = Layout::new(m, k).unwrap();
        let (pool, queries) = planted(seed, 60, k);
        let mut rng = SplitMix64::new(seed ^ 0x55);
        let half = pool.len() / 2;
        let mut model: Vec<(u64, u32)> = pool[..half].to_vec();
        let mut index = HammingIndex::build(layout, &model).unwrap();
        for _ in 0..ops {
            if rng.below(3) == 0 && !model.is_empty() {
                let i = rng.below(model.len() as u64) as usize;
                let e = model.swap_remove(i);
                prop_assert!(index.remove(e.0, e.1));
            } else if rng.below(10) == 0 {
                // removing something absent changes nothing
                prop_assert!(!index.remove(rng.next(), 7));
            } else {
                let e = pool[rng.below(pool.len() as u64) as usize];
                model.push(e);
                index.insert(e.0, e.1).unwrap();
            }
            if rng.below(50) == 0 {
                index.flush();
            }
        }
        prop_assert_eq!(index.len(), model.len());
        let mut all: Vec<_> = index.iter().collect();
        all.sort_unstable();
        let mut want = model.clone();
        want.sort_unstable();
        prop_assert_eq!(all, want);
        check_all(&index, &model, &queries, k);
    }

    #[test]
    fn all_pairs_equals_brute_force(seed in any::<u64>(), n in 0usize..250, li in 0..LAYOUTS.len()) {
        let (m, k) = LAYOUTS[li];
        let layout = Layout::new(m, k).unwrap();
        let (entries, _) = planted(seed, n, k);
        let fps: Vec<u64> = entries.iter().map(|e| e.0).collect();
        for kk in [0, k / 2, k] {
            prop_assert_eq!(all_pairs_with(&fps, &layout, kk).unwrap(), linear_all_pairs(&fps, kk));
        }
    }
}

/// The self-join partitions in chunks of at least 65,536 fingerprints: a set of several chunks,
/// clustered so that the brute force stays within each cluster, across layouts that group
/// through the bucket array and that sort.
#[test]
fn all_pairs_over_several_chunks_equals_brute_force() {
    use neardup_index::random::{flip_bits, SplitMix64};
    let mut rng = SplitMix64::new(11);
    let (clusters, size) = (1500usize, 100usize);
    let mut fps = Vec::with_capacity(clusters * size);
    let mut want = Vec::new();
    for _ in 0..clusters {
        let center = rng.next();
        let first = fps.len();
        for _ in 0..size {
            let d = rng.below(7) as u32;
            fps.push(flip_bits(center, d, &mut rng));
        }
        // Centers are random: members of different clusters are ~32 bits apart.
        for i in first..fps.len() {
            for j in i + 1..fps.len() {
                let d = neardup_index::hamming(fps[i], fps[j]);
                if d <= 3 {
                    want.push((i as u32, j as u32, d as u8));
                }
            }
        }
    }
    want.sort_unstable();
    assert!(want.len() > 10_000, "{}", want.len());
    for (m, k) in [(4, 3), (5, 3), (2, 1)] {
        let layout = Layout::new(m, k).unwrap();
        let got = all_pairs_with(&fps, &layout, k).unwrap();
        let mine: Vec<_> = want
            .iter()
            .filter(|p| u32::from(p.2) <= k)
            .copied()
            .collect();
        assert_eq!(got, mine, "{layout:?}");
    }
}

#[test]
fn every_planner_k_is_exact() {
    for k in 0..=10 {
        for n in [0u64, 1000, 10_000_000] {
            let layout = Layout::plan(n, k, 1 << 30).unwrap();
            assert_eq!(layout.max_distance(), k);
            let (entries, queries) = planted(k as u64, 120, k);
            let index = HammingIndex::build(layout.clone(), &entries).unwrap();
            for &q in &queries {
                assert_eq!(
                    index.search(q, k).unwrap(),
                    linear_search(&entries, q, k),
                    "{layout:?}"
                );
            }
        }
        let fps: Vec<u64> = planted(k as u64, 120, k).0.iter().map(|e| e.0).collect();
        assert_eq!(
            neardup_index::all_pairs(&fps, k).unwrap(),
            linear_all_pairs(&fps, k)
        );
    }
}

/// A batch past `SORTED_BATCH` is searched table by table in sorted order; it answers each
/// query as `search` does (itself checked against the scan), for every layout and distance,
/// with pending inserts and removed entries in the tables.
#[test]
fn sorted_batch_equals_one_query_at_a_time() {
    let mut rng = SplitMix64::new(21);
    for &(m, k) in LAYOUTS {
        let (entries, centres) = planted(m as u64 * 31 + k as u64, 3_000, k);
        let mut index = HammingIndex::build(Layout::new(m, k).unwrap(), &entries).unwrap();
        for (j, &(f, h)) in entries.iter().enumerate().step_by(7) {
            index.insert(f ^ 1, h + 1_000_000).unwrap();
            if j % 2 == 0 {
                assert!(index.remove(f, h));
            }
        }
        let mut queries: Vec<u64> = (0..neardup_index::SORTED_BATCH + 500)
            .map(|i| {
                flip_bits(
                    centres[i % centres.len()],
                    rng.below(k as u64 + 2) as u32,
                    &mut rng,
                )
            })
            .collect();
        queries.extend_from_within(..50);
        for kk in 0..=k {
            let batch = index.search_batch(&queries, kk).unwrap();
            let found = crate::assert_batch_equals_one_at_a_time(
                &queries,
                &batch,
                |q| index.search(q, kk).unwrap(),
                &format!("k={kk} m={m}"),
            );
            assert!(found > queries.len() / 8, "m={m} k={kk}: {found} matches");
        }
    }
}

#[test]
fn empty_index_and_errors() {
    let index = HammingIndex::new(Layout::new(4, 3).unwrap());
    assert!(index.is_empty());
    assert_eq!(index.len(), 0);
    assert!(index.search(42, 3).unwrap().is_empty());
    assert_eq!(index.find_any(42, 3).unwrap(), None);
    let err = index.search(42, 4).unwrap_err();
    assert!(
        matches!(
            err,
            neardup_index::Error::DistanceTooLarge { k: 4, max: 3, .. }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("at most 3"), "{err}");
    assert!(index.search_batch(&[1, 2], 5).is_err());
    assert!(neardup_index::all_pairs_with(&[1, 2], &Layout::new(4, 3).unwrap(), 4).is_err());
    assert!(neardup_index::all_pairs(&[1, 2], 64).is_err());
    assert!(neardup_index::all_pairs(&[], 3).unwrap().is_empty());
    assert!(Layout::new(0, 0).is_err());
    assert!(Layout::new(4, 4).is_err());
    assert!(Layout::new(65, 1).is_err());
    assert!(Layout::new(40, 20).is_err()); // too many tables
    assert!(Layout::from_block_lengths(&[32, 31], 1).is_err());
}

#[test]
fn early_exit_and_duplicates() {
    let fp = 0x1234_5678_9abc_def0u64;
    let entries: Vec<(u64, u32)> = (0..50).map(|h| (fp, h)).collect();
    let mut index = HammingIndex::build(Layout::new(5, 3).unwrap(), &entries).unwrap();
    assert_eq!(index.search(fp, 0).unwrap().len(), 50);
    let mut seen = 0;
    let flow = index
        .search_with(fp ^ 1, 3, |_| {
            seen += 1;
            ControlFlow::Break(())
        })
        .unwrap();
    assert!(flow.is_break());
    assert_eq!(seen, 1);
    // same (fp, handle) twice is a multiset
    index.insert(fp, 7).unwrap();
    assert_eq!(
        index
            .search(fp, 0)
            .unwrap()
            .iter()
            .filter(|m| m.handle == 7)
            .count(),
        2
    );
    assert!(index.remove(fp, 7));
    assert!(index.remove(fp, 7));
    assert!(!index.remove(fp, 7));
    assert_eq!(index.len(), 49);
}

#[test]
fn many_inserts_trigger_merges_and_compaction() {
    let fps = neardup_index::random::corpus(150_000, 9);
    let mut index = HammingIndex::new(Layout::new(4, 3).unwrap());
    for (i, &f) in fps.iter().enumerate() {
        index.insert(f, i as u32).unwrap();
    }
    assert!(index.pending_inserts() < fps.len());
    for (i, &f) in fps.iter().enumerate().step_by(2) {
        assert!(index.remove(f, i as u32));
    }
    assert_eq!(index.len(), fps.len() / 2);
    let entries: Vec<(u64, u32)> = fps
        .iter()
        .enumerate()
        .skip(1)
        .step_by(2)
        .map(|(i, &f)| (f, i as u32))
        .collect();
    for &(q, _) in entries.iter().step_by(5000) {
        assert_eq!(index.search(q, 3).unwrap(), linear_search(&entries, q, 3));
    }
    assert!(index.heap_bytes() > 0);
}

#[test]
fn hot_cluster_is_exact() {
    // 10k of 40k share their top 16 bits: a hot bucket for m4, and big sorted directory slots
    // (directory coarser than the key) for m5x2 and m6x3.
    let fps = neardup_index::random::clustered(40_000, 10_000, 3);
    let entries: Vec<(u64, u32)> = fps
        .iter()
        .enumerate()
        .map(|(i, &f)| (f, i as u32))
        .collect();
    let mut rng = SplitMix64::new(1);
    let queries: Vec<u64> = (0..fps.len())
        .step_by(1000)
        .map(|i| flip_bits(fps[i], 2, &mut rng))
        .collect();
    for (m, k) in [(4, 3), (5, 3), (6, 3)] {
        let mut index = HammingIndex::from_fingerprints(Layout::new(m, k).unwrap(), &fps).unwrap();
        for &q in &queries {
            assert_eq!(index.search(q, k).unwrap(), linear_search(&entries, q, k));
        }
        // remove some cluster members (tombstones in sorted slots) and re-check
        for i in (0..fps.len()).step_by(8) {
            assert!(index.remove(fps[i], i as u32));
        }
        let live: Vec<(u64, u32)> = entries.iter().copied().filter(|e| e.1 % 8 != 0).collect();
        for &q in &queries {
            assert_eq!(index.search(q, k).unwrap(), linear_search(&live, q, k));
        }
    }
}
