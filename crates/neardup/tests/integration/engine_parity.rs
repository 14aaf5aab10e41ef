//! One detector everywhere: documents streamed through the online engine in arrival order get
//! exactly the decisions of batch dedup (`neardup dedup`'s default detector and keep rule) on
//! the same documents — the same duplicate, the same stage, the same similarity — including
//! across restarts (from snapshot plus log, and from the log alone).
//!
//! Real text: sets planted from `shared/corpora` (`NEARDUP_CORPORA`, default
//! `../shared/corpora` beside the repository), or from the bundled fixtures when absent.

use std::path::PathBuf;
use std::sync::Arc;

use neardup::dedup::{dedup, Keep};
use neardup::detect::{Detector, Stage, Verdict};
use neardup::engine::{
    Clock, Decision, Doc, Engine, EngineConfig, EngineDetector, EngineError, ManualClock, SyncMode,
};
use neardup::eval::{jsonl_sources, make_set, sentence_sources, Kind, MakeOptions, SourceDoc};
use neardup::policy::{AutoDetector, PolicyOptions};
use neardup::template_veto::{
    DistinctPart, DistinctSketch, LineKey, TemplateVetoOptions, VetoRules,
};
use neardup::{FingerprintConfig, Fingerprinter};

fn corpora() -> Option<PathBuf> {
    let dir = std::env::var_os("NEARDUP_CORPORA")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpora")
        });
    dir.is_dir().then_some(dir)
}

/// Up to `n` texts of a JSONL corpus (each cut to 3,000 characters), or `None` without it.
fn corpus(name: &str, n: usize) -> Option<Vec<SourceDoc>> {
    jsonl_sources(&corpora()?.join(name), n, 3000).ok()
}

/// Sources cut from the bundled fixtures (when `shared/corpora` is absent): sentences and runs
/// of sentences ([`sentence_sources`]).
fn fixtures() -> Vec<SourceDoc> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    ["sanguo_ch1.txt", "moby_dick_excerpt.txt"]
        .iter()
        .flat_map(|f| sentence_sources(&std::fs::read_to_string(dir.join(f)).unwrap(), f))
        .collect()
}

/// A planted set per source group, concatenated: short and long, Chinese and English.
fn texts() -> Vec<String> {
    let groups: Vec<Vec<SourceDoc>> = match (
        corpus("zh_fortunes.jsonl", 400),
        corpus("zh_debian_docs.jsonl", 200),
        corpus("en_debian_docs.jsonl", 200),
    ) {
        (Some(a), Some(b), Some(c)) => vec![a, b, c],
        _ => vec![fixtures()],
    };
    let mut out = Vec::new();
    for (i, g) in groups.iter().enumerate() {
        let set = make_set(
            g,
            &MakeOptions {
                seed: 7 + i as u64,
                max_sources: 150,
                min_chars: 10,
                ..MakeOptions::default()
            },
        );
        out.extend(set.docs.into_iter().map(|d| d.text));
        // Reposts, quotes and excerpts of the same sources: quotes of long texts are found by
        // their sentences (passages), which the engine keeps in its log and snapshots.
        let set = make_set(
            g,
            &MakeOptions {
                seed: 70 + i as u64,
                max_sources: 100,
                min_chars: 10,
                kinds: vec![Kind::Repost, Kind::Quote, Kind::Excerpt],
                ..MakeOptions::default()
            },
        );
        out.extend(set.docs.into_iter().map(|d| d.text));
    }
    // Exact copies of earlier documents, in later requests: the engine puts their MinHash
    // sketch and distinct part off (their copy is stored) and must decide as dedup does.
    let copies: Vec<String> = out.iter().step_by(17).cloned().collect();
    out.extend(copies);
    out.push(String::new()); // an empty document: its own cluster in both
    out
}

/// What one document's decision is, comparable across the two faces: the position of the
/// document it duplicates (None: kept), the stage and the similarity.
type Decided = Option<(usize, String, Option<u32>, Option<u64>)>;

/// The engine's configuration, with or without the template veto.
fn engine_cfg(veto: bool) -> EngineConfig {
    let d = EngineConfig::default();
    EngineConfig {
        sync: SyncMode::None,
        maintenance_interval: None,
        detector: EngineDetector::auto(veto),
        template_veto: d.template_veto.clone().filter(|_| veto),
        ..d
    }
}

/// Documents per request in [`stream`].
const REQUEST: usize = 37;

