//! The store: recovery on open, leader/follower group commit, snapshots.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use memmap2::Mmap;

use crate::error::{Error, IoContext, Result};
use crate::format::{
    self, Entry, FRAME_HEADER, MAX_CONFIG_BYTES, MAX_RECORD_BYTES, SEGMENT_MAGIC, SNAPSHOT_MAGIC,
    TRAILER_LEN,
};
use crate::lock::DirLock;
use crate::recovered::{LogRecords, Recovered, SegmentView, Snapshot};
use crate::Lsn;

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

/// Frames queued for the next flush; a chunk may begin a new segment.
struct Chunk {
    new_segment: Option<Lsn>,
    bytes: Vec<u8>,
    last_lsn: Lsn,
}

struct State {
    queue: Vec<Chunk>,
    queued_bytes: usize,
    next_lsn: Lsn,
    /// Size of the current segment including queued frames.
    seg_bytes: u64,
    seg_records: u64,
    /// Highest LSN handed to the OS.
    written: Lsn,
    /// Highest LSN fdatasync'ed.
    synced: Lsn,
    /// The writer must sync at least up to here.
    sync_requested: Lsn,
    /// A thread (an appender waiting for its ticket, or the background thread)
    /// holds the flush role: it took the queue and is writing/syncing it.
    flushing: bool,
    /// The background thread sleeps without a deadline (Batch: nothing unsynced).
    writer_idle: bool,
    /// When the queue last went from empty to non-empty.
    queued_at: Option<Instant>,
    /// When the last fdatasync finished.
    last_sync: Instant,
    /// Number of fdatasync calls on log segments (group-commit statistics).
    fsyncs: u64,
    shutdown: bool,
    /// The background thread has finished its final flush: nothing is written any more.
    closed: bool,
    failed: Option<String>,
    snapshot_lsn: Lsn,
}

impl State {
    /// Why no more work is accepted, if so: an earlier failure, or close.
    fn refusal(&self) -> Option<Error> {
        match (&self.failed, self.closed) {
            (Some(reason), _) => Some(Error::Failed {
                reason: reason.clone(),
            }),
            (None, true) => Some(Error::Closed),
            (None, false) => None,
        }
    }
}

struct Shared {
    dir: PathBuf,
    opts: StoreOptions,
    header_len: u64,
    state: Mutex<State>,
    /// Signals the writer: work queued, sync requested or shutdown.
    work: Condvar,
    /// Signals appenders: watermarks advanced, queue drained or failure.
    done: Condvar,
    /// Live segments in LSN order; the last is the one being appended to.
    segments: Mutex<Vec<(Lsn, PathBuf)>>,
    /// The active segment; locked only by the thread holding the flush role
    /// (`State::flushing`), so it is never contended.
    file: Mutex<File>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(feature = "failpoints")]
fn fp(name: &str) -> io::Result<()> {
    crate::failpoints::hit(name)
}

#[cfg(not(feature = "failpoints"))]
#[inline(always)]
fn fp(_name: &str) -> io::Result<()> {
    Ok(())
}

fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir).and_then(|d| d.sync_all()).at(dir)
}

/// Creates segment `base` atomically: temp file, header, fsync, rename, dir fsync.
fn create_segment(dir: &Path, base: Lsn, config: &[u8]) -> Result<(File, PathBuf)> {
    let path = dir.join(format::segment_name(base));
    let tmp = dir.join(format::segment_name(base) + ".tmp");
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&tmp)
        .at(&tmp)?;
    f.write_all(&format::encode_header(&SEGMENT_MAGIC, base, config))
        .at(&tmp)?;
    f.sync_all().at(&tmp)?;
    fp("rotate-before-rename").at(&tmp)?;
    fs::rename(&tmp, &path).at(&path)?;
    fp("rotate-after-rename-before-dir-sync").at(dir)?;
    sync_dir(dir)?;
    drop(f);
    let f = OpenOptions::new().append(true).open(&path).at(&path)?;
    Ok((f, path))
}

fn map_file(path: &Path) -> Result<Option<Mmap>> {
    let f = File::open(path).at(path)?;
    let len = f.metadata().at(path)?.len();
    if len == 0 {
        return Ok(None);
    }
    // SAFETY: the directory lock keeps other neardup processes from modifying
    // the file; the store itself never rewrites bytes that were mapped.
    let map = unsafe { Mmap::map(&f) }.at(path)?;
    Ok(Some(map))
}

