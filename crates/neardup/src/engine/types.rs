//! The engine's public types: errors, clocks, configuration, documents and answers.

use std::path::PathBuf;

use std::time::Duration;

pub use neardup_store::SyncMode;

pub use crate::detect::Stage;
use crate::policy::PolicyOptions;

/// Errors of the engine. Each variant says what went wrong and how to fix it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The document id is empty or longer than [`MAX_ID_BYTES`](super::MAX_ID_BYTES). Fix: send a non-empty id of at
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
    /// The data directory was written with another configuration (detector, fingerprint
    /// options, distance, retention, segments or max-docs), so its answers would differ. Fix:
    /// start with the stored value of the setting named in `difference`, or use a new data
    /// directory for the new settings.
    #[error("{} holds data written with a different configuration: {difference}; start with the stored value, or use a new data directory for the new settings", dir.display())]
    ConfigMismatch {
        /// The data directory.
        dir: PathBuf,
        /// The first differing setting with both values, e.g. `retention_ms: stored
        /// 172800000, requested 86400000`.
        difference: String,
        /// The configuration this process asked for (JSON).
        config: String,
    },
    /// A fingerprint-only document was sent to an engine whose detector needs the text. Fix:
    /// send the document's text, or run the engine with the simhash detector to check
    /// client-computed 64-bit fingerprints.
    #[error("this engine decides with the `{detector}` detector, which needs the document's text; send the text instead of a fingerprint, or use the simhash detector (`--method simhash`) to check 64-bit fingerprints")]
    TextRequired {
        /// The engine's detector.
        detector: &'static str,
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

pub use neardup_clock::{Clock, ManualClock, SystemClock};

/// How the engine decides that two documents are near-duplicates.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase", tag = "method")]
#[allow(clippy::large_enum_variant)] // a configuration value, built once
pub enum EngineDetector {
    /// The `auto` detector of batch dedup (exact digest → short-text path → MinHash LSH), with
    /// the same options and defaults ([`PolicyOptions`]): the service answers what
    /// `neardup dedup` answers. Documents must be sent as text.
    Auto(PolicyOptions),
    /// 64-bit simhash within [`EngineConfig::distance`] over the exact Hamming index; the only
    /// method that accepts fingerprint-only documents.
    Simhash,
}

impl Default for EngineDetector {
    /// The `auto` detector with `neardup dedup`'s defaults under the template veto (which
    /// [`EngineConfig::default`] turns on).
    fn default() -> Self {
        EngineDetector::auto(true)
    }
}

impl EngineDetector {
    /// The `auto` detector with `neardup dedup`'s defaults, with or without the template veto
    /// (the default MinHash threshold depends on it:
    /// [`DetectorSpec::default_threshold`](crate::detect::spec::DetectorSpec::default_threshold)).
    pub fn auto(template_veto: bool) -> EngineDetector {
        let mut p = PolicyOptions::default();
        p.minhash.lsh.threshold = crate::detect::spec::DetectorSpec::default_threshold(
            crate::detect::spec::Method::Auto,
            template_veto,
        );
        EngineDetector::Auto(p)
    }

    /// The method's name (`auto`, `simhash`).
    pub fn name(&self) -> &'static str {
        match self {
            EngineDetector::Auto(_) => "auto",
            EngineDetector::Simhash => "simhash",
        }
    }
}

/// Engine settings. Those that change answers (detector, distance, retention, segments,
/// max_docs) are recorded in the data directory.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// The detector (default: `auto`, as `neardup dedup`).
    pub detector: EngineDetector,
    /// Largest Hamming distance counted as a duplicate by the simhash detector (default 3).
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
    /// background task — call [`Engine::maintain`](super::Engine::maintain) yourself).
    pub maintenance_interval: Option<Duration>,
    /// Log segment size in bytes (default 64 MiB).
    pub log_segment_bytes: u64,
    /// The template veto of `neardup dedup` over the `auto` detector (default on, with its
    /// defaults; `None`: off — then use [`EngineDetector::auto`]`(false)` for dedup's threshold
    /// without the veto). Ignored by the simhash detector.
    pub template_veto: Option<crate::template_veto::TemplateVetoOptions>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            detector: EngineDetector::default(),
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
            template_veto: Some(crate::template_veto::TemplateVetoOptions::default()),
        }
    }
}

