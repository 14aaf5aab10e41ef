//! What does the data directory hold after a crash, and where does appending
//! continue? Recovery on [`Store::open`](super::Store::open), one step per
//! function, in the order `recover` runs them.
//!
//! Invariants:
//! * Nothing is deleted or truncated before `DIR/LOCK` is held, and a
//!   directory holding only foreign files is refused untouched.
//! * LSNs are contiguous: each segment starts where the previous one ended,
//!   and the first segment still needed starts at or before `snapshot + 1`;
//!   a gap is [`Error::MissingLog`].
//! * Only the **last** segment may end in a bad frame; it is truncated there
//!   (reported as torn bytes). A bad frame in any other segment is
//!   [`Error::CorruptLog`].
//! * Files are deleted only once the newest snapshot, verified, covers them;
//!   the directory is fsynced after any deletion or truncation of a name.

use std::fs::{self, OpenOptions};
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use super::commit::Tail;
use super::files::{create_segment, map_checked, map_file, sync_dir};
use super::snapshot::load_snapshot;
use super::{StoreOptions, SyncMode};
use crate::error::{Error, IoContext, Result};
use crate::format::{self, Entry, MAX_CONFIG_BYTES, SEGMENT_MAGIC};
use crate::lock::DirLock;
use crate::recovered::{LogRecords, Recovered, SegmentView, Snapshot};
use crate::Lsn;

/// Refuses options the store cannot work with.
pub(super) fn check_options(opts: &StoreOptions) -> Result<()> {
    if opts.segment_bytes < 1024 {
        return Err(Error::InvalidOptions(
            "segment_bytes must be at least 1024".into(),
        ));
    }
    if opts.config.len() > MAX_CONFIG_BYTES {
        return Err(Error::InvalidOptions(format!(
            "config must be at most {MAX_CONFIG_BYTES} bytes"
        )));
    }
    if let SyncMode::Batch { interval } = opts.sync {
        if interval.is_zero() {
            return Err(Error::InvalidOptions(
                "SyncMode::Batch interval must be > 0".into(),
            ));
        }
    }
    Ok(())
}

/// Recovers the store in `dir` (creating the directory if needed): returns
/// the held directory lock, what the caller replays, and where appending
/// continues.
pub(super) fn recover(dir: &Path, opts: &StoreOptions) -> Result<(DirLock, Recovered, Tail)> {
    fs::create_dir_all(dir).at(dir)?;
    refuse_foreign_dir(dir)?;
    let dir_lock = DirLock::acquire(dir)?;
    let Inventory {
        snapshots,
        segments,
        mut dirty,
    } = take_inventory(dir)?;
    let snapshot = load_newest_snapshot(dir, &snapshots, &opts.config)?;
    let snap_lsn = snapshot.as_ref().map_or(0, |s| s.lsn);

    let mut log = verify_log(dir, &segments, snap_lsn, &opts.config)?;
    check_log_reaches_snapshot(dir, &log.views, snap_lsn)?;
    let log_next = log.next.unwrap_or(1);
    let next_lsn = log_next.max(snap_lsn + 1);
    let count = log_next.saturating_sub(snap_lsn + 1);

    let header_len = format::header_len(&opts.config) as u64;
    let active = open_active_segment(dir, &mut log, log_next, next_lsn, header_len, &opts.config)?;
    dirty |= delete_superseded(dir, &log.covered, &snapshots)?;
    if dirty {
        sync_dir(dir)?;
    }

    let tail = Tail {
        file: active.file,
        seg_bytes: active.bytes,
        seg_records: active.records,
        segments: log.live,
        next_lsn,
        snapshot_lsn: snap_lsn,
        header_len,
    };
    let recovered = Recovered {
        snapshot,
        log: LogRecords {
            segments: log.views,
            after: snap_lsn,
            count,
        },
        torn_bytes: log.torn_bytes,
        torn_segment: log.torn_segment,
        next_lsn,
    };
    Ok((dir_lock, recovered, tail))
}

