//! The embedded-engine HTTP server as `neardup serve` runs it (default fingerprint
//! configuration, a tokio runtime with one worker per core), without building the CLI: the
//! target of `examples/loadgen.rs` when measuring the server crate on its own.
//!
//! ```text
//! cargo run --release -p neardup-server --example server -- \
//!     --data-dir /tmp/nd-data --addr 127.0.0.1:8080 --sync always|batch|none [--workers N]
//! ```
//! Stops on SIGINT/SIGTERM (sync + snapshot) and prints the store's group-commit figures
//! (log records per fdatasync).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use neardup::engine::{Engine, EngineConfig, SyncMode, SystemClock};
use neardup_server::{serve, shutdown_signal, EngineBackend, ServerOptions};

fn main() {
    let mut dir = PathBuf::from("neardup-data");
    let mut addr: SocketAddr = "127.0.0.1:8080".parse().unwrap();
    let mut sync = SyncMode::Always;
    let mut workers = 0usize;
    let args: Vec<String> = std::env::args().skip(1).collect();
    for pair in args.chunks(2) {
        let v = pair.get(1).cloned().unwrap_or_default();
        match pair[0].as_str() {
            "--data-dir" => dir = v.into(),
            "--addr" => addr = v.parse().expect("--addr HOST:PORT"),
            "--workers" => workers = v.parse().expect("--workers N"),
            "--sync" => {
                sync = match v.as_str() {
                    "always" => SyncMode::Always,
                    "batch" => SyncMode::Batch {
                        interval: Duration::from_millis(100),
                    },
                    "none" => SyncMode::None,
                    s => panic!("--sync {s}: use always, batch or none"),
                }
            }
            a => panic!("unknown argument {a}"),
        }
    }
    std::fs::create_dir_all(&dir).expect("create --data-dir");
    let fp = neardup::Fingerprinter::new(Default::default()).expect("fingerprinter");
    let cfg = EngineConfig {
        sync,
        ..EngineConfig::default()
    };
    let engine = Arc::new(Engine::open(&dir, fp, cfg, Arc::new(SystemClock)).expect("open"));
    let backend = Arc::new(EngineBackend::new(Arc::clone(&engine)));
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    if workers > 0 {
        rt.worker_threads(workers);
    }
    let rt = rt.enable_all().build().expect("runtime");
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr).await.expect("bind");
        let stop = shutdown_signal().expect("signal handlers");
        eprintln!("listening on http://{}", listener.local_addr().unwrap());
        serve(listener, backend, ServerOptions::default(), stop)
            .await
            .expect("serve");
    });
    let s = engine.stats();
    println!(
        "stored {} documents; {} log records, {} fdatasyncs ({:.1} records per fdatasync)",
        s.documents,
        s.last_lsn,
        s.log_syncs,
        s.last_lsn as f64 / s.log_syncs.max(1) as f64
    );
}
