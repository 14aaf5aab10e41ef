//! What [`Store::open`](crate::Store::open) hands back: the newest snapshot
//! and the log records after it.

use std::path::{Path, PathBuf};

use memmap2::Mmap;

use crate::format::frame_at;
use crate::Lsn;

/// A verified snapshot, memory-mapped read-only.
///
/// The body's CRC32 was checked when the store was opened. The mapping stays
/// valid while this value lives, even after a newer snapshot replaced the
/// file (Unix keeps unlinked mapped files alive).
#[derive(Debug)]
pub struct Snapshot {
    pub(crate) lsn: Lsn,
    pub(crate) path: PathBuf,
    pub(crate) map: Mmap,
    pub(crate) body: std::ops::Range<usize>,
}

impl Snapshot {
    /// The LSN this snapshot covers: it reflects every record with `lsn <= self.lsn()`.
    pub fn lsn(&self) -> Lsn {
        self.lsn
    }

    /// The snapshot body exactly as it was written by the snapshot callback.
    pub fn body(&self) -> &[u8] {
        &self.map[self.body.clone()]
    }

    /// The snapshot file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// One segment's worth of replayable frames.
#[derive(Debug)]
pub(crate) struct SegmentView {
    pub map: Mmap,
    pub base: Lsn,
    pub start: usize,
    pub end: usize,
}

/// The CRC-verified log records to replay on top of the snapshot, in LSN order.
#[derive(Debug, Default)]
pub struct LogRecords {
    pub(crate) segments: Vec<SegmentView>,
    /// Only records with an LSN greater than this are yielded.
    pub(crate) after: Lsn,
    pub(crate) count: u64,
}

impl LogRecords {
    /// Iterates `(lsn, payload)` for every record after the snapshot, in order.
    /// LSNs are contiguous: `first, first + 1, ...`.
    pub fn iter(&self) -> LogIter<'_> {
        LogIter {
            records: self,
            seg: 0,
            off: self.segments.first().map_or(0, |s| s.start),
            lsn: self.segments.first().map_or(0, |s| s.base),
        }
    }

    /// Number of records [`iter`](Self::iter) yields.
    pub fn len(&self) -> u64 {
        self.count
    }

    /// True if there is nothing to replay.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

impl<'a> IntoIterator for &'a LogRecords {
    type Item = (Lsn, &'a [u8]);
    type IntoIter = LogIter<'a>;
    fn into_iter(self) -> LogIter<'a> {
        self.iter()
    }
}

/// Iterator returned by [`LogRecords::iter`].
#[derive(Debug)]
pub struct LogIter<'a> {
    records: &'a LogRecords,
    seg: usize,
    off: usize,
    lsn: Lsn,
}

impl<'a> Iterator for LogIter<'a> {
    type Item = (Lsn, &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let seg = self.records.segments.get(self.seg)?;
            if self.off >= seg.end {
                self.seg += 1;
                let next = self.records.segments.get(self.seg)?;
                self.off = next.start;
                self.lsn = next.base;
                continue;
            }
            // Frames were fully verified during recovery, so this cannot fail;
            // stop defensively instead of panicking if it somehow does.
            let (p, e) = frame_at(&seg.map[..seg.end], self.off).ok()?;
            let lsn = self.lsn;
            self.off = e;
            self.lsn += 1;
            if lsn > self.records.after {
                return Some((lsn, &seg.map[p..e]));
            }
        }
    }
}

/// Result of recovery, returned next to the [`Store`](crate::Store) by
/// [`Store::open`](crate::Store::open).
///
/// Rebuild the in-memory state by loading [`snapshot`](Self::snapshot) (if
/// any) and then applying every record of [`log`](Self::log) in order.
#[derive(Debug)]
#[non_exhaustive]
pub struct Recovered {
    /// The newest snapshot, if one exists.
    pub snapshot: Option<Snapshot>,
    /// Log records with LSN greater than the snapshot's LSN (or all records).
    pub log: LogRecords,
    /// Bytes dropped from the tail of the last segment because they held a
    /// partial or checksum-failing frame (a write torn by a crash). Such
    /// records were never acknowledged as durable under `SyncMode::Always`.
    pub torn_bytes: u64,
    /// The segment whose tail was truncated, if `torn_bytes > 0`.
    pub torn_segment: Option<PathBuf>,
    /// The LSN the next append will receive.
    pub next_lsn: Lsn,
}

impl Recovered {
    /// LSN of the snapshot, or 0 if there is none.
    pub fn snapshot_lsn(&self) -> Lsn {
        self.snapshot.as_ref().map_or(0, |s| s.lsn)
    }
}
