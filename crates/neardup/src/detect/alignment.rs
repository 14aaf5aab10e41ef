//! Local containment of one short text in another: the edit distance between a text and the
//! best-matching substring of a longer one (semi-global alignment: the longer text's prefix
//! and suffix cost nothing), as a score in [0, 1].
//!
//! `contained_similarity(short, long) = 1 − d / |short|`, with `d` the fewest character
//! insertions, deletions and substitutions that turn `short` into some substring of `long`
//! (characters, not bytes). 1 when `short` occurs in `long` verbatim; at least `1 − e / |short|`
//! when `e` edits make it occur.
//!
//! ```
//! use neardup::detect::alignment::contained_similarity;
//! assert_eq!(contained_similarity("转发微博", "哈哈//@小明: 转发微博好文"), 1.0);
//! assert_eq!(contained_similarity("abcd", "xxabxdyy"), 0.75); // one substitution
//! assert_eq!(contained_similarity("", "anything"), 0.0);
//! ```

/// `1 − d / |short|` for the semi-global edit distance `d` of `short` inside `long` (see the
/// module docs); 0 for an empty `short`. Cost O(|short| · |long|) time, O(|long|) memory.
pub fn contained_similarity(short: &str, long: &str) -> f64 {
    contained_similarity_at_least(short, long, 0.0).unwrap_or(0.0)
}

/// [`contained_similarity`] when it is at least `min`, `None` otherwise — cheaper on pairs
/// that fall short: the alignment stops at the first row whose every cell already costs more
/// than `min` allows (a row's minimum never decreases down the rows).
///
/// ```
/// use neardup::detect::alignment::contained_similarity_at_least;
/// assert_eq!(contained_similarity_at_least("abcd", "xxabxdyy", 0.7), Some(0.75));
/// assert_eq!(contained_similarity_at_least("abcd", "xxabxdyy", 0.8), None);
/// ```
pub fn contained_similarity_at_least(short: &str, long: &str, min: f64) -> Option<f64> {
    let s: Vec<char> = short.chars().collect();
    let l: Vec<char> = long.chars().collect();
    if s.is_empty() {
        return (min <= 0.0).then_some(0.0);
    }
    // The most edits a score of `min` allows.
    let budget = ((1.0 - min) * s.len() as f64 + 1e-9).floor().max(0.0) as usize;
    if missing_at_least(&s, &l, budget + 1) || too_few_shared_trigrams(&s, &l, budget) {
        return None;
    }
    // row[j]: cost of aligning s[..i] to a substring of l ending at j (free start).
    let mut row = vec![0usize; l.len() + 1];
    let mut next = vec![0usize; l.len() + 1];
    for (i, &c) in s.iter().enumerate() {
        next[0] = i + 1;
        let mut low = next[0];
        for j in 1..=l.len() {
            let sub = row[j - 1] + usize::from(l[j - 1] != c);
            next[j] = sub.min(row[j] + 1).min(next[j - 1] + 1);
            low = low.min(next[j]);
        }
        std::mem::swap(&mut row, &mut next);
        if low > budget {
            return None;
        }
    }
    let d = row.iter().copied().min().unwrap_or(s.len());
    let score = 1.0 - d as f64 / s.len() as f64;
    (score >= min).then_some(score)
}

/// The q-gram lemma for q = 3: an edit touches at most three of `s`'s character 3-grams, so
/// if `s` lies inside `l` within `budget` edits, at least `|s| − 2 − 3·budget` of its 3-grams
/// (by position) occur in `l`. Whether fewer do — then the alignment cannot succeed. Linear
/// up to a sort of `l`'s 3-grams.
fn too_few_shared_trigrams(s: &[char], l: &[char], budget: usize) -> bool {
    let need = (s.len() as i64 - 2) - 3 * budget as i64;
    if need <= 0 || l.len() < 3 {
        return false;
    }
    let gram = |w: &[char]| (w[0] as u64) << 42 | (w[1] as u64) << 21 | w[2] as u64;
    let mut theirs: Vec<u64> = l.windows(3).map(gram).collect();
    theirs.sort_unstable();
    let shared = s
        .windows(3)
        .filter(|w| theirs.binary_search(&gram(w)).is_ok())
        .count();
    (shared as i64) < need
}