fn stream(
    dir: &std::path::Path,
    texts: &[String],
    restart_at: &[usize],
    shutdown: bool,
    cfg: &EngineConfig,
) -> Vec<Decided> {
    let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let mut e = Some(Engine::open(dir, fp.clone(), cfg.clone(), clock.clone()).unwrap());
    let mut out = Vec::new();
    let mut start = 0;
    let mut cuts: Vec<usize> = restart_at.to_vec();
    cuts.push(texts.len());
    for end in cuts {
        for chunk_start in (start..end).step_by(REQUEST) {
            let chunk_end = (chunk_start + REQUEST).min(end);
            let docs = (chunk_start..chunk_end)
                .map(|i| Doc::text(format!("d{i}"), texts[i].clone()))
                .collect();
            for r in e.as_ref().unwrap().check_and_insert_batch(docs) {
                out.push(match r {
                    Ok(o) => match o.decision {
                        Decision::Unique => None,
                        Decision::Duplicate {
                            of,
                            distance,
                            similarity,
                            stage,
                        } => Some((
                            of[1..].parse().unwrap(),
                            stage.to_string(),
                            distance,
                            similarity.map(f64::to_bits),
                        )),
                    },
                    Err(EngineError::Fingerprint(neardup::Error::EmptyDocument { .. })) => None,
                    Err(e) => panic!("{e}"),
                });
            }
        }
        start = end;
        let engine = e.take().unwrap();
        if shutdown {
            engine.shutdown().unwrap();
        }
        drop(engine);
        // Each restart opens a new time segment (all stay within the retention): the restart
        // loads the earlier ones as past segments, their band tables built at once.
        clock.set(clock.now_ms() + cfg.retention.as_millis() as i64 / cfg.segments as i64);
        e = Some(Engine::open(dir, fp.clone(), cfg.clone(), clock.clone()).unwrap());
    }
    out
}

/// The decisions of a batch run, comparable with [`stream`]'s.
fn decided(c: &neardup::dedup::Clustering) -> Vec<Decided> {
    c.outcomes
        .iter()
        .map(|o| {
            o.duplicate_of.map(|d| {
                (
                    d as usize,
                    o.stage.unwrap().to_string(),
                    o.distance,
                    o.similarity.map(f64::to_bits),
                )
            })
        })
        .collect()
}

/// Streams `texts` straight through, with restarts from snapshot + log, and with a restart
/// from the log alone, and asserts every run decides as `want`.
fn assert_streams_decide(texts: &[String], want: &[Decided], cfg: &EngineConfig) {
    let n = texts.len();
    for (restarts, shutdown) in [
        (vec![], true),
        (vec![n / 3, 2 * n / 3], true),
        (vec![n / 2], false),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let got = stream(dir.path(), texts, &restarts, shutdown, cfg);
        assert_eq!(got.len(), want.len());
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert_eq!(
                g, w,
                "document {i} (restarts at {restarts:?}, shutdown {shutdown}): engine {g:?}, batch {w:?}"
            );
        }
    }
}

#[test]
fn streaming_through_the_engine_gives_dedups_decisions() {
    let texts = texts();
    let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
    let batch = dedup(
        AutoDetector::new(fp, PolicyOptions::default()).unwrap(),
        &texts,
        Keep::First,
    )
    .unwrap();
    let want = decided(&batch);
    let dups = want.iter().filter(|w| w.is_some()).count();
    assert!(
        dups * 10 > texts.len(),
        "the set must hold many near-duplicates ({dups} of {})",
        texts.len()
    );
    let stages: std::collections::BTreeSet<&str> =
        want.iter().flatten().map(|w| w.1.as_str()).collect();
    assert!(stages.len() >= 2, "several stages decide: {stages:?}");
    assert!(
        stages.contains("passage"),
        "quotes of long texts are found by their sentences: {stages:?}"
    );
    eprintln!(
        "{} documents, {dups} duplicates, stages {stages:?}, corpora: {}",
        texts.len(),
        corpora().is_some()
    );
    assert_streams_decide(&texts, &want, &engine_cfg(false));
}

/// Lines held by this many documents, duplicates included, make a document stored before any
/// of its lines repeated a template page (the engine's `UNLEARNED_TEMPLATE_DOCS`).
const UNLEARNED_TEMPLATE_DOCS: u32 = 8;

