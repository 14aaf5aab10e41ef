//! HTTP API tests: every route, every bad-input path, auth, body limit, and concurrency over
//! real sockets (many clients sending the same and near-identical documents at once).

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use neardup::engine::{Engine, EngineConfig, ManualClock};
use neardup_server::client::Client;
use neardup_server::{router, serve, Backend, EngineBackend, ServerOptions};
use serde_json::{json, Value};
use tower::ServiceExt;

const T0: i64 = 1_699_984_800_000;

struct Fixture {
    _dir: tempfile::TempDir,
    clock: Arc<ManualClock>,
    backend: Arc<EngineBackend>,
    app: axum::Router,
}

fn fixture(cfg: ServerOptions) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let engine = Engine::open(
        dir.path(),
        neardup::Fingerprinter::new(Default::default()).unwrap(),
        EngineConfig {
            detector: neardup::engine::EngineDetector::Simhash,
            maintenance_interval: None,
            ..EngineConfig::default()
        },
        clock.clone(),
    )
    .unwrap();
    let backend = Arc::new(EngineBackend::new(Arc::new(engine)));
    let app = router(backend.clone(), &cfg);
    Fixture {
        _dir: dir,
        clock,
        backend,
        app,
    }
}

async fn call(
    app: &axum::Router,
    method: &str,
    path: &str,
    body: Option<&str>,
    token: Option<&str>,
) -> (StatusCode, Value) {
    let mut req = Request::builder().method(method).uri(path);
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    let req = req
        .header("content-type", "application/json")
        .body(body.map_or_else(Body::empty, |b| Body::from(b.to_owned())))
        .unwrap();
    let resp = app.clone().oneshot(req).await.unwrap();
    let status = resp.status();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    let v = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    (status, v)
}

fn code(v: &Value) -> &str {
    v["error"]["code"].as_str().unwrap_or("")
}

