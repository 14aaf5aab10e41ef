//! Confirming one short text's candidates. A decision checks up to
//! [`MAX_CONFIRMED`](super::MAX_CONFIRMED) stored texts against one text, so the text's side of
//! every check is prepared once ([`Query`]): its characters, the buckets of its characters and
//! character pairs, its runs of digits and their digest, rapidfuzz's bit pattern of it for
//! Levenshtein (with the threshold as a cutoff, so a distant pair stops early), and, once a
//! containment reads them, the counts of its characters and 3-grams that the alignment's
//! linear bounds look up. Each candidate then costs only its own side: most are refused by
//! their 32-byte [`GramSet`] before their text is read, and a text that is read is decoded
//! once.
//!
//! Invariant: every answer equals the pairwise definitions' — [`similarity`](super::similarity)
//! at or above the threshold, [`same_numbers`](super::same_numbers) and
//! [`containment`](super::containment) — property-tested against them.

use rapidfuzz::distance::levenshtein::{Args, BatchComparator};

use super::{digit_runs, ContainmentOptions, Measure, ShortSketch};
use crate::detect::alignment::{self, Prepared, Scratch, TextGrams};
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

/// Which of 256 buckets a text's grams fall in: its characters when it is Han-heavy, its
/// character pairs otherwise (an alphabet's letters fill nearly every character bucket, so
/// they would refuse nothing). Kept for every stored text (32 B), so that most candidates are
/// refused before their text is read: a gram of one text whose bucket the other text lacks
/// does not occur there, and each edit removes at most one character, or two pairs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct GramSet([u64; 4]);

/// A character's bucket: its code point times a golden-ratio constant, top byte.
fn bucket(c: char) -> u8 {
    ((c as u32).wrapping_mul(0x9E37_79B1) >> 24) as u8
}

/// A character pair's bucket.
fn pair_bucket(a: char, b: char) -> u8 {
    ((a as u32).wrapping_mul(0x9E37_79B1).rotate_left(13) ^ b as u32)
        .wrapping_mul(0x85EB_CA77)
        .wrapping_shr(24) as u8
}

/// The buckets of `chars`' pairs, in order.
fn pair_buckets(chars: &[char]) -> impl Iterator<Item = u8> + '_ {
    chars.windows(2).map(|w| pair_bucket(w[0], w[1]))
}

impl GramSet {
    /// The set a stored text keeps: of its characters when `han`, else of its pairs.
    pub(super) fn of(text: &str, han: bool) -> GramSet {
        if han {
            GramSet::from_buckets(text.chars().map(bucket))
        } else {
            let pairs = text.chars().zip(text.chars().skip(1));
            GramSet::from_buckets(pairs.map(|(a, b)| pair_bucket(a, b)))
        }
    }

    fn from_buckets(buckets: impl Iterator<Item = u8>) -> GramSet {
        let mut set = GramSet::default();
        for b in buckets {
            set.0[usize::from(b >> 6)] |= 1 << (b & 63);
        }
        set
    }

    fn has(&self, b: u8) -> bool {
        self.0[usize::from(b >> 6)] >> (b & 63) & 1 == 1
    }

    /// How many of this set's buckets `other` lacks: at most as many as this text's grams
    /// (by position) that do not occur in `other`'s text (each such bucket holds one at least).
    fn lacked_by(&self, other: &GramSet) -> usize {
        (0..4)
            .map(|i| (self.0[i] & !other.0[i]).count_ones() as usize)
            .sum()
    }
}

/// Decodes UTF-8 `bytes` into `out` (cleared first), checking them as it goes: `false`, with
/// `out` empty, if they are not UTF-8. One pass where checking and then decoding take two.
fn decode_into(bytes: &[u8], out: &mut Vec<char>) -> bool {
    out.clear();
    out.reserve(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b0 = bytes[i];
        if b0 < 0x80 {
            out.push(char::from(b0));
            i += 1;
            continue;
        }
        // Three bytes (the CJK ideographs and punctuation), checked at once.
        if let [0xE0..=0xEF, b1, b2, ..] = bytes[i..] {
            if b1 & 0xC0 == 0x80 && b2 & 0xC0 == 0x80 {
                let cp =
                    u32::from(b0 & 0x0F) << 12 | u32::from(b1 & 0x3F) << 6 | u32::from(b2 & 0x3F);
                if cp >= 0x800 {
                    if let Some(c) = char::from_u32(cp) {
                        out.push(c);
                        i += 3;
                        continue;
                    }
                }
            }
        }
        let (len, least, first) = match b0 {
            0xC2..=0xDF => (2, 0x80, b0 & 0x1F),
            0xE0..=0xEF => (3, 0x800, b0 & 0x0F),
            0xF0..=0xF4 => (4, 0x1_0000, b0 & 0x07),
            _ => {
                out.clear();
                return false;
            }
        };
        let Some(rest) = bytes.get(i + 1..i + len) else {
            out.clear();
            return false;
        };
        let mut cp = u32::from(first);
        for &b in rest {
            if b & 0xC0 != 0x80 {
                out.clear();
                return false;
            }
            cp = cp << 6 | u32::from(b & 0x3F);
        }
        // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8.
        match char::from_u32(cp).filter(|_| cp >= least) {
            Some(c) => out.push(c),
            None => {
                out.clear();
                return false;
            }
        }
        i += len;
    }
    true
}

