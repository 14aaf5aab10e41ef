//! The in-memory state under the engine's lock: document slots, the id map and the time
//! segments with their indexes, and the rule that says which documents are live.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use neardup_index::{HammingIndex, Layout};

use super::sketch::{DocSketch, SketchIndex};
use super::slab::{id_key, IdMap, Slab};
use super::veto::LineCounts;
use super::{Result, HEAD_MAX};
use crate::hash::{xxh3, FastBuild};
use crate::policy::AutoDetector;

pub(super) const FREE: u8 = 0;
pub(super) const LIVE: u8 = 1;
/// Dead (removed or expired) but kept intact for the snapshot being written.
pub(super) const PARKED: u8 = 2;

pub(super) struct Segment {
    /// Immutable runs; `runs[0]` is the largest (the merged main run).
    pub(super) runs: Vec<Arc<HammingIndex>>,
    /// Mutable, at most `HEAD_MAX` entries (all in the index's delta, never merged in place).
    pub(super) head: HammingIndex,
    /// Stored documents (inserts minus removals).
    pub(super) live: u64,
    /// The `auto` detector's index of this segment (`None` under the simhash detector, whose
    /// documents are in `runs` and `head`).
    pub(super) sketches: Option<SketchIndex>,
    /// Under the template veto: the counted lines of the duplicates answered with timestamps
    /// in this segment, line key → documents (in [`Inner::lines`] until the segment expires).
    pub(super) observed: HashMap<u64, u32, FastBuild>,
}

impl Segment {
    pub(super) fn new(head_layout: &Layout) -> Segment {
        Segment {
            runs: Vec::new(),
            head: HammingIndex::new(head_layout.clone()),
            live: 0,
            sketches: None,
            observed: HashMap::default(),
        }
    }
}

pub(super) struct Inner {
    pub(super) segments: BTreeMap<i64, Segment>,
    pub(super) slab: Slab,
    /// id → slot of the current document with that id.
    pub(super) ids: IdMap,
    pub(super) free: Vec<u32>,
    pub(super) parked: Vec<u32>,
    pub(super) snapshotting: bool,
    pub(super) floor: i64,
    /// Under the template veto: how many stored documents and counted duplicates hold each
    /// line.
    pub(super) lines: LineCounts,
    /// Where the segments' sketch indexes spill their encoded sketches (the data directory);
    /// `None`: in memory.
    pub(super) spill_dir: Option<Arc<std::path::Path>>,
}

impl Inner {
    pub(super) fn new() -> Inner {
        Inner {
            segments: BTreeMap::new(),
            slab: Slab::default(),
            ids: IdMap::default(),
            free: Vec::new(),
            parked: Vec::new(),
            snapshotting: false,
            floor: i64::MIN,
            lines: LineCounts::default(),
            spill_dir: None,
        }
    }

    /// A new segment's sketch index, with a detector `make` makes: spilled to
    /// [`Inner::spill_dir`] when it is set.
    fn new_sketch_index(
        spill_dir: Option<&Arc<std::path::Path>>,
        make: &dyn Fn() -> AutoDetector,
    ) -> SketchIndex {
        match spill_dir {
            Some(dir) => SketchIndex::spilled(make(), dir),
            None => SketchIndex::new(make()),
        }
    }

    pub(super) fn lookup(&self, id: &str) -> Option<u32> {
        let pos = self
            .ids
            .find(id_key(xxh3(id.as_bytes())), |s| self.slab.id(s) == id)?;
        Some(self.ids.handle_at(pos))
    }

    /// Prefetches the id map's slot where a lookup of `id` starts.
    pub(super) fn prefetch_id(&self, id: &str) {
        self.ids.prefetch(id_key(xxh3(id.as_bytes())));
    }

    /// Asks for the memory inserting `sketch` with timestamp `ts` into its segment's index
    /// reads first ([`Inner::insert_sketch`] a few documents later).
    pub(super) fn prefetch_sketch(&self, ts: i64, sketch: &DocSketch, segment_ms: i64) {
        if let Some(x) = self
            .segments
            .get(&ts.div_euclid(segment_ms))
            .and_then(|s| s.sketches.as_ref())
        {
            x.prefetch(sketch);
        }
    }

    /// Maps `id` (the id of slot `slot`) to `slot`, replacing its previous mapping.
    pub(super) fn map_insert(&mut self, id: &str, slot: u32) {
        let key = id_key(xxh3(id.as_bytes()));
        match self.ids.find(key, |s| self.slab.id(s) == id) {
            Some(pos) => self.ids.set_at(pos, slot),
            None => self.ids.insert(key, slot),
        }
    }

    /// Removes the mapping of slot `slot`'s id if it points to `slot`.
    pub(super) fn unmap(&mut self, slot: u32) {
        let key = id_key(xxh3(self.slab.id(slot).as_bytes()));
        if let Some(pos) = self.ids.find(key, |s| s == slot) {
            self.ids.remove_at(pos);
        }
    }

    pub(super) fn alloc(&mut self, fp: u64, ts: i64, id: &str) -> u32 {
        if !self.snapshotting {
            if let Some(h) = self.free.pop() {
                self.slab.set(h, fp, ts, id, LIVE);
                return h;
            }
        }
        self.slab.push(fp, ts, id, LIVE)
    }

