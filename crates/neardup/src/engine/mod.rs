//! The durable online check-and-insert engine: "have I seen a near-duplicate of this document in
//! the last two days? if not, remember it" — the crawler's question, answered in microseconds,
//! with every "unique" answer durable before it leaves.
//!
//! # What it owns
//! - The in-memory state: document records (id, timestamp, and the simhash or the arrival
//!   sequence) in a slab addressed by 32-bit handles, an id map, and **time segments** — one
//!   index per `retention / segments` slice of time (by the documents' timestamps).
//! - **The detector** ([`EngineDetector`]): by default the `auto` detector of `neardup dedup`
//!   (exact digest → short-text path → MinHash LSH, [`crate::policy`]), with the same options
//!   and defaults, so the service answers what batch dedup answers on the same documents in the
//!   same order (the online rule, [`crate::dedup::Linkage::Kept`]). Each segment holds its own
//!   [`crate::policy::AutoDetector`] index (band tables, exact digests, short texts) and the
//!   encoded sketches (`engine/sketch.rs`). With it, by default, the **template veto** of
//!   `neardup dedup` ([`crate::template_veto`]): the engine counts how many stored documents
//!   hold each line (rebuilt from the log and snapshots like everything else) and each segment
//!   holds its documents' distinct parts; a request's own documents count as dedup counts a
//!   batch's (`engine/veto.rs` says where the two differ). Or simhash within a Hamming distance over
//!   [`HammingIndex`](neardup_index::HammingIndex) runs — the only method for clients that send 64-bit fingerprints.
//! - Durability through [`neardup_store::Store`]: every stored document (with its sketch) and
//!   every removal is a log record (group commit); the whole state is snapshotted
//!   periodically (streamed, never held twice in memory) and on [`Engine::shutdown`]. Recovery
//!   loads the newest snapshot, replays the log, and rebuilds each segment's index.
//! - Retention: a document is a candidate while `timestamp > now - retention` (and not below the
//!   `max_docs` floor). Expired documents are ignored at once; their memory comes back when the
//!   whole segment has expired and is dropped by the maintenance task.
//!
//! # Invariants
//! - **One decider**: checks that may insert, and removals, run one at a time under a mutex, in
//!   arrival order; each decision sees every earlier insert. Two copies arriving at the same
//!   instant: exactly one is `Unique`.
//! - **Readers do not wait for deciders**: [`Engine::query`], [`Engine::get`] and
//!   [`Engine::stats`] take a read lock that writers hold only for single in-memory inserts
//!   (microseconds); index merges and expiry build outside the lock and swap pointers in.
//! - **Durability**: under [`SyncMode::Always`] (the default) a `Unique` answer is returned only
//!   after its log record is fdatasynced (group commit); a `Duplicate` answer, a query hit and a
//!   `get` are returned only once the document they show is durable. A document whose log
//!   write is refused is taken back out of memory: no read ever sees it. Duplicates themselves
//!   are **not stored** (the engine's memory is what the window holds: the unique documents).
//! - **Ids**: an id names at most one stored document. Submitting an id that is already stored
//!   (and not expired) never stores it twice: the answer is `Duplicate { of: <that same id>,
//!   stage: Id }`, which also makes retries after a lost response harmless.
//! - **Arrival sequence**: under the `auto` detector a document's slot holds the LSN of its
//!   insert record; ties between equally strong matches go to the earlier document, before and
//!   after a restart, and an index entry whose slot no longer holds its sequence is ignored.
//! - **After a failed write the engine refuses writes until it is restarted** (answers 503
//!   through the server; `/healthz` says why). Like PostgreSQL after an fsync failure: once
//!   an fdatasync has failed, the kernel may have dropped the dirty pages, so what the log
//!   holds is known only by reading it back — which is what recovery does, in seconds. A
//!   crawler retries a 503 later; nothing it was told is stored is lost, and nothing it was
//!   refused is visible in the meantime.
//! - The data directory records the configuration that affects answers (detector and its
//!   options, fingerprint descriptor, distance, retention, segments, `max_docs`); reopening
//!   with another one fails with [`EngineError::ConfigMismatch`], naming the setting and both
//!   values.
//!
//! # Example
//! The default detector, as `neardup dedup`: a copy with one character replaced is found by
//! MinHash, and the answer says which stage matched and how similar the two are.
//! ```
//! use neardup::engine::{Decision, Doc, Engine, EngineConfig, ManualClock, Stage};
//! use neardup::{FingerprintConfig, Fingerprinter};
//! use std::sync::Arc;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
//! let clock = Arc::new(ManualClock::new(1_700_000_000_000));
//! let cfg = EngineConfig { maintenance_interval: None, ..EngineConfig::default() };
//! let engine = Engine::open(dir.path(), fp, cfg, clock).unwrap();
//! let text = "新华社北京电 今天上午，国务院新闻办公室举行新闻发布会，介绍今年前三季度经济运行情况。".repeat(6);
//! let copy = text.replacen("上午", "下午", 1);
//! assert_eq!(engine.check_and_insert(Doc::text("a", text)).unwrap().decision, Decision::Unique);
//! match engine.check_and_insert(Doc::text("b", copy)).unwrap().decision {
//!     Decision::Duplicate { of, stage, similarity, .. } => {
//!         assert_eq!((of.as_str(), stage), ("a", Stage::Minhash));
//!         assert!(similarity.unwrap() > 0.8);
//!     }
//!     d => panic!("{d:?}"),
//! }
//! ```
//!
//! The simhash detector, with fingerprint-only documents and retention:
//! ```
//! use neardup::engine::{Decision, Doc, Engine, EngineConfig, EngineDetector, ManualClock};
//! use neardup::{FingerprintConfig, Fingerprinter};
//! use std::sync::Arc;
//! use std::time::Duration;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
//! let clock = Arc::new(ManualClock::new(1_700_000_000_000));
//! // The simhash detector: clients may send 64-bit fingerprints.
//! let cfg = EngineConfig {
//!     detector: EngineDetector::Simhash,
//!     maintenance_interval: None,
//!     ..EngineConfig::default()
//! };
//! let engine = Engine::open(dir.path(), fp.clone(), cfg.clone(), clock.clone()).unwrap();
//!
//! let a = engine.check_and_insert(Doc::text("a", "你妈妈喊你回家吃饭哦，回家罗回家罗")).unwrap();
//! assert_eq!(a.decision, Decision::Unique);
//! let b = engine.check_and_insert(Doc::fingerprint("b", a.fingerprint.unwrap() ^ 0b101)).unwrap();
//! assert!(matches!(b.decision, Decision::Duplicate { ref of, distance: Some(2), .. } if of == "a"));
//!
//! // Two days later "a" has expired.
//! clock.advance(Duration::from_secs(2 * 86_400));
//! engine.maintain().unwrap();
//! assert!(engine.get("a").is_none());
//! engine.shutdown().unwrap();
//! drop(engine);
//!
//! // Durable: reopening finds what was stored (here nothing is left in the window).
//! let engine = Engine::open(dir.path(), fp, cfg, clock).unwrap();
//! assert_eq!(engine.stats().documents, 0);
//! ```

