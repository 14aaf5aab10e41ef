//! The durable online check-and-insert engine: "have I seen a near-duplicate of this document in
//! the last two days? if not, remember it" — the crawler's question, answered in microseconds,
//! with every "unique" answer durable before it leaves.
//!
//! # What it owns
//! - The in-memory state: document records (id, fingerprint, timestamp) in a slab addressed by
//!   32-bit handles, an id map, and **time segments** — one group of [`HammingIndex`] runs per
//!   `retention / segments` slice of time (by the documents' timestamps).
//! - Durability through [`neardup_store::Store`]: every stored document and every removal is a
//!   log record (group commit); the whole state is snapshotted periodically (streamed, never
//!   held twice in memory) and on [`Engine::shutdown`]. Recovery loads the newest snapshot,
//!   replays the log, and rebuilds each segment's index in one bulk build.
//! - Retention: a document is a candidate while `timestamp > now - retention` (and not below the
//!   `max_docs` floor). Expired documents are ignored at once; their memory comes back when the
//!   whole segment has expired and is dropped by the maintenance task.
//!
//! # Invariants
//! - **One decider**: checks that may insert, and removals, run one at a time under a mutex, in
//!   arrival order; each decision sees every earlier insert. Two copies arriving at the same
//!   instant: exactly one is `Unique`.
//! - **Readers do not wait for deciders**: [`Engine::query`], [`Engine::get`] and
//!   [`Engine::stats`] take a read lock that writers hold only for single in-memory inserts
//!   (microseconds); index merges and expiry build outside the lock and swap pointers in.
//! - **Durability**: under [`SyncMode::Always`] (the default) a `Unique` answer is returned only
//!   after its log record is fdatasynced (group commit); a `Duplicate` answer is returned only
//!   after the document it points to is durable. Duplicates themselves are **not stored** (the
//!   engine's memory is what the window holds: the unique documents).
//! - **Ids**: an id names at most one stored document. Submitting an id that is already stored
//!   (and not expired) never stores it twice: the answer is `Duplicate { of: <that same id>,
//!   distance }`, which also makes retries after a lost response harmless.
//! - The data directory records the configuration that affects answers (fingerprint
//!   descriptor, distance, retention, segments, `max_docs`); reopening with another one fails
//!   with [`EngineError::ConfigMismatch`].
//!
//! # Example
//! ```
//! use neardup::engine::{Decision, Doc, Engine, EngineConfig, ManualClock};
//! use neardup::{FingerprintConfig, Fingerprinter};
//! use std::sync::Arc;
//! use std::time::Duration;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
//! let clock = Arc::new(ManualClock::new(1_700_000_000_000));
//! let cfg = EngineConfig { maintenance_interval: None, ..EngineConfig::default() };
//! let engine = Engine::open(dir.path(), fp.clone(), cfg.clone(), clock.clone()).unwrap();
//!
//! let a = engine.check_and_insert(Doc::text("a", "你妈妈喊你回家吃饭哦，回家罗回家罗")).unwrap();
//! assert_eq!(a.decision, Decision::Unique);
//! let b = engine.check_and_insert(Doc::fingerprint("b", a.fingerprint ^ 0b101)).unwrap();
//! assert_eq!(b.decision, Decision::Duplicate { of: "a".into(), distance: 2 });
//!
//! // Two days later "a" has expired.
//! clock.advance(Duration::from_secs(2 * 86_400));
//! engine.maintain().unwrap();
//! assert!(engine.get("a").is_none());
//! engine.shutdown().unwrap();
//! drop(engine);
//!
//! // Durable: reopening finds what was stored (here nothing is left in the window).
//! let engine = Engine::open(dir.path(), fp, cfg, clock).unwrap();
//! assert_eq!(engine.stats().documents, 0);
//! ```

mod records;
mod recover;
mod slab;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use neardup_index::{HammingIndex, Layout};
pub use neardup_store::SyncMode;
use neardup_store::{Store, StoreOptions};
use rayon::prelude::*;

use crate::hash::xxh3;
use crate::Fingerprinter;
use records::SnapshotWriter;
use slab::{id_key, IdMap, Slab, Slot};

/// Longest accepted document id, in bytes.
pub const MAX_ID_BYTES: usize = 1024;
/// Most hits a [`Engine::query`] returns (nearest first).
pub const MAX_HITS: usize = 100;
/// Entries of a segment's mutable head index before it is frozen into an immutable run (the
/// index merges its insert delta beyond this, which would stall the writer).
const HEAD_MAX: usize = 1 << 16;
/// Slots per slab chunk (chunks never move, so growth never copies).
const CHUNK: usize = 1 << 16;
/// Entries filtered per read-lock acquisition in merges, expiry and snapshots.
const LOCK_BATCH: usize = 1 << 12;

