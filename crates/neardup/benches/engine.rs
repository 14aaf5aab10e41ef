//! Engine benchmarks: `check_and_insert` and `query_fingerprint` against an engine preloaded
//! with N random fingerprints (N from `NEARDUP_BENCH_DOCS`, default 1 000 000), sync mode
//! `none` (the in-process decision cost; durability cost is the store's own bench). Each bench
//! also asserts its answers are right. Preloading goes through the log and a restart, so the
//! setup also prints the restart time and memory per document. Per-call percentiles are
//! printed for `check_and_insert`, and for a unique insert split into the decision
//! (`Engine::decide`) and the acknowledgement wait (`Pending::wait`: the store's writer thread
//! taking the record, a thread hand-off even with sync none).
//!
//! Environment:
//! - `NEARDUP_BENCH_DIR=/path`: keep the preloaded engine there. A later run that finds
//!   (nearly) N documents in it skips the preload (minutes at 50 M) and measures the restart of
//!   that directory; otherwise it preloads into it. Measured documents get fresh ids, and the
//!   run ends with a snapshot, so the directory stays reusable. Unset: a temporary directory.
//! - `NEARDUP_BENCH_RESTARTS=r`: measure r restarts and print their median (default 1).
//! - `NEARDUP_BENCH_INDEX_BYTES=b`: the engine's index memory budget per document (default
//!   40, four tables at distance 3; ~110 picks ten tables: faster queries, 2.7× the memory).
//! - `NEARDUP_BENCH_RESTART_ONLY=1`: stop after the restarts (nothing is written).

#[path = "common/mod.rs"]
mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use criterion::{criterion_group, criterion_main, Criterion};
use neardup::engine::{Decision, Doc, Engine, EngineConfig, ManualClock, SyncMode};
use neardup::index::random::SplitMix64;
use neardup::{FingerprintConfig, Fingerprinter};