/// The online template veto as a batch detector, written from its definition: a line's count
/// is the number of stored documents and of duplicates answered (but of identical texts) that
/// hold it, plus the documents of the current batch (each distinct text once). Decided by `Deduper` one request at a time, it is what the
/// engine must answer.
struct OnlineVeto {
    inner: AutoDetector,
    /// The stored documents' bodies that are indexed.
    bodies: AutoDetector,
    rules: VetoRules,
    /// How many stored documents hold each line.
    stored: std::sync::RwLock<std::collections::HashMap<u64, u32>>,
    /// How many duplicates (not of an identical text) hold each line.
    duplicates: std::sync::RwLock<std::collections::HashMap<u64, u32>>,
    batch: std::sync::RwLock<std::collections::HashMap<u64, u32>>,
    parts: std::collections::HashMap<u32, DistinctPart>,
    /// The lines of the stored documents none of whose lines was repeated when stored.
    unlearned: std::collections::HashMap<u32, Vec<u64>>,
    /// The exact keys of the lines that were repeated when a thin page was stored (a
    /// repeated line, no distinct part, `VetoRules::thin`): each match asks again whether it
    /// is template-only.
    thin: std::collections::HashMap<u32, Vec<u64>>,
}

struct OnlineSketch {
    inner: neardup::policy::AutoSketch,
    body: Option<neardup::policy::AutoSketch>,
    /// Whether the body is indexed when the document is stored.
    index_body: bool,
    lines: Vec<u64>,
    had_repeats: bool,
    distinct_lines: Vec<u64>,
    distinct: Option<DistinctSketch>,
    /// When it is a thin page without a distinct part, its lines repeated now.
    thin: Option<Vec<u64>>,
}

impl Detector for OnlineVeto {
    type Sketch = OnlineSketch;
    fn name(&self) -> String {
        "online veto".into()
    }
    fn observe_batch(&self, texts: &[&str]) {
        let mut batch = self.batch.write().unwrap();
        batch.clear();
        let mut seen = std::collections::HashSet::new();
        for t in texts {
            if seen.insert(*t) {
                for k in self.rules.counted_lines(t) {
                    *batch.entry(k).or_insert(0) += 1;
                }
            }
        }
    }
    fn sketch(&self, text: &str) -> neardup::Result<OnlineSketch> {
        let batch = self.batch.read().unwrap();
        let stored = self.stored.read().unwrap();
        let duplicates = self.duplicates.read().unwrap();
        let n = |k: u64| {
            stored.get(&k).copied().unwrap_or(0)
                + duplicates.get(&k).copied().unwrap_or(0)
                + batch.get(&k).copied().unwrap_or(0)
        };
        let (line_docs, template_docs): (Vec<u32>, Vec<u32>) = self
            .rules
            .line_keys(text)
            .into_iter()
            .map(|k| k.map_or((0, 0), |k| (n(k.exact), n(k.template))))
            .unzip();
        // Template lines are left out of what the inner detector sketches, by their weight.
        let inner = self.inner.sketch(text)?;
        let body = match self.rules.body(text, &template_docs) {
            Some(b) => Some(self.inner.sketch(&b)?),
            None => None,
        };
        let min = TemplateVetoOptions::default().min_docs;
        // What it may share with a document stored before its template was known: lines held
        // by fewer than `min_docs` stored documents and documents of its batch, and by fewer
        // than `UNLEARNED_TEMPLATE_DOCS` documents in all.
        let template = UNLEARNED_TEMPLATE_DOCS;
        let stored_or_batch =
            |k: u64| stored.get(&k).copied().unwrap_or(0) + batch.get(&k).copied().unwrap_or(0);
        let mut distinct_lines: Vec<u64> = self
            .rules
            .line_keys(text)
            .into_iter()
            .filter(|k| k.is_some_and(|k| stored_or_batch(k.exact) < min && n(k.exact) < template))
            .filter_map(|k| k.map(|k| k.exact))
            .collect();
        distinct_lines.sort_unstable();
        distinct_lines.dedup();
        let index_body = body.is_some() && self.rules.body_is_own(text, &line_docs, &template_docs);
        let had_repeats = line_docs.iter().any(|&n| n >= min);
        let distinct = self.rules.distinct_part(text, &line_docs);
        Ok(OnlineSketch {
            inner,
            body,
            index_body,
            lines: self.rules.counted_lines(text),
            had_repeats,
            distinct_lines,
            thin: (had_repeats && distinct.is_none() && self.rules.thin(text, &line_docs)).then(
                || {
                    self.rules
                        .line_keys(text)
                        .into_iter()
                        .zip(&line_docs)
                        .filter(|(_, &n)| n >= min)
                        .filter_map(|(k, _)| k.map(|k| k.exact))
                        .collect()
                },
            ),
            distinct,
        })
    }
    fn find(&self, s: &OnlineSketch) -> Vec<Verdict> {
        // The whole text's matches among the whole texts and the indexed bodies (a document
        // found by both: the stronger), or when it has none, its body's.
        let search = |q: &neardup::policy::AutoSketch| {
            let mut found = self.inner.find(q);
            for v in self.bodies.find(q) {
                neardup::detect::keep_stronger(&mut found, v, u64::from(v.of));
            }
            self.vetted(s, found)
        };
        let found = search(&s.inner);
        let found = match &s.body {
            Some(body) if found.is_empty() => search(body),
            _ => found,
        };
        // A duplicate's lines count, but an identical text's (its match is exact).
        if !found.is_empty() && found.iter().all(|v| v.stage != Stage::Exact) {
            let mut duplicates = self.duplicates.write().unwrap();
            for k in &s.lines {
                *duplicates.entry(*k).or_insert(0) += 1;
            }
        }
        found
    }
    fn insert(&mut self, doc: u32, s: OnlineSketch) {
        self.insert_sketch(doc, s);
    }
}

