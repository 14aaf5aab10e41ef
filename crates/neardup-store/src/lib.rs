//! Durability layer of neardup: an append-only, checksummed log with group
//! commit, plus atomic snapshots, in one data directory.
//!
//! # What it owns
//!
//! A data directory holding
//! * `LOCK` — `flock`ed while a [`Store`] is open (one process per directory);
//! * `log-<first lsn>.seg` — log segments, rotated by size;
//! * `snapshot-<lsn>.snap` — the newest snapshot (older ones are deleted).
//!
//! Every file begins with a header: magic bytes, [`FORMAT_VERSION`], an LSN,
//! the engine's opaque `config` blob (length-prefixed) and a CRC32 of the
//! header. Records are framed `[len u32 LE][crc32(payload) u32 LE][payload]`
//! and receive consecutive LSNs starting at 1. A snapshot is
//! `header | body | body_len u64 | crc32(body) u32 | "NDSE"`.
//!
//! # Invariants
//!
//! * A record whose [`Ticket::wait`] returned `Ok` under
//!   [`SyncMode::Always`] survives any crash, and recovery yields it exactly
//!   once, in LSN order.
//! * LSNs after recovery are contiguous: the snapshot covers `1..=s`, the log
//!   yields `s+1, s+2, ...`, and new appends continue from
//!   [`Recovered::next_lsn`].
//! * Only the last segment may end in a torn frame; recovery truncates it and
//!   reports the dropped bytes. Damage anywhere else, LSN gaps, foreign files,
//!   newer format versions and config mismatches are errors ([`Error`]),
//!   never silently skipped or misread.
//! * Segments and snapshots become visible atomically (temp file, fsync,
//!   rename, directory fsync); a crash at any point leaves either the old or
//!   the new state.
//!
//! # Recovery policy
//!
//! This is point-in-time recovery (RocksDB's default WAL policy): in the
//! **last** segment, the first frame that is incomplete or fails its CRC ends
//! the log; it and everything after it are truncated and counted in
//! [`Recovered::torn_bytes`]. Under [`SyncMode::Always`] such bytes were never
//! acknowledged (an acknowledgement follows an fdatasync of the whole frame,
//! and a rotation fsyncs the old segment before the next one exists). In any
//! other segment a bad frame is [`Error::CorruptLog`]; a bad newest snapshot is
//! [`Error::CorruptSnapshot`] (there is no silent fall-back to older state).
//!
//! # Group commit
//!
//! Leader/follower group commit, with no thread hand-off on the
//! acknowledgement path. [`Store::append`] only frames the record into a
//! shared queue under a mutex and returns a [`Ticket`]. [`Ticket::wait`] either
//! finds its record acknowledged, or waits while another thread is writing, or
//! — when nobody is — takes the flush role itself: it takes the whole queue,
//! writes it with one `write` and (under `Always`) issues one `fdatasync`.
//! Records queued during that fdatasync form the next batch, written by the
//! next waiter, so with `T` concurrent appenders a batch holds about `T / 2`
//! records ([`Store::stats`] counts fdatasyncs). Under `None`/`Batch` an
//! uncontended append + wait is a `write` syscall on the caller's thread. A
//! background thread writes records nobody waits for (after 2 ms), keeps the
//! `Batch` sync deadline, and flushes everything on close.
//!
//! # Snapshots
//!
//! [`Store::snapshot`] streams the body through a `&mut dyn Write` callback
//! (no whole-body buffer), so multi-GB snapshots are fine; on open the file
//! is memory-mapped and its CRC32 verified (crc32fast, several GB/s). The
//! engine must make the body reflect exactly the records `<= lsn` (e.g. pick
//! `lsn` and freeze its state under its own lock); appends may continue
//! while the snapshot is written.
//!
//! # Example
//!
//! ```
//! use neardup_store::{Store, StoreOptions, SyncMode};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let opts = StoreOptions { sync: SyncMode::Always, config: b"cfg-v1".to_vec(), ..Default::default() };
//!
//! let (store, recovered) = Store::open(dir.path(), opts.clone()).unwrap();
//! assert!(recovered.snapshot.is_none() && recovered.log.is_empty());
//! let lsn = store.append_durable(b"fingerprint+doc id+timestamp").unwrap();
//! assert_eq!(lsn, 1);
//! store.append(b"second").unwrap().wait().unwrap();
//! // Snapshot the state as of LSN 1 (streamed through a writer callback).
//! store.snapshot(1, |w| w.write_all(b"state after record 1")).unwrap();
//! drop(store);
//!
//! let (_store, recovered) = Store::open(dir.path(), opts).unwrap();
//! let snap = recovered.snapshot.as_ref().unwrap();
//! assert_eq!((snap.lsn(), snap.body()), (1, &b"state after record 1"[..]));
//! let replay: Vec<_> = recovered.log.iter().collect();
//! assert_eq!(replay, vec![(2, &b"second"[..])]);
//! assert_eq!(recovered.next_lsn, 3);
//! ```

#![warn(missing_docs)]

mod error;
#[cfg(feature = "failpoints")]
pub mod failpoints;
mod format;
mod lock;
mod recovered;
mod store;

pub use error::{Error, Result};
pub use format::{FORMAT_VERSION, MAX_CONFIG_BYTES, MAX_RECORD_BYTES};
pub use recovered::{LogIter, LogRecords, Recovered, Snapshot};
pub use store::{SnapshotInfo, Store, StoreOptions, StoreStats, SyncMode, Ticket};

/// Log sequence number: 1 for the first record ever appended, then +1 per record.
/// 0 means "nothing" (e.g. no snapshot).
pub type Lsn = u64;
