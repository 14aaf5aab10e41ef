//! The template veto online ([`crate::template_veto`]): how many stored documents of the
//! window hold each line, and the veto's sketch of the documents being checked.
//!
//! Batch dedup counts the lines of every document read before it sketches a batch. The
//! engine counts the lines of the documents it stores (they are in its log and snapshots, so
//! the counts are rebuilt on restart and on every instance that shares the log), plus those of
//! the batch being checked, each distinct text once: a document's count of a line is "stored
//! documents holding it + documents of its own batch holding it". Counts leave with their
//! documents (removal, expiry). What dedup counts and the engine does not are the duplicates
//! of earlier batches: the lines of an article's copies repeat less online, so fewer of its
//! lines are left out of its distinct part.

use std::collections::{HashMap, HashSet};

use rayon::prelude::*;

use super::sketch::VetoSketch;
use crate::hash::{xxh3, FastBuild};
use crate::template_veto::VetoRules;

/// Line key → how many stored documents hold the line.
#[derive(Debug, Default)]
pub(super) struct LineCounts {
    map: HashMap<u64, u32, FastBuild>,
}

impl LineCounts {
    /// Counts a stored document's lines.
    pub(super) fn add(&mut self, lines: &[u64]) {
        for &k in lines {
            *self.map.entry(k).or_insert(0) += 1;
        }
    }

    /// Takes a document's lines back out of the counts.
    pub(super) fn sub(&mut self, lines: &[u64]) {
        for k in lines {
            if let Some(n) = self.map.get_mut(k) {
                *n -= 1;
                if *n == 0 {
                    self.map.remove(k);
                }
            }
        }
    }

    pub(super) fn get(&self, k: u64) -> u32 {
        self.map.get(&k).copied().unwrap_or(0)
    }

    pub(super) fn heap_bytes(&self) -> usize {
        self.map.capacity() * 13
    }
}

