//! Sketches of the `auto` detector as the engine keeps them: what a document's sketch holds
//! ([`DocSketch`]), its encoding in log records and snapshots ([`encoding`]), and the
//! per-segment index that answers with them ([`SketchIndex`]).

use crate::detect::containment::PackedBottomK;
use crate::detect::{compare_verdicts, keep_stronger, Detector, Verdict};
use crate::policy::{AutoDetector, AutoFrozen, AutoSketch};
use crate::template_veto::{DistinctPart, DistinctSketch, LineKey, OwnLines, VetoRules};

use super::veto::{LineCounts, UNLEARNED_TEMPLATE_DOCS};

mod encoding;
mod short_plan;

use crate::spill_store::SpillStore;
pub(super) use encoding::{decode, encode, has_minhash};
use encoding::{
    decode_any, decode_kept, encode_kept, flags_at, BODY_HELD, EXACT_HELD, HELD, STRIPPED,
    TEXT_HELD,
};
pub(super) use short_plan::ShortPlan;

/// A document's sketch in the engine: the `auto` detector's, and under the template veto the
/// veto's.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct DocSketch {
    pub(super) auto: AutoSketch,
    /// Under the template veto, the sketch of its body ([`VetoRules::body`]) when it has one:
    /// searched when the whole text finds no live match.
    pub(super) body: Option<AutoSketch>,
    /// Whether the body is indexed, and encoded, with the document
    /// ([`VetoRules::body_is_own`]).
    pub(super) index_body: bool,
    pub(super) veto: Option<VetoSketch>,
    /// Set when the costly parts were put off (see [`Deferred`]): `auto` then has no long-path
    /// sketch, `veto` no distinct part. Never encoded, never indexed.
    pub(super) deferred: Option<Box<Deferred>>,
}

impl DocSketch {
    /// The sketch a search looks with: its body's when `by_body` (`None` without one), else
    /// its whole text's.
    pub(super) fn searched(&self, by_body: bool) -> Option<&AutoSketch> {
        if by_body {
            self.body.as_ref()
        } else {
            Some(&self.auto)
        }
    }
}

/// The text of a document being checked whose exact copy was indexed when it was sketched.
/// Its answer will be "duplicate of that copy" — an exact match, which outranks every other
/// and which the template veto never vetoes (a tie, another live document at similarity 1,
/// cannot exist: of two such documents the later is never stored) — so its long-path
/// sketch (MinHash) and its
/// distinct part, most of the cost of a sketch, are needed only if that copy has left the
/// window by the time it is decided; they are computed then, from this text and the line
/// counts it was sketched with ([`VetoSketch::line_docs`]), as they would have been at
/// first. Decisions never need them otherwise; a query, which lists every match, never
/// puts them off.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Deferred {
    pub(super) text: String,
    /// Its body under the template veto ([`VetoRules::body`]), when it has one.
    pub(super) body: Option<String>,
}

/// What the template veto knows of a document.
#[derive(Debug, Clone, PartialEq, Default)]
pub(super) struct VetoSketch {
    /// The keys of its counted lines, sorted and distinct (what it adds to the line counts).
    pub(super) lines: Vec<u64>,
    /// Whether any of its lines was repeated when it was sketched (without, it has no distinct
    /// part however its lines are counted later: see [`VetoRules::stands_unlearned`]).
    pub(super) had_repeats: bool,
    /// The keys of its lines held by fewer than `min_docs` stored documents (with its batch)
    /// and fewer than [`super::veto::UNLEARNED_TEMPLATE_DOCS`] documents in all, sorted: what
    /// it may share with a
    /// document stored before its template was known. Only for a document being checked,
    /// never encoded.
    pub(super) distinct_lines: Vec<u64>,
    /// Its distinct part with the full guard sets: only for a document being checked, never
    /// encoded.
    pub(super) distinct: Option<DistinctSketch>,
    /// What the index keeps of its distinct part.
    pub(super) part: Option<DistinctPart>,
    /// For a thin page stored with repeated lines: which were repeated, to judge it again
    /// with the line counts of each match.
    pub(super) thin: Option<ThinPage>,
    /// Stored before any of its lines was repeated (with two counted lines or more, under
    /// `by_content`): a bottom-256 sample of its whole text's character 3-grams
    /// ([`VetoRules::whole_sample`]), what a later match with it is judged by before its
    /// lines' counts can ([`VetoRules::vetoed_by_content`]).
    pub(super) whole_sample: Option<PackedBottomK>,
    /// Its own lines with their 3-grams, when it has a distinct part (under `by_content`):
    /// only for a document being checked, never encoded.
    pub(super) own: Option<OwnLines>,
    /// For a page stored with a distinct part (under `by_content`): which of its lines were
    /// repeated then (the others made its part), to tell when its part has gone stale — most
    /// of those lines since become template lines, as a site's menu and footer do once more
    /// of its pages came ([`ThinPage::part_gone_stale`], [`VetoRules::stands_with_stale_part`]).
    pub(super) part_repeated: Option<ThinPage>,
    /// When its distinct part was put off ([`DocSketch::deferred`]): how many documents held
    /// each of its lines when it was sketched (`line_keys` order), what the part is computed
    /// from. Otherwise empty. Never encoded.
    pub(super) line_docs: Vec<u32>,
}

