//! What can a caller set? [`RedisConfig`], their defaults and their validation.
//!
//! Invariant: distance, blocks, retention and `config_tag` change answers, so they are
//! recorded with the index (see `RedisBackend::descriptor`); options that fail
//! [`RedisConfig::validate`] never reach Redis.

use std::time::Duration;

use crate::{Error, Result};

/// Settings of a [`RedisBackend`](crate::RedisBackend). Distance, blocks and retention change answers and are
/// recorded under the prefix; all instances sharing an index must use the same ones.
#[derive(Debug, Clone)]
pub struct RedisConfig {
    /// Key prefix of the index (no `{`, `}` or whitespace; default `neardup`).
    pub prefix: String,
    /// Largest Hamming distance counted as a duplicate (default 3).
    pub distance: u32,
    /// Blocks the fingerprint is cut into (0 = distance + 1, the default). More blocks: more
    /// tables, fewer candidates per lookup, more memory per fingerprint.
    pub blocks: u32,
    /// How long a document stays a candidate, by its timestamp (default 2 days).
    pub retention: Duration,
    /// Extra TTL beyond the window before Redis drops a key nobody writes to (default 10 min);
    /// covers clock skew between instances.
    pub expire_grace: Duration,
    /// Cluster only: how long an attempt may stall between taking its sequence number and
    /// deciding before others ignore it (default 10 s). A live attempt waiting for an earlier
    /// one extends its own lease, up to twice this in all.
    pub lease: Duration,
    /// Timeout for connecting and for each Redis response (default 2 s).
    pub timeout: Duration,
    /// Anything else that changes answers and must match across instances, recorded with the
    /// index settings (e.g. the fingerprint configuration descriptor; default empty).
    pub config_tag: String,
}

impl Default for RedisConfig {
    fn default() -> Self {
        RedisConfig {
            prefix: "neardup".into(),
            distance: 3,
            blocks: 0,
            retention: Duration::from_secs(2 * 86_400),
            expire_grace: Duration::from_secs(600),
            lease: Duration::from_secs(10),
            timeout: Duration::from_secs(2),
            config_tag: String::new(),
        }
    }
}

impl RedisConfig {
    /// Refuses a prefix that is empty or holds braces or whitespace, a retention outside
    /// 1 ms ..= 2^50 ms, and a lease under 100 ms; returns the retention in milliseconds.
    pub(crate) fn validate(&self) -> Result<i64> {
        if self.prefix.is_empty()
            || self
                .prefix
                .chars()
                .any(|c| c == '{' || c == '}' || c.is_whitespace())
        {
            return Err(Error::InvalidConfig(format!(
                "prefix {:?} must be non-empty, without braces or whitespace",
                self.prefix
            )));
        }
        let retention_ms = i64::try_from(self.retention.as_millis()).unwrap_or(i64::MAX);
        if !(1..=(1i64 << 50)).contains(&retention_ms) {
            return Err(Error::InvalidConfig(
                "retention must be between 1 ms and 35 000 years".into(),
            ));
        }
        if self.lease < Duration::from_millis(100) {
            return Err(Error::InvalidConfig("lease must be at least 100 ms".into()));
        }
        Ok(retention_ms)
    }
}
