//! The edge where the service meets the network: connection limits and deadlines, content
//! types, tokens, the JSON error shape of every answer >= 400 (including hyper's own), and the
//! served spec. Each test is named after what broke; all sockets are loopback and bounded.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use neardup::engine::{Engine, EngineConfig, ManualClock};
use neardup_server::{router, serve, Backend, EngineBackend, ServerOptions, OPENAPI_YAML};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tower::ServiceExt;

/// Generous bound on any single answer: these tests assert answers, not timings.
const ANSWER_WITHIN: Duration = Duration::from_secs(5);

fn engine_backend(dir: &std::path::Path) -> Arc<EngineBackend> {
    let engine = Engine::open(
        dir,
        neardup::Fingerprinter::new(Default::default()).unwrap(),
        EngineConfig {
            maintenance_interval: None,
            ..EngineConfig::default()
        },
        Arc::new(ManualClock::new(1_699_984_800_000)),
    )
    .unwrap();
    Arc::new(EngineBackend::new(Arc::new(engine)))
}

/// `(status, content type, body)` of one request through the router (no sockets).
async fn call(
    app: &axum::Router,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (StatusCode, String, Value) {
    let mut req = Request::builder().method(method).uri(path);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = app
        .clone()
        .oneshot(req.body(Body::from(body.to_owned())).unwrap())
        .await
        .unwrap();
    let status = resp.status();
    let ct = resp
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let allow = resp.headers().get("allow").cloned();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    let mut v = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    if let (Some(a), Value::Object(m)) = (allow, &mut v) {
        m.insert("__allow".into(), a.to_str().unwrap().into());
    }
    (status, ct, v)
}

const JSON: (&str, &str) = ("content-type", "application/json");

/// Asserts the documented error shape and returns the code.
fn error_code(status: StatusCode, ct: &str, v: &Value) -> String {
    assert!(status.as_u16() >= 400, "{status} {v}");
    assert!(
        ct.starts_with("application/json"),
        "{status}: content type {ct:?}"
    );
    let msg = v["error"]["message"].as_str().unwrap_or("");
    assert!(!msg.is_empty(), "{status}: no error message in {v}");
    v["error"]["code"].as_str().unwrap_or("").to_owned()
}

#[tokio::test]
async fn put_on_a_document_was_405_with_an_empty_body() {
    let dir = tempfile::tempdir().unwrap();
    let app = router(engine_backend(dir.path()), &ServerOptions::default());
    let (s, ct, v) = call(&app, "PUT", "/v1/documents/abc", &[JSON], "{}").await;
    assert_eq!(s, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(error_code(s, &ct, &v), "method_not_allowed");
    assert_eq!(v["__allow"], "GET,HEAD,DELETE");
    let (s, ct, v) = call(&app, "GET", "/v1/documents", &[], "").await;
    assert_eq!(error_code(s, &ct, &v), "method_not_allowed");
    let (s, ct, v) = call(&app, "GET", "/nowhere", &[], "").await;
    assert_eq!(
        (s, error_code(s, &ct, &v).as_str()),
        (StatusCode::NOT_FOUND, "no_route")
    );
}

#[tokio::test]
async fn non_utf8_path_id_was_400_text_plain() {
    let dir = tempfile::tempdir().unwrap();
    let app = router(engine_backend(dir.path()), &ServerOptions::default());
    for m in ["GET", "DELETE"] {
        let (s, ct, v) = call(&app, m, "/v1/documents/%ff", &[], "").await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{m}");
        assert_eq!(error_code(s, &ct, &v), "invalid_id");
        let long = "é".repeat(513); // 513 characters, 1026 bytes
        let (s, ct, v) = call(&app, m, &format!("/v1/documents/{long}"), &[], "").await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{m}");
        assert_eq!(error_code(s, &ct, &v), "invalid_id");
    }
}

#[tokio::test]
async fn cross_origin_text_plain_post_was_stored() {
    let dir = tempfile::tempdir().unwrap();
    let backend = engine_backend(dir.path());
    let app = router(backend.clone(), &ServerOptions::default());
    let doc = r#"{"id":"planted","fingerprint":"ff00"}"#;
    for ct in [
        Some("text/plain"),
        Some("text/plain;charset=UTF-8"),
        Some("application/x-www-form-urlencoded"),
        Some("multipart/form-data; boundary=x"),
        None,
    ] {
        for path in ["/v1/documents", "/v1/documents/batch", "/v1/query"] {
            let body = if path.ends_with("batch") {
                format!("[{doc}]")
            } else {
                doc.to_owned()
            };
            let mut h = vec![("origin", "http://evil.example")];
            if let Some(ct) = ct {
                h.push(("content-type", ct));
            }
            let (s, rct, v) = call(&app, "POST", path, &h, &body).await;
            assert_eq!(s, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{path} {ct:?}");
            let code = error_code(s, &rct, &v);
            assert_eq!(code, "unsupported_media_type");
            assert!(
                v["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("application/json"),
                "{v}"
            );
        }
    }
    assert_eq!(backend.engine().stats().documents, 0, "nothing planted");
    // With the JSON type (and a charset) it is stored.
    let (s, _, v) = call(
        &app,
        "POST",
        "/v1/documents",
        &[("content-type", "application/json; charset=utf-8")],
        r#"{"id":"genuine","text":"a genuine document with enough words to be checked"}"#,
    )
    .await;
    assert_eq!((s, v["status"].as_str()), (StatusCode::OK, Some("unique")));
}

#[tokio::test]
async fn schema_mismatches_found_by_schemathesis() {
    let dir = tempfile::tempdir().unwrap();
    let app = router(engine_backend(dir.path()), &ServerOptions::default());
    // `"text": null` was accepted next to a fingerprint; other nulls neither.
    for body in [
        r#"{"id":"a","text":null,"fingerprint":"ff"}"#,
        r#"{"id":"a","fingerprint":null,"text":"some words here"}"#,
        r#"{"id":"a","fingerprint":"ff","timestamp":null}"#,
    ] {
        let (s, ct, v) = call(&app, "POST", "/v1/documents", &[JSON], body).await;
        assert_eq!(
            (s, error_code(s, &ct, &v).as_str()),
            (StatusCode::BAD_REQUEST, "bad_json"),
            "{body}"
        );
    }
    // Fingerprints exactly as the schema's pattern: no spaces around them.
    for fp in [" ff", "ff ", "0x", "", "+ff", "0xff ff"] {
        let body = format!(r#"{{"id":"a","fingerprint":"{fp}"}}"#);
        let (s, ct, v) = call(&app, "POST", "/v1/documents", &[JSON], &body).await;
        assert_eq!(
            (s, error_code(s, &ct, &v).as_str()),
            (StatusCode::UNPROCESSABLE_ENTITY, "invalid_document"),
            "{fp:?}"
        );
    }
    // `0X` is in the pattern: not refused for its form (a detector that needs text may refuse
    // fingerprints as such).
    let (s, _, v) = call(
        &app,
        "POST",
        "/v1/documents",
        &[JSON],
        r#"{"id":"b","fingerprint":"0XFF"}"#,
    )
    .await;
    let msg = v["error"]["message"].as_str().unwrap_or("");
    assert!(s == StatusCode::OK || !msg.contains("hex digits"), "{v}");
    // The query's `id` and `timestamp` were documented as ignored but validated: now they
    // are documented as checked like a Document's and not used.
    for body in [
        r#"{"id":"never-stored","text":"some words to check against the store"}"#,
        r#"{"id":5,"timestamp":1.5,"text":"some words to check against the store"}"#,
    ] {
        let (s, _, v) = call(&app, "POST", "/v1/query", &[JSON], body).await;
        assert_eq!(s, StatusCode::OK, "{body}: {v}");
    }
    for (body, want) in [
        (
            r#"{"id":[1],"fingerprint":"ff"}"#,
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            r#"{"id":null,"fingerprint":"ff"}"#,
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            r#"{"id":"","fingerprint":"ff"}"#,
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            r#"{"timestamp":1e300,"fingerprint":"ff"}"#,
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            r#"{"timestamp":"yesterday","fingerprint":"ff"}"#,
            StatusCode::BAD_REQUEST,
        ),
        (
            r#"{"text":null,"fingerprint":"ff"}"#,
            StatusCode::BAD_REQUEST,
        ),
    ] {
        let (s, ct, v) = call(&app, "POST", "/v1/query", &[JSON], body).await;
        assert_eq!(s, want, "{body}");
        error_code(s, &ct, &v);
    }
    // Batch items answered in place carry their id (integers too) and the error shape.
    let (s, _, v) = call(
        &app,
        "POST",
        "/v1/documents/batch",
        &[JSON],
        r#"[{"id":7,"fingerprint":"zz"},"nope",{"id":"c","text":"a third document with words"}]"#,
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        (v[0]["id"].as_str(), v[0]["error"]["code"].as_str()),
        (Some("7"), Some("invalid_document"))
    );
    assert_eq!(
        (&v[1]["id"], v[1]["error"]["code"].as_str()),
        (&Value::Null, Some("bad_json"))
    );
    assert_eq!(v[2]["status"], "unique");
}

#[tokio::test]
async fn bearer_scheme_was_case_sensitive() {
    let dir = tempfile::tempdir().unwrap();
    let app = router(
        engine_backend(dir.path()),
        &ServerOptions {
            token: Some("s3cret".into()),
            ..ServerOptions::default()
        },
    );
    for auth in ["Bearer s3cret", "bearer s3cret", "BEARER s3cret"] {
        let (s, _, _) = call(&app, "GET", "/v1/stats", &[("authorization", auth)], "").await;
        assert_eq!(s, StatusCode::OK, "{auth}");
    }
    for auth in ["Bearer s3cre", "Basic s3cret", "Bearer s3cret0"] {
        let (s, ct, v) = call(&app, "GET", "/metrics", &[("authorization", auth)], "").await;
        assert_eq!(error_code(s, &ct, &v), "unauthorized", "{auth}");
    }
    // The spec and the health check need no token.
    for p in ["/healthz", "/openapi.yaml"] {
        assert_eq!(call(&app, "GET", p, &[], "").await.0, StatusCode::OK, "{p}");
    }
    // An unauthenticated POST is refused before its content type is looked at.
    let (s, _, _) = call(
        &app,
        "POST",
        "/v1/documents",
        &[("content-type", "text/plain")],
        "{}",
    )
    .await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn body_too_large_did_not_name_the_setting() {
    let dir = tempfile::tempdir().unwrap();
    let app = router(
        engine_backend(dir.path()),
        &ServerOptions {
            body_limit: 100,
            ..ServerOptions::default()
        },
    );
    let big = format!(r#"{{"id":"a","text":"{}"}}"#, "x".repeat(200));
    let (s, ct, v) = call(&app, "POST", "/v1/documents", &[JSON], &big).await;
    assert_eq!(s, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(error_code(s, &ct, &v), "body_too_large");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("--body-limit") && msg.contains("100 bytes"),
        "{msg}"
    );
}

#[tokio::test]
async fn spec_was_not_served() {
    let dir = tempfile::tempdir().unwrap();
    let app = router(engine_backend(dir.path()), &ServerOptions::default());
    let (s, ct, v) = call(&app, "GET", "/openapi.yaml", &[], "").await;
    assert_eq!(s, StatusCode::OK);
    assert!(ct.starts_with("application/yaml"), "{ct}");
    assert_eq!(v.as_str(), Some(OPENAPI_YAML));
    assert_eq!(
        OPENAPI_YAML,
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/openapi.yaml")).unwrap()
    );
    // Every route the server has is in the spec.
    for p in [
        "/v1/documents:",
        "/v1/documents/batch:",
        "/v1/query:",
        "/v1/documents/{id}:",
        "/v1/stats:",
        "/healthz:",
        "/metrics:",
        "/openapi.yaml:",
    ] {
        assert!(OPENAPI_YAML.contains(&format!("\n  {p}\n")), "{p}");
    }
}

#[tokio::test]
async fn unhealthy_healthz_says_why_once_and_has_the_error_shape() {
    let dir = tempfile::tempdir().unwrap();
    let backend = engine_backend(dir.path());
    let app = router(backend.clone(), &ServerOptions::default());
    backend.shutdown().await.unwrap();
    let (s, ct, v) = call(&app, "GET", "/healthz", &[], "").await;
    assert_eq!(s, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(error_code(s, &ct, &v), "unhealthy");
    assert_eq!(v["status"], "unhealthy");
    let reason = v["reason"].as_str().unwrap();
    assert_eq!(v["error"]["message"].as_str(), Some(reason));
    assert_eq!(
        reason.matches("not accepting writes").count(),
        1,
        "repeated text: {reason}"
    );
}

#[tokio::test]
async fn empty_token_let_everyone_in() {
    let dir = tempfile::tempdir().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let err = serve(
        listener,
        engine_backend(dir.path()),
        ServerOptions {
            token: Some(String::new()),
            ..ServerOptions::default()
        },
        async {},
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    assert!(err.to_string().contains("token is empty"), "{err}");
}

// ---- over real sockets -------------------------------------------------------------------

struct Running {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
    _dir: tempfile::TempDir,
}

async fn start(cfg: ServerOptions) -> Running {
    let dir = tempfile::tempdir().unwrap();
    let backend: Arc<dyn Backend> = engine_backend(dir.path());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve(listener, backend, cfg, async {
        let _ = stopped.await;
    }));
    Running {
        addr,
        stop: Some(stop),
        server,
        _dir: dir,
    }
}

impl Running {
    async fn finish(mut self) {
        self.stop.take().unwrap().send(()).unwrap();
        self.server.await.unwrap().unwrap();
    }
}

/// Writes `request` and reads the answer until the server closes or the body is complete:
/// `(status, head, body)`. Panics if no answer comes within [`ANSWER_WITHIN`].
async fn exchange(s: &mut TcpStream, request: &[u8]) -> (u16, String, String) {
    s.write_all(request).await.unwrap();
    tokio::time::timeout(ANSWER_WITHIN, read_answer(s))
        .await
        .expect("an answer within 5 s")
}

async fn read_answer(s: &mut TcpStream) -> (u16, String, String) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).into_owned();
            let len: usize = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse().unwrap())
                })
                .unwrap_or(0);
            if buf.len() >= end + 4 + len {
                let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
                let body = String::from_utf8_lossy(&buf[end + 4..end + 4 + len]).into_owned();
                return (status, head, body);
            }
        }
        let n = s.read(&mut chunk).await.unwrap_or(0);
        assert!(
            n > 0,
            "closed without an answer: {:?}",
            String::from_utf8_lossy(&buf)
        );
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Asserts the JSON error shape of a raw answer; returns the code.
fn raw_error_code(status: u16, head: &str, body: &str) -> String {
    assert!(status >= 400, "{status}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/json"),
        "{head}"
    );
    let v: Value = serde_json::from_str(body).unwrap_or_else(|_| panic!("not JSON: {body:?}"));
    assert!(
        !v["error"]["message"].as_str().unwrap_or("").is_empty(),
        "{v}"
    );
    v["error"]["code"].as_str().unwrap().to_owned()
}

/// Whether the server closes `s` within [`ANSWER_WITHIN`] (reads until EOF or reset).
async fn closed_by_server(s: &mut TcpStream) -> bool {
    let mut chunk = [0u8; 1024];
    tokio::time::timeout(ANSWER_WITHIN, async {
        loop {
            match s.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await
    .is_ok()
}

async fn healthz(addr: SocketAddr) -> (u16, String) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let (status, _, body) = exchange(
        &mut s,
        b"GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
    )
    .await;
    (status, body)
}

#[tokio::test]
async fn hyper_own_errors_had_no_body() {
    let r = start(ServerOptions::default()).await;
    let long_uri = format!(
        "GET /v1/documents/{} HTTP/1.1\r\nhost: x\r\n\r\n",
        "a".repeat(70_000)
    );
    let many_headers = format!(
        "GET /healthz HTTP/1.1\r\nhost: x\r\n{}\r\n",
        (0..200)
            .map(|i| format!("x-h{i}: v\r\n"))
            .collect::<String>()
    );
    let cases: [(&[u8], u16, &str); 3] = [
        (b"NOT HTTP AT ALL\r\n\r\n", 400, "bad_request"),
        (long_uri.as_bytes(), 414, "uri_too_long"),
        (many_headers.as_bytes(), 431, "header_too_large"),
    ];
    for (req, want, want_code) in cases {
        let mut s = TcpStream::connect(r.addr).await.unwrap();
        let (status, head, body) = exchange(&mut s, req).await;
        assert_eq!(status, want, "{head}");
        assert_eq!(raw_error_code(status, &head, &body), want_code);
    }
    // Ordinary answers pass through the rewriting layer untouched.
    assert_eq!(healthz(r.addr).await.0, 200);
    r.finish().await;
}

#[tokio::test]
async fn body_shorter_than_content_length_held_the_connection() {
    let r = start(ServerOptions {
        body_timeout: Duration::from_millis(300),
        ..ServerOptions::default()
    })
    .await;
    let mut s = TcpStream::connect(r.addr).await.unwrap();
    let (status, head, body) = exchange(
        &mut s,
        b"POST /v1/documents HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{\"id\":",
    )
    .await;
    assert_eq!(status, 408, "{head}");
    assert_eq!(raw_error_code(status, &head, &body), "body_timeout");
    assert!(closed_by_server(&mut s).await, "the connection stays open");
    r.finish().await;
}

#[tokio::test]
async fn idle_and_trickling_connections_stayed_open() {
    let r = start(ServerOptions {
        header_timeout: Duration::from_millis(500),
        ..ServerOptions::default()
    })
    .await;
    // Idle from the start.
    let mut idle = TcpStream::connect(r.addr).await.unwrap();
    // Idle after one answer (keep-alive).
    let mut kept = TcpStream::connect(r.addr).await.unwrap();
    let (st, _, _) = exchange(&mut kept, b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n").await;
    assert_eq!(st, 200);
    // Trickling header lines, one every 100 ms, never finishing (at most 40 lines).
    let mut trickle = TcpStream::connect(r.addr).await.unwrap();
    trickle
        .write_all(b"GET /healthz HTTP/1.1\r\n")
        .await
        .unwrap();
    let trickled = tokio::spawn(async move {
        for i in 0..40 {
            if trickle
                .write_all(format!("x-slow-{i}: y\r\n").as_bytes())
                .await
                .is_err()
            {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        // The server closed it if reading now ends.
        closed_by_server(&mut trickle).await
    });
    assert!(closed_by_server(&mut idle).await, "idle connection kept");
    assert!(
        closed_by_server(&mut kept).await,
        "keep-alive connection kept"
    );
    assert!(trickled.await.unwrap(), "trickling connection kept");
    r.finish().await;
}

#[tokio::test]
async fn idle_connections_made_healthz_time_out() {
    const MAX: usize = 4;
    let r = start(ServerOptions {
        max_connections: MAX,
        header_timeout: Duration::from_secs(60),
        ..ServerOptions::default()
    })
    .await;
    // Fill the regular slots with idle connections.
    let mut held = Vec::new();
    for _ in 0..MAX {
        held.push(TcpStream::connect(r.addr).await.unwrap());
    }
    // /healthz still answers, in reserve; other routes are told to come back.
    assert_eq!(healthz(r.addr).await.0, 200);
    let mut s = TcpStream::connect(r.addr).await.unwrap();
    let (status, head, body) = exchange(&mut s, b"GET /v1/stats HTTP/1.1\r\nhost: x\r\n\r\n").await;
    assert_eq!(status, 503);
    assert_eq!(raw_error_code(status, &head, &body), "overloaded");
    // Many more idle connections (bounded: 300, more than wait in triage at once): the
    // oldest silent ones are closed, and a health check that sends its request at once is
    // still answered, at the first attempt.
    for _ in 0..300 {
        held.push(TcpStream::connect(r.addr).await.unwrap());
    }
    assert_eq!(healthz(r.addr).await.0, 200);
    let mut s = TcpStream::connect(r.addr).await.unwrap();
    let (status, head, body) = exchange(&mut s, b"GET /v1/stats HTTP/1.1\r\nhost: x\r\n\r\n").await;
    assert_eq!(raw_error_code(status, &head, &body), "overloaded");
    // Freed regular slots serve everything again.
    drop(held);
    let mut ok = false;
    for _ in 0..50 {
        let mut s = TcpStream::connect(r.addr).await.unwrap();
        let (status, _, _) = exchange(
            &mut s,
            b"GET /v1/stats HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
        )
        .await;
        if status == 200 {
            ok = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(ok, "slots not freed after the clients left");
    r.finish().await;
}