fn load_snapshot(path: &Path, lsn: Lsn, config: &[u8]) -> Result<Snapshot> {
    let map = map_file(path)?.ok_or_else(|| Error::NotStoreFile { path: path.into() })?;
    let h = format::decode_header(&map, &SNAPSHOT_MAGIC, path)?;
    if h.lsn != lsn {
        return Err(Error::CorruptHeader {
            path: path.into(),
            reason: format!("header LSN {} disagrees with the file name", h.lsn),
        });
    }
    if h.config != config {
        return Err(Error::ConfigMismatch {
            path: path.into(),
            stored: h.config.to_vec(),
        });
    }
    let corrupt = |reason: String| Error::CorruptSnapshot {
        path: path.into(),
        reason,
    };
    let hl = h.len;
    if map.len() < hl + TRAILER_LEN {
        return Err(corrupt("file ends before the trailer".into()));
    }
    let (body_len, crc) = format::decode_trailer(&map[map.len() - TRAILER_LEN..])
        .ok_or_else(|| corrupt("bad trailer magic".into()))?;
    let body = hl..map.len() - TRAILER_LEN;
    if body_len != body.len() as u64 {
        return Err(corrupt(format!(
            "trailer says {body_len} body bytes, file holds {}",
            body.len()
        )));
    }
    if crc32fast::hash(&map[body.clone()]) != crc {
        return Err(corrupt("body checksum mismatch".into()));
    }
    Ok(Snapshot {
        lsn,
        path: path.into(),
        map,
        body,
    })
}

/// Writer wrapper that checksums and counts the snapshot body.
struct CrcWriter<W> {
    inner: W,
    hasher: crc32fast::Hasher,
    len: u64,
}

impl<W: Write> Write for CrcWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.len += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Handle for an appended record; [`wait`](Self::wait) blocks until it is
/// acknowledged according to the store's [`SyncMode`].
#[must_use = "a record is only acknowledged once Ticket::wait returns Ok"]
pub struct Ticket {
    lsn: Lsn,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Ticket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ticket").field("lsn", &self.lsn).finish()
    }
}

impl Ticket {
    /// LSN assigned to the record.
    pub fn lsn(&self) -> Lsn {
        self.lsn
    }

    /// Blocks until the record is acknowledged: durable on disk under
    /// [`SyncMode::Always`], handed to the OS otherwise. Returns its LSN.
    ///
    /// The waiting thread does the I/O itself when no other thread is
    /// writing (leader/follower group commit): it takes everything queued,
    /// writes it with one `write` and, under `Always`, one `fdatasync`;
    /// records queued meanwhile are written by the next waiter. No thread
    /// hand-off is on the acknowledgement path.
    pub fn wait(self) -> Result<Lsn> {
        let sh = &*self.shared;
        let mut st = lock(&sh.state);
        loop {
            if sh.mark(&st) >= self.lsn {
                return Ok(self.lsn);
            }
            if let Some(e) = st.refusal() {
                return Err(e);
            }
            st = sh.flush_or_wait(st, false);
        }
    }
}

/// Records nobody waits for are written by the background thread once they
/// have been queued this long.
const ORPHAN_AFTER: Duration = Duration::from_millis(2);
/// The background thread's longest sleep.
const WRITER_TICK: Duration = Duration::from_millis(20);

impl Shared {
    /// The acknowledgement watermark of the sync mode.
    fn mark(&self, st: &State) -> Lsn {
        if self.opts.sync == SyncMode::Always {
            st.synced
        } else {
            st.written
        }
    }

    fn active_path(&self) -> PathBuf {
        lock(&self.segments)
            .last()
            .map(|s| s.1.clone())
            .unwrap_or_else(|| self.dir.clone())
    }