/// Lists `dir` as `(name, kind)` pairs.
fn list_dir(dir: &Path) -> Result<Vec<(String, Entry)>> {
    let mut v = Vec::new();
    for e in fs::read_dir(dir).at(dir)? {
        let e = e.at(dir)?;
        let name = e.file_name().to_string_lossy().into_owned();
        let kind = format::classify(&name);
        v.push((name, kind));
    }
    Ok(v)
}

/// Refuses a non-empty directory in which no file is the store's
/// ([`Error::NotStoreDir`]): a wrong path must not get a `LOCK` file or lose
/// anything.
fn refuse_foreign_dir(dir: &Path) -> Result<()> {
    let before = list_dir(dir)?;
    // `lost+found` is what a freshly formatted data disk contains.
    let foreign = before.iter().filter(|(n, _)| n != "lost+found");
    if foreign.clone().next().is_some() && foreign.clone().all(|(_, k)| *k == Entry::Unknown) {
        return Err(Error::NotStoreDir { dir: dir.into() });
    }
    Ok(())
}

/// The store's files in a locked directory.
struct Inventory {
    /// Snapshot LSNs, ascending.
    snapshots: Vec<Lsn>,
    /// Segment base LSNs, ascending.
    segments: Vec<Lsn>,
    /// A leftover temp file was deleted (the directory needs an fsync).
    dirty: bool,
}

/// Lists snapshots and segments, deleting leftover `*.tmp` files of an
/// interrupted rotation or snapshot.
fn take_inventory(dir: &Path) -> Result<Inventory> {
    let mut inv = Inventory {
        snapshots: Vec::new(),
        segments: Vec::new(),
        dirty: false,
    };
    for (name, kind) in list_dir(dir)? {
        match kind {
            Entry::Temp => {
                let p = dir.join(&name);
                fs::remove_file(&p).at(&p)?;
                inv.dirty = true;
            }
            Entry::Snapshot(l) => inv.snapshots.push(l),
            Entry::Segment(l) => inv.segments.push(l),
            Entry::Lock | Entry::Unknown => {}
        }
    }
    inv.snapshots.sort_unstable();
    inv.segments.sort_unstable();
    Ok(inv)
}

/// Loads and verifies the newest snapshot, if any. Older ones are not
/// looked at (there is no fall-back).
fn load_newest_snapshot(dir: &Path, snapshots: &[Lsn], config: &[u8]) -> Result<Option<Snapshot>> {
    match snapshots.last() {
        Some(&l) => Ok(Some(load_snapshot(
            &dir.join(format::snapshot_name(l)),
            l,
            config,
        )?)),
        None => Ok(None),
    }
}

/// The verified log: what to replay, what stays, what the snapshot covers.
struct VerifiedLog {
    /// Segments holding records after the snapshot, for replay.
    views: Vec<SegmentView>,
    /// Segments kept on disk, in LSN order.
    live: Vec<(Lsn, PathBuf)>,
    /// Segments the snapshot covers entirely (to delete).
    covered: Vec<PathBuf>,
    /// LSN after the last record in the log; `None` without segments.
    next: Option<Lsn>,
    /// Bytes truncated from the last segment.
    torn_bytes: u64,
    /// The segment they were truncated from.
    torn_segment: Option<PathBuf>,
}

