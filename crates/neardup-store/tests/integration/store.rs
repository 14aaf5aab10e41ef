//! Integration tests: recovery, torn tails, corruption, config/version checks,
//! locking, concurrency, and a model-based property test.

use std::fs::{self, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use neardup_store::{Error, Lsn, Recovered, Store, StoreOptions, SyncMode};
use proptest::prelude::*;

fn opts(sync: SyncMode, segment_bytes: u64) -> StoreOptions {
    StoreOptions {
        sync,
        config: b"simhash64/k=3/v1".to_vec(),
        segment_bytes,
        ..Default::default()
    }
}

fn payload(i: u64) -> Vec<u8> {
    format!("record-{i:08}-{}", "x".repeat((i % 13) as usize)).into_bytes()
}

fn files(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .collect();
    v.sort();
    v
}

/// Snapshot body used by the tests: the concatenated length-prefixed payloads.
fn encode_state(records: &[Vec<u8>]) -> Vec<u8> {
    let mut b = Vec::new();
    for r in records {
        b.extend_from_slice(&(r.len() as u32).to_le_bytes());
        b.extend_from_slice(r);
    }
    b
}

fn decode_state(mut b: &[u8]) -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    while !b.is_empty() {
        let n = u32::from_le_bytes(b[..4].try_into().unwrap()) as usize;
        v.push(b[4..4 + n].to_vec());
        b = &b[4 + n..];
    }
    v
}

/// Full state = snapshot records + replayed log records, checking LSN contiguity.
fn state(rec: &Recovered) -> Vec<Vec<u8>> {
    let mut s = rec
        .snapshot
        .as_ref()
        .map(|s| decode_state(s.body()))
        .unwrap_or_default();
    assert_eq!(s.len() as Lsn, rec.snapshot_lsn());
    for (lsn, p) in rec.log.iter() {
        assert_eq!(lsn, s.len() as Lsn + 1, "LSNs must be contiguous");
        s.push(p.to_vec());
    }
    assert_eq!(rec.log.len(), rec.log.iter().count() as u64);
    assert_eq!(rec.next_lsn, s.len() as Lsn + 1);
    s
}

#[test]
fn append_reopen_roundtrip_with_rotation_and_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let o = opts(SyncMode::None, 1024);
    let mut model = Vec::new();
    {
        let (store, rec) = Store::open(dir.path(), o.clone()).unwrap();
        assert_eq!(rec.next_lsn, 1);
        for i in 0..200 {
            let lsn = store.append_durable(&payload(i)).unwrap();
            model.push(payload(i));
            assert_eq!(lsn, i + 1);
        }
        assert!(files(dir.path(), "log-").len() > 5, "rotation happened");
        let info = store
            .snapshot(150, |w| w.write_all(&encode_state(&model[..150])))
            .unwrap();
        assert!(info.segments_deleted > 0);
        assert_eq!(store.snapshot_lsn(), 150);
        for i in 200..230 {
            store.append_durable(&payload(i)).unwrap();
            model.push(payload(i));
        }
        store.close().unwrap();
    }
    let (store, rec) = Store::open(dir.path(), o.clone()).unwrap();
    assert_eq!(rec.torn_bytes, 0);
    assert_eq!(rec.snapshot_lsn(), 150);
    assert_eq!(state(&rec), model);
    assert_eq!(store.append_durable(b"next").unwrap(), 231);
    // The covered segments are gone: the first remaining one starts at or before 151.
    let first = files(dir.path(), "log-")[0].clone();
    let base: u64 = first.file_name().unwrap().to_string_lossy()[4..24]
        .parse()
        .unwrap();
    assert!(base <= 151);
    assert_eq!(files(dir.path(), "snapshot-").len(), 1);
}

