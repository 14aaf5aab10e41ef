//! SIGKILL crash test of the engine.
//!
//! The test re-executes its own binary as a child (`engine_crash_child`, active only when
//! `NEARDUP_ENGINE_CRASH_DIR` is set). The child opens the engine (`SyncMode::Always`, tiny
//! log segments, frequent snapshots and merges), and several threads submit documents drawn
//! from clusters of near-identical fingerprints, printing `ACK <id> <fp> <unique|dup> <of>`
//! after each answer. The parent kills it with SIGKILL at seeded-random moments (many rounds,
//! reusing the directory, so later rounds also recover from earlier kills), reopens the
//! engine and asserts: every document acknowledged `unique` is present with its fingerprint;
//! every fourth round kills the child **during recovery** (at a random instant between the
//! start of `Engine::open` and its return: torn-tail truncation, file cleanup, index builds,
//! the end-of-open merge), so the next recovery starts from a half-recovered directory;
//! every document a `dup` answer pointed at is present; and nothing is duplicated (no stored
//! document has another stored document within the distance). Run under both detectors: simhash
//! (fingerprints) and `auto` (texts, whose sketches go into the log and the snapshots).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use neardup::engine::{Decision, Doc, Engine, EngineConfig, EngineDetector, SyncMode, SystemClock};
use neardup::index::random::SplitMix64;
use neardup::{FingerprintConfig, Fingerprinter};

const ROUNDS: u64 = 24;
const THREADS: u64 = 4;

/// The detector under test: `NEARDUP_ENGINE_CRASH_DETECTOR` = `auto` or `simhash` (default).
fn auto() -> bool {
    std::env::var("NEARDUP_ENGINE_CRASH_DETECTOR").is_ok_and(|d| d == "auto")
}

fn cfg(auto: bool) -> EngineConfig {
    EngineConfig {
        detector: if auto {
            EngineDetector::default()
        } else {
            EngineDetector::Simhash
        },
        sync: SyncMode::Always,
        log_segment_bytes: 4096,
        snapshot_records: 150,
        maintenance_interval: Some(Duration::from_millis(5)),
        ..EngineConfig::default()
    }
}

fn open_with(dir: &str, fp: Fingerprinter, auto: bool) -> Engine {
    Engine::open(dir, fp, cfg(auto), Arc::new(SystemClock)).expect("recovery")
}

