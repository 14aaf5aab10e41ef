//! Crash simulation with failpoints (needs `--features failpoints`):
//! torn writes, failures between write and fsync, crashes during segment
//! rotation and during every step of publishing a snapshot.
//!
//! A fired failpoint makes the store behave as if the process died at that
//! instant: the writer stops, nothing later reaches the disk, and the test
//! then reopens the directory and checks recovery.

use std::path::Path;
use std::sync::Mutex;

use neardup_store::failpoints::{self, Action};
use neardup_store::{Error, Lsn, Recovered, Store, StoreOptions, SyncMode};

/// The failpoint registry is process-global: run these tests one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    let g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    failpoints::clear();
    g
}

fn opts(segment_bytes: u64) -> StoreOptions {
    StoreOptions {
        sync: SyncMode::Always,
        config: b"cfg".to_vec(),
        segment_bytes,
        ..Default::default()
    }
}

fn p(i: usize) -> Vec<u8> {
    format!("payload-{i:05}").into_bytes()
}

fn body(records: &[Vec<u8>]) -> Vec<u8> {
    records.concat()
}

/// Recovered state: snapshot body is the concatenation of fixed-size payloads.
fn state(rec: &Recovered) -> Vec<Vec<u8>> {
    let mut s: Vec<Vec<u8>> = rec
        .snapshot
        .as_ref()
        .map(|s| s.body().chunks(p(0).len()).map(|c| c.to_vec()).collect())
        .unwrap_or_default();
    assert_eq!(s.len() as Lsn, rec.snapshot_lsn());
    for (lsn, pl) in rec.log.iter() {
        assert_eq!(lsn, s.len() as Lsn + 1);
        s.push(pl.to_vec());
    }
    s
}

/// Recovery must yield every acknowledged record and otherwise only a prefix
/// of what was attempted (never anything else, never a gap).
fn check(
    dir: &Path,
    acked: usize,
    attempted: &[Vec<u8>],
    segment_bytes: u64,
) -> (Store, Recovered) {
    failpoints::clear();
    let (store, rec) = Store::open(dir, opts(segment_bytes)).expect("recovery must not fail");
    let s = state(&rec);
    assert!(
        s.len() >= acked,
        "lost acknowledged records: {} < {acked}",
        s.len()
    );
    assert!(s.len() <= attempted.len());
    assert_eq!(s[..], attempted[..s.len()]);
    (store, rec)
}

fn ack_n(store: &Store, attempted: &mut Vec<Vec<u8>>, n: usize) {
    for _ in 0..n {
        let pl = p(attempted.len());
        assert_eq!(
            store.append_durable(&pl).unwrap(),
            attempted.len() as Lsn + 1
        );
        attempted.push(pl);
    }
}

/// After a failure, a batch of appends is never acknowledged and the store
/// refuses further work.
fn fail_batch(store: &Store, attempted: &mut Vec<Vec<u8>>, n: usize) {
    let mut tickets = Vec::new();
    for _ in 0..n {
        let pl = p(attempted.len());
        // The writer may fail on the first record before the rest are queued.
        match store.append(&pl) {
            Ok(t) => tickets.push(t),
            Err(Error::Failed { .. }) => break,
            Err(e) => panic!("unexpected {e}"),
        }
        attempted.push(pl);
    }
    assert!(!tickets.is_empty());
    let results: Vec<_> = tickets.into_iter().map(|t| t.wait()).collect();
    assert!(results
        .iter()
        .any(|r| matches!(r, Err(Error::Failed { .. }))));
    assert!(matches!(store.append(b"more"), Err(Error::Failed { .. })));
    assert!(matches!(store.sync(), Err(Error::Failed { .. })));
}

#[test]
fn torn_write_is_truncated_and_acked_records_survive() {
    let _g = serial();
    for batch in [1usize, 2, 7] {
        let dir = tempfile::tempdir().unwrap();
        let mut attempted = Vec::new();
        let (store, _) = Store::open(dir.path(), opts(1 << 20)).unwrap();
        ack_n(&store, &mut attempted, 10);
        failpoints::set("torn-write", Action::Error);
        fail_batch(&store, &mut attempted, batch);
        drop(store);
        let (store, rec) = check(dir.path(), 10, &attempted, 1 << 20);
        assert!(rec.torn_bytes > 0, "half a batch must be torn");
        // Appending continues cleanly after the truncated tail.
        let n = rec.next_lsn as usize - 1;
        attempted.truncate(n);
        ack_n(&store, &mut attempted, 5);
        drop(store);
        let (_s, rec) = check(dir.path(), n + 5, &attempted, 1 << 20);
        assert_eq!(rec.torn_bytes, 0);
        assert_eq!(state(&rec).len(), n + 5);
    }
}

