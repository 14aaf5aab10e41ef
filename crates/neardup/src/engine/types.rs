//! The engine's public types: errors, clocks, configuration, documents and answers.

use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub use neardup_store::SyncMode;

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
