//! The engine under its default detector (`auto`, as `neardup dedup`): an engine preloaded
//! with N documents of real text (`NEARDUP_BENCH_DOCS`, default 200 000; 80 % long, 20 %
//! short, each made unique by a numbered sentence), sync mode `none`. Prints the preload rate,
//! memory per document (engine's own accounting and the process's resident-set growth), the
//! restart time, and percentiles of `check_and_insert` for a unique document and for a
//! near-duplicate (one character replaced in a stored document), then runs criterion on the
//! same two operations. Every measured answer is asserted.
//!
//! ```sh
//! cargo bench -p neardup --bench engine_auto
//! NEARDUP_BENCH_DOCS=1000000 cargo bench -p neardup --bench engine_auto
//! NEARDUP_BENCH_NO_VETO=1 cargo bench -p neardup --bench engine_auto   # without the template veto
//! NEARDUP_BENCH_BY_CONTENT=1 cargo bench -p neardup --bench engine_auto # the veto judging by content
//! NEARDUP_BENCH_NO_PASSAGES=1 cargo bench -p neardup --bench engine_auto # long texts not indexed by their sentences
//! NEARDUP_BENCH_ALL_LONG=1 cargo bench -p neardup --bench engine_auto  # long documents only
//! NEARDUP_BENCH_SEGMENTS=4 cargo bench -p neardup --bench engine_auto   # spread over 4 segments
//! NEARDUP_BENCH_RESTARTS=5 cargo bench -p neardup --bench engine_auto   # the median of 5 restarts
//! ```
//!
//! `NEARDUP_BENCH_DIR=/path` keeps the preloaded engine there: a later run with the same
//! settings that finds documents in it skips the preload and measures the restart of that
//! directory (the checks then add their documents to it). `NEARDUP_BENCH_RESTART_ONLY=1` stops
//! after the restarts, so that a profile of the run is the restarts alone.
//!
//! With `NEARDUP_BENCH_SEGMENTS=s` the preload's timestamps span `s` time segments (default
//! 1), as a service's window does. Maintenance freezes every segment's band tables (the
//! current one's again once an eighth of its documents came since), after the preload and
//! after the restart (timed and printed apart).
//!
//! The short documents recombine spans of a small pool (~1.8 k texts of `zh_fortunes`), so past
//! a million documents each new one shares spans with thousands of stored ones (a stream of
//! reposts of a few posts: the short path's worst case); the long path alone
//! (`NEARDUP_BENCH_ALL_LONG`) is what measures further. `NEARDUP_BENCH_SHORT=lines` makes each
//! short document one distinct line of 30–140 characters of every corpus instead (~300 k of
//! them, shuffled; a line and the lines near it in a manual or a speech share phrases, but
//! no pool is recombined), as captions, posts and one-line notes are.

#[path = "common/mod.rs"]
mod common;

// The allocator of the `neardup` binary (the server): memory and restart as it runs them.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use neardup::engine::{Decision, Doc, Engine, EngineConfig, EngineError, ManualClock, SyncMode};
use neardup::template_veto::TemplateVetoOptions;
use neardup::{FingerprintConfig, Fingerprinter};