/// The text of cluster `c` with the words at positions `m1`, `m2` replaced: members of one
/// cluster are near-duplicates under the `auto` detector, clusters are far apart.
fn text(c: u64, m1: u64, m2: u64) -> String {
    let mut g = SplitMix64::new(c + 7_000);
    (0..60u64)
        .map(|i| {
            let w = g.next();
            let w = if i == m1 % 60 || i == m2 % 60 {
                w ^ (i + 1)
            } else {
                w
            };
            format!("w{:x}", w % 100_000)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The document a child submits: under simhash a fingerprint (printed as is), under auto a
/// text (printed as `c:m1:m2`, from which [`text`] rebuilds it).
fn document(id: String, c: u64, rng: &mut SplitMix64, auto: bool) -> (Doc, String) {
    if auto {
        let (m1, m2) = (rng.below(60), rng.below(60));
        (Doc::text(id, text(c, m1, m2)), format!("{c}:{m1}:{m2}"))
    } else {
        let centre = SplitMix64::new(c + 1_000).next();
        let fp = centre ^ (1u64 << rng.below(64)) ^ (1u64 << rng.below(64));
        (Doc::fingerprint(id, fp), fp.to_string())
    }
}

#[test]
fn engine_crash_child() {
    let Ok(dir) = std::env::var("NEARDUP_ENGINE_CRASH_DIR") else {
        return;
    };
    let round: u64 = std::env::var("NEARDUP_ENGINE_CRASH_ROUND")
        .unwrap()
        .parse()
        .unwrap();
    // The dictionary loads first, so that OPENING .. READY is the recovery alone.
    let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
    println!("\nOPENING");
    let auto = auto();
    let engine = Arc::new(open_with(&dir, fp, auto));
    println!("\nREADY");
    let mut handles = Vec::new();
    for t in 0..THREADS {
        let engine = Arc::clone(&engine);
        handles.push(std::thread::spawn(move || {
            let mut rng = SplitMix64::new(round * 100 + t);
            for i in 0.. {
                // 64 clusters around fixed centres; members differ by up to 2 bits (simhash)
                // or 2 words (auto).
                let c = rng.below(64);
                let id = format!("r{round}-t{t}-{i}");
                let (doc, key) = document(id.clone(), c, &mut rng, auto);
                let batch = rng.below(4) == 0;
                let mut keys = vec![key];
                let outcomes = if batch {
                    let far = 100 + rng.below(1 << 30);
                    let (doc2, key2) = document(format!("{id}b"), far, &mut rng, auto);
                    keys.push(key2);
                    engine.check_and_insert_batch(vec![doc, doc2])
                } else {
                    vec![engine.check_and_insert(doc)]
                };
                let mut out = String::new();
                for (n, o) in outcomes.into_iter().enumerate() {
                    let o = o.expect("check");
                    let id = if n == 0 { id.clone() } else { format!("{id}b") };
                    let key = &keys[n];
                    match o.decision {
                        Decision::Unique => out.push_str(&format!("ACK {id} {key} unique -\n")),
                        Decision::Duplicate { of, .. } => {
                            out.push_str(&format!("ACK {id} {key} dup {of}\n"))
                        }
                    }
                }
                // One write(2) per answer group: printed whole or not at all.
                std::io::stdout().lock().write_all(out.as_bytes()).unwrap();
            }
        }));
    }
    std::thread::sleep(Duration::from_secs(20));
    std::process::exit(0);
}

#[test]
fn acknowledged_documents_survive_sigkill() {
    if std::env::var("NEARDUP_ENGINE_CRASH_DIR").is_ok() {
        return;
    }
    crash_rounds(false);
}

/// The same under the `auto` detector: sketches in the log and the snapshots.
#[test]
fn acknowledged_documents_survive_sigkill_auto() {
    if std::env::var("NEARDUP_ENGINE_CRASH_DIR").is_ok() {
        return;
    }
    crash_rounds(true);
}

fn crash_rounds(auto: bool) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap().to_string();
    let exe = std::env::current_exe().unwrap();
    let mut rng = SplitMix64::new(42);
    let mut unique: HashMap<String, String> = HashMap::new();
    let mut pointed: Vec<String> = Vec::new();
    let mut recovery_us = 1_000u64;
    let mut killed_in_recovery = 0;
    for round in 0..ROUNDS {
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "engine_crash_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("NEARDUP_ENGINE_CRASH_DIR", &d)
            .env("NEARDUP_ENGINE_CRASH_ROUND", round.to_string())
            .env(
                "NEARDUP_ENGINE_CRASH_DETECTOR",
                if auto { "auto" } else { "simhash" },
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        // Wait until recovery starts (the fingerprinter's dictionary loads first, which is
        // slow in debug builds). Every fourth round kills during recovery; the others wait
        // until it is done and kill at once or mid-ingest.
        let mut early = Vec::new();
        let ready_by = Instant::now() + Duration::from_secs(120);
        let wait_for = |what: &str, early: &mut Vec<String>| loop {
            match rx.recv_timeout(Duration::from_millis(1)) {
                Ok(l) if l.trim() == what => break,
                Ok(l) => early.push(l),
                Err(_) if Instant::now() > ready_by => panic!("child never printed {what}"),
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => panic!("child died"),
                Err(_) => {}
            }
        };
        wait_for("OPENING", &mut early);
        let opening = Instant::now();
        let in_recovery = round % 4 == 1;
        if in_recovery {
            // A random instant inside the last measured recovery time.
            let at = Duration::from_micros(rng.below(recovery_us.max(1)));
            while opening.elapsed() < at {
                std::hint::spin_loop();
            }
        } else {
            wait_for("READY", &mut early);
            recovery_us = opening.elapsed().as_micros() as u64;
            let delay = if round % 4 == 3 {
                Duration::from_millis(rng.below(30))
            } else {
                Duration::from_millis(100 + rng.below(400))
            };
            let start = Instant::now();
            while start.elapsed() < delay {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        child.kill().unwrap();
        child.wait().unwrap();
        reader.join().unwrap();
        early.extend(rx.try_iter());
        if in_recovery && !early.iter().any(|l| l.trim() == "READY") {
            killed_in_recovery += 1;
            assert!(
                !early.iter().any(|l| l.starts_with("ACK")),
                "killed during recovery, yet documents were acknowledged"
            );
        }
        for line in early {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() == 5 && f[0] == "ACK" {
                if f[3] == "unique" {
                    unique.insert(f[1].to_string(), f[2].to_string());
                } else {
                    pointed.push(f[4].to_string());
                }
            }
        }
    }
    eprintln!(
        "{killed_in_recovery} of {} kills aimed at recovery landed inside it (recovery ≈ {recovery_us} µs)",
        ROUNDS / 4
    );
    assert!(
        killed_in_recovery > 0,
        "no kill landed inside recovery (recovery took {recovery_us} µs)"
    );
    assert!(
        unique.len() > 50,
        "too few acknowledgements ({}) to mean anything",
        unique.len()
    );
    let engine = open_with(
        &d,
        Fingerprinter::new(FingerprintConfig::default()).unwrap(),
        auto,
    );
    for (id, key) in &unique {
        let got = engine
            .get(id)
            .unwrap_or_else(|| panic!("acknowledged {id} lost"));
        let hits = if auto {
            let k: Vec<u64> = key.split(':').map(|x| x.parse().unwrap()).collect();
            let content = neardup::engine::Content::Text(text(k[0], k[1], k[2]));
            engine.query(&content).unwrap().hits
        } else {
            let fp: u64 = key.parse().unwrap();
            assert_eq!(got.fingerprint, Some(fp));
            engine.query_fingerprint(fp).hits
        };
        assert_eq!(hits.len(), 1, "{id} has stored near-duplicates: {hits:?}");
        assert_eq!(&hits[0].id, id);
    }
    for id in &pointed {
        assert!(
            engine.get(id).is_some(),
            "duplicate answer pointed at {id}, which was lost"
        );
    }
    let stats = engine.stats();
    assert!(stats.documents >= unique.len() as u64);
    assert!(
        stats.snapshot_lsn > 0,
        "the rounds wrote snapshots: {stats:?}"
    );
}
