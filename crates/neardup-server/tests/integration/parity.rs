//! One detector everywhere, through HTTP: a planted set from real corpora streamed in arrival
//! order through `POST /v1/documents/batch` of a fresh server gets exactly the decisions of
//! batch dedup with the service's detector (`neardup dedup --no-template-veto`): the same document
//! is answered duplicate, of the same earlier document, by the same stage.
//!
//! Real text from `shared/corpora` (`NEARDUP_CORPORA`, default `../shared/corpora` beside the
//! repository), or the library's bundled fixtures when absent.

use std::path::PathBuf;
use std::sync::Arc;

use neardup::dedup::{dedup, Keep};
use neardup::engine::{Engine, EngineConfig, SyncMode, SystemClock};
use neardup::eval::{jsonl_sources, make_set, MakeOptions, SourceDoc};
use neardup::policy::{AutoDetector, PolicyOptions};
use neardup::{FingerprintConfig, Fingerprinter};
use neardup_server::{client::Client, serve, EngineBackend, ServerOptions};
use serde_json::Value;

fn sources() -> Vec<SourceDoc> {
    let dir = std::env::var_os("NEARDUP_CORPORA")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpora")
        });
    let mut out = Vec::new();
    for (f, n) in [
        ("zh_fortunes.jsonl", 300),
        ("en_debian_docs.jsonl", 150),
        ("zh_debian_docs.jsonl", 150),
    ] {
        if let Ok(docs) = jsonl_sources(&dir.join(f), n, 3000) {
            out.extend(docs);
        }
    }
    if out.is_empty() {
        let fx = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../neardup/tests/fixtures");
        for f in ["sanguo_ch1.txt", "moby_dick_excerpt.txt"] {
            let text = std::fs::read_to_string(fx.join(f)).unwrap();
            out.extend(
                text.split('\n')
                    .filter(|p| p.trim().len() > 20)
                    .map(|p| SourceDoc {
                        label: f.into(),
                        text: p.into(),
                    }),
            );
        }
    }
    out
}

#[test]
fn streaming_through_http_gives_dedups_decisions() {
    let set = make_set(
        &sources(),
        &MakeOptions {
            seed: 11,
            max_sources: 400,
            min_chars: 10,
            ..MakeOptions::default()
        },
    );
    let texts: Vec<String> = set.docs.iter().map(|d| d.text.clone()).collect();
    let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
    let batch = dedup(
        AutoDetector::new(fp.clone(), PolicyOptions::default()).unwrap(),
        &texts,
        Keep::First,
    )
    .unwrap();
    // (duplicate_of position, stage) per document, as dedup decides.
    let want: Vec<Option<(usize, String)>> = batch
        .outcomes
        .iter()
        .map(|o| {
            o.duplicate_of
                .map(|d| (d as usize, o.stage.unwrap().to_string()))
        })
        .collect();
    assert!(
        want.iter().filter(|w| w.is_some()).count() * 10 > texts.len(),
        "the set holds near-duplicates"
    );

    let dir = tempfile::tempdir().unwrap();
    let cfg = EngineConfig {
        sync: SyncMode::None,
        maintenance_interval: None,
        detector: neardup::engine::EngineDetector::auto(false),
        template_veto: None,
        ..EngineConfig::default()
    };
    let engine = Engine::open(dir.path(), fp, cfg, Arc::new(SystemClock)).unwrap();
    let backend = Arc::new(EngineBackend::new(Arc::new(engine)));
    let rt = tokio::runtime::Runtime::new().unwrap();
    let got: Vec<Option<(usize, String)>> = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(listener, backend, ServerOptions::default(), async {
            let _ = stopped.await;
        }));
        let mut c = Client::connect(addr).await.unwrap();
        let mut got = Vec::new();
        for (n, chunk) in texts.chunks(50).enumerate() {
            let body: Vec<Value> = chunk
                .iter()
                .enumerate()
                .map(|(i, t)| serde_json::json!({"id": format!("d{}", n * 50 + i), "text": t}))
                .collect();
            let (status, resp) = c
                .post_json("/v1/documents/batch", &Value::Array(body).to_string())
                .await
                .unwrap();
            assert_eq!(status, 200, "{resp}");
            let answers: Value = serde_json::from_str(&resp).unwrap();
            for a in answers.as_array().unwrap() {
                got.push(match a["status"].as_str().unwrap() {
                    "unique" => None,
                    "duplicate" => Some((
                        a["duplicate_of"].as_str().unwrap()[1..].parse().unwrap(),
                        a["stage"].as_str().unwrap().to_string(),
                    )),
                    // Empty after normalisation: dedup keeps it as its own cluster.
                    "error" => None,
                    s => panic!("unexpected status {s}: {a}"),
                });
            }
        }
        stop.send(()).unwrap();
        server.await.unwrap().unwrap();
        got
    });
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "document {i}: service {g:?}, dedup {w:?}");
    }
}