/// Errors of the engine. Each variant says what went wrong and how to fix it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The document id is empty or longer than [`MAX_ID_BYTES`]. Fix: send a non-empty id of at
    /// most 1024 bytes (e.g. the URL or a hash of it).
    #[error("invalid document id: {reason}")]
    InvalidId {
        /// What is wrong with it.
        reason: String,
    },
    /// The text could not be fingerprinted (e.g. nothing left after normalisation). Fix: see
    /// the inner error; empty documents have no fingerprint and should be skipped.
    #[error(transparent)]
    Fingerprint(#[from] crate::Error),
    /// A setting is out of range; the message names it. Fix: correct the setting.
    #[error("invalid engine configuration: {0}")]
    InvalidConfig(String),
    /// The data directory was written with another configuration (fingerprint options,
    /// distance, retention, segments or max-docs), so its answers would differ. Fix: start with
    /// the original settings, or use a new data directory for the new ones.
    #[error("{} holds data written with a different configuration (fingerprint options, distance, retention, segments or max-docs); start with the original settings or use a new data directory. Current configuration: {config}", dir.display())]
    ConfigMismatch {
        /// The data directory.
        dir: PathBuf,
        /// The configuration this process asked for (JSON).
        config: String,
    },
    /// The durable store failed (I/O error, lock held by another process, corruption, …).
    /// Fix: see the inner error; after an I/O failure restart the process (recovery replays
    /// everything acknowledged).
    #[error(transparent)]
    Store(neardup_store::Error),
    /// The snapshot or log holds a record the engine cannot decode (damage or a foreign
    /// writer). Fix: restore the data directory from a backup or rebuild it.
    #[error("corrupt engine state in {}: {reason}", dir.display())]
    Corrupt {
        /// The data directory.
        dir: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The index refused an operation (e.g. more than 4 294 967 294 documents in one time
    /// segment). Fix: use more segments or a smaller window.
    #[error(transparent)]
    Index(#[from] neardup_index::Error),
    /// The engine was shut down, or an earlier write failed so it no longer accepts writes.
    /// Fix: restart the process (recovery replays everything acknowledged).
    #[error("the engine is not accepting writes: {reason}; restart to recover")]
    Unavailable {
        /// Why.
        reason: String,
    },
}

/// Result alias of the engine.
pub type Result<T, E = EngineError> = std::result::Result<T, E>;

/// Source of "now" in milliseconds since the Unix epoch. Tests use [`ManualClock`].
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

/// Engine settings. Those that change answers (distance, retention, segments, max_docs) are
/// recorded in the data directory.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Largest Hamming distance counted as a duplicate (default 3).
    pub distance: u32,
    /// How long a document stays a candidate, by its timestamp (default 2 days).
    pub retention: Duration,
    /// Time segments per retention window (default 8): memory comes back a segment at a time.
    pub segments: u32,
    /// Upper bound on stored documents: when exceeded, the maintenance task drops the oldest
    /// time segments whole (default: none).
    pub max_docs: Option<u64>,
    /// Durability of writes (default [`SyncMode::Always`]).
    pub sync: SyncMode,
    /// Index memory budget per document, in bytes; picks the index layout (default 40: four
    /// tables for distance 3).
    pub index_bytes_per_doc: u64,
    /// Snapshot at least this often when there were writes (default 10 minutes; `None`: only
    /// by record count and at shutdown).
    pub snapshot_interval: Option<Duration>,
    /// Snapshot after this many log records (default 4 000 000), bounding restart replay.
    pub snapshot_records: u64,
    /// How often the background task expires, merges and snapshots (default 1 s; `None`: no
    /// background task — call [`Engine::maintain`] yourself).
    pub maintenance_interval: Option<Duration>,
    /// Log segment size in bytes (default 64 MiB).
    pub log_segment_bytes: u64,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            distance: 3,
            retention: Duration::from_secs(2 * 86_400),
            segments: 8,
            max_docs: None,
            sync: SyncMode::Always,
            index_bytes_per_doc: 40,
            snapshot_interval: Some(Duration::from_secs(600)),
            snapshot_records: 4_000_000,
            maintenance_interval: Some(Duration::from_secs(1)),
            log_segment_bytes: 64 << 20,
        }
    }
}

/// What a document consists of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// Text, fingerprinted with the engine's [`Fingerprinter`].
    Text(String),
    /// A precomputed 64-bit simhash (same configuration as the engine's, or answers are
    /// meaningless).
    Fingerprint(u64),
}

/// A document to check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Doc {
    /// Caller's id (1 ..= [`MAX_ID_BYTES`] bytes).
    pub id: String,
    /// Text or fingerprint.
    pub content: Content,
    /// Milliseconds since the epoch; `None` = arrival time. Future times are clamped to now.
    pub timestamp_ms: Option<i64>,
}

impl Doc {
    /// A text document stamped with its arrival time.
    pub fn text(id: impl Into<String>, text: impl Into<String>) -> Doc {
        Doc {
            id: id.into(),
            content: Content::Text(text.into()),
            timestamp_ms: None,
        }
    }

    /// A fingerprint-only document stamped with its arrival time.
    pub fn fingerprint(id: impl Into<String>, fp: u64) -> Doc {
        Doc {
            id: id.into(),
            content: Content::Fingerprint(fp),
            timestamp_ms: None,
        }
    }

