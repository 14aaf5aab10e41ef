//! The Redis backend of every detector: Redis holds the shared, ordered log (a Stream) and each
//! instance holds the embedded engine's index as derived state.
//!
//! # What it owns
//! - In Redis, under the key prefix `P` (`log.rs`): the Stream `{P}:log` of the engine's own
//!   records (a document decided unique and stored, with its sketch; under the template veto
//!   the counted lines of a document answered duplicate; a removal), the position
//!   of its last entry `{P}:last`, and the configuration `{P}:meta` that every instance must
//!   share (the engine's configuration descriptor: detector and its options, fingerprint
//!   options, retention, …).
//! - In each instance: an [`Engine`] in a private directory (deleted when the instance stops),
//!   rebuilt at start by applying the whole Stream, and the position of the last entry it has
//!   applied.
//!
//! # How a batch is decided
//! 1. Its documents are sketched (in parallel, outside every lock) and queued for the
//!    instance's one decider task, which takes every queued batch in one round.
//! 2. The decider decides them on its engine, as the embedded backend does (same detector,
//!    same arrival rule), storing the unique ones.
//! 3. One script call appends the stored documents' records (and the duplicates' counted
//!    lines) **only if the Stream still ends where this instance's applied position is** (the
//!    answers were decided on everything before). It succeeds: the answers are released. Or
//!    someone appended first: the instance takes its stored documents and counted lines back
//!    out, applies the entries it missed, and decides the batch again. A batch of duplicates only appends nothing, but the same call still confirms
//!    that nothing was missed.
//!
//! # Invariants
//! - **One order**: every instance applies the same entries in the same order, so instances at
//!   the same position hold the same documents and answer alike; every answer is the answer a
//!   single embedded engine would give for the documents in the Stream's order. Two copies
//!   sent at once to two instances: exactly one is `Unique`.
//! - **Nothing acknowledged that Redis did not apply**: an answer is released only after the
//!   script call that confirmed it returned. Any Redis error answers
//!   [`EngineError::Unavailable`] (HTTP 503) and takes the batch's stored documents back out.
//! - **Durability is Redis's**: with `appendonly yes` and `appendfsync always`, an answered
//!   `Unique` survives a Redis crash; with `everysec`, a crash loses up to the last second of
//!   appends. An instance that finds the Stream ending *before* its position (Redis lost
//!   entries it had applied) refuses further writes and asks to be restarted: restarting
//!   rebuilds its index from what Redis holds.
//! - **Retention**: every append trims entries older than the window (`XTRIM MINID`, by the
//!   entries' Redis time); each instance expires documents by their timestamps as the embedded
//!   engine does.
//! - Reads ([`StreamEngine::query`], [`StreamEngine::get`]) first bring the instance up to the
//!   Stream's end, so a client reading after another instance's answer sees it.

#[cfg(feature = "server")]
mod http;
mod log;

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use neardup::engine::{
    config_difference, remove_record, Content, Doc, DocInfo, Engine, EngineConfig, EngineError,
    Outcome, PreparedDoc, QueryResult, SyncMode,
};
use neardup::Fingerprinter;
use neardup_clock::Clock;
use tokio::sync::{mpsc, oneshot, Mutex};

use crate::conn::Conn;
use crate::{Error, Result};
use log::{went_back, Appended, EntryId, Log, CATCH_UP};

/// Format of the shared log; recorded with the configuration, so an instance reading another
/// format is refused.
const LOG_FORMAT: &str = "neardup-stream/1";
/// Most documents one decision round takes from the queue.
const DRAIN_DOCS: usize = 4096;
/// Entries are trimmed this long after they leave the window.
const TRIM_GRACE_MS: i64 = 60_000;

/// Answers of one engine call, one per document.
type Answers = Vec<std::result::Result<Outcome, EngineError>>;

struct Job {
    docs: Vec<PreparedDoc>,
    reply: oneshot::Sender<Answers>,
}

