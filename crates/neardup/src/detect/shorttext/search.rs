//! The short path's search: a text's candidates from the band tables (at most
//! [`MAX_CONFIRMED`] a key space, ranked by the bands they share) and their confirmation
//! against the stored texts, with the text's side of the checks prepared once.

use super::{
    confirm, letters, Measure, ShortSketch, ShortTextDetector, MAX_CONFIRMED, PREFETCH_AHEAD,
};
use crate::detect::Verdict;
use crate::hash::FastBuild;

/// A stored text that shares a band with a searched one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ShortCandidate {
    /// How many bands it shares.
    pub(crate) bands: u32,
    /// Its slot in the detector.
    pub(crate) slot: u32,
    /// Its document number.
    pub(crate) doc: u32,
}

/// The candidates of one text in one [`ShortTextDetector`], at most [`MAX_CONFIRMED`] in each
/// key space it is searched in, ascending by slot: a search across several detectors (the
/// engine's time segments) keeps the [`MAX_CONFIRMED`] of each space that share the most
/// bands, as one detector holding them all would.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ShortCandidates {
    /// Those of the text's own n-gram size.
    pub(crate) own: Vec<ShortCandidate>,
    /// Those of the other n-gram size (texts near the script cut).
    pub(crate) other: Vec<ShortCandidate>,
}

impl ShortCandidates {
    /// The slots to confirm: its own space's, then the other space's not among them.
    pub(crate) fn slots(&self) -> Vec<u32> {
        let mut slots: Vec<u32> = self.own.iter().map(|c| c.slot).collect();
        if !self.other.is_empty() {
            let mine: std::collections::HashSet<u32, FastBuild> = slots.iter().copied().collect();
            slots.extend(
                self.other
                    .iter()
                    .map(|c| c.slot)
                    .filter(|s| !mine.contains(s)),
            );
        }
        slots
    }
}

/// A searched text's side of the short path's checks, prepared once for every detector it is
/// searched in ([`ShortTextDetector::query`]).
pub(crate) struct ShortQuery<'a> {
    checks: confirm::Query<'a>,
    /// The text's letters/digits.
    letters: u32,
}

impl ShortTextDetector {
    /// The candidates of `s` ([`ShortCandidates`]).
    pub(crate) fn candidates(&self, s: &ShortSketch) -> ShortCandidates {
        let ranked = |keys: &[u64]| -> Vec<ShortCandidate> {
            self.lsh
                .candidates_ranked_at_most(keys, MAX_CONFIRMED)
                .into_iter()
                .map(|(bands, slot)| ShortCandidate {
                    bands,
                    slot,
                    doc: self.docs[slot as usize],
                })
                .collect()
        };
        ShortCandidates {
            own: ranked(&s.keys),
            other: s.other_keys.as_deref().map(ranked).unwrap_or_default(),
        }
    }

    /// `s` prepared to be confirmed against stored texts ([`ShortTextDetector::confirm`]) of
    /// this detector or of any made with the same options.
    pub(crate) fn query<'a>(&self, s: &'a ShortSketch) -> ShortQuery<'a> {
        ShortQuery {
            checks: confirm::Query::new(s, self.opts.measure),
            letters: letters(&s.text),
        }
    }

    /// Confirms the stored texts at slots `candidates` against `s` (prepared as `query`),
    /// adding a verdict to `out` for each near-duplicate.
    pub(crate) fn confirm(
        &self,
        s: &ShortSketch,
        query: &mut ShortQuery,
        candidates: &[u32],
        out: &mut Vec<Verdict>,
    ) {
        let my_letters = query.letters;
        let query = &mut query.checks;
        let t = self.opts.threshold;
        let n = if s.han {
            self.opts.han_ngram
        } else {
            self.opts.other_ngram
        };
        // Texts with more letters/digits than a short text can match by the measure are here
        // only for containment, and only of a short text (a short post inside a longer repost):
        // the measure is not asked (two mid-length pages of one template are not
        // near-duplicates by edits), nor two such texts compared.
        let measure_reach = self.measure_reach();
        // Each candidate's lengths, character set and text bounds are at a random place: asked for a few
        // candidates ahead, so that their cache misses overlap.
        let prefetch = |k: usize| {
            if let Some(&ahead) = candidates.get(k) {
                neardup_index::prefetch(self.meta.as_ptr().wrapping_add(ahead as usize));
                neardup_index::prefetch(self.sets.as_ptr().wrapping_add(ahead as usize));
                neardup_index::prefetch(self.ends.as_ptr().wrapping_add(ahead as usize));
            }
        };
        // And the text's first bytes half as far ahead (its bounds are in cache by then).
        let prefetch_text = |k: usize| {
            if let Some(&ahead) = candidates.get(k) {
                neardup_index::prefetch(self.text_bytes(ahead as usize).as_ptr());
            }
        };
        (0..PREFETCH_AHEAD).for_each(prefetch);
        (0..PREFETCH_AHEAD / 2).for_each(prefetch_text);
        for (k, &slot) in candidates.iter().enumerate() {
            prefetch(k + PREFETCH_AHEAD);
            prefetch_text(k + PREFETCH_AHEAD / 2);
            let i = slot as usize;
            let meta = self.meta[i];
            let beyond_measure = my_letters.max(meta.letters) > measure_reach;
            if beyond_measure && my_letters.min(meta.letters) as usize > self.opts.max_chars {
                // Containment beyond the measure's reach is a short text inside a longer one.
                continue;
            }
            let other = confirm::Stored {
                bytes: self.text_bytes(i),
                text: Default::default(),
                chars: meta.chars,
                digits: meta.digits,
                set: &self.sets[i],
                han: meta.han,
                absent: Default::default(),
                decoded: Default::default(),
            };
            // dist ≥ |la − lb|, so the Levenshtein similarity is at most min/max.
            let (lo, hi) = (
                meta.chars.min(s.chars) as f64,
                meta.chars.max(s.chars) as f64,
            );
            let measured = if beyond_measure
                || (self.opts.measure == Measure::Levenshtein && lo / hi < t)
                || (self.opts.numbers_must_match && !query.same_numbers(&other))
            {
                None
            } else {
                query.similarity(self.opts.measure, &other, n, t)
            };
            let verdict = match measured {
                Some(sim) => Some((sim, crate::detect::Stage::Short)),
                None => self
                    .opts
                    .containment
                    .as_ref()
                    .and_then(|c| query.containment(c, &other, self.opts.numbers_must_match))
                    .map(|c| (c, crate::detect::Stage::Containment)),
            };
            if let Some((sim, stage)) = verdict {
                out.push(Verdict {
                    of: self.docs[i],
                    distance: None,
                    similarity: Some(sim),
                    stage,
                });
            }
        }
    }
}