    /// The same document with an explicit timestamp.
    pub fn at(mut self, timestamp_ms: i64) -> Doc {
        self.timestamp_ms = Some(timestamp_ms);
        self
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

/// Result of [`Engine::check_and_insert`].
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

/// Result of [`Engine::query`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryResult {
    /// The query's fingerprint.
    pub fingerprint: u64,
    /// Live documents within the distance, nearest first (then oldest), at most [`MAX_HITS`].
    pub hits: Vec<Hit>,
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

/// Counters and sizes reported by [`Engine::stats`].
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct EngineStats {
    /// Stored documents in live time segments (exact up to one segment's partial expiry).
    pub documents: u64,
    /// Live time segments.
    pub segments: usize,
    /// Index runs over all segments (immutable runs plus non-empty heads).
    pub runs: usize,
    /// Heap bytes of the Hamming indexes.
    pub index_bytes: u64,
    /// Heap bytes of the document records (slots, id arenas) and the id map.
    pub record_bytes: u64,
    /// Documents stored since open.
    pub inserted: u64,
    /// Checks answered "duplicate" since open.
    pub duplicates: u64,
    /// Documents removed by id since open.
    pub removed: u64,
    /// Documents whose memory was reclaimed by expiry since open.
    pub expired: u64,
    /// Index merges since open.
    pub merges: u64,
    /// Snapshots written since open.
    pub snapshots: u64,
    /// Log records appended (last LSN).
    pub last_lsn: u64,
    /// Highest LSN on stable storage.
    pub durable_lsn: u64,
    /// LSN of the newest snapshot.
    pub snapshot_lsn: u64,
    /// fdatasync calls on the log since open.
    pub log_syncs: u64,
    /// Documents loaded at open.
    pub recovered_documents: u64,
    /// Milliseconds the last open took (load, replay, index build).
    pub recovery_ms: u64,
}

// ---------------------------------------------------------------------------------------------
// In-memory state

const FREE: u8 = 0;
const LIVE: u8 = 1;
/// Dead (removed or expired) but kept intact for the snapshot being written.
const PARKED: u8 = 2;

struct Segment {
    /// Immutable runs; `runs[0]` is the largest (the merged main run).
    runs: Vec<Arc<HammingIndex>>,
    /// Mutable, at most `HEAD_MAX` entries (all in the index's delta, never merged in place).
    head: HammingIndex,
    /// Stored documents (inserts minus removals).
    live: u64,
}

struct Inner {
    segments: BTreeMap<i64, Segment>,
    slab: Slab,
    /// id → slot of the current document with that id.
    ids: IdMap,
    free: Vec<u32>,
    parked: Vec<u32>,
    snapshotting: bool,
    floor: i64,
}

impl Inner {
    fn new() -> Inner {
        Inner {
            segments: BTreeMap::new(),
            slab: Slab::default(),
            ids: IdMap::default(),
            free: Vec::new(),
            parked: Vec::new(),
            snapshotting: false,
            floor: i64::MIN,
        }
    }

    fn lookup(&self, id: &str) -> Option<u32> {
        let pos = self
            .ids
            .find(id_key(xxh3(id.as_bytes())), |s| self.slab.id(s) == id)?;
        Some(self.ids.handle_at(pos))
    }

    /// Maps `id` (the id of slot `slot`) to `slot`, replacing its previous mapping.
    fn map_insert(&mut self, id: &str, slot: u32) {
        let key = id_key(xxh3(id.as_bytes()));
        match self.ids.find(key, |s| self.slab.id(s) == id) {
            Some(pos) => self.ids.set_at(pos, slot),
            None => self.ids.insert(key, slot),
        }
    }

    /// Removes the mapping of slot `slot`'s id if it points to `slot`.
    fn unmap(&mut self, slot: u32) {
        let key = id_key(xxh3(self.slab.id(slot).as_bytes()));
        if let Some(pos) = self.ids.find(key, |s| s == slot) {
            self.ids.remove_at(pos);
        }
    }

    fn alloc(&mut self, fp: u64, ts: i64, id: &str) -> u32 {
        if !self.snapshotting {
            if let Some(h) = self.free.pop() {
                self.slab.set(h, fp, ts, id, LIVE);
                return h;
            }
        }
        self.slab.push(fp, ts, id, LIVE)
    }

    /// Stores a document: its slot, its id mapping and its segment's head index. Returns true
    /// when the head filled up and was frozen into a run (to be merged by maintenance).
    fn insert_doc(
        &mut self,
        fp: u64,
        ts: i64,
        id: &str,
        segment_ms: i64,
        head_layout: &Layout,
    ) -> Result<bool> {
        let handle = self.alloc(fp, ts, id);
        self.map_insert(id, handle);
        let seg = self
            .segments
            .entry(ts.div_euclid(segment_ms))
            .or_insert_with(|| Segment {
                runs: Vec::new(),
                head: HammingIndex::new(head_layout.clone()),
                live: 0,
            });
        seg.head.insert(fp, handle)?;
        seg.live += 1;
        if seg.head.len() >= HEAD_MAX {
            let full = std::mem::replace(&mut seg.head, HammingIndex::new(head_layout.clone()));
            seg.runs.push(Arc::new(full));
            return Ok(true);
        }
        Ok(false)
    }

    /// Removes a stored document (its run entries are filtered out by the slot check until
    /// the next merge drops them).
    fn remove_doc(&mut self, handle: u32, segment_ms: i64) {
        let (fp, ts) = {
            let s = self.slab.get(handle);
            (s.fp, s.ts)
        };
        self.unmap(handle);
        if let Some(seg) = self.segments.get_mut(&ts.div_euclid(segment_ms)) {
            seg.live = seg.live.saturating_sub(1);
            seg.head.remove(fp, handle);
        }
        self.release(handle);
    }

    /// Marks a dead slot free (or parked while a snapshot runs).
    fn release(&mut self, h: u32) {
        if self.snapshotting {
            self.slab.get_mut(h).state = PARKED;
            self.parked.push(h);
        } else {
            self.slab.free(h);
            self.free.push(h);
        }
    }
}

/// The live-document rule at one instant.
#[derive(Clone, Copy, Debug)]
struct Horizon {
    /// Live iff `ts > expired_at` …
    expired_at: i64,
    /// … and `ts >= floor`.
    floor: i64,
}

impl Horizon {
    #[inline]
    fn live(&self, ts: i64) -> bool {
        ts > self.expired_at && ts >= self.floor
    }
}

struct Shared {
    dir: PathBuf,
    cfg: EngineConfig,
    fingerprinter: Fingerprinter,
    clock: Arc<dyn Clock>,
    store: Store,
    inner: RwLock<Inner>,
    decide: Mutex<()>,
    head_layout: Layout,
    segment_ms: i64,
    retention_ms: i64,
    /// Monotonic "now" (the clock never appears to go backwards).
    now_hw: AtomicI64,
    closed: AtomicBool,
    failed: Mutex<Option<String>>,
    inserted: AtomicU64,
    duplicates: AtomicU64,
    removed: AtomicU64,
    expired: AtomicU64,
    merges: AtomicU64,
    snapshots: AtomicU64,
    recovered: u64,
    recovery_ms: u64,
    last_snapshot: Mutex<Instant>,
    maintain_lock: Mutex<()>,
    stop: Mutex<bool>,
    wake: Condvar,
}

/// The engine. `Send + Sync`: share it with `Arc<Engine>`.
pub struct Engine {
    shared: Arc<Shared>,
    maintenance: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("dir", &self.shared.dir)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The configuration blob recorded in every store file.
fn config_blob(fp: &Fingerprinter, cfg: &EngineConfig) -> String {
    serde_json::json!({
        "engine": "neardup-engine/1",
        "fingerprint": fp.descriptor(),
        "distance": cfg.distance,
        "retention_ms": cfg.retention.as_millis() as u64,
        "segments": cfg.segments,
        "max_docs": cfg.max_docs,
    })
    .to_string()
}

fn check_id(id: &str) -> Result<()> {
    if id.is_empty() {
        return Err(EngineError::InvalidId {
            reason: "the id is empty".into(),
        });
    }
    if id.len() > MAX_ID_BYTES {
        return Err(EngineError::InvalidId {
            reason: format!(
                "the id is {} bytes long; at most {MAX_ID_BYTES} are allowed",
                id.len()
            ),
        });
    }
    Ok(())
}

impl Shared {
    fn now(&self) -> i64 {
        let t = self.clock.now_ms();
        self.now_hw.fetch_max(t, Ordering::SeqCst).max(t)
    }

    fn horizon(&self, inner: &Inner) -> Horizon {
        Horizon {
            expired_at: self.now().saturating_sub(self.retention_ms),
            floor: inner.floor,
        }
    }

    fn segment_of(&self, ts: i64) -> i64 {
        ts.div_euclid(self.segment_ms)
    }

    /// True when every timestamp of segment `s` is dead under `h`.
    fn segment_dead(&self, s: i64, h: Horizon) -> bool {
        let last = s
            .saturating_add(1)
            .saturating_mul(self.segment_ms)
            .saturating_sub(1);
        !h.live(last)
    }

    fn layout_for(&self, n: usize) -> Result<Layout> {
        let n = n.max(1) as u64;
        Ok(Layout::plan(
            n,
            self.cfg.distance,
            n.saturating_mul(self.cfg.index_bytes_per_doc),
        )?)
    }

    fn check_writable(&self) -> Result<()> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(EngineError::Unavailable {
                reason: "the engine has been shut down".into(),
            });
        }
        if let Some(r) = lock(&self.failed).as_ref() {
            return Err(EngineError::Unavailable { reason: r.clone() });
        }
        Ok(())
    }

    fn fail(&self, e: neardup_store::Error) -> EngineError {
        let mut f = lock(&self.failed);
        if f.is_none() {
            *f = Some(e.to_string());
        }
        EngineError::Store(e)
    }

    fn read(&self) -> RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Calls `f(handle, slot, distance)` for every live document within the distance of `fp`
    /// (a handle may be reported more than once).
    fn for_each_match(
        &self,
        inner: &Inner,
        h: Horizon,
        fp: u64,
        mut f: impl FnMut(u32, &Slot, u32),
    ) {
        let k = self.cfg.distance;
        let live_runs = || {
            inner
                .segments
                .iter()
                .filter(move |(&sid, _)| !self.segment_dead(sid, h))
                .flat_map(|(_, seg)| {
                    seg.runs
                        .iter()
                        .map(|r| &**r)
                        .chain(std::iter::once(&seg.head))
                })
                .filter(|run| !run.is_empty())
        };
        // Issue the cache misses of every run before scanning any (they overlap: one query
        // probes every run of every live segment).
        for stage in 0..2 {
            for run in live_runs() {
                run.prefetch(fp, k, stage);
            }
        }
        for run in live_runs() {
            // The distance was validated against the layouts at open.
            let _ = run.search_with(fp, k, |m| {
                let s = inner.slab.get(m.handle);
                if s.state == LIVE && s.fp == m.fingerprint && h.live(s.ts) {
                    f(m.handle, s, u32::from(m.distance));
                }
                std::ops::ControlFlow::Continue(())
            });
        }
    }

    /// The nearest live document (ties: oldest, then lowest handle).
    fn best(&self, inner: &Inner, h: Horizon, fp: u64) -> Option<(u32, u32)> {
        let mut best: Option<(u32, i64, u32)> = None;
        self.for_each_match(inner, h, fp, |handle, s, d| {
            let key = (d, s.ts, handle);
            if best.is_none_or(|b| key < b) {
                best = Some(key);
            }
        });
        best.map(|(d, _, handle)| (handle, d))
    }

    fn fingerprint_of(&self, c: &Content) -> Result<u64> {
        match c {
            Content::Text(t) => Ok(self.fingerprinter.simhash(t)?),
            Content::Fingerprint(f) => Ok(*f),
        }
    }

    /// Inserts a document into memory (caller holds the decide mutex and has logged it).
    fn apply_insert(&self, inner: &mut Inner, fp: u64, ts: i64, id: &str) -> Result<()> {
        if inner.insert_doc(fp, ts, id, self.segment_ms, &self.head_layout)? {
            self.wake.notify_all();
        }
        Ok(())
    }

    /// Removes a live document from memory (caller holds the decide mutex and has logged it).
    fn apply_remove(&self, inner: &mut Inner, handle: u32) {
        inner.remove_doc(handle, self.segment_ms);
    }
}

impl Engine {
    /// Opens (creating if needed) the engine's data directory `dir` and recovers its state.
    ///
    /// # Errors
    /// [`EngineError::InvalidConfig`] for out-of-range settings,
    /// [`EngineError::ConfigMismatch`] if `dir` was written with another configuration,
    /// [`EngineError::Store`] / [`EngineError::Corrupt`] for I/O errors and damage.
    pub fn open(
        dir: impl AsRef<Path>,
        fingerprinter: Fingerprinter,
        cfg: EngineConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<Engine> {
        let started = Instant::now();
        let dir = dir.as_ref().to_path_buf();
        let retention_ms = i64::try_from(cfg.retention.as_millis()).unwrap_or(i64::MAX);
        if retention_ms < 1 {
            return Err(EngineError::InvalidConfig(
                "retention must be at least 1 ms".into(),
            ));
        }
        if cfg.segments == 0 || cfg.segments > 1024 {
            return Err(EngineError::InvalidConfig(format!(
                "segments must be 1 ..= 1024, got {}",
                cfg.segments
            )));
        }
        if cfg.max_docs == Some(0) {
            return Err(EngineError::InvalidConfig(
                "max-docs must be at least 1".into(),
            ));
        }
        let segment_ms = (retention_ms / i64::from(cfg.segments)).max(1);
        let head_layout = Layout::plan(
            HEAD_MAX as u64,
            cfg.distance,
            HEAD_MAX as u64 * cfg.index_bytes_per_doc,
        )
        .and_then(|l| l.check_distance(cfg.distance).map(|_| l))
        .map_err(|e| EngineError::InvalidConfig(format!("distance {}: {e}", cfg.distance)))?;
        if cfg.distance > 16 {
            return Err(EngineError::InvalidConfig(format!(
                "distance must be 0 ..= 16, got {}",
                cfg.distance
            )));
        }
        let blob = config_blob(&fingerprinter, &cfg);
        let opts = StoreOptions {
            sync: cfg.sync,
            config: blob.clone().into_bytes(),
            segment_bytes: cfg.log_segment_bytes.max(1024),
            ..StoreOptions::default()
        };
        let (store, recovered) = Store::open(&dir, opts).map_err(|e| match e {
            neardup_store::Error::ConfigMismatch { .. } => EngineError::ConfigMismatch {
                dir: dir.clone(),
                config: blob.clone(),
            },
            e => EngineError::Store(e),
        })?;
        let now = clock.now_ms();
        let horizon = Horizon {
            expired_at: now.saturating_sub(retention_ms),
            floor: i64::MIN,
        };
        let (inner, recovered_docs) =
            recover::recover(&dir, recovered, &cfg, horizon, segment_ms, &head_layout)?;

        let shared = Arc::new(Shared {
            dir,
            fingerprinter,
            clock,
            store,
            inner: RwLock::new(inner),
            decide: Mutex::new(()),
            head_layout,
            segment_ms,
            retention_ms,
            now_hw: AtomicI64::new(now),
            closed: AtomicBool::new(false),
            failed: Mutex::new(None),
            inserted: AtomicU64::new(0),
            duplicates: AtomicU64::new(0),
            removed: AtomicU64::new(0),
            expired: AtomicU64::new(0),
            merges: AtomicU64::new(0),
            snapshots: AtomicU64::new(0),
            recovered: recovered_docs,
            recovery_ms: started.elapsed().as_millis() as u64,
            last_snapshot: Mutex::new(Instant::now()),
            maintain_lock: Mutex::new(()),
            stop: Mutex::new(false),
            wake: Condvar::new(),
            cfg,
        });
        // Log replay inserts through the segments' heads: merge the runs it froze now, so that
        // queries do not probe them one by one until the first maintenance round.
        merge_runs(&shared)?;
        let maintenance = shared.cfg.maintenance_interval.map(|iv| {
            let sh = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("neardup-maintenance".into())
                .spawn(move || maintenance_loop(sh, iv))
                .expect("spawn maintenance thread")
        });
        Ok(Engine {
            shared,
            maintenance: Mutex::new(maintenance),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &EngineConfig {
        &self.shared.cfg
    }

    /// The fingerprinter used for text documents.
    pub fn fingerprinter(&self) -> &Fingerprinter {
        &self.shared.fingerprinter
    }

    /// The configuration blob recorded in the data directory (JSON).
    pub fn config_descriptor(&self) -> String {
        config_blob(&self.shared.fingerprinter, &self.shared.cfg)
    }

    /// Checks `doc` against every live document and stores it if it is unique (and its
    /// timestamp is inside the window). Returns after the decision is durable (see the module
    /// docs).
    ///
    /// # Errors
    /// [`EngineError::InvalidId`], [`EngineError::Fingerprint`] for bad input;
    /// [`EngineError::Store`] / [`EngineError::Unavailable`] when the write could not be made
    /// durable (the document must then be treated as not stored).
    pub fn check_and_insert(&self, doc: Doc) -> Result<Outcome> {
        check_id(&doc.id)?;
        let fp = self.shared.fingerprint_of(&doc.content)?;
        self.check_and_insert_many(vec![(doc.id, fp, doc.timestamp_ms)])
            .pop()
            .expect("one result")
    }

    /// [`check_and_insert`](Self::check_and_insert) for many documents: fingerprints are
    /// computed in parallel, decisions are taken in order (a later document may be a duplicate
    /// of an earlier one in the same batch) and share one group commit. One result per input,
    /// in order.
    pub fn check_and_insert_batch(&self, docs: Vec<Doc>) -> Vec<Result<Outcome>> {
        let prepared: Vec<Result<(String, u64, Option<i64>)>> = docs
            .into_par_iter()
            .map(|d| {
                check_id(&d.id)?;
                let fp = self.shared.fingerprint_of(&d.content)?;
                Ok((d.id, fp, d.timestamp_ms))
            })
            .collect();
        let mut ok = Vec::new();
        let mut slots = Vec::with_capacity(prepared.len());
        for p in prepared {
            match p {
                Ok(x) => {
                    slots.push(None);
                    ok.push(x);
                }
                Err(e) => slots.push(Some(Err(e))),
            }
        }
        let mut results = self.check_and_insert_many(ok).into_iter();
        slots
            .into_iter()
            .map(|s| s.unwrap_or_else(|| results.next().expect("one result per document")))
            .collect()
    }

    fn check_and_insert_many(&self, docs: Vec<(String, u64, Option<i64>)>) -> Vec<Result<Outcome>> {
        self.decide_many(docs).wait()
    }

    /// Validates a document and computes its fingerprint (CPU-bound, thread-safe: run it on as
    /// many threads as you like) for [`decide`](Self::decide).
    ///
    /// # Errors
    /// [`EngineError::InvalidId`], [`EngineError::Fingerprint`].
    pub fn prepare(&self, doc: Doc) -> Result<PreparedDoc> {
        check_id(&doc.id)?;
        let fp = self.shared.fingerprint_of(&doc.content)?;
        Ok(PreparedDoc {
            id: doc.id,
            fingerprint: fp,
            timestamp_ms: doc.timestamp_ms,
        })
    }

    /// The pipelined form of [`check_and_insert_batch`](Self::check_and_insert_batch): takes
    /// the decisions in order and queues the log records, returning at once; the answers are
    /// released by [`Pending::wait`] once durable. A single thread calling `decide` while
    /// another waits lets many requests share one fdatasync without a thread per request.
    pub fn decide(&self, docs: Vec<PreparedDoc>) -> Pending {
        self.decide_many(
            docs.into_iter()
                .map(|d| (d.id, d.fingerprint, d.timestamp_ms))
                .collect(),
        )
    }

    fn decide_many(&self, docs: Vec<(String, u64, Option<i64>)>) -> Pending {
        let sh = &*self.shared;
        if let Err(e) = sh.check_writable() {
            let reason = e.to_string();
            return Pending {
                shared: Arc::clone(&self.shared),
                out: docs
                    .iter()
                    .map(|_| {
                        Err(EngineError::Unavailable {
                            reason: reason.clone(),
                        })
                    })
                    .collect(),
                tickets: Vec::new(),
                any_dup: false,
                last_lsn: 0,
            };
        }
        let mut out = Vec::with_capacity(docs.len());
        let mut tickets = Vec::new();
        let mut any_dup = false;
        let last_lsn;
        {
            let _decider = lock(&sh.decide);
            for (id, fp, ts) in docs {
                let now = sh.now();
                let ts = ts.map_or(now, |t| t.min(now));
                let decided = {
                    let inner = sh.read();
                    let h = sh.horizon(&inner);
                    let same = inner
                        .lookup(&id)
                        .filter(|&s| {
                            let s = inner.slab.get(s);
                            s.state == LIVE && h.live(s.ts)
                        })
                        .map(|s| (s, crate::hamming(fp, inner.slab.get(s).fp)));
                    match same.or_else(|| sh.best(&inner, h, fp)) {
                        Some((handle, distance)) => Err(Decision::Duplicate {
                            of: inner.slab.id(handle).to_string(),
                            distance,
                        }),
                        None => Ok(h.live(ts)),
                    }
                };
                match decided {
                    Err(decision) => {
                        any_dup = true;
                        sh.duplicates.fetch_add(1, Ordering::Relaxed);
                        out.push(Ok(Outcome {
                            fingerprint: fp,
                            decision,
                            stored: false,
                            timestamp_ms: ts,
                        }));
                    }
                    Ok(store_it) => {
                        if store_it {
                            match sh.store.append(&records::encode_insert(fp, ts, &id)) {
                                Ok(t) => tickets.push((out.len(), t)),
                                Err(e) => {
                                    out.push(Err(sh.fail(e)));
                                    continue;
                                }
                            }
                            let mut inner = sh.write();
                            if let Err(e) = sh.apply_insert(&mut inner, fp, ts, &id) {
                                // Logged but not applicable (index full): refuse further writes.
                                *lock(&sh.failed) = Some(e.to_string());
                                out.push(Err(e));
                                continue;
                            }
                            sh.inserted.fetch_add(1, Ordering::Relaxed);
                        }
                        out.push(Ok(Outcome {
                            fingerprint: fp,
                            decision: Decision::Unique,
                            stored: store_it,
                            timestamp_ms: ts,
                        }));
                    }
                }
            }
            // Only a duplicate answer needs it (its target may be any earlier record).
            last_lsn = if any_dup { sh.store.last_lsn() } else { 0 };
        }
        Pending {
            shared: Arc::clone(&self.shared),
            out,
            tickets,
            any_dup,
            last_lsn,
        }
    }

    /// Checks `content` without storing anything: the live documents within the distance,
    /// nearest first.
    ///
    /// # Errors
    /// [`EngineError::Fingerprint`] if the text has no fingerprint.
    pub fn query(&self, content: &Content) -> Result<QueryResult> {
        let fp = self.shared.fingerprint_of(content)?;
        Ok(self.query_fingerprint(fp))
    }

    /// [`query`](Self::query) for a fingerprint.
    pub fn query_fingerprint(&self, fp: u64) -> QueryResult {
        let sh = &*self.shared;
        let inner = sh.read();
        let h = sh.horizon(&inner);
        let mut found: Vec<(u32, i64, u32)> = Vec::new();
        sh.for_each_match(&inner, h, fp, |handle, s, d| found.push((d, s.ts, handle)));
        found.sort_unstable();
        found.dedup_by_key(|x| x.2);
        found.truncate(MAX_HITS);
        let hits = found
            .into_iter()
            .map(|(d, ts, handle)| {
                let s = inner.slab.get(handle);
                Hit {
                    id: inner.slab.id(handle).to_string(),
                    fingerprint: s.fp,
                    distance: d,
                    timestamp_ms: ts,
                }
            })
            .collect();
        QueryResult {
            fingerprint: fp,
            hits,
        }
    }

    /// [`query`](Self::query) for many inputs, in parallel; one result per input, in order.
    pub fn query_batch(&self, contents: &[Content]) -> Vec<Result<QueryResult>> {
        contents.par_iter().map(|c| self.query(c)).collect()
    }

    /// The stored, live document with this id.
    pub fn get(&self, id: &str) -> Option<DocInfo> {
        let sh = &*self.shared;
        let inner = sh.read();
        let h = sh.horizon(&inner);
        let handle = inner.lookup(id)?;
        let s = inner.slab.get(handle);
        (s.state == LIVE && h.live(s.ts)).then(|| DocInfo {
            id: inner.slab.id(handle).to_string(),
            fingerprint: s.fp,
            timestamp_ms: s.ts,
        })
    }

    /// Removes the live document `id`; returns whether there was one. Durable on return (per
    /// the sync mode).
    ///
    /// # Errors
    /// [`EngineError::InvalidId`]; [`EngineError::Store`] / [`EngineError::Unavailable`] when
    /// the removal could not be logged.
    pub fn remove(&self, id: &str) -> Result<bool> {
        check_id(id)?;
        let sh = &*self.shared;
        sh.check_writable()?;
        let ticket = {
            let _decider = lock(&sh.decide);
            let handle = {
                let inner = sh.read();
                let h = sh.horizon(&inner);
                match inner.lookup(id) {
                    Some(s) if inner.slab.get(s).state == LIVE && h.live(inner.slab.get(s).ts) => s,
                    _ => return Ok(false),
                }
            };
            let t = sh
                .store
                .append(&records::encode_remove(id))
                .map_err(|e| sh.fail(e))?;
            sh.apply_remove(&mut sh.write(), handle);
            sh.removed.fetch_add(1, Ordering::Relaxed);
            t
        };
        ticket.wait().map_err(|e| sh.fail(e))?;
        Ok(true)
    }

    /// [`remove`](Self::remove) for many ids; one result per id, in order.
    pub fn remove_batch(&self, ids: &[&str]) -> Vec<Result<bool>> {
        ids.iter().map(|id| self.remove(id)).collect()
    }

    /// Counters and sizes.
    pub fn stats(&self) -> EngineStats {
        let sh = &*self.shared;
        let st = sh.store.stats();
        let inner = sh.read();
        let h = sh.horizon(&inner);
        let mut s = EngineStats {
            inserted: sh.inserted.load(Ordering::Relaxed),
            duplicates: sh.duplicates.load(Ordering::Relaxed),
            removed: sh.removed.load(Ordering::Relaxed),
            expired: sh.expired.load(Ordering::Relaxed),
            merges: sh.merges.load(Ordering::Relaxed),
            snapshots: sh.snapshots.load(Ordering::Relaxed),
            last_lsn: st.last_lsn,
            durable_lsn: st.durable_lsn,
            snapshot_lsn: sh.store.snapshot_lsn(),
            log_syncs: st.fsyncs,
            recovered_documents: sh.recovered,
            recovery_ms: sh.recovery_ms,
            ..EngineStats::default()
        };
        for (&sid, seg) in &inner.segments {
            if !sh.segment_dead(sid, h) {
                s.documents += seg.live;
                s.segments += 1;
            }
            s.runs += seg.runs.len() + usize::from(!seg.head.is_empty());
            s.index_bytes += seg.runs.iter().map(|r| r.heap_bytes() as u64).sum::<u64>()
                + seg.head.heap_bytes() as u64;
        }
        s.record_bytes = (inner.slab.heap_bytes()
            + inner.ids.heap_bytes()
            + (inner.free.capacity() + inner.parked.capacity()) * 4)
            as u64;
        s
    }

    /// `Ok` while the engine accepts writes; otherwise the reason.
    pub fn health(&self) -> std::result::Result<(), String> {
        self.shared.check_writable().map_err(|e| e.to_string())
    }

    /// Runs one round of maintenance now: enforces `max_docs`, drops expired segments
    /// (reclaiming their memory), freezes and merges index runs, and snapshots when due. The
    /// background task calls this every `maintenance_interval`.
    ///
    /// # Errors
    /// Store errors while logging the `max_docs` floor or writing a snapshot.
    pub fn maintain(&self) -> Result<()> {
        maintain(&self.shared)
    }

    /// Writes a snapshot of the whole state now (streamed; checks and queries continue).
    ///
    /// # Errors
    /// Store errors.
    pub fn snapshot(&self) -> Result<()> {
        snapshot(&self.shared)
    }

    /// Stops the maintenance task, syncs the log and writes a final snapshot; afterwards the
    /// engine refuses writes ([`EngineError::Unavailable`]) but still answers reads. Call it
    /// once in-flight requests are done.
    ///
    /// # Errors
    /// Store errors while syncing or snapshotting.
    pub fn shutdown(&self) -> Result<()> {
        self.stop_maintenance();
        let sh = &*self.shared;
        {
            let _decider = lock(&sh.decide);
            sh.closed.store(true, Ordering::SeqCst);
        }
        sh.store.sync().map_err(EngineError::Store)?;
        if sh.store.last_lsn() > sh.store.snapshot_lsn() {
            snapshot(sh)?;
        }
        Ok(())
    }

    fn stop_maintenance(&self) {
        *lock(&self.shared.stop) = true;
        self.shared.wake.notify_all();
        if let Some(h) = lock(&self.maintenance).take() {
            let _ = h.join();
        }
    }
}

/// A validated, fingerprinted document (from [`Engine::prepare`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedDoc {
    /// Its id.
    pub id: String,
    /// Its fingerprint.
    pub fingerprint: u64,
    /// Its timestamp, if supplied.
    pub timestamp_ms: Option<i64>,
}

/// Decisions taken by [`Engine::decide`], released by [`wait`](Self::wait) once durable.
#[must_use = "answers may only be released after Pending::wait"]
pub struct Pending {
    shared: Arc<Shared>,
    out: Vec<Result<Outcome>>,
    tickets: Vec<(usize, neardup_store::Ticket)>,
    any_dup: bool,
    last_lsn: u64,
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending")
            .field("documents", &self.out.len())
            .finish_non_exhaustive()
    }
}

impl Pending {
    /// Blocks until every stored document is durable (per the sync mode) and every duplicate
    /// answer points at a durable document; returns one result per document, in order.
    pub fn wait(self) -> Vec<Result<Outcome>> {
        let Pending {
            shared,
            mut out,
            tickets,
            any_dup,
            last_lsn,
        } = self;
        let sh = &*shared;
        // Records are acknowledged in LSN order, so waiting for the last ticket covers all of
        // them (one wait instead of one per document); only on failure is each ticket asked.
        let mut tickets = tickets;
        if let Some((i, last)) = tickets.pop() {
            if let Err(e) = last.wait() {
                out[i] = Err(sh.fail(e));
                for (i, t) in tickets {
                    if let Err(e) = t.wait() {
                        out[i] = Err(sh.fail(e));
                    }
                }
            }
        }
        // A duplicate answer may point at a document whose record is not yet durable.
        if any_dup && sh.cfg.sync == SyncMode::Always && sh.store.durable_lsn() < last_lsn {
            if let Err(e) = sh.store.sync() {
                let e = sh.fail(e);
                let reason = e.to_string();
                for o in out.iter_mut() {
                    if o.is_ok() {
                        *o = Err(EngineError::Unavailable {
                            reason: reason.clone(),
                        });
                    }
                }
            }
        }
        out
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.stop_maintenance();
    }
}

fn maintenance_loop(sh: Arc<Shared>, interval: Duration) {
    let mut stop = lock(&sh.stop);
    loop {
        if *stop {
            return;
        }
        stop = sh
            .wake
            .wait_timeout(stop, interval)
            .unwrap_or_else(|e| e.into_inner())
            .0;
        if *stop {
            return;
        }
        drop(stop);
        if let Err(e) = maintain(&sh) {
            let mut f = lock(&sh.failed);
            if f.is_none() {
                *f = Some(format!("maintenance failed: {e}"));
            }
        }
        stop = lock(&sh.stop);
    }
}

fn maintain(sh: &Shared) -> Result<()> {
    let _one = lock(&sh.maintain_lock);
    enforce_max_docs(sh)?;
    expire(sh);
    merge_runs(sh)?;
    let due = {
        let since = lock(&sh.last_snapshot).elapsed();
        let records = sh.store.last_lsn() - sh.store.snapshot_lsn();
        records > 0
            && (records >= sh.cfg.snapshot_records
                || sh.cfg.snapshot_interval.is_some_and(|iv| since >= iv))
    };
    if due && !sh.closed.load(Ordering::SeqCst) {
        snapshot(sh)?;
    }
    Ok(())
}

fn enforce_max_docs(sh: &Shared) -> Result<()> {
    let Some(max) = sh.cfg.max_docs else {
        return Ok(());
    };
    if sh.check_writable().is_err() {
        return Ok(());
    }
    let _decider = lock(&sh.decide);
    let new_floor = {
        let inner = sh.read();
        let h = sh.horizon(&inner);
        let live: Vec<(i64, u64)> = inner
            .segments
            .iter()
            .filter(|(&s, _)| !sh.segment_dead(s, h))
            .map(|(&s, seg)| (s, seg.live))
            .collect();
        let mut total: u64 = live.iter().map(|x| x.1).sum();
        let mut floor = None;
        for (s, n) in live {
            if total <= max {
                break;
            }
            total -= n;
            floor = Some((s + 1).saturating_mul(sh.segment_ms));
        }
        floor
    };
    if let Some(f) = new_floor {
        sh.store
            .append_durable(&records::encode_floor(f))
            .map_err(|e| sh.fail(e))?;
        let mut inner = sh.write();
        inner.floor = inner.floor.max(f);
    }
    Ok(())
}

/// Drops dead segments, then frees their records in small batches (short write locks).
fn expire(sh: &Shared) {
    let dropped: Vec<(i64, Segment)> = {
        let mut inner = sh.write();
        let h = sh.horizon(&inner);
        let dead: Vec<i64> = inner
            .segments
            .keys()
            .copied()
            .filter(|&s| sh.segment_dead(s, h))
            .collect();
        dead.into_iter()
            .filter_map(|s| inner.segments.remove(&s).map(|seg| (s, seg)))
            .collect()
    };
    for (sid, seg) in dropped {
        let mut entries: Vec<(u64, u32)> = seg.head.iter().collect();
        for r in &seg.runs {
            entries.extend(r.iter());
        }
        drop(seg);
        for chunk in entries.chunks(LOCK_BATCH) {
            let mut inner = sh.write();
            let mut n = 0;
            for &(fp, h) in chunk {
                let s = inner.slab.get(h);
                if s.state == LIVE && s.fp == fp && s.ts.div_euclid(sh.segment_ms) == sid {
                    inner.unmap(h);
                    inner.release(h);
                    n += 1;
                }
            }
            sh.expired.fetch_add(n, Ordering::Relaxed);
        }
    }
}

/// Merge policy: a segment whose time has passed is merged into one run (its head frozen
/// first); the current segment merges all runs when the small ones add up to a quarter of the
/// largest (write amplification ~5), otherwise its small runs among themselves, so that it
/// keeps at most two built runs plus its head. A frozen head (all insert delta) is always
/// rebuilt at the next round. Builds run outside the locks; the result is swapped in.
fn merge_runs(sh: &Shared) -> Result<()> {
    let current = sh.segment_of(sh.now());
    let plans: Vec<(i64, Vec<Arc<HammingIndex>>)> = {
        let mut inner = sh.write();
        let mut plans = Vec::new();
        for (&sid, seg) in inner.segments.iter_mut() {
            if sid < current && !seg.head.is_empty() {
                let full =
                    std::mem::replace(&mut seg.head, HammingIndex::new(sh.head_layout.clone()));
                seg.runs.push(Arc::new(full));
            }
            // A frozen head is all insert delta (slower to search than built tables): it is
            // always rebuilt, alone or merged.
            let unbuilt = seg.runs.iter().any(|r| r.pending_inserts() > 0);
            if seg.runs.len() < 2 && !unbuilt {
                continue;
            }
            let main = seg.runs[0].len();
            let rest: usize = seg.runs[1..].iter().map(|r| r.len()).sum();
            if sid < current || rest * 4 >= main || seg.runs.len() == 1 {
                plans.push((sid, seg.runs.clone()));
            } else if seg.runs.len() > 2 || unbuilt {
                // Small runs merge among themselves: at most the main run plus one.
                plans.push((sid, seg.runs[1..].to_vec()));
            }
        }
        plans
    };
    for (sid, parts) in plans {
        let mut entries: Vec<(u64, u32)> = Vec::with_capacity(parts.iter().map(|r| r.len()).sum());
        for r in &parts {
            entries.extend(r.iter());
        }
        let mut kept = Vec::with_capacity(entries.len());
        for chunk in entries.chunks(LOCK_BATCH) {
            let inner = sh.read();
            kept.extend(chunk.iter().copied().filter(|&(fp, h)| {
                let s = inner.slab.get(h);
                s.state == LIVE && s.fp == fp && s.ts.div_euclid(sh.segment_ms) == sid
            }));
        }
        drop(entries);
        kept.sort_unstable();
        kept.dedup();
        let merged = Arc::new(HammingIndex::build(sh.layout_for(kept.len())?, &kept)?);
        drop(kept);
        let mut inner = sh.write();
        if let Some(seg) = inner.segments.get_mut(&sid) {
            if parts
                .iter()
                .all(|p| seg.runs.iter().any(|r| Arc::ptr_eq(p, r)))
            {
                let pos = seg
                    .runs
                    .iter()
                    .position(|r| Arc::ptr_eq(r, &parts[0]))
                    .unwrap_or(0);
                seg.runs
                    .retain(|r| !parts.iter().any(|p| Arc::ptr_eq(p, r)));
                seg.runs.insert(pos.min(seg.runs.len()), merged);
                sh.merges.fetch_add(1, Ordering::Relaxed);
            }
        }
        drop(inner);
        drop(parts);
    }
    Ok(())
}

/// Snapshot: pick the LSN and slab length under the decide mutex, then stream records in
/// batches under short read locks. Slots are not reused while it runs, and dead slots are
/// parked, so the body is exactly the state at that LSN (plus, at most, documents that were
/// already expired and are dropped again on load).
fn snapshot(sh: &Shared) -> Result<()> {
    let (lsn, floor, n) = {
        let _decider = lock(&sh.decide);
        let mut inner = sh.write();
        if inner.snapshotting {
            return Ok(());
        }
        inner.snapshotting = true;
        (sh.store.last_lsn(), inner.floor, inner.slab.len)
    };
    let result = sh.store.snapshot(lsn, |w| {
        let mut sw = SnapshotWriter::begin(w, floor)?;
        let mut buf = Vec::with_capacity(1 << 20);
        let mut start = 0;
        while start < n {
            let end = (start + LOCK_BATCH * 4).min(n);
            let mut count = 0;
            {
                let inner = sh.read();
                for h in start..end {
                    let s = inner.slab.get(h as u32);
                    if s.state != FREE {
                        SnapshotWriter::entry(&mut buf, s.fp, s.ts, inner.slab.id(h as u32));
                        count += 1;
                    }
                }
            }
            sw.flush(&mut buf, count)?;
            start = end;
        }
        sw.finish()
    });
    {
        let mut inner = sh.write();
        inner.snapshotting = false;
        let parked = std::mem::take(&mut inner.parked);
        for h in parked {
            inner.release(h);
        }
    }
    *lock(&sh.last_snapshot) = Instant::now();
    result.map_err(EngineError::Store)?;
    sh.snapshots.fetch_add(1, Ordering::Relaxed);
    Ok(())
}
