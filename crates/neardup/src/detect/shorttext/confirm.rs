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

/// Which of 256 buckets a text's characters fall in (a character's bucket: the top byte of
/// its code point times a golden-ratio constant). Kept for every stored text (32 B), so that
/// most candidates are refused before their text is read: a character of one text whose
/// bucket the other lacks has no partner there, and every such character costs an edit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct CharSet([u64; 4]);

fn bucket(c: char) -> u8 {
    ((c as u32).wrapping_mul(0x9E37_79B1) >> 24) as u8
}

impl CharSet {
    pub(super) fn of(text: &str) -> CharSet {
        let mut set = CharSet::default();
        for c in text.chars() {
            let b = bucket(c);
            set.0[usize::from(b >> 6)] |= 1 << (b & 63);
        }
        set
    }

    fn has(&self, b: u8) -> bool {
        self.0[usize::from(b >> 6)] >> (b & 63) & 1 == 1
    }
}

/// A stored text as the checks read it.
pub(super) struct Stored<'a> {
    /// The text's bytes, read only when a check reads the text (the bounds before it mostly
    /// spare that cache miss, or page fault where the texts are spilled to a file).
    pub(super) bytes: &'a [u8],
    /// The text, checked to be UTF-8 the first time it is read.
    pub(super) text: std::cell::OnceCell<&'a str>,
    /// Its characters.
    pub(super) chars: u32,
    /// [`runs_digest`] of it.
    pub(super) digits: u32,
    /// [`CharSet::of`] it.
    pub(super) set: &'a CharSet,
    /// Whether it is Han-heavy.
    pub(super) han: bool,
    /// [`Query::absent_from`] it, once asked.
    pub(super) absent: std::cell::Cell<Option<usize>>,
}

impl<'a> Stored<'a> {
    /// The text. Its bytes are those of a `str` the detector stored, so they are UTF-8; were
    /// they not, the text reads as empty rather than panicking.
    fn text(&self) -> &'a str {
        self.text
            .get_or_init(|| std::str::from_utf8(self.bytes).unwrap_or_default())
    }
}

