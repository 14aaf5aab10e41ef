//! Recovery at open. The newest snapshot is loaded in bulk: its framing is checked in one
//! sequential pass, its entries are decoded into slab chunks (and grouped by time segment) on
//! all cores, then one index per segment is bulk-built (in parallel) while the id map is filled
//! in key order. The log is then replayed record by record through the same in-memory paths as
//! live writes (inserts go to the segments' heads, removals are filtered by the slot check until
//! maintenance merges the runs).
//!
//! Snapshot entries are normally unique by id, but a document that expired and was stored again
//! under the same id before its slot was reclaimed appears twice: of two entries with one id the
//! newer timestamp wins (ties: the later entry), as when the log is replayed in order.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use neardup_index::{HammingIndex, Layout};
use neardup_store::Recovered;
use rayon::prelude::*;

use super::records::{self, Record};
use super::sketch;
use super::slab::{id_key, Chunk, IdMap, Slab};
use super::state::{Horizon, Inner, Segment, LIVE};
use super::{EngineConfig, EngineError, Result, CHUNK};
use crate::hash::xxh3;
use crate::policy::AutoDetector;

/// `(fingerprint, handle)` entries of one segment, in parts (one per slab chunk).
type Parts = Vec<Vec<(u64, u32)>>;
/// A decoded snapshot: id-map keys (one vector per slab chunk) and each segment's entries.
type Decoded = (Vec<Vec<u64>>, BTreeMap<i64, Parts>);

/// Rebuilds the in-memory state from what the store recovered; returns it and the number of
/// stored documents. `horizon.floor` is ignored (the snapshot and log carry the floor).
pub(super) fn recover(
    dir: &Path,
    recovered: Recovered,
    cfg: &EngineConfig,
    horizon: Horizon,
    segment_ms: i64,
    head_layout: &Layout,
) -> Result<(Inner, u64)> {
    let corrupt = |reason: String| EngineError::Corrupt {
        dir: dir.to_path_buf(),
        reason,
    };
    let mut inner = Inner::new();
    if let Some(snap) = &recovered.snapshot {
        let (keys, by_seg) =
            decode_snapshot(&mut inner, snap.body(), horizon.expired_at, segment_ms)
                .map_err(corrupt)?;
        let plan = |n: usize| {
            let n = n.max(1) as u64;
            Layout::plan(n, cfg.distance, n.saturating_mul(cfg.index_bytes_per_doc))
        };
        let mut ids = IdMap::with_capacity(keys.iter().map(Vec::len).sum());
        let slab = &inner.slab;
        // The id map is filled on one thread while the indexes build on the others.
        let (lost, built) = rayon::join(
            || {
                let mut lost = Vec::new();
                ids.insert_bulk(
                    keys,
                    |a, b| slab.id(a) == slab.id(b),
                    // Newer timestamp wins; ties: the later entry (higher handle).
                    |a, b| {
                        if (slab.get(a).ts, a) > (slab.get(b).ts, b) {
                            a
                        } else {
                            b
                        }
                    },
                    |h| lost.push(h),
                );
                lost
            },
            || {
                by_seg
                    .into_par_iter()
                    .map(|(sid, parts)| {
                        let refs: Vec<&[(u64, u32)]> = parts.iter().map(Vec::as_slice).collect();
                        let n = refs.iter().map(|p| p.len()).sum::<usize>();
                        let idx = HammingIndex::build_parts(plan(n)?, &refs)?;
                        Ok((sid, n, idx))
                    })
                    .collect::<Result<Vec<_>, neardup_index::Error>>()
            },
        );
        inner.ids = ids;
        for (sid, n, idx) in built? {
            inner.segments.insert(
                sid,
                Segment {
                    runs: vec![Arc::new(idx)],
                    head: HammingIndex::new(head_layout.clone()),
                    live: n as u64,
                    sketches: None,
                    observed: Default::default(),
                },
            );
        }
        // Entries that lost to a newer one with the same id: not stored (their index entries
        // fail the slot check).
        for h in lost {
            let sid = inner.slab.get(h).ts.div_euclid(segment_ms);
            if let Some(seg) = inner.segments.get_mut(&sid) {
                seg.live -= 1;
            }
            inner.release(h);
        }
    }
    for (lsn, rec) in recovered.log.iter() {
        match records::decode(rec).map_err(|r| corrupt(format!("log record {lsn}: {r}")))? {
            Record::Insert { fp, ts, id } => {
                // Log records are in LSN order: the later one wins.
                if let Some(old) = inner.lookup(id) {
                    inner.remove_doc(old, segment_ms);
                }
                let h = Horizon {
                    floor: inner.floor,
                    ..horizon
                };
                if h.live(ts) {
                    inner.insert_doc(fp, ts, id, segment_ms, head_layout)?;
                }
            }
            Record::Remove { id } => {
                if let Some(h) = inner.lookup(id) {
                    inner.remove_doc(h, segment_ms);
                }
            }
            Record::Floor { floor } => inner.floor = inner.floor.max(floor),
            Record::Sketch { .. } | Record::Lines { .. } => {
                return Err(corrupt(format!(
                    "log record {lsn} is an auto-detector record in a data directory of the simhash detector"
                )))
            }
        }
    }
    inner.finish_deferred();
    let documents = inner.segments.values().map(|s| s.live).sum();
    Ok((inner, documents))
}

