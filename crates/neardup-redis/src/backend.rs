//! What is a handle on the shared index? [`RedisBackend`]: connecting (and checking the
//! recorded configuration), the monotonic clock, attempt nonces, and the check entry points
//! that dispatch to the single-node or cluster protocol.
//!
//! Invariants: a backend only talks to an index whose recorded descriptor equals its own
//! ([`Error::ConfigMismatch`] otherwise); timestamps are clamped to "now"; a batch is decided
//! as if one document after the other, in input order.

use std::collections::HashSet;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::conn::Conn;
use crate::member::{check_id, Member};
use crate::scripts::Scripts;
use crate::{
    Clock, Decision, Error, Layout, Outcome, RedisConfig, Result, Stage, SystemClock,
    ID_BUCKET_BITS,
};

/// The state every clone of a [`RedisBackend`] shares.
pub(crate) struct Inner {
    pub(crate) conn: Conn,
    pub(crate) opts: RedisConfig,
    pub(crate) layout: Layout,
    pub(crate) scripts: Scripts,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) now_hw: AtomicI64,
    pub(crate) retention_ms: i64,
    pub(crate) bucket_ms: i64,
    pub(crate) nonce_state: std::hash::RandomState,
    pub(crate) nonce_ctr: AtomicU64,
    pub(crate) url: String,
}

/// A handle on a shared near-duplicate index in Redis or Redis Cluster. Cheap to clone; all
/// clones share one multiplexed connection.
#[derive(Clone)]
pub struct RedisBackend {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for RedisBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisBackend")
            .field("url", &self.inner.url)
            .field("prefix", &self.inner.opts.prefix)
            .field("layout", &self.inner.layout.name())
            .finish()
    }
}

impl RedisBackend {
    /// Connects to `redis://host:port[/db]` or `redis+cluster://host:port[,host:port…]`,
    /// checks the index configuration recorded under the prefix (records it if new) and
    /// loads the scripts.
    ///
    /// # Errors
    /// [`Error::InvalidUrl`], [`Error::InvalidConfig`], [`Error::Unavailable`] when Redis
    /// cannot be reached, [`Error::ConfigMismatch`].
    pub async fn connect(url: &str, opts: RedisConfig) -> Result<RedisBackend> {
        RedisBackend::connect_with_clock(url, opts, Arc::new(SystemClock)).await
    }

