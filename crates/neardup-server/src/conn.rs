//! Connections: the accept loop, the connection limit, the header deadline, and graceful
//! shutdown.
//!
//! - At most `max_connections` connections are served normally.
//! - Beyond that, up to [`RESERVE`] more are served in *reserve*: one request each, with a
//!   short header deadline; `/healthz` is answered as usual, anything else `503 overloaded`.
//!   So a crowd of idle or slow clients cannot make the health check time out.
//! - Beyond that, a connection gets a canned `503 overloaded` JSON answer without its request
//!   being read, and is closed within [`REFUSE_LINGER`] (up to [`REFUSING`] at a time, so the
//!   client can read the answer; past that it is closed at once): descriptors are not held for
//!   excess connections.
//! - Every connection must deliver a complete request header within `header_timeout` of
//!   opening or of the previous answer (hyper's header read timeout): slow ("trickling")
//!   headers and idle keep-alive connections are closed. The body deadline is per request
//!   (see `body.rs`).

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
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};
use tower::ServiceExt;

use crate::bare_errors::JsonErrors;
use crate::error::{error_body, ApiError};

/// Connections served in reserve beyond `max_connections` (health checks under overload).
pub(crate) const RESERVE: usize = 32;

/// Header deadline of a reserve connection (at most; the configured one if shorter).
const RESERVE_HEADER_TIMEOUT: Duration = Duration::from_secs(2);

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
            spawn(tcp, app.clone(), permit, limits.header_timeout, false, closing.clone());
        } else if let Ok(permit) = Arc::clone(&reserve).try_acquire_owned() {
            let t = limits.header_timeout.min(RESERVE_HEADER_TIMEOUT);
            spawn(tcp, app.clone(), permit, t, true, closing.clone());
        } else if let Ok(permit) = Arc::clone(&refusing).try_acquire_owned() {
            tokio::spawn(refuse(tcp, permit));
        } else {
            drop(tcp);
        }
    }
    drop(listener);
    let _ = closing_tx.send(true);
    // Every connection holds a permit until it is done: all permits back = all done.
    let all_done = async {
        let _r = regular.acquire_many(permits(limits.max_connections)).await;
        let _s = reserve.acquire_many(permits(RESERVE)).await;
    };
    if tokio::time::timeout(SHUTDOWN_GRACE, all_done).await.is_err() {
        tracing::warn!(
            "connections still open {} s after shutdown began; closing them",
            SHUTDOWN_GRACE.as_secs()
        );
    }
}

fn permits(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
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

/// Serves one connection on its own task, holding `permit` until it is closed.
fn spawn(
    tcp: TcpStream,
    app: Router,
    permit: OwnedSemaphorePermit,
    header_timeout: Duration,
    in_reserve: bool,
    mut closing: watch::Receiver<bool>,
) {
    tokio::spawn(async move {
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
    });
}

fn overloaded() -> Response {
    let mut r = ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "overloaded", OVERLOADED)
        .into_response();
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    r
}
