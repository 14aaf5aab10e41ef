//! What every part of the engine shares: the clock and the horizon, the locks, failure state
//! and its settlement, and the detector's find paths (simhash runs, `auto` sketch indexes).

use std::sync::atomic::Ordering;
use std::sync::{Arc, RwLockReadGuard, RwLockWriteGuard};

use neardup_index::Layout;

use rayon::prelude::*;

use super::sketch::{self, Deferred, DocSketch, ShortPlan, SketchIndex, ThinPage};
use super::slab::Slot;
use super::state::{Horizon, Inner, LIVE};
use super::{lock, veto, Content, EngineError, Key, Purpose, Result, Shared, SyncMode};
use crate::detect::{compare_verdicts, Detector, Stage, Verdict};
use crate::template_veto::LineKey;

impl Shared {
    pub(super) fn now(&self) -> i64 {
        let t = self.clock.now_ms();
        self.now_hw.fetch_max(t, Ordering::SeqCst).max(t)
    }

    pub(super) fn horizon(&self, inner: &Inner) -> Horizon {
        Horizon {
            expired_at: self.now().saturating_sub(self.retention_ms),
            floor: inner.floor,
        }
    }

    pub(super) fn segment_of(&self, ts: i64) -> i64 {
        ts.div_euclid(self.segment_ms)
    }

    /// True when every timestamp of segment `s` is dead under `h`.
    pub(super) fn segment_dead(&self, s: i64, h: Horizon) -> bool {
        !h.segment_live(s, self.segment_ms)
    }

    pub(super) fn layout_for(&self, n: usize) -> Result<Layout> {
        let n = n.max(1) as u64;
        Ok(Layout::plan(
            n,
            self.cfg.distance,
            n.saturating_mul(self.cfg.index_bytes_per_doc),
        )?)
    }

