//! How does an appended record become acknowledged? Leader/follower group
//! commit: the shared queue, the flush role, rotation and the background
//! writer thread.
//!
//! Invariants:
//! * At most one thread holds the flush role (`State::flushing`); only it
//!   touches the active segment file, so `Shared::file` is never contended.
//! * Watermarks only grow: `synced <= written < next_lsn`; a [`Ticket`] is
//!   acknowledged once the sync mode's watermark ([`Shared::mark`]) reaches
//!   its LSN.
//! * Before a rotation creates the next segment, the old one is fdatasync'ed,
//!   so only the last segment can ever end in a torn frame.
//! * After a write or sync error nothing more is acknowledged: the failure is
//!   recorded in `State::failed` and every later call is refused.

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::files::create_segment;
use super::{fp, lock, StoreOptions, SyncMode};
use crate::error::{Error, IoContext, Result};
use crate::format::{self, FRAME_HEADER, MAX_RECORD_BYTES};
use crate::Lsn;

/// Frames queued for the next flush; a chunk may begin a new segment.
struct Chunk {
    new_segment: Option<Lsn>,
    bytes: Vec<u8>,
    last_lsn: Lsn,
}

/// The group-commit state, under `Shared::state`.
pub(super) struct State {
    queue: Vec<Chunk>,
    queued_bytes: usize,
    pub(super) next_lsn: Lsn,
    /// Size of the current segment including queued frames.
    seg_bytes: u64,
    seg_records: u64,
    /// Highest LSN handed to the OS.
    written: Lsn,
    /// Highest LSN fdatasync'ed.
    pub(super) synced: Lsn,
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
    pub(super) fsyncs: u64,
    pub(super) shutdown: bool,
    /// The background thread has finished its final flush: nothing is written any more.
    closed: bool,
    pub(super) failed: Option<String>,
    pub(super) snapshot_lsn: Lsn,
}

impl State {
    /// Why no more work is accepted, if so: an earlier failure, or close.
    pub(super) fn refusal(&self) -> Option<Error> {
        match (&self.failed, self.closed) {
            (Some(reason), _) => Some(Error::Failed {
                reason: reason.clone(),
            }),
            (None, true) => Some(Error::Closed),
            (None, false) => None,
        }
    }
}

/// Everything the store's threads share: the options, the queue and watermarks
/// under one mutex, the condition variables and the active segment.
pub(super) struct Shared {
    pub(super) dir: PathBuf,
    pub(super) opts: StoreOptions,
    header_len: u64,
    pub(super) state: Mutex<State>,
    /// Signals the writer: work queued, sync requested or shutdown.
    pub(super) work: Condvar,
    /// Signals appenders: watermarks advanced, queue drained or failure.
    done: Condvar,
    /// Live segments in LSN order; the last is the one being appended to.
    pub(super) segments: Mutex<Vec<(Lsn, PathBuf)>>,
    /// The active segment; locked only by the thread holding the flush role
    /// (`State::flushing`), so it is never contended.
    file: Mutex<File>,
}

/// Where appending continues after recovery: the active segment and the
/// counters the queue starts from.
pub(super) struct Tail {
    /// The active segment, opened for appending.
    pub(super) file: File,
    /// Its current size in bytes (header included).
    pub(super) seg_bytes: u64,
    /// Records it holds.
    pub(super) seg_records: u64,
    /// Live segments in LSN order; the last is the active one.
    pub(super) segments: Vec<(Lsn, PathBuf)>,
    /// LSN the next append receives.
    pub(super) next_lsn: Lsn,
    /// LSN of the newest snapshot (0 if none).
    pub(super) snapshot_lsn: Lsn,
    /// Length of a file header under this store's config.
    pub(super) header_len: u64,
}

impl Shared {
    /// The shared state of a freshly recovered store: everything up to
    /// `next_lsn - 1` is written and synced, nothing is queued.
    pub(super) fn new(dir: PathBuf, opts: StoreOptions, tail: Tail) -> Shared {
        let Tail {
            file,
            seg_bytes,
            seg_records,
            segments,
            next_lsn,
            snapshot_lsn,
            header_len,
        } = tail;
        Shared {
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
                snapshot_lsn,
            }),
            work: Condvar::new(),
            done: Condvar::new(),
            segments: Mutex::new(segments),
            file: Mutex::new(file),
            opts,
        }
    }
}

/// Starts the background writer thread ([`Shared::background`]).
pub(super) fn start_writer(shared: &Arc<Shared>) -> Result<JoinHandle<()>> {
    let bg = Arc::clone(shared);
    std::thread::Builder::new()
        .name("neardup-store-writer".into())
        .spawn(move || bg.background())
        .map_err(|e| Error::io(&shared.dir, e))
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
    /// Frames `payload` into the queue under the next LSN (see
    /// [`Store::append`](super::Store::append)).
    pub(super) fn append(self: &Arc<Self>, payload: &[u8]) -> Result<Ticket> {
        if payload.is_empty() || payload.len() > MAX_RECORD_BYTES {
            return Err(Error::InvalidRecord {
                len: payload.len(),
                max: MAX_RECORD_BYTES,
            });
        }
        let frame = (FRAME_HEADER + payload.len()) as u64;
        let sh = &**self;
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
            shared: Arc::clone(self),
        })
    }

    /// Makes every record appended so far durable (see [`Store::sync`](super::Store::sync)).
    pub(super) fn sync(&self) -> Result<()> {
        let mut st = lock(&self.state);
        let target = st.next_lsn - 1;
        st.sync_requested = st.sync_requested.max(target);
        while st.synced < target {
            if let Some(e) = st.refusal() {
                return Err(e);
            }
            st = self.flush_or_wait(st, true);
        }
        Ok(())
    }

    /// The acknowledgement watermark of the sync mode.
    pub(super) fn mark(&self, st: &State) -> Lsn {
        if self.opts.sync == SyncMode::Always {
            st.synced
        } else {
            st.written
        }
    }

    pub(super) fn active_path(&self) -> PathBuf {
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