/// Loads a snapshot body into an empty `inner` (slab and floor), keeping the entries live at
/// `expired_at` and the body's floor. Returns the id-map keys (per chunk) and the
/// `(fingerprint, handle)` entries of each segment.
fn decode_snapshot(
    inner: &mut Inner,
    body: &[u8],
    expired_at: i64,
    segment_ms: i64,
) -> Result<Decoded, String> {
    let floor = records::snapshot_floor(body)?;
    inner.floor = floor;
    let keep = |ts: i64| ts > expired_at && ts >= floor;
    // Pass 1 (sequential, framing only): where each chunk of CHUNK kept entries starts.
    let mut starts = Vec::new();
    let mut kept = 0usize;
    records::scan_snapshot(body, |at, ts| {
        if keep(ts) {
            if kept.is_multiple_of(CHUNK) {
                starts.push(at);
            }
            kept += 1;
        }
    })?;
    if kept >= u32::MAX as usize {
        return Err(format!(
            "snapshot holds {kept} documents, more than handles can address"
        ));
    }
    // Pass 2 (parallel): decode each chunk; keys for the id map.
    type ChunkOut = (Chunk, Vec<u64>, Vec<(i64, Vec<(u64, u32)>)>);
    let decoded: Vec<ChunkOut> = starts
        .par_iter()
        .enumerate()
        .map(|(ci, &start)| {
            let n = CHUNK.min(kept - ci * CHUNK);
            let end = starts.get(ci + 1).copied().unwrap_or(body.len());
            let mut chunk = Chunk::with_capacity(n, (end - start).saturating_sub(20 * n));
            let mut keys = Vec::with_capacity(n);
            let mut groups: Vec<(i64, Vec<(u64, u32)>)> = Vec::new();
            // Segment of the last entry and the timestamps it spans (saves a division per entry).
            let (mut lo, mut hi, mut g) = (i64::MAX, i64::MIN, 0);
            let mut at = start;
            while chunk.len() < n {
                let (fp, ts, id, next) = records::snapshot_entry(body, at)?;
                at = next;
                if keep(ts) {
                    let h = (ci * CHUNK + chunk.len()) as u32;
                    keys.push(u64::from(id_key(xxh3(id.as_bytes()))) << 32 | u64::from(h));
                    chunk.push(fp, ts, id, LIVE);
                    if ts < lo || ts > hi {
                        let sid = ts.div_euclid(segment_ms);
                        lo = sid.saturating_mul(segment_ms);
                        hi = lo.saturating_add(segment_ms - 1);
                        g = match groups.iter().position(|x| x.0 == sid) {
                            Some(g) => g,
                            None => {
                                groups.push((sid, Vec::with_capacity(n - chunk.len() + 1)));
                                groups.len() - 1
                            }
                        };
                    }
                    groups[g].1.push((fp, h));
                }
            }
            Ok((chunk, keys, groups))
        })
        .collect::<Result<_, String>>()?;
    let mut chunks = Vec::with_capacity(decoded.len());
    let mut keys = Vec::with_capacity(decoded.len());
    let mut by_seg: BTreeMap<i64, Parts> = BTreeMap::new();
    for (c, k, groups) in decoded {
        chunks.push(c);
        keys.push(k);
        for (sid, mut part) in groups {
            part.shrink_to_fit();
            by_seg.entry(sid).or_default().push(part);
        }
    }
    inner.slab = Slab::from_chunks(chunks);
    Ok((keys, by_seg))
}