    /// Stores a document: its slot, its id mapping and its segment's head index. Returns true
    /// when the head filled up and was frozen into a run (to be merged by maintenance).
    pub(super) fn insert_doc(
        &mut self,
        fp: u64,
        ts: i64,
        id: &str,
        segment_ms: i64,
        head_layout: &Layout,
    ) -> Result<bool> {
        let handle = self.alloc(fp, ts, id);
        self.map_insert(id, handle);
        let seg = self
            .segments
            .entry(ts.div_euclid(segment_ms))
            .or_insert_with(|| Segment::new(head_layout));
        seg.head.insert(fp, handle)?;
        seg.live += 1;
        if seg.head.len() >= HEAD_MAX {
            let full = std::mem::replace(&mut seg.head, HammingIndex::new(head_layout.clone()));
            seg.runs.push(Arc::new(full));
            return Ok(true);
        }
        Ok(false)
    }

    /// Stores a document of the `auto` detector: its slot (whose `fp` holds the arrival
    /// sequence `seq`), its id mapping and its segment's sketch index (made by `make` for a new
    /// segment).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn insert_sketch(
        &mut self,
        seq: u64,
        ts: i64,
        id: &str,
        sketch: Box<DocSketch>,
        blob: &[u8],
        segment_ms: i64,
        head_layout: &Layout,
        make: &dyn Fn() -> AutoDetector,
    ) {
        let handle = self.alloc(seq, ts, id);
        self.map_insert(id, handle);
        if let Some(v) = &sketch.veto {
            self.lines.add(&v.lines);
        }
        let seg = self
            .segments
            .entry(ts.div_euclid(segment_ms))
            .or_insert_with(|| Segment::new(head_layout));
        let dir = self.spill_dir.as_ref();
        seg.sketches
            .get_or_insert_with(|| Inner::new_sketch_index(dir, make))
            .insert(handle, seq, sketch, blob, make);
        seg.live += 1;
    }

    /// Counts the lines of a duplicate with timestamp `ts` (`back`: takes them back out),
    /// in segment `segment`'s observed lines and in the line counts.
    pub(super) fn observe(
        &mut self,
        segment: i64,
        lines: &[u64],
        back: bool,
        head_layout: &Layout,
    ) {
        let seg = self
            .segments
            .entry(segment)
            .or_insert_with(|| Segment::new(head_layout));
        if back {
            for &k in lines {
                if let Some(n) = seg.observed.get_mut(&k) {
                    *n -= 1;
                    if *n == 0 {
                        seg.observed.remove(&k);
                    }
                    self.lines.sub_duplicates(k, 1);
                }
            }
        } else {
            for &k in lines {
                *seg.observed.entry(k).or_insert(0) += 1;
            }
            self.lines.add_duplicate(lines);
        }
    }

    /// Makes room in segment `segment`'s sketch index (made by `make` if it has none) for
    /// `documents` more documents, `long` of them with a MinHash sketch; its band tables are
    /// built at once by [`Inner::finish_deferred`] ([`SketchIndex::reserve`]).
    pub(super) fn reserve_sketches(
        &mut self,
        segment: i64,
        (documents, long): (usize, usize),
        head_layout: &Layout,
        make: &dyn Fn() -> AutoDetector,
    ) {
        let dir = self.spill_dir.as_ref();
        self.segments
            .entry(segment)
            .or_insert_with(|| Segment::new(head_layout))
            .sketches
            .get_or_insert_with(|| Inner::new_sketch_index(dir, make))
            .reserve(documents, long, true);
    }

    /// Builds every segment's deferred band tables ([`Inner::reserve_sketches`]).
    pub(super) fn finish_deferred(&mut self) {
        for seg in self.segments.values_mut() {
            if let Some(x) = seg.sketches.as_mut() {
                x.finish_deferred();
            }
        }
    }

    /// Removes a stored document (its run entries are filtered out by the slot check until
    /// the next merge drops them).
    pub(super) fn remove_doc(&mut self, handle: u32, segment_ms: i64) {
        let (fp, ts) = {
            let s = self.slab.get(handle);
            (s.fp, s.ts)
        };
        self.unmap(handle);
        if let Some(seg) = self.segments.get_mut(&ts.div_euclid(segment_ms)) {
            seg.live = seg.live.saturating_sub(1);
            seg.head.remove(fp, handle);
            // Under the `auto` detector `fp` is the arrival sequence.
            if let Some(x) = &seg.sketches {
                if let Some(pos) = x.position(fp) {
                    self.lines.sub(&x.lines(pos));
                }
            }
        }
        self.release(handle);
    }

    /// Marks a dead slot free (or parked while a snapshot runs).
    pub(super) fn release(&mut self, h: u32) {
        if self.snapshotting {
            self.slab.get_mut(h).state = PARKED;
            self.parked.push(h);
        } else {
            self.slab.free(h);
            self.free.push(h);
        }
    }
}

/// The live-document rule at one instant.
#[derive(Clone, Copy, Debug)]
pub(super) struct Horizon {
    /// Live iff `ts > expired_at` …
    pub(super) expired_at: i64,
    /// … and `ts >= floor`.
    pub(super) floor: i64,
}

impl Horizon {
    #[inline]
    pub(super) fn live(&self, ts: i64) -> bool {
        ts > self.expired_at && ts >= self.floor
    }

    /// Whether any timestamp of time segment `segment` (of `segment_ms`) is live.
    pub(super) fn segment_live(&self, segment: i64, segment_ms: i64) -> bool {
        let last = segment
            .saturating_add(1)
            .saturating_mul(segment_ms)
            .saturating_sub(1);
        self.live(last)
    }
}
