//! Criterion benches at N = 1M (uniform + 2% near-duplicates at distance 0–3 + 1% at 4–6), k = 3:
//! build, single query, batch query (block tables and the lean index), all pairs, linear scan, and a planted hot cluster. Each
//! bench first asserts that its result equals the linear scan on a sample.
use criterion::measurement::WallTime;
use criterion::{
    criterion_group, criterion_main, BenchmarkGroup, BenchmarkId, Criterion, Throughput,
};
use neardup_index::random::{clustered, corpus, flip_bits, SplitMix64};
use neardup_index::{
    all_pairs, all_pairs_with, linear_search, HammingIndex, Layout, LeanIndex, Match,
};
use std::hint::black_box;
use std::ops::ControlFlow;

const N: usize = 1_000_000;
const K: u32 = 3;

fn queries(fps: &[u64], n: usize) -> Vec<u64> {
    let mut rng = SplitMix64::new(3);
    (0..n)
        .map(|i| {
            if i % 2 == 0 {
                let d = rng.below(K as u64 + 1) as u32;
                flip_bits(fps[rng.below(fps.len() as u64) as usize], d, &mut rng)
            } else {
                rng.next()
            }
        })
        .collect()
}

fn entries(fps: &[u64]) -> Vec<(u64, u32)> {
    fps.iter()
        .enumerate()
        .map(|(i, &f)| (f, i as u32))
        .collect()
}

fn check(index: &HammingIndex, e: &[(u64, u32)], qs: &[u64]) {
    for &q in qs.iter().take(40) {
        assert_eq!(index.search(q, K).unwrap(), linear_search(e, q, K));
    }
}

fn layouts() -> Vec<Layout> {
    vec![Layout::new(4, 3).unwrap(), Layout::new(5, 3).unwrap()]
}

/// `batch_200k_sorted/<name>`: a batch past 16,384 queries, searched table by table in sorted
/// order, checked against one query at a time (`one`) before it is timed.
fn bench_sorted_batch(
    g: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    many: &[u64],
    batch: impl Fn(&[u64]) -> Vec<Vec<Match>>,
    one: impl Fn(u64) -> Vec<Match>,
) {
    let sorted = batch(many);
    for (j, &q) in many.iter().enumerate().step_by(101) {
        assert_eq!(sorted[j], one(q));
    }
    assert!(sorted.iter().map(Vec::len).sum::<usize>() > many.len() / 4);
    g.throughput(Throughput::Elements(many.len() as u64));
    g.sample_size(10);
    g.bench_function(BenchmarkId::new("batch_200k_sorted", name), |b| {
        b.iter(|| batch(black_box(many)))
    });
}

