//! Routes, request/response bodies and metrics; errors are in `error.rs`, authentication in
//! `auth.rs`, body rules in `body.rs`.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{DefaultBodyLimit, MatchedPath, Path, Request, State};
use axum::http::{header, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use neardup::engine::{Content, Doc, DocInfoJson, OutcomeJson, QueryJson, MAX_ID_BYTES};
use neardup::fingerprint::parse_hex;
use serde::{Deserialize, Deserializer};
use serde_json::{json, Value};

use crate::auth::TokenCheck;
use crate::backend::{Backend, BackendError};
use crate::body::{read_body, require_json};
use crate::error::{method_not_allowed, no_route, ApiError};
use crate::ServerOptions;

/// The API description served at `GET /openapi.yaml` (OpenAPI 3.0).
pub const OPENAPI_YAML: &str = include_str!("../openapi.yaml");

#[derive(Clone)]
struct AppState {
    backend: Arc<dyn Backend>,
    token: Option<Arc<TokenCheck>>,
    max_batch: usize,
    body_limit: usize,
    body_timeout: Duration,
    metrics: PrometheusHandle,
}

/// A document id: a JSON string, or an integer (used as its decimal text).
#[derive(Deserialize)]
#[serde(untagged)]
enum IdValue {
    Str(String),
    Int(i64),
    UInt(u64),
}

impl IdValue {
    fn into_string(self) -> String {
        match self {
            IdValue::Str(s) => s,
            IdValue::Int(i) => i.to_string(),
            IdValue::UInt(u) => u.to_string(),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DocBody {
    #[serde(default, deserialize_with = "present")]
    id: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    text: Option<String>,
    #[serde(default, deserialize_with = "present")]
    fingerprint: Option<String>,
    #[serde(default, deserialize_with = "present")]
    timestamp: Option<f64>,
}

/// A field that may be absent but, when present, must hold a `T` (`null` is refused, as the
/// schema says: `"text": null` is not a text).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// Largest accepted timestamp magnitude (seconds): about year 5138.
const MAX_TIMESTAMP_SECS: f64 = 1e11;

fn parse_json<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(ApiError::bad_json)
}

/// The content of a body: exactly one of `text` and `fingerprint`.
fn to_content(text: Option<String>, fingerprint: Option<String>) -> Result<Content, ApiError> {
    match (text, fingerprint) {
        (Some(t), None) => Ok(Content::Text(t)),
        (None, Some(f)) => {
            // Exactly the schema's pattern `^(0[xX])?[0-9a-fA-F]{1,16}$`: no spaces.
            let digits = f
                .strip_prefix("0x")
                .or_else(|| f.strip_prefix("0X"))
                .unwrap_or(&f);
            let ok =
                (1..=16).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_hexdigit());
            ok.then(|| parse_hex(&f).ok())
                .flatten()
                .map(Content::Fingerprint)
                .ok_or_else(|| {
                    ApiError::unprocessable(format!(
                        "`fingerprint` must be 1 to 16 hex digits (optionally after 0x), got {f:?}"
                    ))
                })
        }
        (Some(_), Some(_)) => Err(ApiError::unprocessable(
            "send either `text` or `fingerprint`, not both",
        )),
        (None, None) => Err(ApiError::unprocessable("missing `text` (or `fingerprint`)")),
    }
}

/// Validates one submitted document.
fn to_doc(b: DocBody) -> Result<Doc, ApiError> {
    let id = match b.id {
        None => return Err(ApiError::unprocessable("missing field `id`")),
        Some(v) => to_id(v)?,
    };
    let content = to_content(b.text, b.fingerprint)?;
    let timestamp_ms = to_timestamp_ms(b.timestamp)?;
    Ok(Doc {
        id,
        content,
        timestamp_ms,
    })
}

/// Validates a query body; its `id` and `timestamp`, if any, are checked like a document's
/// (as the spec says) but not used.
fn to_query(b: DocBody) -> Result<Content, ApiError> {
    if let Some(v) = b.id {
        to_id(v)?;
    }
    to_timestamp_ms(b.timestamp)?;
    to_content(b.text, b.fingerprint)
}

fn to_id(v: Value) -> Result<String, ApiError> {
    let id = serde_json::from_value::<IdValue>(v)
        .map_err(|_| ApiError::unprocessable("`id` must be a string or an integer"))?
        .into_string();
    if id.is_empty() || id.len() > MAX_ID_BYTES {
        return Err(ApiError::unprocessable(format!(
            "`id` must be 1 to {MAX_ID_BYTES} bytes long (UTF-8), got {}",
            id.len()
        )));
    }
    Ok(id)
}

fn to_timestamp_ms(t: Option<f64>) -> Result<Option<i64>, ApiError> {
    match t {
        None => Ok(None),
        Some(t) if t.is_finite() && t.abs() <= MAX_TIMESTAMP_SECS => {
            Ok(Some((t * 1000.0).round() as i64))
        }
        Some(t) => Err(ApiError::unprocessable(format!(
            "`timestamp` must be Unix seconds (a finite number, |t| <= 1e11), got {t}"
        ))),
    }
}

/// One element of a batch answer: an outcome or an in-place error.
#[derive(serde::Serialize)]
#[serde(untagged)]
enum BatchItem {
    Done(OutcomeJson),
    Failed(Value),
}

fn error_item(id: Option<&str>, e: ApiError) -> Value {
    json!({"id": id, "status": "error", "error": {"code": e.code, "message": e.message}})
}

async fn post_document(
    State(st): State<AppState>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<OutcomeJson>, ApiError> {
    let doc = to_doc(parse_json(&body?)?)?;
    let id = doc.id.clone();
    let r = st
        .backend
        .check_and_insert(vec![doc])
        .await
        .pop()
        .ok_or_else(|| ApiError::from(BackendError::Internal("no answer".into())))??;
    Ok(Json(OutcomeJson::new(id, r)))
}

async fn post_batch(
    State(st): State<AppState>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Vec<BatchItem>>, ApiError> {
    let items: Vec<Value> = parse_json(&body?)?;
    if items.len() > st.max_batch {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "batch_too_large",
            format!(
                "a batch holds at most {} documents, got {}",
                st.max_batch,
                items.len()
            ),
        ));
    }
    // Per-item validation errors are reported in place; valid items are decided in order.
    let mut slots: Vec<Result<String, Value>> = Vec::with_capacity(items.len());
    let mut docs = Vec::new();
    for v in items {
        let id_hint = match v.get("id") {
            Some(Value::String(s)) => Some(s.clone()),
            Some(n @ Value::Number(_)) => Some(n.to_string()),
            _ => None,
        };
        let parsed = serde_json::from_value::<DocBody>(v)
            .map_err(ApiError::bad_json)
            .and_then(to_doc);
        match parsed {
            Ok(d) => {
                slots.push(Ok(d.id.clone()));
                docs.push(d);
            }
            Err(e) => slots.push(Err(error_item(id_hint.as_deref(), e))),
        }
    }
    let mut answers = st.backend.check_and_insert(docs).await.into_iter();
    let out = slots
        .into_iter()
        .map(|s| match s {
            Err(v) => BatchItem::Failed(v),
            Ok(id) => match answers.next() {
                Some(Ok(o)) => BatchItem::Done(OutcomeJson::new(id, o)),
                Some(Err(e)) => BatchItem::Failed(error_item(Some(&id), e.into())),
                None => BatchItem::Failed(error_item(
                    Some(&id),
                    BackendError::Internal("no answer".into()).into(),
                )),
            },
        })
        .collect();
    Ok(Json(out))
}

async fn post_query(
    State(st): State<AppState>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<QueryJson>, ApiError> {
    let content = to_query(parse_json(&body?)?)?;
    let r = st
        .backend
        .query(vec![content])
        .await
        .pop()
        .ok_or_else(|| ApiError::from(BackendError::Internal("no answer".into())))??;
    Ok(Json(QueryJson::from(&r)))
}

fn check_path_id(id: &str) -> Result<(), ApiError> {
    if id.is_empty() || id.len() > MAX_ID_BYTES {
        return Err(ApiError::invalid_id(format!(
            "the id must be 1 to {MAX_ID_BYTES} bytes long (UTF-8), got {}",
            id.len()
        )));
    }
    Ok(())
}

fn not_found(id: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "not_found",
        format!("no stored document with id {id:?} (never stored, removed, or expired)"),
    )
}

async fn get_document(
    State(st): State<AppState>,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<DocInfoJson>, ApiError> {
    let Path(id) = id?;
    check_path_id(&id)?;
    match st.backend.get(id.clone()).await? {
        Some(d) => Ok(Json(DocInfoJson::from(d))),
        None => Err(not_found(&id)),
    }
}

async fn delete_document(
    State(st): State<AppState>,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<Value>, ApiError> {
    let Path(id) = id?;
    check_path_id(&id)?;
    if st.backend.remove(id.clone()).await? {
        Ok(Json(json!({"id": id, "removed": true})))
    } else {
        Err(not_found(&id))
    }
}

async fn get_stats(State(st): State<AppState>) -> Json<Value> {
    Json(serde_json::to_value(st.backend.stats().await).unwrap_or_default())
}

/// `{"status": "ok"}`, or 503 with the backend's reason (which says what to do) both as
/// `reason` and in the error shape every status >= 400 has.
async fn healthz(State(st): State<AppState>) -> Response {
    match st.backend.health().await {
        Ok(()) => Json(json!({"status": "ok"})).into_response(),
        Err(reason) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({
                "status": "unhealthy",
                "reason": reason,
                "error": {"code": "unhealthy", "message": reason},
            })),
        )
            .into_response(),
    }
}

async fn openapi() -> Response {
    (
        [(header::CONTENT_TYPE, "application/yaml; charset=utf-8")],
        OPENAPI_YAML,
    )
        .into_response()
}

async fn get_metrics(State(st): State<AppState>) -> Response {
    let s = st.backend.stats().await;
    metrics::gauge!("neardup_documents").set(s.documents as f64);
    metrics::gauge!("neardup_index_bytes").set(s.index_bytes as f64);
    metrics::counter!("neardup_expired_total").absolute(s.expired);
    metrics::counter!("neardup_log_syncs_total").absolute(s.log_syncs);
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        st.metrics.render(),
    )
        .into_response()
}

/// Authentication (every route but `/healthz` and `/openapi.yaml`), the JSON content type of
/// POST bodies, reading the body (limit, deadline), request counting and latency histograms.
async fn observe(State(st): State<AppState>, req: Request, next: Next) -> Response {
    // Static label values: no allocation per request.
    let route: &'static str = req
        .extensions()
        .get::<MatchedPath>()
        .and_then(|p| ROUTES.iter().find(|r| **r == p.as_str()).copied())
        .unwrap_or("unmatched");
    let method: &'static str = match *req.method() {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::DELETE => "DELETE",
        Method::PUT => "PUT",
        Method::HEAD => "HEAD",
        Method::PATCH => "PATCH",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    };
    let start = Instant::now();
    let resp = match admit(&st, route, req).await {
        Ok(req) => next.run(req).await,
        Err(resp) => resp,
    };
    let status: metrics::SharedString = match resp.status().as_u16() {
        200 => "200".into(),
        400 => "400".into(),
        401 => "401".into(),
        404 => "404".into(),
        413 => "413".into(),
        415 => "415".into(),
        422 => "422".into(),
        500 => "500".into(),
        503 => "503".into(),
        s => s.to_string().into(),
    };
    metrics::counter!("neardup_http_requests_total", "method" => method, "route" => route, "status" => status).increment(1);
    metrics::histogram!("neardup_http_request_duration_seconds", "method" => method, "route" => route)
        .record(start.elapsed().as_secs_f64());
    resp
}