#[test]
fn failure_before_write_or_before_sync_is_never_acknowledged() {
    let _g = serial();
    for point in ["log-before-write", "after-write-before-sync"] {
        let dir = tempfile::tempdir().unwrap();
        let mut attempted = Vec::new();
        let (store, _) = Store::open(dir.path(), opts(1 << 20)).unwrap();
        failpoints::set(point, Action::ErrorAfter(4));
        ack_n(&store, &mut attempted, 4);
        fail_batch(&store, &mut attempted, 3);
        drop(store);
        let (_s, rec) = check(dir.path(), 4, &attempted, 1 << 20);
        assert_eq!(rec.torn_bytes, 0);
    }
}

#[test]
fn crash_during_rotation() {
    let _g = serial();
    for point in [
        "rotate-before-rename",
        "rotate-after-rename-before-dir-sync",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut attempted = Vec::new();
        let (store, _) = Store::open(dir.path(), opts(1024)).unwrap();
        ack_n(&store, &mut attempted, 30); // a few rotations already
        failpoints::set(point, Action::Error);
        // Append until a rotation is attempted and fails.
        let mut acked = attempted.len();
        loop {
            let pl = p(attempted.len());
            attempted.push(pl.clone());
            match store.append_durable(&pl) {
                Ok(_) => acked += 1,
                Err(Error::Failed { .. }) => break,
                Err(e) => panic!("unexpected {e}"),
            }
        }
        drop(store);
        let (store, rec) = check(dir.path(), acked, &attempted, 1024);
        let n = rec.next_lsn as usize - 1;
        attempted.truncate(n);
        ack_n(&store, &mut attempted, 40); // more rotations after recovery
        drop(store);
        let (_s, rec) = check(dir.path(), n + 40, &attempted, 1024);
        assert_eq!(state(&rec).len(), n + 40);
        let tmp = std::fs::read_dir(dir.path())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .ends_with(".tmp")
            })
            .count();
        assert_eq!(tmp, 0);
    }
}

#[test]
fn crash_during_snapshot_at_every_step() {
    let _g = serial();
    let points = [
        "snapshot-before-sync",
        "before-rename",
        "after-rename-before-dir-sync",
        "snapshot-before-cleanup",
        "snapshot-mid-cleanup",
    ];
    for point in points {
        let dir = tempfile::tempdir().unwrap();
        let mut attempted = Vec::new();
        let (store, _) = Store::open(dir.path(), opts(1024)).unwrap();
        ack_n(&store, &mut attempted, 40);
        store
            .snapshot(20, |w| w.write_all(&body(&attempted[..20])))
            .unwrap();
        ack_n(&store, &mut attempted, 60);
        failpoints::set(point, Action::Error);
        let err = store
            .snapshot(90, |w| w.write_all(&body(&attempted[..90])))
            .unwrap_err();
        assert!(err.to_string().contains(point), "{point}: {err}");
        failpoints::clear();
        // A failed snapshot does not poison the log.
        ack_n(&store, &mut attempted, 5);
        drop(store);
        let (store, rec) = check(dir.path(), 105, &attempted, 1024);
        assert_eq!(state(&rec).len(), 105);
        let published = !matches!(point, "snapshot-before-sync" | "before-rename");
        assert_eq!(
            rec.snapshot_lsn(),
            if published { 90 } else { 20 },
            "{point}"
        );
        // Exactly one snapshot file remains after recovery.
        let snaps = std::fs::read_dir(dir.path())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with("snapshot-")
            })
            .count();
        assert_eq!(snaps, 1, "{point}");
        // And snapshots keep working afterwards.
        store
            .snapshot(105, |w| w.write_all(&body(&attempted[..105])))
            .unwrap();
        drop(store);
        let (_s, rec) = check(dir.path(), 105, &attempted, 1024);
        assert_eq!(rec.snapshot_lsn(), 105);
        assert!(rec.log.is_empty());
    }
}