struct Inner {
    engine: Engine,
    log: Log,
    /// The position of the last entry applied; its lock makes one decider per instance.
    applied: Mutex<EntryId>,
    prefix: String,
    retention_ms: i64,
    clock: Arc<dyn Clock>,
    /// Set when this instance can no longer answer (the log went backwards, a local write
    /// failed): why.
    failed: StdMutex<Option<String>>,
    retries: AtomicU64,
    applied_entries: AtomicU64,
    _dir: tempfile::TempDir,
}

/// An instance of the shared index: see the [module docs](self).
pub struct StreamEngine {
    inner: Arc<Inner>,
    jobs: mpsc::UnboundedSender<Job>,
}

impl std::fmt::Debug for StreamEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamEngine")
            .field("prefix", &self.inner.prefix)
            .finish_non_exhaustive()
    }
}

fn unavailable(e: impl std::fmt::Display) -> EngineError {
    EngineError::Unavailable {
        reason: e.to_string(),
    }
}

impl StreamEngine {
    /// Connects to the log under `prefix` at `url` (`redis://host:port[/db]` or
    /// `redis+cluster://…`), records or checks the configuration, and builds this instance's
    /// index from the whole log in a new directory inside `work_dir` (deleted when the
    /// instance is dropped). Must be called inside a tokio runtime (the decider is a task).
    ///
    /// `cfg.sync` is ignored: durability is Redis's (see the module docs).
    ///
    /// # Errors
    /// [`Error::InvalidUrl`]; [`Error::Unavailable`] when Redis cannot be reached;
    /// [`Error::ConfigMismatch`] when the log was written with another configuration (the
    /// message names the first differing setting and both values); [`Error::Engine`] when
    /// the local index cannot be created or a log entry cannot be applied.
    pub async fn connect(
        url: &str,
        prefix: &str,
        work_dir: &Path,
        fingerprinter: Fingerprinter,
        mut cfg: EngineConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<StreamEngine> {
        if prefix.is_empty() || prefix.contains(['{', '}']) {
            return Err(Error::InvalidConfig(format!(
                "key prefix {prefix:?}: give a non-empty prefix without braces"
            )));
        }
        let conn = Conn::open(url, Duration::from_secs(5)).await?;
        let log = Log::new(conn, prefix);
        cfg.sync = SyncMode::None;
        std::fs::create_dir_all(work_dir).map_err(|e| {
            Error::InvalidConfig(format!("cannot create {}: {e}", work_dir.display()))
        })?;
        let dir = tempfile::Builder::new()
            .prefix("neardup-replica-")
            .tempdir_in(work_dir)
            .map_err(|e| {
                Error::InvalidConfig(format!(
                    "cannot create a replica directory in {}: {e}",
                    work_dir.display()
                ))
            })?;
        let retention_ms = i64::try_from(cfg.retention.as_millis()).unwrap_or(i64::MAX);
        let engine = Engine::open(dir.path(), fingerprinter, cfg, Arc::clone(&clock))?;
        let descriptor = format!(
            "{{\"log\":\"{LOG_FORMAT}\",\"engine\":{}}}",
            engine.config_descriptor()
        );
        let mut c = log.conn();
        let _: Option<String> = redis::cmd("SET")
            .arg(&log.meta_key)
            .arg(&descriptor)
            .arg("NX")
            .query_async(&mut c)
            .await?;
        let stored: Vec<u8> = redis::cmd("GET")
            .arg(&log.meta_key)
            .query_async(&mut c)
            .await?;
        if stored != descriptor.as_bytes() {
            return Err(Error::ConfigMismatch {
                prefix: prefix.to_owned(),
                stored: config_difference(&stored, &descriptor),
                current: descriptor,
            });
        }
        let inner = Arc::new(Inner {
            engine,
            log,
            applied: Mutex::new(EntryId::default()),
            prefix: prefix.to_owned(),
            retention_ms,
            clock,
            failed: StdMutex::new(None),
            retries: AtomicU64::new(0),
            applied_entries: AtomicU64::new(0),
            _dir: dir,
        });
        {
            let mut at = inner.applied.lock().await;
            inner.catch_up(&mut at).await.map_err(|e| match e {
                EngineError::Unavailable { reason } => Error::Unavailable { reason },
                e => Error::Engine(e),
            })?;
        }
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(decider(Arc::clone(&inner), rx));
        Ok(StreamEngine { inner, jobs: tx })
    }

    /// The local index (read-only use: statistics, configuration).
    pub fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    /// Sketches `docs` (on the blocking pool, in parallel) and decides them in order (see the
    /// module docs); one answer per document.
    pub async fn check_and_insert(&self, docs: Vec<Doc>) -> Answers {
        let n = docs.len();
        let inner = Arc::clone(&self.inner);
        let prepared =
            match tokio::task::spawn_blocking(move || inner.engine.prepare_batch(docs)).await {
                Ok(p) => p,
                Err(e) => return (0..n).map(|_| Err(unavailable(&e))).collect(),
            };
        let mut out: Vec<Option<std::result::Result<Outcome, EngineError>>> = Vec::new();
        let mut ok = Vec::new();
        for p in prepared {
            match p {
                Ok(d) => {
                    ok.push(d);
                    out.push(None);
                }
                Err(e) => out.push(Some(Err(e))),
            }
        }
        let mut decided = self.decide(ok).await.into_iter();
        out.into_iter()
            .map(|o| {
                o.unwrap_or_else(|| {
                    decided
                        .next()
                        .unwrap_or_else(|| Err(unavailable("the decider stopped")))
                })
            })
            .collect()
    }

    /// Decides documents already validated and sketched by [`Engine::prepare`] on an engine
    /// with the same configuration (e.g. [`StreamEngine::engine`]), in order; one answer per
    /// document.
    pub async fn decide(&self, docs: Vec<PreparedDoc>) -> Answers {
        if docs.is_empty() {
            return Vec::new();
        }
        let n = docs.len();
        let (reply, rx) = oneshot::channel();
        if self.jobs.send(Job { docs, reply }).is_err() {
            return (0..n)
                .map(|_| Err(unavailable("the instance is shutting down")))
                .collect();
        }
        rx.await.unwrap_or_else(|_| {
            (0..n)
                .map(|_| Err(unavailable("the decider stopped")))
                .collect()
        })
    }

    /// Catches up with the log, then checks `contents` without storing them.
    pub async fn query(
        &self,
        contents: Vec<Content>,
    ) -> Vec<std::result::Result<QueryResult, EngineError>> {
        if let Err(e) = self.inner.current().await {
            return contents.iter().map(|_| Err(unavailable(&e))).collect();
        }
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || {
            contents
                .into_iter()
                .map(|c| inner.engine.query(&c))
                .collect()
        })
        .await
        .unwrap_or_else(|e| vec![Err(unavailable(e))])
    }

