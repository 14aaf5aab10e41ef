//! Confirming one short text's candidates. A decision checks up to
//! [`MAX_CONFIRMED`](super::MAX_CONFIRMED) stored texts against one text, so the text's side of
//! every check is prepared once ([`Query`]): its characters, its runs of digits and their
//! digest, rapidfuzz's bit pattern of it for Levenshtein (with the threshold as a cutoff, so a
//! distant pair stops early), and, when it is the longer side of a containment, its sorted
//! 3-grams. Each candidate then costs only its own side.
//!
//! Invariant: every answer equals the pairwise definitions' — [`similarity`](super::similarity)
//! at or above the threshold, [`same_numbers`](super::same_numbers) and
//! [`containment`](super::containment) — property-tested against them.

use rapidfuzz::distance::levenshtein::{Args, BatchComparator};

use super::{digit_runs, ContainmentOptions, Measure, ShortSketch};
use crate::detect::alignment::{self, Scratch};
use crate::hash::xxh3;

/// A digest of a text's runs of digits, in order: 0 when it has none; otherwise never 0, and
/// equal for texts with the same runs (texts with different runs share a digest only by a
/// 32-bit collision, which the exact comparison after it settles).
pub(super) fn runs_digest(text: &str) -> u32 {
    let mut joined = Vec::new();
    for run in digit_runs(text) {
        joined.extend_from_slice(run.as_bytes());
        joined.push(0xFF); // not in UTF-8: runs stay apart
    }
    if joined.is_empty() {
        0
    } else {
        xxh3(&joined) as u32 | 1
    }
}

/// A stored text as the checks read it.
pub(super) struct Stored<'a> {
    pub(super) text: &'a str,
    /// Its characters.
    pub(super) chars: u32,
    /// [`runs_digest`] of it.
    pub(super) digits: u32,
}

/// One text prepared to be checked against many stored ones.
pub(super) struct Query<'a> {
    s: &'a ShortSketch,
    chars: Vec<char>,
    runs: Vec<&'a str>,
    digits: u32,
    levenshtein: Option<BatchComparator<char>>,
    /// Sorted 3-grams of the text, made the first time it is the longer side.
    trigrams: Option<Vec<u64>>,
    /// The candidate's characters (reused).
    theirs: Vec<char>,
    scratch: Scratch,
}