/// What a document consists of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// Text, fingerprinted with the engine's [`Fingerprinter`](crate::Fingerprinter).
    Text(String),
    /// A precomputed 64-bit simhash (same configuration as the engine's, or answers are
    /// meaningless).
    Fingerprint(u64),
}

/// A document to check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Doc {
    /// Caller's id (1 ..= [`MAX_ID_BYTES`](super::MAX_ID_BYTES) bytes).
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
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// No live near-duplicate.
    Unique,
    /// The strongest live near-duplicate (smallest distance, then highest similarity, then the
    /// oldest: [`crate::detect::compare_verdicts`]).
    Duplicate {
        /// Its id.
        of: String,
        /// Hamming distance between the fingerprints (simhash, exact).
        distance: Option<u32>,
        /// Similarity in [0, 1] (MinHash Jaccard estimate, edit-distance ratio, exact = 1).
        similarity: Option<f64>,
        /// The stage that matched ([`Stage::Id`]: the same id is already stored).
        stage: Stage,
    },
}

/// Result of [`Engine::check_and_insert`](super::Engine::check_and_insert).
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The document's simhash (simhash detector only).
    pub fingerprint: Option<u64>,
    /// Unique or duplicate.
    pub decision: Decision,
    /// True when the document was stored (unique and its timestamp inside the window).
    pub stored: bool,
    /// The timestamp used (ms since the epoch).
    pub timestamp_ms: i64,
}

/// A stored document near a query.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// Its id.
    pub id: String,
    /// Its fingerprint (simhash detector only).
    pub fingerprint: Option<u64>,
    /// Hamming distance to the query (simhash, exact).
    pub distance: Option<u32>,
    /// Similarity to the query (MinHash, short path, exact).
    pub similarity: Option<f64>,
    /// The stage that matched.
    pub stage: Stage,
    /// Its timestamp (ms since the epoch).
    pub timestamp_ms: i64,
}

/// Result of [`Engine::query`](super::Engine::query).
#[derive(Debug, Clone, PartialEq)]
pub struct QueryResult {
    /// The query's fingerprint (simhash detector only).
    pub fingerprint: Option<u64>,
    /// Live near-duplicates, strongest first (then oldest), at most [`MAX_HITS`](super::MAX_HITS).
    pub hits: Vec<Hit>,
}

/// A stored document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocInfo {
    /// Its id.
    pub id: String,
    /// Its fingerprint (simhash detector only).
    pub fingerprint: Option<u64>,
    /// Its timestamp (ms since the epoch).
    pub timestamp_ms: i64,
}

/// How far [`Engine::open_with_progress`](super::Engine::open_with_progress) has come.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecoveryProgress {
    /// The snapshot's documents read and indexed so far.
    pub snapshot_done: u64,
    /// The snapshot's documents (0 without a snapshot, or under the simhash detector, whose
    /// snapshot is loaded at once).
    pub snapshot_total: u64,
    /// Set on the last report (which repeats the snapshot's counts): the snapshot is loaded
    /// and the log after it replayed.
    pub finished: bool,
}

/// Counters and sizes reported by [`Engine::stats`](super::Engine::stats).
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
    /// Bytes of the segments' encoded sketches (`auto` detector: the template veto's distinct
    /// parts and line keys, and what snapshots write) spilled to unlinked files of the data
    /// directory: held by the page cache, not the heap.
    pub spilled_bytes: u64,
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
    /// Segments' band tables frozen since open (`auto` detector: a segment's tables in about
    /// 5 bytes a document and band instead of 16; the current segment's again as it grows).
    pub freezes: u64,
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
