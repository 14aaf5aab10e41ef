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
//!   encoded sketches (`engine/sketch.rs`). Or simhash within a Hamming distance over
//!   [`HammingIndex`] runs — the only method for clients that send 64-bit fingerprints.
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

mod maintain;
mod records;
mod recover;
mod sketch;
mod slab;
mod snapshot;
mod state;
mod types;

pub use types::*;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::thread::JoinHandle;
use std::time::Instant;

use neardup_index::Layout;
use neardup_store::{Store, StoreOptions};
use rayon::prelude::*;

use crate::detect::Detector;
use crate::detect::Verdict;
use crate::policy::{AutoDetector, AutoSketch, PolicyOptions};
use crate::Fingerprinter;
use maintain::{maintenance_loop, merge_runs};
use slab::Slot;
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
    Sketch(AutoSketch),
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
    snapshots: AtomicU64,
    recovered: u64,
    recovery_ms: u64,
    last_snapshot: Mutex<Instant>,
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

/// The configuration blob recorded in every store file.
fn config_blob(fp: &Fingerprinter, cfg: &EngineConfig) -> String {
    serde_json::json!({
        "engine": "neardup-engine/1",
        "detector": cfg.detector,
        "fingerprint": fp.descriptor(),
        "distance": cfg.distance,
        "retention_ms": cfg.retention.as_millis() as u64,
        "segments": cfg.segments,
        "max_docs": cfg.max_docs,
    })
    .to_string()
}

/// The first setting on which two configuration blobs (JSON) differ, with both values, e.g.
/// `retention_ms: stored 172800000, requested 86400000`.
fn config_difference(stored: &[u8], requested: &str) -> String {
    fn walk(path: &str, a: &serde_json::Value, b: &serde_json::Value) -> Option<String> {
        use serde_json::Value;
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                // `method` first: another method explains every other difference.
                let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
                keys.sort_by_key(|k| (k.as_str() != "method", k.as_str()));
                keys.dedup();
                keys.into_iter().find_map(|k| {
                    let p = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    let null = Value::Null;
                    walk(&p, x.get(k).unwrap_or(&null), y.get(k).unwrap_or(&null))
                })
            }
            _ if a == b => None,
            _ => Some(format!("{path}: stored {a}, requested {b}")),
        }
    }
    let requested: serde_json::Value =
        serde_json::from_str(requested).unwrap_or(serde_json::Value::Null);
    match serde_json::from_slice::<serde_json::Value>(stored) {
        Ok(stored) => walk("", &stored, &requested)
            .unwrap_or_else(|| "the same settings, encoded differently".into()),
        Err(_) => format!(
            "the stored configuration is not this engine's ({} bytes that are not JSON)",
            stored.len()
        ),
    }
}

fn check_id(id: &str) -> Result<()> {
    if id.is_empty() {
        return Err(EngineError::InvalidId {
            reason: "the id is empty".into(),
        });
    }
    if id.len() > MAX_ID_BYTES {
        return Err(EngineError::InvalidId {
            reason: format!(
                "the id is {} bytes long; at most {MAX_ID_BYTES} are allowed",
                id.len()
            ),
        });
    }
    Ok(())
}

impl Shared {
    fn now(&self) -> i64 {
        let t = self.clock.now_ms();
        self.now_hw.fetch_max(t, Ordering::SeqCst).max(t)
    }

    fn horizon(&self, inner: &Inner) -> Horizon {
        Horizon {
            expired_at: self.now().saturating_sub(self.retention_ms),
            floor: inner.floor,
        }
    }

    fn segment_of(&self, ts: i64) -> i64 {
        ts.div_euclid(self.segment_ms)
    }

    /// True when every timestamp of segment `s` is dead under `h`.
    fn segment_dead(&self, s: i64, h: Horizon) -> bool {
        let last = s
            .saturating_add(1)
            .saturating_mul(self.segment_ms)
            .saturating_sub(1);
        !h.live(last)
    }

    fn layout_for(&self, n: usize) -> Result<Layout> {
        let n = n.max(1) as u64;
        Ok(Layout::plan(
            n,
            self.cfg.distance,
            n.saturating_mul(self.cfg.index_bytes_per_doc),
        )?)
    }