/// Checks what every request must satisfy before its handler runs, and reads its body.
async fn admit(st: &AppState, route: &str, req: Request) -> Result<Request, Response> {
    let public = matches!(route, "/healthz" | "/openapi.yaml");
    if !public && st.token.as_ref().is_some_and(|t| !t.allows(req.headers())) {
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "missing or wrong bearer token: send `Authorization: Bearer <token>`",
        )
        .into_response());
    }
    let takes_json = req.method() == Method::POST
        && matches!(route, "/v1/documents" | "/v1/documents/batch" | "/v1/query");
    if takes_json {
        require_json(&req).map_err(IntoResponse::into_response)?;
    }
    read_body(req, st.body_limit, st.body_timeout).await
}

/// Routes, as matched (the `route` label of the HTTP metrics).
const ROUTES: [&str; 8] = [
    "/v1/documents",
    "/v1/documents/batch",
    "/v1/query",
    "/v1/documents/{id}",
    "/v1/stats",
    "/healthz",
    "/metrics",
    "/openapi.yaml",
];

/// The process-wide Prometheus recorder (installed on first use).
fn prometheus() -> PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let recorder = PrometheusBuilder::new()
                .set_buckets_for_metric(
                    Matcher::Suffix("seconds".into()),
                    &[
                        0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                        0.1, 0.25, 0.5, 1.0, 2.5,
                    ],
                )
                .expect("non-empty buckets")
                .build_recorder();
            let handle = recorder.handle();
            // Fails only if another recorder is installed; metrics then go there.
            let _ = metrics::set_global_recorder(recorder);
            handle
        })
        .clone()
}

/// The HTTP API over `backend` (see `openapi.yaml`).
pub fn router(backend: Arc<dyn Backend>, cfg: &ServerOptions) -> Router {
    let state = AppState {
        backend,
        token: cfg
            .token
            .as_deref()
            .filter(|t| !t.is_empty())
            .map(|t| Arc::new(TokenCheck::new(t))),
        max_batch: cfg.max_batch,
        body_limit: cfg.body_limit,
        body_timeout: cfg.body_timeout,
        metrics: prometheus(),
    };
    Router::new()
        .route("/v1/documents", post(post_document))
        .route("/v1/documents/batch", post(post_batch))
        .route("/v1/query", post(post_query))
        .route(
            "/v1/documents/{id}",
            get(get_document).delete(delete_document),
        )
        .route("/v1/stats", get(get_stats))
        .route("/healthz", get(healthz))
        .route("/metrics", get(get_metrics))
        .route("/openapi.yaml", get(openapi))
        .fallback(no_route)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn_with_state(state.clone(), observe))
        .layer(DefaultBodyLimit::max(cfg.body_limit))
        .with_state(state)
}