    /// Makes progress for a thread that needs the queue written: takes the flush role if it is
    /// free ([`flush`](Self::flush)), else waits until the current flush ends.
    fn flush_or_wait<'a>(
        &'a self,
        st: MutexGuard<'a, State>,
        force_sync: bool,
    ) -> MutexGuard<'a, State> {
        if st.flushing {
            self.done.wait(st).unwrap_or_else(|e| e.into_inner())
        } else {
            self.flush(st, force_sync)
        }
    }

    /// Takes the flush role (the caller saw `!st.flushing` and no failure),
    /// writes the whole queue, syncs it when the mode, `force_sync`, a sync
    /// request or shutdown asks, publishes the watermarks and wakes waiters.
    /// The state lock is released during I/O and returned re-taken.
    fn flush<'a>(
        &'a self,
        mut st: MutexGuard<'a, State>,
        force_sync: bool,
    ) -> MutexGuard<'a, State> {
        debug_assert!(!st.flushing && st.refusal().is_none());
        st.flushing = true;
        let chunks = std::mem::take(&mut st.queue);
        st.queued_at = None;
        if st.queued_bytes >= self.opts.max_pending_bytes {
            // Appenders held back by backpressure may queue again.
            self.done.notify_all();
        }
        st.queued_bytes = 0;
        let sync_due = force_sync
            || st.sync_requested > st.synced
            || st.shutdown
            || match self.opts.sync {
                SyncMode::Always => true,
                SyncMode::Batch { interval } => st.last_sync.elapsed() >= interval,
                SyncMode::None => false,
            };
        let (mut written, mut synced, mut fsyncs) = (st.written, st.synced, st.fsyncs);
        drop(st);
        let result = (|| -> Result<()> {
            let mut file = lock(&self.file);
            for c in &chunks {
                if let Some(base) = c.new_segment {
                    self.rotate(&mut file, base)?;
                    fsyncs += 1;
                    synced = written;
                }
                self.write(&mut file, &c.bytes)?;
                written = c.last_lsn;
            }
            if sync_due && written > synced {
                let path = self.active_path();
                fp("after-write-before-sync").at(&path)?;
                file.sync_data().at(&path)?;
                fsyncs += 1;
                synced = written;
            }
            Ok(())
        })();
        let mut st = lock(&self.state);
        st.flushing = false;
        match result {
            Ok(()) => {
                st.written = written;
                if synced > st.synced {
                    st.synced = synced;
                    st.last_sync = Instant::now();
                }
                st.fsyncs = fsyncs;
            }
            // Nothing of this batch is acknowledged; the store refuses further work.
            Err(e) => {
                if st.failed.is_none() {
                    st.failed = Some(e.to_string());
                }
            }
        }
        self.done.notify_all();
        if st.writer_idle && st.written > st.synced {
            // Batch mode: start the background thread's sync deadline.
            st.writer_idle = false;
            self.work.notify_one();
        }
        st
    }

    fn write(&self, file: &mut File, bytes: &[u8]) -> Result<()> {
        let path = self.active_path();
        fp("log-before-write").at(&path)?;
        #[cfg(feature = "failpoints")]
        if let Err(e) = fp("torn-write") {
            // Half the batch plus one byte, so the cut never falls on a frame boundary.
            file.write_all(&bytes[..bytes.len() / 2 + 1]).at(&path)?;
            return Err(Error::io(path, e));
        }
        file.write_all(bytes).at(&path)
    }

    fn rotate(&self, file: &mut File, base: Lsn) -> Result<()> {
        let old = self.active_path();
        // The old segment must be complete on disk before a later one exists,
        // so that only the last segment can ever have a torn tail.
        file.sync_data().at(&old)?;
        let (new, path) = create_segment(&self.dir, base, &self.opts.config)?;
        *file = new;
        lock(&self.segments).push((base, path));
        Ok(())
    }

    /// The background thread: writes records nobody waits for, keeps the
    /// `Batch` sync deadline, and flushes everything on shutdown.
    fn background(&self) {
        let interval = match self.opts.sync {
            SyncMode::Batch { interval } => Some(interval),
            _ => None,
        };
        let mut st = lock(&self.state);
        loop {
            if st.shutdown {
                if st.flushing {
                    st = self.done.wait(st).unwrap_or_else(|e| e.into_inner());
                    continue;
                }
                if st.failed.is_none() && (!st.queue.is_empty() || st.written > st.synced) {
                    st = self.flush(st, true);
                    continue;
                }
                // Nothing is written after this: a ticket still waiting gets `Error::Closed`
                // (and the directory lock may pass to another process).
                st.closed = true;
                self.done.notify_all();
                return;
            }
            let unsynced = st.written > st.synced;
            if st.failed.is_none() && !st.flushing {
                let orphans = st.queued_at.is_some_and(|t| t.elapsed() >= ORPHAN_AFTER);
                let batch_due = interval.is_some_and(|iv| unsynced && st.last_sync.elapsed() >= iv);
                if orphans || batch_due {
                    st = self.flush(st, batch_due);
                    continue;
                }
            }
            let mut timeout = WRITER_TICK;
            if let Some(t) = st.queued_at {
                timeout = timeout.min(ORPHAN_AFTER.saturating_sub(t.elapsed()));
            }
            if let Some(iv) = interval.filter(|_| unsynced) {
                timeout = timeout.min(iv.saturating_sub(st.last_sync.elapsed()));
            }
            st.writer_idle = interval.is_some() && !unsynced;
            st = self
                .work
                .wait_timeout(st, timeout.max(Duration::from_micros(50)))
                .unwrap_or_else(|e| e.into_inner())
                .0;
            st.writer_idle = false;
        }
    }
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
        fs::create_dir_all(&dir).at(&dir)?;
        let list = |dir: &Path| -> Result<Vec<(String, Entry)>> {
            let mut v = Vec::new();
            for e in fs::read_dir(dir).at(dir)? {
                let e = e.at(dir)?;
                let name = e.file_name().to_string_lossy().into_owned();
                let kind = format::classify(&name);
                v.push((name, kind));
            }
            Ok(v)
        };
        let before = list(&dir)?;
        // `lost+found` is what a freshly formatted data disk contains.
        let foreign = before.iter().filter(|(n, _)| n != "lost+found");
        if foreign.clone().next().is_some() && foreign.clone().all(|(_, k)| *k == Entry::Unknown) {
            return Err(Error::NotStoreDir { dir });
        }
        let dir_lock = DirLock::acquire(&dir)?;
        let entries = list(&dir)?;

        let mut dirty = false;
        let mut snaps = Vec::new();
        let mut segs = Vec::new();
        for (name, kind) in entries {
            match kind {
                Entry::Temp => {
                    let p = dir.join(&name);
                    fs::remove_file(&p).at(&p)?;
                    dirty = true;
                }
                Entry::Snapshot(l) => snaps.push(l),
                Entry::Segment(l) => segs.push(l),
                Entry::Lock | Entry::Unknown => {}
            }
        }
        snaps.sort_unstable();
        segs.sort_unstable();

        let snapshot = match snaps.last() {
            Some(&l) => Some(load_snapshot(
                &dir.join(format::snapshot_name(l)),
                l,
                &opts.config,
            )?),
            None => None,
        };
        let snap_lsn = snapshot.as_ref().map_or(0, |s| s.lsn);

        // Verify segments.
        let mut views: Vec<SegmentView> = Vec::new();
        let mut torn_bytes = 0u64;
        let mut torn_segment = None;
        let mut expected: Option<Lsn> = None;
        let mut seg_list = Vec::new();
        let mut covered = Vec::new();
        let n = segs.len();
        for (i, &base) in segs.iter().enumerate() {
            let path = dir.join(format::segment_name(base));
            let last = i + 1 == n;
            let map = map_file(&path)?.ok_or_else(|| Error::NotStoreFile { path: path.clone() })?;
            let h = format::decode_header(&map, &SEGMENT_MAGIC, &path)?;
            if h.lsn != base {
                return Err(Error::CorruptHeader {
                    path,
                    reason: format!("header LSN {} disagrees with the file name", h.lsn),
                });
            }
            if h.config != opts.config.as_slice() {
                return Err(Error::ConfigMismatch {
                    path,
                    stored: h.config.to_vec(),
                });
            }
            let start = h.len;
            if let Some(exp) = expected {
                if exp != base {
                    return Err(Error::MissingLog {
                        dir,
                        expected: exp,
                        found: base,
                    });
                }
            }
            let scan = format::scan_frames(&map, start);
            let mut map = map;
            if let Some((off, reason)) = scan.bad {
                if !last {
                    return Err(Error::CorruptLog {
                        path,
                        offset: off as u64,
                        reason: reason.into(),
                    });
                }
                torn_bytes = (map.len() - off) as u64;
                torn_segment = Some(path.clone());
                drop(map);
                let f = OpenOptions::new().write(true).open(&path).at(&path)?;
                f.set_len(off as u64).at(&path)?;
                f.sync_all().at(&path)?;
                map = map_file(&path)?.ok_or_else(|| Error::NotStoreFile { path: path.clone() })?;
            }
            let next = base + scan.count;
            expected = Some(next);
            if next <= snap_lsn + 1 && !last {
                covered.push(path.clone());
            } else {
                seg_list.push((base, path.clone()));
            }
            if next > snap_lsn + 1 {
                views.push(SegmentView {
                    map,
                    base,
                    start,
                    end: scan.end,
                });
            }
        }
        // The first live segment must start at or before the first record after the snapshot.
        if let Some(first) = views.first() {
            if first.base > snap_lsn + 1 {
                return Err(Error::MissingLog {
                    dir,
                    expected: snap_lsn + 1,
                    found: first.base,
                });
            }
        }
        let log_next = expected.unwrap_or(1);
        let next_lsn = log_next.max(snap_lsn + 1);
        let count = log_next.saturating_sub(snap_lsn + 1);

        // Pick or create the active segment.
        let header_len = format::header_len(&opts.config) as u64;
        let (file, seg_bytes, seg_records) = if log_next == next_lsn && !seg_list.is_empty() {
            let (base, path) = seg_list.last().cloned().expect("non-empty");
            let f = OpenOptions::new().append(true).open(&path).at(&path)?;
            let len = f.metadata().at(&path)?.len();
            (f, len, next_lsn - base)
        } else {
            // No segment, or the log ends before the snapshot (all covered).
            for (_, p) in seg_list.drain(..) {
                covered.push(p);
            }
            let (f, path) = create_segment(&dir, next_lsn, &opts.config)?;
            seg_list.push((next_lsn, path));
            (f, header_len, 0)
        };
        // Delete files superseded by the snapshot.
        for p in covered {
            fs::remove_file(&p).at(&p)?;
            dirty = true;
        }
        for &l in snaps.iter().rev().skip(1) {
            let p = dir.join(format::snapshot_name(l));
            fs::remove_file(&p).at(&p)?;
            dirty = true;
        }
        if dirty {
            sync_dir(&dir)?;
        }

        let shared = Arc::new(Shared {
            dir,
            header_len,
            state: Mutex::new(State {
                queue: Vec::new(),
                queued_bytes: 0,
                next_lsn,
                seg_bytes,
                seg_records,
                written: next_lsn - 1,
                synced: next_lsn - 1,
                sync_requested: 0,
                flushing: false,
                writer_idle: false,
                queued_at: None,
                last_sync: Instant::now(),
                fsyncs: 0,
                shutdown: false,
                closed: false,
                failed: None,
                snapshot_lsn: snap_lsn,
            }),
            work: Condvar::new(),
            done: Condvar::new(),
            segments: Mutex::new(seg_list),
            file: Mutex::new(file),
            opts,
        });
        let bg = Arc::clone(&shared);
        let handle = std::thread::Builder::new()
            .name("neardup-store-writer".into())
            .spawn(move || bg.background())
            .map_err(|e| Error::io(&shared.dir, e))?;
        let recovered = Recovered {
            snapshot,
            log: LogRecords {
                segments: views,
                after: snap_lsn,
                count,
            },
            torn_bytes,
            torn_segment,
            next_lsn,
        };
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

    /// Queues `payload` (1 ..= [`MAX_RECORD_BYTES`] bytes) and assigns it the
    /// next LSN. Returns at once (unless the queue is over
    /// `max_pending_bytes`: then this thread writes the queue first); call
    /// [`Ticket::wait`] before acting on the record's durability. A record
    /// whose ticket nobody waits for is written by the background thread
    /// within a few milliseconds.
    pub fn append(&self, payload: &[u8]) -> Result<Ticket> {
        if payload.is_empty() || payload.len() > MAX_RECORD_BYTES {
            return Err(Error::InvalidRecord {
                len: payload.len(),
                max: MAX_RECORD_BYTES,
            });
        }
        let frame = (FRAME_HEADER + payload.len()) as u64;
        let sh = &*self.shared;
        let mut st = lock(&sh.state);
        while st.queued_bytes >= sh.opts.max_pending_bytes && st.refusal().is_none() {
            st = sh.flush_or_wait(st, false);
        }
        if let Some(e) = st.refusal() {
            return Err(e);
        }
        let lsn = st.next_lsn;
        st.next_lsn += 1;
        let rotate = st.seg_records > 0 && st.seg_bytes + frame > sh.opts.segment_bytes;
        if rotate {
            st.seg_bytes = sh.header_len;
            st.seg_records = 0;
        }
        if st.queue.is_empty() {
            st.queued_at = Some(Instant::now());
        }
        if rotate || st.queue.is_empty() {
            st.queue.push(Chunk {
                new_segment: rotate.then_some(lsn),
                bytes: Vec::with_capacity(4096),
                last_lsn: lsn,
            });
        }
        let chunk = st.queue.last_mut().expect("queue is non-empty");
        format::encode_frame(&mut chunk.bytes, payload);
        chunk.last_lsn = lsn;
        st.seg_bytes += frame;
        st.seg_records += 1;
        st.queued_bytes += frame as usize;
        Ok(Ticket {
            lsn,
            shared: Arc::clone(&self.shared),
        })
    }

    /// [`append`](Self::append) + [`Ticket::wait`]: returns the LSN once the
    /// record is acknowledged per the store's [`SyncMode`].
    pub fn append_durable(&self, payload: &[u8]) -> Result<Lsn> {
        self.append(payload)?.wait()
    }

    /// Makes every record appended so far durable (fdatasync), whatever the
    /// [`SyncMode`].
    pub fn sync(&self) -> Result<()> {
        let sh = &*self.shared;
        let mut st = lock(&sh.state);
        let target = st.next_lsn - 1;
        st.sync_requested = st.sync_requested.max(target);
        while st.synced < target {
            if let Some(e) = st.refusal() {
                return Err(e);
            }
            st = sh.flush_or_wait(st, true);
        }
        Ok(())
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
        let sh = &*self.shared;
        {
            let st = lock(&sh.state);
            if let Some(e) = st.refusal() {
                return Err(e);
            }
            let last = st.next_lsn - 1;
            if lsn > last || lsn < st.snapshot_lsn {
                return Err(Error::InvalidSnapshotLsn {
                    requested: lsn,
                    newest: st.snapshot_lsn,
                    last,
                });
            }
        }
        self.sync()?;
        let dir = &sh.dir;
        let path = dir.join(format::snapshot_name(lsn));
        let tmp = dir.join(format::snapshot_name(lsn) + ".tmp");
        let result = (|| -> Result<u64> {
            let file = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .open(&tmp)
                .at(&tmp)?;
            let mut w = BufWriter::with_capacity(1 << 20, file);
            w.write_all(&format::encode_header(
                &SNAPSHOT_MAGIC,
                lsn,
                &sh.opts.config,
            ))
            .at(&tmp)?;
            let mut body = CrcWriter {
                inner: w,
                hasher: crc32fast::Hasher::new(),
                len: 0,
            };
            write_body(&mut body).at(&tmp)?;
            let CrcWriter {
                inner: mut w,
                hasher,
                len,
            } = body;
            w.write_all(&format::encode_trailer(len, hasher.finalize()))
                .at(&tmp)?;
            let file = w.into_inner().map_err(|e| e.into_error()).at(&tmp)?;
            fp("snapshot-before-sync").at(&tmp)?;
            file.sync_all().at(&tmp)?;
            fp("before-rename").at(&tmp)?;
            fs::rename(&tmp, &path).at(&path)?;
            fp("after-rename-before-dir-sync").at(dir)?;
            sync_dir(dir)?;
            Ok(len)
        })();
        let body_bytes = match result {
            Ok(n) => n,
            Err(e) => {
                let _ = fs::remove_file(&tmp);
                return Err(e);
            }
        };
        let old_snapshot = {
            let mut st = lock(&sh.state);
            std::mem::replace(&mut st.snapshot_lsn, lsn)
        };
        fp("snapshot-before-cleanup").at(dir)?;
        let mut deleted = 0;
        let mut obsolete = Vec::new();
        {
            // Only non-active segments whose successor starts at or before lsn + 1.
            let mut segs = lock(&sh.segments);
            while segs.len() >= 2 && segs[1].0 <= lsn + 1 {
                obsolete.push(segs.remove(0).1);
                deleted += 1;
            }
        }
        if old_snapshot != lsn && old_snapshot > 0 {
            obsolete.push(dir.join(format::snapshot_name(old_snapshot)));
        }
        for (i, p) in obsolete.iter().enumerate() {
            if i == 1 {
                fp("snapshot-mid-cleanup").at(dir)?;
            }
            match fs::remove_file(p) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(p, e)),
            }
        }
        if !obsolete.is_empty() {
            sync_dir(dir)?;
        }
        Ok(SnapshotInfo {
            lsn,
            path,
            body_bytes,
            segments_deleted: deleted,
        })
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
