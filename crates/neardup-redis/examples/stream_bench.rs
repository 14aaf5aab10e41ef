//! The shared-log Redis backend ([`StreamEngine`], `auto` detector) against a local Redis
//! started by this program: preload rate, Redis memory per stored document, the time a new
//! instance takes to rebuild its index from the log, and check throughput with two instances
//! (closed loop, concurrent requests per instance), both for pre-sketched documents (the
//! decision path: local decision + one script call per round) and for texts (sketching
//! included).
//!
//! `cargo run --release -p neardup-redis --example stream_bench -- [preload] [checks-per-instance] [doc-bytes] [clients-per-instance] [batch]`
//! (defaults 50000, 20000, 2048, 16, 1). Documents are texts of random words; half of the
//! checks are copies of stored documents with one word replaced (must be duplicates), half
//! fresh texts (must be unique): every answer is verified.

#[path = "../tests/integration/common/mod.rs"]
mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use neardup::engine::{Decision, Doc, EngineConfig, PreparedDoc, SystemClock};
use neardup::{FingerprintConfig, Fingerprinter};
use neardup_redis::StreamEngine;

fn arg(i: usize, default: usize) -> usize {
    std::env::args()
        .nth(i)
        .map(|s| s.parse().expect("a number"))
        .unwrap_or(default)
}

fn used_memory(port: u16) -> u64 {
    common::cli(port, &["info", "memory"])
        .lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("used_memory")
}

