//! A Redis / Redis Cluster backend for neardup: one near-duplicate index shared by many
//! `neardup serve` instances.
//!
//! # What it owns
//! - The index in Redis: for each block table `t` and each key value `v` (the table's blocks of
//!   the fingerprint, see [`layout`]), a sorted set `{P:t<t>:<v hex>}` whose members are the
//!   documents (`C | fp (8 bytes) | seq (8 bytes) | id`, binary, exact) and whose scores are their
//!   timestamps in milliseconds. The table number and the block value are both in the key, so
//!   equal block values of different tables never collide; the fingerprint is stored exactly in
//!   the member (never as a float score).
//! - The document record: the same member, also in the id bucket `{P:i:<20-bit hash of id>}`
//!   (a sorted set; the member carries the id, fingerprint and sequence number, the score the
//!   timestamp). The bucket doubles as the "id table" that makes a re-submitted id a duplicate
//!   of itself.
//! - `{P:seq}` (sequence counter and, on a cluster, the per-attempt status keys
//!   `{P:seq}:s:<nonce>`), `{P:stats}` (counters, live documents per time bucket) and
//!   `{P:meta}` (the configuration that affects answers; connecting with another one fails).
//!   `P` is the key prefix of the index (one Redis can hold many indexes). The braces are Redis
//!   Cluster hash tags: every key is its own slot, so each lookup touches one node.
//!
//! # Semantics (the same as the embedded engine)
//! A document is a candidate while `timestamp > now - retention`. A check answers
//! `Duplicate { of, distance }` with the nearest live document within distance `k` (ties: the
//! oldest, then the first stored), or with the same id's live document if the id is already
//! stored; otherwise `Unique`, and the document is stored when its timestamp is inside the
//! window. Duplicates are not stored. Timestamps default to the caller's clock and are
//! clamped to it.
//!
//! # Atomicity
//! - **Single Redis**: one Lua script (EVALSHA, one round trip) reads the candidate sets of
//!   all tables, computes distances in Lua and inserts only if nothing is near. Scripts run one
//!   at a time, so any number of instances see one arrival order: exactly one `Unique` per
//!   group of near-duplicates arriving together.
//! - **Redis Cluster**: the keys of one fingerprint live on different nodes, so the check is a
//!   short protocol with a global sequence (see the README for the proof):
//!   1. add a *provisional* member `P | fp | nonce | id` to all of its keys (in parallel);
//!   2. `INCR {P:seq}` and, in the same script, record `seq:P` under the attempt's status key;
//!   3. read all of its keys (in parallel): committed members and provisional members whose
//!      status is `U` with a smaller sequence are stored documents; pending ones with a smaller
//!      sequence are waited for; larger sequences and withdrawn or lapsed attempts are ignored;
//!   4. decide as a single Redis would, in sequence order: `Unique` sets the status to `U` (only
//!      if still pending) and rewrites its members to committed ones; `Duplicate` withdraws.
//!
//!   Any earlier near-duplicate's provisional member was written before its `INCR`, hence
//!   before ours, hence before our reads: a later attempt always sees every earlier one, and
//!   every attempt decides exactly as if all had been serialised by sequence number. Two
//!   instances racing near-duplicates therefore keep exactly one.
//! - Nothing is acknowledged that Redis did not apply: any Redis error is returned as
//!   [`Error::Unavailable`] (the HTTP layer answers 503), and the connection is re-established
//!   on the next call (after a restart the scripts are reloaded on the fly).
//!   How durable an applied write is depends on the Redis persistence settings
//!   (`appendonly yes` + `appendfsync always` loses nothing on a Redis crash).
//!
//! # Retention and memory
//! Checks ignore members older than the window (exact, by score); every write trims the
//! expired members of the keys it touches (`ZREMRANGEBYSCORE`) and extends the key's TTL to
//! `ts + retention - now + grace`, so keys nobody writes to any more are dropped by Redis
//! itself. `max_docs` of the embedded engine is not supported here.
//!
//! # Example
//! ```no_run
//! # async fn demo() -> Result<(), neardup_redis::Error> {
//! use neardup_redis::{Decision, RedisBackend, RedisOptions};
//! let backend = RedisBackend::connect("redis://127.0.0.1:6379/0", RedisOptions::default()).await?;
//! let a = backend.check_and_insert("a", 0xdead_beef_0000_0001, None).await?;
//! assert_eq!(a.decision, Decision::Unique);
//! let b = backend.check_and_insert("b", 0xdead_beef_0000_0007, None).await?;
//! assert_eq!(b.decision, Decision::Duplicate { of: "a".into(), distance: 2 });
//! # Ok(()) }
//! ```
#![warn(missing_docs)]