fn bench_index(c: &mut Criterion) {
    let fps = corpus(N, 42);
    let e = entries(&fps);
    let qs = queries(&fps, 10_000);

    let mut g = c.benchmark_group("build_1M");
    g.sample_size(10);
    g.throughput(Throughput::Elements(N as u64));
    for l in layouts() {
        check(&HammingIndex::build(l.clone(), &e).unwrap(), &e, &qs);
        g.bench_with_input(BenchmarkId::from_parameter(l.name()), &l, |b, l| {
            b.iter(|| HammingIndex::build(l.clone(), black_box(&e)).unwrap())
        });
    }
    g.bench_function("lean", |b| {
        b.iter(|| LeanIndex::build(black_box(&e)).unwrap())
    });
    g.finish();

    let mut g = c.benchmark_group("query_1M_k3");
    // A batch past 16,384 queries is searched table by table in sorted order.
    let many = queries(&fps, 200_000);
    for l in layouts() {
        let index = HammingIndex::build(l.clone(), &e).unwrap();
        check(&index, &e, &qs);
        g.throughput(Throughput::Elements(1));
        let mut i = 0;
        g.bench_function(BenchmarkId::new("single", l.name()), |b| {
            b.iter(|| {
                i = (i + 1) % qs.len();
                let mut n = 0;
                let _ = index.search_with(qs[i], K, |_| {
                    n += 1;
                    ControlFlow::Continue(())
                });
                n
            })
        });
        let mut i = 0;
        g.bench_function(BenchmarkId::new("find_any", l.name()), |b| {
            b.iter(|| {
                i = (i + 1) % qs.len();
                index.find_any(qs[i], K).unwrap()
            })
        });
        let batch = index.search_batch(&qs, K).unwrap();
        for (q, r) in qs.iter().zip(&batch).take(40) {
            assert_eq!(r, &linear_search(&e, *q, K));
        }
        g.throughput(Throughput::Elements(qs.len() as u64));
        g.bench_function(BenchmarkId::new("batch_10k", l.name()), |b| {
            b.iter(|| index.search_batch(black_box(&qs), K).unwrap())
        });
        bench_sorted_batch(
            &mut g,
            &l.name(),
            &many,
            |qs| index.search_batch(qs, K).unwrap(),
            |q| index.search(q, K).unwrap(),
        );
        g.sample_size(100);
    }
    // The lean index: two tables, query-side one-bit flips, ~15.6 bytes per entry.
    let lean = LeanIndex::build(&e).unwrap();
    for &q in qs.iter().take(40) {
        assert_eq!(lean.search(q, K).unwrap(), linear_search(&e, q, K));
    }
    g.throughput(Throughput::Elements(1));
    let mut i = 0;
    g.bench_function(BenchmarkId::new("single", "lean"), |b| {
        b.iter(|| {
            i = (i + 1) % qs.len();
            let mut n = 0;
            let _ = lean.search_with(qs[i], K, |_| {
                n += 1;
                ControlFlow::Continue(())
            });
            n
        })
    });
    let mut i = 0;
    g.bench_function(BenchmarkId::new("find_any", "lean"), |b| {
        b.iter(|| {
            i = (i + 1) % qs.len();
            lean.find_any(qs[i], K).unwrap()
        })
    });
    g.throughput(Throughput::Elements(qs.len() as u64));
    g.bench_function(BenchmarkId::new("batch_10k", "lean"), |b| {
        b.iter(|| lean.search_batch(black_box(&qs), K).unwrap())
    });
    bench_sorted_batch(
        &mut g,
        "lean",
        &many,
        |qs| lean.search_batch(qs, K).unwrap(),
        |q| lean.search(q, K).unwrap(),
    );
    drop(lean);
    g.throughput(Throughput::Elements(1));
    let mut i = 0;
    g.sample_size(20);
    g.bench_function("linear_scan", |b| {
        b.iter(|| {
            i = (i + 1) % qs.len();
            linear_search(black_box(&e), qs[i], K)
        })
    });
    g.finish();

    let mut g = c.benchmark_group("all_pairs_1M_k3");
    g.sample_size(10);
    g.throughput(Throughput::Elements(N as u64));
    let got = all_pairs(&fps, K).unwrap();
    for i in (0..N).step_by(N / 20) {
        let mut want: Vec<(u32, u32, u8)> = linear_search(&e, fps[i], K)
            .into_iter()
            .filter(|m| m.handle as usize != i)
            .map(|m| {
                (
                    (i as u32).min(m.handle),
                    (i as u32).max(m.handle),
                    m.distance,
                )
            })
            .collect();
        want.sort_unstable();
        let have: Vec<_> = got
            .iter()
            .filter(|p| p.0 as usize == i || p.1 as usize == i)
            .copied()
            .collect();
        assert_eq!(have, want);
    }
    for l in [
        Layout::plan_self_join(N as u64, K).unwrap(),
        Layout::new(5, 3).unwrap(),
    ] {
        assert_eq!(all_pairs_with(&fps, &l, K).unwrap(), got);
        g.bench_with_input(BenchmarkId::from_parameter(l.name()), &l, |b, l| {
            b.iter(|| all_pairs_with(black_box(&fps), l, K).unwrap())
        });
    }
    g.finish();
}

/// 100k of 1M fingerprints share their top 16 bits (block 0 of m4): queries inside the cluster
/// scan that hot bucket in one m4 table; m5x2's longer keys split it.
fn bench_skew(c: &mut Criterion) {
    let fps = clustered(N, 100_000, 8);
    let e = entries(&fps);
    let mut rng = SplitMix64::new(4);
    let inside: Vec<u64> = (0..1000)
        .map(|i| flip_bits(fps[i * 10 * (N / 100_000)], 2, &mut rng))
        .collect();
    let mut g = c.benchmark_group("skew_1M_cluster100k_k3");
    for l in layouts() {
        let index = HammingIndex::build(l.clone(), &e).unwrap();
        check(&index, &e, &inside);
        let mut i = 0;
        g.bench_function(BenchmarkId::new("query_in_cluster", l.name()), |b| {
            b.iter(|| {
                i = (i + 1) % inside.len();
                index.search(inside[i], K).unwrap()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench_index, bench_skew);
criterion_main!(benches);