mod config;
mod decide;
mod json;
mod maintain;
mod read;
mod records;
mod recover;
mod replicate;
mod shared;
mod sketch;
mod slab;
mod snapshot;
mod state;
mod types;
mod veto;

pub use config::config_difference;
pub use decide::{Pending, PreparedDoc};
pub use json::{DocInfoJson, HitJson, OutcomeJson, QueryJson};
pub use replicate::remove_record;
pub use types::*;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};
use std::thread::JoinHandle;
use std::time::Instant;

use neardup_index::Layout;
use neardup_store::{Store, StoreOptions};

use crate::policy::{AutoDetector, PolicyOptions};
use crate::template_veto::VetoRules;
use crate::Fingerprinter;
use config::{check_id, config_blob};
use maintain::{maintenance_loop, merge_runs};
use state::{Horizon, Inner, LIVE};

/// Longest accepted document id, in bytes.
pub const MAX_ID_BYTES: usize = 1024;
/// Most hits a [`Engine::query`] returns (nearest first).
pub const MAX_HITS: usize = 100;
/// Entries of a segment's mutable head index before it is frozen into an immutable run (the
/// index merges its insert delta beyond this, which would stall the writer).
const HEAD_MAX: usize = 1 << 16;
/// Slots per slab chunk (chunks never move, so growth never copies).
const CHUNK: usize = 1 << 16;
/// Entries filtered per read-lock acquisition in merges, expiry and snapshots.
const LOCK_BATCH: usize = 1 << 12;