/// Puts `other`'s characters in `theirs` (the query's buffer) unless they are there already;
/// bytes that are not UTF-8 read as an empty text, as [`Stored::text`] reads them.
fn decode_theirs(theirs: &mut Vec<char>, other: &Stored) {
    if !other.decoded.get() {
        decode_into(other.bytes, theirs);
        other.decoded.set(true);
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
    /// [`GramSet::of`] it (of its characters when `han`, else of its pairs).
    pub(super) set: &'a GramSet,
    /// Whether it is Han-heavy.
    pub(super) han: bool,
    /// [`Query::absent_from`] it, once asked.
    pub(super) absent: std::cell::Cell<Option<usize>>,
    /// Whether the query's `theirs` holds its characters.
    pub(super) decoded: std::cell::Cell<bool>,
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
    /// The bucket of each of its character pairs and their set, made the first time a
    /// candidate that is not Han-heavy is checked.
    pairs: std::cell::OnceCell<(Vec<u8>, GramSet)>,
    /// The set of its characters' buckets.
    set: GramSet,
    runs: Vec<&'a str>,
    digits: u32,
    levenshtein: Option<BatchComparator<char>>,
    /// The candidate's characters (reused; see [`Stored::decoded`]).
    theirs: Vec<char>,
    /// [`TextGrams::of`] the text, made the first time a containment check reads it.
    grams: Option<TextGrams>,
    scratch: Scratch,
}

impl<'a> Query<'a> {
    pub(super) fn new(s: &'a ShortSketch, measure: Measure) -> Query<'a> {
        let runs: Vec<&str> = digit_runs(&s.text).collect();
        let mut chars = Vec::with_capacity(s.chars as usize);
        chars.extend(s.text.chars());
        let buckets: Vec<u8> = chars.iter().map(|&c| bucket(c)).collect();
        Query {
            s,
            set: GramSet::from_buckets(buckets.iter().copied()),
            chars,
            buckets,
            pairs: std::cell::OnceCell::new(),
            digits: runs_digest(&s.text),
            runs,
            levenshtein: (measure == Measure::Levenshtein)
                .then(|| BatchComparator::new(s.text.chars())),
            theirs: Vec::new(),
            grams: None,
            scratch: Scratch::default(),
        }
    }

    /// Its pairs' buckets and their set.
    fn pairs(&self) -> &(Vec<u8>, GramSet) {
        self.pairs.get_or_init(|| {
            let b: Vec<u8> = pair_buckets(&self.chars).collect();
            let set = GramSet::from_buckets(b.iter().copied());
            (b, set)
        })
    }

    /// Edits at least between the text and `other`, and at least to put the text inside
    /// `other`, by `other`'s [`GramSet`]: the text's characters (or pairs) whose bucket it
    /// lacks have no partner there (an edit removes one character, or two pairs).
    pub(super) fn absent_from(&self, other: &Stored) -> usize {
        if let Some(n) = other.absent.get() {
            return n;
        }
        let n = if other.han {
            self.buckets.iter().filter(|&&b| !other.set.has(b)).count()
        } else {
            let pairs = self.pairs().0.iter().filter(|&&b| !other.set.has(b));
            pairs.count().div_ceil(2)
        };
        other.absent.set(Some(n));
        n
    }

    /// Edits at least between `other` and the text, and at least to put `other` inside the
    /// text: the buckets of `other`'s [`GramSet`] that the text lacks (32 bytes; its text not
    /// read).
    fn lacked(&self, other: &Stored) -> usize {
        if other.han {
            other.set.lacked_by(&self.set)
        } else {
            other.set.lacked_by(&self.pairs().1).div_ceil(2)
        }
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
        &mut self,
        measure: Measure,
        other: &Stored,
        n: usize,
        t: f64,
    ) -> Option<f64> {
        if self.levenshtein.is_some() {
            // `1 − d / max(len)` with `d` at least the characters of either text without a
            // partner (by buckets: the other's lacked buckets first, 32 bytes, then this
            // text's characters): the same float operations, monotone in `d`, so the true
            // score is at most this one.
            let most = self.s.chars.max(other.chars) as f64;
            if 1.0 - self.lacked(other) as f64 / most < t
                || 1.0 - self.absent_from(other) as f64 / most < t
            {
                return None;
            }
        }
        let Some(lev) = &self.levenshtein else {
            return Some(super::similarity(measure, &self.s.text, other.text(), n))
                .filter(|&x| x >= t);
        };
        // Identical texts (exact copies are common in deduplication) have similarity 1.
        if self.s.text.as_bytes() == other.bytes {
            return Some(1.0);
        }
        decode_theirs(&mut self.theirs, other);
        lev.normalized_similarity_with_args(
            self.theirs.iter().copied(),
            &Args::default().score_cutoff(t),
        )
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
        // The other way, its lacked buckets first (32 bytes, its text not read).
        if !mine_inside && self.lacked(other) > budget(other.chars as usize) {
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
        decode_theirs(&mut self.theirs, other);
        if !mine_inside {
            let absent = self.theirs.iter().filter(|&&c| !self.set.has(bucket(c)));
            if absent.count() > budget(self.theirs.len()) {
                return None;
            }
        }
        let t = opts.threshold;
        let chars = &self.chars;
        let grams = Some(&*self.grams.get_or_insert_with(|| TextGrams::of(chars)));
        let found = if mine_inside {
            let e = edge(self.chars.len());
            let prep = Prepared { s: grams, l: None };
            let s = &mut self.scratch;
            alignment::contained_with_edge_at_least(&self.chars, &self.theirs, prep, e, t, s)
        } else {
            alignment::contained_with_edge_at_least(
                &self.theirs,
                &self.chars,
                Prepared { s: None, l: grams },
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

    fn stored<'a>(text: &'a str, set: &'a GramSet, han: bool) -> Stored<'a> {
        Stored {
            bytes: text.as_bytes(),
            text: Default::default(),
            chars: text.chars().count() as u32,
            digits: runs_digest(text),
            set,
            han,
            absent: Default::default(),
            decoded: Default::default(),
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
                let set = GramSet::of(&o, *other_han);
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

    proptest! {
        /// Decoding while checking gives what checking and then decoding gives, on any bytes
        /// (mostly UTF-8 with a byte changed, cut or added: overlong forms, surrogates, stray
        /// continuation bytes, truncated sequences).
        #[test]
        fn decoding_checks_as_the_standard_library_does(
            text in "\\PC{0,40}",
            at in any::<prop::sample::Index>(),
            byte in any::<u8>(),
            how in 0u8..4,
        ) {
            let mut b = text.into_bytes();
            match how {
                0 => {}
                1 if !b.is_empty() => { let i = at.index(b.len()); b[i] = byte; }
                2 if !b.is_empty() => { let i = at.index(b.len()); b.truncate(i); }
                _ => { let i = at.index(b.len() + 1); b.insert(i, byte); }
            }
            let want: Option<Vec<char>> = std::str::from_utf8(&b).ok().map(|s| s.chars().collect());
            let mut out = vec!['x'];
            let ok = decode_into(&b, &mut out);
            prop_assert_eq!(ok, want.is_some());
            prop_assert_eq!(out, want.unwrap_or_default());
        }
    }

    #[test]
    fn decoding_refuses_what_is_not_utf8() {
        for bad in [
            &b"\xC0\x80"[..],    // overlong NUL
            b"\xE0\x80\x80",     // overlong
            b"\xED\xA0\x80",     // a surrogate
            b"\xF4\x90\x80\x80", // past U+10FFFF
            b"\x80",             // a stray continuation byte
            b"\xE4\xB8",         // cut short
        ] {
            assert!(!decode_into(bad, &mut Vec::new()), "{bad:?}");
        }
        let mut out = Vec::new();
        assert!(decode_into("a中😀".as_bytes(), &mut out));
        assert_eq!(out, ['a', '中', '😀']);
    }

    #[test]
    fn runs_digest_is_zero_only_without_digits() {
        assert_eq!(runs_digest("没有数字"), 0);
        assert_ne!(runs_digest("第3章"), 0);
        assert_ne!(runs_digest("12 3"), runs_digest("1 23"));
        assert_eq!(runs_digest("a12b3"), runs_digest("x12 y3"));
    }
}
