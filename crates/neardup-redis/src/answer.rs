//! What does the backend answer? The public result types of checks, queries and stats.
//!
//! Invariant: a [`Decision::Duplicate`] names a document that Redis holds committed at the
//! time of the answer; `Outcome::stored` is true only when Redis applied the insert.

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

/// Result of [`RedisBackend::check_and_insert`](crate::RedisBackend::check_and_insert).
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
