//! The store: a durable append-only log plus snapshots in one directory.
//! This file answers "what can a caller do with a store?" — [`Store`], its
//! options and its public API; each mechanism lives in its own file:
//!
//! * [`recover`] — what the directory holds after a crash (on open);
//! * [`commit`] — how an appended record becomes acknowledged (group commit,
//!   rotation, the background writer);
//! * [`snapshot`] — how state as of an LSN is published and loaded;
//! * [`files`] — how a store file appears atomically and is mapped.
//!
//! Invariants (see the crate docs for the on-disk ones): a [`Store`] holds
//! `DIR/LOCK` for its whole life; every public method refuses work after a
//! write failure or close; dropping a store flushes what is queued, like
//! [`Store::close`] but ignoring errors.

mod commit;
mod files;
mod recover;
mod snapshot;

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

pub use commit::Ticket;

use crate::error::{Error, Result};
use crate::lock::DirLock;
use crate::recovered::Recovered;
use crate::Lsn;
use commit::Shared;

/// When an appended record counts as acknowledged ([`Ticket::wait`] returns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncMode {
    /// `wait` returns only after the record is on stable storage
    /// (`fdatasync`). Concurrent appenders share one fdatasync (group commit).
    /// Nothing acknowledged is lost on process crash or power loss.
    Always,
    /// `wait` returns once the record is handed to the OS (`write`); a
    /// background flush syncs at most `interval` after a write. A process
    /// crash loses nothing acknowledged; an OS crash or power loss may lose
    /// records acknowledged during the last `interval`.
    Batch {
        /// Maximum time between a write and its fdatasync.
        interval: Duration,
    },
    /// `wait` returns once the record is handed to the OS; the store syncs
    /// only on rotation, snapshot, [`Store::sync`] and close. A process crash
    /// loses nothing acknowledged; an OS crash may lose everything since the
    /// last sync. For tests and bulk loads.
    None,
}

/// Options for [`Store::open`]. Build with struct update syntax:
/// `StoreOptions { sync: SyncMode::Always, config, ..Default::default() }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreOptions {
    /// Durability of appends.
    pub sync: SyncMode,
    /// Opaque engine configuration (at most 1 MiB). Stored in every file
    /// header; opening a directory written with another blob fails with
    /// [`Error::ConfigMismatch`].
    pub config: Vec<u8>,
    /// A segment is rotated when the next frame would make it larger than
    /// this (at least 1024; default 64 MiB). A single larger record gets a
    /// segment of its own.
    pub segment_bytes: u64,
    /// Appenders block while this many bytes are queued but not yet written
    /// (backpressure; default 64 MiB).
    pub max_pending_bytes: usize,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            sync: SyncMode::Always,
            config: Vec::new(),
            segment_bytes: 64 << 20,
            max_pending_bytes: 64 << 20,
        }
    }
}

/// Information about a snapshot written by [`Store::snapshot`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SnapshotInfo {
    /// LSN the snapshot covers.
    pub lsn: Lsn,
    /// Published file.
    pub path: PathBuf,
    /// Body length in bytes.
    pub body_bytes: u64,
    /// Log segments deleted because the snapshot covers them.
    pub segments_deleted: usize,
}

/// Counters returned by [`Store::stats`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoreStats {
    /// LSN of the last appended record.
    pub last_lsn: Lsn,
    /// Highest LSN on stable storage.
    pub durable_lsn: Lsn,
    /// fdatasync calls on log segments since open.
    pub fsyncs: u64,
}

/// Locks `m`, ignoring poisoning (the state stays consistent across panics).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Failpoint `name` (see [`crate::failpoints`]): an injected I/O error.
#[cfg(feature = "failpoints")]
fn fp(name: &str) -> io::Result<()> {
    crate::failpoints::hit(name)
}

/// Failpoint `name`: always `Ok` without the `failpoints` feature.
#[cfg(not(feature = "failpoints"))]
#[inline(always)]
fn fp(_name: &str) -> io::Result<()> {
    Ok(())
}