    fn check_writable(&self) -> Result<()> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(EngineError::Unavailable {
                reason: "the engine has been shut down".into(),
            });
        }
        if let Some(r) = lock(&self.failed).as_ref() {
            return Err(EngineError::Unavailable { reason: r.clone() });
        }
        Ok(())
    }

    fn fail(&self, e: neardup_store::Error) -> EngineError {
        let mut f = lock(&self.failed);
        if f.is_none() {
            *f = Some(e.to_string());
        }
        EngineError::Store(e)
    }

    fn read(&self) -> RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Calls `f(handle, slot, distance)` for every live document within the distance of `fp`
    /// (a handle may be reported more than once).
    fn for_each_match(
        &self,
        inner: &Inner,
        h: Horizon,
        fp: u64,
        mut f: impl FnMut(u32, &Slot, u32),
    ) {
        let k = self.cfg.distance;
        let live_runs = || {
            inner
                .segments
                .iter()
                .filter(move |(&sid, _)| !self.segment_dead(sid, h))
                .flat_map(|(_, seg)| {
                    seg.runs
                        .iter()
                        .map(|r| &**r)
                        .chain(std::iter::once(&seg.head))
                })
                .filter(|run| !run.is_empty())
        };
        // Issue the cache misses of every run before scanning any (they overlap: one query
        // probes every run of every live segment).
        for stage in 0..2 {
            for run in live_runs() {
                run.prefetch(fp, k, stage);
            }
        }
        for run in live_runs() {
            // The distance was validated against the layouts at open.
            let _ = run.search_with(fp, k, |m| {
                let s = inner.slab.get(m.handle);
                if s.state == LIVE && s.fp == m.fingerprint && h.live(s.ts) {
                    f(m.handle, s, u32::from(m.distance));
                }
                std::ops::ControlFlow::Continue(())
            });
        }
    }

    /// The nearest live document (ties: oldest, then lowest handle).
    fn best(&self, inner: &Inner, h: Horizon, fp: u64) -> Option<(u32, u32)> {
        let mut best: Option<(u32, i64, u32)> = None;
        self.for_each_match(inner, h, fp, |handle, s, d| {
            let key = (d, s.ts, handle);
            if best.is_none_or(|b| key < b) {
                best = Some(key);
            }
        });
        best.map(|(d, _, handle)| (handle, d))
    }

    /// What `c` is checked by under the engine's detector.
    fn key_of(&self, c: &Content) -> Result<Key> {
        match (&self.auto, c) {
            (None, Content::Text(t)) => Ok(Key::Fingerprint(self.fingerprinter.simhash(t)?)),
            (None, Content::Fingerprint(f)) => Ok(Key::Fingerprint(*f)),
            (Some(a), Content::Text(t)) => Ok(Key::Sketch(a.sketcher.sketch(t)?)),
            (Some(_), Content::Fingerprint(_)) => Err(EngineError::TextRequired {
                detector: self.cfg.detector.name(),
            }),
        }
    }

    /// Every live document the sketch is a near-duplicate of, strongest first, as (verdict with
    /// `of` = handle, arrival sequence).
    fn sketch_matches(&self, inner: &Inner, h: Horizon, s: &AutoSketch) -> Vec<(Verdict, u64)> {
        let mut found = Vec::new();
        for (&sid, seg) in &inner.segments {
            if self.segment_dead(sid, h) {
                continue;
            }
            if let Some(x) = &seg.sketches {
                x.find(s, &mut found);
            }
        }
        found.retain(|(v, seq)| {
            let slot = inner.slab.get(v.of);
            slot.state == LIVE && slot.fp == *seq && h.live(slot.ts)
        });
        sketch::sort_strongest(&mut found);
        found
    }

    /// The strongest live match of `key`: `(handle, distance, similarity, stage)`.
    fn best_match(
        &self,
        inner: &Inner,
        h: Horizon,
        key: &Key,
    ) -> Option<(u32, Option<u32>, Option<f64>, Stage)> {
        match key {
            Key::Fingerprint(fp) => self
                .best(inner, h, *fp)
                .map(|(handle, d)| (handle, Some(d), None, Stage::Simhash)),
            Key::Sketch(s) => self
                .sketch_matches(inner, h, s)
                .first()
                .map(|(v, _)| (v.of, v.distance, v.similarity, v.stage)),
        }
    }

    /// Inserts a document into memory (caller holds the decide mutex and has logged it as
    /// record `seq`, with `blob` its encoded sketch under the `auto` detector).
    fn apply_insert(
        &self,
        inner: &mut Inner,
        key: Key,
        blob: &[u8],
        seq: u64,
        ts: i64,
        id: &str,
    ) -> Result<()> {
        match (key, &self.auto) {
            (Key::Fingerprint(fp), _) => {
                if inner.insert_doc(fp, ts, id, self.segment_ms, &self.head_layout)? {
                    self.wake.notify_all();
                }
            }
            (Key::Sketch(s), Some(a)) => inner.insert_sketch(
                seq,
                ts,
                id,
                s,
                blob,
                self.segment_ms,
                &self.head_layout,
                &|| a.make(),
            ),
            (Key::Sketch(_), None) => unreachable!("sketches exist only under the auto detector"),
        }
        Ok(())
    }

    /// Drops from the list of unacknowledged inserts those the store has acknowledged; once
    /// the engine has failed, takes the rest — whose writes were refused — back out of
    /// memory, so that no read sees them. Call without holding the engine's locks.
    fn settle(&self) {
        let ack = self.store.acknowledged_lsn();
        let refused: Vec<String> = {
            let mut q = lock(&self.unacked);
            while q.front().is_some_and(|(lsn, _)| *lsn <= ack) {
                q.pop_front();
            }
            if q.is_empty() || lock(&self.failed).is_none() {
                return;
            }
            q.drain(..).map(|(_, id)| id).collect()
        };
        let _decider = lock(&self.decide);
        let mut inner = self.write();
        for id in &refused {
            if let Some(h) = inner.lookup(id) {
                if inner.slab.get(h).state == LIVE {
                    inner.remove_doc(h, self.segment_ms);
                }
            }
        }
    }

    /// Waits until every record appended so far is durable, when the sync mode promises it
    /// (readers call it before they return a document, which may not be durable yet).
    fn settle_if_failed(&self) {
        if lock(&self.failed).is_some() {
            self.settle();
        }
    }

    fn await_durable(&self) -> Result<()> {
        if self.cfg.sync == SyncMode::Always
            && self.store.acknowledged_lsn() < self.store.last_lsn()
        {
            if let Err(e) = self.store.sync() {
                let e = self.fail(e);
                self.settle();
                return Err(e);
            }
        }
        Ok(())
    }

    /// Removes a live document from memory (caller holds the decide mutex and has logged it).
    fn apply_remove(&self, inner: &mut Inner, handle: u32) {
        inner.remove_doc(handle, self.segment_ms);
    }
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
        let (inner, recovered_docs) = match &auto {
            None => recover::recover(&dir, recovered, &cfg, horizon, segment_ms, &head_layout)?,
            Some(a) => recover::recover_sketches(
                &dir,
                recovered,
                horizon,
                segment_ms,
                &head_layout,
                &|| a.make(),
            )?,
        };

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
            snapshots: AtomicU64::new(0),
            recovered: recovered_docs,
            recovery_ms: started.elapsed().as_millis() as u64,
            last_snapshot: Mutex::new(Instant::now()),
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

    /// Checks `doc` against every live document and stores it if it is unique (and its
    /// timestamp is inside the window). Returns after the decision is durable (see the module
    /// docs).
    ///
    /// # Errors
    /// [`EngineError::InvalidId`], [`EngineError::Fingerprint`] for bad input;
    /// [`EngineError::Store`] / [`EngineError::Unavailable`] when the write could not be made
    /// durable (the document must then be treated as not stored).
    pub fn check_and_insert(&self, doc: Doc) -> Result<Outcome> {
        check_id(&doc.id)?;
        let key = self.shared.key_of(&doc.content)?;
        self.check_and_insert_many(vec![(doc.id, key, doc.timestamp_ms)])
            .pop()
            .expect("one result")
    }

    /// [`check_and_insert`](Self::check_and_insert) for many documents: sketches are computed
    /// in parallel, decisions are taken in order (a later document may be a duplicate of an
    /// earlier one in the same batch) and share one group commit. One result per input, in
    /// order.
    pub fn check_and_insert_batch(&self, docs: Vec<Doc>) -> Vec<Result<Outcome>> {
        let prepared: Vec<Result<(String, Key, Option<i64>)>> = docs
            .into_par_iter()
            .map(|d| {
                check_id(&d.id)?;
                let key = self.shared.key_of(&d.content)?;
                Ok((d.id, key, d.timestamp_ms))
            })
            .collect();
        let mut ok = Vec::new();
        let mut slots = Vec::with_capacity(prepared.len());
        for p in prepared {
            match p {
                Ok(x) => {
                    slots.push(None);
                    ok.push(x);
                }
                Err(e) => slots.push(Some(Err(e))),
            }
        }
        let mut results = self.check_and_insert_many(ok).into_iter();
        slots
            .into_iter()
            .map(|s| s.unwrap_or_else(|| results.next().expect("one result per document")))
            .collect()
    }

    fn check_and_insert_many(&self, docs: Vec<(String, Key, Option<i64>)>) -> Vec<Result<Outcome>> {
        self.decide_many(docs).wait()
    }

    /// Validates a document and computes its fingerprint or sketch (CPU-bound, thread-safe:
    /// run it on as many threads as you like) for [`decide`](Self::decide).
    ///
    /// # Errors
    /// [`EngineError::InvalidId`], [`EngineError::Fingerprint`],
    /// [`EngineError::TextRequired`].
    pub fn prepare(&self, doc: Doc) -> Result<PreparedDoc> {
        check_id(&doc.id)?;
        let key = self.shared.key_of(&doc.content)?;
        Ok(PreparedDoc {
            id: doc.id,
            key,
            timestamp_ms: doc.timestamp_ms,
        })
    }

    /// The pipelined form of [`check_and_insert_batch`](Self::check_and_insert_batch): takes
    /// the decisions in order and queues the log records, returning at once; the answers are
    /// released by [`Pending::wait`] once durable. A single thread calling `decide` while
    /// another waits lets many requests share one fdatasync without a thread per request.
    pub fn decide(&self, docs: Vec<PreparedDoc>) -> Pending {
        self.decide_many(
            docs.into_iter()
                .map(|d| (d.id, d.key, d.timestamp_ms))
                .collect(),
        )
    }

    fn decide_many(&self, docs: Vec<(String, Key, Option<i64>)>) -> Pending {
        let sh = &*self.shared;
        if let Err(e) = sh.check_writable() {
            // The reason itself, not the whole message (which would then repeat itself).
            let reason = match e {
                EngineError::Unavailable { reason } => reason,
                e => e.to_string(),
            };
            return Pending {
                shared: Arc::clone(&self.shared),
                out: docs
                    .iter()
                    .map(|_| {
                        Err(EngineError::Unavailable {
                            reason: reason.clone(),
                        })
                    })
                    .collect(),
                tickets: Vec::new(),
                any_dup: false,
                last_lsn: 0,
            };
        }
        let mut out = Vec::with_capacity(docs.len());
        let mut tickets = Vec::new();
        let mut any_dup = false;
        let mut blob = Vec::new();
        let last_lsn;
        {
            let _decider = lock(&sh.decide);
            for (id, key, ts) in docs {
                let now = sh.now();
                let ts = ts.map_or(now, |t| t.min(now));
                let fingerprint = key.fingerprint();
                let decided = {
                    let inner = sh.read();
                    let h = sh.horizon(&inner);
                    let same = inner
                        .lookup(&id)
                        .filter(|&s| {
                            let s = inner.slab.get(s);
                            s.state == LIVE && h.live(s.ts)
                        })
                        .map(|s| match fingerprint {
                            Some(fp) => (
                                s,
                                Some(crate::hamming(fp, inner.slab.get(s).fp)),
                                None,
                                Stage::Id,
                            ),
                            None => (s, None, None, Stage::Id),
                        });
                    match same.or_else(|| sh.best_match(&inner, h, &key)) {
                        Some((handle, distance, similarity, stage)) => Err(Decision::Duplicate {
                            of: inner.slab.id(handle).to_string(),
                            distance,
                            similarity,
                            stage,
                        }),
                        None => Ok(h.live(ts)),
                    }
                };
                match decided {
                    Err(decision) => {
                        any_dup = true;
                        sh.duplicates.fetch_add(1, Ordering::Relaxed);
                        out.push(Ok(Outcome {
                            fingerprint,
                            decision,
                            stored: false,
                            timestamp_ms: ts,
                        }));
                    }
                    Ok(store_it) => {
                        if store_it {
                            blob.clear();
                            let record = match &key {
                                Key::Fingerprint(fp) => records::encode_insert(*fp, ts, &id),
                                Key::Sketch(s) => {
                                    sketch::encode(s, &mut blob);
                                    records::encode_sketch_insert(ts, &id, &blob)
                                }
                            };
                            let seq = match sh.store.append(&record) {
                                Ok(t) => {
                                    let seq = t.lsn();
                                    tickets.push((out.len(), t));
                                    lock(&sh.unacked).push_back((seq, id.clone()));
                                    seq
                                }
                                Err(e) => {
                                    out.push(Err(sh.fail(e)));
                                    continue;
                                }
                            };
                            let mut inner = sh.write();
                            if let Err(e) = sh.apply_insert(&mut inner, key, &blob, seq, ts, &id) {
                                // Logged but not applicable (index full): refuse further writes.
                                *lock(&sh.failed) = Some(e.to_string());
                                out.push(Err(e));
                                continue;
                            }
                            sh.inserted.fetch_add(1, Ordering::Relaxed);
                        }
                        out.push(Ok(Outcome {
                            fingerprint,
                            decision: Decision::Unique,
                            stored: store_it,
                            timestamp_ms: ts,
                        }));
                    }
                }
            }
            // Only a duplicate answer needs it (its target may be any earlier record).
            last_lsn = if any_dup { sh.store.last_lsn() } else { 0 };
        }
        Pending {
            shared: Arc::clone(&self.shared),
            out,
            tickets,
            any_dup,
            last_lsn,
        }
    }

    /// Checks `content` without storing anything: the live near-duplicates, strongest first.
    ///
    /// # Errors
    /// [`EngineError::Fingerprint`] if the text has no fingerprint or sketch;
    /// [`EngineError::TextRequired`] for a fingerprint under the `auto` detector.
    pub fn query(&self, content: &Content) -> Result<QueryResult> {
        self.shared.settle_if_failed();
        let r = self.query_now(content)?;
        if !r.hits.is_empty() && self.shared.await_durable().is_err() {
            // Never point at a document whose write was refused (they were taken out).
            return self.query_now(content);
        }
        Ok(r)
    }

    fn query_now(&self, content: &Content) -> Result<QueryResult> {
        match self.shared.key_of(content)? {
            Key::Fingerprint(fp) => Ok(self.query_fingerprint_now(fp)),
            Key::Sketch(s) => {
                let sh = &*self.shared;
                let inner = sh.read();
                let h = sh.horizon(&inner);
                let mut found = sh.sketch_matches(&inner, h, &s);
                found.truncate(MAX_HITS);
                let hits = found
                    .into_iter()
                    .map(|(v, _)| Hit {
                        id: inner.slab.id(v.of).to_string(),
                        fingerprint: None,
                        distance: v.distance,
                        similarity: v.similarity,
                        stage: v.stage,
                        timestamp_ms: inner.slab.get(v.of).ts,
                    })
                    .collect();
                Ok(QueryResult {
                    fingerprint: None,
                    hits,
                })
            }
        }
    }

    /// [`query`](Self::query) for a fingerprint (simhash detector; under the `auto` detector
    /// nothing is indexed by fingerprint and the answer is empty).
    pub fn query_fingerprint(&self, fp: u64) -> QueryResult {
        self.shared.settle_if_failed();
        let r = self.query_fingerprint_now(fp);
        if !r.hits.is_empty() && self.shared.await_durable().is_err() {
            return self.query_fingerprint_now(fp);
        }
        r
    }

    fn query_fingerprint_now(&self, fp: u64) -> QueryResult {
        let sh = &*self.shared;
        let inner = sh.read();
        let h = sh.horizon(&inner);
        let mut found: Vec<(u32, i64, u32)> = Vec::new();
        if sh.auto.is_none() {
            sh.for_each_match(&inner, h, fp, |handle, s, d| found.push((d, s.ts, handle)));
        }
        found.sort_unstable();
        found.dedup_by_key(|x| x.2);
        found.truncate(MAX_HITS);
        let hits = found
            .into_iter()
            .map(|(d, ts, handle)| {
                let s = inner.slab.get(handle);
                Hit {
                    id: inner.slab.id(handle).to_string(),
                    fingerprint: Some(s.fp),
                    distance: Some(d),
                    similarity: None,
                    stage: Stage::Simhash,
                    timestamp_ms: ts,
                }
            })
            .collect();
        QueryResult {
            fingerprint: Some(fp),
            hits,
        }
    }

    /// [`query`](Self::query) for many inputs, in parallel; one result per input, in order.
    pub fn query_batch(&self, contents: &[Content]) -> Vec<Result<QueryResult>> {
        contents.par_iter().map(|c| self.query(c)).collect()
    }

    /// The stored, live document with this id.
    pub fn get(&self, id: &str) -> Option<DocInfo> {
        let sh = &*self.shared;
        sh.settle_if_failed();
        let info = self.get_acknowledged(id)?;
        // Never show a document whose write may still be refused.
        match sh.await_durable() {
            Ok(()) => Some(info),
            // The refused documents were taken out: what is left is acknowledged.
            Err(_) => self.get_acknowledged(id),
        }
    }

    /// The live document `id` without waiting (after a failure has been settled).
    fn get_acknowledged(&self, id: &str) -> Option<DocInfo> {
        let sh = &*self.shared;
        let inner = sh.read();
        let h = sh.horizon(&inner);
        let handle = inner.lookup(id)?;
        let s = inner.slab.get(handle);
        (s.state == LIVE && h.live(s.ts)).then(|| DocInfo {
            id: inner.slab.id(handle).to_string(),
            fingerprint: sh.auto.is_none().then_some(s.fp),
            timestamp_ms: s.ts,
        })
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
                + seg.sketches.as_ref().map_or(0, |x| x.heap_bytes() as u64);
        }
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

