//! The template veto online ([`crate::template_veto`]): how many stored documents of the
//! window hold each line, and the veto's sketch of the documents being checked.
//!
//! Batch dedup counts the lines of every document read before it sketches a batch. The
//! engine counts the lines of the documents it stores and of the duplicates it answers (but
//! copies of an identical text: [`counts_lines`]), plus those of the batch being checked, each
//! distinct text once: a document's count of a line is "stored documents and counted
//! duplicates holding it + documents of its own batch holding it". Both are in the log and
//! snapshots (a duplicate's lines as an `L` record), so the counts are rebuilt on restart and
//! on every instance that shares the log. A stored document's lines leave the counts with it
//! (removal, expiry), a duplicate's when its time segment expires.
//!
//! Counting the duplicates is what lets an online index learn a template at all: the pages
//! of a new template match the first one stored on the template alone and are answered
//! "duplicate", so if only stored documents counted, the template's lines would never reach
//! [`TemplateVetoOptions::template_docs`](crate::template_veto::TemplateVetoOptions::template_docs)
//! and every later page of it would be a duplicate of the first (docs/quality.md, "The online
//! engine learns templates from its duplicates").

use std::collections::{HashMap, HashSet};

use rayon::prelude::*;

use super::sketch::VetoSketch;
use crate::detect::Stage;
use crate::hash::{xxh3, FastBuild};
use crate::template_veto::{LineKey, VetoRules};

/// Whether a duplicate answered by `stage` has its lines counted: every one but the copies of
/// an identical (normalised) text and the same id sent again — as `neardup dedup` counts every
/// document it reads, exact copies once.
pub(super) fn counts_lines(stage: Stage) -> bool {
    !matches!(stage, Stage::Exact | Stage::Id)
}