impl OnlineVeto {
    fn vetted(&self, s: &OnlineSketch, mut found: Vec<Verdict>) -> Vec<Verdict> {
        // A document stored before its template was known is vetoed on lines held by
        // `min_docs` stored documents, or by `UNLEARNED_TEMPLATE_DOCS` stored documents and
        // duplicates.
        let (min, template) = (
            TemplateVetoOptions::default().min_docs,
            UNLEARNED_TEMPLATE_DOCS,
        );
        let stored = self.stored.read().unwrap();
        let duplicates = self.duplicates.read().unwrap();
        let vetoes = |k: &u64| {
            let s = stored.get(k).copied().unwrap_or(0);
            s >= min || s + duplicates.get(k).copied().unwrap_or(0) >= template
        };
        // Today's counts, stored documents and duplicates, by a line's exact key.
        let docs = |k: u64| {
            stored.get(&k).copied().unwrap_or(0) + duplicates.get(&k).copied().unwrap_or(0)
        };
        let template_only = |repeated: &Vec<u64>| {
            self.rules
                .template_only_now(repeated.iter().map(|&k| docs(k)), UNLEARNED_TEMPLATE_DOCS)
        };
        let empty = DistinctPart::template_only();
        found.retain(|v| {
            if s.distinct.is_none() {
                return true;
            }
            // A thin page is template-only once one of the lines repeated when it was stored
            // is a template line and every one is held by `UNLEARNED_TEMPLATE_DOCS` documents.
            if self.thin.get(&v.of).is_some_and(template_only) {
                return self.rules.stands(v, s.distinct.as_ref(), Some(&empty));
            }
            match self.unlearned.get(&v.of) {
                Some(theirs) => {
                    !theirs.iter().filter(|&&k| LineKey::is_exact(k)).any(vetoes)
                        || self.rules.stands_unlearned(
                            v,
                            s.distinct.as_ref(),
                            &s.distinct_lines,
                            theirs,
                        )
                }
                None => self
                    .rules
                    .stands(v, s.distinct.as_ref(), self.parts.get(&v.of)),
            }
        });
        found
    }
    fn insert_sketch(&mut self, doc: u32, s: OnlineSketch) {
        let mut stored = self.stored.write().unwrap();
        for k in &s.lines {
            *stored.entry(*k).or_insert(0) += 1;
        }
        drop(stored);
        if let Some(d) = &s.distinct {
            self.parts.insert(doc, self.rules.kept(d));
        }
        if !s.had_repeats {
            self.unlearned.insert(doc, s.lines.clone());
        }
        if let Some(t) = s.thin {
            self.thin.insert(doc, t);
        }
        if let (Some(body), true) = (s.body, s.index_body) {
            self.bodies.insert(doc, body);
        }
        self.inner.insert(doc, s.inner);
    }
}

