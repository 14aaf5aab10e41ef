//! Reads: queries (without storing), `get`. Readers take the read lock only, and never show a
//! document before it is durable or after its write was refused.

use rayon::prelude::*;

use super::state::LIVE;
use super::{Content, DocInfo, Engine, Hit, Key, Purpose, QueryResult, Result, MAX_HITS};
use crate::detect::Stage;

impl Engine {
    /// Checks `content` without storing anything: the live near-duplicates, strongest first.
    ///
    /// # Errors
    /// [`EngineError::Fingerprint`](super::EngineError::Fingerprint) if the text has no fingerprint or sketch;
    /// [`EngineError::TextRequired`](super::EngineError::TextRequired) for a fingerprint under the `auto` detector.
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
        match self.shared.key_of(content, Purpose::Query)? {
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
}
