//! SIGKILL crash test.
//!
//! The test re-executes its own binary as a child (`crash_child`, active only
//! when `NEARDUP_CRASH_DIR` is set). The child opens the store with
//! `SyncMode::Always`, appends from several threads and prints
//! `ACK <lsn> <payload>` after each `append_durable` returns, while another
//! thread keeps writing snapshots (printing `SNAP-BEGIN`). The parent kills
//! the child with SIGKILL at seeded-random moments (some rounds right after a
//! snapshot started, some within 30 ms of spawning, possibly during
//! recovery), reopens the directory and asserts that recovery
//! succeeds and every acknowledged record is present exactly once, at its
//! LSN, in order.

use std::collections::{BTreeMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use neardup_index::random::SplitMix64;

use neardup_store::{Lsn, Recovered, Store, StoreOptions, SyncMode};

const ROUNDS: u64 = 30;
const THREADS: usize = 4;

fn opts() -> StoreOptions {
    StoreOptions {
        sync: SyncMode::Always,
        config: b"crash-test-config".to_vec(),
        segment_bytes: 4096,
        ..Default::default()
    }
}

/// Snapshot body: `count u64 | (len u32 | payload)*count | padding`.
/// The padding makes snapshots slow enough to be killed mid-way.
fn encode_snapshot(w: &mut dyn Write, records: &[Vec<u8>]) -> std::io::Result<()> {
    w.write_all(&(records.len() as u64).to_le_bytes())?;
    for r in records {
        w.write_all(&(r.len() as u32).to_le_bytes())?;
        w.write_all(r)?;
    }
    let pad = vec![0xA5u8; 64 << 10];
    for _ in 0..16 {
        w.write_all(&pad)?;
    }
    Ok(())
}

/// Full state (snapshot + log), asserting LSN contiguity.
fn state(rec: &Recovered) -> Vec<Vec<u8>> {
    let mut s = Vec::new();
    if let Some(snap) = &rec.snapshot {
        let b = snap.body();
        let n = u64::from_le_bytes(b[..8].try_into().unwrap());
        let mut off = 8;
        for _ in 0..n {
            let len = u32::from_le_bytes(b[off..off + 4].try_into().unwrap()) as usize;
            s.push(b[off + 4..off + 4 + len].to_vec());
            off += 4 + len;
        }
        assert_eq!(n, snap.lsn());
    }
    for (lsn, p) in rec.log.iter() {
        assert_eq!(
            lsn,
            s.len() as Lsn + 1,
            "log LSNs must continue the snapshot"
        );
        s.push(p.to_vec());
    }
    assert_eq!(rec.next_lsn, s.len() as Lsn + 1);
    s
}

/// The child process body. Does nothing unless spawned by the parent test.
#[test]
fn crash_child() {
    let Ok(dir) = std::env::var("NEARDUP_CRASH_DIR") else {
        return;
    };
    let round: u64 = std::env::var("NEARDUP_CRASH_ROUND")
        .unwrap()
        .parse()
        .unwrap();
    let (store, rec) = Store::open(Path::new(&dir), opts()).expect("child recovery");
    let model: Arc<Mutex<Vec<Option<Vec<u8>>>>> =
        Arc::new(Mutex::new(state(&rec).into_iter().map(Some).collect()));
    let mut snap_lsn = rec.snapshot_lsn();
    drop(rec);
    let store = Arc::new(store);
    // Leading newline: the test harness has already printed "test crash_child ... ".
    println!("\nREADY");
    let deadline = Instant::now() + Duration::from_secs(20);
    for t in 0..THREADS {
        let store = Arc::clone(&store);
        let model = Arc::clone(&model);
        std::thread::spawn(move || {
            for i in 0.. {
                let payload = format!("r{round}-t{t}-{i}");
                let lsn = store.append_durable(payload.as_bytes()).expect("append");
                {
                    let mut m = model.lock().unwrap();
                    if m.len() < lsn as usize {
                        m.resize(lsn as usize, None);
                    }
                    m[lsn as usize - 1] = Some(payload.clone().into_bytes());
                }
                // One write(2) per line: a line is either fully printed or not at all.
                let line = format!("ACK {lsn} {payload}\n");
                std::io::stdout().lock().write_all(line.as_bytes()).unwrap();
            }
        });
    }
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(15));
        // Snapshot the longest fully acknowledged prefix.
        let records: Vec<Vec<u8>> = {
            let m = model.lock().unwrap();
            m.iter().map_while(|r| r.clone()).collect()
        };
        let lsn = records.len() as Lsn;
        if lsn <= snap_lsn {
            continue;
        }
        println!("SNAP-BEGIN {lsn}");
        store
            .snapshot(lsn, |w| encode_snapshot(w, &records))
            .expect("snapshot");
        snap_lsn = lsn;
        println!("SNAP-END {lsn}");
    }
    std::process::exit(0);
}