/// A set whose negatives share long page templates, so that the veto decides.
pub(crate) fn templated_texts() -> Vec<String> {
    let templates = [
        "编者按：本文由本站特约作者投稿，观点仅代表作者本人，不代表本站立场。\n\
         版权声明：本文版权归原作者所有，未经授权，任何单位和个人不得转载、摘编或以其他方式使用。\n\
         读者交流群已开放，扫描页面底部二维码即可加入，与数万名读者一起讨论、分享与成长。\n",
        "Editor's note: the views expressed in this article are the author's own.\n\
         Copyright: no part of this article may be reproduced without written permission.\n\
         Follow us to receive a daily selection of articles and exclusive material.\n",
    ];
    let mut out = Vec::new();
    for (i, t) in texts().into_iter().enumerate() {
        out.push(match i % 3 {
            0 => t,
            k => format!("{t}\n{}", templates[k - 1]),
        });
        // Template-only pages (a table rule in a template), the first stored while their
        // template's lines are repeated but not yet template lines: judged again as their
        // template is learned.
        if i % 200 == 10 {
            for tpl in templates {
                out.push(format!("{TABLE_RULE}\n{tpl}"));
            }
        }
    }
    out
}

/// A page's own line of three letters, fewer than a distinct part needs.
const TABLE_RULE: &str = "|        |    |        +----------> [28:16] L3 索引";

#[test]
fn streaming_through_the_engine_under_the_template_veto_gives_the_online_rules_decisions() {
    let texts = templated_texts();
    let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
    let EngineDetector::Auto(policy) = EngineDetector::auto(true) else {
        unreachable!()
    };
    let mut dd = neardup::dedup::Deduper::new(OnlineVeto {
        inner: AutoDetector::new(fp.clone(), policy.clone()).unwrap(),
        // Bodies are found by their sentences in the whole texts' passage index.
        bodies: AutoDetector::new(fp.clone(), policy.clone())
            .unwrap()
            .into_body_index(),
        rules: VetoRules::new(fp.clone(), TemplateVetoOptions::default()).unwrap(),
        stored: Default::default(),
        duplicates: Default::default(),
        batch: Default::default(),
        parts: Default::default(),
        unlearned: Default::default(),
        thin: Default::default(),
    });
    // The engine's requests: cut at the restarts too (a request never spans one).
    let n = texts.len();
    let mut bounds: Vec<usize> = Vec::new();
    for (start, end) in [
        (0, n / 3),
        (n / 3, n / 2),
        (n / 2, 2 * n / 3),
        (2 * n / 3, n),
    ] {
        bounds.extend((start..end).step_by(REQUEST));
    }
    bounds.push(n);
    for w in bounds.windows(2) {
        dd.push_batch(&texts[w[0]..w[1]]).unwrap();
    }
    let want = decided(&dd.finish(Keep::First));
    // The veto decides on this set: some documents that are duplicates without it are
    // unique with it (template-only matches refused).
    let plain =
        decided(&dedup(AutoDetector::new(fp, policy).unwrap(), &texts, Keep::First).unwrap());
    let refused = plain
        .iter()
        .zip(&want)
        .filter(|(p, w)| p.is_some() && w.is_none())
        .count();
    assert!(
        refused > 0,
        "the veto refuses template-only matches: {refused} refused"
    );
    // A template-only page is the duplicate of template-only pages alone, once its template
    // is learned.
    let rule_pages: Vec<usize> = (0..texts.len())
        .filter(|&i| texts[i].starts_with(TABLE_RULE))
        .collect();
    assert!(rule_pages.len() >= 4, "{rule_pages:?}");
    let of_rule_pages = want
        .iter()
        .enumerate()
        .filter(|(_, w)| w.as_ref().is_some_and(|w| rule_pages.contains(&w.0)))
        .map(|(i, _)| i)
        .collect::<Vec<_>>();
    assert!(
        of_rule_pages.iter().all(|i| rule_pages.contains(i)),
        "rule pages {rule_pages:?}, their duplicates {of_rule_pages:?}"
    );
    // Every run is cut at n/3, n/2 and 2n/3 (restarts, or requests cut there).
    let n = texts.len();
    for (restarts, shutdown) in [
        (vec![n / 3, n / 2, 2 * n / 3], true),
        (vec![n / 3, n / 2, 2 * n / 3], false),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let got = stream(dir.path(), &texts, &restarts, shutdown, &engine_cfg(true));
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(
                g, w,
                "document {i} (restarts at {restarts:?}, shutdown {shutdown}): engine {g:?}, online rule {w:?}"
            );
        }
    }
}