/// The `auto` detector's parts: a detector used only to sketch (sketches are pure), and what
/// builds each segment's index.
struct Auto {
    sketcher: AutoDetector,
    fp: Fingerprinter,
    opts: PolicyOptions,
    /// The template veto's rules, when it is on.
    veto: Option<VetoRules>,
}

impl Auto {
    /// A segment's empty detector (its options were validated at open).
    fn make(&self) -> AutoDetector {
        AutoDetector::new(self.fp.clone(), self.opts.clone()).expect("validated at open")
    }
}

/// What a document is checked by: its simhash, or its `auto` sketch.
#[derive(Debug, Clone)]
enum Key {
    Fingerprint(u64),
    Sketch(Box<sketch::DocSketch>),
}

/// What a key is computed for: a decision (check and insert) or a query (every match
/// listed). A decision needs only the strongest match, so some of the template veto's work
/// can be put off ([`sketch::Deferred`]); a query's list needs all of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Purpose {
    Decide,
    Query,
}

impl Key {
    fn fingerprint(&self) -> Option<u64> {
        match self {
            Key::Fingerprint(f) => Some(*f),
            Key::Sketch(_) => None,
        }
    }
}

struct Shared {
    dir: PathBuf,
    cfg: EngineConfig,
    fingerprinter: Fingerprinter,
    auto: Option<Auto>,
    clock: Arc<dyn Clock>,
    store: Store,
    inner: RwLock<Inner>,
    decide: Mutex<()>,
    head_layout: Layout,
    segment_ms: i64,
    retention_ms: i64,
    /// Monotonic "now" (the clock never appears to go backwards).
    now_hw: AtomicI64,
    closed: AtomicBool,
    failed: Mutex<Option<String>>,
    /// `(LSN, id)` of stored documents whose records are not yet acknowledged, oldest first
    /// (taken back out of memory if the store refuses them: [`Shared::settle`]).
    unacked: Mutex<std::collections::VecDeque<(u64, String)>>,
    inserted: AtomicU64,
    duplicates: AtomicU64,
    removed: AtomicU64,
    expired: AtomicU64,
    merges: AtomicU64,
    freezes: AtomicU64,
    snapshots: AtomicU64,
    recovered: u64,
    recovery_ms: u64,
    last_snapshot: Mutex<Instant>,
    /// When maintenance last let go of the spill files' mapped pages.
    last_release: Mutex<Instant>,
    maintain_lock: Mutex<()>,
    stop: Mutex<bool>,
    wake: Condvar,
}