/// The veto's sketches of a batch of texts being checked, in order, each given with its
/// normalised whole ([`VetoRules::normalize_whole`]). `stored(keys)` gives, for
/// each line key of a text (`None`: a line too short to count), how many stored documents hold
/// it; the caller takes the engine's read lock for it. Where `defer[i]` (an exact copy of
/// text `i` is stored), its distinct part is put off ([`super::sketch::Deferred`]).
pub(super) fn sketch_batch(
    rules: &VetoRules,
    texts: &[(&str, String)],
    defer: &[bool],
    stored: impl FnOnce(&[Vec<Option<u64>>]) -> Vec<Vec<u32>>,
) -> Vec<VetoSketch> {
    let keys: Vec<Vec<Option<u64>>> = texts.par_iter().map(|t| rules.line_keys(t.0)).collect();
    // The batch's own counts: each distinct text once, each of its lines once.
    let mut batch: HashMap<u64, u32, FastBuild> = HashMap::default();
    let mut texts_seen: HashSet<u64, FastBuild> = HashSet::default();
    let mut lines_seen: HashSet<u64, FastBuild> = HashSet::default();
    for ((t, _), ks) in texts.iter().zip(&keys) {
        if !texts_seen.insert(xxh3(t.as_bytes())) {
            continue;
        }
        lines_seen.clear();
        for k in ks.iter().flatten() {
            if lines_seen.insert(*k) {
                *batch.entry(*k).or_insert(0) += 1;
            }
        }
    }
    let stored = stored(&keys);
    texts
        .par_iter()
        .zip(keys.par_iter().zip(stored.par_iter()))
        .enumerate()
        .map(|(i, ((t, whole), (ks, st)))| {
            let line_docs: Vec<u32> = ks
                .iter()
                .zip(st)
                .map(|(k, n)| k.map_or(0, |k| n + batch.get(&k).copied().unwrap_or(0)))
                .collect();
            let deferred = defer.get(i).copied().unwrap_or(false);
            let distinct = if deferred {
                None
            } else {
                rules.distinct_part_normalized(t, whole, &line_docs)
            };
            let min_docs = rules.options().min_docs;
            let mut lines: Vec<u64> = ks.iter().flatten().copied().collect();
            lines.sort_unstable();
            lines.dedup();
            let mut distinct_lines: Vec<u64> = ks
                .iter()
                .zip(&line_docs)
                .filter(|(_, &n)| n < min_docs)
                .filter_map(|(k, _)| *k)
                .collect();
            distinct_lines.sort_unstable();
            distinct_lines.dedup();
            VetoSketch {
                lines,
                had_repeats: line_docs.iter().any(|&n| n >= min_docs),
                distinct_lines,
                part: distinct.as_ref().map(|d| d.kept()),
                distinct,
                line_docs: if deferred { line_docs } else { Vec::new() },
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use crate::engine::{Content, Decision, Doc, Engine, EngineConfig, ManualClock, SyncMode};
    use crate::{FingerprintConfig, Fingerprinter};

    const TEMPLATE: &str =
        "Editor's note: the views expressed in this article are the author's own.\n\
        Copyright: no part of this article may be reproduced without written permission.\n";

    fn open(dir: &std::path::Path, clock: &Arc<ManualClock>) -> Engine {
        let cfg = EngineConfig {
            sync: SyncMode::None,
            maintenance_interval: None,
            retention: Duration::from_secs(3600),
            ..EngineConfig::default()
        };
        let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
        Engine::open(dir, fp, cfg, clock.clone()).unwrap()
    }

    /// How many stored documents hold the template's first line.
    fn template_count(e: &Engine) -> u32 {
        let line = TEMPLATE.lines().next().unwrap();
        e.shared
            .read()
            .lines
            .get(crate::hash::xxh3(line.as_bytes()))
    }

    fn page(i: u32) -> String {
        format!(
            "page {i}: {}\n{TEMPLATE}",
            "lorem ipsum ".repeat(i as usize % 5 + 1)
        )
    }

    /// Pages that share only a long template (three lines), each with its own short body.
    fn templated(body: &str) -> String {
        format!(
            "{body}\nEditor's note: the views expressed here are the author's own and not the site's.\n\
             Copyright: no part of this article may be reproduced without written permission.\n\
             Follow us to receive a daily selection of articles and exclusive material.\n"
        )
    }

    const BODIES: [&str; 6] = [
        "apples grow on trees in the orchard behind the old farmhouse",
        "the committee approved the budget for new roads and schools",
        "a storm closed the mountain pass for three days last winter",
        "the museum opened a new wing devoted to early printed maps",
        "engineers replaced the bridge cables without closing traffic",
        "the choir rehearsed twice a week before the spring concert",
    ];

    /// Whether `p`'s MinHash sketch and distinct part were put off.
    fn is_deferred(p: &crate::engine::PreparedDoc) -> bool {
        match &p.key {
            crate::engine::Key::Sketch(s) => {
                assert_eq!(s.deferred.is_some(), s.auto.minhash.is_none());
                let v = s.veto.as_ref().unwrap();
                assert!(s.deferred.is_none() || v.distinct.is_none() && v.part.is_none());
                s.deferred.is_some()
            }
            crate::engine::Key::Fingerprint(_) => false,
        }
    }

    /// A copy whose exact original is stored has its MinHash sketch and distinct part put off;
    /// if the original leaves before the copy is decided, they are computed then: the copy's
    /// template-only matches are still vetoed, and it is stored with its part, so that later
    /// template-only matches against it are vetoed too.
    #[test]
    fn exact_copy_whose_original_left_before_its_decision_keeps_the_veto() {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(1_700_000_000_000));
        let e = open(dir.path(), &clock);
        let docs: Vec<Doc> = BODIES[..5]
            .iter()
            .enumerate()
            .map(|(i, b)| Doc::text(format!("p{i}"), templated(b)))
            .collect();
        for r in e.check_and_insert_batch(docs) {
            let o = r.unwrap();
            assert!(o.stored, "template-only matches are vetoed: {o:?}");
        }
        // The query path never puts the part off: the copy's one hit is its original.
        let q = e.query(&Content::Text(templated(BODIES[0]))).unwrap();
        assert_eq!(
            q.hits.iter().map(|h| h.id.as_str()).collect::<Vec<_>>(),
            ["p0"]
        );
        let copy = e.prepare(Doc::text("copy", templated(BODIES[0]))).unwrap();
        assert!(
            is_deferred(&copy),
            "an exact copy of a stored page is put off"
        );
        let fresh = e.prepare(Doc::text("fresh", templated(BODIES[5]))).unwrap();
        assert!(!is_deferred(&fresh));
        // While the original is live the copy is its duplicate.
        let o = e.decide(vec![copy.clone()]).wait().pop().unwrap().unwrap();
        assert!(
            matches!(&o.decision, Decision::Duplicate { of, similarity: Some(s), .. } if of == "p0" && *s == 1.0),
            "{o:?}"
        );
        assert!(e.remove("p0").unwrap());
        let o = e.decide(vec![copy]).wait().pop().unwrap().unwrap();
        assert!(
            o.stored && o.decision == Decision::Unique,
            "template-only matches stay vetoed: {o:?}"
        );
        // Stored with its distinct part: a new page in the template is not its duplicate.
        let o = e.decide(vec![fresh]).wait().pop().unwrap().unwrap();
        assert!(o.stored && o.decision == Decision::Unique, "{o:?}");
    }

    /// The line counts follow the stored documents: duplicates add nothing, removal and expiry
    /// take their lines out, and a restart (from the log, or a snapshot and the log) rebuilds
    /// the same counts.
    #[test]
    fn line_counts_follow_the_stored_documents_across_removal_expiry_and_restart() {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(1_700_000_000_000));
        let e = open(dir.path(), &clock);
        let docs: Vec<Doc> = (0..10)
            .map(|i| Doc::text(format!("p{i}"), page(i)))
            .collect();
        let stored = e
            .check_and_insert_batch(docs)
            .into_iter()
            .filter(|r| r.as_ref().unwrap().stored)
            .count() as u32;
        assert!(stored > 1);
        assert_eq!(template_count(&e), stored);
        // An exact copy is a duplicate and is not counted.
        let copy = e.check_and_insert(Doc::text("copy", page(0))).unwrap();
        assert!(matches!(copy.decision, Decision::Duplicate { .. }));
        assert_eq!(template_count(&e), stored);
        assert!(e.remove("p0").unwrap());
        assert_eq!(template_count(&e), stored - 1);
        drop(e);
        let e = open(dir.path(), &clock);
        assert_eq!(template_count(&e), stored - 1, "rebuilt from the log");
        e.shutdown().unwrap();
        drop(e);
        let e = open(dir.path(), &clock);
        assert_eq!(template_count(&e), stored - 1, "rebuilt from the snapshot");
        clock.advance(Duration::from_secs(2 * 3600));
        e.maintain().unwrap();
        assert_eq!(template_count(&e), 0, "expired with their segment");
    }
}
