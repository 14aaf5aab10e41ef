//! Background maintenance: `max_docs` eviction, expiry of whole time segments, and merges of
//! index runs (built outside the locks, swapped in).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use neardup_index::HammingIndex;

use super::records;
use super::snapshot::snapshot;
use super::state::{Segment, LIVE};
use super::{lock, Result, Shared, LOCK_BATCH};
use crate::minhash::MIN_FROZEN;

pub(super) fn maintenance_loop(sh: Arc<Shared>, interval: Duration) {
    let mut stop = lock(&sh.stop);
    loop {
        if *stop {
            return;
        }
        stop = sh
            .wake
            .wait_timeout(stop, interval)
            .unwrap_or_else(|e| e.into_inner())
            .0;
        if *stop {
            return;
        }
        drop(stop);
        if let Err(e) = maintain(&sh) {
            let mut f = lock(&sh.failed);
            if f.is_none() {
                *f = Some(format!("maintenance failed: {e}"));
            }
        }
        stop = lock(&sh.stop);
    }
}

pub(super) fn maintain(sh: &Shared) -> Result<()> {
    let _one = lock(&sh.maintain_lock);
    enforce_max_docs(sh)?;
    expire(sh);
    merge_runs(sh)?;
    freeze_tables(sh);
    release_spilled_pages(sh);
    let due = {
        let since = lock(&sh.last_snapshot).elapsed();
        let records = sh.store.last_lsn() - sh.store.snapshot_lsn();
        records > 0
            && (records >= sh.cfg.snapshot_records
                || sh.cfg.snapshot_interval.is_some_and(|iv| since >= iv))
    };
    if due && !sh.closed.load(Ordering::SeqCst) {
        snapshot(sh)?;
    }
    Ok(())
}

/// How often maintenance lets go of the spill files' mapped pages.
pub(super) const RELEASE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(60);

/// Lets go of the spill files' pages that reads mapped (the template veto's checks, the short
/// path's confirmations), at most every [`RELEASE_INTERVAL`] — the first maintenance after it
/// — so that the resident set holds what the engine keeps rather than what it happened to read
/// ([`SketchIndex::release_pages`](super::sketch::SketchIndex::release_pages)). They stay in
/// the page cache; a later read maps them again, a page fault each, which is why it is not
/// done at every maintenance (every second in `neardup serve`): the pages a stream of
/// decisions reads stay mapped between two releases.
fn release_spilled_pages(sh: &Shared) {
    {
        let mut last = lock(&sh.last_release);
        if last.elapsed() < RELEASE_INTERVAL {
            return;
        }
        *last = std::time::Instant::now();
    }
    let inner = sh.read();
    for seg in inner.segments.values() {
        if let Some(x) = &seg.sketches {
            x.release_pages();
        }
    }
}

pub(super) fn enforce_max_docs(sh: &Shared) -> Result<()> {
    let Some(max) = sh.cfg.max_docs else {
        return Ok(());
    };
    if sh.check_writable().is_err() {
        return Ok(());
    }
    let _decider = lock(&sh.decide);
    let new_floor = {
        let inner = sh.read();
        let h = sh.horizon(&inner);
        let live: Vec<(i64, u64)> = inner
            .segments
            .iter()
            .filter(|(&s, _)| !sh.segment_dead(s, h))
            .map(|(&s, seg)| (s, seg.live))
            .collect();
        let mut total: u64 = live.iter().map(|x| x.1).sum();
        let mut floor = None;
        for (s, n) in live {
            if total <= max {
                break;
            }
            total -= n;
            floor = Some((s + 1).saturating_mul(sh.segment_ms));
        }
        floor
    };
    if let Some(f) = new_floor {
        sh.store
            .append_durable(&records::encode_floor(f))
            .map_err(|e| sh.fail(e))?;
        let mut inner = sh.write();
        inner.floor = inner.floor.max(f);
    }
    Ok(())
}

/// Drops dead segments, then frees their records in small batches (short write locks).
pub(super) fn expire(sh: &Shared) {
    let dropped: Vec<(i64, Segment)> = {
        let mut inner = sh.write();
        let h = sh.horizon(&inner);
        let dead: Vec<i64> = inner
            .segments
            .keys()
            .copied()
            .filter(|&s| sh.segment_dead(s, h))
            .collect();
        dead.into_iter()
            .filter_map(|s| inner.segments.remove(&s).map(|seg| (s, seg)))
            .collect()
    };
    for (sid, seg) in dropped {
        // (fingerprint or arrival sequence, handle): what the slot still holds if it is this
        // segment's document.
        let mut entries: Vec<(u64, u32)> = seg.head.iter().collect();
        for r in &seg.runs {
            entries.extend(r.iter());
        }
        // Under the template veto, each position's counted lines (taken out of the counts
        // with their document).
        let mut lines: Vec<Vec<u64>> = Vec::new();
        if let Some(x) = &seg.sketches {
            entries.extend(x.seqs.iter().copied().zip(x.handles.iter().copied()));
            if sh.auto.as_ref().is_some_and(|a| a.veto.is_some()) {
                lines = (0..x.len()).map(|pos| x.lines(pos)).collect();
            }
        }
        let first_sketch = entries.len() - seg.sketches.as_ref().map_or(0, |x| x.len());
        if !seg.observed.is_empty() {
            let mut inner = sh.write();
            for (&k, &n) in &seg.observed {
                inner.lines.sub_duplicates(k, n);
            }
        }
        drop(seg);
        for (c, chunk) in entries.chunks(LOCK_BATCH).enumerate() {
            let mut inner = sh.write();
            let mut n = 0;
            for (i, &(fp, h)) in chunk.iter().enumerate() {
                let s = inner.slab.get(h);
                if s.state == LIVE && s.fp == fp && s.ts.div_euclid(sh.segment_ms) == sid {
                    inner.unmap(h);
                    inner.release(h);
                    if let Some(l) = (c * LOCK_BATCH + i)
                        .checked_sub(first_sketch)
                        .and_then(|pos| lines.get(pos))
                    {
                        inner.lines.sub(l);
                    }
                    n += 1;
                }
            }
            sh.expired.fetch_add(n, Ordering::Relaxed);
        }
    }
}

