//! The storage backend behind the HTTP API: the [`Backend`] trait and the embedded
//! [`EngineBackend`] over [`neardup::engine::Engine`].

use std::future::Future;
use std::pin::Pin;
use std::sync::mpsc;
use std::sync::Arc;

use neardup::engine::{
    Content, Doc, DocInfo, Engine, EngineError, Outcome, Pending, PreparedDoc, QueryResult,
};
use tokio::sync::oneshot;

/// A boxed, sendable future (the return type of [`Backend`] methods).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Why a backend call failed; decides the HTTP status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BackendError {
    /// The input is unusable (bad id, empty text, …): HTTP 422. Fix the request.
    #[error("{0}")]
    BadInput(String),
    /// The backend cannot accept the request now (shut down, failed write, unreachable
    /// store): HTTP 503. Nothing was acknowledged; retry later or against another instance.
    #[error("{0}")]
    Unavailable(String),
    /// Anything else: HTTP 500.
    #[error("{0}")]
    Internal(String),
}

impl From<EngineError> for BackendError {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::InvalidId { .. }
            | EngineError::Fingerprint(_)
            | EngineError::TextRequired { .. } => BackendError::BadInput(e.to_string()),
            EngineError::Unavailable { .. } | EngineError::Store(_) => {
                BackendError::Unavailable(e.to_string())
            }
            e => BackendError::Internal(e.to_string()),
        }
    }
}

/// Sizes and counters every backend reports (for `/v1/stats` and `/metrics`).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct BackendStats {
    /// Backend name (`embedded`, `redis`, …).
    pub backend: String,
    /// Stored, live documents.
    pub documents: u64,
    /// Bytes held by the index.
    pub index_bytes: u64,
    /// Documents reclaimed by expiry since start.
    pub expired: u64,
    /// Durable-log syncs since start.
    pub log_syncs: u64,
    /// Backend-specific details.
    pub details: serde_json::Value,
}

/// What the HTTP layer needs from a store of fingerprints. Implementations decide
/// check-and-insert atomically (exactly one `Unique` among simultaneous near-duplicates) and
/// return a `Unique` only once it is durable.
pub trait Backend: Send + Sync + 'static {
    /// Checks and stores documents in order (a later one may be a duplicate of an earlier
    /// one); one result per document.
    fn check_and_insert(&self, docs: Vec<Doc>)
        -> BoxFuture<'_, Vec<Result<Outcome, BackendError>>>;
    /// Checks without storing; one result per input.
    fn query(
        &self,
        contents: Vec<Content>,
    ) -> BoxFuture<'_, Vec<Result<QueryResult, BackendError>>>;
    /// The stored, live document `id`.
    fn get(&self, id: String) -> BoxFuture<'_, Result<Option<DocInfo>, BackendError>>;
    /// Removes `id`; whether it was stored.
    fn remove(&self, id: String) -> BoxFuture<'_, Result<bool, BackendError>>;
    /// Sizes and counters.
    fn stats(&self) -> BoxFuture<'_, BackendStats>;
    /// `Ok` when the backend accepts writes; otherwise why not.
    fn health(&self) -> BoxFuture<'_, Result<(), String>>;
    /// Flushes and persists everything (graceful shutdown); later writes fail.
    fn shutdown(&self) -> BoxFuture<'_, Result<(), BackendError>>;
}

struct Job {
    docs: Vec<PreparedDoc>,
    reply: oneshot::Sender<Vec<Result<Outcome, EngineError>>>,
}

/// Most documents the decider takes in one [`Engine::decide`] call when draining its queue.
const DRAIN_DOCS: usize = 4096;

/// Decided jobs on their way to the acknowledger: one [`Pending`] for all of them, and each
/// job's document count and reply channel, in order.
type AckBatch = (
    Pending,
    Vec<(usize, oneshot::Sender<Vec<Result<Outcome, EngineError>>>)>,
);

/// The embedded backend: an in-process [`Engine`].
///
/// Check-and-insert requests are fingerprinted on rayon's pool, then handed to one decider
/// thread that takes the decisions in arrival order and queues the log records, and one
/// acknowledger thread that waits for durability and answers. While the acknowledger waits for
/// an fdatasync, the decider keeps deciding: all requests arriving meanwhile share the next
/// fdatasync (group commit) without a thread per request. The decider takes every request
/// already queued (up to 4096 documents) in one decision batch: one lock round and one
/// hand-off to the acknowledger for all of them.
pub struct EngineBackend {
    engine: Arc<Engine>,
    /// `None` only while dropping.
    jobs: Option<mpsc::Sender<Job>>,
    /// The decider and acknowledger threads, joined on drop so that the engine (and the data
    /// directory's lock) is released when the backend is gone.
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Drop for EngineBackend {
    fn drop(&mut self) {
        // Closing the queue stops the decider, which closes the acknowledger's queue.
        drop(self.jobs.take());
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl std::fmt::Debug for EngineBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineBackend")
            .field("engine", &self.engine)
            .finish_non_exhaustive()
    }
}

impl EngineBackend {
    /// Starts the decider and acknowledger threads for `engine`.
    pub fn new(engine: Arc<Engine>) -> EngineBackend {
        let (jobs, rx) = mpsc::channel::<Job>();
        let (ack_tx, ack_rx) = mpsc::channel::<AckBatch>();
        let e = Arc::clone(&engine);
        let decider = std::thread::Builder::new()
            .name("neardup-decider".into())
            .spawn(move || {
                while let Ok(first) = rx.recv() {
                    let mut docs = first.docs;
                    let mut replies = vec![(docs.len(), first.reply)];
                    while docs.len() < DRAIN_DOCS {
                        let Ok(mut job) = rx.try_recv() else { break };
                        replies.push((job.docs.len(), job.reply));
                        docs.append(&mut job.docs);
                    }
                    let p = e.decide(docs);
                    if ack_tx.send((p, replies)).is_err() {
                        return;
                    }
                }
            })
            .expect("spawn decider thread");
        let ack = std::thread::Builder::new()
            .name("neardup-ack".into())
            .spawn(move || {
                while let Ok((p, replies)) = ack_rx.recv() {
                    let mut out = p.wait().into_iter();
                    for (n, reply) in replies {
                        let _ = reply.send(out.by_ref().take(n).collect());
                    }
                }
            })
            .expect("spawn acknowledger thread");
        EngineBackend {
            engine,
            jobs: Some(jobs),
            threads: vec![decider, ack],
        }
    }