/// Snapshot entries decoded a chunk at a time, ahead of their inserts.
const DECODE_AHEAD: usize = 4096;

/// How many entries ahead of its insert a snapshot entry's id-map slot is prefetched.
const ID_PREFETCH_AHEAD: usize = 8;

/// Recovery under the `auto` detector: the snapshot's entries (each with its sequence and
/// encoded sketch) are inserted in order, then the log is replayed through the same path as
/// live writes; a record's sequence is its LSN. Of two entries with one id the newer timestamp
/// wins (ties: the later), as in [`recover`].
pub(super) fn recover_sketches(
    dir: &Path,
    recovered: Recovered,
    horizon: Horizon,
    segment_ms: i64,
    head_layout: &Layout,
    make: &dyn Fn() -> AutoDetector,
    progress: &(dyn Fn(super::RecoveryProgress) + Sync),
) -> Result<(Inner, u64)> {
    let corrupt = |reason: String| EngineError::Corrupt {
        dir: dir.to_path_buf(),
        reason,
    };
    let mut inner = Inner::new();
    inner.spill_dir = Some(Arc::from(dir));
    // `decoded`: the sketch decoded ahead (snapshot entries), else decoded here.
    let put = |inner: &mut Inner,
               (seq, ts, id, blob): records::SketchEntry<'_>,
               decoded: Option<Result<Box<sketch::DocSketch>, String>>|
     -> Result<()> {
        let h = Horizon {
            floor: inner.floor,
            ..horizon
        };
        if let Some(old) = inner.lookup(id) {
            if inner.slab.get(old).ts > ts {
                return Ok(());
            }
            inner.remove_doc(old, segment_ms);
        }
        if h.live(ts) {
            let sketch = decoded
                .unwrap_or_else(|| sketch::decode(blob).map(Box::new))
                .map_err(|r| corrupt(format!("document {id:?} (record {seq}): {r}")))?;
            inner.insert_sketch(seq, ts, id, sketch, blob, segment_ms, head_layout, make);
        }
        Ok(())
    };
    // A duplicate's counted lines stay while any time of their segment is live (they leave
    // with the segment, as `maintain::expire` drops it).
    let observe = |inner: &mut Inner, segment: i64, keys: &[u64], back: bool| {
        let h = Horizon {
            floor: inner.floor,
            ..horizon
        };
        if h.segment_live(segment, segment_ms) {
            inner.observe(segment, keys, back, head_layout);
        }
    };
    if let Some(snap) = &recovered.snapshot {
        let (floor, entries, observed) =
            records::decode_sketch_snapshot(snap.body()).map_err(corrupt)?;
        inner.floor = floor;
        for (segment, lines) in &observed {
            let keys: Vec<u64> = lines
                .iter()
                .flat_map(|&(k, n)| std::iter::repeat_n(k, n as usize))
                .collect();
            observe(&mut inner, *segment, &keys, false);
        }
        // Each segment's tables sized once for what it will hold, rather than grown entry by
        // entry (a restart's largest cost after the inserts themselves). A segment's band
        // tables only collect its documents' keys and are built at the end, frozen: a sort
        // rather than a hash insert per band and document (the current segment's too:
        // maintenance keeps it frozen as it grows).
        let live = Horizon { floor, ..horizon };
        let mut counts: std::collections::BTreeMap<i64, (usize, usize)> = Default::default();
        for (_, ts, _, blob) in entries.iter().filter(|e| live.live(e.1)) {
            let c = counts.entry(ts.div_euclid(segment_ms)).or_default();
            c.0 += 1;
            c.1 += usize::from(sketch::has_minhash(blob));
        }
        // The id map sized once for every live entry, rather than doubled as it fills.
        inner.ids = IdMap::with_capacity(counts.values().map(|c| c.0).sum());
        for (segment, sizes) in counts {
            inner.reserve_sketches(segment, sizes, head_layout, make);
        }
        // Entries are decoded (band keys included) a chunk ahead on the other threads while
        // this one inserts the chunk before, in order: the inserts are sequential, the
        // decoding is not.
        let keyer = make().minhash().map(|m| m.lsh().clone());
        let decode_chunk = |chunk: &[records::SketchEntry<'_>]| {
            chunk
                .par_iter()
                .map(|&(_, ts, _, blob)| {
                    live.live(ts).then(|| {
                        sketch::decode(blob).map(|mut s| {
                            // The band keys of the whole text's signature and of its body's
                            // (indexed beside it, by a detector with the same bands).
                            let body = s.body.as_mut().and_then(|b| b.minhash.as_mut());
                            for m in s.auto.minhash.as_mut().into_iter().chain(body) {
                                if let (Some(l), true) = (&keyer, m.keys.is_empty()) {
                                    m.keys = l.keys(&m.signature);
                                }
                            }
                            // Boxed: the sketch is handed on several times before it is kept.
                            Box::new(s)
                        })
                    })
                })
                .collect::<Vec<_>>()
        };
        let chunks: Vec<_> = entries.chunks(DECODE_AHEAD).collect();
        let mut ready = chunks.first().map(|c| decode_chunk(c));
        for (i, chunk) in chunks.iter().enumerate() {
            let decoded = ready
                .take()
                .expect("each chunk is decoded before it is inserted");
            let mut next = None;
            let inserted = rayon::in_place_scope(|s| {
                if let Some(c) = chunks.get(i + 1) {
                    s.spawn(|_| next = Some(decode_chunk(c)));
                }
                let mut decoded = decoded;
                chunk.iter().enumerate().try_for_each(|(j, &e)| {
                    // Each insert looks its id up at a random place of the id map, and its
                    // exact digest at a random place of its segment's table: both asked for
                    // a few entries ahead.
                    if let Some(ahead) = chunk.get(j + ID_PREFETCH_AHEAD) {
                        inner.prefetch_id(ahead.2);
                        if let Some(Some(Ok(s))) = decoded.get(j + ID_PREFETCH_AHEAD) {
                            inner.prefetch_sketch(ahead.1, s, segment_ms);
                        }
                    }
                    put(&mut inner, e, decoded[j].take())
                })
            });
            inserted?;
            ready = next;
            progress(super::RecoveryProgress {
                snapshot_done: (i * DECODE_AHEAD + chunk.len()) as u64,
                snapshot_total: entries.len() as u64,
                finished: false,
            });
        }
    }
    for (lsn, rec) in recovered.log.iter() {
        match records::decode(rec).map_err(|r| corrupt(format!("log record {lsn}: {r}")))? {
            Record::Sketch { ts, id, sketch } => put(&mut inner, (lsn, ts, id, sketch), None)?,
            Record::Lines { ts, keys, back } => {
                observe(&mut inner, ts.div_euclid(segment_ms), &keys, back)
            }
            Record::Remove { id } => {
                if let Some(h) = inner.lookup(id) {
                    inner.remove_doc(h, segment_ms);
                }
            }
            Record::Floor { floor } => inner.floor = inner.floor.max(floor),
            Record::Insert { .. } => {
                return Err(corrupt(format!(
                    "log record {lsn} is a simhash insert in a data directory of the auto detector"
                )))
            }
        }
    }
    inner.finish_deferred();
    let documents = inner.segments.values().map(|s| s.live).sum();
    Ok((inner, documents))
}