pub mod layout;
mod scripts;
#[cfg(feature = "server")]
pub mod server;

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures_util::future::try_join_all;
use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};

pub use layout::Layout;
use scripts::Scripts;

/// Longest accepted document id, in bytes (as the embedded engine).
pub const MAX_ID_BYTES: usize = 1024;
/// Most hits a [`RedisBackend::query`] returns (nearest first), as the embedded engine.
pub const MAX_HITS: usize = 100;
/// Document records live in `2^20` id buckets (sorted sets keyed by a hash of the id), so
/// large indexes keep them in Redis's compact listpack encoding.
pub const ID_BUCKET_BITS: u32 = 20;

/// Errors of the Redis backend. Each variant says what went wrong and how to fix it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The backend URL is not `redis://host:port[/db]` or `redis+cluster://host:port[,host:port…]`.
    /// Fix: use one of those forms.
    #[error("invalid Redis URL {url:?}: {reason}; use redis://host:port[/db] or redis+cluster://host:port[,host:port...]")]
    InvalidUrl {
        /// The URL given.
        url: String,
        /// What is wrong.
        reason: String,
    },
    /// An option is out of range; the message names it. Fix: correct the option.
    #[error("invalid Redis backend configuration: {0}")]
    InvalidConfig(String),
    /// The index prefix already holds an index written with other settings (distance, blocks,
    /// retention), whose answers would differ. Fix: use the original settings or another
    /// `prefix`.
    #[error("Redis index {prefix:?} was created with {stored}, but this instance uses {current}; use the original settings or another key prefix")]
    ConfigMismatch {
        /// The key prefix.
        prefix: String,
        /// The settings recorded in Redis.
        stored: String,
        /// The settings of this instance.
        current: String,
    },
    /// The document id is empty or longer than [`MAX_ID_BYTES`]. Fix: send a non-empty id of
    /// at most 1024 bytes.
    #[error("invalid document id: {reason}")]
    InvalidId {
        /// What is wrong with it.
        reason: String,
    },
    /// Redis could not be reached or refused a command; nothing of this request was
    /// acknowledged (a check may have to be retried). Fix: check that Redis is running and
    /// reachable (`redis-cli -h … ping`); the backend reconnects by itself.
    #[error("Redis unavailable: {reason}")]
    Unavailable {
        /// The Redis error.
        reason: String,
    },
    /// On a cluster, this check took longer than its lease (a stalled client or overloaded
    /// Redis) and was withdrawn without storing anything. Fix: retry; raise
    /// [`RedisOptions::lease`] if it happens under normal load.
    #[error("check withdrawn: {reason}; retry")]
    Conflict {
        /// Why.
        reason: String,
    },
    /// Redis holds a value this backend cannot decode (another program wrote under the prefix).
    /// Fix: use a prefix of its own for the index.
    #[error("unexpected data in Redis: {0}; use a key prefix of its own for the index")]
    Corrupt(String),
}

impl From<redis::RedisError> for Error {
    fn from(e: redis::RedisError) -> Self {
        Error::Unavailable {
            reason: e.to_string(),
        }
    }
}

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Source of "now" in milliseconds since the Unix epoch.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0)
    }
}

/// A clock that moves only when told to (tests, simulations).
#[derive(Debug)]
pub struct ManualClock {
    ms: AtomicI64,
}

impl ManualClock {
    /// A clock showing `ms` milliseconds since the epoch.
    pub fn new(ms: i64) -> ManualClock {
        ManualClock {
            ms: AtomicI64::new(ms),
        }
    }

    /// Sets the time.
    pub fn set(&self, ms: i64) {
        self.ms.store(ms, Ordering::SeqCst);
    }

