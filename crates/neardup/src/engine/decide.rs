//! Check-and-insert: documents are validated and sketched (in parallel), then decided one at a
//! time under the decide mutex, in arrival order, their log records queued; [`Pending::wait`]
//! releases the answers once the records are acknowledged.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::config::check_id;
use super::state::LIVE;
use super::{
    lock, records, sketch, Content, Decision, Doc, Engine, EngineError, Key, Outcome, Purpose,
    Result, Shared, SyncMode,
};
use crate::detect::Stage;

impl Engine {
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
        let key = self.shared.key_of(&doc.content, Purpose::Decide)?;
        self.check_and_insert_many(vec![(doc.id, key, doc.timestamp_ms)])
            .pop()
            .expect("one result")
    }

    /// [`check_and_insert`](Self::check_and_insert) for many documents: sketches are computed
    /// in parallel, decisions are taken in order (a later document may be a duplicate of an
    /// earlier one in the same batch) and share one group commit. One result per input, in
    /// order.
    pub fn check_and_insert_batch(&self, docs: Vec<Doc>) -> Vec<Result<Outcome>> {
        let mut ok = Vec::new();
        let mut slots = Vec::with_capacity(docs.len());
        for p in self.prepare_batch(docs) {
            match p {
                Ok(d) => {
                    slots.push(None);
                    ok.push((d.id, d.key, d.timestamp_ms));
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
        self.decide_many(docs, false).wait()
    }

    /// Validates a document and computes its fingerprint or sketch (CPU-bound, thread-safe:
    /// run it on as many threads as you like) for [`decide`](Self::decide).
    ///
    /// # Errors
    /// [`EngineError::InvalidId`], [`EngineError::Fingerprint`],
    /// [`EngineError::TextRequired`].
    pub fn prepare(&self, doc: Doc) -> Result<PreparedDoc> {
        self.prepare_batch(vec![doc]).pop().expect("one result")
    }

    /// [`prepare`](Self::prepare) for a batch that will be decided together, in parallel.
    /// Under the template veto the batch's lines are counted as `neardup dedup` counts a
    /// batch's (see [`EngineConfig::template_veto`](super::EngineConfig::template_veto)), so
    /// prepare a request's documents together rather than one by one. One result per input,
    /// in order.
    pub fn prepare_batch(&self, docs: Vec<Doc>) -> Vec<Result<PreparedDoc>> {
        let checked: Vec<Result<()>> = docs.iter().map(|d| check_id(&d.id)).collect();
        let contents: Vec<&Content> = docs
            .iter()
            .zip(&checked)
            .filter(|(_, c)| c.is_ok())
            .map(|(d, _)| &d.content)
            .collect();
        let mut keys = self.shared.keys_of(&contents, Purpose::Decide).into_iter();
        docs.into_iter()
            .zip(checked)
            .map(|(d, c)| {
                c?;
                Ok(PreparedDoc {
                    key: keys.next().expect("one key per valid document")?,
                    id: d.id,
                    timestamp_ms: d.timestamp_ms,
                })
            })
            .collect()
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
            false,
        )
    }

    /// Takes the decisions of `docs` in order and queues their records. With `replicated`,
    /// the documents were decided unique by another instance over the same shared log
    /// ([`Engine::apply_records`]): each is stored without being checked (unless its id is
    /// already live).
    pub(super) fn decide_many(
        &self,
        docs: Vec<(String, Key, Option<i64>)>,
        replicated: bool,
    ) -> Pending {
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
            for (id, mut key, ts) in docs {
                let now = sh.now();
                // A replicated document keeps the timestamp its deciding instance gave it.
                let ts = match ts {
                    Some(t) if replicated => t,
                    Some(t) => t.min(now),
                    None => now,
                };
                let fingerprint = key.fingerprint();
                let (decided, live) = {
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
                    let found = match same {
                        Some(s) => Some(s),
                        None if replicated => None,
                        None => {
                            let found = sh.best_match(&inner, h, &key);
                            // A put-off sketch (its exact copy was indexed when it was
                            // sketched) is needed unless the answer is still a match that
                            // outranks every other and that the veto never vetoes.
                            let identical =
                                found.is_some_and(|(_, d, s, _)| d == Some(0) || s == Some(1.0));
                            if !identical && sh.complete(&mut key) {
                                sh.best_match(&inner, h, &key)
                            } else {
                                found
                            }
                        }
                    };
                    let decided = match found {
                        Some((handle, distance, similarity, stage)) => Err(Decision::Duplicate {
                            of: inner.slab.id(handle).to_string(),
                            distance,
                            similarity,
                            stage,
                        }),
                        None => Ok(replicated || h.live(ts)),
                    };
                    (decided, h.live(ts))
                };
                match decided {
                    Err(decision) => {
                        // Under the template veto a duplicate's lines count as a stored
                        // document's do (see `super::veto`), logged first.
                        if let Some(lines) = counted_lines(&key, &decision).filter(|_| live) {
                            let rec = records::encode_lines(ts, lines, false);
                            if let Err(e) = sh.store.append(&rec) {
                                out.push(Err(sh.fail(e)));
                                continue;
                            }
                            sh.write()
                                .observe(sh.segment_of(ts), lines, false, &sh.head_layout);
                        }
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
                            sh.complete(&mut key);
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
}

/// The lines a duplicate answered with `decision` adds to the line counts, if any (under the
/// template veto; [`super::veto::counts_lines`]).
fn counted_lines<'k>(key: &'k Key, decision: &Decision) -> Option<&'k [u64]> {
    let (Key::Sketch(s), Decision::Duplicate { stage, .. }) = (key, decision) else {
        return None;
    };
    let v = s.veto.as_ref()?;
    (super::veto::counts_lines(*stage) && !v.lines.is_empty()).then_some(v.lines.as_slice())
}

/// A validated, sketched document (from [`Engine::prepare`]).
#[derive(Debug, Clone)]
pub struct PreparedDoc {
    /// Its id.
    pub id: String,
    pub(super) key: Key,
    /// Its timestamp, if supplied.
    pub timestamp_ms: Option<i64>,
}

impl PreparedDoc {
    /// Its simhash (simhash detector only).
    pub fn fingerprint(&self) -> Option<u64> {
        self.key.fingerprint()
    }

    /// The replication record of the lines its answer `outcome` counted (a duplicate under
    /// the template veto; see [`Engine::apply_records`]), if it counted any: published beside
    /// the stored documents' records, so that every instance counts them.
    pub fn lines_record(&self, outcome: &Outcome) -> Option<Vec<u8>> {
        counted_lines(&self.key, &outcome.decision)
            .map(|l| records::encode_lines(outcome.timestamp_ms, l, false))
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
