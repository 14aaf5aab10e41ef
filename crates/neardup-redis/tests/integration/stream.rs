//! The shared-log backend ([`StreamEngine`]) against a real redis-server: instances answer what
//! batch dedup answers, race to exactly one unique per group, rebuild from the log, survive a
//! Redis restart with `appendfsync always`, and refuse a log that lost entries they applied.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::common::RedisServer;
use neardup::dedup::{dedup, Keep};
use neardup::engine::{Decision, Doc, EngineConfig, EngineError, ManualClock, Outcome};
use neardup::eval::{jsonl_sources, make_set, sentence_sources, MakeOptions, SourceDoc};
use neardup::policy::{AutoDetector, PolicyOptions};
use neardup::{FingerprintConfig, Fingerprinter};
use neardup_redis::{Error, StreamEngine};

const T0: i64 = 1_700_000_000_000;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn fp() -> Fingerprinter {
    Fingerprinter::new(FingerprintConfig::default()).unwrap()
}

async fn instance(
    url: &str,
    prefix: &str,
    dir: &std::path::Path,
    cfg: EngineConfig,
) -> Result<StreamEngine, Error> {
    let clock = Arc::new(ManualClock::new(T0));
    StreamEngine::connect(url, prefix, dir, fp(), cfg, clock).await
}

/// The configuration of the instances: `auto` without the template veto, whose decisions are
/// `dedup`'s under any batching (the veto's line counts depend on request boundaries).
fn cfg() -> EngineConfig {
    EngineConfig {
        maintenance_interval: None,
        detector: neardup::engine::EngineDetector::auto(false),
        template_veto: None,
        ..EngineConfig::default()
    }
}

/// Real text: `shared/corpora` when present beside the repository, else sentences and runs of
/// sentences of the core crate's bundled fixtures.
fn sources() -> Vec<Vec<SourceDoc>> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let corpora = std::env::var_os("NEARDUP_CORPORA")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("../../../shared/corpora"));
    let corpus = |name: &str, n: usize| jsonl_sources(&corpora.join(name), n, 3000).ok();
    if let (Some(a), Some(b)) = (
        corpus("zh_fortunes.jsonl", 300),
        corpus("en_debian_docs.jsonl", 150),
    ) {
        return vec![a, b];
    }
    let dir = root.join("../neardup/tests/fixtures");
    ["sanguo_ch1.txt", "moby_dick_excerpt.txt"]
        .iter()
        .map(|f| sentence_sources(&std::fs::read_to_string(dir.join(f)).unwrap(), f))
        .collect()
}

/// Planted near-duplicates of real text, short and long.
fn texts() -> Vec<String> {
    let mut out = Vec::new();
    for (i, g) in sources().iter().enumerate() {
        let set = make_set(
            g,
            &MakeOptions {
                seed: 11 + i as u64,
                max_sources: 120,
                min_chars: 10,
                ..MakeOptions::default()
            },
        );
        out.extend(set.docs.into_iter().map(|d| d.text));
    }
    out
}

/// (position duplicated, stage) of an answer, with ids `d<position>`.
fn decided(o: &Outcome) -> Option<(usize, String)> {
    match &o.decision {
        Decision::Unique => None,
        Decision::Duplicate { of, stage, .. } => {
            Some((of[1..].parse().unwrap(), stage.to_string()))
        }
    }
}

#[test]
fn two_instances_answer_what_dedup_answers() {
    let redis = RedisServer::start(false);
    let dir = tempfile::tempdir().unwrap();
    let texts = texts();
    let batch = dedup(
        AutoDetector::new(fp(), PolicyOptions::default()).unwrap(),
        &texts,
        Keep::First,
    )
    .unwrap();
    let want: Vec<Option<(usize, String)>> = batch
        .outcomes
        .iter()
        .map(|o| {
            o.duplicate_of
                .map(|d| (d as usize, o.stage.unwrap().to_string()))
        })
        .collect();
    let dups = want.iter().flatten().count();
    assert!(dups * 10 > texts.len(), "{dups} of {}", texts.len());
    rt().block_on(async {
        let a = instance(&redis.url(), "p", dir.path(), cfg())
            .await
            .unwrap();
        let b = instance(&redis.url(), "p", dir.path(), cfg())
            .await
            .unwrap();
        // Batches of 13 documents, alternating between the instances: each must first learn
        // what the other stored.
        let mut got = Vec::new();
        for (k, chunk) in texts.chunks(13).enumerate() {
            let base = k * 13;
            let docs: Vec<Doc> = chunk
                .iter()
                .enumerate()
                .map(|(i, t)| Doc::text(format!("d{}", base + i), t.clone()).at(T0))
                .collect();
            let inst = if k % 2 == 0 { &a } else { &b };
            for r in inst.check_and_insert(docs).await {
                got.push(match r {
                    Ok(o) => decided(&o),
                    Err(EngineError::Fingerprint(neardup::Error::EmptyDocument { .. })) => None,
                    Err(e) => panic!("{e}"),
                });
            }
        }
        assert_eq!(got.len(), want.len());
        let differ: Vec<usize> = (0..got.len()).filter(|&i| got[i] != want[i]).collect();
        assert!(
            differ.is_empty(),
            "{} of {} answers differ from dedup's, first at {}: got {:?}, dedup {:?}",
            differ.len(),
            got.len(),
            differ[0],
            got[differ[0]],
            want[differ[0]]
        );
        let sa = a.stats().await.unwrap();
        let sb = b.stats().await.unwrap();
        let kept = (want.len() - dups) as u64;
        assert_eq!((sa.documents, sb.documents), (kept, kept));
        assert!(sa.retries > 0 && sb.retries > 0, "{sa:?} {sb:?}");

        // A third instance started now rebuilds the same index from the log.
        let c = instance(&redis.url(), "p", dir.path(), cfg())
            .await
            .unwrap();
        assert_eq!(c.stats().await.unwrap().documents, kept);
        let again: Vec<Doc> = (0..texts.len())
            .filter(|&i| !texts[i].trim().is_empty() && want[i].is_none())
            .take(40)
            .map(|i| Doc::text(format!("again{i}"), texts[i].clone()).at(T0))
            .collect();
        for r in c.check_and_insert(again).await {
            assert!(matches!(r.unwrap().decision, Decision::Duplicate { .. }));
        }
    });
}