    /// Moves the time forward by `d`.
    pub fn advance(&self, d: Duration) {
        self.ms.fetch_add(d.as_millis() as i64, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.ms.load(Ordering::SeqCst)
    }
}

/// Settings of a [`RedisBackend`]. Distance, blocks and retention change answers and are
/// recorded under the prefix; all instances sharing an index must use the same ones.
#[derive(Debug, Clone)]
pub struct RedisOptions {
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

impl Default for RedisOptions {
    fn default() -> Self {
        RedisOptions {
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

/// The answer of a check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// No live document within the distance.
    Unique,
    /// The nearest live document within the distance (ties: the oldest).
    Duplicate {
        /// Its id.
        of: String,
        /// Hamming distance between the fingerprints.
        distance: u32,
    },
}

/// Result of [`RedisBackend::check_and_insert`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The document's fingerprint.
    pub fingerprint: u64,
    /// Unique or duplicate.
    pub decision: Decision,
    /// True when the document was stored (unique and its timestamp inside the window).
    pub stored: bool,
    /// The timestamp used (ms since the epoch).
    pub timestamp_ms: i64,
    /// For a duplicate: the fingerprint of the document it duplicates.
    pub of_fingerprint: Option<u64>,
}

/// A stored document near a query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    /// Its id.
    pub id: String,
    /// Its fingerprint.
    pub fingerprint: u64,
    /// Hamming distance to the query.
    pub distance: u32,
    /// Its timestamp (ms since the epoch).
    pub timestamp_ms: i64,
}

/// A stored document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocInfo {
    /// Its id.
    pub id: String,
    /// Its fingerprint.
    pub fingerprint: u64,
    /// Its timestamp (ms since the epoch).
    pub timestamp_ms: i64,
}

/// Counters of the shared index (all instances together) from [`RedisBackend::stats`].
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

#[derive(Clone)]
enum Conn {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Single(c) => c.req_packed_command(cmd),
            Conn::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Single(c) => c.req_packed_commands(cmd, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(cmd, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Single(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
        }
    }
}

/// A decoded set member.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Member {
    committed: bool,
    fp: u64,
    /// Sequence number (committed) or nonce (provisional).
    tag: u64,
    id: String,
}

impl Member {
    fn encode(committed: bool, fp: u64, tag: u64, id: &str) -> Vec<u8> {
        let mut m = Vec::with_capacity(17 + id.len());
        m.push(if committed { b'C' } else { b'P' });
        m.extend_from_slice(&fp.to_be_bytes());
        m.extend_from_slice(&tag.to_be_bytes());
        m.extend_from_slice(id.as_bytes());
        m
    }

    fn decode(m: &[u8]) -> Result<Member> {
        let bad = || Error::Corrupt(format!("set member of {} bytes", m.len()));
        if m.len() < 17 || !(m[0] == b'C' || m[0] == b'P') {
            return Err(bad());
        }
        let fp = u64::from_be_bytes(m[1..9].try_into().map_err(|_| bad())?);
        let tag = u64::from_be_bytes(m[9..17].try_into().map_err(|_| bad())?);
        let id = std::str::from_utf8(&m[17..]).map_err(|_| bad())?.to_owned();
        Ok(Member {
            committed: m[0] == b'C',
            fp,
            tag,
            id,
        })
    }
}

/// One candidate of a decision: ordering key (distance, ts, seq).
#[derive(Debug, Clone)]
struct Cand {
    d: u32,
    ts: i64,
    seq: u64,
    m: Member,
}

impl Cand {
    fn key(&self) -> (u32, i64, u64) {
        (self.d, self.ts, self.seq)
    }
}

struct Inner {
    conn: Conn,
    opts: RedisOptions,
    layout: Layout,
    scripts: Scripts,
    clock: Arc<dyn Clock>,
    now_hw: AtomicI64,
    retention_ms: i64,
    bucket_ms: i64,
    nonce_state: std::hash::RandomState,
    nonce_ctr: AtomicU64,
    url: String,
}

/// A handle on a shared near-duplicate index in Redis or Redis Cluster. Cheap to clone; all
/// clones share one multiplexed connection.
#[derive(Clone)]
pub struct RedisBackend {
    inner: Arc<Inner>,
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

/// Parses a backend URL into (cluster?, node URLs).
fn parse_url(url: &str) -> Result<(bool, Vec<String>)> {
    let bad = |reason: &str| Error::InvalidUrl {
        url: url.to_owned(),
        reason: reason.to_owned(),
    };
    if let Some(rest) = url.strip_prefix("redis+cluster://") {
        let nodes: Vec<String> = rest
            .trim_end_matches('/')
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| format!("redis://{s}"))
            .collect();
        if nodes.is_empty() {
            return Err(bad("no cluster node given"));
        }
        for n in &nodes {
            redis::parse_redis_url(n).ok_or_else(|| bad("a node is not host:port"))?;
        }
        Ok((true, nodes))
    } else if url.starts_with("redis://") {
        redis::parse_redis_url(url).ok_or_else(|| bad("not a valid redis:// URL"))?;
        Ok((false, vec![url.to_owned()]))
    } else {
        Err(bad("unknown scheme"))
    }
}

fn check_id(id: &str) -> Result<()> {
    if id.is_empty() {
        return Err(Error::InvalidId {
            reason: "the id is empty".into(),
        });
    }
    if id.len() > MAX_ID_BYTES {
        return Err(Error::InvalidId {
            reason: format!(
                "the id is {} bytes long; at most {MAX_ID_BYTES} are allowed",
                id.len()
            ),
        });
    }
    Ok(())
}

fn parse_pairs(v: Vec<(Vec<u8>, f64)>) -> Result<Vec<(Member, i64)>> {
    v.into_iter()
        .map(|(m, s)| Ok((Member::decode(&m)?, s as i64)))
        .collect()
}

impl RedisBackend {
    /// Connects to `redis://host:port[/db]` or `redis+cluster://host:port[,host:port…]`,
    /// checks the index configuration recorded under the prefix (records it if new) and
    /// loads the scripts.
    ///
    /// # Errors
    /// [`Error::InvalidUrl`], [`Error::InvalidConfig`], [`Error::Unavailable`] when Redis
    /// cannot be reached, [`Error::ConfigMismatch`].
    pub async fn connect(url: &str, opts: RedisOptions) -> Result<RedisBackend> {
        RedisBackend::connect_with_clock(url, opts, Arc::new(SystemClock)).await
    }

