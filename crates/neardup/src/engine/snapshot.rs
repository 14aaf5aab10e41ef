//! Snapshots: the whole state streamed into the store at one LSN while checks continue.

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::records::{Observed, SnapshotWriter, SKETCH_SNAPSHOT_MAGIC, SNAPSHOT_MAGIC};
use super::state::FREE;
use super::{lock, EngineError, Result, Shared, LOCK_BATCH};

/// Snapshot: pick the LSN and slab length under the decide mutex, then stream records in
/// batches under short read locks. Slots are not reused while it runs, and dead slots are
/// parked, so the body is exactly the state at that LSN (plus, at most, documents that were
/// already expired and are dropped again on load).
pub(super) fn snapshot(sh: &Shared) -> Result<()> {
    let (lsn, floor, n, sketch_segments, observed) = {
        let _decider = lock(&sh.decide);
        let mut inner = sh.write();
        if inner.snapshotting {
            return Ok(());
        }
        inner.snapshotting = true;
        let sketch_segments: Vec<(i64, usize)> = inner
            .segments
            .iter()
            .filter_map(|(&sid, seg)| seg.sketches.as_ref().map(|x| (sid, x.len())))
            .collect();
        // The duplicates' counted lines as they stand at this LSN (sorted: the same state
        // writes the same bytes).
        let observed: Vec<Observed> = inner
            .segments
            .iter()
            .filter(|(_, seg)| !seg.observed.is_empty())
            .map(|(&sid, seg)| {
                let mut lines: Vec<(u64, u32)> =
                    seg.observed.iter().map(|(&k, &n)| (k, n)).collect();
                lines.sort_unstable();
                (sid, lines)
            })
            .collect();
        (
            sh.store.last_lsn(),
            inner.floor,
            inner.slab.len,
            sketch_segments,
            observed,
        )
    };
    let result = sh.store.snapshot(lsn, |w| {
        if sh.auto.is_some() {
            return write_sketches(sh, w, floor, &sketch_segments, &observed);
        }
        let mut sw = SnapshotWriter::begin(w, SNAPSHOT_MAGIC, floor)?;
        let mut buf = Vec::with_capacity(1 << 20);
        let mut start = 0;
        while start < n {
            let end = (start + LOCK_BATCH * 4).min(n);
            let mut count = 0;
            {
                let inner = sh.read();
                for h in start..end {
                    let s = inner.slab.get(h as u32);
                    if s.state != FREE {
                        SnapshotWriter::entry(&mut buf, s.fp, s.ts, inner.slab.id(h as u32));
                        count += 1;
                    }
                }
            }
            sw.flush(&mut buf, count)?;
            start = end;
        }
        sw.finish()
    });
    {
        let mut inner = sh.write();
        inner.snapshotting = false;
        let parked = std::mem::take(&mut inner.parked);
        for h in parked {
            inner.release(h);
        }
    }
    *lock(&sh.last_snapshot) = Instant::now();
    result.map_err(EngineError::Store)?;
    sh.snapshots.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

/// The body of an `auto` detector's snapshot: each segment's documents in arrival order, as
/// they stood when the snapshot began (`segments`: each segment and its length then), and
/// the duplicates' counted lines (`observed`, as they stood then). A
/// position whose slot no longer holds its sequence was removed before the snapshot began
/// (slots are not reused while it runs).
fn write_sketches(
    sh: &Shared,
    w: &mut dyn std::io::Write,
    floor: i64,
    segments: &[(i64, usize)],
    observed: &[Observed],
) -> std::io::Result<()> {
    let mut sw = SnapshotWriter::begin(w, SKETCH_SNAPSHOT_MAGIC, floor)?;
    let mut buf = Vec::with_capacity(1 << 20);
    for &(sid, len) in segments {
        let mut start = 0;
        while start < len {
            let end = (start + LOCK_BATCH).min(len);
            let mut count = 0;
            {
                let inner = sh.read();
                let Some(x) = inner.segments.get(&sid).and_then(|s| s.sketches.as_ref()) else {
                    break; // expired meanwhile: dropped again on load anyway
                };
                for pos in start..end {
                    let (h, seq) = (x.handles[pos], x.seqs[pos]);
                    let s = inner.slab.get(h);
                    if s.state != FREE && s.fp == seq {
                        SnapshotWriter::sketch_entry(
                            &mut buf,
                            seq,
                            s.ts,
                            inner.slab.id(h),
                            &x.blob(pos),
                        );
                        count += 1;
                    }
                }
            }
            sw.flush(&mut buf, count)?;
            start = end;
        }
        // Read whole, its spill file's pages need not stay mapped.
        if let Some(x) = sh
            .read()
            .segments
            .get(&sid)
            .and_then(|s| s.sketches.as_ref())
        {
            x.release_pages();
        }
    }
    sw.finish_observed(observed)
}