    /// Catches up with the log, then returns the live document `id`.
    ///
    /// # Errors
    /// [`EngineError::Unavailable`] when Redis cannot be reached.
    pub async fn get(&self, id: &str) -> std::result::Result<Option<DocInfo>, EngineError> {
        self.inner.current().await?;
        Ok(self.inner.engine.get(id))
    }

    /// Removes the live document `id` from every instance; whether there was one.
    ///
    /// # Errors
    /// [`EngineError::InvalidId`]; [`EngineError::Unavailable`] when Redis cannot be reached.
    pub async fn remove(&self, id: &str) -> std::result::Result<bool, EngineError> {
        let inner = &self.inner;
        inner.check()?;
        let mut at = inner.applied.lock().await;
        loop {
            inner.catch_up(&mut at).await?;
            if inner.engine.get(id).is_none() {
                // Validates the id as a removal would.
                return inner.engine.remove(id);
            }
            match inner
                .log
                .append(*at, &[remove_record(id)], inner.trim_point())
                .await
                .map_err(unavailable)?
            {
                Appended::Done(last) => {
                    *at = last;
                    return inner.engine.remove(id);
                }
                Appended::Behind { .. } => inner.retries.fetch_add(1, Ordering::Relaxed),
            };
        }
    }

    /// `Ok` while the instance accepts writes and Redis answers; otherwise why not.
    pub async fn health(&self) -> std::result::Result<(), String> {
        self.inner.check().map_err(|e| e.to_string())?;
        self.inner.engine.health()?;
        let mut c = self.inner.log.conn();
        redis::cmd("PING")
            .query_async::<String>(&mut c)
            .await
            .map(|_| ())
            .map_err(|e| format!("Redis unavailable: {e}"))
    }