/// A *thin* page ([`VetoRules::thin`]: fewer letters outside its repeated lines than a
/// distinct part needs) stored with repeated lines, and so without a distinct part: which of
/// its lines were repeated then. Stored before its template lines were held by
/// [`template_docs`](crate::template_veto::TemplateVetoOptions::template_docs) documents, it
/// was not template-only; it is judged again with the line counts of each match
/// ([`VetoRules::template_only_now`]).
#[derive(Debug, Clone, PartialEq, Default)]
pub(super) struct ThinPage {
    /// Bit `i` (of byte `i / 8`, from the lowest) set when [`VetoSketch::lines`]`[i]` is the
    /// exact key of a line repeated when the page was stored.
    pub(super) repeated: Vec<u8>,
}

impl ThinPage {
    /// The thin page whose repeated lines have exact keys `repeated`
    /// ([`VetoRules::thin_repeated`]), among its lines `lines` ([`VetoSketch::lines`]).
    pub(super) fn of(repeated: &[u64], lines: &[u64]) -> ThinPage {
        let mut bits = vec![0u8; lines.len().div_ceil(8)];
        for i in repeated.iter().filter_map(|k| lines.binary_search(k).ok()) {
            bits[i / 8] |= 1 << (i % 8);
        }
        ThinPage { repeated: bits }
    }

    /// Whether line `i` of the page is marked (was repeated when the page was stored).
    fn marked(&self, i: usize) -> bool {
        self.repeated
            .get(i / 8)
            .is_some_and(|b| b & (1 << (i % 8)) != 0)
    }

    /// Whether the page, whose lines are `lines`, is template-only now that line `k` is held
    /// by `docs(k)` documents.
    pub(super) fn template_only_now(
        &self,
        rules: &VetoRules,
        lines: &[u64],
        docs: &dyn Fn(u64) -> u32,
    ) -> bool {
        let repeated = lines
            .iter()
            .enumerate()
            .filter(|&(i, _)| self.marked(i))
            .map(|(_, &k)| docs(k));
        rules.template_only_now(repeated, UNLEARNED_TEMPLATE_DOCS)
    }

    /// Whether most lines of the page (`lines`) that were not repeated when it was stored —
    /// the lines of its distinct part — have become template lines since (`template(k)`).
    pub(super) fn part_gone_stale(&self, lines: &[u64], template: &dyn Fn(u64) -> bool) -> bool {
        let (mut part, mut now) = (0usize, 0usize);
        for (i, &k) in lines.iter().enumerate() {
            if LineKey::is_exact(k) && !self.marked(i) {
                part += 1;
                now += usize::from(template(k));
            }
        }
        2 * now > part
    }
}