#[test]
fn empty_snapshot_at_zero_and_at_same_lsn() {
    let dir = tempfile::tempdir().unwrap();
    let o = opts(SyncMode::Always, 4096);
    let (store, _) = Store::open(dir.path(), o.clone()).unwrap();
    store.snapshot(0, |_| Ok(())).unwrap();
    store.append_durable(b"a").unwrap();
    store.snapshot(1, |w| w.write_all(b"v1")).unwrap();
    store.snapshot(1, |w| w.write_all(b"v2")).unwrap();
    assert!(matches!(
        store.snapshot(0, |_| Ok(())),
        Err(Error::InvalidSnapshotLsn {
            requested: 0,
            newest: 1,
            last: 1
        })
    ));
    assert!(matches!(
        store.snapshot(2, |_| Ok(())),
        Err(Error::InvalidSnapshotLsn { .. })
    ));
    // A failing body writer leaves no file behind and changes nothing.
    let err = store
        .snapshot(1, |_| Err(std::io::Error::other("engine failed")))
        .unwrap_err();
    assert!(err.to_string().contains("engine failed"), "{err}");
    drop(store);
    let (_s, rec) = Store::open(dir.path(), o).unwrap();
    assert_eq!(rec.snapshot.as_ref().unwrap().body(), b"v2");
    assert!(rec.log.is_empty());
    assert_eq!(rec.next_lsn, 2);
}

#[test]
fn invalid_records_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = Store::open(dir.path(), opts(SyncMode::None, 4096)).unwrap();
    assert!(matches!(
        store.append(b""),
        Err(Error::InvalidRecord { len: 0, .. })
    ));
    let big = vec![1u8; neardup_store::MAX_RECORD_BYTES + 1];
    assert!(matches!(
        store.append(&big),
        Err(Error::InvalidRecord { .. })
    ));
    // A record bigger than segment_bytes gets its own segment.
    let big = vec![7u8; 10_000];
    store.append_durable(&big).unwrap();
    store.append_durable(b"after").unwrap();
    drop(store);
    let (_s, rec) = Store::open(dir.path(), opts(SyncMode::None, 4096)).unwrap();
    assert_eq!(state(&rec), vec![big, b"after".to_vec()]);
}

/// Writes `n` records into a fresh store and returns the last segment path and
/// the byte offset where the last frame starts.
fn store_with_records(dir: &Path, n: u64, segment_bytes: u64) -> (PathBuf, u64) {
    let (store, _) = Store::open(dir, opts(SyncMode::None, segment_bytes)).unwrap();
    for i in 0..n - 1 {
        let _queued = store.append(&payload(i)).unwrap();
    }
    store.sync().unwrap();
    let last = files(dir, "log-").pop().unwrap();
    let before = fs::metadata(&last).unwrap().len();
    store.append_durable(&payload(n - 1)).unwrap();
    store.close().unwrap();
    let seg = files(dir, "log-").pop().unwrap();
    assert_eq!(seg, last, "last record must not rotate");
    (seg, before)
}