    /// [`connect`](Self::connect) with a clock of your own (tests, replays).
    ///
    /// # Errors
    /// As [`connect`](Self::connect).
    pub async fn connect_with_clock(
        url: &str,
        opts: RedisOptions,
        clock: Arc<dyn Clock>,
    ) -> Result<RedisBackend> {
        if opts.prefix.is_empty()
            || opts
                .prefix
                .chars()
                .any(|c| c == '{' || c == '}' || c.is_whitespace())
        {
            return Err(Error::InvalidConfig(format!(
                "prefix {:?} must be non-empty, without braces or whitespace",
                opts.prefix
            )));
        }
        let retention_ms = i64::try_from(opts.retention.as_millis()).unwrap_or(i64::MAX);
        if !(1..=(1i64 << 50)).contains(&retention_ms) {
            return Err(Error::InvalidConfig(
                "retention must be between 1 ms and 35 000 years".into(),
            ));
        }
        if opts.lease < Duration::from_millis(100) {
            return Err(Error::InvalidConfig("lease must be at least 100 ms".into()));
        }
        let layout = Layout::new(opts.distance, opts.blocks)?;
        let (cluster, nodes) = parse_url(url)?;
        let conn = if cluster {
            let client = redis::cluster::ClusterClient::builder(nodes)
                .connection_timeout(opts.timeout)
                .response_timeout(opts.timeout)
                .retries(3)
                .build()?;
            Conn::Cluster(client.get_async_connection().await?)
        } else {
            let client = redis::Client::open(nodes[0].as_str())?;
            let cfg = ConnectionManagerConfig::new()
                .set_connection_timeout(Some(opts.timeout))
                .set_response_timeout(Some(opts.timeout))
                .set_number_of_retries(2)
                .set_max_delay(Duration::from_millis(500));
            Conn::Single(ConnectionManager::new_with_config(client, cfg).await?)
        };
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

    fn conn(&self) -> Conn {
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
    pub fn options(&self) -> &RedisOptions {
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

    async fn check_meta(&self) -> Result<()> {
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
    fn now(&self) -> i64 {
        let t = self.inner.clock.now_ms();
        self.inner.now_hw.fetch_max(t, Ordering::SeqCst).max(t)
    }

    fn table_key(&self, t: usize, fp: u64) -> String {
        let l = &self.inner.layout;
        let width = l.key_bits(t).div_ceil(4) as usize;
        format!(
            "{{{}:t{}:{:0width$x}}}",
            self.inner.opts.prefix,
            t,
            l.key_value(t, fp)
        )
    }

    /// The id bucket of `id`: FNV-1a (stable everywhere) of the id, [`ID_BUCKET_BITS`] bits.
    fn id_key(&self, id: &str) -> String {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in id.bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        format!(
            "{{{}:i:{:05x}}}",
            self.inner.opts.prefix,
            h & ((1 << ID_BUCKET_BITS) - 1)
        )
    }

    fn seq_key(&self) -> String {
        format!("{{{}:seq}}", self.inner.opts.prefix)
    }

    fn status_key(&self, nonce: u64) -> String {
        format!("{{{}:seq}}:s:{:016x}", self.inner.opts.prefix, nonce)
    }

    fn stats_key(&self) -> String {
        format!("{{{}:stats}}", self.inner.opts.prefix)
    }

    /// Table keys of `fp`, then the id key.
    fn keys_of(&self, fp: u64, id: &str) -> Vec<String> {
        let mut keys: Vec<String> = (0..self.inner.layout.tables())
            .map(|t| self.table_key(t, fp))
            .collect();
        keys.push(self.id_key(id));
        keys
    }

    fn ttl_ms(&self, ts: i64, now: i64) -> i64 {
        let grace = i64::try_from(self.inner.opts.expire_grace.as_millis()).unwrap_or(i64::MAX);
        (ts.saturating_add(self.inner.retention_ms) - now)
            .saturating_add(grace)
            .max(1)
    }

    fn count_field(&self, ts: i64) -> String {
        format!("n:{}", ts.div_euclid(self.inner.bucket_ms))
    }

    fn nonce(&self) -> u64 {
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
                    Ok(self.outcome(fp, ts, best.map(|c| (c.m, c.d)), false))
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

    fn outcome(&self, fp: u64, ts: i64, dup: Option<(Member, u32)>, stored: bool) -> Outcome {
        match dup {
            Some((m, d)) => Outcome {
                fingerprint: fp,
                decision: Decision::Duplicate {
                    of: m.id,
                    distance: d,
                },
                stored: false,
                timestamp_ms: ts,
                of_fingerprint: Some(m.fp),
            },
            None => Outcome {
                fingerprint: fp,
                decision: Decision::Unique,
                stored,
                timestamp_ms: ts,
                of_fingerprint: None,
            },
        }
    }

    async fn check_single(
        &self,
        id: &str,
        fp: u64,
        ts: i64,
        now: i64,
        expired_at: i64,
    ) -> Result<Outcome> {
        let mut inv = self.inner.scripts.check.prepare_invoke();
        for k in self.keys_of(fp, id) {
            inv.key(k);
        }
        inv.key(self.seq_key()).key(self.stats_key());
        inv.arg(&fp.to_be_bytes()[..])
            .arg(fp >> 32)
            .arg(fp & 0xffff_ffff)
            .arg(id)
            .arg(ts)
            .arg(expired_at)
            .arg(self.inner.opts.distance)
            .arg(self.ttl_ms(ts, now))
            .arg(self.count_field(ts))
            .arg(if ts > expired_at { "1" } else { "0" });
        let v: Value = inv.invoke_async(&mut self.conn()).await?;
        let Value::Array(items) = v else {
            return Err(Error::Corrupt(format!("check script returned {v:?}")));
        };
        let int = |v: &Value| match v {
            Value::Int(i) => Ok(*i),
            other => Err(Error::Corrupt(format!(
                "expected an integer, got {other:?}"
            ))),
        };
        match items.as_slice() {
            [flag, m, d, _ts] if int(flag)? == 1 => {
                let Value::BulkString(m) = m else {
                    return Err(Error::Corrupt("check script returned no member".into()));
                };
                let m = Member::decode(m)?;
                let d = u32::try_from(int(d)?).map_err(|_| Error::Corrupt("distance".into()))?;
                Ok(self.outcome(fp, ts, Some((m, d)), false))
            }
            [_, stored, ..] => Ok(self.outcome(fp, ts, None, int(stored)? == 1)),
            _ => Err(Error::Corrupt(format!("check script returned {items:?}"))),
        }
    }

    async fn read_keys(&self, keys: &[String], expired_at: i64) -> Result<Vec<Vec<(Member, i64)>>> {
        let lo = format!("({expired_at}");
        let reads = keys.iter().map(|k| {
            let mut c = self.conn();
            let lo = &lo;
            async move {
                let v: Vec<(Vec<u8>, f64)> = redis::cmd("ZRANGEBYSCORE")
                    .arg(k)
                    .arg(lo)
                    .arg("+inf")
                    .arg("WITHSCORES")
                    .query_async(&mut c)
                    .await?;
                parse_pairs(v)
            }
        });
        try_join_all(reads).await
    }

    /// The best committed candidate (same id first, then nearest) — used where no insert
    /// follows.
    async fn best_committed(&self, id: &str, fp: u64, expired_at: i64) -> Result<Option<Cand>> {
        let keys = self.keys_of(fp, id);
        let sets = self.read_keys(&keys, expired_at).await?;
        let k = self.inner.opts.distance;
        let pick = |sets: &[Vec<(Member, i64)>], same: bool| {
            sets.iter()
                .flatten()
                .filter(|(m, _)| m.committed)
                .map(|(m, ts)| Cand {
                    d: (m.fp ^ fp).count_ones(),
                    ts: *ts,
                    seq: m.tag,
                    m: m.clone(),
                })
                .filter(|c| if same { c.m.id == id } else { c.d <= k })
                .min_by_key(Cand::key)
        };
        let n = keys.len();
        Ok(pick(&sets[n - 1..], true).or_else(|| pick(&sets[..], false)))
    }

    async fn check_cluster(
        &self,
        id: &str,
        fp: u64,
        ts: i64,
        now: i64,
        expired_at: i64,
    ) -> Result<Outcome> {
        let keys = self.keys_of(fp, id);
        let nonce = self.nonce();
        let pm = Member::encode(false, fp, nonce, id);
        let ttl = self.ttl_ms(ts, now);
        let sc = &self.inner.scripts;
        // Phase 1: provisional members everywhere.
        let adds = keys.iter().map(|k| {
            let mut c = self.conn();
            let pm = &pm;
            async move {
                sc.add
                    .key(k)
                    .arg(&pm[..])
                    .arg(ts)
                    .arg(expired_at)
                    .arg(ttl)
                    .invoke_async::<i64>(&mut c)
                    .await
            }
        });
        if let Err(e) = try_join_all(adds).await {
            self.withdraw(&keys, &pm).await;
            return Err(e.into());
        }
        // Phase 2: the sequence number, recorded with the attempt's status.
        let lease_ms = self.inner.opts.lease.as_millis() as u64;
        let status = self.status_key(nonce);
        let seq: u64 = match sc
            .seq
            .key(self.seq_key())
            .key(&status)
            .arg(lease_ms)
            .invoke_async(&mut self.conn())
            .await
        {
            Ok(s) => s,
            Err(e) => {
                self.withdraw(&keys, &pm).await;
                return Err(e.into());
            }
        };
        let started = Instant::now();
        let decided = self
            .decide_cluster(&keys, id, fp, nonce, seq, expired_at, started)
            .await;
        let best = match decided {
            Ok(b) => b,
            Err(e) => {
                self.finish(&status, "D").await.ok();
                self.withdraw(&keys, &pm).await;
                return Err(e);
            }
        };
        let grace_ms = 3 * lease_ms;
        if let Some(cand) = best {
            // The document we point at must be committed before we answer.
            if !cand.m.committed {
                self.help_commit(&cand.m, cand.seq, cand.ts).await?;
            }
            self.finish(&status, "D").await.ok();
            self.withdraw(&keys, &pm).await;
            let _: Result<i64, _> = redis::cmd("HINCRBY")
                .arg(self.stats_key())
                .arg("duplicates")
                .arg(1)
                .query_async(&mut self.conn())
                .await;
            return Ok(self.outcome(fp, ts, Some((cand.m, cand.d)), false));
        }
        // Unique: the decision point is the status change P -> U.
        let fin: Option<String> = sc
            .finish
            .key(&status)
            .arg("U")
            .arg(grace_ms)
            .invoke_async(&mut self.conn())
            .await?;
        if fin.as_deref() != Some(format!("{seq}:U").as_str()) {
            self.withdraw(&keys, &pm).await;
            return Err(Error::Conflict {
                reason: format!("the lease of {} ms lapsed before the decision", lease_ms),
            });
        }
        let cm = Member::encode(true, fp, seq, id);
        let commits = self.commit_members(&keys, &pm, &cm, ts);
        let mut stats = redis::pipe();
        stats
            .cmd("HINCRBY")
            .arg(self.stats_key())
            .arg("inserted")
            .arg(1)
            .ignore()
            .cmd("HINCRBY")
            .arg(self.stats_key())
            .arg(self.count_field(ts))
            .arg(1)
            .ignore();
        let mut c = self.conn();
        let (commits, _) = tokio::join!(commits, async {
            let r: Result<(), _> = stats.query_async(&mut c).await;
            r
        });
        commits?;
        Ok(self.outcome(fp, ts, None, true))
    }

    /// Phase 3 of the cluster protocol: the best stored candidate that precedes `seq`, waiting
    /// for earlier pending attempts. A provisional candidate (its owner decided `U`) must be
    /// committed before answering.
    #[allow(clippy::too_many_arguments)]
    async fn decide_cluster(
        &self,
        keys: &[String],
        id: &str,
        fp: u64,
        nonce: u64,
        seq: u64,
        expired_at: i64,
        started: Instant,
    ) -> Result<Option<Cand>> {
        let k = self.inner.opts.distance;
        let sets = self.read_keys(keys, expired_at).await?;
        let n = keys.len();
        // (is_id_key, member, ts)
        let mut committed: Vec<(bool, Cand)> = Vec::new();
        let mut pending: HashMap<u64, (bool, Member, i64, u32)> = HashMap::new();
        for (i, set) in sets.into_iter().enumerate() {
            for (m, ts) in set {
                let same_id = i == n - 1 && m.id == id;
                if !m.committed && m.tag == nonce {
                    continue;
                }
                let d = (m.fp ^ fp).count_ones();
                if !same_id && d > k {
                    continue;
                }
                if m.committed {
                    if m.tag < seq {
                        committed.push((
                            same_id,
                            Cand {
                                d,
                                ts,
                                seq: m.tag,
                                m,
                            },
                        ));
                    }
                } else {
                    let e = pending.entry(m.tag).or_insert((same_id, m, ts, d));
                    e.0 |= same_id;
                }
            }
        }
        // Resolve provisional members: their status says seq and state.
        let mut unresolved: Vec<u64> = pending.keys().copied().collect();
        let mut delay = Duration::from_micros(200);
        // Waiting for an earlier attempt: keep our own lease alive (we are not the stalled
        // one), up to twice the lease in all; a stalled attempt lapses within one lease.
        let lease = self.inner.opts.lease;
        let limit = lease * 2;
        let mut extended = started;
        let own_status = self.status_key(nonce);
        let own_value = format!("{seq}:P");
        while !unresolved.is_empty() {
            if started.elapsed() > limit {
                return Err(Error::Conflict {
                    reason: "waited too long for an earlier concurrent check".into(),
                });
            }
            if extended.elapsed() > lease / 4 {
                let ok: i64 = self
                    .inner
                    .scripts
                    .extend
                    .key(&own_status)
                    .arg(&own_value)
                    .arg(lease.as_millis() as u64)
                    .invoke_async(&mut self.conn())
                    .await?;
                if ok != 1 {
                    return Err(Error::Conflict {
                        reason: "this check's lease lapsed while waiting".into(),
                    });
                }
                extended = Instant::now();
            }
            let status_keys: Vec<String> = unresolved.iter().map(|&n| self.status_key(n)).collect();
            let vals: Vec<Option<String>> = redis::cmd("MGET")
                .arg(&status_keys)
                .query_async(&mut self.conn())
                .await?;
            let mut still = Vec::new();
            for (nonce, v) in unresolved.iter().zip(vals) {
                let Some(v) = v else { continue }; // later, or lapsed: never stored
                let (s, state) = v
                    .split_once(':')
                    .ok_or_else(|| Error::Corrupt(format!("status {v:?}")))?;
                let s: u64 = s
                    .parse()
                    .map_err(|_| Error::Corrupt(format!("status {v:?}")))?;
                if s >= seq {
                    continue;
                }
                match state {
                    "U" => {
                        let (same_id, m, ts, d) = pending[nonce].clone();
                        committed.push((same_id, Cand { d, ts, seq: s, m }));
                    }
                    "P" => still.push(*nonce),
                    _ => {}
                }
            }
            unresolved = still;
            if !unresolved.is_empty() {
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_millis(20));
            }
        }
        let best = committed
            .iter()
            .filter(|(s, _)| *s)
            .map(|(_, c)| c)
            .min_by_key(|c| c.key())
            .or_else(|| {
                committed
                    .iter()
                    .filter(|(s, c)| !*s && c.d <= k)
                    .map(|(_, c)| c)
                    .min_by_key(|c| c.key())
            })
            .cloned();
        Ok(best)
    }

    async fn finish(&self, status: &str, state: &str) -> Result<Option<String>> {
        let grace_ms = 3 * self.inner.opts.lease.as_millis() as u64;
        Ok(self
            .inner
            .scripts
            .finish
            .key(status)
            .arg(state)
            .arg(grace_ms)
            .invoke_async(&mut self.conn())
            .await?)
    }

    /// Rewrites a provisional member `pm` into the committed member `cm` in every key (one
    /// script call per key, concurrently).
    async fn commit_members(
        &self,
        keys: &[String],
        pm: &[u8],
        cm: &[u8],
        ts: i64,
    ) -> Result<Vec<i64>> {
        let sc = &self.inner.scripts;
        let commits = keys.iter().map(|k| {
            let mut c = self.conn();
            async move {
                sc.commit
                    .key(k)
                    .arg(pm)
                    .arg(cm)
                    .arg(ts)
                    .invoke_async::<i64>(&mut c)
                    .await
            }
        });
        Ok(try_join_all(commits).await?)
    }

    /// Commits another attempt's provisional members (it decided `U`); idempotent.
    async fn help_commit(&self, m: &Member, seq: u64, ts: i64) -> Result<()> {
        let keys = self.keys_of(m.fp, &m.id);
        let pm = Member::encode(false, m.fp, m.tag, &m.id);
        let cm = Member::encode(true, m.fp, seq, &m.id);
        self.commit_members(&keys, &pm, &cm, ts).await?;
        Ok(())
    }

    /// Best effort: removes provisional members (a failure leaves garbage that readers ignore
    /// and trimming or TTL removes).
    async fn withdraw(&self, keys: &[String], pm: &[u8]) {
        let rems = keys.iter().map(|k| {
            let mut c = self.conn();
            async move {
                redis::cmd("ZREM")
                    .arg(k)
                    .arg(pm)
                    .query_async::<i64>(&mut c)
                    .await
            }
        });
        let _ = try_join_all(rems).await;
    }

    /// The live documents within the distance of `fp`, nearest first (then oldest), at most
    /// [`MAX_HITS`]. Nothing is stored. On a cluster, checks still deciding are not visible.
    ///
    /// # Errors
    /// [`Error::Unavailable`] when Redis failed.
    pub async fn query(&self, fp: u64) -> Result<Vec<Hit>> {
        let now = self.now();
        let expired_at = now.saturating_sub(self.inner.retention_ms);
        let keys: Vec<String> = (0..self.inner.layout.tables())
            .map(|t| self.table_key(t, fp))
            .collect();
        let sets = self.read_keys(&keys, expired_at).await?;
        let k = self.inner.opts.distance;
        let mut found: Vec<(u32, i64, u64, Member)> = sets
            .into_iter()
            .flatten()
            .filter(|(m, _)| m.committed)
            .filter_map(|(m, ts)| {
                let d = (m.fp ^ fp).count_ones();
                (d <= k).then_some((d, ts, m.tag, m))
            })
            .collect();
        found.sort_unstable_by_key(|a| (a.0, a.1, a.2));
        found.dedup_by_key(|x| x.2);
        found.truncate(MAX_HITS);
        Ok(found
            .into_iter()
            .map(|(d, ts, _, m)| Hit {
                id: m.id,
                fingerprint: m.fp,
                distance: d,
                timestamp_ms: ts,
            })
            .collect())
    }

    async fn live_doc(&self, id: &str, expired_at: i64) -> Result<Option<(Member, i64)>> {
        let sets = self.read_keys(&[self.id_key(id)], expired_at).await?;
        Ok(sets
            .into_iter()
            .flatten()
            .filter(|(m, _)| m.committed && m.id == id)
            .min_by_key(|(m, ts)| (*ts, m.tag)))
    }

    /// The stored, live document with this id.
    ///
    /// # Errors
    /// [`Error::InvalidId`]; [`Error::Unavailable`] when Redis failed.
    pub async fn get(&self, id: &str) -> Result<Option<DocInfo>> {
        check_id(id)?;
        let expired_at = self.now().saturating_sub(self.inner.retention_ms);
        Ok(self.live_doc(id, expired_at).await?.map(|(m, ts)| DocInfo {
            id: m.id,
            fingerprint: m.fp,
            timestamp_ms: ts,
        }))
    }

    /// Removes the live document `id`; returns whether there was one. The removal takes effect
    /// when its id record is deleted (the linearisation point); its table entries follow in
    /// the same call.
    ///
    /// # Errors
    /// [`Error::InvalidId`]; [`Error::Unavailable`] when Redis failed (retry: removal is
    /// idempotent).
    pub async fn remove(&self, id: &str) -> Result<bool> {
        check_id(id)?;
        let expired_at = self.now().saturating_sub(self.inner.retention_ms);
        let Some((m, ts)) = self.live_doc(id, expired_at).await? else {
            return Ok(false);
        };
        let member = Member::encode(true, m.fp, m.tag, &m.id);
        let keys = self.keys_of(m.fp, &m.id);
        let mut c = self.conn();
        let n: i64 = redis::cmd("ZREM")
            .arg(&keys[keys.len() - 1])
            .arg(&member)
            .query_async(&mut c)
            .await?;
        let rems = keys[..keys.len() - 1].iter().map(|k| {
            let mut c = self.conn();
            let member = &member;
            async move {
                redis::cmd("ZREM")
                    .arg(k)
                    .arg(&member[..])
                    .query_async::<i64>(&mut c)
                    .await
            }
        });
        try_join_all(rems).await?;
        if n == 1 {
            let mut p = redis::pipe();
            p.cmd("HINCRBY")
                .arg(self.stats_key())
                .arg("removed")
                .arg(1)
                .ignore()
                .cmd("HINCRBY")
                .arg(self.stats_key())
                .arg(self.count_field(ts))
                .arg(-1)
                .ignore();
            let _: Result<(), _> = p.query_async(&mut c).await;
        }
        Ok(n == 1)
    }

    /// Counters of the shared index (all instances).
    ///
    /// # Errors
    /// [`Error::Unavailable`] when Redis failed.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_round_trip() {
        let m = Member::encode(true, 0x0123_4567_89ab_cdef, 42, "doc/1");
        let d = Member::decode(&m).unwrap();
        assert_eq!(
            d,
            Member {
                committed: true,
                fp: 0x0123_4567_89ab_cdef,
                tag: 42,
                id: "doc/1".into()
            }
        );
        assert!(Member::decode(b"Xshort").is_err());
        assert!(Member::decode(&[b'C'; 10]).is_err());
    }

    #[test]
    fn urls() {
        assert_eq!(
            parse_url("redis://127.0.0.1:6379/2").unwrap(),
            (false, vec!["redis://127.0.0.1:6379/2".to_string()])
        );
        assert_eq!(
            parse_url("redis+cluster://a:1,b:2").unwrap(),
            (
                true,
                vec!["redis://a:1".to_string(), "redis://b:2".to_string()]
            )
        );
        assert!(parse_url("http://x").is_err());
        assert!(parse_url("redis+cluster://").is_err());
        assert!(check_id("").is_err());
        assert!(check_id(&"x".repeat(1025)).is_err());
    }
}