/// One time segment's `auto` index: the detector (documents numbered by their position in the
/// segment) and, under the template veto, a second one for the bodies indexed with them; each
/// position's slab handle and arrival sequence (the LSN of its insert record: a handle may be
/// reused after its document is gone, a sequence never), and the encoded sketches — for
/// snapshots, and for the template veto's distinct parts and line keys — in a [`SpillStore`]
/// (spilled to a file when the index is made with a directory).
pub(super) struct SketchIndex {
    det: AutoDetector,
    /// The documents' bodies ([`DocSketch::index_body`]), by the same positions; made with the
    /// first.
    bodies: Option<AutoDetector>,
    /// Under the template veto, the positions whose document had no repeated line when it
    /// was stored.
    unlearned: Vec<bool>,
    /// Under the template veto, the positions whose document is a [`ThinPage`].
    thin_pages: Vec<bool>,
    /// Whether its detectors' band tables are deferred ([`SketchIndex::reserve`]).
    deferred: bool,
    /// Where it spills (the body detector's texts too), when it does.
    spill_dir: Option<std::sync::Arc<std::path::Path>>,
    pub(super) handles: Vec<u32>,
    pub(super) seqs: Vec<u64>,
    kept: SpillStore,
    ends: Vec<u64>,
}

impl SketchIndex {
    /// An index that keeps its encoded sketches and short texts in memory.
    pub(super) fn new(det: AutoDetector) -> SketchIndex {
        SketchIndex::with_store(det, SpillStore::in_memory(), None)
    }

    /// An index that spills its encoded sketches, and its detectors their short texts, to
    /// anonymous files in `dir` (the data directory; [`crate::spill_store`]).
    pub(super) fn spilled(
        mut det: AutoDetector,
        dir: &std::sync::Arc<std::path::Path>,
    ) -> SketchIndex {
        det.spill_texts(dir);
        SketchIndex::with_store(det, SpillStore::spilled(dir), Some(dir.clone()))
    }

    fn with_store(
        det: AutoDetector,
        kept: SpillStore,
        spill_dir: Option<std::sync::Arc<std::path::Path>>,
    ) -> SketchIndex {
        SketchIndex {
            spill_dir,
            det,
            bodies: None,
            unlearned: Vec::new(),
            thin_pages: Vec::new(),
            deferred: false,
            handles: Vec::new(),
            seqs: Vec::new(),
            kept,
            ends: Vec::new(),
        }
    }

    /// Lets go of the spill files' pages that reads mapped ([`SpillStore::release_pages`]).
    pub(super) fn release_pages(&self) {
        self.kept.release_pages();
        self.det.release_pages();
        self.bodies.iter().for_each(AutoDetector::release_pages);
    }

    /// Bytes of its encoded sketches and its detectors' short texts in spill files (0 in
    /// memory).
    pub(super) fn spilled_bytes(&self) -> u64 {
        self.kept.spilled_bytes()
            + self.det.spilled_bytes()
            + self.bodies.as_ref().map_or(0, |b| b.spilled_bytes())
    }

    pub(super) fn len(&self) -> usize {
        self.handles.len()
    }

    /// Asks for the memory inserting `sketch` reads first (its exact digest's place).
    #[inline]
    pub(super) fn prefetch(&self, sketch: &DocSketch) {
        self.det.prefetch_exact(sketch.auto.exact);
    }

    /// Makes room for `documents` more documents, `long` of them with a MinHash sketch. With
    /// `defer` (a restart loading a segment) the band tables only collect the documents'
    /// keys until [`SketchIndex::finish_deferred`] builds them at once; nothing may be searched
    /// in between.
    pub(super) fn reserve(&mut self, documents: usize, long: usize, defer: bool) {
        if defer {
            self.det.defer_tables();
            self.bodies.iter_mut().for_each(AutoDetector::defer_tables);
            self.deferred = true;
        }
        self.det.reserve(documents, long);
        self.handles.reserve(documents);
        self.seqs.reserve(documents);
        self.ends.reserve(documents);
    }