fn copy_dir(from: &Path, to: &Path) {
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

#[test]
fn torn_tail_at_every_byte_offset_of_last_frame() {
    let src = tempfile::tempdir().unwrap();
    let n = 20;
    let (seg, start) = store_with_records(src.path(), n, 1 << 20);
    let full = fs::metadata(&seg).unwrap().len();
    let expected: Vec<_> = (0..n).map(payload).collect();
    for cut in start..full {
        let dir = tempfile::tempdir().unwrap();
        copy_dir(src.path(), dir.path());
        let seg = dir.path().join(seg.file_name().unwrap());
        OpenOptions::new()
            .write(true)
            .open(&seg)
            .unwrap()
            .set_len(cut)
            .unwrap();
        let (store, rec) = Store::open(dir.path(), opts(SyncMode::None, 1 << 20)).unwrap();
        assert_eq!(rec.torn_bytes, cut - start, "cut at {cut}");
        assert_eq!(rec.torn_segment.is_some(), cut > start);
        assert_eq!(state(&rec), expected[..n as usize - 1]);
        // Appending after truncation works and survives another reopen.
        assert_eq!(store.append_durable(b"again").unwrap(), n);
        drop(store);
        let (_s, rec) = Store::open(dir.path(), opts(SyncMode::None, 1 << 20)).unwrap();
        assert_eq!(rec.torn_bytes, 0);
        let mut exp = expected[..n as usize - 1].to_vec();
        exp.push(b"again".to_vec());
        assert_eq!(state(&rec), exp);
    }
}

#[test]
fn corrupt_byte_in_last_frame_is_truncated_but_in_older_segment_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let (seg, start) = store_with_records(dir.path(), 60, 1024);
    let mut bytes = fs::read(&seg).unwrap();
    let last_byte = bytes.len() - 1;
    bytes[last_byte] ^= 0x40;
    fs::write(&seg, &bytes).unwrap();
    let (store, rec) = Store::open(dir.path(), opts(SyncMode::None, 1024)).unwrap();
    assert_eq!(rec.torn_bytes, bytes.len() as u64 - start);
    assert_eq!(state(&rec).len(), 59);
    drop(store);

    // Damage the middle of the first (non-last) segment.
    let first = files(dir.path(), "log-")[0].clone();
    let mut bytes = fs::read(&first).unwrap();
    let mid = bytes.len() - 10;
    bytes[mid] ^= 1;
    fs::write(&first, &bytes).unwrap();
    let err = Store::open(dir.path(), opts(SyncMode::None, 1024)).unwrap_err();
    match &err {
        Error::CorruptLog { path, .. } => assert_eq!(path, &first),
        e => panic!("unexpected {e:?}"),
    }
    assert!(err.to_string().contains("restore"), "{err}");
}

#[test]
fn missing_segment_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    store_with_records(dir.path(), 80, 1024);
    let segs = files(dir.path(), "log-");
    assert!(segs.len() >= 3);
    fs::remove_file(&segs[1]).unwrap();
    assert!(matches!(
        Store::open(dir.path(), opts(SyncMode::None, 1024)),
        Err(Error::MissingLog { .. })
    ));
    fs::remove_file(&segs[0]).unwrap();
    assert!(matches!(
        Store::open(dir.path(), opts(SyncMode::None, 1024)),
        Err(Error::MissingLog { expected: 1, .. })
    ));
}

#[test]
fn config_mismatch_names_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    store_with_records(dir.path(), 3, 4096);
    let mut o = opts(SyncMode::None, 4096);
    o.config = b"other".to_vec();
    let err = Store::open(dir.path(), o.clone()).unwrap_err();
    assert!(matches!(err, Error::ConfigMismatch { .. }));
    let msg = err.to_string();
    assert!(
        msg.contains("original configuration") && msg.contains("--data-dir"),
        "{msg}"
    );

    // Same for a snapshot written with the other config.
    let dir2 = tempfile::tempdir().unwrap();
    {
        let (s, _) = Store::open(dir2.path(), opts(SyncMode::None, 4096)).unwrap();
        s.append_durable(b"x").unwrap();
        s.snapshot(1, |w| w.write_all(b"s")).unwrap();
    }
    assert!(matches!(
        Store::open(dir2.path(), o),
        Err(Error::ConfigMismatch { .. })
    ));
}

