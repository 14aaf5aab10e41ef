//! Throughput and latency of check-and-insert against a local Redis and a local 3-master
//! cluster (started by this program on loopback ports), with 1, 2 and 4 concurrent instances
//! (separate connections, closed loop), and the embedded engine in-process for comparison;
//! plus Redis memory per stored fingerprint.
//!
//! `cargo run --release -p neardup-redis --example bench -- [preload] [checks-per-instance]`
//! (defaults 200000 and 20000). Every answer is verified: copies of stored fingerprints must be
//! duplicates of them, fresh random fingerprints unique.
//!
//! Environment: `BENCH_ONLY=single|cluster|embedded` runs one part;
//! `BENCH_ZSET_LISTPACK=N` starts Redis with `zset-max-listpack-entries N` (memory at scale).

#[path = "../tests/integration/common/mod.rs"]
mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use neardup::engine::{Decision as EDecision, Doc, Engine, EngineConfig, SyncMode, SystemClock};
use neardup_index::random::SplitMix64;
use neardup_redis::{Decision, RedisBackend, RedisConfig};

fn used_memory(ports: &[u16]) -> u64 {
    ports
        .iter()
        .map(|&p| {
            common::cli(p, &["info", "memory"])
                .lines()
                .find_map(|l| l.strip_prefix("used_memory:"))
                .and_then(|v| v.trim().parse::<u64>().ok())
                .expect("used_memory")
        })
        .sum()
}