fn env_num(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Preloads `fps` as `doc-{i}` through the log (batches of 100 000, spread over a day of
/// timestamps, maintenance every 500 000 documents), then shuts down (final snapshot). Ids
/// already stored answer "duplicate of themselves", so preloading into a directory holding part
/// of the documents completes it.
fn preload(
    dir: &Path,
    fpr: &Fingerprinter,
    cfg: &EngineConfig,
    clock: &Arc<ManualClock>,
    fps: &[u64],
) {
    const BATCH: usize = 100_000;
    let n = fps.len();
    let e = Engine::open(dir, fpr.clone(), cfg.clone(), clock.clone()).unwrap();
    let per_ms = (DAY_MS / n as i64).max(1);
    let t = Instant::now();
    for (i, chunk) in fps.chunks(BATCH).enumerate() {
        clock.set(START_MS + (i * BATCH) as i64 * per_ms);
        let docs = chunk
            .iter()
            .enumerate()
            .map(|(j, &f)| Doc::fingerprint(format!("doc-{}", i * BATCH + j), f))
            .collect();
        for r in e.check_and_insert_batch(docs) {
            r.unwrap();
        }
        if i % 5 == 4 {
            e.maintain().unwrap();
        }
        if i % 50 == 49 {
            eprintln!(
                "preloaded {} / {n} documents in {:.0} s",
                (i + 1) * BATCH,
                t.elapsed().as_secs_f64()
            );
        }
    }
    e.maintain().unwrap();
    println!(
        "preload of {n} documents: {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    e.shutdown().unwrap();
    println!(
        "snapshot of {n} documents: {:.2} s",
        t.elapsed().as_secs_f64()
    );
}

/// Opens the engine in `dir`, printing the restart time and memory per document.
fn restart(
    dir: &Path,
    fpr: &Fingerprinter,
    cfg: &EngineConfig,
    clock: &Arc<ManualClock>,
) -> (Engine, f64) {
    let t = Instant::now();
    let e = Engine::open(dir, fpr.clone(), cfg.clone(), clock.clone()).unwrap();
    let secs = t.elapsed().as_secs_f64();
    let s = e.stats();
    println!(
        "restart with {} documents: {secs:.2} s; index {:.1} B/doc, records ~{:.1} B/doc",
        s.documents,
        s.index_bytes as f64 / s.documents as f64,
        s.record_bytes as f64 / s.documents as f64
    );
    (e, secs)
}

/// Documents a preload of `n` stores: random fingerprints within the distance of an earlier one
/// (about `n^2 * 43 000 / 2^65`: 3 at 50 M) are answered "duplicate" and not stored.
fn min_docs(n: usize) -> u64 {
    n as u64 - n as u64 / 10_000
}

const START_MS: i64 = 1_699_984_800_000;
const DAY_MS: i64 = 86_400_000;

fn engine_benches(c: &mut Criterion) {
    let n = env_num("NEARDUP_BENCH_DOCS", 1_000_000);
    // Restarts measured (the median is printed too).
    let restarts = env_num("NEARDUP_BENCH_RESTARTS", 1).max(1);
    let dir = common::BenchDir::from_env();
    // A fixed "now" after the preload: every preloaded document is live (retention two days),
    // whether it was preloaded by this run or an earlier one.
    let clock = Arc::new(ManualClock::new(START_MS));
    let cfg = EngineConfig {
        detector: neardup::engine::EngineDetector::Simhash,
        sync: SyncMode::None,
        index_bytes_per_doc: std::env::var("NEARDUP_BENCH_INDEX_BYTES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(EngineConfig::default().index_bytes_per_doc),
        maintenance_interval: None,
        snapshot_interval: None,
        snapshot_records: u64::MAX,
        ..EngineConfig::default()
    };
    let fpr = Fingerprinter::new(FingerprintConfig::default()).unwrap();
    let mut rng = SplitMix64::new(5);
    let fps: Vec<u64> = (0..n).map(|_| rng.next()).collect();
    // The measured documents must be new in a reused directory: a fresh seed and id prefix.
    let run = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let mut rng = SplitMix64::new(run);

    let mut times = Vec::new();
    let mut engine = None;
    let have_enough = std::fs::read_dir(dir.path()).unwrap().next().is_some() && {
        clock.set(START_MS + DAY_MS);
        let (e, secs) = restart(dir.path(), &fpr, &cfg, &clock);
        let enough = e.stats().documents >= min_docs(n);
        if enough {
            times.push(secs);
            engine = Some(e);
        }
        enough
    };
    if have_enough {
        println!("reusing the engine in {}", dir.path().display());
    } else {
        engine = None;
        preload(dir.path(), &fpr, &cfg, &clock, &fps);
    }
    clock.set(START_MS + DAY_MS);
    while times.len() < restarts {
        drop(engine.take());
        let (e, secs) = restart(dir.path(), &fpr, &cfg, &clock);
        times.push(secs);
        engine = Some(e);
    }
    let e = engine.take().unwrap();
    times.sort_by(f64::total_cmp);
    println!(
        "restart median of {}: {:.2} s",
        times.len(),
        times[times.len() / 2]
    );
    let s = e.stats();
    assert!(s.documents >= min_docs(n));
    for j in [0, n / 2, n - 1] {
        // Stored, or a near-duplicate of a stored document.
        match e.get(&format!("doc-{j}")) {
            Some(d) => assert_eq!(d.fingerprint, Some(fps[j])),
            None => assert!(!e.query_fingerprint(fps[j]).hits.is_empty()),
        }
    }
    if std::env::var_os("NEARDUP_BENCH_RESTART_ONLY").is_some() {
        return;
    }
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
            .check_and_insert(Doc::fingerprint(format!("lat-{run}-{k}"), fp))
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
            .prepare(Doc::fingerprint(format!("split-{run}-{k}"), rng.next()))
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
                .check_and_insert(Doc::fingerprint(format!("new-{run}-{i}"), rng.next()))
                .unwrap();
            o.decision
        })
    });
    let mut j = 0usize;
    g.bench_function("check_and_insert_duplicate", |b| {
        b.iter(|| {
            j = (j + 7919) % n;
            let o = e
                .check_and_insert(Doc::fingerprint(format!("dup-{run}-{j}"), fps[j] ^ 0b11))
                .unwrap();
            // doc-j itself may be one of the few near-duplicates the preload did not store.
            assert!(
                matches!(
                    o.decision,
                    Decision::Duplicate {
                        distance: Some(2),
                        ..
                    }
                ) || e.get(&format!("doc-{j}")).is_none()
            );
            o
        })
    });
    g.bench_function("query_fingerprint", |b| {
        b.iter(|| {
            j = (j + 7919) % n;
            let q = e.query_fingerprint(fps[j] ^ 1);
            assert!(
                q.hits.first().and_then(|h| h.distance) == Some(1)
                    || e.get(&format!("doc-{j}")).is_none()
            );
            q
        })
    });
    g.finish();
    assert!(e.stats().documents > stored);
    if let common::BenchDir::Kept(_) = dir {
        // Leave a snapshot behind so the next run's restart loads it without a long log replay.
        e.shutdown().unwrap();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(5));
    targets = engine_benches
}
criterion_main!(benches);
