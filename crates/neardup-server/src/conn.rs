//! Connections: the accept loop, the connection limit, the header deadline, and graceful
//! shutdown.
//!
//! - At most `max_connections` connections are served normally.
//! - Beyond that, a connection is *triaged*: it waits (holding no slot) for its first bytes,
//!   at most [`TRIAGE_TIMEOUT`]. At most [`TRIAGE`] connections wait at once; when another
//!   arrives, the one that has waited longest is closed. A client that sends its request at
//!   once therefore always gets looked at, however many silent connections pile up: a health
//!   check (`GET /healthz`) is answered as usual (up to [`RESERVE`] at a time), any other
//!   request gets `503 overloaded` (JSON, `Retry-After: 1`) and the connection is closed.
//! - Every served connection must deliver a complete request header within `header_timeout`
//!   of opening or of the previous answer (hyper's header read timeout): slow ("trickling")
//!   headers and idle keep-alive connections are closed. The body deadline is per request
//!   (see `body.rs`).
//!
//! Descriptors held: at most `max_connections` + [`TRIAGE`] + [`RESERVE`] + [`REFUSING`].

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch, OwnedSemaphorePermit, Semaphore};
use tower::ServiceExt;

use crate::bare_errors::JsonErrors;
use crate::error::{error_body, ApiError};

/// Excess connections waiting for their first bytes at once (the oldest is closed first).
const TRIAGE: usize = 256;

/// How long an excess connection may wait for its first bytes.
const TRIAGE_TIMEOUT: Duration = Duration::from_secs(1);

/// Health checks answered at once beyond `max_connections`.
const RESERVE: usize = 32;

/// Header deadline of a health check answered in reserve (at most; the configured one if
/// shorter).
const RESERVE_HEADER_TIMEOUT: Duration = Duration::from_secs(1);

/// Excess connections being refused at once (each lingers to let its answer be read).
const REFUSING: usize = 256;

/// How long a refused connection lingers after its answer.
const REFUSE_LINGER: Duration = Duration::from_millis(200);

/// How long a graceful shutdown waits for open connections to finish their requests.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

/// What the accept loop needs to know.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) max_connections: usize,
    pub(crate) header_timeout: Duration,
}

const OVERLOADED: &str = "the server is at its connection limit (--max-connections); retry \
                          shortly, or reuse a keep-alive connection";