/// Merge policy: a segment whose time has passed is merged into one run (its head frozen
/// first); the current segment merges all runs when the small ones add up to a quarter of the
/// largest (write amplification ~5), otherwise its small runs among themselves, so that it
/// keeps at most two built runs plus its head. A frozen head (all insert delta) is always
/// rebuilt at the next round. Builds run outside the locks; the result is swapped in.
pub(super) fn merge_runs(sh: &Shared) -> Result<()> {
    let current = sh.segment_of(sh.now());
    let plans: Vec<(i64, Vec<Arc<HammingIndex>>)> = {
        let mut inner = sh.write();
        let mut plans = Vec::new();
        for (&sid, seg) in inner.segments.iter_mut() {
            if sid < current && !seg.head.is_empty() {
                let full =
                    std::mem::replace(&mut seg.head, HammingIndex::new(sh.head_layout.clone()));
                seg.runs.push(Arc::new(full));
            }
            // A frozen head is all insert delta (slower to search than built tables): it is
            // always rebuilt, alone or merged.
            let unbuilt = seg.runs.iter().any(|r| r.pending_inserts() > 0);
            if seg.runs.len() < 2 && !unbuilt {
                continue;
            }
            let main = seg.runs[0].len();
            let rest: usize = seg.runs[1..].iter().map(|r| r.len()).sum();
            if sid < current || rest * 4 >= main || seg.runs.len() == 1 {
                plans.push((sid, seg.runs.clone()));
            } else if seg.runs.len() > 2 || unbuilt {
                // Small runs merge among themselves: at most the main run plus one.
                plans.push((sid, seg.runs[1..].to_vec()));
            }
        }
        plans
    };
    for (sid, parts) in plans {
        let mut entries: Vec<(u64, u32)> = Vec::with_capacity(parts.iter().map(|r| r.len()).sum());
        for r in &parts {
            entries.extend(r.iter());
        }
        let mut kept = Vec::with_capacity(entries.len());
        for chunk in entries.chunks(LOCK_BATCH) {
            let inner = sh.read();
            kept.extend(chunk.iter().copied().filter(|&(fp, h)| {
                let s = inner.slab.get(h);
                s.state == LIVE && s.fp == fp && s.ts.div_euclid(sh.segment_ms) == sid
            }));
        }
        drop(entries);
        kept.sort_unstable();
        kept.dedup();
        let merged = Arc::new(HammingIndex::build(sh.layout_for(kept.len())?, &kept)?);
        drop(kept);
        let mut inner = sh.write();
        if let Some(seg) = inner.segments.get_mut(&sid) {
            if parts
                .iter()
                .all(|p| seg.runs.iter().any(|r| Arc::ptr_eq(p, r)))
            {
                let pos = seg
                    .runs
                    .iter()
                    .position(|r| Arc::ptr_eq(r, &parts[0]))
                    .unwrap_or(0);
                seg.runs
                    .retain(|r| !parts.iter().any(|p| Arc::ptr_eq(p, r)));
                seg.runs.insert(pos.min(seg.runs.len()), merged);
                sh.merges.fetch_add(1, Ordering::Relaxed);
            }
        }
        drop(inner);
        drop(parts);
    }
    Ok(())
}

/// Freezes the band tables of every segment, the current one included (`auto` detector; see
/// `sketch/band_table.rs`: about 5 bytes a slot and band instead of 16, and a lookup reads a
/// group of entries in one place instead of a chain of slots), a segment at a time:
/// the tables are shared under a short read lock, frozen outside the locks, and swapped in
/// under the write lock; documents the segment takes meanwhile are kept aside (searched all
/// the same) and put into the new tables then, so that no insert copies a shared table. The
/// replaced tables are freed after the lock. A segment is frozen again once an eighth of its
/// documents came after its last freeze (the current one as it grows; a past one, which takes
/// no more documents, once).
pub(super) fn freeze_tables(sh: &Shared) {
    let current = sh.segment_of(sh.now());
    let segments: Vec<i64> = sh
        .read()
        .segments
        .range(..=current)
        .map(|(&s, _)| s)
        .collect();
    for sid in segments {
        let shared = sh
            .read()
            .segments
            .get(&sid)
            .and_then(|seg| seg.sketches.as_ref())
            .and_then(|x| x.share_tables(MIN_FROZEN));
        let Some(mut tables) = shared else {
            continue;
        };
        tables.freeze();
        let replaced = sh
            .write()
            .segments
            .get_mut(&sid)
            .and_then(|seg| seg.sketches.as_mut())
            .map(|x| x.put_frozen(tables));
        if replaced.is_some() {
            sh.freezes.fetch_add(1, Ordering::Relaxed);
        }
        drop(replaced);
    }
}
