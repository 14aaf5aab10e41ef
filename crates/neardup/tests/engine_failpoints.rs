//! Engine behaviour when the store fails at precise points (cargo feature `failpoints`):
//! a torn log write, a failure between write and fdatasync, and failures while snapshotting.
//! The failing request gets an error (never a "unique"), the engine reports itself unhealthy
//! and refuses writes, and after a restart every acknowledged document is present exactly
//! once and nothing unacknowledged is visible as half-written state.

use std::sync::{Arc, Mutex};

use neardup::engine::{Decision, Doc, Engine, EngineConfig, EngineError, ManualClock};
use neardup::{FingerprintConfig, Fingerprinter};
use neardup_store::failpoints::{self, Action};

/// The failpoint registry is process-global: one test at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn open(dir: &std::path::Path) -> Engine {
    Engine::open(
        dir,
        Fingerprinter::new(FingerprintConfig::default()).unwrap(),
        EngineConfig {
            detector: neardup::engine::EngineDetector::Simhash,
            maintenance_interval: None,
            ..EngineConfig::default()
        },
        Arc::new(ManualClock::new(1_699_984_800_000)),
    )
    .unwrap()
}

fn fp(i: u64) -> u64 {
    neardup::index::random::SplitMix64::new(i).next()
}

/// Stores docs 0..5, arms `point`, runs `fail` (which must fail), then reopens and checks.
fn scenario(point: &str, fail: impl FnOnce(&Engine) -> bool, failed_doc_may_exist: bool) {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    failpoints::clear();
    let dir = tempfile::tempdir().unwrap();
    {
        let e = open(dir.path());
        for i in 0..5 {
            let o = e
                .check_and_insert(Doc::fingerprint(format!("d{i}"), fp(i)))
                .unwrap();
            assert_eq!(o.decision, Decision::Unique);
        }
        failpoints::set(point, Action::Error);
        assert!(fail(&e), "{point}: the operation should have failed");
        failpoints::clear();
        // No read sees a write that was refused.
        assert!(
            e.get("failed").is_none(),
            "{point}: refused document readable"
        );
        assert!(
            e.query_fingerprint(fp(77))
                .hits
                .iter()
                .all(|h| h.id != "failed"),
            "{point}: a query points at the refused document"
        );
        if let Err(why) = e.health() {
            // Regression: the reason repeated itself ("not accepting writes: not accepting
            // writes: …").
            assert_eq!(why.matches("not accepting writes").count(), 1, "{why}");
            let err = e
                .check_and_insert(Doc::fingerprint("again", fp(98)))
                .unwrap_err()
                .to_string();
            assert_eq!(err.matches("not accepting writes").count(), 1, "{err}");
            assert!(matches!(
                e.check_and_insert(Doc::fingerprint("after", fp(99))),
                Err(EngineError::Unavailable { .. }) | Err(EngineError::Store(_))
            ));
        } else {
            // A failed snapshot loses nothing: the log still holds every record.
            assert!(
                failed_doc_may_exist,
                "{point}: a failed write must make the engine unhealthy"
            );
            let o = e
                .check_and_insert(Doc::fingerprint("after", fp(99)))
                .unwrap();
            assert_eq!(o.decision, Decision::Unique);
        }
    }
    let e = open(dir.path());
    for i in 0..5 {
        assert_eq!(
            e.get(&format!("d{i}")).unwrap().fingerprint,
            Some(fp(i)),
            "{point}: d{i} lost"
        );
    }
    if !failed_doc_may_exist {
        assert!(e.get("failed").is_none(), "{point}: torn record visible");
    }
    if !failed_doc_may_exist {
        assert!(e.get("after").is_none());
    }
    // Still fully usable: no duplicate copies, new writes work.
    assert_eq!(e.query_fingerprint(fp(3)).hits.len(), 1);
    assert_eq!(
        e.check_and_insert(Doc::fingerprint("d3", fp(3)))
            .unwrap()
            .decision,
        Decision::Duplicate {
            of: "d3".into(),
            distance: Some(0),
            similarity: None,
            stage: neardup::engine::Stage::Id,
        }
    );
    assert_eq!(
        e.check_and_insert(Doc::fingerprint("new", fp(1234)))
            .unwrap()
            .decision,
        Decision::Unique
    );
}

fn insert_fails(e: &Engine) -> bool {
    e.check_and_insert(Doc::fingerprint("failed", fp(77)))
        .is_err()
}

#[test]
fn torn_log_write() {
    scenario("torn-write", insert_fails, false);
}

#[test]
fn failure_between_write_and_sync() {
    // The record reached the OS, so it may survive; it was never acknowledged.
    scenario("after-write-before-sync", insert_fails, true);
}

#[test]
fn failure_before_write() {
    scenario("log-before-write", insert_fails, false);
}

#[test]
fn snapshot_failures() {
    for point in [
        "snapshot-before-sync",
        "before-rename",
        "after-rename-before-dir-sync",
    ] {
        scenario(point, |e| e.snapshot().is_err(), true);
    }
}

/// Regression: a document entered memory before its log write succeeded, so after a refused
/// write (503) `GET` returned it and queries answered "duplicate" of it until restart. Under
/// the `auto` detector as under simhash.
#[test]
fn refused_write_leaves_no_trace_auto() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    failpoints::clear();
    let dir = tempfile::tempdir().unwrap();
    let e = Engine::open(
        dir.path(),
        Fingerprinter::new(FingerprintConfig::default()).unwrap(),
        EngineConfig {
            maintenance_interval: None,
            ..EngineConfig::default()
        },
        Arc::new(ManualClock::new(1_699_984_800_000)),
    )
    .unwrap();
    let text = "一个字符被替换的长新闻文本，".repeat(30);
    e.check_and_insert(Doc::text(
        "kept",
        "完全不同的另一篇文章内容，讲的是天气。".repeat(20),
    ))
    .unwrap();
    failpoints::set("torn-write", Action::Error);
    assert!(e
        .check_and_insert(Doc::text("failed", text.clone()))
        .is_err());
    failpoints::clear();
    assert!(e.get("failed").is_none());
    // A query answers without the refused document (an error would not be an answer either).
    if let Ok(q) = e.query(&neardup::engine::Content::Text(text)) {
        assert!(q.hits.iter().all(|h| h.id != "failed"), "{q:?}");
    }
    assert!(e.get("kept").is_some(), "durable documents stay readable");
}