fn pct(v: &mut [Duration], p: f64) -> Duration {
    v.sort_unstable();
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

/// The i-th preloaded fingerprint (distinct, random).
fn stored(i: u64) -> u64 {
    SplitMix64::new(i ^ 0x5555).next()
}

async fn run_redis(label: &str, url: &str, ports: &[u16], preload: u64, per: u64) {
    let opts = RedisConfig {
        prefix: "bench".into(),
        ..RedisConfig::default()
    };
    let b = RedisBackend::connect(url, opts.clone()).await.unwrap();
    let before = used_memory(ports);
    let t = Instant::now();
    let ids: Vec<(String, u64, Option<i64>)> = (0..preload)
        .map(|i| (format!("p{i}"), stored(i), None))
        .collect();
    for chunk in ids.chunks(2000) {
        for r in b.check_and_insert_batch(chunk).await {
            assert_eq!(r.unwrap().decision, Decision::Unique);
        }
    }
    let load = t.elapsed();
    let after = used_memory(ports);
    println!(
        "{label}: preload {preload} in {:.1} s ({:.0}/s, batch waves); used_memory delta {:.1} B per fingerprint",
        load.as_secs_f64(),
        preload as f64 / load.as_secs_f64(),
        (after - before) as f64 / preload as f64
    );
    for (round, instances) in [1u64, 2, 4].into_iter().enumerate() {
        let round = round as u64 + 1;
        let mut tasks = Vec::new();
        let start = Instant::now();
        for inst in 0..instances {
            let b = RedisBackend::connect(url, opts.clone()).await.unwrap();
            tasks.push(tokio::spawn(async move {
                let mut lat = Vec::with_capacity(per as usize);
                let mut rng = SplitMix64::new(round << 40 | inst << 32);
                for j in 0..per {
                    let r = rng.next();
                    let t = Instant::now();
                    if j % 2 == 0 {
                        // A near copy of a stored document.
                        let i = r % preload;
                        let fp = stored(i) ^ (1 << (r >> 58));
                        let o = b
                            .check_and_insert(&format!("c{round}-{inst}-{j}"), fp, None)
                            .await
                            .unwrap();
                        lat.push(t.elapsed());
                        assert!(matches!(
                            o.decision,
                            Decision::Duplicate { ref of, distance: Some(1), .. } if *of == format!("p{i}")
                        ));
                    } else {
                        let o = b
                            .check_and_insert(&format!("u{round}-{inst}-{j}"), r, None)
                            .await
                            .unwrap();
                        lat.push(t.elapsed());
                        assert_eq!(o.decision, Decision::Unique);
                    }
                }
                lat
            }));
        }
        let mut lat = Vec::new();
        for t in tasks {
            lat.extend(t.await.unwrap());
        }
        let el = start.elapsed();
        println!(
            "{label}: {instances} instance(s): {:.0} checks/s, p50 {:.0} us, p99 {:.0} us",
            lat.len() as f64 / el.as_secs_f64(),
            pct(&mut lat, 0.5).as_secs_f64() * 1e6,
            pct(&mut lat, 0.99).as_secs_f64() * 1e6
        );
    }
}

fn run_embedded(label: &str, sync: SyncMode, preload: u64, per: u64) {
    let dir = tempfile::tempdir().unwrap();
    let fp = neardup::Fingerprinter::new(Default::default()).unwrap();
    let cfg = EngineConfig {
        sync,
        ..EngineConfig::default()
    };
    let e = Arc::new(Engine::open(dir.path(), fp, cfg, Arc::new(SystemClock)).unwrap());
    let docs: Vec<Doc> = (0..preload)
        .map(|i| Doc::fingerprint(format!("p{i}"), stored(i)))
        .collect();
    for chunk in docs.chunks(10_000) {
        for r in e.check_and_insert_batch(chunk.to_vec()) {
            assert_eq!(r.unwrap().decision, EDecision::Unique);
        }
    }
    for threads in [1u64, 2, 4] {
        let start = Instant::now();
        let hs: Vec<_> = (0..threads)
            .map(|inst| {
                let e = Arc::clone(&e);
                std::thread::spawn(move || {
                    let mut lat = Vec::with_capacity(per as usize);
                    let mut rng = SplitMix64::new(threads << 40 | inst << 32 | 7);
                    for j in 0..per {
                        let r = rng.next();
                        let t = Instant::now();
                        if j % 2 == 0 {
                            let i = r % preload;
                            let o = e
                                .check_and_insert(Doc::fingerprint(
                                    format!("c{threads}-{inst}-{j}"),
                                    stored(i) ^ (1 << (r >> 58)),
                                ))
                                .unwrap();
                            lat.push(t.elapsed());
                            assert!(matches!(o.decision, EDecision::Duplicate { .. }));
                        } else {
                            let o = e
                                .check_and_insert(Doc::fingerprint(
                                    format!("u{threads}-{inst}-{j}"),
                                    r,
                                ))
                                .unwrap();
                            lat.push(t.elapsed());
                            assert_eq!(o.decision, EDecision::Unique);
                        }
                    }
                    lat
                })
            })
            .collect();
        let mut lat: Vec<Duration> = hs.into_iter().flat_map(|h| h.join().unwrap()).collect();
        let el = start.elapsed();
        println!(
            "{label}: {threads} thread(s): {:.0} checks/s, p50 {:.1} us, p99 {:.1} us",
            lat.len() as f64 / el.as_secs_f64(),
            pct(&mut lat, 0.5).as_secs_f64() * 1e6,
            pct(&mut lat, 0.99).as_secs_f64() * 1e6
        );
    }
    e.shutdown().unwrap();
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let preload = args.first().copied().unwrap_or(200_000);
    let per = args.get(1).copied().unwrap_or(20_000);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let only = std::env::var("BENCH_ONLY").unwrap_or_default();
    let want = |part: &str| only.is_empty() || only == part;
    let listpack = std::env::var("BENCH_ZSET_LISTPACK").ok();
    let extra: Vec<&str> = match &listpack {
        Some(n) => vec!["--zset-max-listpack-entries", n.as_str()],
        None => Vec::new(),
    };
    if want("single") {
        let server = common::RedisServer::start_with(false, &extra);
        rt.block_on(run_redis(
            "redis single",
            &server.url(),
            &[server.port],
            preload,
            per,
        ));
        // Server-side cost of the check script (independent of client scheduling noise).
        if let Some(l) = server
            .cli(&["info", "commandstats"])
            .lines()
            .find(|l| l.starts_with("cmdstat_evalsha:"))
        {
            println!("redis single: {l}");
        }
    }
    if want("cluster") {
        let cluster = common::RedisCluster::start();
        let ports: Vec<u16> = cluster.nodes.iter().map(|n| n.port).collect();
        rt.block_on(run_redis(
            "redis cluster(3)",
            &cluster.url(),
            &ports,
            preload,
            per,
        ));
    }
    if want("embedded") {
        run_embedded("embedded (sync always)", SyncMode::Always, preload, per);
        run_embedded("embedded (sync none)", SyncMode::None, preload, per);
    }
}
