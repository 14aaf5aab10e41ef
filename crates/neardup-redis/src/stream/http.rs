//! The HTTP server's [`Backend`] over a [`StreamEngine`]: `neardup serve --backend redis://…`
//! answers exactly like the embedded engine, with the same detector.

use neardup::engine::{Content, Doc, DocInfo, Outcome, QueryResult};
use neardup_server::{Backend, BackendError, BackendStats, BoxFuture};

use super::StreamEngine;

impl Backend for StreamEngine {
    fn check_and_insert(
        &self,
        docs: Vec<Doc>,
    ) -> BoxFuture<'_, Vec<Result<Outcome, BackendError>>> {
        Box::pin(async move {
            StreamEngine::check_and_insert(self, docs)
                .await
                .into_iter()
                .map(|r| r.map_err(BackendError::from))
                .collect()
        })
    }

    fn query(
        &self,
        contents: Vec<Content>,
    ) -> BoxFuture<'_, Vec<Result<QueryResult, BackendError>>> {
        Box::pin(async move {
            StreamEngine::query(self, contents)
                .await
                .into_iter()
                .map(|r| r.map_err(BackendError::from))
                .collect()
        })
    }

    fn get(&self, id: String) -> BoxFuture<'_, Result<Option<DocInfo>, BackendError>> {
        Box::pin(async move { Ok(StreamEngine::get(self, &id).await?) })
    }

    fn remove(&self, id: String) -> BoxFuture<'_, Result<bool, BackendError>> {
        Box::pin(async move { Ok(StreamEngine::remove(self, &id).await?) })
    }

    fn stats(&self) -> BoxFuture<'_, BackendStats> {
        Box::pin(async move {
            match StreamEngine::stats(self).await {
                Ok(s) => BackendStats {
                    backend: "redis".into(),
                    documents: s.documents,
                    index_bytes: s.index_bytes,
                    expired: s.expired,
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
        Box::pin(async move { StreamEngine::health(self).await })
    }

    fn shutdown(&self) -> BoxFuture<'_, Result<(), BackendError>> {
        // Every acknowledged write is in Redis; the local index is derived state.
        Box::pin(async move { Ok(()) })
    }
}
