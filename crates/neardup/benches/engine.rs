//! Engine benchmarks: `check_and_insert` and `query_fingerprint` against an engine preloaded
//! with N random fingerprints (N from `NEARDUP_BENCH_DOCS`, default 1 000 000), sync mode
//! `none` (the in-process decision cost; durability cost is the store's own bench). Each bench
//! also asserts its answers are right. Preloading goes through the log and a restart, so the
//! setup also prints the restart time and memory per document. Per-call percentiles are
//! printed for `check_and_insert`, and for a unique insert split into the decision
//! (`Engine::decide`) and the acknowledgement wait (`Pending::wait`: the store's writer thread
//! taking the record, a thread hand-off even with sync none).

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use neardup::engine::{Decision, Doc, Engine, EngineConfig, ManualClock, SyncMode};
use neardup::index::gen::SplitMix64;
use neardup::{FingerprintConfig, Fingerprinter};

fn engine_benches(c: &mut Criterion) {
    let n: usize = std::env::var("NEARDUP_BENCH_DOCS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_699_984_800_000));
    let cfg = EngineConfig {
        sync: SyncMode::None,
        maintenance_interval: None,
        snapshot_interval: None,
        snapshot_records: u64::MAX,
        ..EngineConfig::default()
    };
    let fpr = Fingerprinter::new(FingerprintConfig::default()).unwrap();
    let mut rng = SplitMix64::new(5);
    let fps: Vec<u64> = (0..n).map(|_| rng.next()).collect();
    {
        let e = Engine::open(dir.path(), fpr.clone(), cfg.clone(), clock.clone()).unwrap();
        // Spread over the window (a day), as a crawler would.
        let per_ms = (86_400_000 / n as i64).max(1);
        for (i, chunk) in fps.chunks(10_000).enumerate() {
            let docs = chunk
                .iter()
                .enumerate()
                .map(|(j, &f)| Doc::fingerprint(format!("doc-{}", i * 10_000 + j), f))
                .collect();
            for r in e.check_and_insert_batch(docs) {
                r.unwrap();
            }
            clock.advance(Duration::from_millis((per_ms * 10_000) as u64));
            if i % 50 == 49 {
                e.maintain().unwrap();
            }
        }
        let t = Instant::now();
        e.shutdown().unwrap();
        println!(
            "snapshot of {n} documents: {:.2} s",
            t.elapsed().as_secs_f64()
        );
    }
    let t = Instant::now();
    let e = Engine::open(dir.path(), fpr, cfg, clock.clone()).unwrap();
    let s = e.stats();
    println!(
        "restart with {} documents: {:.2} s; index {:.1} B/doc, records ~{:.1} B/doc",
        s.documents,
        t.elapsed().as_secs_f64(),
        s.index_bytes as f64 / s.documents as f64,
        s.record_bytes as f64 / s.documents as f64
    );
    let stored = s.documents;

    // Per-call latency percentiles (criterion reports means): 100k checks, 10% near-duplicates.
    let mut lat = Vec::with_capacity(100_000);
    for k in 0..100_000u64 {
        let fp = if k % 10 == 0 {
            fps[(k as usize * 31) % n] ^ 1
        } else {
            rng.next()
        };
        let t = Instant::now();
        let o = e
            .check_and_insert(Doc::fingerprint(format!("lat-{k}"), fp))
            .unwrap();
        lat.push(t.elapsed().as_nanos() as u64);
        if k % 10 == 0 {
            assert!(matches!(o.decision, Decision::Duplicate { .. }));
        }
    }
    lat.sort_unstable();
    let p = |q: f64| lat[(lat.len() as f64 * q) as usize] as f64 / 1000.0;
    println!(
        "check_and_insert latency with {n} stored: p50 {:.1} us, p99 {:.1} us, p99.9 {:.1} us, max {:.1} us",
        p(0.5),
        p(0.99),
        p(0.999),
        *lat.last().unwrap() as f64 / 1000.0
    );

    // The same split in two: the decision (decide mutex, search, in-memory insert, queueing
    // the log record) and the acknowledgement wait (the store's writer thread handing the record
    // to the OS; a thread handoff, even with sync none).
    let (mut dec, mut ack) = (Vec::with_capacity(100_000), Vec::with_capacity(100_000));
    for k in 0..100_000u64 {
        let p = e
            .prepare(Doc::fingerprint(format!("split-{k}"), rng.next()))
            .unwrap();
        let t = Instant::now();
        let pending = e.decide(vec![p]);
        let t1 = Instant::now();
        let out = pending.wait();
        dec.push((t1 - t).as_nanos() as u64);
        ack.push(t1.elapsed().as_nanos() as u64);
        assert_eq!(out[0].as_ref().unwrap().decision, Decision::Unique);
    }
    for (name, v) in [("decide", &mut dec), ("ack wait", &mut ack)] {
        v.sort_unstable();
        let p = |q: f64| v[(v.len() as f64 * q) as usize] as f64 / 1000.0;
        println!(
            "unique insert, {name}: p50 {:.1} us, p99 {:.1} us, p99.9 {:.1} us",
            p(0.5),
            p(0.99),
            p(0.999)
        );
    }
    println!("index runs searched per query: {}", e.stats().runs);

    let mut g = c.benchmark_group(format!("engine_{n}"));
    let mut i = 0u64;
    g.bench_function("check_and_insert_unique", |b| {
        b.iter(|| {
            i += 1;
            let o = e
                .check_and_insert(Doc::fingerprint(format!("new-{i}"), rng.next()))
                .unwrap();
            o.decision
        })
    });
    let mut j = 0usize;
    g.bench_function("check_and_insert_duplicate", |b| {
        b.iter(|| {
            j = (j + 7919) % n;
            let o = e
                .check_and_insert(Doc::fingerprint(format!("dup-{j}"), fps[j] ^ 0b11))
                .unwrap();
            assert!(matches!(
                o.decision,
                Decision::Duplicate { distance: 2, .. }
            ));
            o
        })
    });
    g.bench_function("query_fingerprint", |b| {
        b.iter(|| {
            j = (j + 7919) % n;
            let q = e.query_fingerprint(fps[j] ^ 1);
            assert_eq!(q.hits[0].distance, 1);
            q
        })
    });
    g.finish();
    assert!(e.stats().documents > stored);
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(5));
    targets = engine_benches
}
criterion_main!(benches);