/// The engine. `Send + Sync`: share it with `Arc<Engine>`.
pub struct Engine {
    shared: Arc<Shared>,
    maintenance: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("dir", &self.shared.dir)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Engine {
    /// Opens (creating if needed) the engine's data directory `dir` and recovers its state.
    ///
    /// # Errors
    /// [`EngineError::InvalidConfig`] for out-of-range settings,
    /// [`EngineError::ConfigMismatch`] if `dir` was written with another configuration,
    /// [`EngineError::Store`] / [`EngineError::Corrupt`] for I/O errors and damage.
    pub fn open(
        dir: impl AsRef<Path>,
        fingerprinter: Fingerprinter,
        cfg: EngineConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<Engine> {
        Engine::open_with_progress(dir, fingerprinter, cfg, clock, &|_| {})
    }

    /// [`Engine::open`], telling `progress` how far the recovery has come: after each chunk
    /// of the snapshot's documents, then once the log is replayed (what a service prints
    /// while a large window comes back).
    pub fn open_with_progress(
        dir: impl AsRef<Path>,
        fingerprinter: Fingerprinter,
        cfg: EngineConfig,
        clock: Arc<dyn Clock>,
        progress: &(dyn Fn(RecoveryProgress) + Sync),
    ) -> Result<Engine> {
        let started = Instant::now();
        let dir = dir.as_ref().to_path_buf();
        let retention_ms = i64::try_from(cfg.retention.as_millis()).unwrap_or(i64::MAX);
        if retention_ms < 1 {
            return Err(EngineError::InvalidConfig(
                "retention must be at least 1 ms".into(),
            ));
        }
        if cfg.segments == 0 || cfg.segments > 1024 {
            return Err(EngineError::InvalidConfig(format!(
                "segments must be 1 ..= 1024, got {}",
                cfg.segments
            )));
        }
        if cfg.max_docs == Some(0) {
            return Err(EngineError::InvalidConfig(
                "max-docs must be at least 1".into(),
            ));
        }
        let segment_ms = (retention_ms / i64::from(cfg.segments)).max(1);
        let head_layout = Layout::plan(
            HEAD_MAX as u64,
            cfg.distance,
            HEAD_MAX as u64 * cfg.index_bytes_per_doc,
        )
        .and_then(|l| l.check_distance(cfg.distance).map(|_| l))
        .map_err(|e| EngineError::InvalidConfig(format!("distance {}: {e}", cfg.distance)))?;
        if cfg.distance > 16 {
            return Err(EngineError::InvalidConfig(format!(
                "distance must be 0 ..= 16, got {}",
                cfg.distance
            )));
        }
        let auto = match &cfg.detector {
            EngineDetector::Simhash => None,
            EngineDetector::Auto(opts) => Some(Auto {
                sketcher: AutoDetector::new(fingerprinter.clone(), opts.clone())
                    .map_err(|e| EngineError::InvalidConfig(format!("auto detector: {e}")))?,
                fp: fingerprinter.clone(),
                opts: opts.clone(),
                veto: cfg
                    .template_veto
                    .clone()
                    .map(|o| VetoRules::new(fingerprinter.clone(), o))
                    .transpose()
                    .map_err(|e| EngineError::InvalidConfig(format!("template veto: {e}")))?,
            }),
        };
        let blob = config_blob(&fingerprinter, &cfg);
        let opts = StoreOptions {
            sync: cfg.sync,
            config: blob.clone().into_bytes(),
            segment_bytes: cfg.log_segment_bytes.max(1024),
            ..StoreOptions::default()
        };
        let (store, recovered) = Store::open(&dir, opts).map_err(|e| match e {
            neardup_store::Error::ConfigMismatch { stored, .. } => EngineError::ConfigMismatch {
                dir: dir.clone(),
                difference: config_difference(&stored, &blob),
                config: blob.clone(),
            },
            e => EngineError::Store(e),
        })?;
        let now = clock.now_ms();
        let horizon = Horizon {
            expired_at: now.saturating_sub(retention_ms),
            floor: i64::MIN,
        };
        // The last report of the snapshot, repeated as the finished one.
        let last = Mutex::new(RecoveryProgress {
            snapshot_done: 0,
            snapshot_total: 0,
            finished: false,
        });
        let (inner, recovered_docs) = match &auto {
            None => recover::recover(&dir, recovered, &cfg, horizon, segment_ms, &head_layout)?,
            Some(a) => recover::recover_sketches(
                &dir,
                recovered,
                horizon,
                segment_ms,
                &head_layout,
                &|| a.make(),
                &|p| {
                    *lock(&last) = p;
                    progress(p)
                },
            )?,
        };
        progress(RecoveryProgress {
            finished: true,
            ..*lock(&last)
        });

        let shared = Arc::new(Shared {
            dir,
            fingerprinter,
            auto,
            clock,
            store,
            inner: RwLock::new(inner),
            decide: Mutex::new(()),
            head_layout,
            segment_ms,
            retention_ms,
            now_hw: AtomicI64::new(now),
            closed: AtomicBool::new(false),
            failed: Mutex::new(None),
            unacked: Mutex::new(Default::default()),
            inserted: AtomicU64::new(0),
            duplicates: AtomicU64::new(0),
            removed: AtomicU64::new(0),
            expired: AtomicU64::new(0),
            merges: AtomicU64::new(0),
            freezes: AtomicU64::new(0),
            snapshots: AtomicU64::new(0),
            recovered: recovered_docs,
            recovery_ms: started.elapsed().as_millis() as u64,
            last_snapshot: Mutex::new(Instant::now()),
            // The first maintenance releases (a restart's or a preload's reads).
            last_release: Mutex::new(
                Instant::now()
                    .checked_sub(maintain::RELEASE_INTERVAL)
                    .unwrap_or_else(Instant::now),
            ),
            maintain_lock: Mutex::new(()),
            stop: Mutex::new(false),
            wake: Condvar::new(),
            cfg,
        });
        // Log replay inserts through the segments' heads: merge the runs it froze now, so that
        // queries do not probe them one by one until the first maintenance round.
        merge_runs(&shared)?;
        let maintenance = shared.cfg.maintenance_interval.map(|iv| {
            let sh = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("neardup-maintenance".into())
                .spawn(move || maintenance_loop(sh, iv))
                .expect("spawn maintenance thread")
        });
        Ok(Engine {
            shared,
            maintenance: Mutex::new(maintenance),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &EngineConfig {
        &self.shared.cfg
    }

    /// The fingerprinter used for text documents.
    pub fn fingerprinter(&self) -> &Fingerprinter {
        &self.shared.fingerprinter
    }

    /// The configuration blob recorded in the data directory (JSON).
    pub fn config_descriptor(&self) -> String {
        config_blob(&self.shared.fingerprinter, &self.shared.cfg)
    }

    /// Removes the live document `id`; returns whether there was one. Durable on return (per
    /// the sync mode).
    ///
    /// # Errors
    /// [`EngineError::InvalidId`]; [`EngineError::Store`] / [`EngineError::Unavailable`] when
    /// the removal could not be logged.
    pub fn remove(&self, id: &str) -> Result<bool> {
        check_id(id)?;
        let sh = &*self.shared;
        sh.check_writable()?;
        let ticket = {
            let _decider = lock(&sh.decide);
            let handle = {
                let inner = sh.read();
                let h = sh.horizon(&inner);
                match inner.lookup(id) {
                    Some(s) if inner.slab.get(s).state == LIVE && h.live(inner.slab.get(s).ts) => s,
                    _ => return Ok(false),
                }
            };
            let t = sh
                .store
                .append(&records::encode_remove(id))
                .map_err(|e| sh.fail(e))?;
            sh.apply_remove(&mut sh.write(), handle);
            sh.removed.fetch_add(1, Ordering::Relaxed);
            t
        };
        ticket.wait().map_err(|e| sh.fail(e))?;
        Ok(true)
    }

    /// [`remove`](Self::remove) for many ids; one result per id, in order.
    pub fn remove_batch(&self, ids: &[&str]) -> Vec<Result<bool>> {
        ids.iter().map(|id| self.remove(id)).collect()
    }

    /// Counters and sizes.
    pub fn stats(&self) -> EngineStats {
        let sh = &*self.shared;
        let st = sh.store.stats();
        let inner = sh.read();
        let h = sh.horizon(&inner);
        let mut s = EngineStats {
            inserted: sh.inserted.load(Ordering::Relaxed),
            duplicates: sh.duplicates.load(Ordering::Relaxed),
            removed: sh.removed.load(Ordering::Relaxed),
            expired: sh.expired.load(Ordering::Relaxed),
            merges: sh.merges.load(Ordering::Relaxed),
            freezes: sh.freezes.load(Ordering::Relaxed),
            snapshots: sh.snapshots.load(Ordering::Relaxed),
            last_lsn: st.last_lsn,
            durable_lsn: st.durable_lsn,
            snapshot_lsn: sh.store.snapshot_lsn(),
            log_syncs: st.fsyncs,
            recovered_documents: sh.recovered,
            recovery_ms: sh.recovery_ms,
            ..EngineStats::default()
        };
        for (&sid, seg) in &inner.segments {
            if !sh.segment_dead(sid, h) {
                s.documents += seg.live;
                s.segments += 1;
            }
            s.runs += seg.runs.len() + usize::from(!seg.head.is_empty());
            s.index_bytes += seg.runs.iter().map(|r| r.heap_bytes() as u64).sum::<u64>()
                + seg.head.heap_bytes() as u64
                + seg.sketches.as_ref().map_or(0, |x| x.heap_bytes() as u64)
                + seg.observed.capacity() as u64 * 13;
            s.spilled_bytes += seg.sketches.as_ref().map_or(0, |x| x.spilled_bytes());
        }
        s.index_bytes += inner.lines.heap_bytes() as u64;
        s.record_bytes = (inner.slab.heap_bytes()
            + inner.ids.heap_bytes()
            + (inner.free.capacity() + inner.parked.capacity()) * 4)
            as u64;
        s
    }

    /// `Ok` while the engine accepts writes; otherwise the reason.
    pub fn health(&self) -> std::result::Result<(), String> {
        self.shared.check_writable().map_err(|e| e.to_string())
    }

    /// Runs one round of maintenance now: enforces `max_docs`, drops expired segments
    /// (reclaiming their memory), freezes and merges index runs, and snapshots when due. The
    /// background task calls this every `maintenance_interval`.
    ///
    /// # Errors
    /// Store errors while logging the `max_docs` floor or writing a snapshot.
    pub fn maintain(&self) -> Result<()> {
        maintain::maintain(&self.shared)
    }

    /// Writes a snapshot of the whole state now (streamed; checks and queries continue).
    ///
    /// # Errors
    /// Store errors.
    pub fn snapshot(&self) -> Result<()> {
        snapshot::snapshot(&self.shared)
    }

    /// Stops the maintenance task, syncs the log and writes a final snapshot; afterwards the
    /// engine refuses writes ([`EngineError::Unavailable`]) but still answers reads. Call it
    /// once in-flight requests are done.
    ///
    /// # Errors
    /// Store errors while syncing or snapshotting.
    pub fn shutdown(&self) -> Result<()> {
        self.stop_maintenance();
        let sh = &*self.shared;
        {
            let _decider = lock(&sh.decide);
            sh.closed.store(true, Ordering::SeqCst);
        }
        sh.store.sync().map_err(EngineError::Store)?;
        if sh.store.last_lsn() > sh.store.snapshot_lsn() {
            snapshot::snapshot(sh)?;
        }
        Ok(())
    }

    fn stop_maintenance(&self) {
        *lock(&self.shared.stop) = true;
        self.shared.wake.notify_all();
        if let Some(h) = lock(&self.maintenance).take() {
            let _ = h.join();
        }
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.stop_maintenance();
    }
}