/// Verifies every segment (header, contiguity, frames), truncating a torn
/// tail of the last one.
fn verify_log(dir: &Path, segments: &[Lsn], snap_lsn: Lsn, config: &[u8]) -> Result<VerifiedLog> {
    let mut log = VerifiedLog {
        views: Vec::new(),
        live: Vec::new(),
        covered: Vec::new(),
        next: None,
        torn_bytes: 0,
        torn_segment: None,
    };
    let n = segments.len();
    for (i, &base) in segments.iter().enumerate() {
        let path = dir.join(format::segment_name(base));
        let last = i + 1 == n;
        let (mut map, start) = open_segment(&path, base, config)?;
        if let Some(exp) = log.next {
            if exp != base {
                return Err(Error::MissingLog {
                    dir: dir.into(),
                    expected: exp,
                    found: base,
                });
            }
        }
        let scan = format::scan_frames(&map, start);
        if let Some((off, reason)) = scan.bad {
            if !last {
                return Err(Error::CorruptLog {
                    path,
                    offset: off as u64,
                    reason: reason.into(),
                });
            }
            log.torn_bytes = (map.len() - off) as u64;
            log.torn_segment = Some(path.clone());
            map = truncate_torn_tail(&path, map, off)?;
        }
        let next = base + scan.count;
        log.next = Some(next);
        if next <= snap_lsn + 1 && !last {
            log.covered.push(path.clone());
        } else {
            log.live.push((base, path.clone()));
        }
        if next > snap_lsn + 1 {
            log.views.push(SegmentView {
                map,
                base,
                start,
                end: scan.end,
            });
        }
    }
    Ok(log)
}

/// Maps segment `base` and checks its header (magic, version, LSN, config);
/// returns the mapping and the offset of its first frame.
fn open_segment(path: &Path, base: Lsn, config: &[u8]) -> Result<(Mmap, usize)> {
    map_checked(path, &SEGMENT_MAGIC, base, config)
}

/// Cuts the last segment at `off` (its first bad frame), syncs it and maps it
/// again.
fn truncate_torn_tail(path: &Path, map: Mmap, off: usize) -> Result<Mmap> {
    drop(map);
    let f = OpenOptions::new().write(true).open(path).at(path)?;
    f.set_len(off as u64).at(path)?;
    f.sync_all().at(path)?;
    map_file(path)?.ok_or_else(|| Error::NotStoreFile { path: path.into() })
}

/// The first segment still needed must start at or before the first record
/// after the snapshot.
fn check_log_reaches_snapshot(dir: &Path, views: &[SegmentView], snap_lsn: Lsn) -> Result<()> {
    if let Some(first) = views.first() {
        if first.base > snap_lsn + 1 {
            return Err(Error::MissingLog {
                dir: dir.into(),
                expected: snap_lsn + 1,
                found: first.base,
            });
        }
    }
    Ok(())
}

/// The segment appends go to, with its size and record count.
struct ActiveSegment {
    file: std::fs::File,
    bytes: u64,
    records: u64,
}

/// Reopens the last segment for appending when the log reaches `next_lsn`;
/// otherwise (no segment, or the log ends before the snapshot) marks every
/// segment covered and creates a fresh one starting at `next_lsn`.
fn open_active_segment(
    dir: &Path,
    log: &mut VerifiedLog,
    log_next: Lsn,
    next_lsn: Lsn,
    header_len: u64,
    config: &[u8],
) -> Result<ActiveSegment> {
    if log_next == next_lsn && !log.live.is_empty() {
        let (base, path) = log.live.last().cloned().expect("non-empty");
        let file = OpenOptions::new().append(true).open(&path).at(&path)?;
        let bytes = file.metadata().at(&path)?.len();
        Ok(ActiveSegment {
            file,
            bytes,
            records: next_lsn - base,
        })
    } else {
        // No segment, or the log ends before the snapshot (all covered).
        for (_, p) in log.live.drain(..) {
            log.covered.push(p);
        }
        let (file, path) = create_segment(dir, next_lsn, config)?;
        log.live.push((next_lsn, path));
        Ok(ActiveSegment {
            file,
            bytes: header_len,
            records: 0,
        })
    }
}

/// Deletes the segments the snapshot covers and every snapshot but the
/// newest; returns whether anything was deleted.
fn delete_superseded(dir: &Path, covered: &[PathBuf], snapshots: &[Lsn]) -> Result<bool> {
    let mut deleted = false;
    for p in covered {
        fs::remove_file(p).at(p)?;
        deleted = true;
    }
    for &l in snapshots.iter().rev().skip(1) {
        let p = dir.join(format::snapshot_name(l));
        fs::remove_file(&p).at(&p)?;
        deleted = true;
    }
    Ok(deleted)
}