    /// Adds a document, and its body when it is indexed (into a detector `make` makes for the
    /// segment's first). Its encoded sketch is kept — without the MinHash signature and band
    /// keys when the detector keeps the signature (it gives them back), without a short text's
    /// text (the detector holds it) and without an indexed body's text and signature (the body
    /// detector holds them).
    pub(super) fn insert(
        &mut self,
        handle: u32,
        seq: u64,
        mut sketch: Box<DocSketch>,
        blob: &[u8],
        make: &dyn Fn() -> AutoDetector,
    ) {
        let pos = self.handles.len() as u32;
        let strip = sketch
            .auto
            .minhash
            .as_ref()
            .is_some_and(|m| m.shingles.is_none() && self.det.keeps_signatures());
        let body = sketch.index_body && sketch.body.is_some();
        // The body detector is built as `det` is: it keeps signatures if `det` does.
        let strip_body = sketch
            .body
            .as_ref()
            .and_then(|b| b.minhash.as_ref())
            .is_some_and(|m| m.shingles.is_none() && self.det.keeps_signatures());
        let exact = self.det.keeps_exact();
        let end = if strip || body || exact || sketch.auto.short.is_some() {
            self.kept
                .append(|out| encode_kept(&sketch, out, strip, strip_body, exact))
        } else {
            self.kept.append(|out| out.extend_from_slice(blob))
        };
        if let Some(v) = sketch.veto.as_ref() {
            self.unlearned.resize(pos as usize, false);
            self.unlearned.push(!v.had_repeats);
            self.thin_pages.resize(pos as usize, false);
            self.thin_pages.push(v.thin.is_some());
        }
        if let Some(body) = sketch.body.take().filter(|_| sketch.index_body) {
            let deferred = self.deferred;
            let dir = self.spill_dir.as_deref();
            self.bodies
                .get_or_insert_with(|| {
                    let mut b = make().into_body_index();
                    if deferred {
                        b.defer_tables();
                    }
                    if let Some(dir) = dir {
                        b.spill_texts(dir);
                    }
                    b
                })
                .insert(pos, body);
        }
        self.det.insert(pos, sketch.auto);
        self.handles.push(handle);
        self.seqs.push(seq);
        self.ends.push(end);
    }

    fn raw(&self, pos: usize) -> &[u8] {
        let start = if pos == 0 { 0 } else { self.ends[pos - 1] };
        self.kept.get(start..self.ends[pos])
    }

