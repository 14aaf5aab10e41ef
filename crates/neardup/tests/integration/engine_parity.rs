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
use neardup::engine::{Decision, Doc, Engine, EngineConfig, EngineError, ManualClock, SyncMode};
use neardup::eval::{jsonl_sources, make_set, paragraph_sources, MakeOptions, SourceDoc};
use neardup::policy::{AutoDetector, PolicyOptions};
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

/// Paragraphs of the bundled fixtures.
fn fixtures() -> Vec<SourceDoc> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    ["sanguo_ch1.txt", "moby_dick_excerpt.txt"]
        .iter()
        .flat_map(|f| paragraph_sources(&std::fs::read_to_string(dir.join(f)).unwrap(), f, 20))
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
    }
    out.push(String::new()); // an empty document: its own cluster in both
    out
}

/// What one document's decision is, comparable across the two faces: the position of the
/// document it duplicates (None: kept), the stage and the similarity.
type Decided = Option<(usize, String, Option<u32>, Option<u64>)>;

fn engine_cfg() -> EngineConfig {
    EngineConfig {
        sync: SyncMode::None,
        maintenance_interval: None,
        ..EngineConfig::default()
    }
}

fn stream(
    dir: &std::path::Path,
    texts: &[String],
    restart_at: &[usize],
    shutdown: bool,
) -> Vec<Decided> {
    let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let mut e = Some(Engine::open(dir, fp.clone(), engine_cfg(), clock.clone()).unwrap());
    let mut out = Vec::new();
    let mut start = 0;
    let mut cuts: Vec<usize> = restart_at.to_vec();
    cuts.push(texts.len());
    for end in cuts {
        for chunk_start in (start..end).step_by(37) {
            let chunk_end = (chunk_start + 37).min(end);
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
        e = Some(Engine::open(dir, fp.clone(), engine_cfg(), clock.clone()).unwrap());
    }
    out
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
    let want: Vec<Decided> = batch
        .outcomes
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
        .collect();
    let dups = want.iter().filter(|w| w.is_some()).count();
    assert!(
        dups * 10 > texts.len(),
        "the set must hold many near-duplicates ({dups} of {})",
        texts.len()
    );
    let stages: std::collections::BTreeSet<&str> =
        want.iter().flatten().map(|w| w.1.as_str()).collect();
    assert!(stages.len() >= 2, "several stages decide: {stages:?}");
    eprintln!(
        "{} documents, {dups} duplicates, stages {stages:?}, corpora: {}",
        texts.len(),
        corpora().is_some()
    );

    // Straight through; restarts from snapshot + log; restarts from the log alone.
    let n = texts.len();
    for (restarts, shutdown) in [
        (vec![], true),
        (vec![n / 3, 2 * n / 3], true),
        (vec![n / 2], false),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let got = stream(dir.path(), &texts, &restarts, shutdown);
        assert_eq!(got.len(), want.len());
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(
                g, w,
                "document {i} (restarts at {restarts:?}, shutdown {shutdown}): engine {g:?}, dedup {w:?}"
            );
        }
    }
}
