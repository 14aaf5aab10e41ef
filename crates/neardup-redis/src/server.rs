//! [`RedisHttpBackend`]: the HTTP server's [`Backend`] trait over a [`RedisBackend`], so
//! `neardup serve --backend redis://…` answers exactly like the embedded engine.
//!
//! Texts are fingerprinted in this process (on tokio's blocking pool) with the server's
//! [`Fingerprinter`]; its descriptor is recorded with the index, so instances with other
//! fingerprint options are refused. Redis errors become HTTP 503 (nothing acknowledged).

use std::sync::Arc;

use neardup::engine::{self, Content, Doc};
use neardup::Fingerprinter;
use neardup_server::{Backend, BackendError, BackendStats, BoxFuture};

use crate::{Error, RedisBackend, RedisConfig};

impl From<Error> for BackendError {
    fn from(e: Error) -> Self {
        match e {
            Error::InvalidId { .. } => BackendError::BadInput(e.to_string()),
            Error::Unavailable { .. } | Error::Conflict { .. } => {
                BackendError::Unavailable(e.to_string())
            }
            e => BackendError::Internal(e.to_string()),
        }
    }
}

/// The HTTP [`Backend`] over Redis.
#[derive(Debug, Clone)]
pub struct RedisHttpBackend {
    redis: RedisBackend,
    fingerprinter: Arc<Fingerprinter>,
}

impl RedisHttpBackend {
    /// Connects to `url` (see [`RedisBackend::connect`]); the fingerprint configuration is
    /// added to `opts.config_tag` so every instance of the index must use the same one.
    ///
    /// # Errors
    /// As [`RedisBackend::connect`].
    pub async fn connect(
        url: &str,
        mut opts: RedisConfig,
        fingerprinter: Fingerprinter,
        clock: Arc<dyn crate::Clock>,
    ) -> Result<RedisHttpBackend, Error> {
        opts.config_tag = format!(
            "{}fingerprint={:016x}",
            if opts.config_tag.is_empty() {
                String::new()
            } else {
                format!("{} ", opts.config_tag)
            },
            fingerprinter.config_id()
        );
        let redis = RedisBackend::connect_with_clock(url, opts, clock).await?;
        Ok(RedisHttpBackend {
            redis,
            fingerprinter: Arc::new(fingerprinter),
        })
    }

    /// The Redis index.
    pub fn redis(&self) -> &RedisBackend {
        &self.redis
    }

    async fn fingerprints(&self, contents: Vec<Content>) -> Vec<Result<u64, BackendError>> {
        let has_text = contents.iter().any(|c| matches!(c, Content::Text(_)));
        let f = Arc::clone(&self.fingerprinter);
        let run = move || {
            contents
                .iter()
                .map(|c| match c {
                    Content::Text(t) => f
                        .simhash(t)
                        .map_err(|e| BackendError::BadInput(e.to_string())),
                    Content::Fingerprint(fp) => Ok(*fp),
                })
                .collect::<Vec<_>>()
        };
        if has_text {
            match tokio::task::spawn_blocking(run).await {
                Ok(v) => v,
                Err(e) => vec![Err(BackendError::Internal(e.to_string()))],
            }
        } else {
            run()
        }
    }
}

impl Backend for RedisHttpBackend {
    fn check_and_insert(
        &self,
        docs: Vec<Doc>,
    ) -> BoxFuture<'_, Vec<Result<engine::Outcome, BackendError>>> {
        Box::pin(async move {
            let n = docs.len();
            let (meta, contents): (Vec<(String, Option<i64>)>, Vec<Content>) = docs
                .into_iter()
                .map(|d| ((d.id, d.timestamp_ms), d.content))
                .unzip();
            let fps = self.fingerprints(contents).await;
            if fps.len() != n {
                let e = fps
                    .into_iter()
                    .next()
                    .and_then(Result::err)
                    .unwrap_or_else(|| BackendError::Internal("fingerprinting failed".into()));
                return (0..n).map(|_| Err(e.clone())).collect();
            }
            let mut out: Vec<Option<Result<engine::Outcome, BackendError>>> = Vec::new();
            let mut ok = Vec::new();
            for ((id, ts), fp) in meta.into_iter().zip(fps) {
                match fp {
                    Ok(fp) => {
                        ok.push((id, fp, ts));
                        out.push(None);
                    }
                    Err(e) => out.push(Some(Err(e))),
                }
            }
            let mut decided = self.redis.check_and_insert_batch(&ok).await.into_iter();
            out.into_iter()
                .map(|o| {
                    o.unwrap_or_else(|| match decided.next() {
                        Some(r) => r.map_err(BackendError::from),
                        None => Err(BackendError::Internal("missing answer".into())),
                    })
                })
                .collect()
        })
    }

    fn query(
        &self,
        contents: Vec<Content>,
    ) -> BoxFuture<'_, Vec<Result<engine::QueryResult, BackendError>>> {
        Box::pin(async move {
            let fps = self.fingerprints(contents).await;
            let q = fps.into_iter().map(|fp| async move {
                let fp = fp?;
                Ok(engine::QueryResult {
                    fingerprint: Some(fp),
                    hits: self.redis.query(fp).await?,
                })
            });
            futures_util::future::join_all(q).await
        })
    }

    fn get(&self, id: String) -> BoxFuture<'_, Result<Option<engine::DocInfo>, BackendError>> {
        Box::pin(async move { Ok(self.redis.get(&id).await?) })
    }

    fn remove(&self, id: String) -> BoxFuture<'_, Result<bool, BackendError>> {
        Box::pin(async move { Ok(self.redis.remove(&id).await?) })
    }

    fn stats(&self) -> BoxFuture<'_, BackendStats> {
        Box::pin(async move {
            match self.redis.stats().await {
                Ok(s) => BackendStats {
                    backend: "redis".into(),
                    documents: s.documents,
                    index_bytes: 0,
                    expired: 0,
                    log_syncs: 0,
                    details: serde_json::to_value(&s).unwrap_or_default(),
                },
                Err(e) => BackendStats {
                    backend: "redis".into(),
                    details: serde_json::json!({ "error": e.to_string() }),
                    ..BackendStats::default()
                },
            }
        })
    }

    fn health(&self) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move { self.redis.health().await })
    }

    fn shutdown(&self) -> BoxFuture<'_, Result<(), BackendError>> {
        // Every acknowledged write is already applied in Redis; nothing to flush.
        Box::pin(async move { Ok(()) })
    }
}