fn pct(v: &mut [Duration], p: f64) -> Duration {
    v.sort_unstable();
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

/// A text of random words of about `bytes` bytes (distinct seeds share almost no shingles).
fn text(seed: u64, bytes: usize) -> String {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    let mut out = String::with_capacity(bytes + 16);
    while out.len() < bytes {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let len = 3 + x % 6;
        let mut y = x;
        for _ in 0..len {
            out.push((b'a' + (y % 26) as u8) as char);
            y /= 26;
        }
        out.push(' ');
    }
    out
}

/// A copy of `text(seed)` with its fifth word replaced.
fn copy_of(seed: u64, bytes: usize) -> String {
    let t = text(seed, bytes);
    let mut words: Vec<&str> = t.split(' ').collect();
    words[4] = "replaced";
    words.join(" ")
}

fn cfg() -> EngineConfig {
    EngineConfig {
        ..EngineConfig::default()
    }
}

async fn instance(url: &str, dir: &std::path::Path) -> StreamEngine {
    let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
    StreamEngine::connect(url, "bench", dir, fp, cfg(), Arc::new(SystemClock))
        .await
        .unwrap()
}

/// Runs `clients` closed-loop clients on each instance; returns (checks/s, p50, p99).
async fn run(
    instances: &[Arc<StreamEngine>],
    work: Arc<Vec<(Doc, bool)>>,
    prepared: bool,
    clients: usize,
    batch: usize,
) -> (f64, Duration, Duration) {
    let total = work.len();
    let per_client = total / (instances.len() * clients);
    // Pre-sketched documents are sketched before the clock starts.
    let sketched: Arc<Vec<PreparedDoc>> = Arc::new(if prepared {
        use rayon::prelude::*;
        work.par_iter()
            .map(|(d, _)| instances[0].engine().prepare(d.clone()).unwrap())
            .collect()
    } else {
        Vec::new()
    });
    let t = Instant::now();
    let mut tasks = Vec::new();
    for (k, inst) in instances.iter().enumerate() {
        for c in 0..clients {
            let inst = Arc::clone(inst);
            let work = Arc::clone(&work);
            let sketched = Arc::clone(&sketched);
            let start = (k * clients + c) * per_client;
            tasks.push(tokio::spawn(async move {
                let mut lat = Vec::new();
                for (j, chunk) in work[start..start + per_client].chunks(batch).enumerate() {
                    let t = Instant::now();
                    let answers = if prepared {
                        let from = start + j * batch;
                        inst.decide(sketched[from..from + chunk.len()].to_vec())
                            .await
                    } else {
                        let docs: Vec<Doc> = chunk.iter().map(|(d, _)| d.clone()).collect();
                        inst.check_and_insert(docs).await
                    };
                    lat.push(t.elapsed());
                    for ((d, dup), a) in chunk.iter().zip(answers) {
                        let a = a.unwrap();
                        assert_eq!(
                            matches!(a.decision, Decision::Duplicate { .. }),
                            *dup,
                            "{}",
                            d.id
                        );
                    }
                }
                lat
            }));
        }
    }
    let mut lat = Vec::new();
    for t in tasks {
        lat.extend(t.await.unwrap());
    }
    let secs = t.elapsed().as_secs_f64();
    let n = instances.len() * clients * per_client;
    (n as f64 / secs, pct(&mut lat, 0.5), pct(&mut lat, 0.99))
}

fn main() {
    let preload = arg(1, 50_000);
    let per = arg(2, 20_000);
    let bytes = arg(3, 2048);
    let clients = arg(4, 16);
    let batch = arg(5, 1);
    let redis = common::RedisServer::start(false);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    rt.block_on(async {
        let before = used_memory(redis.port);
        let a = Arc::new(instance(&redis.url(), dir.path()).await);
        let t = Instant::now();
        let mut seed = 0u64;
        while (seed as usize) < preload {
            let docs: Vec<Doc> = (seed..(seed + 512).min(preload as u64))
                .map(|i| Doc::text(format!("p{i}"), text(i, bytes)))
                .collect();
            seed += docs.len() as u64;
            for r in a.check_and_insert(docs).await {
                assert_eq!(r.unwrap().decision, Decision::Unique);
            }
        }
        let secs = t.elapsed().as_secs_f64();
        let stats = a.stats().await.unwrap();
        let after = used_memory(redis.port);
        println!(
            "preload: {preload} documents of {bytes} B in {secs:.1} s ({:.0} docs/s, one instance, batches of 512)",
            preload as f64 / secs
        );
        println!(
            "Redis memory: {:.0} B per document (used_memory delta), stream {:.0} B per entry; local index {:.0} B per document",
            (after - before) as f64 / preload as f64,
            stats.log_bytes as f64 / stats.log_entries.max(1) as f64,
            stats.index_bytes as f64 / stats.documents.max(1) as f64,
        );
        let t = Instant::now();
        let b = Arc::new(instance(&redis.url(), dir.path()).await);
        println!(
            "restart: a new instance applied {} entries in {:.2} s",
            b.stats().await.unwrap().documents,
            t.elapsed().as_secs_f64()
        );
        let instances = [a, b];
        for (round, prepared) in [(1u64, true), (2, false)] {
            // Half copies of preloaded documents, half fresh texts, interleaved.
            let work: Vec<(Doc, bool)> = (0..2 * per as u64)
                .map(|i| {
                    if i % 2 == 0 {
                        let s = (i / 2) % preload as u64;
                        (Doc::text(format!("c{round}-{i}"), copy_of(s, bytes)), true)
                    } else {
                        let s = 1_000_000_000 * round + i;
                        (Doc::text(format!("f{round}-{i}"), text(s, bytes)), false)
                    }
                })
                .collect();
            let (rate, p50, p99) = run(&instances, Arc::new(work), prepared, clients, batch).await;
            println!(
                "{}: two instances x {clients} clients, batches of {batch}: {rate:.0} checks/s, request p50 {:.2} ms, p99 {:.2} ms",
                if prepared { "decisions (pre-sketched)" } else { "texts (sketched by the instance)" },
                p50.as_secs_f64() * 1e3,
                p99.as_secs_f64() * 1e3
            );
        }
        let s = instances[0].stats().await.unwrap();
        println!(
            "retries (another instance appended first): {} and {}",
            s.retries,
            instances[1].stats().await.unwrap().retries
        );
    });
}
