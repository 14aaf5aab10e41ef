//! Load generator for `neardup serve`: N concurrent keep-alive clients submit documents to
//! `POST /v1/documents` (or `/v1/documents/batch` with `--batch B`) and it prints throughput
//! and latency percentiles.
//!
//! ```text
//! cargo run --release -p neardup-server --example loadgen -- \
//!     --addr 127.0.0.1:8080 --clients 64 --requests 200000 --mode fingerprints
//! cargo run --release -p neardup-server --example loadgen -- \
//!     --addr 127.0.0.1:8080 --clients 16 --requests 20000 --mode text \
//!     --corpus ../../../shared/corpora/zh_debian_docs.jsonl --doc-bytes 2048
//! ```
//! Fingerprint mode sends random fingerprints, a `--dup-rate` share of them within distance
//! 2 of an earlier one. Text mode cuts the corpus (`{"text": …}` JSON lines) into documents of
//! about `--doc-bytes` bytes. Options: `--token T`, `--prefix P` (id prefix, to rerun against
//! a non-empty server), `--threads N` (the generator's own worker threads; default one per
//! core — on the server's machine, fewer leave it more CPU).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use neardup_server::client::Client;
use serde_json::json;

/// Reports a fatal error and exits (status 1).
fn fail(msg: &str) -> ! {
    eprintln!("loadgen: {msg}");
    std::process::exit(1)
}

struct Opts {
    addr: SocketAddr,
    clients: usize,
    requests: usize,
    mode: String,
    corpus: Option<String>,
    doc_bytes: usize,
    batch: usize,
    dup_rate: f64,
    token: Option<String>,
    prefix: String,
    threads: usize,
}

fn parse() -> Opts {
    let mut o = Opts {
        addr: "127.0.0.1:8080".parse().unwrap(),
        clients: 32,
        requests: 100_000,
        mode: "fingerprints".into(),
        corpus: None,
        doc_bytes: 2048,
        batch: 1,
        dup_rate: 0.1,
        token: std::env::var("NEARDUP_TOKEN").ok(),
        prefix: format!("lg{}-", std::process::id()),
        threads: 0,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let v = args.get(i + 1).cloned().unwrap_or_default();
        match args[i].as_str() {
            "--addr" => o.addr = v.parse().expect("--addr HOST:PORT"),
            "--clients" => o.clients = v.parse().expect("--clients N"),
            "--requests" => o.requests = v.parse().expect("--requests N"),
            "--mode" => o.mode = v,
            "--corpus" => o.corpus = Some(v),
            "--doc-bytes" => o.doc_bytes = v.parse().expect("--doc-bytes N"),
            "--batch" => o.batch = v.parse::<usize>().expect("--batch N").max(1),
            "--dup-rate" => o.dup_rate = v.parse().expect("--dup-rate 0..1"),
            "--token" => o.token = Some(v),
            "--prefix" => o.prefix = v,
            "--threads" => o.threads = v.parse().expect("--threads N"),
            a => panic!("unknown argument {a}"),
        }
        i += 2;
    }
    o
}

fn splitmix(s: &mut u64) -> u64 {
    let mut g = neardup::index::random::SplitMix64::new(*s);
    let v = g.next();
    *s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
    v
}

/// Documents of about `bytes` bytes cut from the corpus' texts at character boundaries.
fn corpus_docs(path: &str, bytes: usize) -> Vec<String> {
    let text = std::fs::read_to_string(path).expect("read --corpus");
    let mut out = Vec::new();
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let Some(t) = v["text"].as_str() else {
            continue;
        };
        let mut cur = String::new();
        for c in t.chars() {
            cur.push(c);
            if cur.len() >= bytes {
                out.push(std::mem::take(&mut cur));
            }
        }
        if cur.len() >= bytes / 2 {
            out.push(cur);
        }
    }
    assert!(!out.is_empty(), "no documents in {path}");
    out
}