/// Long and short base texts (corpora, or the bundled fixtures).
fn bases() -> (Vec<String>, Vec<String>) {
    let long: Vec<String> = common::corpus_texts("zh_debian_docs.jsonl", 600, 8 << 20)
        .into_iter()
        .map(|t| t.chars().take(2000).collect())
        .collect();
    let short: Vec<String> = common::corpus_texts("zh_fortunes.jsonl", 30, 1 << 20)
        .into_iter()
        .filter(|t| t.chars().count() >= 40)
        .collect();
    if !long.is_empty() && !short.is_empty() {
        return (long, short);
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let text = std::fs::read_to_string(dir.join("sanguo_ch1.txt")).unwrap();
    let paras: Vec<String> = text
        .split('\n')
        .filter(|p| p.len() > 60)
        .map(String::from)
        .collect();
    (
        paras.clone(),
        paras.iter().map(|p| p.chars().take(40).collect()).collect(),
    )
}

/// Whether document `i` is short: every fifth, unless `NEARDUP_BENCH_ALL_LONG` is set.
fn is_short(i: usize) -> bool {
    static ALL_LONG: std::sync::LazyLock<bool> =
        std::sync::LazyLock::new(|| std::env::var_os("NEARDUP_BENCH_ALL_LONG").is_some());
    !*ALL_LONG && i % 5 == 4
}

/// Whether short documents are distinct corpus lines (`NEARDUP_BENCH_SHORT=lines`).
static SHORT_LINES: std::sync::LazyLock<bool> =
    std::sync::LazyLock::new(|| std::env::var("NEARDUP_BENCH_SHORT").as_deref() == Ok("lines"));

/// SplitMix64 of `x`: the spans a document is made of.
fn mix(x: u64) -> u64 {
    neardup::index::random::SplitMix64::new(x).next()
}

/// `len` characters of a base text chosen by `h`, from an offset chosen by `h`.
fn span(bases: &[String], h: u64, len: usize) -> String {
    let b = &bases[(h % bases.len() as u64) as usize];
    let n = b.chars().count();
    let start = ((h >> 32) as usize) % n.saturating_sub(len).max(1);
    b.chars().skip(start).take(len).collect()
}

/// Document `i`: spans of random base texts (long: six of 300 characters; short: two of 40),
/// so that two documents rarely share more than a span; every fifth is short.
fn doc(long: &[String], short: &[String], i: usize) -> String {
    if is_short(i) && *SHORT_LINES {
        // One distinct line each (the pool is ~300 k lines: a run beyond it repeats them).
        return short[(i / 5) % short.len()].clone();
    }
    let (bases, spans, len) = if is_short(i) {
        (short, 2, 40)
    } else {
        (long, 6, 300)
    };
    (0..spans)
        .map(|j| span(bases, mix((i as u64) << 4 | j), len))
        .collect::<Vec<_>>()
        .join("。")
}

fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

/// The resident set's anonymous and file-backed kilobytes (`RssAnon`, `RssFile`): pages of
/// the spill files that reads mapped are file-backed, which the kernel may drop.
fn rss_split_kib() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    (field("RssAnon:"), field("RssFile:"))
}

/// The `p` quantile of `v` (zero when `v` is empty: no such documents were measured).
fn pct(mut v: Vec<Duration>, p: f64) -> Duration {
    v.sort_unstable();
    v.get((v.len().saturating_sub(1) as f64 * p) as usize)
        .copied()
        .unwrap_or_default()
}

/// Runs maintenance (which freezes the segments' band tables) and prints its time and
/// the engine's memory; returns the segments frozen.
fn freeze(engine: &Engine, when: &str) -> u64 {
    let before = engine.stats();
    let t = Instant::now();
    engine.maintain().unwrap();
    let after = engine.stats();
    let frozen = after.freezes - before.freezes;
    println!(
        "maintenance {when}: {:.2} s, {frozen} segments' band tables frozen; index {:.0} -> {:.0} B/doc",
        t.elapsed().as_secs_f64(),
        before.index_bytes as f64 / before.documents.max(1) as f64,
        after.index_bytes as f64 / after.documents.max(1) as f64
    );
    frozen
}