#[test]
fn newer_version_and_foreign_files_are_explicit_errors() {
    let dir = tempfile::tempdir().unwrap();
    store_with_records(dir.path(), 3, 4096);
    let seg = files(dir.path(), "log-")[0].clone();
    let good = fs::read(&seg).unwrap();
    let mut bytes = good.clone();
    bytes[8] = 2; // version u32 LE at offset 8
    fs::write(&seg, &bytes).unwrap();
    match Store::open(dir.path(), opts(SyncMode::None, 4096)).unwrap_err() {
        Error::UnsupportedVersion {
            path,
            found: 2,
            supported: 1,
        } => assert_eq!(path, seg),
        e => panic!("unexpected {e:?}"),
    }
    // Corrupt header (config byte) -> CorruptHeader naming the file.
    let mut bytes = good.clone();
    bytes[25] ^= 1;
    fs::write(&seg, &bytes).unwrap();
    let err = Store::open(dir.path(), opts(SyncMode::None, 4096)).unwrap_err();
    assert!(matches!(err, Error::CorruptHeader { .. }), "{err:?}");
    assert!(err.to_string().contains(&*seg.to_string_lossy()));
    // Foreign content under a store name -> NotStoreFile.
    fs::write(&seg, b"hello, I am a text file").unwrap();
    assert!(matches!(
        Store::open(dir.path(), opts(SyncMode::None, 4096)),
        Err(Error::NotStoreFile { .. })
    ));
    // Empty file under a store name.
    fs::write(&seg, b"").unwrap();
    assert!(matches!(
        Store::open(dir.path(), opts(SyncMode::None, 4096)),
        Err(Error::NotStoreFile { .. })
    ));

    // A non-empty directory without store files is refused and left untouched.
    let foreign = tempfile::tempdir().unwrap();
    fs::write(foreign.path().join("notes.txt"), b"mine").unwrap();
    assert!(matches!(
        Store::open(foreign.path(), opts(SyncMode::None, 4096)),
        Err(Error::NotStoreDir { .. })
    ));
    assert_eq!(fs::read_dir(foreign.path()).unwrap().count(), 1);
}

#[test]
fn corrupt_snapshot_is_an_error_and_newer_snapshot_version_rejected() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (s, _) = Store::open(dir.path(), opts(SyncMode::None, 4096)).unwrap();
        s.append_durable(b"x").unwrap();
        s.snapshot(1, |w| w.write_all(&[5u8; 1000])).unwrap();
    }
    let snap = files(dir.path(), "snapshot-")[0].clone();
    let good = fs::read(&snap).unwrap();
    let mut bad = good.clone();
    bad[500] ^= 1;
    fs::write(&snap, &bad).unwrap();
    assert!(matches!(
        Store::open(dir.path(), opts(SyncMode::None, 4096)),
        Err(Error::CorruptSnapshot { .. })
    ));
    fs::write(&snap, &good[..good.len() - 3]).unwrap();
    assert!(matches!(
        Store::open(dir.path(), opts(SyncMode::None, 4096)),
        Err(Error::CorruptSnapshot { .. })
    ));
    let mut newer = good.clone();
    newer[8] = 9;
    fs::write(&snap, &newer).unwrap();
    assert!(matches!(
        Store::open(dir.path(), opts(SyncMode::None, 4096)),
        Err(Error::UnsupportedVersion { found: 9, .. })
    ));
    fs::write(&snap, &good).unwrap();
    let (_s, rec) = Store::open(dir.path(), opts(SyncMode::None, 4096)).unwrap();
    assert_eq!(rec.snapshot.unwrap().body(), &[5u8; 1000][..]);
}

#[test]
fn lock_contention() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = Store::open(dir.path(), opts(SyncMode::None, 4096)).unwrap();
    let err = Store::open(dir.path(), opts(SyncMode::None, 4096)).unwrap_err();
    assert!(matches!(err, Error::Locked { .. }));
    let msg = err.to_string();
    assert!(
        msg.contains("another neardup process holds") && msg.contains("LOCK"),
        "{msg}"
    );
    drop(store);
    Store::open(dir.path(), opts(SyncMode::None, 4096)).unwrap();
}

#[test]
fn leftover_temp_files_are_removed() {
    let dir = tempfile::tempdir().unwrap();
    store_with_records(dir.path(), 3, 4096);
    fs::write(
        dir.path().join("snapshot-00000000000000000002.snap.tmp"),
        b"partial",
    )
    .unwrap();
    fs::write(dir.path().join("log-00000000000000000004.seg.tmp"), b"NDUP").unwrap();
    let (_s, rec) = Store::open(dir.path(), opts(SyncMode::None, 4096)).unwrap();
    assert_eq!(state(&rec).len(), 3);
    assert!(files(dir.path(), "snapshot-").is_empty());
    assert!(!files(dir.path(), "log-")
        .iter()
        .any(|p| p.extension().unwrap() == "tmp"));
}