fn main() {
    let o = parse();
    let docs = Arc::new(match (&o.mode[..], &o.corpus) {
        ("text", Some(p)) => corpus_docs(p, o.doc_bytes),
        ("text", None) => panic!("--mode text needs --corpus FILE.jsonl"),
        ("fingerprints", _) => Vec::new(),
        (m, _) => panic!("--mode {m}: use fingerprints or text"),
    });
    if !docs.is_empty() {
        let avg = docs.iter().map(|d| d.len()).sum::<usize>() / docs.len();
        println!("corpus: {} documents of {avg} bytes on average", docs.len());
    }
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    if o.threads > 0 {
        rt.worker_threads(o.threads);
    }
    let rt = rt.enable_all().build().unwrap();
    let per_client = o.requests.div_ceil(o.clients);
    let started = Instant::now();
    let results = rt.block_on(async {
        let mut tasks = Vec::new();
        for c in 0..o.clients {
            let docs = Arc::clone(&docs);
            let (addr, token, prefix, batch, dup_rate) = (
                o.addr,
                o.token.clone(),
                o.prefix.clone(),
                o.batch,
                o.dup_rate,
            );
            tasks.push(tokio::spawn(async move {
                let mut client = match Client::connect(addr).await {
                    Ok(c) => c,
                    Err(e) => fail(&format!(
                        "cannot connect to {addr}: {e} (is `neardup serve` running there?)"
                    )),
                };
                if let Some(t) = &token {
                    client = client.with_token(t);
                }
                let mut rng = prefix.bytes().fold(0x1234_5678u64, |h, b| {
                    h.rotate_left(8) ^ u64::from(b) ^ splitmix(&mut (h + 1))
                }) ^ (c as u64) << 32;
                let mut recent: Vec<u64> = Vec::new();
                let mut lat = Vec::with_capacity(per_client);
                let (mut unique, mut dup, mut errors) = (0u64, 0u64, 0u64);
                for i in 0..per_client {
                    let mut items = Vec::with_capacity(batch);
                    for b in 0..batch {
                        let id = format!("{prefix}{c}-{i}-{b}");
                        if docs.is_empty() {
                            let r = splitmix(&mut rng);
                            let fp = if !recent.is_empty()
                                && (r % 10_000) as f64 / 10_000.0 < dup_rate
                            {
                                recent[(r >> 20) as usize % recent.len()] ^ (1 << (r % 64))
                            } else {
                                let f = splitmix(&mut rng);
                                if recent.len() < 4096 {
                                    recent.push(f);
                                }
                                f
                            };
                            // Formatted directly, no JSON tree (the load generator shares
                            // the cores with the server).
                            let id = serde_json::to_string(&id).expect("a string");
                            items.push(format!(r#"{{"id":{id},"fingerprint":"{fp:016x}"}}"#));
                        } else {
                            let d = &docs[(splitmix(&mut rng) as usize) % docs.len()];
                            items.push(json!({"id": id, "text": d}).to_string());
                        }
                    }
                    let (path, body) = if batch == 1 {
                        ("/v1/documents", items.pop().unwrap())
                    } else {
                        ("/v1/documents/batch", format!("[{}]", items.join(",")))
                    };
                    let t = Instant::now();
                    let (status, resp) = match client.post_json(path, &body).await {
                        Ok(r) => r,
                        Err(e) => fail(&format!(
                            "request to {addr}{path} failed: {e} (did the server stop?)"
                        )),
                    };
                    lat.push(t.elapsed().as_micros() as u64);
                    if status != 200 {
                        errors += 1;
                        continue;
                    }
                    unique += resp.matches("\"status\":\"unique\"").count() as u64;
                    dup += resp.matches("\"status\":\"duplicate\"").count() as u64;
                }
                (lat, unique, dup, errors)
            }));
        }
        let mut all = Vec::new();
        for t in tasks {
            all.push(t.await.unwrap());
        }
        all
    });
    let secs = started.elapsed().as_secs_f64();
    let mut lat: Vec<u64> = results.iter().flat_map(|r| r.0.iter().copied()).collect();
    let (unique, dup, errors) = results
        .iter()
        .fold((0, 0, 0), |a, r| (a.0 + r.1, a.1 + r.2, a.2 + r.3));
    lat.sort_unstable();
    let pct = |p: f64| lat[((lat.len() as f64 * p) as usize).min(lat.len() - 1)];
    let reqs = lat.len() as f64;
    println!(
        "{} requests x {} docs, {} clients, {:.2} s: {:.0} requests/s, {:.0} docs/s; unique {unique}, duplicate {dup}, errors {errors}",
        lat.len(),
        o.batch,
        o.clients,
        secs,
        reqs / secs,
        reqs * o.batch as f64 / secs
    );
    println!(
        "latency us: p50 {} p90 {} p99 {} p99.9 {} max {}",
        pct(0.5),
        pct(0.9),
        pct(0.99),
        pct(0.999),
        lat[lat.len() - 1]
    );
}