    pub(super) fn check_writable(&self) -> Result<()> {
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

    pub(super) fn fail(&self, e: neardup_store::Error) -> EngineError {
        let mut f = lock(&self.failed);
        if f.is_none() {
            *f = Some(e.to_string());
        }
        EngineError::Store(e)
    }

    pub(super) fn read(&self) -> RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn write(&self) -> RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Calls `f(handle, slot, distance)` for every live document within the distance of `fp`
    /// (a handle may be reported more than once).
    pub(super) fn for_each_match(
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
    pub(super) fn best(&self, inner: &Inner, h: Horizon, fp: u64) -> Option<(u32, u32)> {
        let mut best: Option<(u32, i64, u32)> = None;
        self.for_each_match(inner, h, fp, |handle, s, d| {
            let key = (d, s.ts, handle);
            if best.is_none_or(|b| key < b) {
                best = Some(key);
            }
        });
        best.map(|(d, _, handle)| (handle, d))
    }

    /// What `c` is checked by under the engine's detector (`purpose`: see [`Shared::keys_of`]).
    pub(super) fn key_of(&self, c: &Content, purpose: Purpose) -> Result<Key> {
        self.keys_of(&[c], purpose).pop().expect("one key")
    }

    /// What each of a batch of contents is checked by, sketched in parallel. Under the template
    /// veto the batch's own lines count with the stored documents' (see [`super::veto`]); for
    /// a [`Purpose::Decide`], a text whose exact copy is stored has its distinct part put off
    /// ([`super::sketch::Deferred`]).
    pub(super) fn keys_of(&self, contents: &[&Content], purpose: Purpose) -> Vec<Result<Key>> {
        // A single document, or fingerprints only, are not worth a hop to the thread pool
        // (the caller may not be on it).
        let serial = contents.len() <= 1
            || contents
                .iter()
                .all(|c| matches!(c, Content::Fingerprint(_)));
        let each = |f: &(dyn Fn(&Content) -> Result<Key> + Sync)| -> Vec<Result<Key>> {
            if serial {
                contents.iter().map(|c| f(c)).collect()
            } else {
                contents.par_iter().map(|c| f(c)).collect()
            }
        };
        let Some(a) = &self.auto else {
            return each(&|c| match c {
                Content::Text(t) => Ok(Key::Fingerprint(self.fingerprinter.simhash(t)?)),
                Content::Fingerprint(f) => Ok(Key::Fingerprint(*f)),
            });
        };
        // For a decision, a long text whose exact copy is indexed (live or not: one that has
        // left is caught when the document is decided) has its costly parts put off.
        let known = |digest: u128| {
            purpose == Purpose::Decide && {
                let inner = self.read();
                inner
                    .segments
                    .values()
                    .any(|seg| seg.sketches.as_ref().is_some_and(|x| x.has_exact(digest)))
            }
        };
        let sketch = |t: &String| -> Result<DocSketch> {
            let (auto, put_off) = a.sketcher.sketch_unless(t, known)?;
            Ok(DocSketch {
                auto,
                body: None,
                index_body: false,
                veto: None,
                deferred: put_off.then(|| {
                    Box::new(Deferred {
                        text: t.clone(),
                        body: None,
                    })
                }),
            })
        };
        let Some(rules) = &a.veto else {
            return each(&|c| match c {
                Content::Text(t) => Ok(Key::Sketch(Box::new(sketch(t)?))),
                Content::Fingerprint(_) => Err(EngineError::TextRequired {
                    detector: self.cfg.detector.name(),
                }),
            });
        };
        // Under the veto the lines are counted first: the long and short paths sketch the
        // text's body (without its template lines, `VetoRules::body`).
        let texts: Vec<&str> = contents
            .iter()
            .filter_map(|c| match c {
                Content::Text(t) => Some(t.as_str()),
                Content::Fingerprint(_) => None,
            })
            .collect();
        let batch = veto::line_docs_batch(rules, &texts, |keys| {
            let inner = self.read();
            keys.iter()
                .map(|ks| {
                    ks.iter()
                        .map(|k| {
                            k.map_or((0, 0, 0), |k| {
                                (
                                    inner.lines.get(k.exact),
                                    inner.lines.get(k.template),
                                    inner.lines.stored_docs(k.exact),
                                )
                            })
                        })
                        .collect()
                })
                .collect()
        });
        let mut lines = batch.keys.into_iter().zip(batch.docs).zip(batch.visible);
        type Lines = ((Vec<Option<LineKey>>, veto::LineDocs), Option<Arc<str>>);
        type Job<'a> = (&'a Content, Option<Lines>);
        let jobs: Vec<Job> = contents
            .iter()
            .map(|&c| match c {
                Content::Text(_) => (c, lines.next()),
                Content::Fingerprint(_) => (c, None),
            })
            .collect();
        let sketch = |(c, lines): &Job| match (c, lines) {
            (Content::Text(t), Some(((keys, line_docs), visible))) => {
                if let Some(v) = visible {
                    rules.remember_visible(t, v.clone());
                }
                let body = rules.body(t, &line_docs.template);
                let index_body =
                    body.is_some() && rules.body_is_own(t, &line_docs.exact, &line_docs.template);
                let (auto, put_off) = a.sketcher.sketch_unless(t, known)?;
                // The whole text was normalised last on this thread with the remembering
                // normaliser: not again (before the body is).
                let whole = (!put_off).then(|| rules.normalize_whole(t));
                let body_sketch = match (&body, put_off) {
                    (Some(b), false) => Some(a.sketcher.sketch(b)?),
                    _ => None,
                };
                Ok(Key::Sketch(Box::new(DocSketch {
                    auto,
                    body: body_sketch,
                    index_body,
                    veto: Some(veto::veto_sketch(
                        rules,
                        t,
                        whole.as_deref(),
                        keys,
                        line_docs.exact.clone(),
                        &line_docs.exact_stored,
                    )),
                    deferred: put_off.then(|| {
                        Box::new(Deferred {
                            text: t.clone(),
                            body,
                        })
                    }),
                })))
            }
            _ => Err(EngineError::TextRequired {
                detector: self.cfg.detector.name(),
            }),
        };
        if serial {
            jobs.iter().map(sketch).collect()
        } else {
            jobs.par_iter().map(sketch).collect()
        }
    }

    /// Completes `key`'s put-off sketch (see [`Deferred`]): the long path's sketch and the
    /// distinct part, computed from its text and the line counts it was sketched with, as they
    /// would have been at first. Whether there was anything to complete.
    pub(super) fn complete(&self, key: &mut Key) -> bool {
        let (Key::Sketch(s), Some(a)) = (key, &self.auto) else {
            return false;
        };
        let Some(d) = s.deferred.take() else {
            return false;
        };
        // It was sketched from this very text, so it sketches again.
        if let Ok(full) = a.sketcher.sketch(&d.text) {
            s.auto = full;
        }
        if let (Some(rules), Some(v)) = (&a.veto, s.veto.as_mut()) {
            let whole = rules.normalize_whole(&d.text);
            let line_docs = std::mem::take(&mut v.line_docs);
            let distinct = rules.distinct_part_normalized(&d.text, &whole, &line_docs);
            v.part = distinct.as_ref().map(|d| rules.kept(d));
            let keys = rules.line_keys(&d.text);
            if distinct.is_none() && rules.any_repeated(&line_docs) {
                v.thin = rules
                    .thin_repeated(&d.text, &keys, &line_docs)
                    .map(|r| ThinPage::of(&r, &v.lines));
            }
            v.part_repeated =
                veto::part_repeated(rules, &keys, &line_docs, &v.lines, distinct.as_ref());
            (v.whole_sample, v.own) = veto::by_content(
                rules,
                &d.text,
                &whole,
                &keys,
                &line_docs,
                distinct.is_some(),
            );
            v.distinct = distinct;
        }
        if let Some(b) = &d.body {
            s.body = a.sketcher.sketch(b).ok();
        }
        true
    }

    /// Every live document the sketch is a near-duplicate of, strongest first, as (verdict with
    /// `of` = handle, arrival sequence).
    pub(super) fn sketch_matches(
        &self,
        inner: &Inner,
        h: Horizon,
        s: &DocSketch,
    ) -> Vec<(Verdict, u64)> {
        let mut found = self.live_sketch_matches(inner, h, s);
        sketch::sort_strongest(&mut found);
        found
    }

    /// [`Shared::sketch_matches`] in no particular order: those of the whole text, or when it
    /// has none, of its body (under the template veto).
    fn live_sketch_matches(&self, inner: &Inner, h: Horizon, s: &DocSketch) -> Vec<(Verdict, u64)> {
        let rules = self.auto.as_ref().and_then(|a| a.veto.as_ref());
        let live: Vec<&SketchIndex> = inner
            .segments
            .iter()
            .filter(|(&sid, _)| !self.segment_dead(sid, h))
            .filter_map(|(_, seg)| seg.sketches.as_ref())
            .collect();
        let search = |by_body: bool| {
            let mut found = Vec::new();
            let q = s.searched(by_body);
            let Some(q) = q else {
                return found;
            };
            // The short path's candidates ranked across the segments, as one detector would.
            let mut plan = ShortPlan::new(q, &live);
            for (i, x) in live.iter().enumerate() {
                x.find(s, by_body, rules, &inner.lines, &mut plan, i, &mut found);
            }
            found.retain(|(v, seq)| {
                let slot = inner.slab.get(v.of);
                slot.state == LIVE && slot.fp == *seq && h.live(slot.ts)
            });
            found
        };
        let found = search(false);
        if found.is_empty() && s.body.is_some() {
            return search(true);
        }
        found
    }

    /// The strongest live match of `key`: `(handle, distance, similarity, stage)`.
    pub(super) fn best_match(
        &self,
        inner: &Inner,
        h: Horizon,
        key: &Key,
    ) -> Option<(u32, Option<u32>, Option<f64>, Stage)> {
        match key {
            Key::Fingerprint(fp) => self
                .best(inner, h, *fp)
                .map(|(handle, d)| (handle, Some(d), None, Stage::Simhash)),
            // A decision needs the strongest match only: no sort.
            Key::Sketch(s) => self
                .live_sketch_matches(inner, h, s)
                .into_iter()
                .min_by(|a, b| compare_verdicts(&a.0, a.1, &b.0, b.1))
                .map(|(v, _)| (v.of, v.distance, v.similarity, v.stage)),
        }
    }

    /// Inserts a document into memory (caller holds the decide mutex and has logged it as
    /// record `seq`, with `blob` its encoded sketch under the `auto` detector).
    pub(super) fn apply_insert(
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
    pub(super) fn settle(&self) {
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
    pub(super) fn settle_if_failed(&self) {
        if lock(&self.failed).is_some() {
            self.settle();
        }
    }

    pub(super) fn await_durable(&self) -> Result<()> {
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
    pub(super) fn apply_remove(&self, inner: &mut Inner, handle: u32) {
        inner.remove_doc(handle, self.segment_ms);
    }
}