/// One text prepared to be checked against many stored ones.
pub(super) struct Query<'a> {
    s: &'a ShortSketch,
    chars: Vec<char>,
    /// The bucket of each of its characters.
    buckets: Vec<u8>,
    /// [`CharSet::of`] it.
    set: CharSet,
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
            buckets: s.text.chars().map(bucket).collect(),
            set: CharSet::of(&s.text),
            digits: runs_digest(&s.text),
            runs,
            levenshtein: (measure == Measure::Levenshtein)
                .then(|| BatchComparator::new(s.text.chars())),
            trigrams: None,
            theirs: Vec::new(),
            scratch: Scratch::default(),
        }
    }

    /// How many of the text's characters have no partner in `other` by its [`CharSet`]: at
    /// most as many as have none by the characters themselves, so a lower bound on the edits
    /// between the two and on those that put the text inside `other`.
    pub(super) fn absent_from(&self, other: &Stored) -> usize {
        if let Some(n) = other.absent.get() {
            return n;
        }
        let n = self.buckets.iter().filter(|&&b| !other.set.has(b)).count();
        other.absent.set(Some(n));
        n
    }

    /// [`same_numbers`](super::same_numbers) of the text and `other`.
    pub(super) fn same_numbers(&self, other: &Stored) -> bool {
        if self.digits != other.digits {
            return false;
        }
        self.digits == 0 || digit_runs(other.text()).eq(self.runs.iter().copied())
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
        if self.levenshtein.is_some() {
            // `1 − d / max(len)` with `d` at least the characters without a partner: the same
            // float operations, monotone in `d`, so the true score is at most this one.
            let most = self.s.chars.max(other.chars) as f64;
            if 1.0 - self.absent_from(other) as f64 / most < t {
                return None;
            }
        }
        match &self.levenshtein {
            // Identical texts (exact copies are common in deduplication) have similarity 1.
            Some(_) if *self.s.text == *other.text() => Some(1.0),
            Some(lev) => lev.normalized_similarity_with_args(
                other.text().chars(),
                &Args::default().score_cutoff(t),
            ),
            None => {
                Some(super::similarity(measure, &self.s.text, other.text(), n)).filter(|&x| x >= t)
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
        // The least length is the shorter text's, by its script.
        let short_han = if mine_inside { self.s.han } else { other.han };
        let min = if short_han {
            opts.han_min_chars
        } else {
            opts.other_min_chars
        };
        if ls < min || (ls as f64) < opts.min_share * ll as f64 {
            return None;
        }
        // The alignment's first bound (characters without a partner), by buckets; with an
        // edge, the largest trim's (see `contained_with_edge_at_least`).
        let edge = |chars: usize| opts.edge_chars(chars);
        let budget = |chars: usize| {
            let whole = alignment::budget(chars, opts.threshold);
            whole.max(edge(chars).min(chars.saturating_sub(1)))
        };
        if mine_inside && self.absent_from(other) > budget(self.chars.len()) {
            return None;
        }
        if numbers_must_match {
            let contained = if mine_inside {
                self.digits == 0 || {
                    let theirs: Vec<&str> = digit_runs(other.text()).collect();
                    self.runs.iter().all(|r| theirs.contains(r))
                }
            } else {
                other.digits == 0 || super::numbers_contained(other.text(), &self.s.text)
            };
            if !contained {
                return None;
            }
        }
        self.theirs.clear();
        self.theirs.extend(other.text().chars());
        if !mine_inside {
            let absent = self.theirs.iter().filter(|&&c| !self.set.has(bucket(c)));
            if absent.count() > budget(self.theirs.len()) {
                return None;
            }
        }
        let t = opts.threshold;
        let found = if mine_inside {
            let e = edge(self.chars.len());
            let s = &mut self.scratch;
            alignment::contained_with_edge_at_least(&self.chars, &self.theirs, None, e, t, s)
        } else {
            let chars = &self.chars;
            let trigrams = self.trigrams.get_or_insert_with(|| {
                let mut v = Vec::new();
                alignment::sorted_trigrams(chars, &mut v);
                v
            });
            alignment::contained_with_edge_at_least(
                &self.theirs,
                &self.chars,
                Some(trigrams),
                edge(self.theirs.len()),
                t,
                &mut self.scratch,
            )
        };
        found.map(|(score, _)| score)
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
            other_keys: None,
        }
    }

    fn stored<'a>(text: &'a str, set: &'a CharSet, han: bool) -> Stored<'a> {
        Stored {
            bytes: text.as_bytes(),
            text: Default::default(),
            chars: text.chars().count() as u32,
            digits: runs_digest(text),
            set,
            han,
            absent: Default::default(),
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
        /// answers, for every measure, threshold and containment setting, of either script
        /// (a text near the script cut meets texts of the other n-gram size).
        #[test]
        fn prepared_checks_equal_the_pairwise_definitions(
            q in text(),
            others in proptest::collection::vec((text(), 0usize..4, any::<bool>()), 1..6),
            han in any::<bool>(),
            t in 0.5f64..1.0,
            measure in proptest::sample::select(vec![Measure::Levenshtein, Measure::Jaccard, Measure::Cosine]),
            edge in proptest::sample::select(vec![0.0, 0.1, 0.25]),
        ) {
            let s = sketch(&q, han);
            let mut query = Query::new(&s, measure);
            let opts = ContainmentOptions { han_min_chars: 3, other_min_chars: 3, edge, ..Default::default() };
            for (o, how, other_han) in &others {
                // Often make the other text hold the query, or be part of it.
                let o = match how {
                    0 => format!("{o}{q}"),
                    // the query's middle inside the other: its edges an attribution
                    3 => format!("{o}{}", q.chars().skip(2).take(40).collect::<String>()),
                    1 => q.chars().take(o.chars().count().min(40)).collect(),
                    _ => o.clone(),
                };
                let set = CharSet::of(&o);
                let st = stored(&o, &set, *other_han);
                prop_assert_eq!(query.same_numbers(&st), same_numbers(&q, &o));
                let want = Some(similarity(measure, &q, &o, 2)).filter(|&x| x >= t);
                prop_assert_eq!(query.similarity(measure, &st, 2, t), want);
                for numbers in [false, true] {
                    // The least length is the shorter text's (the query's, of equal lengths).
                    let short_han = if s.chars <= st.chars { han } else { *other_han };
                    let want = containment(&opts, short_han, (&q, s.chars), (&o, st.chars), numbers);
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