#[test]
fn concurrent_appenders_group_commit() {
    for sync in [
        SyncMode::Always,
        SyncMode::Batch {
            interval: std::time::Duration::from_millis(2),
        },
        SyncMode::None,
    ] {
        let dir = tempfile::tempdir().unwrap();
        let o = opts(sync, 8192);
        let (store, _) = Store::open(dir.path(), o.clone()).unwrap();
        let store = Arc::new(store);
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let store = Arc::clone(&store);
                std::thread::spawn(move || {
                    (0..50)
                        .map(|i| {
                            let p = format!("t{t}-{i}").into_bytes();
                            (store.append_durable(&p).unwrap(), p)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut acked: Vec<(Lsn, Vec<u8>)> = threads
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect();
        acked.sort();
        assert_eq!(acked.len(), 400);
        assert!(acked
            .iter()
            .enumerate()
            .all(|(i, (l, _))| *l == i as u64 + 1));
        if sync == SyncMode::Always {
            assert_eq!(store.durable_lsn(), 400);
        }
        Arc::try_unwrap(store).unwrap().close().unwrap();
        let (_s, rec) = Store::open(dir.path(), o).unwrap();
        let got: Vec<_> = rec.log.iter().map(|(l, p)| (l, p.to_vec())).collect();
        assert_eq!(got, acked);
    }
}

/// Regression: since waiters write the log themselves (no writer-thread hand-off), a record
/// whose ticket is dropped unwaited must still be written and, under `Batch`, synced by the
/// background thread.
#[test]
fn unwaited_records_are_written_and_synced_in_the_background() {
    let dir = tempfile::tempdir().unwrap();
    let o = opts(
        SyncMode::Batch {
            interval: std::time::Duration::from_millis(5),
        },
        1 << 20,
    );
    let (store, _) = Store::open(dir.path(), o.clone()).unwrap();
    for i in 0..10 {
        drop(store.append(&payload(i)).unwrap());
    }
    // Liveness, not timing: poll generously.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while store.durable_lsn() < 10 {
        assert!(
            std::time::Instant::now() < deadline,
            "unwaited records were never synced"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert!(store.stats().fsyncs >= 1);
    // Killed without close: what the background thread wrote is on disk.
    std::mem::forget(store);
    let dir2 = tempfile::tempdir().unwrap();
    copy_dir(dir.path(), dir2.path());
    let (_s, rec) = Store::open(dir2.path(), o).unwrap();
    assert_eq!(
        state(&rec),
        (0..10).map(payload).collect::<Vec<_>>(),
        "records written by the background thread"
    );
}

/// Regression: with waiters doing the I/O, a ticket waited on after close must neither hang nor
/// write (another process may hold the directory by then): close writes everything queued, so
/// the ticket is acknowledged, and the record is on disk.
#[test]
fn ticket_waited_after_close_is_acknowledged_by_the_final_flush() {
    let dir = tempfile::tempdir().unwrap();
    let o = opts(SyncMode::Always, 1 << 20);
    let (store, _) = Store::open(dir.path(), o.clone()).unwrap();
    let t = store.append(&payload(0)).unwrap();
    store.close().unwrap();
    assert_eq!(t.wait().unwrap(), 1);
    let (_s, rec) = Store::open(dir.path(), o).unwrap();
    assert_eq!(state(&rec), vec![payload(0)]);
}

/// Appenders over `max_pending_bytes` write the queue themselves instead of waiting for a
/// thread that may not come.
#[test]
fn backpressure_appender_flushes_the_queue_itself() {
    let dir = tempfile::tempdir().unwrap();
    let o = StoreOptions {
        max_pending_bytes: 256,
        ..opts(SyncMode::None, 4096)
    };
    let (store, _) = Store::open(dir.path(), o.clone()).unwrap();
    let tickets: Vec<_> = (0..2000)
        .map(|i| store.append(&payload(i)).unwrap())
        .collect();
    let last = tickets.into_iter().map(|t| t.wait().unwrap()).max();
    assert_eq!(last, Some(2000));
    store.close().unwrap();
    let (_s, rec) = Store::open(dir.path(), o).unwrap();
    assert_eq!(state(&rec), (0..2000).map(payload).collect::<Vec<_>>());
}

#[derive(Debug, Clone)]
enum Op {
    Append(Vec<u8>),
    AppendBurst(u8),
    Snapshot,
    Sync,
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => proptest::collection::vec(any::<u8>(), 1..120).prop_map(Op::Append),
        2 => (1u8..40).prop_map(Op::AppendBurst),
        1 => Just(Op::Snapshot),
        1 => Just(Op::Sync),
        1 => Just(Op::Reopen),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Random appends / rotations (small segments) / snapshots / reopens
    /// always recover exactly the model.
    #[test]
    fn model_equivalence(ops in proptest::collection::vec(op(), 1..40), seg in 1024u64..4096) {
        let dir = tempfile::tempdir().unwrap();
        let o = opts(SyncMode::None, seg);
        let mut model: Vec<Vec<u8>> = Vec::new();
        let (mut store, rec) = Store::open(dir.path(), o.clone()).unwrap();
        prop_assert!(state(&rec).is_empty());
        for op in ops {
            match op {
                Op::Append(p) => {
                    model.push(p.clone());
                    prop_assert_eq!(store.append_durable(&p).unwrap(), model.len() as Lsn);
                }
                Op::AppendBurst(n) => {
                    let mut tickets = Vec::new();
                    for i in 0..n {
                        let p = vec![i; 1 + i as usize * 7];
                        model.push(p.clone());
                        tickets.push(store.append(&p).unwrap());
                    }
                    for t in tickets { t.wait().unwrap(); }
                }
                Op::Snapshot => {
                    let lsn = model.len() as Lsn;
                    let body = encode_state(&model);
                    store.snapshot(lsn, |w| w.write_all(&body)).unwrap();
                }
                Op::Sync => store.sync().unwrap(),
                Op::Reopen => {
                    drop(store);
                    let (s, rec) = Store::open(dir.path(), o.clone()).unwrap();
                    prop_assert_eq!(rec.torn_bytes, 0);
                    prop_assert_eq!(&state(&rec), &model);
                    store = s;
                }
            }
        }
        drop(store);
        let (_s, rec) = Store::open(dir.path(), o).unwrap();
        prop_assert_eq!(&state(&rec), &model);
    }
}

#[test]
fn batch_mode_background_flush_makes_records_durable() {
    let dir = tempfile::tempdir().unwrap();
    let o = opts(
        SyncMode::Batch {
            interval: std::time::Duration::from_millis(5),
        },
        4096,
    );
    let (store, _) = Store::open(dir.path(), o.clone()).unwrap();
    for i in 0..20 {
        store.append_durable(&payload(i)).unwrap();
    }
    // No explicit sync: the background flusher must catch up on its own.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while store.durable_lsn() < 20 {
        assert!(
            std::time::Instant::now() < deadline,
            "background flush never happened"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert!(store.stats().fsyncs >= 1);
    drop(store);
    let (_s, rec) = Store::open(dir.path(), o).unwrap();
    assert_eq!(state(&rec).len(), 20);
}

#[test]
fn store_is_send_and_sync_and_options_validated() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Store>();
    assert_send_sync::<neardup_store::Ticket>();
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(
        Store::open(dir.path(), opts(SyncMode::None, 10)),
        Err(Error::InvalidOptions(_))
    ));
    let zero = SyncMode::Batch {
        interval: std::time::Duration::ZERO,
    };
    assert!(matches!(
        Store::open(dir.path(), opts(zero, 4096)),
        Err(Error::InvalidOptions(_))
    ));
}

#[test]
fn fresh_mount_point_with_lost_and_found_is_accepted() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("lost+found")).unwrap();
    let (store, rec) = Store::open(dir.path(), opts(SyncMode::None, 4096)).unwrap();
    assert_eq!(rec.next_lsn, 1);
    store.append_durable(b"x").unwrap();
}
