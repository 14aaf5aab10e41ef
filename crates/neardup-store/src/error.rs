//! The error type of the store. Every variant says what went wrong and how to fix it.

use std::io;
use std::path::PathBuf;

use crate::Lsn;

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong when opening, writing or recovering a store.
///
/// The store never panics on a bad file: malformed, foreign, newer or corrupt
/// files surface as one of these variants, naming the offending file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system I/O call failed on `path`.
    ///
    /// Fix: check permissions, free disk space and the health of the device
    /// holding the data directory, then restart.
    #[error("I/O error on {}: {source}", path.display())]
    Io {
        /// File or directory the failing call operated on.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },

    /// Another process (or another `Store` in this process) holds the
    /// directory's lock file.
    ///
    /// Fix: stop the other neardup process, or use a different `--data-dir`.
    #[error("another neardup process holds {}; stop it or use a different --data-dir", path.display())]
    Locked {
        /// Path of the lock file (`DIR/LOCK`).
        path: PathBuf,
    },

    /// The directory is not empty but contains no neardup store files.
    ///
    /// Fix: point `--data-dir` at an existing neardup data directory or at an
    /// empty/new directory; the store refuses to scribble into foreign data.
    #[error("{} is not empty and holds no neardup store files; use an empty or new --data-dir", dir.display())]
    NotStoreDir {
        /// The directory that was opened.
        dir: PathBuf,
    },

    /// A file named like a store file does not start with the expected magic
    /// bytes, so it was not written by neardup (or is of the wrong kind).
    ///
    /// Fix: remove or move the foreign file out of the data directory, or use
    /// a new `--data-dir`.
    #[error("{} is not a neardup store file (bad magic bytes); move it out of the data directory or use a new --data-dir", path.display())]
    NotStoreFile {
        /// The offending file.
        path: PathBuf,
    },

    /// A file was written with a format version this build does not know
    /// (usually by a newer neardup). It is never guessed at or misread.
    ///
    /// Fix: run a neardup build that supports format version `found`.
    #[error("{} uses store format version {found}, but this build supports only version {supported}; upgrade neardup to a release that reads version {found}", path.display())]
    UnsupportedVersion {
        /// The offending file.
        path: PathBuf,
        /// Version found in the file header.
        found: u32,
        /// Version this build reads and writes.
        supported: u32,
    },

    /// A file header is damaged (bad checksum, impossible lengths, or an LSN
    /// that disagrees with the file name).
    ///
    /// Fix: restore the data directory from a backup, or rebuild it from the
    /// source corpus into a new `--data-dir`.
    #[error("corrupt header in {}: {reason}; restore the data directory from a backup or rebuild into a new --data-dir", path.display())]
    CorruptHeader {
        /// The offending file.
        path: PathBuf,
        /// What exactly is wrong.
        reason: String,
    },

    /// The directory was written with a different engine configuration (the
    /// opaque `config` blob of [`StoreOptions`](crate::StoreOptions)), so its
    /// fingerprints are not comparable with the current ones.
    ///
    /// Fix: reopen with the original configuration, or use a new `--data-dir`
    /// for the new configuration.
    #[error("{} was written with a different fingerprint configuration; reopen with the original configuration, or use a new --data-dir for the new one", path.display())]
    ConfigMismatch {
        /// The first file whose header carries the other configuration.
        path: PathBuf,
        /// The configuration blob that file carries.
        stored: Vec<u8>,
    },

    /// A log segment that is *not* the last one has a damaged record. Records
    /// after it were acknowledged as durable, so recovery refuses to skip it.
    ///
    /// Fix: restore the data directory from a backup or rebuild it; if losing
    /// every record from this point on is acceptable, truncate the file at
    /// `offset` and delete all later `log-*.seg` files.
    #[error("corrupt record in {} at byte offset {offset}: {reason}; this is not the last segment, so acknowledged data follows it; restore from a backup or rebuild into a new --data-dir", path.display())]
    CorruptLog {
        /// The damaged segment.
        path: PathBuf,
        /// Byte offset of the damaged frame.
        offset: u64,
        /// What exactly is wrong.
        reason: String,
    },

    /// A snapshot body or trailer fails verification (bad CRC, wrong length).
    /// Snapshots are published atomically, so this means on-disk damage.
    ///
    /// Fix: restore the data directory from a backup or rebuild it into a new
    /// `--data-dir`.
    #[error("corrupt snapshot {}: {reason}; restore the data directory from a backup or rebuild into a new --data-dir", path.display())]
    CorruptSnapshot {
        /// The damaged snapshot file.
        path: PathBuf,
        /// What exactly is wrong.
        reason: String,
    },

    /// Log records are missing: the segment files do not form a contiguous
    /// LSN sequence after the latest snapshot (a segment was deleted by hand).
    ///
    /// Fix: put the missing `log-*.seg` files back, restore from a backup, or
    /// rebuild into a new `--data-dir`.
    #[error("log records are missing in {}: expected a segment starting at LSN {expected}, found LSN {found}; restore the missing log-*.seg files or rebuild into a new --data-dir", dir.display())]
    MissingLog {
        /// The data directory.
        dir: PathBuf,
        /// LSN the next segment should start at.
        expected: Lsn,
        /// LSN the next segment actually starts at.
        found: Lsn,
    },

    /// A payload is empty or larger than [`MAX_RECORD_BYTES`](crate::MAX_RECORD_BYTES).
    ///
    /// Fix: append non-empty records of at most that size.
    #[error("record of {len} bytes rejected: payloads must be 1..={max} bytes")]
    InvalidRecord {
        /// Length of the rejected payload.
        len: usize,
        /// Maximum allowed length.
        max: usize,
    },

    /// `snapshot(lsn, ..)` was called with an LSN that was not appended yet or
    /// is older than the newest snapshot.
    ///
    /// Fix: pass an LSN between the newest snapshot's LSN and the last
    /// appended LSN (inclusive).
    #[error("snapshot LSN {requested} rejected: it must lie in {newest}..={last} (newest snapshot ..= last appended record)")]
    InvalidSnapshotLsn {
        /// The LSN passed in.
        requested: Lsn,
        /// LSN of the newest snapshot.
        newest: Lsn,
        /// Last LSN appended so far.
        last: Lsn,
    },

    /// [`StoreOptions`](crate::StoreOptions) are out of range.
    ///
    /// Fix: follow the message (e.g. raise `segment_bytes`).
    #[error("invalid store options: {0}")]
    InvalidOptions(String),

    /// An earlier write or fsync failed; the store refuses further writes
    /// because after a failed fsync the on-disk state is unknown.
    ///
    /// Fix: restart the process so recovery can re-establish a consistent state.
    #[error("the store failed earlier and refuses further writes ({reason}); restart the process so recovery runs")]
    Failed {
        /// The original failure.
        reason: String,
    },
    /// The store was closed (dropped or [`Store::close`](crate::Store::close)d) while this
    /// operation still needed it; nothing more is written after close.
    ///
    /// Fix: finish waiting on tickets before closing the store, or reopen it.
    #[error("the store has been closed; reopen it to write")]
    Closed,
}

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

/// Adds a path to `io::Result`s.
pub(crate) trait IoContext<T> {
    fn at(self, path: &std::path::Path) -> Result<T>;
}

impl<T> IoContext<T> for io::Result<T> {
    fn at(self, path: &std::path::Path) -> Result<T> {
        self.map_err(|e| Error::io(path, e))
    }
}