    /// The encoded sketch at `pos`, as [`encode`] wrote it.
    pub(super) fn blob(&self, pos: usize) -> std::borrow::Cow<'_, [u8]> {
        let b = self.raw(pos);
        let text_held = b[0] & TEXT_HELD != 0;
        let body_held = b[0] & BODY_HELD != 0;
        let exact_held = b[0] & EXACT_HELD != 0;
        let flags = b.get(flags_at(b)).copied().unwrap_or(0);
        if !text_held && !body_held && !exact_held && flags & (STRIPPED | HELD) == 0 {
            return std::borrow::Cow::Borrowed(b);
        }
        let (mut s, body_stripped) = decode_kept(b).expect("a sketch this index encoded");
        if exact_held {
            s.auto.exact = self
                .det
                .exact_of(pos as u32)
                .expect("the detector holds the exact digest of every document it indexed");
        }
        if let Some(sh) = s.auto.short.as_mut().filter(|_| text_held) {
            sh.text = self
                .det
                .short_text_of(pos as u32)
                .expect("the detector holds the short text of every document it indexed")
                .into();
        }
        if let Some(body) = s.body.as_mut().filter(|_| body_held) {
            let bodies = self
                .bodies
                .as_ref()
                .expect("a segment that indexed a body has a body detector");
            if let Some(sh) = body.short.as_mut() {
                sh.text = bodies
                    .short_text_of(pos as u32)
                    .expect("the body detector holds the short text of every body it indexed")
                    .into();
            }
            if body_stripped {
                body.minhash = bodies.minhash_sketch_of(pos as u32);
            }
            if exact_held {
                body.exact = bodies
                    .exact_of(pos as u32)
                    .expect("the body detector holds the exact digest of every body it indexed");
            }
        }
        if flags & STRIPPED != 0 {
            s.auto.minhash = self.det.minhash_sketch_of(pos as u32);
        }
        let mut full = Vec::with_capacity(b.len() + 600);
        encode(&s, &mut full);
        std::borrow::Cow::Owned(full)
    }

    /// Whether a document with exact digest `digest` is indexed here (live or not).
    pub(super) fn has_exact(&self, digest: u128) -> bool {
        self.det.has_exact(digest)
    }

    /// The counted lines of the document at `pos` (empty without the template veto).
    pub(super) fn lines(&self, pos: usize) -> Vec<u64> {
        self.veto(pos).map(|v| v.lines).unwrap_or_default()
    }

    /// What the encoded sketch at `pos` holds for the template veto.
    fn veto(&self, pos: usize) -> Option<VetoSketch> {
        decode_any(self.raw(pos))
            .expect("a sketch this index encoded")
            .veto
    }

    /// Whether the document at `pos`, a [`ThinPage`], is template-only now that its lines
    /// are held by `docs(k)` documents.
    fn template_only_now(&self, pos: usize, rules: &VetoRules, docs: &dyn Fn(u64) -> u32) -> bool {
        if !self.thin_pages.get(pos).copied().unwrap_or(false) {
            return false;
        }
        self.veto(pos).is_some_and(|v| {
            v.thin
                .as_ref()
                .is_some_and(|t| t.template_only_now(rules, &v.lines, docs))
        })
    }

    /// The position of the document with arrival sequence `seq`.
    pub(super) fn position(&self, seq: u64) -> Option<usize> {
        // Sequences grow with positions (documents are inserted in log order).
        self.seqs
            .binary_search(&seq)
            .ok()
            .or_else(|| self.seqs.iter().position(|&s| s == seq))
    }

    /// Every indexed document the sketch (its body's when `by_body`) is a near-duplicate of, by
    /// its whole text or its indexed body (the stronger when both), as `(verdict with `of` =
    /// its handle, its sequence)`; the caller checks that the handle still holds that sequence.
    /// Under the template veto (`rules`, with the engine's line counts `counts`), matches it
    /// vetoes are left out: a document stored before any of its lines was repeated is a
    /// template page once one of its lines is held by
    /// [`min_docs`](crate::template_veto::TemplateVetoOptions::min_docs) stored documents,
    /// or by [`UNLEARNED_TEMPLATE_DOCS`] stored documents and counted duplicates; a document
    /// stored thin ([`ThinPage`]) is judged template-only again with today's counts.
    ///
    /// The short path confirms the slots `plan` chose for this index, segment `segment` of
    /// the plan: make it ([`ShortPlan::new`]) with the same sketch (`s.body` when `by_body`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn find(
        &self,
        s: &DocSketch,
        by_body: bool,
        rules: Option<&VetoRules>,
        counts: &LineCounts,
        plan: &mut ShortPlan,
        segment: usize,
        out: &mut Vec<(Verdict, u64)>,
    ) {
        let template = |k: u64| {
            rules.is_some_and(|r| counts.stored_docs(k) >= r.options().min_docs)
                || counts.get(k) >= UNLEARNED_TEMPLATE_DOCS
        };
        let docs = |k: u64| counts.get(k);
        let template_only = DistinctPart::template_only();
        let mine = s.veto.as_ref().and_then(|v| v.distinct.as_ref());
        let query = s.searched(by_body);
        let Some(q) = query else {
            return;
        };
        let passage = plan.passage(segment);
        let (mut query, slots) = plan.segment(segment);
        let mut found = self
            .det
            .find_planned(q, query.as_deref_mut().map(|x| (x, &slots[0][..])));
        if let Some(v) = passage {
            AutoDetector::add_passage_verdict(&mut found, v);
        }
        if let Some(b) = &self.bodies {
            for v in b.find_planned(q, query.map(|x| (x, &slots[1][..]))) {
                keep_stronger(&mut found, v, self.seqs[v.of as usize]);
            }
        }
        for v in found {
            let pos = v.of as usize;
            if let (Some(r), Some(_), Some(veto)) = (rules, mine, &s.veto) {
                let unlearned = self.unlearned.get(pos).copied().unwrap_or(false);
                let stands = if self.template_only_now(pos, r, &docs) {
                    // Its part is now an empty signature, as if it had been stored with
                    // today's counts.
                    r.stands(&v, mine, Some(&template_only))
                } else if unlearned {
                    let theirs = self.veto(pos).unwrap_or_default();
                    // Its lines go by their exact keys. A line repeated since by a few
                    // duplicates is as likely an article's own, repeated by its copies: only
                    // one that other stored documents hold, or that has become a template
                    // line, makes it a template page.
                    let by_counts = !theirs
                        .lines
                        .iter()
                        .any(|&k| LineKey::is_exact(k) && template(k))
                        || r.stands_unlearned(&v, mine, &veto.distinct_lines, &theirs.lines);
                    // Before any count says so, what each has that the other lacks may.
                    by_counts
                        && !matches!((&theirs.whole_sample, &veto.own), (Some(whole), Some(own))
                        if r.vetoed_by_content(
                            &v,
                            mine,
                            own,
                            &veto.lines,
                            &theirs.lines,
                            |k| counts.get(k) <= 1,
                            whole,
                        ))
                } else {
                    let theirs = self.veto(pos).unwrap_or_default();
                    let stale = theirs
                        .part_repeated
                        .as_ref()
                        .is_some_and(|p| p.part_gone_stale(&theirs.lines, &template));
                    if stale {
                        r.stands_with_stale_part(&v, mine, theirs.part.as_ref())
                    } else {
                        r.stands(&v, mine, theirs.part.as_ref())
                    }
                };
                if !stands {
                    continue;
                }
            }
            out.push((
                Verdict {
                    of: self.handles[pos],
                    ..v
                },
                self.seqs[pos],
            ));
        }
    }

    /// The short path's candidates of `q` among its whole texts (`which` 0) or its bodies (1).
    fn short_candidates(
        &self,
        q: &AutoSketch,
        which: usize,
    ) -> Option<crate::shorttext::ShortCandidates> {
        match which {
            0 => self.det.short_candidates(q),
            _ => self.bodies.as_ref()?.short_candidates(q),
        }
    }

    /// Builds the band tables deferred by [`SketchIndex::reserve`], frozen when large enough
    /// (a past segment takes few documents more).
    pub(super) fn finish_deferred(&mut self) {
        if std::mem::take(&mut self.deferred) {
            self.det.finish_deferred();
            self.bodies
                .iter_mut()
                .for_each(AutoDetector::finish_deferred);
        }
    }

    /// The band tables of its detectors worth freezing from `min_slots` slots (see
    /// [`AutoDetector::share_tables`]), shared without a copy (documents inserted meanwhile
    /// are searched beside them); `None` when none is.
    pub(super) fn share_tables(&self, min_slots: usize) -> Option<SegmentTables> {
        let det = self.det.share_tables(min_slots);
        let bodies = self.bodies.as_ref().and_then(|b| b.share_tables(min_slots));
        (det.is_some() || bodies.is_some()).then_some(SegmentTables { det, bodies })
    }

    /// Puts tables from [`SketchIndex::share_tables`], frozen, in place, with the documents
    /// inserted since, and gives back those they replace (to be dropped outside the lock).
    pub(super) fn put_frozen(&mut self, t: SegmentTables) -> SegmentTables {
        let det = t.det.map(|f| self.det.put_frozen(f));
        let bodies = match (self.bodies.as_mut(), t.bodies) {
            (Some(b), Some(f)) => Some(b.put_frozen(f)),
            _ => None,
        };
        SegmentTables { det, bodies }
    }

    pub(super) fn heap_bytes(&self) -> usize {
        self.det.heap_bytes()
            + self.bodies.as_ref().map_or(0, |b| b.heap_bytes())
            + self.unlearned.capacity()
            + self.thin_pages.capacity()
            + self.handles.capacity() * 4
            + self.seqs.capacity() * 8
            + self.kept.heap_bytes()
            + self.ends.capacity() * 8
    }
}

/// A segment's band tables, shared to be frozen ([`SketchIndex::share_tables`]).
pub(super) struct SegmentTables {
    det: Option<AutoFrozen>,
    bodies: Option<AutoFrozen>,
}

impl SegmentTables {
    /// Builds the frozen form of every table, outside any lock.
    pub(super) fn freeze(&mut self) {
        self.det
            .iter_mut()
            .chain(&mut self.bodies)
            .for_each(AutoFrozen::freeze);
    }
}

/// Orders `(verdict, sequence)` pairs strongest first (see [`compare_verdicts`]; arrival order
/// is the sequence).
pub(super) fn sort_strongest(found: &mut [(Verdict, u64)]) {
    found.sort_by(|a, b| compare_verdicts(&a.0, a.1, &b.0, b.1));
}

#[cfg(test)]
mod content_tests;
#[cfg(test)]
mod tests;