/// Whether at least `floor` characters of `s` can have no partner in `l`: every character of
/// `s` beyond the number of times it occurs in `l` costs an edit in any alignment (each
/// character of `l` stands for at most one of `s`), so their count bounds the distance from
/// below. Linear, where the alignment is quadratic: most candidate pairs that are not
/// contained are refused here.
fn missing_at_least(s: &[char], l: &[char], floor: usize) -> bool {
    if floor > s.len() {
        return false;
    }
    // The distinct characters of `s` with their counts, sorted for binary search.
    let mut counts: Vec<(char, u32)> = Vec::with_capacity(s.len());
    let mut sorted = s.to_vec();
    sorted.sort_unstable();
    for c in sorted {
        match counts.last_mut() {
            Some((d, n)) if *d == c => *n += 1,
            _ => counts.push((c, 1)),
        }
    }
    // Characters of `s` not yet given a partner.
    let mut missing = s.len();
    for c in l {
        if let Ok(i) = counts.binary_search_by_key(c, |&(d, _)| d) {
            if counts[i].1 > 0 {
                counts[i].1 -= 1;
                missing -= 1;
                if missing < floor {
                    return false;
                }
            }
        }
    }
    missing >= floor
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The early-stopping form answers exactly what the full alignment gives, above `min`.
        #[test]
        fn at_least_equals_the_full_alignment(s in "[a-d]{0,15}", l in "[a-d]{0,30}", min in 0.0f64..1.0) {
            let full = contained_similarity(&s, &l);
            let want = (full >= min).then_some(full);
            prop_assert_eq!(contained_similarity_at_least(&s, &l, min), want);
        }

        /// The character-count bound never exceeds the alignment's distance: it refuses only
        /// pairs the alignment refuses.
        #[test]
        fn missing_characters_bound_the_distance(s in "[a-e]{1,20}", l in "[a-f]{0,30}") {
            let sc: Vec<char> = s.chars().collect();
            let lc: Vec<char> = l.chars().collect();
            let d = ((1.0 - contained_similarity(&s, &l)) * sc.len() as f64).round() as usize;
            prop_assert!(!missing_at_least(&sc, &lc, d + 1));
            prop_assert!(missing_at_least(&sc, &lc, 0));
        }

        /// The 3-gram bound refuses only pairs the alignment refuses: never at the alignment's
        /// own distance, whatever the alphabet (a wide one makes the bound bite).
        #[test]
        fn shared_trigrams_bound_the_distance(s in "[a-z]{1,30}", l in "[a-z]{0,60}", cut in 0usize..30) {
            let sc: Vec<char> = s.chars().collect();
            // Often make `s` nearly contained: `l` holds a piece of it.
            let l = if cut < sc.len() { format!("{l}{}", &s[cut..]) } else { l };
            let lc: Vec<char> = l.chars().collect();
            let d = ((1.0 - contained_similarity(&s, &l)) * sc.len() as f64).round() as usize;
            prop_assert!(!too_few_shared_trigrams(&sc, &lc, d));
        }

        /// A text is wholly contained in anything that holds it verbatim.
        #[test]
        fn verbatim_inside_scores_one(a in "[a-c]{0,12}", s in "[a-d]{1,20}", b in "[a-c]{0,12}") {
            prop_assert_eq!(contained_similarity(&s, &format!("{a}{s}{b}")), 1.0);
        }

        /// Never below the plain similarity against the whole longer text
        /// (`1 − levenshtein / |short|`), and within [0, 1].
        #[test]
        fn at_least_the_global_alignment(s in "[a-d]{1,15}", l in "[a-d]{0,30}") {
            let c = contained_similarity(&s, &l);
            prop_assert!((0.0..=1.0).contains(&c));
            let d = rapidfuzz::distance::levenshtein::distance(s.chars(), l.chars());
            prop_assert!(c >= 1.0 - d as f64 / s.chars().count() as f64 - 1e-12);
        }

        /// `e` substitutions in a contained text cost at most `e / |short|`.
        #[test]
        fn edits_cost_at_most_their_share(s in "[a-c]{5,20}", at in 0usize..5, a in "[a-c]{0,10}") {
            let mut t: Vec<char> = s.chars().collect();
            t[at] = 'z';
            let t: String = t.into_iter().collect();
            let c = contained_similarity(&t, &format!("{a}{s}"));
            prop_assert!(c >= 1.0 - 1.0 / s.len() as f64 - 1e-12);
        }
    }
}