    /// [`connect`](Self::connect) with a clock of your own (tests, replays).
    ///
    /// # Errors
    /// As [`connect`](Self::connect).
    pub async fn connect_with_clock(
        url: &str,
        opts: RedisConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<RedisBackend> {
        let retention_ms = opts.validate()?;
        let layout = Layout::new(opts.distance, opts.blocks)?;
        let conn = Conn::open(url, opts.timeout).await?;
        let bucket_ms = (retention_ms / 8).max(1);
        let backend = RedisBackend {
            inner: Arc::new(Inner {
                conn,
                layout,
                scripts: Scripts::new(),
                now_hw: AtomicI64::new(clock.now_ms()),
                clock,
                retention_ms,
                bucket_ms,
                nonce_state: std::hash::RandomState::new(),
                nonce_ctr: AtomicU64::new(0),
                url: url.to_owned(),
                opts,
            }),
        };
        backend.check_meta().await?;
        Ok(backend)
    }

    pub(crate) fn conn(&self) -> Conn {
        self.inner.conn.clone()
    }

    /// True when connected to a Redis Cluster.
    pub fn is_cluster(&self) -> bool {
        matches!(self.inner.conn, Conn::Cluster(_))
    }

    /// The table layout.
    pub fn layout(&self) -> &Layout {
        &self.inner.layout
    }

    /// The options.
    pub fn options(&self) -> &RedisConfig {
        &self.inner.opts
    }

    /// The settings that change answers, as recorded under the prefix.
    pub fn descriptor(&self) -> String {
        format!(
            "neardup-redis v1 distance={} layout={} ids={} retention_ms={} tag={}",
            self.inner.opts.distance,
            self.inner.layout.name(),
            ID_BUCKET_BITS,
            self.inner.retention_ms,
            self.inner.opts.config_tag
        )
    }

    pub(crate) async fn check_meta(&self) -> Result<()> {
        let key = format!("{{{}:meta}}", self.inner.opts.prefix);
        let current = self.descriptor();
        let mut c = self.conn();
        let _: bool = redis::cmd("HSETNX")
            .arg(&key)
            .arg("config")
            .arg(&current)
            .query_async(&mut c)
            .await?;
        let stored: Option<String> = redis::cmd("HGET")
            .arg(&key)
            .arg("config")
            .query_async(&mut c)
            .await?;
        match stored {
            Some(s) if s == current => Ok(()),
            Some(s) => Err(Error::ConfigMismatch {
                prefix: self.inner.opts.prefix.clone(),
                stored: s,
                current,
            }),
            None => Err(Error::Corrupt("index metadata vanished".into())),
        }
    }

    /// Monotonic "now" (never appears to go backwards).
    pub(crate) fn now(&self) -> i64 {
        let t = self.inner.clock.now_ms();
        self.inner.now_hw.fetch_max(t, Ordering::SeqCst).max(t)
    }

    pub(crate) fn nonce(&self) -> u64 {
        let mut h = self.inner.nonce_state.build_hasher();
        h.write_u64(self.inner.nonce_ctr.fetch_add(1, Ordering::Relaxed));
        h.write_u128(
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        h.finish()
    }

    /// Checks `fp` (document `id`) against every live document and stores it if it is unique
    /// and its timestamp (default: now; clamped to now) is inside the window. Returns only
    /// after Redis applied the decision.
    ///
    /// # Errors
    /// [`Error::InvalidId`]; [`Error::Unavailable`] when Redis failed (the document must be
    /// treated as not stored); [`Error::Conflict`] on a cluster when the check outlived its lease.
    pub async fn check_and_insert(
        &self,
        id: &str,
        fp: u64,
        timestamp_ms: Option<i64>,
    ) -> Result<Outcome> {
        check_id(id)?;
        let now = self.now();
        let ts = timestamp_ms.map_or(now, |t| t.min(now));
        let expired_at = now.saturating_sub(self.inner.retention_ms);
        match &self.inner.conn {
            Conn::Single(_) => self.check_single(id, fp, ts, now, expired_at).await,
            Conn::Cluster(_) => {
                if ts > expired_at {
                    self.check_cluster(id, fp, ts, now, expired_at).await
                } else {
                    // Outside the window: nothing is stored, so a plain read decides.
                    let best = self.best_committed(id, fp, expired_at).await?;
                    Ok(self.outcome(id, fp, ts, best.map(|c| (c.m, c.d)), false))
                }
            }
        }
    }

    /// [`check_and_insert`](Self::check_and_insert) for many documents, decided as if one
    /// after the other in order (a later one may be a duplicate of an earlier one). Documents
    /// that share no table key and no id with an earlier undecided one of the batch cannot
    /// affect each other, so they are checked concurrently, in waves; one result per input.
    pub async fn check_and_insert_batch(
        &self,
        docs: &[(String, u64, Option<i64>)],
    ) -> Vec<Result<Outcome>> {
        let mut out: Vec<Option<Result<Outcome>>> = (0..docs.len()).map(|_| None).collect();
        let mut start = 0;
        while start < docs.len() {
            let mut seen: HashSet<String> = HashSet::new();
            let mut end = start;
            while end < docs.len() {
                let (id, fp, _) = &docs[end];
                let keys = self.keys_of(*fp, id);
                if keys.iter().any(|k| seen.contains(k)) {
                    break;
                }
                seen.extend(keys);
                end += 1;
            }
            let wave = docs[start..end]
                .iter()
                .map(|(id, fp, ts)| self.check_and_insert(id, *fp, *ts));
            for (i, r) in futures_util::future::join_all(wave)
                .await
                .into_iter()
                .enumerate()
            {
                out[start + i] = Some(r);
            }
            start = end;
        }
        out.into_iter()
            .map(|o| o.expect("every slot decided"))
            .collect()
    }

    /// The engine's form of an answer about document `id`: a match with the same id is the
    /// id's own stored document ([`Stage::Id`]), any other a simhash match.
    pub(crate) fn outcome(
        &self,
        id: &str,
        fp: u64,
        ts: i64,
        dup: Option<(Member, u32)>,
        stored: bool,
    ) -> Outcome {
        let decision = match dup {
            Some((m, d)) => Decision::Duplicate {
                stage: if m.id == id {
                    Stage::Id
                } else {
                    Stage::Simhash
                },
                of: m.id,
                distance: Some(d),
                similarity: None,
            },
            None => Decision::Unique,
        };
        Outcome {
            fingerprint: Some(fp),
            stored: stored && decision == Decision::Unique,
            decision,
            timestamp_ms: ts,
        }
    }
}
