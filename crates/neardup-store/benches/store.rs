//! Store benchmarks. Each bench also asserts its result is correct.
//!
//! * `append/none` — single-thread appends, `SyncMode::None` (records/s, MB/s);
//! * `append/none_wait` — append + `Ticket::wait` per record, one thread, `SyncMode::None`:
//!   the acknowledgement path the engine takes for every unique document (prints p50/p99);
//! * `append/always/{1,4,16}` — concurrent `append_durable` under
//!   `SyncMode::Always`; prints records per fdatasync (group commit);
//! * `recovery/replay` — open + iterate a 1M-record log (records/s);
//! * `recovery/snapshot_load` — open a 256 MiB snapshot: mmap + CRC (GB/s).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use neardup_store::{Store, StoreOptions, SyncMode};

const RECORD: usize = 64;

/// threads -> (records, fdatasyncs) summed over all Always samples.
static GROUP_COMMIT: Mutex<BTreeMap<u64, (u64, u64)>> = Mutex::new(BTreeMap::new());

fn opts(sync: SyncMode) -> StoreOptions {
    StoreOptions {
        sync,
        config: b"bench-config".to_vec(),
        ..Default::default()
    }
}

fn record(i: u64) -> [u8; RECORD] {
    let mut r = [0u8; RECORD];
    r[..8].copy_from_slice(&i.to_le_bytes());
    r[8..16].copy_from_slice(&i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_le_bytes());
    r
}

fn bench_append(c: &mut Criterion) {
    let mut g = c.benchmark_group("append");
    g.sample_size(10)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_millis(500));

    // SyncMode::None, one thread.
    let n = 100_000u64;
    g.throughput(Throughput::Bytes(n * RECORD as u64));
    g.bench_function("none/1", |b| {
        b.iter_custom(|iters| {
            let dir = tempfile::tempdir().unwrap();
            let (store, _) = Store::open(dir.path(), opts(SyncMode::None)).unwrap();
            let start = Instant::now();
            let mut last = None;
            for _ in 0..iters {
                for i in 0..n {
                    last = Some(store.append(&record(i)).unwrap());
                }
            }
            last.unwrap().wait().unwrap();
            let el = start.elapsed();
            assert_eq!(store.last_lsn(), iters * n);
            drop(store);
            let (_s, rec) = Store::open(dir.path(), opts(SyncMode::None)).unwrap();
            assert_eq!(rec.log.len(), iters * n);
            el
        })
    });

    // SyncMode::None, append + wait per record (the engine's pattern).
    g.throughput(Throughput::Elements(1));
    let lat = Mutex::new(Vec::new());
    g.bench_function("none_wait", |b| {
        b.iter_custom(|iters| {
            let dir = tempfile::tempdir().unwrap();
            let (store, _) = Store::open(dir.path(), opts(SyncMode::None)).unwrap();
            let mut l = Vec::with_capacity(iters as usize);
            let start = Instant::now();
            for i in 0..iters {
                let t = Instant::now();
                assert_eq!(store.append(&record(i)).unwrap().wait().unwrap(), i + 1);
                l.push(t.elapsed());
            }
            let el = start.elapsed();
            lat.lock().unwrap().extend(l);
            el
        })
    });
    let mut l = lat.into_inner().unwrap();
    l.sort();
    if !l.is_empty() {
        let q = |p: f64| l[((l.len() - 1) as f64 * p) as usize].as_secs_f64() * 1e6;
        eprintln!(
            "append+wait, sync none, 1 thread: p50 {:.1} µs, p99 {:.1} µs, p99.9 {:.1} µs ({} calls)",
            q(0.5),
            q(0.99),
            q(0.999),
            l.len()
        );
    }

    // SyncMode::Always, 1/4/16 threads: group commit.
    for threads in [1u64, 4, 16] {
        let per_thread = 200u64;
        g.throughput(Throughput::Elements(threads * per_thread));
        g.bench_with_input(
            BenchmarkId::new("always", threads),
            &threads,
            |b, &threads| {
                b.iter_custom(|iters| {
                    let dir = tempfile::tempdir().unwrap();
                    let (store, _) = Store::open(dir.path(), opts(SyncMode::Always)).unwrap();
                    let store = Arc::new(store);
                    let start = Instant::now();
                    for _ in 0..iters {
                        let hs: Vec<_> = (0..threads)
                            .map(|t| {
                                let store = Arc::clone(&store);
                                std::thread::spawn(move || {
                                    for i in 0..per_thread {
                                        store.append_durable(&record(t * 1_000_000 + i)).unwrap();
                                    }
                                })
                            })
                            .collect();
                        hs.into_iter().for_each(|h| h.join().unwrap());
                    }
                    let el = start.elapsed();
                    let st = store.stats();
                    assert_eq!(st.last_lsn, iters * threads * per_thread);
                    assert_eq!(st.durable_lsn, st.last_lsn);
                    let mut t = GROUP_COMMIT.lock().unwrap();
                    let e = t.entry(threads).or_default();
                    e.0 += st.last_lsn;
                    e.1 += st.fsyncs;
                    el
                })
            },
        );
    }
    g.finish();
    for (threads, (records, fsyncs)) in GROUP_COMMIT.lock().unwrap().iter() {
        eprintln!(
            "group commit, {threads:>2} threads: {records} records / {fsyncs} fdatasyncs = {:.1} records per fdatasync",
            *records as f64 / (*fsyncs).max(1) as f64
        );
    }
}