/// A durable append-only log plus snapshots in one directory. See the crate docs.
///
/// `Store` is `Send + Sync`; share it between threads with `Arc<Store>`.
pub struct Store {
    shared: Arc<Shared>,
    writer: Option<JoinHandle<()>>,
    snapshot_mutex: Mutex<()>,
    _lock: DirLock,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("dir", &self.shared.dir)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Opens (creating if needed) the store in `dir`, recovers it and starts
    /// the background thread.
    ///
    /// Recovery: takes `DIR/LOCK`; deletes leftover `*.tmp` files; loads and
    /// CRC-verifies the newest snapshot; verifies every segment header
    /// (magic, version, config) and every frame; truncates a torn tail of the
    /// **last** segment (reported in [`Recovered::torn_bytes`]); fails on
    /// damage anywhere else, and on LSN gaps. Older snapshots are deleted.
    pub fn open(dir: impl AsRef<Path>, opts: StoreOptions) -> Result<(Store, Recovered)> {
        let dir = dir.as_ref().to_path_buf();
        recover::check_options(&opts)?;
        let (dir_lock, recovered, tail) = recover::recover(&dir, &opts)?;
        let shared = Arc::new(Shared::new(dir, opts, tail));
        let handle = commit::start_writer(&shared)?;
        Ok((
            Store {
                shared,
                writer: Some(handle),
                snapshot_mutex: Mutex::new(()),
                _lock: dir_lock,
            },
            recovered,
        ))
    }

    /// Queues `payload` (1 ..= [`MAX_RECORD_BYTES`](crate::MAX_RECORD_BYTES)
    /// bytes) and assigns it the next LSN. Returns at once (unless the queue
    /// is over `max_pending_bytes`: then this thread writes the queue first);
    /// call [`Ticket::wait`] before acting on the record's durability. A
    /// record whose ticket nobody waits for is written by the background
    /// thread within a few milliseconds.
    pub fn append(&self, payload: &[u8]) -> Result<Ticket> {
        self.shared.append(payload)
    }

    /// [`append`](Self::append) + [`Ticket::wait`]: returns the LSN once the
    /// record is acknowledged per the store's [`SyncMode`].
    pub fn append_durable(&self, payload: &[u8]) -> Result<Lsn> {
        self.append(payload)?.wait()
    }

    /// Makes every record appended so far durable (fdatasync), whatever the
    /// [`SyncMode`].
    pub fn sync(&self) -> Result<()> {
        self.shared.sync()
    }

    /// LSN of the last appended record (0 if none).
    pub fn last_lsn(&self) -> Lsn {
        lock(&self.shared.state).next_lsn - 1
    }

    /// Highest LSN acknowledged under the sync mode: on stable storage under
    /// [`SyncMode::Always`], handed to the OS otherwise. After a failure, records
    /// above it were refused.
    pub fn acknowledged_lsn(&self) -> Lsn {
        let st = lock(&self.shared.state);
        self.shared.mark(&st)
    }

    /// Highest LSN known to be on stable storage.
    pub fn durable_lsn(&self) -> Lsn {
        lock(&self.shared.state).synced
    }

    /// Counters since open; `appended / fsyncs` shows the group-commit effect.
    pub fn stats(&self) -> StoreStats {
        let st = lock(&self.shared.state);
        StoreStats {
            last_lsn: st.next_lsn - 1,
            durable_lsn: st.synced,
            fsyncs: st.fsyncs,
        }
    }

    /// LSN of the newest snapshot (0 if none).
    pub fn snapshot_lsn(&self) -> Lsn {
        lock(&self.shared.state).snapshot_lsn
    }

    /// The data directory.
    pub fn dir(&self) -> &Path {
        &self.shared.dir
    }

    /// Writes `snapshot-<lsn>.snap` atomically and then deletes the log
    /// segments and snapshots it makes obsolete.
    ///
    /// `lsn` must lie between the newest snapshot's LSN and the last appended
    /// LSN; the body written by `write_body` must reflect exactly the records
    /// with LSN `<= lsn`. The log is first synced through `lsn`; the body is
    /// streamed (never held in memory by the store) into a temp file in the
    /// same directory, followed by a CRC32 trailer; the file is fsynced,
    /// renamed into place and the directory fsynced. Appends may continue
    /// concurrently from other threads. Snapshots are serialised.
    pub fn snapshot<F>(&self, lsn: Lsn, write_body: F) -> Result<SnapshotInfo>
    where
        F: FnOnce(&mut dyn Write) -> io::Result<()>,
    {
        let _serial = lock(&self.snapshot_mutex);
        self.shared.snapshot(lsn, write_body)
    }

    /// Writes and syncs everything queued, stops the background thread and
    /// releases the lock, reporting any write error (dropping does the same
    /// but ignores errors).
    pub fn close(mut self) -> Result<()> {
        self.shutdown();
        let st = lock(&self.shared.state);
        match &st.failed {
            Some(reason) => Err(Error::Failed {
                reason: reason.clone(),
            }),
            None => Ok(()),
        }
    }

    fn shutdown(&mut self) {
        {
            let mut st = lock(&self.shared.state);
            st.shutdown = true;
            self.shared.work.notify_one();
        }
        if let Some(h) = self.writer.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        self.shutdown();
    }
}