impl<'a> Query<'a> {
    pub(super) fn new(s: &'a ShortSketch, measure: Measure) -> Query<'a> {
        let runs: Vec<&str> = digit_runs(&s.text).collect();
        Query {
            s,
            chars: s.text.chars().collect(),
            digits: runs_digest(&s.text),
            runs,
            levenshtein: (measure == Measure::Levenshtein)
                .then(|| BatchComparator::new(s.text.chars())),
            trigrams: None,
            theirs: Vec::new(),
            scratch: Scratch::default(),
        }
    }

    /// [`same_numbers`](super::same_numbers) of the text and `other`.
    pub(super) fn same_numbers(&self, other: &Stored) -> bool {
        if self.digits != other.digits {
            return false;
        }
        self.digits == 0 || digit_runs(other.text).eq(self.runs.iter().copied())
    }

    /// [`similarity`](super::similarity) by `measure` (`n`: the n-gram size of the set
    /// measures) when at least `t`, else `None`.
    pub(super) fn similarity(
        &self,
        measure: Measure,
        other: &Stored,
        n: usize,
        t: f64,
    ) -> Option<f64> {
        match &self.levenshtein {
            // Identical texts (exact copies are common in deduplication) have similarity 1.
            Some(_) if *self.s.text == *other.text => Some(1.0),
            Some(lev) => lev.normalized_similarity_with_args(
                other.text.chars(),
                &Args::default().score_cutoff(t),
            ),
            None => {
                Some(super::similarity(measure, &self.s.text, other.text, n)).filter(|&x| x >= t)
            }
        }
    }

    /// [`containment`](super::containment) of the text and `other` (the shorter inside the
    /// longer; of equal lengths, the text inside `other`).
    pub(super) fn containment(
        &mut self,
        opts: &ContainmentOptions,
        other: &Stored,
        numbers_must_match: bool,
    ) -> Option<f64> {
        let mine_inside = self.s.chars <= other.chars;
        let (ls, ll) = if mine_inside {
            (self.s.chars, other.chars)
        } else {
            (other.chars, self.s.chars)
        };
        let min = if self.s.han {
            opts.han_min_chars
        } else {
            opts.other_min_chars
        };
        if ls < min || (ls as f64) < opts.min_share * ll as f64 {
            return None;
        }
        if numbers_must_match {
            let contained = if mine_inside {
                self.digits == 0 || {
                    let theirs: Vec<&str> = digit_runs(other.text).collect();
                    self.runs.iter().all(|r| theirs.contains(r))
                }
            } else {
                other.digits == 0 || super::numbers_contained(other.text, &self.s.text)
            };
            if !contained {
                return None;
            }
        }
        self.theirs.clear();
        self.theirs.extend(other.text.chars());
        let t = opts.threshold;
        if mine_inside {
            alignment::contained_at_least(&self.chars, &self.theirs, None, t, &mut self.scratch)
        } else {
            let chars = &self.chars;
            let trigrams = self.trigrams.get_or_insert_with(|| {
                let mut v = Vec::new();
                alignment::sorted_trigrams(chars, &mut v);
                v
            });
            alignment::contained_at_least(
                &self.theirs,
                &self.chars,
                Some(trigrams),
                t,
                &mut self.scratch,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{containment, same_numbers, similarity};
    use super::*;
    use proptest::prelude::*;

    fn sketch(text: &str, han: bool) -> ShortSketch {
        ShortSketch {
            text: text.into(),
            chars: text.chars().count() as u32,
            han,
            keys: Vec::new(),
        }
    }

    fn stored(text: &str) -> Stored<'_> {
        Stored {
            text,
            chars: text.chars().count() as u32,
            digits: runs_digest(text),
        }
    }

    /// Texts over a small alphabet with digits (ASCII and Chinese numerals), so that pairs
    /// are often near, contained, or differ only in their numbers.
    fn text() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            proptest::sample::select(vec!["好", "书", "读", "a", "b", " ", "1", "2", "三", "十"]),
            0..60,
        )
        .prop_map(|v| v.concat())
    }

    proptest! {
        /// One prepared text checked against many answers what each pairwise definition
        /// answers, for every measure, threshold and containment setting.
        #[test]
        fn prepared_checks_equal_the_pairwise_definitions(
            q in text(),
            others in proptest::collection::vec((text(), 0usize..3), 1..6),
            han in any::<bool>(),
            t in 0.5f64..1.0,
            measure in proptest::sample::select(vec![Measure::Levenshtein, Measure::Jaccard, Measure::Cosine]),
        ) {
            let s = sketch(&q, han);
            let mut query = Query::new(&s, measure);
            let opts = ContainmentOptions { han_min_chars: 3, other_min_chars: 3, ..Default::default() };
            for (o, how) in &others {
                // Often make the other text hold the query, or be part of it.
                let o = match how {
                    0 => format!("{o}{q}"),
                    1 => q.chars().take(o.chars().count().min(40)).collect(),
                    _ => o.clone(),
                };
                let st = stored(&o);
                prop_assert_eq!(query.same_numbers(&st), same_numbers(&q, &o));
                let want = Some(similarity(measure, &q, &o, 2)).filter(|&x| x >= t);
                prop_assert_eq!(query.similarity(measure, &st, 2, t), want);
                for numbers in [false, true] {
                    let want = containment(&opts, han, (&q, s.chars), (&o, st.chars), numbers);
                    prop_assert_eq!(query.containment(&opts, &st, numbers), want);
                }
            }
        }
    }

    #[test]
    fn runs_digest_is_zero_only_without_digits() {
        assert_eq!(runs_digest("没有数字"), 0);
        assert_ne!(runs_digest("第3章"), 0);
        assert_ne!(runs_digest("12 3"), runs_digest("1 23"));
        assert_eq!(runs_digest("a12b3"), runs_digest("x12 y3"));
    }
}