    /// The engine.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }
}

/// Runs CPU-bound work on rayon's pool without blocking the async runtime.
async fn on_rayon<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = oneshot::channel();
    rayon::spawn(move || {
        let _ = tx.send(f());
    });
    rx.await.expect("rayon task completes")
}

impl Backend for EngineBackend {
    fn check_and_insert(
        &self,
        docs: Vec<Doc>,
    ) -> BoxFuture<'_, Vec<Result<Outcome, BackendError>>> {
        Box::pin(async move {
            let engine = Arc::clone(&self.engine);
            let has_text = docs.iter().any(|d| matches!(d.content, Content::Text(_)));
            let prepared: Vec<Result<PreparedDoc, EngineError>> = if has_text {
                on_rayon(move || engine.prepare_batch(docs)).await
            } else {
                engine.prepare_batch(docs)
            };
            let mut ok = Vec::with_capacity(prepared.len());
            let mut out: Vec<Option<Result<Outcome, BackendError>>> = Vec::new();
            for p in prepared {
                match p {
                    Ok(d) => {
                        ok.push(d);
                        out.push(None);
                    }
                    Err(e) => out.push(Some(Err(e.into()))),
                }
            }
            let decided = if ok.is_empty() {
                Vec::new()
            } else {
                let (reply, rx) = oneshot::channel();
                let sent = self
                    .jobs
                    .as_ref()
                    .is_some_and(|j| j.send(Job { docs: ok, reply }).is_ok());
                if !sent {
                    return out
                        .into_iter()
                        .map(|_| Err(BackendError::Unavailable("the decider has stopped".into())))
                        .collect();
                }
                match rx.await {
                    Ok(v) => v,
                    Err(_) => {
                        return out
                            .into_iter()
                            .map(|_| {
                                Err(BackendError::Unavailable("the decider has stopped".into()))
                            })
                            .collect()
                    }
                }
            };
            let mut decided = decided.into_iter();
            out.into_iter()
                .map(|o| {
                    o.unwrap_or_else(|| {
                        decided
                            .next()
                            .map(|r| r.map_err(BackendError::from))
                            .unwrap_or_else(|| Err(BackendError::Internal("missing answer".into())))
                    })
                })
                .collect()
        })
    }

    fn query(
        &self,
        contents: Vec<Content>,
    ) -> BoxFuture<'_, Vec<Result<QueryResult, BackendError>>> {
        Box::pin(async move {
            let engine = Arc::clone(&self.engine);
            let has_text = contents.iter().any(|c| matches!(c, Content::Text(_)));
            let run = move || {
                contents
                    .iter()
                    .map(|c| engine.query(c).map_err(BackendError::from))
                    .collect()
            };
            // Fingerprint queries take microseconds: answered inline; text goes to rayon.
            if has_text {
                on_rayon(run).await
            } else {
                run()
            }
        })
    }

    fn get(&self, id: String) -> BoxFuture<'_, Result<Option<DocInfo>, BackendError>> {
        Box::pin(async move { Ok(self.engine.get(&id)) })
    }

    fn remove(&self, id: String) -> BoxFuture<'_, Result<bool, BackendError>> {
        Box::pin(async move {
            let engine = Arc::clone(&self.engine);
            tokio::task::spawn_blocking(move || engine.remove(&id))
                .await
                .map_err(|e| BackendError::Internal(e.to_string()))?
                .map_err(BackendError::from)
        })
    }

    fn stats(&self) -> BoxFuture<'_, BackendStats> {
        Box::pin(async move {
            let s = self.engine.stats();
            BackendStats {
                backend: "embedded".into(),
                documents: s.documents,
                index_bytes: s.index_bytes,
                expired: s.expired,
                log_syncs: s.log_syncs,
                details: serde_json::to_value(&s).unwrap_or_default(),
            }
        })
    }

    fn health(&self) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move { self.engine.health() })
    }

    fn shutdown(&self) -> BoxFuture<'_, Result<(), BackendError>> {
        Box::pin(async move {
            let engine = Arc::clone(&self.engine);
            tokio::task::spawn_blocking(move || engine.shutdown())
                .await
                .map_err(|e| BackendError::Internal(e.to_string()))?
                .map_err(|e| BackendError::Internal(e.to_string()))
        })
    }
}