/// `words` pseudo-random lowercase words: texts of different seeds share almost no shingles.
fn random_text(seed: u64, words: usize) -> String {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    (0..words)
        .map(|_| {
            let len = 3 + next() % 6;
            (0..len)
                .map(|_| (b'a' + (next() % 26) as u8) as char)
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn concurrent_copies_on_two_instances_keep_exactly_one() {
    let redis = RedisServer::start(false);
    let dir = tempfile::tempdir().unwrap();
    let groups = 1000;
    rt().block_on(async {
        let a = Arc::new(
            instance(&redis.url(), "race", dir.path(), cfg())
                .await
                .unwrap(),
        );
        let b = Arc::new(
            instance(&redis.url(), "race", dir.path(), cfg())
                .await
                .unwrap(),
        );
        let mut tasks = Vec::new();
        for g in 0..groups {
            let text = random_text(g as u64, 40);
            for (k, inst) in [&a, &b].into_iter().enumerate() {
                let inst = Arc::clone(inst);
                let t = text.clone();
                tasks.push(tokio::spawn(async move {
                    let o = inst
                        .check_and_insert(vec![Doc::text(format!("g{g}-{k}"), t).at(T0)])
                        .await
                        .pop()
                        .unwrap()
                        .unwrap();
                    (g, o.decision == Decision::Unique)
                }));
            }
        }
        let mut unique = vec![0u32; groups];
        for t in tasks {
            let (g, u) = t.await.unwrap();
            unique[g] += u32::from(u);
        }
        let wrong: Vec<usize> = (0..groups).filter(|&g| unique[g] != 1).collect();
        assert!(
            wrong.is_empty(),
            "groups without exactly one unique: {wrong:?}"
        );
        assert_eq!(a.stats().await.unwrap().documents, groups as u64);
        assert_eq!(b.stats().await.unwrap().documents, groups as u64);
    });
}

/// The template veto on a shared log: every instance rebuilds the line counts from the log's
/// records, so an instance refuses matches that rest only on a page template shared with
/// documents another instance stored, and still finds their copies.
#[test]
fn the_template_veto_reaches_every_instance() {
    let redis = RedisServer::start(false);
    let dir = tempfile::tempdir().unwrap();
    let template = "Editor's note: the views expressed in this article are the author's own.\n\
        Copyright: no part of this article may be reproduced without written permission.\n\
        Follow us to receive a daily selection of articles and exclusive material.\n";
    let page = |i: u64| format!("{}\n{template}", random_text(i, 14));
    let pages = |from: u64, to: u64| -> Vec<Doc> {
        (from..to)
            .map(|i| Doc::text(format!("p{i}"), page(i)).at(T0))
            .collect()
    };
    let duplicates = |answers: Vec<Result<Outcome, EngineError>>| {
        answers
            .into_iter()
            .filter(|r| r.as_ref().unwrap().decision != Decision::Unique)
            .count()
    };
    rt().block_on(async {
        let vetoed = EngineConfig {
            maintenance_interval: None,
            ..EngineConfig::default()
        };
        let a = instance(&redis.url(), "t", dir.path(), vetoed.clone())
            .await
            .unwrap();
        let b = instance(&redis.url(), "t", dir.path(), vetoed)
            .await
            .unwrap();
        assert_eq!(duplicates(a.check_and_insert(pages(0, 30)).await), 0);
        // b learns the template from a's records.
        assert_eq!(duplicates(b.check_and_insert(pages(30, 60)).await), 0);
        let copy = b
            .check_and_insert(vec![Doc::text("copy", page(3)).at(T0)])
            .await
            .pop()
            .unwrap()
            .unwrap();
        assert!(
            matches!(&copy.decision, Decision::Duplicate { of, .. } if of == "p3"),
            "{copy:?}"
        );
        // Without the veto the same pages match each other on the template.
        let c = instance(&redis.url(), "plain", dir.path(), cfg())
            .await
            .unwrap();
        c.check_and_insert(pages(0, 30)).await;
        assert!(duplicates(c.check_and_insert(pages(30, 60)).await) > 0);
    });
}

#[test]
fn removal_and_reads_reach_every_instance() {
    let redis = RedisServer::start(false);
    let dir = tempfile::tempdir().unwrap();
    rt().block_on(async {
        let a = instance(&redis.url(), "rm", dir.path(), cfg())
            .await
            .unwrap();
        let b = instance(&redis.url(), "rm", dir.path(), cfg())
            .await
            .unwrap();
        let text = "the harbour master said the ferry would not sail until the storm had passed";
        let o = a.check_and_insert(vec![Doc::text("x", text).at(T0)]).await;
        assert_eq!(o[0].as_ref().unwrap().decision, Decision::Unique);
        // B reads what A stored.
        assert!(b.get("x").await.unwrap().is_some());
        let q = b
            .query(vec![neardup::engine::Content::Text(text.into())])
            .await;
        assert_eq!(q[0].as_ref().unwrap().hits[0].id, "x");
        // B removes it; A no longer has it, and the text is unique again.
        assert!(b.remove("x").await.unwrap());
        assert!(!b.remove("x").await.unwrap());
        assert!(a.get("x").await.unwrap().is_none());
        let o = a.check_and_insert(vec![Doc::text("y", text).at(T0)]).await;
        assert_eq!(o[0].as_ref().unwrap().decision, Decision::Unique);
        // Bad input is refused before anything is appended.
        let o = a.check_and_insert(vec![Doc::text("", text)]).await;
        assert!(matches!(o[0], Err(EngineError::InvalidId { .. })));
    });
}

#[test]
fn another_configuration_is_refused_with_both_values() {
    let redis = RedisServer::start(false);
    let dir = tempfile::tempdir().unwrap();
    rt().block_on(async {
        let _a = instance(&redis.url(), "cfg", dir.path(), cfg())
            .await
            .unwrap();
        let other = EngineConfig {
            retention: Duration::from_secs(3600),
            ..cfg()
        };
        let err = instance(&redis.url(), "cfg", dir.path(), other)
            .await
            .unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, Error::ConfigMismatch { .. }), "{msg}");
        assert!(
            msg.contains("retention_ms: stored 172800000, requested 3600000"),
            "{msg}"
        );
        // Another prefix is another index.
        instance(
            &redis.url(),
            "cfg2",
            dir.path(),
            EngineConfig {
                retention: Duration::from_secs(3600),
                ..cfg()
            },
        )
        .await
        .unwrap();
    });
}

#[test]
fn redis_restart_keeps_acknowledged_documents_and_a_lost_log_is_refused() {
    let mut redis = RedisServer::start(true);
    let dir = tempfile::tempdir().unwrap();
    let text = |i: usize| {
        format!(
            "bulletin {i}: the observatory recorded {} meteors between midnight and dawn, far \
             above the seasonal average of {}",
            i * 3 + 1,
            i + 40
        )
    };
    rt().block_on(async {
        let a = instance(&redis.url(), "dur", dir.path(), cfg())
            .await
            .unwrap();
        for i in 0..200 {
            let o = a
                .check_and_insert(vec![Doc::text(format!("b{i}"), text(i)).at(T0)])
                .await;
            assert_eq!(o[0].as_ref().unwrap().decision, Decision::Unique, "b{i}");
        }
        // SIGKILL: only what the AOF (appendfsync always) holds survives.
        redis.restart();
        let b = instance(&redis.url(), "dur", dir.path(), cfg())
            .await
            .unwrap();
        assert_eq!(b.stats().await.unwrap().documents, 200);
        for i in (0..200).step_by(17) {
            assert!(
                b.get(&format!("b{i}")).await.unwrap().is_some(),
                "b{i} lost"
            );
        }
        // The instance that was connected before reconnects and carries on (a request on the
        // broken connection answers Unavailable, as a 503 a client retries).
        let mut o = Vec::new();
        for _ in 0..5 {
            o = a
                .check_and_insert(vec![Doc::text("late", text(500)).at(T0)])
                .await;
            match &o[0] {
                Err(EngineError::Unavailable { .. }) => {
                    tokio::time::sleep(Duration::from_millis(200)).await
                }
                _ => break,
            }
        }
        assert_eq!(o[0].as_ref().unwrap().decision, Decision::Unique);

        // A log that lost entries this instance applied is refused, with the way out.
        redis.cli(&["FLUSHALL"]);
        let o = a
            .check_and_insert(vec![Doc::text("after", text(900)).at(T0)])
            .await;
        let msg = o[0].as_ref().unwrap_err().to_string();
        assert!(msg.contains("restart this instance"), "{msg}");
        assert!(a.health().await.is_err());
    });
}
