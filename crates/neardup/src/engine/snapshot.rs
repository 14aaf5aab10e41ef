//! Snapshots: the whole state streamed into the store at one LSN while checks continue.

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::records::SnapshotWriter;
use super::state::FREE;
use super::{lock, EngineError, Result, Shared, LOCK_BATCH};

/// Snapshot: pick the LSN and slab length under the decide mutex, then stream records in
/// batches under short read locks. Slots are not reused while it runs, and dead slots are
/// parked, so the body is exactly the state at that LSN (plus, at most, documents that were
/// already expired and are dropped again on load).
pub(super) fn snapshot(sh: &Shared) -> Result<()> {
    let (lsn, floor, n) = {
        let _decider = lock(&sh.decide);
        let mut inner = sh.write();
        if inner.snapshotting {
            return Ok(());
        }
        inner.snapshotting = true;
        (sh.store.last_lsn(), inner.floor, inner.slab.len)
    };
    let result = sh.store.snapshot(lsn, |w| {
        let mut sw = SnapshotWriter::begin(w, floor)?;
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