#[test]
fn acknowledged_records_survive_sigkill() {
    if std::env::var("NEARDUP_CRASH_DIR").is_ok() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut rng = SplitMix64::new(0x5EED_2026);
    let mut acked: BTreeMap<Lsn, String> = BTreeMap::new();
    let mut snapshot_kills = 0;
    for round in 0..ROUNDS {
        let mut child = Command::new(&exe)
            .args(["--exact", "crash_child", "--nocapture", "--test-threads=1"])
            .env("NEARDUP_CRASH_DIR", dir.path())
            .env("NEARDUP_CRASH_ROUND", round.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel::<String>();
        let reader = std::thread::spawn(move || {
            let mut lines = Vec::new();
            let mut r = BufReader::new(stdout);
            let mut line = String::new();
            while r.read_line(&mut line).unwrap_or(0) > 0 {
                if line.ends_with('\n') {
                    let _ = tx.send(line.clone());
                    lines.push(line.clone());
                }
                line.clear();
            }
            lines
        });
        let wait_for = |prefix: &str| loop {
            let l = rx
                .recv_timeout(Duration::from_secs(30))
                .expect("child stopped talking");
            if l.starts_with(prefix) {
                break;
            }
        };
        if round % 5 == 4 {
            // Kill early, possibly while the child is still recovering.
            std::thread::sleep(Duration::from_millis(rng.next() % 30));
        } else if round % 3 == 2 {
            wait_for("READY");
            wait_for("SNAP-BEGIN");
            std::thread::sleep(Duration::from_micros(rng.next() % 3000));
        } else {
            wait_for("READY");
            std::thread::sleep(Duration::from_millis(5 + rng.next() % 200));
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let lines = reader.join().unwrap();

        let mut begun = None;
        for l in &lines {
            let mut it = l.trim_end().splitn(3, ' ');
            match (it.next(), it.next(), it.next()) {
                (Some("ACK"), Some(lsn), Some(p)) => {
                    let lsn: Lsn = lsn.parse().unwrap();
                    if let Some(old) = acked.insert(lsn, p.to_string()) {
                        panic!("round {round}: acknowledged LSN {lsn} reused ({old} -> {p})");
                    }
                }
                (Some("SNAP-BEGIN"), Some(l), _) => begun = Some(l.to_string()),
                (Some("SNAP-END"), Some(l), _) if begun.as_deref() == Some(l) => begun = None,
                _ => {}
            }
        }
        snapshot_kills += usize::from(begun.is_some());

        let (store, rec) = Store::open(dir.path(), opts())
            .unwrap_or_else(|e| panic!("round {round}: recovery failed: {e}"));
        let s = state(&rec);
        for (&lsn, p) in &acked {
            let got = s
                .get(lsn as usize - 1)
                .map(|v| String::from_utf8_lossy(v).into_owned());
            assert_eq!(
                got.as_deref(),
                Some(p.as_str()),
                "round {round}: acknowledged LSN {lsn} lost"
            );
        }
        let mut seen = HashSet::new();
        for p in &s {
            assert!(
                seen.insert(p),
                "round {round}: record {} recovered twice",
                String::from_utf8_lossy(p)
            );
        }
        drop(rec);
        store.close().unwrap();
    }
    eprintln!(
        "crash test: {ROUNDS} rounds, {} acknowledged records verified, {snapshot_kills} kills during a snapshot",
        acked.len()
    );
    assert!(acked.len() > ROUNDS as usize, "children must make progress");
}