    /// Counters, after catching up with the log: documents, entries applied from other
    /// instances, decisions taken again after another instance appended first, and the log's
    /// size in Redis.
    ///
    /// # Errors
    /// [`Error::Unavailable`] when Redis cannot be reached.
    pub async fn stats(&self) -> Result<StreamStats> {
        self.inner.current().await.map_err(|e| Error::Unavailable {
            reason: e.to_string(),
        })?;
        let (log_bytes, log_entries) = self.inner.log.size().await?;
        let e = self.inner.engine.stats();
        Ok(StreamStats {
            documents: e.documents,
            index_bytes: e.index_bytes,
            expired: e.expired,
            log_entries,
            log_bytes,
            applied_entries: self.inner.applied_entries.load(Ordering::Relaxed),
            retries: self.inner.retries.load(Ordering::Relaxed),
            position: self.inner.applied.lock().await.to_string(),
        })
    }
}

/// Sizes and counters of a [`StreamEngine`].
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct StreamStats {
    /// Live documents of this instance's index.
    pub documents: u64,
    /// Bytes of this instance's index.
    pub index_bytes: u64,
    /// Documents expired by this instance since it started.
    pub expired: u64,
    /// Entries in the Redis Stream.
    pub log_entries: u64,
    /// Bytes of the Redis Stream (`MEMORY USAGE`).
    pub log_bytes: u64,
    /// Entries applied from the log (at start and from other instances).
    pub applied_entries: u64,
    /// Batches decided again because another instance appended first.
    pub retries: u64,
    /// The id of the last log entry applied.
    pub position: String,
}

impl Inner {
    fn check(&self) -> std::result::Result<(), EngineError> {
        match &*self.failed.lock().unwrap_or_else(|e| e.into_inner()) {
            Some(why) => Err(unavailable(why)),
            None => Ok(()),
        }
    }

    fn fail(&self, why: String) -> EngineError {
        *self.failed.lock().unwrap_or_else(|e| e.into_inner()) = Some(why.clone());
        unavailable(why)
    }

    /// Trim entries older than this (Redis time, ms).
    fn trim_point(&self) -> Option<i64> {
        Some(
            self.clock
                .now_ms()
                .saturating_sub(self.retention_ms)
                .saturating_sub(TRIM_GRACE_MS),
        )
    }

    /// Brings the instance to the end of the log.
    async fn current(&self) -> std::result::Result<(), EngineError> {
        self.check()?;
        let mut at = self.applied.lock().await;
        self.catch_up(&mut at).await
    }

    async fn catch_up(&self, at: &mut EntryId) -> std::result::Result<(), EngineError> {
        loop {
            match self.log.append(*at, &[], None).await.map_err(unavailable)? {
                Appended::Done(_) => return Ok(()),
                Appended::Behind { last, entries } => self.apply(at, last, entries)?,
            }
        }
    }

