//! The decisions of a spilled run, in input order: which confirmed earlier document is the
//! evidence (`stronger`), the online rule's memory of what each representative saw
//! (`KeptState`); single linkage uses [`crate::dedup::union_find`].
//!
//! Invariant: the decisions are the in-memory `Deduper`'s with the same linkage (the property
//! test of `spill`).

use super::Linkage;

/// Whether `a` is a stronger match than `b`: more similar, ties to the earlier document
/// ([`crate::detect::best_verdict`]'s order for MinHash verdicts).
pub(super) fn stronger(a: (u32, f64), b: Option<(u32, f64)>) -> bool {
    b.is_none_or(|(bd, bs)| a.1 > bs || (a.1 == bs && a.0 < bd))
}

/// The online rule's state ([`Linkage::Kept`]): which documents are kept, each
/// representative's match at its decision, and the strongest kept document that came after a
/// representative and confirmed it — what a later copy of the representative sees beyond
/// the representative's own match.
pub(super) struct KeptState {
    kept: Vec<u64>,
    at_decision: Vec<Option<(u32, f64)>>,
    later: Vec<Option<(u32, f64)>>,
}

impl KeptState {
    /// `None` for single linkage.
    pub(super) fn new(linkage: Linkage, n: usize) -> Option<Self> {
        (linkage == Linkage::Kept).then(|| KeptState {
            kept: vec![0; n.div_ceil(64)],
            at_decision: vec![None; n],
            later: vec![None; n],
        })
    }

    fn is_kept(&self, d: u32) -> bool {
        self.kept[d as usize / 64] >> (d % 64) & 1 == 1
    }

    /// Document `j` (representative `r`) with its confirmed earlier representatives: its
    /// match among kept documents, if any.
    ///
    /// Only representatives are ever kept: a copy's representative is kept (then the copy
    /// matches it at 1) or had a kept match (which the copy matches as well). A copy sees what
    /// its representative saw at its decision, plus the kept documents decided since that
    /// confirm it.
    pub(super) fn decide(
        &mut self,
        j: u32,
        r: u32,
        confirmed: &[(u32, f64)],
    ) -> Option<(u32, f64)> {
        if r != j {
            if self.is_kept(r) {
                return Some((r, 1.0));
            }
            let (mut best, later) = (self.at_decision[r as usize], self.later[r as usize]);
            if let Some(l) = later {
                if stronger(l, best) {
                    best = Some(l);
                }
            }
            return best;
        }
        let mut best = None;
        for &(a, sim) in confirmed {
            if self.is_kept(a) && stronger((a, sim), best) {
                best = Some((a, sim));
            }
        }
        self.at_decision[j as usize] = best;
        if best.is_none() {
            self.kept[j as usize / 64] |= 1 << (j % 64);
            for &(a, sim) in confirmed {
                let slot = &mut self.later[a as usize];
                if stronger((j, sim), *slot) {
                    *slot = Some((j, sim));
                }
            }
        }
        best
    }
}