/// A validated, sketched document (from [`Engine::prepare`]).
#[derive(Debug, Clone)]
pub struct PreparedDoc {
    /// Its id.
    pub id: String,
    key: Key,
    /// Its timestamp, if supplied.
    pub timestamp_ms: Option<i64>,
}

impl PreparedDoc {
    /// Its simhash (simhash detector only).
    pub fn fingerprint(&self) -> Option<u64> {
        self.key.fingerprint()
    }
}

/// Decisions taken by [`Engine::decide`], released by [`wait`](Self::wait) once durable.
#[must_use = "answers may only be released after Pending::wait"]
pub struct Pending {
    shared: Arc<Shared>,
    out: Vec<Result<Outcome>>,
    /// `(position in out, ticket)` of each stored document.
    tickets: Vec<(usize, neardup_store::Ticket)>,
    any_dup: bool,
    last_lsn: u64,
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending")
            .field("documents", &self.out.len())
            .finish_non_exhaustive()
    }
}

impl Pending {
    /// Blocks until every stored document is durable (per the sync mode) and every duplicate
    /// answer points at a durable document; returns one result per document, in order.
    pub fn wait(self) -> Vec<Result<Outcome>> {
        let Pending {
            shared,
            mut out,
            tickets,
            any_dup,
            last_lsn,
        } = self;
        let sh = &*shared;
        // Records are acknowledged in LSN order, so waiting for the last ticket covers all of
        // them (one wait instead of one per document); only on failure is each ticket asked.
        let mut tickets = tickets;
        if let Some((i, last)) = tickets.pop() {
            if let Err(e) = last.wait() {
                out[i] = Err(sh.fail(e));
                for (i, t) in tickets {
                    if let Err(e) = t.wait() {
                        out[i] = Err(sh.fail(e));
                    }
                }
            }
        }
        // A duplicate answer may point at a document whose record is not yet durable.
        if any_dup && sh.cfg.sync == SyncMode::Always && sh.store.durable_lsn() < last_lsn {
            if let Err(e) = sh.store.sync() {
                let e = sh.fail(e);
                sh.settle();
                let reason = e.to_string();
                for o in out.iter_mut() {
                    if o.is_ok() {
                        *o = Err(EngineError::Unavailable {
                            reason: reason.clone(),
                        });
                    }
                }
            }
        }
        sh.settle();
        out
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.stop_maintenance();
    }
}
