//! # neardup-server
//!
//! The HTTP API of neardup (`neardup serve`): durable online near-duplicate checks with a
//! retention window, over a pluggable [`Backend`] (the embedded [`EngineBackend`] today; a
//! Redis backend plugs in behind the same trait).
//!
//! # What it owns
//! - [`router`]: the axum routes documented in `openapi.yaml` (`POST /v1/documents`,
//!   `POST /v1/documents/batch`, `POST /v1/query`, `GET`/`DELETE /v1/documents/{id}`,
//!   `GET /v1/stats`, `GET /healthz`, `GET /metrics`, and the spec itself at
//!   `GET /openapi.yaml`), JSON errors `{"error": {"code", "message"}}` for every status
//!   of 400 or more, `Content-Type: application/json` required on POST, a body size limit
//!   and body deadline, optional bearer-token authentication on every route but `/healthz`
//!   and `/openapi.yaml`, Prometheus metrics.
//! - [`serve`]: runs the router on a listener until a shutdown future resolves (e.g.
//!   [`shutdown_signal`]: SIGTERM or SIGINT), then finishes in-flight requests and shuts the
//!   backend down (sync + snapshot). It bounds connections (`max_connections`; beyond it
//!   health checks are still answered and other requests refused at once) and closes those that do not deliver a request
//!   header within `header_timeout` (slow headers, idle keep-alive).
//! - [`client`]: a minimal HTTP/1.1 keep-alive client for tests and the load generator.
//!
//! # Invariants
//! - Input never panics the server: malformed JSON is 400, unusable documents 422 naming the
//!   field, oversized bodies 413, unknown routes 404, other methods 405, other content types
//!   415, slow bodies 408 — always with a JSON error body, even when hyper answers by itself
//!   (unparsable request: 400/414/431).
//! - A `"status": "unique"` answer is sent only after the backend made the document durable.
//!
//! # Example
//! ```
//! use std::sync::Arc;
//! use neardup::engine::{Engine, EngineConfig, SystemClock};
//! use neardup_server::{client::Client, serve, EngineBackend, ServerOptions};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let fp = neardup::Fingerprinter::new(Default::default()).unwrap();
//! let engine = Engine::open(dir.path(), fp, EngineConfig::default(), Arc::new(SystemClock)).unwrap();
//! let backend = Arc::new(EngineBackend::new(Arc::new(engine)));
//! let rt = tokio::runtime::Runtime::new().unwrap();
//! rt.block_on(async {
//!     let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
//!     let addr = listener.local_addr().unwrap();
//!     let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
//!     let server = tokio::spawn(serve(listener, backend, ServerOptions::default(), async {
//!         let _ = stopped.await;
//!     }));
//!     let mut c = Client::connect(addr).await.unwrap();
//!     let doc = |id: &str, text: &str| format!(r#"{{"id":"{id}","text":"{text}"}}"#);
//!     let text = "the quick brown fox jumps over the lazy dog while the cat sleeps on the warm mat";
//!     let (status, body) = c.post_json("/v1/documents", &doc("a", text)).await.unwrap();
//!     assert_eq!(status, 200);
//!     assert!(body.contains(r#""status":"unique""#));
//!     let copy = text.replace("warm", "soft");
//!     let (_, body) = c.post_json("/v1/documents", &doc("b", &copy)).await.unwrap();
//!     assert!(body.contains(r#""duplicate_of":"a""#), "{body}");
//!     // Fingerprint-only documents need the simhash detector: a clear 422, not a guess.
//!     let (status, _) = c.post_json("/v1/documents", r#"{"id":"c","fingerprint":"ff00"}"#).await.unwrap();
//!     assert_eq!(status, 422);
//!     stop.send(()).unwrap();
//!     server.await.unwrap().unwrap();
//! });
//! ```
#![warn(missing_docs)]

mod api;
mod auth;
mod backend;
mod bare_errors;
mod body;
pub mod client;
mod conn;
mod error;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

pub use api::{router, OPENAPI_YAML};
pub use backend::{Backend, BackendError, BackendStats, BoxFuture, EngineBackend};

/// HTTP-layer settings.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Bearer token required on every route but `/healthz` and `/openapi.yaml` (`None`: no
    /// auth). [`serve`] refuses an empty token.
    pub token: Option<String>,
    /// Largest accepted request body in bytes (default 16 MiB).
    pub body_limit: usize,
    /// Most documents in one `POST /v1/documents/batch` (default 10 000).
    pub max_batch: usize,
    /// Most connections served at once (default 1024). Beyond it, a connection that sends
    /// `GET /healthz` at once is still answered; any other request gets `503 overloaded` and
    /// the connection is closed; silent ones are closed after a second at most.
    pub max_connections: usize,
    /// Time a connection has to deliver a complete request header, from when it opens or
    /// from its previous answer (default 10 s): bounds slow headers and idle keep-alive.
    pub header_timeout: Duration,
    /// Time a request has for its whole body to arrive once its header did (default 30 s);
    /// then `408`.
    pub body_timeout: Duration,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            token: None,
            body_limit: 16 << 20,
            max_batch: 10_000,
            max_connections: 1024,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
        }
    }
}

impl ServerOptions {
    /// Checks the settings: a non-empty token, and limits and timeouts above zero.
    ///
    /// # Errors
    /// A message naming the setting.
    pub fn validate(&self) -> Result<(), String> {
        if self.token.as_deref() == Some("") {
            return Err(
                "the token is empty, which would let anyone in: give a non-empty token, or \
                 none to serve without authentication"
                    .into(),
            );
        }
        if self.max_connections == 0 || self.max_connections > 1_000_000 {
            return Err(format!(
                "max connections = {}: use 1 ..= 1000000",
                self.max_connections
            ));
        }
        if self.header_timeout.is_zero() || self.body_timeout.is_zero() {
            return Err("the header and body timeouts must be above zero".into());
        }
        Ok(())
    }
}

/// Serves the API on `listener` until `shutdown` resolves, then stops accepting, finishes
/// in-flight requests, and shuts the backend down (sync + snapshot for the embedded engine).
///
/// # Errors
/// Settings refused by [`ServerOptions::validate`] (`InvalidInput`, before serving), or the
/// backend's shutdown error.
pub async fn serve(
    listener: tokio::net::TcpListener,
    backend: Arc<dyn Backend>,
    cfg: ServerOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    cfg.validate()
        .map_err(|m| std::io::Error::new(std::io::ErrorKind::InvalidInput, m))?;
    let app = router(Arc::clone(&backend), &cfg);
    let limits = conn::Limits {
        max_connections: cfg.max_connections,
        header_timeout: cfg.header_timeout,
    };
    conn::run(listener, app, limits, shutdown).await;
    backend
        .shutdown()
        .await
        .map_err(|e| std::io::Error::other(e.to_string()))
}

/// A future that resolves on SIGTERM or SIGINT (Ctrl-C).
///
/// The handlers are installed when this function is called, not when the future is first
/// polled: a signal that arrives between the call and the server's first poll (a supervisor
/// stopping a service that has just said it is listening) still shuts it down gracefully
/// instead of killing it. Call it inside a Tokio runtime, before announcing the address.
///
/// # Errors
/// The operating system refused to install a handler.
pub fn shutdown_signal() -> std::io::Result<impl Future<Output = ()> + Send + 'static> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        Ok(async move {
            tokio::select! {
                _ = term.recv() => {},
                _ = int.recv() => {},
            }
        })
    }
    #[cfg(not(unix))]
    {
        Ok(async {
            let _ = tokio::signal::ctrl_c().await;
        })
    }
}