    /// Applies entries another instance appended after `at`.
    fn apply(
        &self,
        at: &mut EntryId,
        last: EntryId,
        entries: Vec<(EntryId, Vec<u8>)>,
    ) -> std::result::Result<(), EngineError> {
        if went_back(last, *at) {
            return Err(self.fail(format!(
                "the shared log in Redis ends at {last}, before entry {at} that this instance \
                 applied: Redis lost acknowledged entries (a restart without `appendfsync \
                 always`, or a failover to a replica behind); restart this instance to rebuild \
                 its index from the log"
            )));
        }
        let full = entries.len() >= CATCH_UP;
        if let Some((id, _)) = entries.last() {
            let recs: Vec<&[u8]> = entries.iter().map(|(_, r)| r.as_slice()).collect();
            if let Err(e) = self.engine.apply_records(&recs) {
                return Err(self.fail(format!("cannot apply the shared log: {e}")));
            }
            self.applied_entries
                .fetch_add(entries.len() as u64, Ordering::Relaxed);
            *at = *id;
        }
        if !full {
            // The reply held everything up to `last` (entries may have been trimmed).
            *at = last;
        }
        Ok(())
    }

    /// Decides `docs` against the whole log (see the module docs).
    async fn decide(&self, at: &mut EntryId, docs: Vec<PreparedDoc>) -> Answers {
        if let Err(e) = self.check() {
            return docs.iter().map(|_| Err(unavailable(&e))).collect();
        }
        loop {
            let answers = self.engine.decide(docs.clone()).wait();
            let mut records = Vec::new();
            let mut stored = Vec::new();
            let mut counted = Vec::new();
            for (d, a) in docs.iter().zip(&answers) {
                if let Ok(o) = a {
                    if o.stored {
                        records.push(d.record(o.timestamp_ms));
                        stored.push(d.id.as_str());
                    } else if let Some(r) = d.lines_record(o) {
                        // A duplicate's lines count on every instance (the template veto).
                        records.push(r.clone());
                        counted.push(r);
                    }
                }
            }
            let trim = self.trim_point();
            let appended = self.log.append(*at, &records, trim).await;
            if !matches!(appended, Ok(Appended::Done(_))) {
                // Not in the log: take them back out before anything else is decided.
                let taken_back = self.engine.take_back_lines(&counted);
                for r in self
                    .engine
                    .remove_batch(&stored)
                    .into_iter()
                    .chain(std::iter::once(taken_back.map(|()| true)))
                {
                    if let Err(e) = r {
                        let e = self.fail(format!("cannot take back a refused document: {e}"));
                        return docs.iter().map(|_| Err(unavailable(&e))).collect();
                    }
                }
            }
            match appended {
                Ok(Appended::Done(last)) => {
                    *at = last;
                    return answers;
                }
                Ok(Appended::Behind { last, entries }) => {
                    self.retries.fetch_add(1, Ordering::Relaxed);
                    if let Err(e) = self.apply(at, last, entries) {
                        return docs.iter().map(|_| Err(unavailable(&e))).collect();
                    }
                }
                Err(e) => {
                    let e = unavailable(e);
                    return docs.iter().map(|_| Err(unavailable(&e))).collect();
                }
            }
        }
    }
}

/// The instance's one decider: takes every queued batch (up to [`DRAIN_DOCS`] documents) in
/// one round, so concurrent requests share one script call.
async fn decider(inner: Arc<Inner>, mut rx: mpsc::UnboundedReceiver<Job>) {
    while let Some(first) = rx.recv().await {
        let mut jobs = vec![first];
        let mut n = jobs[0].docs.len();
        while n < DRAIN_DOCS {
            match rx.try_recv() {
                Ok(j) => {
                    n += j.docs.len();
                    jobs.push(j);
                }
                Err(_) => break,
            }
        }
        let mut docs = Vec::with_capacity(n);
        let mut replies = Vec::with_capacity(jobs.len());
        for j in jobs {
            replies.push((j.docs.len(), j.reply));
            docs.extend(j.docs);
        }
        let mut answers = {
            let mut at = inner.applied.lock().await;
            inner.decide(&mut at, docs).await
        }
        .into_iter();
        for (k, reply) in replies {
            let _ = reply.send(answers.by_ref().take(k).collect());
        }
    }
}