fn bench_recovery(c: &mut Criterion) {
    let mut g = c.benchmark_group("recovery");
    g.sample_size(10)
        .measurement_time(Duration::from_secs(5))
        .warm_up_time(Duration::from_millis(500));

    // Replay a 1M-record log.
    let n = 1_000_000u64;
    let dir = tempfile::tempdir().unwrap();
    {
        let (store, _) = Store::open(dir.path(), opts(SyncMode::None)).unwrap();
        for i in 0..n {
            let _queued = store.append(&record(i)).unwrap();
        }
        store.close().unwrap();
    }
    g.throughput(Throughput::Elements(n));
    g.bench_function("replay_1M", |b| {
        b.iter(|| {
            let (_s, rec) = Store::open(dir.path(), opts(SyncMode::None)).unwrap();
            let mut count = 0u64;
            let mut sum = 0u64;
            for (lsn, p) in rec.log.iter() {
                count += 1;
                sum = sum.wrapping_add(lsn ^ u64::from(p[0]));
            }
            assert_eq!(count, n);
            sum
        })
    });

    // Open a 256 MiB snapshot: mmap + CRC verification of the body.
    let body_len = 256u64 << 20;
    let sdir = tempfile::tempdir().unwrap();
    {
        let (store, _) = Store::open(sdir.path(), opts(SyncMode::None)).unwrap();
        store.append_durable(b"x").unwrap();
        store
            .snapshot(1, |w| {
                let chunk: Vec<u8> = (0..1u32 << 20).map(|i| (i * 31 % 251) as u8).collect();
                for _ in 0..body_len >> 20 {
                    w.write_all(&chunk)?;
                }
                Ok(())
            })
            .unwrap();
    }
    g.throughput(Throughput::Bytes(body_len));
    g.bench_function("snapshot_load_256MiB", |b| {
        b.iter(|| {
            let (_s, rec) = Store::open(sdir.path(), opts(SyncMode::None)).unwrap();
            let snap = rec.snapshot.as_ref().unwrap();
            assert_eq!(snap.body().len() as u64, body_len);
            assert_eq!(snap.body()[12345], (12345u32 * 31 % 251) as u8);
        })
    });
    g.finish();
}

criterion_group!(benches, bench_append, bench_recovery);
criterion_main!(benches);