fn bench(c: &mut Criterion) {
    let n: usize = std::env::var("NEARDUP_BENCH_DOCS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000);
    let (long, short) = bases();
    let short = if *SHORT_LINES {
        let lines = common::corpus_lines(30, 140);
        assert!(
            !lines.is_empty(),
            "NEARDUP_BENCH_SHORT=lines needs the corpora (NEARDUP_CORPORA)"
        );
        println!("short documents: {} distinct corpus lines", lines.len());
        lines
    } else {
        short
    };
    let dir = common::BenchDir::from_env();
    let restart_only = std::env::var_os("NEARDUP_BENCH_RESTART_ONLY").is_some();
    let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let veto = std::env::var_os("NEARDUP_BENCH_NO_VETO").is_none();
    let cfg = EngineConfig {
        sync: SyncMode::None,
        maintenance_interval: None,
        ..EngineConfig::default()
    };
    // `NEARDUP_BENCH_BY_CONTENT=1`: the veto with `TemplateVetoOptions::by_content`.
    let by_content = std::env::var_os("NEARDUP_BENCH_BY_CONTENT").is_some();
    let cfg = if veto {
        EngineConfig {
            template_veto: cfg
                .template_veto
                .clone()
                .map(|v| TemplateVetoOptions { by_content, ..v }),
            ..cfg
        }
    } else {
        EngineConfig {
            detector: neardup::engine::EngineDetector::auto(false),
            template_veto: None,
            ..cfg
        }
    };
    // `NEARDUP_BENCH_NO_PASSAGES=1`: long texts not indexed by their sentences.
    let passages = std::env::var_os("NEARDUP_BENCH_NO_PASSAGES").is_none();
    let cfg = match cfg.detector.clone() {
        neardup::engine::EngineDetector::Auto(mut p) if !passages => {
            p.passages = None;
            EngineConfig {
                detector: neardup::engine::EngineDetector::Auto(p),
                ..cfg
            }
        }
        _ => cfg,
    };
    println!("passages: {}", if passages { "on" } else { "off" });
    println!(
        "template veto: {}",
        match (veto, by_content) {
            (false, _) => "off",
            (true, false) => "on",
            (true, true) => "on, by content",
        }
    );
    let segments: i64 = std::env::var("NEARDUP_BENCH_SEGMENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let segment_ms = (cfg.retention.as_millis() / cfg.segments as u128) as i64;
    assert!(
        (1..=cfg.segments as i64).contains(&segments),
        "NEARDUP_BENCH_SEGMENTS must be 1 to {}",
        cfg.segments
    );
    // Start at a segment's beginning; each batch moves the clock on by its share of `segments`.
    let t0 = 1_700_000_000_000 / segment_ms * segment_ms;
    clock.set(t0);
    let rss0 = rss_bytes();
    let split0 = rss_split_kib();
    // The clock as the preload leaves it: at its last batch.
    let preloaded_at =
        t0 + ((n.max(1) - 1) / 10_000 * 10_000) as i64 * segments * segment_ms / n.max(1) as i64;
    let engine = Engine::open(dir.path(), fp.clone(), cfg.clone(), clock.clone()).unwrap();
    let started = Instant::now();
    let mut bytes = 0usize;
    let mut uniques = 0usize;
    let reused = engine.stats().documents as usize;
    if reused > 0 {
        println!("preload: {reused} documents found in NEARDUP_BENCH_DIR, not preloaded again");
        uniques = reused;
        clock.set(preloaded_at);
    }
    for start in (0..n).step_by(10_000).filter(|_| reused == 0) {
        clock.set(t0 + (start as i64 * segments * segment_ms) / n as i64);
        let docs: Vec<Doc> = (start..(start + 10_000).min(n))
            .map(|i| {
                let t = doc(&long, &short, i);
                bytes += t.len();
                Doc::text(format!("doc-{i}"), t)
            })
            .collect();
        for r in engine.check_and_insert_batch(docs) {
            match r {
                Ok(o) => uniques += usize::from(o.decision == Decision::Unique),
                // A few spans are only punctuation and space: nothing to sketch.
                Err(EngineError::Fingerprint(neardup::Error::EmptyDocument { .. })) => {}
                Err(e) => panic!("{e}"),
            }
        }
    }
    let secs = started.elapsed().as_secs_f64();
    let frozen = freeze(&engine, "after the preload");
    let stats = engine.stats();
    let rss = rss_bytes().saturating_sub(rss0);
    println!(
        "preload: {n} documents ({:.1} MB), {uniques} unique, {:.0} docs/s ({:.1} MB/s) on this machine's threads",
        bytes as f64 / 1e6,
        n as f64 / secs,
        bytes as f64 / 1e6 / secs
    );
    assert!(
        reused > 0 || uniques * 10 >= n * 9,
        "the preload is mostly unique ({uniques} of {n})"
    );
    println!(
        "memory: index {:.0} B/doc + records {:.0} B/doc (engine accounting); resident growth {:.0} B/doc; kept sketches spilled to the data directory {:.0} B/doc",
        stats.index_bytes as f64 / stats.documents as f64,
        stats.record_bytes as f64 / stats.documents as f64,
        rss as f64 / stats.documents as f64,
        stats.spilled_bytes as f64 / stats.documents as f64
    );
    let split = rss_split_kib();
    println!(
        "resident growth: anonymous {:.0} B/doc, file-backed {:.0} B/doc",
        split.0.saturating_sub(split0.0) as f64 * 1024.0 / stats.documents as f64,
        split.1.saturating_sub(split0.1) as f64 * 1024.0 / stats.documents as f64
    );
    engine.shutdown().unwrap();
    drop(engine);
    // The log and snapshot on disk: what a Redis record of the same sketches also carries.
    let disk: u64 = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum();
    println!(
        "on disk (log + snapshot): {:.0} B/doc",
        disk as f64 / uniques as f64
    );
    // Restarts beyond the first (NEARDUP_BENCH_RESTARTS, default 1): their median is printed
    // too, and a profile of the run is then mostly restarts.
    let restarts: usize = std::env::var("NEARDUP_BENCH_RESTARTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
        .max(1);
    let mut times = Vec::with_capacity(restarts);
    for _ in 1..restarts {
        let t = Instant::now();
        let engine = Engine::open(dir.path(), fp.clone(), cfg.clone(), clock.clone()).unwrap();
        times.push(t.elapsed().as_secs_f64());
        assert_eq!(engine.stats().documents as usize, uniques);
        engine.shutdown().unwrap();
        drop(engine);
    }
    let t = Instant::now();
    let engine = Engine::open(dir.path(), fp, cfg, clock).unwrap();
    times.push(t.elapsed().as_secs_f64());
    println!(
        "restart: {:.2} s for {} documents",
        t.elapsed().as_secs_f64(),
        engine.stats().documents
    );
    if restarts > 1 {
        times.sort_by(f64::total_cmp);
        println!(
            "restart: median {:.2} s of {restarts} ({:.2} to {:.2} s)",
            times[restarts / 2],
            times[0],
            times[restarts - 1]
        );
    }
    assert_eq!(engine.stats().documents as usize, uniques);
    if restart_only {
        return;
    }
    // A restart builds every segment's band tables frozen: maintenance finds nothing to do.
    let before = engine.stats().index_bytes;
    freeze(&engine, "after the restart");
    assert!(
        engine.stats().index_bytes * 10 <= stats.index_bytes * 11,
        "the restarted index ({before} B, then {} B) is not as compact as the preloaded one ({} B; {frozen} segments frozen)",
        engine.stats().index_bytes,
        stats.index_bytes
    );

    // Percentiles of single checks.
    let mut next = n;
    let mut unique_t = Vec::new();
    let mut dup_t = Vec::new();
    let mut new_unique = [0usize; 2];
    let mut matched_by: std::collections::BTreeMap<String, usize> = Default::default();
    let mut sketch_t = Vec::new();
    // Decision times of new long and new short documents apart: the short path's candidates
    // are confirmed by alignment, the long path's by comparing signatures.
    let mut decide_t = [Vec::new(), Vec::new()];
    for k in 0..2000 {
        let t = doc(&long, &short, next);
        let short_doc = is_short(next);
        next += 1;
        let s = Instant::now();
        let o = engine.prepare(Doc::text(format!("u{next}"), t)).map(|p| {
            let sketched = s.elapsed();
            let d = Instant::now();
            let o = engine.decide(vec![p]).wait().pop().unwrap().unwrap();
            decide_t[usize::from(short_doc)].push(d.elapsed());
            sketch_t.push(sketched);
            o
        });
        unique_t.push(s.elapsed());
        // New compositions of spans: unique but for the rare short one that happens to be
        // within the edit-distance threshold of a stored one.
        match o {
            Ok(o) if o.decision == Decision::Unique => new_unique[usize::from(short_doc)] += 1,
            Ok(o) => {
                if let Decision::Duplicate { stage, .. } = &o.decision {
                    let kind = if short_doc { "short" } else { "long" };
                    *matched_by.entry(format!("{kind}/{stage:?}")).or_default() += 1;
                }
            }
            Err(_) => {}
        }
        // A stored long document with one character replaced in its middle.
        let j = (k * 7919) % n;
        let j = if is_short(j) { j - 1 } else { j };
        let orig = doc(&long, &short, j);
        let mid = orig.chars().count() / 2;
        let copy: String = orig
            .chars()
            .enumerate()
            .map(|(i, ch)| if i == mid { '＃' } else { ch })
            .collect();
        let s = Instant::now();
        let o = engine
            .check_and_insert(Doc::text(format!("c{next}"), copy))
            .unwrap();
        dup_t.push(s.elapsed());
        assert!(
            matches!(&o.decision, Decision::Duplicate { .. }),
            "a one-character edit of doc-{j} must be a duplicate: {:?}",
            o.decision
        );
    }
    let shorts = (n..n + 2000).filter(|&i| is_short(i)).count();
    println!(
        "new compositions: {} of {} long and {} of {shorts} short unique; matched by {matched_by:?}",
        new_unique[0],
        2000 - shorts,
        new_unique[1]
    );
    // A new short composition is two 40-character spans of the short pool: at 40 k stored
    // short documents, one of its spans often lies inside a stored one (a containment match,
    // as the short path should find).
    // Distinct corpus lines (`NEARDUP_BENCH_SHORT=lines`) are often near-copies of stored ones
    // (a manual's lines that differ by a word or a number): at a million documents a third of
    // them match one.
    let short_unique = if *SHORT_LINES { 2 } else { 5 };
    assert!(
        new_unique[0] + 8 >= 2000 - shorts
            && new_unique[1] * short_unique >= shorts * (short_unique - 1),
        "new compositions must be unique but for a few: {new_unique:?}, {matched_by:?}"
    );
    let [decide_long, decide_short] = decide_t;
    let all: Vec<Duration> = decide_long.iter().chain(&decide_short).copied().collect();
    println!(
        "new document split: sketch p50 {:?} p99 {:?}; decision + acknowledgement p50 {:?} p99 {:?} (long: p50 {:?} p99 {:?}; short: p50 {:?} p99 {:?})",
        pct(sketch_t.clone(), 0.5),
        pct(sketch_t, 0.99),
        pct(all.clone(), 0.5),
        pct(all, 0.99),
        pct(decide_long.clone(), 0.5),
        pct(decide_long, 0.99),
        pct(decide_short.clone(), 0.5),
        pct(decide_short, 0.99)
    );
    println!(
        "check_and_insert, new document: p50 {:?} p99 {:?}; near-duplicate: p50 {:?} p99 {:?}",
        pct(unique_t.clone(), 0.5),
        pct(unique_t, 0.99),
        pct(dup_t.clone(), 0.5),
        pct(dup_t, 0.99)
    );

    let docs = engine.stats().documents as f64;
    let split = rss_split_kib();
    println!(
        "resident growth after the restart and the checks: {:.0} B/doc (anonymous {:.0}, file-backed {:.0})",
        rss_bytes().saturating_sub(rss0) as f64 / docs,
        split.0.saturating_sub(split0.0) as f64 * 1024.0 / docs,
        split.1.saturating_sub(split0.1) as f64 * 1024.0 / docs
    );
    freeze(&engine, "after the checks");
    let split = rss_split_kib();
    println!(
        "resident growth once maintenance has run: {:.0} B/doc (anonymous {:.0}; file pages are let go at most once a minute)",
        rss_bytes().saturating_sub(rss0) as f64 / docs,
        split.0.saturating_sub(split0.0) as f64 * 1024.0 / docs
    );

    let mut g = c.benchmark_group("engine_auto");
    g.bench_function("check_and_insert_new", |b| {
        b.iter(|| {
            let t = doc(&long, &short, next);
            next += 1;
            // Decided either way (see above); an error would be a failure.
            let o = engine.check_and_insert(Doc::text(format!("u{next}"), t));
            assert!(o.is_ok() || matches!(o, Err(EngineError::Fingerprint(_))));
        })
    });
    let dup = doc(&long, &short, 0);
    g.bench_function("check_and_insert_duplicate", |b| {
        b.iter(|| {
            let o = engine
                .check_and_insert(Doc::text("dup", dup.clone()))
                .unwrap();
            assert!(matches!(o.decision, Decision::Duplicate { .. }));
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(5));
    targets = bench
}
criterion_main!(benches);