/// Accepts and serves connections until `shutdown` resolves; then stops accepting, lets
/// requests in flight finish (at most [`SHUTDOWN_GRACE`]) and returns.
pub(crate) async fn run(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) {
    let regular = Arc::new(Semaphore::new(limits.max_connections));
    let reserve = Arc::new(Semaphore::new(RESERVE));
    let refusing = Arc::new(Semaphore::new(REFUSING));
    let (closing_tx, closing) = watch::channel(false);
    // Eviction handles of the triaged connections, oldest first.
    let mut waiting: VecDeque<oneshot::Sender<()>> = VecDeque::new();
    tokio::pin!(shutdown);
    loop {
        let tcp = tokio::select! {
            () = &mut shutdown => break,
            r = listener.accept() => match r {
                Ok((tcp, _)) => tcp,
                Err(e) => {
                    // Out of descriptors or a connection reset before accept: wait a moment
                    // instead of spinning; connections closing free descriptors.
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
            },
        };
        let _ = tcp.set_nodelay(true);
        if let Ok(permit) = Arc::clone(&regular).try_acquire_owned() {
            let (app, closing) = (app.clone(), closing.clone());
            let t = limits.header_timeout;
            tokio::spawn(serve_one(tcp, app, permit, t, false, closing));
            continue;
        }
        waiting.retain(|w| !w.is_closed());
        if waiting.len() >= TRIAGE {
            if let Some(oldest) = waiting.pop_front() {
                let _ = oldest.send(());
            }
        }
        let (evict, evicted) = oneshot::channel();
        waiting.push_back(evict);
        tokio::spawn(triage(
            tcp,
            evicted,
            Excess {
                app: app.clone(),
                reserve: Arc::clone(&reserve),
                refusing: Arc::clone(&refusing),
                header_timeout: limits.header_timeout.min(RESERVE_HEADER_TIMEOUT),
                closing: closing.clone(),
            },
        ));
    }
    drop(listener);
    let _ = closing_tx.send(true);
    // Every connection holds a permit until it is done: all permits back = all done.
    let all_done = async {
        let _r = regular.acquire_many(permits(limits.max_connections)).await;
        let _s = reserve.acquire_many(permits(RESERVE)).await;
    };
    if tokio::time::timeout(SHUTDOWN_GRACE, all_done)
        .await
        .is_err()
    {
        tracing::warn!(
            "connections still open {} s after shutdown began; closing them",
            SHUTDOWN_GRACE.as_secs()
        );
    }
}

fn permits(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// What a triaged connection may use.
struct Excess {
    app: Router,
    reserve: Arc<Semaphore>,
    refusing: Arc<Semaphore>,
    header_timeout: Duration,
    closing: watch::Receiver<bool>,
}

/// An excess connection: answers a health check, refuses anything else, closes a silent one.
async fn triage(tcp: TcpStream, mut evicted: oneshot::Receiver<()>, x: Excess) {
    let health = tokio::select! {
        _ = &mut evicted => return,
        r = tokio::time::timeout(TRIAGE_TIMEOUT, is_health_check(&tcp)) => match r {
            Ok(Some(h)) => h,
            _ => return,
        },
    };
    drop(evicted);
    if health {
        if let Ok(permit) = x.reserve.try_acquire_owned() {
            serve_one(tcp, x.app, permit, x.header_timeout, true, x.closing).await;
            return;
        }
    }
    if let Ok(permit) = x.refusing.try_acquire_owned() {
        refuse(tcp, permit).await;
    }
}

/// Waits for the first bytes: whether they are `GET /healthz` (`None`: closed first).
async fn is_health_check(tcp: &TcpStream) -> Option<bool> {
    const PREFIX: &[u8] = b"GET /healthz";
    let mut buf = [0u8; 16];
    loop {
        let n = tcp.peek(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        let k = n.min(PREFIX.len());
        if buf[..k] != PREFIX[..k] {
            return Some(false);
        }
        if n > PREFIX.len() {
            return Some(matches!(buf[PREFIX.len()], b' ' | b'?'));
        }
        // A prefix so far: peek returns at once until more arrives.
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Writes a canned 503 without reading the request, and closes the connection.
async fn refuse(mut tcp: TcpStream, _permit: OwnedSemaphorePermit) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let body = error_body("overloaded", OVERLOADED);
    let mut answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    answer.extend_from_slice(&body);
    // A fresh socket's send buffer takes it whole at once.
    let _ = tcp.try_write(&answer);
    let _ = tcp.shutdown().await;
    // Read what the client sent meanwhile so that closing does not reset the connection
    // (which could discard the answer before the client reads it).
    let mut sink = [0u8; 4096];
    let _ = tokio::time::timeout(REFUSE_LINGER, async {
        while matches!(tcp.read(&mut sink).await, Ok(n) if n > 0) {}
    })
    .await;
}

/// Serves one connection, holding `permit` until it is closed; `in_reserve`: health checks
/// only, one request.
async fn serve_one(
    tcp: TcpStream,
    app: Router,
    permit: OwnedSemaphorePermit,
    header_timeout: Duration,
    in_reserve: bool,
    mut closing: watch::Receiver<bool>,
) {
    let _permit = permit;
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        let app = app.clone();
        async move {
            if in_reserve && req.uri().path() != "/healthz" {
                return Ok::<Response, Infallible>(overloaded());
            }
            app.oneshot(req.map(Body::new)).await
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout)
        .keep_alive(!in_reserve);
    let conn = builder.serve_connection(TokioIo::new(JsonErrors::new(tcp)), service);
    tokio::pin!(conn);
    tokio::select! {
        r = conn.as_mut() => {
            if let Err(e) = r {
                tracing::debug!("connection ended: {e}");
            }
        }
        () = async { let _ = closing.wait_for(|c| *c).await; } => {
            conn.as_mut().graceful_shutdown();
            let _ = conn.await;
        }
    }
}

fn overloaded() -> Response {
    let mut r =
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "overloaded", OVERLOADED).into_response();
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    r
}
