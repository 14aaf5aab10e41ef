//! Restart-time measurement: writes a snapshot of N 40-byte entries
//! (fingerprint u64, doc id u64, timestamp u64, 16 bytes of engine data) by
//! streaming, appends a tail of log records, then times reopening the store
//! (snapshot mmap + CRC verification + log replay) and a full pass that
//! decodes every fingerprint into a `Vec<u64>`.
//!
//! ```text
//! cargo run --release -p neardup-store --example restart -- 50000000
//! ```
//!
//! The data lives in a temporary directory (under `$TMPDIR`) that is deleted
//! at the end. Reopen timings are with a warm page cache (the file was just
//! written); a cold start additionally pays for reading the file from disk.

use std::time::Instant;

use neardup_store::{Store, StoreOptions, SyncMode};

const ENTRY: usize = 40;
const LOG_TAIL: u64 = 100_000;

fn entry(i: u64) -> [u8; ENTRY] {
    let mut e = [0u8; ENTRY];
    e[..8].copy_from_slice(&i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_le_bytes());
    e[8..16].copy_from_slice(&i.to_le_bytes());
    e[16..24].copy_from_slice(&(1_700_000_000 + i).to_le_bytes());
    e
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: u64 = match std::env::args().nth(1) {
        Some(a) => a.parse()?,
        None => 50_000_000,
    };
    let dir = tempfile::Builder::new()
        .prefix("neardup-restart-")
        .tempdir()?;
    let opts = StoreOptions {
        sync: SyncMode::Always,
        config: b"restart-example".to_vec(),
        ..Default::default()
    };
    println!(
        "entries: {n} x {ENTRY} B = {:.2} GB, dir {}",
        (n * ENTRY as u64) as f64 / 1e9,
        dir.path().display()
    );

    {
        let (store, _) = Store::open(dir.path(), opts.clone())?;
        store.append_durable(&entry(0))?;
        let t = Instant::now();
        let info = store.snapshot(1, |w| {
            let mut buf = Vec::with_capacity(1 << 20);
            for i in 0..n {
                buf.extend_from_slice(&entry(i));
                if buf.len() >= (1 << 20) - ENTRY {
                    w.write_all(&buf)?;
                    buf.clear();
                }
            }
            w.write_all(&buf)
        })?;
        let s = t.elapsed().as_secs_f64();
        println!(
            "snapshot write (streamed, fsync, rename): {:.2} s, {:.2} GB/s",
            s,
            info.body_bytes as f64 / s / 1e9
        );
        assert_eq!(info.body_bytes, n * ENTRY as u64);
        let t = Instant::now();
        let mut last = None;
        for i in 0..LOG_TAIL {
            last = Some(store.append(&entry(n + i))?);
        }
        if let Some(t) = last {
            t.wait()?;
        }
        println!(
            "log tail: {LOG_TAIL} appends in {:.3} s",
            t.elapsed().as_secs_f64()
        );
        store.close()?;
    }

    let t = Instant::now();
    let (store, rec) = Store::open(dir.path(), opts)?;
    let open_s = t.elapsed().as_secs_f64();
    let snap = rec.snapshot.as_ref().ok_or("snapshot missing")?;
    let body = snap.body();
    println!(
        "reopen (mmap + header checks + CRC of {:.2} GB + log scan): {:.3} s ({:.2} GB/s)",
        body.len() as f64 / 1e9,
        open_s,
        body.len() as f64 / open_s / 1e9
    );
    let t = Instant::now();
    let fps: Vec<u64> = body
        .chunks_exact(ENTRY)
        .map(|e| u64::from_le_bytes(e[..8].try_into().expect("8 bytes")))
        .collect();
    let mut replayed = 0u64;
    for (_, p) in rec.log.iter() {
        replayed += u64::from(p.len() == ENTRY);
    }
    let load_s = t.elapsed().as_secs_f64();
    println!(
        "decode {} fingerprints + replay {replayed} log records: {load_s:.3} s",
        fps.len()
    );
    assert_eq!(fps.len() as u64, n);
    assert_eq!(replayed, LOG_TAIL);
    let expected_last = u64::from_le_bytes(entry(n - 1)[..8].try_into().expect("8 bytes"));
    assert_eq!(fps.last().copied(), Some(expected_last));
    println!("restart total: {:.3} s", open_s + load_s);
    drop(rec);
    store.close()?;
    dir.close()?;
    Ok(())
}
