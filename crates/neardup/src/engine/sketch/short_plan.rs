//! The short path's candidates of one search, chosen across the live time segments.
//!
//! A detector confirms at most [`MAX_CONFIRMED`] candidates of a text in each key space,
//! those sharing the most bands (of equally many, the earliest). The engine splits its
//! documents into time segments, each with its own detector; searched one by one, four
//! segments could each confirm that many. [`ShortPlan`] ranks the candidates of every segment
//! together by the same rule — arrival order is the sequence — so a decision confirms at most
//! as many as `neardup dedup`'s one detector holding the same documents, and the searched
//! text's side of the checks is prepared once. Its passages are looked up in every segment's
//! passage index together, so that a sentence held by documents of two segments counts as held
//! by two, as in one index.

use crate::detect::passages::find_across;
use crate::detect::Verdict;
use crate::policy::AutoSketch;
use crate::shorttext::{ShortCandidate, ShortCandidates, ShortQuery, MAX_CONFIRMED};
use crate::sketch::lsh::keep_most_shared;

use super::SketchIndex;

/// The short path's slots to confirm in each of a search's segments, and the searched text
/// prepared for them.
pub(in crate::engine) struct ShortPlan<'q> {
    query: Option<ShortQuery<'q>>,
    /// By segment, in the order given: the slots of its whole texts' detector and of its
    /// bodies' detector, in the order a detector alone would confirm them.
    slots: Vec<[Vec<u32>; 2]>,
    /// The passage match of the search, found across every segment as one index would
    /// (`find_across`): the segment and the verdict.
    passage: Option<(usize, Verdict)>,
}

/// A candidate of one segment's detector, ranked with those of every other.
#[derive(Clone, Copy)]
struct Ranked {
    bands: u32,
    seq: u64,
    segment: u32,
    slot: u32,
}

impl<'q> ShortPlan<'q> {
    /// The plan for `q` searched in `segments`, whose detectors all have the options of the
    /// first (an engine makes every segment's the same way).
    pub(in crate::engine) fn new(q: &'q AutoSketch, segments: &[&SketchIndex]) -> ShortPlan<'q> {
        let mut slots = vec![[Vec::new(), Vec::new()]; segments.len()];
        let indexes: Option<Vec<_>> = segments.iter().map(|x| x.det.passage_index()).collect();
        let passage = match (indexes, &q.passages) {
            (Some(indexes), Some(p)) => {
                find_across(&indexes, p, |i, doc| segments[i].seqs[doc as usize])
            }
            _ => None,
        };
        let query = segments.first().and_then(|x| x.det.short_query(q));
        if query.is_none() {
            return ShortPlan {
                query,
                slots,
                passage,
            };
        }
        // Whole texts (0) and bodies (1) are two detectors, each with its own cap, as in batch.
        for which in 0..2 {
            let found: Vec<Option<ShortCandidates>> = segments
                .iter()
                .map(|x| x.short_candidates(q, which))
                .collect();
            let own = choose(segments, &found, |c| &c.own);
            let other = choose(segments, &found, |c| &c.other);
            for ((s, own), other) in slots.iter_mut().zip(own).zip(other) {
                s[which] = ShortCandidates { own, other }.slots();
            }
        }
        ShortPlan {
            query,
            slots,
            passage,
        }
    }

    /// The passage match of the search when it lies in segment `i`.
    pub(in crate::engine) fn passage(&self, i: usize) -> Option<Verdict> {
        self.passage.filter(|(s, _)| *s == i).map(|(_, v)| v)
    }

    /// The prepared text and the slots of segment `i` (its whole texts', its bodies').
    pub(in crate::engine) fn segment(
        &mut self,
        i: usize,
    ) -> (Option<&mut ShortQuery<'q>>, &[Vec<u32>; 2]) {
        (self.query.as_mut(), &self.slots[i])
    }
}

/// Of the candidates of one key space (`space`) in every segment, the [`MAX_CONFIRMED`] that
/// share the most bands, of equally many the earliest; by segment, ascending by slot.
fn choose(
    segments: &[&SketchIndex],
    found: &[Option<ShortCandidates>],
    space: impl Fn(&ShortCandidates) -> &Vec<ShortCandidate>,
) -> Vec<Vec<ShortCandidate>> {
    let mut by_segment: Vec<Vec<ShortCandidate>> = found
        .iter()
        .map(|c| c.as_ref().map(|c| space(c).clone()).unwrap_or_default())
        .collect();
    let total: usize = by_segment.iter().map(Vec::len).sum();
    if total <= MAX_CONFIRMED {
        return by_segment;
    }
    let mut all: Vec<Ranked> = Vec::with_capacity(total);
    for (i, cands) in by_segment.iter().enumerate() {
        all.extend(cands.iter().map(|c| Ranked {
            bands: c.bands,
            seq: segments[i].seqs[c.doc as usize],
            segment: i as u32,
            slot: c.slot,
        }));
    }
    keep_most_shared(&mut all, MAX_CONFIRMED, |r| (r.bands, r.seq));
    let mut kept: Vec<Vec<u32>> = vec![Vec::new(); segments.len()];
    for r in all {
        kept[r.segment as usize].push(r.slot);
    }
    for (cands, mut keep) in by_segment.iter_mut().zip(kept) {
        keep.sort_unstable();
        cands.retain(|c| keep.binary_search(&c.slot).is_ok());
    }
    by_segment
}