#[tokio::test]
async fn every_route() {
    let f = fixture(ServerOptions::default());
    let app = &f.app;
    let (s, v) = call(
        app,
        "POST",
        "/v1/documents",
        Some(r#"{"id":"a","text":"你妈妈喊你回家吃饭哦，回家罗回家罗","timestamp":1699984700.5}"#),
        None,
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["status"], "unique");
    assert_eq!(v["duplicate_of"], Value::Null);
    assert_eq!(v["stored"], true);
    assert_eq!(v["timestamp"], 1699984700.5);
    let fp = v["fingerprint"].as_str().unwrap().to_owned();
    assert_eq!(fp.len(), 16);
    let (s, v) = call(
        app,
        "POST",
        "/v1/documents",
        Some(r#"{"id":"b","text":"你妈妈叫你回家吃饭啦，回家罗回家罗"}"#),
        None,
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        (v["status"].as_str(), v["duplicate_of"].as_str()),
        (Some("duplicate"), Some("a"))
    );
    assert!(v["distance"].as_u64().unwrap() <= 3);
    assert_eq!(v["stored"], false);
    // Same id again: documented as a duplicate of itself.
    let (_, v) = call(
        app,
        "POST",
        "/v1/documents",
        Some(&format!(r#"{{"id":"a","fingerprint":"{fp}"}}"#)),
        None,
    )
    .await;
    assert_eq!(
        (
            v["status"].as_str(),
            v["duplicate_of"].as_str(),
            v["distance"].as_u64()
        ),
        (Some("duplicate"), Some("a"), Some(0))
    );
    // Integer ids.
    let (_, v) = call(
        app,
        "POST",
        "/v1/documents",
        Some(r#"{"id":42,"fingerprint":"0x123456789abcdef0"}"#),
        None,
    )
    .await;
    assert_eq!(
        (v["id"].as_str(), v["status"].as_str()),
        (Some("42"), Some("unique"))
    );
    // Batch: in order, later items see earlier ones, bad items answered in place.
    let (s, v) = call(
        app,
        "POST",
        "/v1/documents/batch",
        Some(r#"[{"id":"c","fingerprint":"f0f0f0f0f0f0f0f0"},{"id":"d","fingerprint":"f0f0f0f0f0f0f0f1"},{"id":"e"},{"id":"f","text":"   "},{"id":"g","fingerprint":"0f0f0f0f0f0f0f0f"}]"#),
        None,
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    let items = v.as_array().unwrap();
    assert_eq!(items.len(), 5);
    assert_eq!(items[0]["status"], "unique");
    assert_eq!(
        (
            items[1]["status"].as_str(),
            items[1]["duplicate_of"].as_str()
        ),
        (Some("duplicate"), Some("c"))
    );
    assert_eq!(
        (items[2]["status"].as_str(), items[2]["id"].as_str()),
        (Some("error"), Some("e"))
    );
    assert_eq!(items[3]["error"]["code"], "invalid_document");
    assert_eq!(items[4]["status"], "unique");
    // Query: no insert.
    let (s, v) = call(
        app,
        "POST",
        "/v1/query",
        Some(r#"{"fingerprint":"f0f0f0f0f0f0f0f3"}"#),
        None,
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        (
            v["status"].as_str(),
            v["duplicate_of"].as_str(),
            v["distance"].as_u64()
        ),
        (Some("duplicate"), Some("c"), Some(2))
    );
    assert_eq!(v["matches"].as_array().unwrap().len(), 1);
    let (_, v) = call(
        app,
        "POST",
        "/v1/query",
        Some(r#"{"text":"something else entirely, about whales and ships"}"#),
        None,
    )
    .await;
    assert_eq!(v["status"], "unique");
    assert_eq!(
        call(app, "GET", "/v1/documents/f0", None, None).await.0,
        StatusCode::NOT_FOUND
    );
    // Get / delete.
    let (s, v) = call(app, "GET", "/v1/documents/c", None, None).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v["fingerprint"], "f0f0f0f0f0f0f0f0");
    let (s, v) = call(app, "DELETE", "/v1/documents/c", None, None).await;
    assert_eq!((s, v["removed"].as_bool()), (StatusCode::OK, Some(true)));
    let (s, v) = call(app, "DELETE", "/v1/documents/c", None, None).await;
    assert_eq!((s, code(&v)), (StatusCode::NOT_FOUND, "not_found"));
    let (s, v) = call(app, "GET", "/v1/documents/c", None, None).await;
    assert_eq!((s, code(&v)), (StatusCode::NOT_FOUND, "not_found"));
    // Ids with URL-escaped characters.
    call(
        app,
        "POST",
        "/v1/documents",
        Some(r#"{"id":"http://x/y?z=1","fingerprint":"1"}"#),
        None,
    )
    .await;
    let (s, v) = call(
        app,
        "GET",
        "/v1/documents/http%3A%2F%2Fx%2Fy%3Fz%3D1",
        None,
        None,
    )
    .await;
    assert_eq!(
        (s, v["id"].as_str()),
        (StatusCode::OK, Some("http://x/y?z=1"))
    );
    // Stats, health, metrics.
    let (s, v) = call(app, "GET", "/v1/stats", None, None).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v["backend"], "embedded");
    assert_eq!(v["documents"], 4);
    assert!(v["details"]["log_syncs"].as_u64().unwrap() > 0);
    let (s, v) = call(app, "GET", "/healthz", None, None).await;
    assert_eq!((s, v["status"].as_str()), (StatusCode::OK, Some("ok")));
    let (s, v) = call(app, "GET", "/metrics", None, None).await;
    assert_eq!(s, StatusCode::OK);
    let text = v.as_str().unwrap();
    for m in [
        "neardup_http_requests_total",
        "neardup_http_request_duration_seconds_bucket",
        "neardup_documents",
        "neardup_index_bytes",
        "neardup_log_syncs_total",
        "neardup_expired_total",
    ] {
        assert!(text.contains(m), "{m} missing from\n{text}");
    }
    // Retention through the API: after two days everything is gone.
    f.clock
        .advance(std::time::Duration::from_secs(2 * 86_400 + 1));
    assert_eq!(
        call(app, "GET", "/v1/documents/a", None, None).await.0,
        StatusCode::NOT_FOUND
    );
    // Shutdown: writes refused (503), reads still answered, health reports it.
    f.backend.shutdown().await.unwrap();
    let (s, v) = call(
        app,
        "POST",
        "/v1/documents",
        Some(r#"{"id":"z","fingerprint":"77"}"#),
        None,
    )
    .await;
    assert_eq!(
        (s, code(&v)),
        (StatusCode::SERVICE_UNAVAILABLE, "unavailable")
    );
    assert_eq!(
        call(app, "GET", "/healthz", None, None).await.0,
        StatusCode::SERVICE_UNAVAILABLE
    );
}

#[tokio::test]
async fn bad_input_paths() {
    let f = fixture(ServerOptions {
        body_limit: 4096,
        max_batch: 3,
        ..ServerOptions::default()
    });
    let app = &f.app;
    let cases: &[(&str, &str, &str, StatusCode, &str)] = &[
        (
            "POST",
            "/v1/documents",
            "not json",
            StatusCode::BAD_REQUEST,
            "bad_json",
        ),
        (
            "POST",
            "/v1/documents",
            "",
            StatusCode::BAD_REQUEST,
            "bad_json",
        ),
        (
            "POST",
            "/v1/documents",
            "[1,2]",
            StatusCode::BAD_REQUEST,
            "bad_json",
        ),
        (
            "POST",
            "/v1/documents",
            r#"{"id":"a","text":"x","extra":1}"#,
            StatusCode::BAD_REQUEST,
            "bad_json",
        ),
        (
            "POST",
            "/v1/documents",
            r#"{"id":"a","text":5}"#,
            StatusCode::BAD_REQUEST,
            "bad_json",
        ),
        (
            "POST",
            "/v1/documents",
            r#"{"text":"hello world"}"#,
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_document",
        ),
        (
            "POST",
            "/v1/documents",
            r#"{"id":"","text":"hello world"}"#,
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_document",
        ),
        (
            "POST",
            "/v1/documents",
            r#"{"id":[1],"text":"hello world"}"#,
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_document",
        ),
        (
            "POST",
            "/v1/documents",
            r#"{"id":"a"}"#,
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_document",
        ),
        (
            "POST",
            "/v1/documents",
            r#"{"id":"a","text":"x y","fingerprint":"1"}"#,
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_document",
        ),
        (
            "POST",
            "/v1/documents",
            r#"{"id":"a","fingerprint":"xyz"}"#,
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_document",
        ),
        (
            "POST",
            "/v1/documents",
            r#"{"id":"a","fingerprint":"12345678901234567"}"#,
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_document",
        ),
        (
            "POST",
            "/v1/documents",
            r#"{"id":"a","text":"  <p> </p> "}"#,
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_document",
        ),
        (
            "POST",
            "/v1/documents",
            r#"{"id":"a","fingerprint":"1","timestamp":1e300}"#,
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_document",
        ),
        (
            "POST",
            "/v1/documents",
            r#"{"id":"a","fingerprint":"1","timestamp":"yesterday"}"#,
            StatusCode::BAD_REQUEST,
            "bad_json",
        ),
        (
            "POST",
            "/v1/documents/batch",
            r#"{"id":"a"}"#,
            StatusCode::BAD_REQUEST,
            "bad_json",
        ),
        (
            "POST",
            "/v1/documents/batch",
            r#"[{},{},{},{}]"#,
            StatusCode::UNPROCESSABLE_ENTITY,
            "batch_too_large",
        ),
        (
            "POST",
            "/v1/query",
            r#"{}"#,
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_document",
        ),
        (
            "POST",
            "/v1/query",
            r#"{"text":""}"#,
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_document",
        ),
        ("GET", "/v1/nothing", "", StatusCode::NOT_FOUND, "no_route"),
    ];
    for &(m, p, b, status, c) in cases {
        let (s, v) = call(app, m, p, Some(b), None).await;
        assert_eq!((s, code(&v)), (status, c), "{m} {p} {b}: {v}");
        assert!(!v["error"]["message"].as_str().unwrap().is_empty());
    }
    let long_id = "x".repeat(1025);
    let (s, v) = call(
        app,
        "POST",
        "/v1/documents",
        Some(&format!(r#"{{"id":"{long_id}","fingerprint":"1"}}"#)),
        None,
    )
    .await;
    assert_eq!(
        (s, code(&v)),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_document")
    );
    assert_eq!(
        call(app, "GET", &format!("/v1/documents/{long_id}"), None, None)
            .await
            .0,
        StatusCode::UNPROCESSABLE_ENTITY
    );
    let big = format!(r#"{{"id":"a","text":"{}"}}"#, "长".repeat(5000));
    let (s, v) = call(app, "POST", "/v1/documents", Some(&big), None).await;
    assert_eq!(
        (s, code(&v)),
        (StatusCode::PAYLOAD_TOO_LARGE, "body_too_large")
    );
    // Wrong method.
    assert_eq!(
        call(app, "PUT", "/v1/documents", Some("{}"), None).await.0,
        StatusCode::METHOD_NOT_ALLOWED
    );
    // Nothing was stored by any of it.
    assert_eq!(f.backend.engine().stats().documents, 0);
}

#[tokio::test]
async fn bearer_token_on_every_route_but_healthz() {
    let f = fixture(ServerOptions {
        token: Some("s3cret".into()),
        ..ServerOptions::default()
    });
    let app = &f.app;
    for (m, p, b) in [
        (
            "POST",
            "/v1/documents",
            Some(r#"{"id":"a","fingerprint":"1"}"#),
        ),
        ("POST", "/v1/documents/batch", Some("[]")),
        ("POST", "/v1/query", Some(r#"{"fingerprint":"1"}"#)),
        ("GET", "/v1/documents/a", None),
        ("DELETE", "/v1/documents/a", None),
        ("GET", "/v1/stats", None),
        ("GET", "/metrics", None),
    ] {
        for token in [None, Some("wrong"), Some("s3cre")] {
            let (s, v) = call(app, m, p, b, token).await;
            assert_eq!(
                (s, code(&v)),
                (StatusCode::UNAUTHORIZED, "unauthorized"),
                "{m} {p} {token:?}"
            );
        }
        let (s, _) = call(app, m, p, b, Some("s3cret")).await;
        assert_ne!(s, StatusCode::UNAUTHORIZED, "{m} {p}");
    }
    assert_eq!(
        call(app, "GET", "/healthz", None, None).await.0,
        StatusCode::OK
    );
    assert_eq!(
        f.backend.engine().stats().documents,
        0,
        "the authorized DELETE removed it"
    );
}

/// Many clients over real sockets send the same and near-identical documents at once:
/// exactly one is unique per group; then a graceful shutdown snapshots and a reopen agrees.
#[test]
fn concurrent_clients_exactly_one_unique_per_group() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let fpr = neardup::Fingerprinter::new(Default::default()).unwrap();
    let cfg = EngineConfig {
        detector: neardup::engine::EngineDetector::Simhash,
        maintenance_interval: None,
        ..EngineConfig::default()
    };
    let engine = Engine::open(dir.path(), fpr.clone(), cfg.clone(), clock.clone()).unwrap();
    let backend: Arc<dyn Backend> = Arc::new(EngineBackend::new(Arc::new(engine)));
    const GROUPS: usize = 12;
    const CLIENTS: usize = 16;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // Distinct random Han texts per group; near copies are the fingerprint with one bit flipped.
    let mut rng = neardup::index::random::SplitMix64::new(7);
    let texts: Vec<String> = (0..GROUPS)
        .map(|_| {
            (0..80)
                .map(|_| char::from_u32(0x4E00 + rng.below(0x5000) as u32).unwrap())
                .collect()
        })
        .collect();
    let fps: Vec<u64> = texts.iter().map(|t| fpr.simhash(t).unwrap()).collect();
    for i in 0..GROUPS {
        for j in 0..i {
            assert!(
                neardup::hamming(fps[i], fps[j]) > 4,
                "groups {i} and {j} are too close"
            );
        }
    }
    let uniques = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(listener, backend, ServerOptions::default(), async {
            let _ = stopped.await;
        }));
        let barrier = Arc::new(tokio::sync::Barrier::new(CLIENTS));
        let mut tasks = Vec::new();
        for c in 0..CLIENTS {
            let (barrier, texts, fps) = (barrier.clone(), texts.clone(), fps.clone());
            tasks.push(tokio::spawn(async move {
                let mut client = Client::connect(addr).await.unwrap();
                barrier.wait().await;
                let mut out = Vec::new();
                for (g, t) in texts.iter().enumerate() {
                    // Half the clients send the exact text, half a near copy (fingerprint at
                    // distance 1 or 2); every fourth client uses the batch route.
                    let id = format!("g{g}-c{c}");
                    let body = if c % 2 == 0 {
                        json!({"id": id, "text": t})
                    } else {
                        let near = fps[g] ^ if c % 3 == 0 { 1 } else { 0b101 << 20 };
                        json!({"id": id, "fingerprint": format!("{near:016x}")})
                    }
                    .to_string();
                    let (s, v) = if c % 4 == 3 {
                        let (s, b) = client
                            .post_json("/v1/documents/batch", &format!("[{body}]"))
                            .await
                            .unwrap();
                        let v: Value = serde_json::from_str(&b).unwrap();
                        (s, v[0].clone())
                    } else {
                        let (s, b) = client.post_json("/v1/documents", &body).await.unwrap();
                        (s, serde_json::from_str::<Value>(&b).unwrap())
                    };
                    assert_eq!(s, 200, "{v}");
                    out.push((g, v));
                }
                out
            }));
        }
        let mut uniques = vec![0; GROUPS];
        for t in tasks {
            for (g, v) in t.await.unwrap() {
                match v["status"].as_str().unwrap() {
                    "unique" => uniques[g] += 1,
                    "duplicate" => assert!(
                        v["duplicate_of"]
                            .as_str()
                            .unwrap()
                            .starts_with(&format!("g{g}-")),
                        "{v}"
                    ),
                    s => panic!("unexpected status {s}: {v}"),
                }
            }
        }
        stop.send(()).unwrap();
        server.await.unwrap().unwrap();
        uniques
    });
    assert_eq!(uniques, vec![1; GROUPS]);
    let engine = Engine::open(dir.path(), fpr, cfg, clock).unwrap();
    let s = engine.stats();
    assert_eq!(s.documents, GROUPS as u64);
    assert_eq!(s.recovered_documents, GROUPS as u64);
    assert!(
        s.snapshot_lsn >= GROUPS as u64,
        "graceful shutdown snapshots: {s:?}"
    );
}

/// The decider and acknowledger threads held the engine (and the data directory's lock) for a
/// moment after the backend was dropped: reopening right after `serve` returned could fail.
#[test]
fn dropped_backend_released_the_data_dir_late() {
    let dir = tempfile::tempdir().unwrap();
    let open = || {
        Engine::open(
            dir.path(),
            neardup::Fingerprinter::new(Default::default()).unwrap(),
            EngineConfig {
                maintenance_interval: None,
                ..EngineConfig::default()
            },
            Arc::new(ManualClock::new(T0)),
        )
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    for i in 0..20 {
        let backend = EngineBackend::new(Arc::new(
            open().unwrap_or_else(|e| panic!("reopen {i} right after the drop: {e}")),
        ));
        let doc = neardup::engine::Doc {
            id: format!("d{i}"),
            content: neardup::engine::Content::Text(format!(
                "document {i} of the reopening test, with a few words of its own"
            )),
            timestamp_ms: None,
        };
        let r = rt.block_on(backend.check_and_insert(vec![doc]));
        assert!(r[0].is_ok(), "{r:?}");
        drop(backend);
    }
}