/// Line key → how many stored documents and counted duplicates hold the line.
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

    /// Takes `n` documents' line `k` out of the counts (an expired segment's observed lines).
    pub(super) fn sub_n(&mut self, k: u64, n: u32) {
        if let Some(c) = self.map.get_mut(&k) {
            *c = c.saturating_sub(n);
            if *c == 0 {
                self.map.remove(&k);
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

/// How many documents hold each line of a text (0 for a line too short to count), by its two
/// keys ([`LineKey`]): `exact` for the veto's repeated lines, `template` for the template
/// lines left out of its body.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct LineDocs {
    pub(super) exact: Vec<u32>,
    pub(super) template: Vec<u32>,
}

/// Each text's line keys (`None`: a line too short to count) and how many documents hold its
/// lines: `stored(keys)` gives the stored documents' counts of each line's two keys (the
/// caller takes the engine's read lock for it), to which the batch's own are added, each
/// distinct text once and each of its keys once.
pub(super) fn line_docs_batch(
    rules: &VetoRules,
    texts: &[&str],
    stored: impl FnOnce(&[Vec<Option<LineKey>>]) -> Vec<Vec<(u32, u32)>>,
) -> (Vec<Vec<Option<LineKey>>>, Vec<LineDocs>) {
    let keys: Vec<Vec<Option<LineKey>>> = texts.par_iter().map(|t| rules.line_keys(t)).collect();
    let mut batch: HashMap<u64, u32, FastBuild> = HashMap::default();
    let mut texts_seen: HashSet<u64, FastBuild> = HashSet::default();
    let mut lines_seen: HashSet<u64, FastBuild> = HashSet::default();
    for (t, ks) in texts.iter().zip(&keys) {
        if !texts_seen.insert(xxh3(t.as_bytes())) {
            continue;
        }
        lines_seen.clear();
        for k in ks.iter().flatten().flat_map(|k| [k.exact, k.template]) {
            if lines_seen.insert(k) {
                *batch.entry(k).or_insert(0) += 1;
            }
        }
    }
    let in_batch = |k: u64| batch.get(&k).copied().unwrap_or(0);
    let stored = stored(&keys);
    let docs = keys
        .iter()
        .zip(&stored)
        .map(|(ks, st)| {
            let (exact, template) = ks
                .iter()
                .zip(st)
                .map(|(k, &(e, t))| {
                    k.map_or((0, 0), |k| {
                        (e + in_batch(k.exact), t + in_batch(k.template))
                    })
                })
                .unzip();
            LineDocs { exact, template }
        })
        .collect();
    (keys, docs)
}

/// The veto's sketch of `text`, whose lines have `keys` and are held by `line_docs`
/// documents ([`line_docs_batch`]), given its normalised whole
/// ([`VetoRules::normalize_whole`]); `whole` is `None` when its distinct part is put off
/// ([`super::sketch::Deferred`]), which then keeps the line counts to compute it later.
pub(super) fn veto_sketch(
    rules: &VetoRules,
    text: &str,
    whole: Option<&str>,
    keys: &[Option<LineKey>],
    line_docs: Vec<u32>,
) -> VetoSketch {
    let distinct = whole.and_then(|w| rules.distinct_part_normalized(text, w, &line_docs));
    let min_docs = rules.options().min_docs;
    let mut lines: Vec<u64> = keys
        .iter()
        .flatten()
        .flat_map(|k| [k.exact, k.template])
        .collect();
    lines.sort_unstable();
    lines.dedup();
    let mut distinct_lines: Vec<u64> = keys
        .iter()
        .zip(&line_docs)
        .filter(|(_, &n)| n < min_docs)
        .filter_map(|(k, _)| k.map(|k| k.exact))
        .collect();
    distinct_lines.sort_unstable();
    distinct_lines.dedup();
    VetoSketch {
        lines,
        had_repeats: line_docs.iter().any(|&n| n >= min_docs),
        distinct_lines,
        part: distinct.as_ref().map(|d| d.kept()),
        distinct,
        line_docs: if whole.is_none() {
            line_docs
        } else {
            Vec::new()
        },
    }
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

    /// Regression: a data directory indexed under the previous veto (exact line keys only, no
    /// body search) must be refused by name, not read with line counts whose keys mean
    /// something else.
    #[test]
    fn directory_of_the_previous_veto_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(1_700_000_000_000));
        let cfg = |veto: crate::template_veto::TemplateVetoOptions| EngineConfig {
            sync: SyncMode::None,
            maintenance_interval: None,
            template_veto: Some(veto),
            ..EngineConfig::default()
        };
        let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
        let old = crate::template_veto::TemplateVetoOptions::whole_texts();
        let e = Engine::open(dir.path(), fp.clone(), cfg(old), clock.clone()).unwrap();
        e.check_and_insert(Doc::text("p0", page(0))).unwrap();
        e.shutdown().unwrap();
        drop(e);
        let now = crate::template_veto::TemplateVetoOptions::default();
        match Engine::open(dir.path(), fp, cfg(now), clock.clone()) {
            Err(crate::engine::EngineError::ConfigMismatch { difference, .. }) => {
                assert!(difference.contains("template_veto"), "{difference}");
            }
            Err(e) => panic!("another error: {e}"),
            Ok(_) => panic!("opened a directory of the previous veto"),
        }
    }

    /// How many stored documents hold the template's first line.
    fn template_count(e: &Engine) -> u32 {
        let line = TEMPLATE.lines().next().unwrap();
        let shared = &e.shared;
        let rules = shared.auto.as_ref().unwrap().veto.as_ref().unwrap();
        let key = rules.line_keys(line)[0].unwrap();
        shared.read().lines.get(key.exact)
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

    /// Forty short posts, each cut in two by one ad line (a template: 40 pages hold it).
    fn posts_cut_by_an_ad() -> (Vec<String>, Vec<String>) {
        // Words of letters only (a cut through a number would change its digit runs).
        let word = |i: usize| -> String {
            let mut n = i * 7919 % 17_576 + 17_576;
            let mut w = String::new();
            while n > 0 {
                w.push(char::from(b'a' + (n % 26) as u8));
                n /= 26;
            }
            w
        };
        let words: Vec<String> = (0..400).map(word).collect();
        let posts: Vec<String> = (0..40)
            .map(|i| {
                (0..8)
                    .map(|j| words[(i * 8 + j) % 400].as_str())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        let ad = "Sponsored: cloud servers from five dollars a month, start a free trial today.";
        let pages = posts
            .iter()
            .map(|p| {
                let cut = p.len() / 2;
                format!("{}\n{ad}\n{}", &p[..cut], &p[cut..])
            })
            .collect();
        (posts, pages)
    }

    /// Regression: bodies were searched, never indexed, so a post stored cut by an ad was not
    /// found by its bare copy (which has no template line, so no body to search with). They
    /// are indexed with their documents, and rebuilt from the log and from a snapshot.
    #[test]
    fn bare_posts_find_their_copies_stored_in_templates_across_restart() {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(1_700_000_000_000));
        let (posts, pages) = posts_cut_by_an_ad();
        let e = open(dir.path(), &clock);
        let docs: Vec<Doc> = pages
            .iter()
            .enumerate()
            .map(|(i, p)| Doc::text(format!("p{i}"), p.clone()))
            .collect();
        for r in e.check_and_insert_batch(docs) {
            assert!(r.unwrap().stored);
        }
        let found = |e: &Engine| -> Vec<Vec<String>> {
            posts
                .iter()
                .map(|p| {
                    let q = e.query(&Content::Text(p.clone())).unwrap();
                    q.hits.into_iter().map(|h| h.id).collect()
                })
                .collect()
        };
        let expected: Vec<Vec<String>> = (0..40).map(|i| vec![format!("p{i}")]).collect();
        assert_eq!(found(&e), expected);
        drop(e);
        let e = open(dir.path(), &clock);
        assert_eq!(found(&e), expected, "rebuilt from the log");
        e.shutdown().unwrap();
        drop(e);
        let e = open(dir.path(), &clock);
        assert_eq!(found(&e), expected, "rebuilt from the snapshot");
        let o = e
            .check_and_insert(Doc::text("bare", posts[3].clone()))
            .unwrap();
        assert!(
            matches!(&o.decision, Decision::Duplicate { of, .. } if of == "p3"),
            "{o:?}"
        );
    }

    /// Regression: pages of a new template sent one at a time were duplicates of the first
    /// page stored with it, for ever — they matched it on the template alone, and as
    /// duplicates their lines were never counted, so the template was never learned. Its
    /// duplicates' lines now count: once the template is held by `template_docs` documents,
    /// a page that shares nothing else with the first is stored. The counts survive a
    /// restart from the log and from a snapshot, and leave with their time segment.
    #[test]
    fn pages_of_a_new_template_sent_one_at_a_time_are_learned_from_their_duplicates() {
        const LONG_TEMPLATE: &str = "\
            Editor's note: the views expressed in this article are the author's own and not the site's.\n\
            Copyright: no part of this article may be reproduced without our written permission.\n\
            Follow us to receive a daily selection of articles, interviews and exclusive material.\n\
            Subscribe to the newsletter for the week's most read stories, delivered every Sunday.\n\
            Readers can send corrections to the editors through the contact page of the site.\n";
        const WORDS: [&str; 40] = [
            "harbour",
            "violin",
            "glacier",
            "tractor",
            "lantern",
            "orchid",
            "meteor",
            "saddle",
            "quarry",
            "falcon",
            "pepper",
            "compass",
            "blanket",
            "cathedral",
            "dolphin",
            "ember",
            "furnace",
            "gazette",
            "hammock",
            "iceberg",
            "juniper",
            "kettle",
            "ledger",
            "mosaic",
            "nutmeg",
            "oyster",
            "pendulum",
            "quiver",
            "rooftop",
            "sapphire",
            "thimble",
            "umbrella",
            "velvet",
            "walnut",
            "yardstick",
            "zeppelin",
            "anvil",
            "biscuit",
            "canyon",
            "drizzle",
        ];
        // Eight words a page, drawn by a small linear congruential generator: bodies share
        // nothing but chance words.
        let page = |i: usize| {
            let mut x = (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let body: Vec<&str> = (0..8)
                .map(|_| {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    WORDS[(x >> 33) as usize % WORDS.len()]
                })
                .collect();
            format!("{}\n{LONG_TEMPLATE}", body.join(" "))
        };
        let count = |e: &Engine| {
            let line = LONG_TEMPLATE.lines().next().unwrap().trim();
            let rules = e.shared.auto.as_ref().unwrap().veto.as_ref().unwrap();
            let key = rules.line_keys(line)[0].unwrap();
            e.shared.read().lines.get(key.exact)
        };
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(1_700_000_000_000));
        let e = open(dir.path(), &clock);
        let n = 45;
        let answers: Vec<_> = (0..n)
            .map(|i| {
                e.check_and_insert(Doc::text(format!("p{i}"), page(i)))
                    .unwrap()
            })
            .collect();
        assert!(
            matches!(&answers[1].decision, Decision::Duplicate { of, .. } if of == "p0"),
            "before the template is known a page matches the first on it: {:?}",
            answers[1]
        );
        for (i, a) in answers.iter().enumerate().skip(n - 5) {
            assert!(a.stored, "page {i}, after the template was learned: {a:?}");
        }
        assert_eq!(count(&e), n as u32, "stored pages and counted duplicates");
        drop(e);
        let e = open(dir.path(), &clock);
        assert_eq!(count(&e), n as u32, "rebuilt from the log");
        e.shutdown().unwrap();
        drop(e);
        let e = open(dir.path(), &clock);
        assert_eq!(count(&e), n as u32, "rebuilt from the snapshot");
        let late = e.check_and_insert(Doc::text("late", page(n))).unwrap();
        assert!(late.stored, "{late:?}");
        clock.advance(Duration::from_secs(2 * 3600));
        e.maintain().unwrap();
        assert_eq!(count(&e), 0, "expired with their segment");
    }

    /// The line counts follow the stored documents and the counted duplicates: exact copies
    /// add nothing, removal and expiry take lines out, and a restart (from the log, or a
    /// snapshot and the log) rebuilds the same counts.
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
        assert!(stored > 1 && stored < 10);
        // The stored pages and their near-duplicates (not exact copies) are counted.
        assert_eq!(template_count(&e), 10);
        // An exact copy is a duplicate and is not counted.
        let copy = e.check_and_insert(Doc::text("copy", page(0))).unwrap();
        assert!(matches!(
            copy.decision,
            Decision::Duplicate {
                stage: crate::detect::Stage::Exact,
                ..
            }
        ));
        assert_eq!(template_count(&e), 10);
        assert!(e.remove("p0").unwrap());
        assert_eq!(template_count(&e), 9);
        drop(e);
        let e = open(dir.path(), &clock);
        assert_eq!(template_count(&e), 9, "rebuilt from the log");
        e.shutdown().unwrap();
        drop(e);
        let e = open(dir.path(), &clock);
        assert_eq!(template_count(&e), 9, "rebuilt from the snapshot");
        clock.advance(Duration::from_secs(2 * 3600));
        e.maintain().unwrap();
        assert_eq!(template_count(&e), 0, "expired with their segment");
    }
}
