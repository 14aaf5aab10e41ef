//! What does the shared index report about itself? [`RedisBackend::stats`] (counters of all
//! instances together) and [`RedisBackend::health`].
//!
//! Invariants: live documents are counted per time bucket of an eighth of the window (exact
//! except the oldest bucket, counted whole); buckets past the window are deleted when read.

use std::collections::HashMap;

use crate::{RedisBackend, Result};

impl RedisBackend {
    /// Counters of the shared index (all instances).
    ///
    /// # Errors
    /// [`Error::Unavailable`](crate::Error::Unavailable) when Redis failed.
    pub async fn stats(&self) -> Result<RedisStats> {
        let expired_at = self.now().saturating_sub(self.inner.retention_ms);
        let mut c = self.conn();
        let h: HashMap<String, i64> = redis::cmd("HGETALL")
            .arg(self.stats_key())
            .query_async(&mut c)
            .await?;
        let mut s = RedisStats {
            mode: if self.is_cluster() {
                "cluster"
            } else {
                "single"
            },
            tables: self.inner.layout.tables(),
            ..RedisStats::default()
        };
        let mut dead = Vec::new();
        let mut docs = 0i64;
        for (f, v) in &h {
            match f.as_str() {
                "inserted" => s.inserted = (*v).max(0) as u64,
                "duplicates" => s.duplicates = (*v).max(0) as u64,
                "removed" => s.removed = (*v).max(0) as u64,
                _ => {
                    if let Some(b) = f.strip_prefix("n:").and_then(|b| b.parse::<i64>().ok()) {
                        let end = b.saturating_add(1).saturating_mul(self.inner.bucket_ms) - 1;
                        if end > expired_at {
                            docs += v;
                        } else {
                            dead.push(f.clone());
                        }
                    }
                }
            }
        }
        s.documents = docs.max(0) as u64;
        if !dead.is_empty() {
            let _: Result<i64, _> = redis::cmd("HDEL")
                .arg(self.stats_key())
                .arg(&dead)
                .query_async(&mut c)
                .await;
        }
        Ok(s)
    }

    /// `Ok` while Redis answers (on a cluster: the node holding the sequence); otherwise the
    /// reason. The service reports unhealthy on `Err`.
    pub async fn health(&self) -> std::result::Result<(), String> {
        let r: redis::RedisResult<i64> = redis::cmd("EXISTS")
            .arg(self.seq_key())
            .query_async(&mut self.conn())
            .await;
        r.map(|_| ())
            .map_err(|e| format!("Redis at {} is unavailable: {e}", self.inner.url))
    }
}

/// Counters of the shared index (all instances together) from [`RedisBackend::stats`](crate::RedisBackend::stats).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct RedisStats {
    /// Live documents (exact except the oldest eighth of the window, counted whole).
    pub documents: u64,
    /// Documents stored since the index was created.
    pub inserted: u64,
    /// Duplicate answers since the index was created.
    pub duplicates: u64,
    /// Documents removed.
    pub removed: u64,
    /// `single` or `cluster`.
    pub mode: &'static str,
    /// Tables (keys per stored fingerprint, plus one id key).
    pub tables: usize,
}
