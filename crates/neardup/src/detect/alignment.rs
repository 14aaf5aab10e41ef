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
/// module docs); 0 for an empty `short`. Cost O(|long| · ⌈|short| / 64⌉) time, O(|short| +
/// |long|) memory.
pub fn contained_similarity(short: &str, long: &str) -> f64 {
    contained_similarity_at_least(short, long, 0.0).unwrap_or(0.0)
}

/// [`contained_similarity`] when it is at least `min`, `None` otherwise — cheaper on pairs
/// that fall short: two linear bounds (characters without a partner in `long`, and 3-grams
/// not in it) refuse most of them before any alignment.
///
/// ```
/// use neardup::detect::alignment::contained_similarity_at_least;
/// assert_eq!(contained_similarity_at_least("abcd", "xxabxdyy", 0.7), Some(0.75));
/// assert_eq!(contained_similarity_at_least("abcd", "xxabxdyy", 0.8), None);
/// ```
pub fn contained_similarity_at_least(short: &str, long: &str, min: f64) -> Option<f64> {
    let s: Vec<char> = short.chars().collect();
    let l: Vec<char> = long.chars().collect();
    contained_at_least(&s, &l, Prepared::default(), min, &mut Scratch::default())
}

/// Buffers reused by [`contained_at_least`] from one pair to the next (a decision checks up
/// to hundreds of candidates against one text).
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    counts: Counts<u32>,
    work: Vec<u32>,
    seen: Vec<u64>,
    trigrams: Vec<u64>,
    index: std::collections::HashMap<char, usize, crate::hash::FastBuild>,
    pattern: Vec<char>,
    fail: Vec<usize>,
    peq: Vec<u64>,
    pv: Vec<u64>,
    mv: Vec<u64>,
}

/// The 3-grams of `l`, sorted: what the q-gram bound looks `s`'s 3-grams up in when neither
/// side is [`Prepared`].
fn sorted_trigrams(l: &[char], out: &mut Vec<u64>) {
    out.clear();
    out.extend(l.windows(3).map(trigram));
    out.sort_unstable();
}

fn trigram(w: &[char]) -> u64 {
    (w[0] as u64) << 42 | (w[1] as u64) << 21 | w[2] as u64
}

/// What is known beforehand of a side of a pair when one text is checked against many: the
/// answers are the same with or without it.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Prepared<'a> {
    /// [`TextGrams::of`] `s`.
    pub(crate) s: Option<&'a TextGrams>,
    /// [`TextGrams::of`] `l`.
    pub(crate) l: Option<&'a TextGrams>,
}

/// What the linear bounds read of a text that is a side of many pairs, made once: its
/// characters' counts, and its 3-grams' once a pair gets as far as the 3-gram bound.
#[derive(Debug, Clone, Default)]
pub(crate) struct TextGrams {
    chars: Counts<u32>,
    trigrams: std::cell::OnceCell<Counts<u64>>,
}

impl TextGrams {
    pub(crate) fn of(text: &[char]) -> TextGrams {
        let mut g = TextGrams::default();
        g.chars.reset(text.iter().map(|&c| c as u32));
        g
    }

    /// The counts of `text`'s 3-grams (`text` is the text these are the grams of).
    fn trigrams(&self, text: &[char]) -> &Counts<u64> {
        self.trigrams.get_or_init(|| {
            let mut t = Counts::default();
            t.reset(text.windows(3).map(trigram));
            t
        })
    }
}

/// A key of a [`Counts`] table: a character's code point, or a [`trigram`].
trait Key: Copy + Eq {
    /// No key (an empty slot): no code point is `u32::MAX`, and a 3-gram packs three 21-bit
    /// code points, so its top bit is clear.
    const NONE: Self;
    /// The most bits of a table's slot numbers (every code point fits twice over in 2^22).
    const MAX_BITS: u32;
    /// The key's slot among 2^`bits`.
    fn slot(self, bits: u32) -> usize;
}

impl Key for u32 {
    const NONE: u32 = u32::MAX;
    const MAX_BITS: u32 = 22;
    #[inline]
    fn slot(self, bits: u32) -> usize {
        (self.wrapping_mul(0x9E37_79B1) >> (32 - bits)) as usize
    }
}

impl Key for u64 {
    const NONE: u64 = u64::MAX;
    const MAX_BITS: u32 = 40;
    #[inline]
    fn slot(self, bits: u32) -> usize {
        (self.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - bits)) as usize
    }
}

/// Keys with how often each occurs: an open-addressed table (linear probing, at most half
/// full) from a key to its place in `counts`. Made once when a text is a side of many pairs;
/// each pair then copies only the counts.
#[derive(Debug, Clone, Default)]
struct Counts<K> {
    /// Per slot: a key (`K::NONE`: none) and its place in `counts`.
    slots: Vec<(K, u32)>,
    bits: u32,
    /// How often each distinct key occurs.
    counts: Vec<u32>,
}

impl<K: Key> Counts<K> {
    /// Makes this the counts of `keys`, reusing its buffers.
    fn reset(&mut self, keys: impl ExactSizeIterator<Item = K>) {
        self.bits = (2 * keys.len())
            .next_power_of_two()
            .trailing_zeros()
            .clamp(4, K::MAX_BITS);
        self.slots.clear();
        self.slots.resize(1 << self.bits, (K::NONE, 0));
        self.counts.clear();
        self.counts.reserve(keys.len());
        let mask = (1usize << self.bits) - 1;
        for key in keys {
            let mut i = key.slot(self.bits);
            loop {
                let (d, k) = self.slots[i];
                if d == key {
                    self.counts[k as usize] += 1;
                    break;
                }
                if d == K::NONE {
                    self.slots[i] = (key, self.counts.len() as u32);
                    self.counts.push(1);
                    break;
                }
                i = (i + 1) & mask;
            }
        }
    }

    /// `key`'s place in `counts`, if the text has it.
    #[inline]
    fn find(&self, key: K) -> Option<usize> {
        let mask = self.slots.len() - 1;
        let mut i = key.slot(self.bits);
        loop {
            let (d, k) = self.slots[i];
            if d == key {
                return Some(k as usize);
            }
            if d == K::NONE {
                return None;
            }
            i = (i + 1) & mask;
        }
    }
}

impl Counts<u32> {
    /// How many of this text's characters have no partner in `l` (see [`missing_at_least`]),
    /// or, once fewer than `floor` are left without one, some number below `floor` (the count
    /// stops there). `work` holds the counts left.
    fn missing_in(&self, l: &[char], floor: usize, work: &mut Vec<u32>) -> usize {
        work.clear();
        work.extend_from_slice(&self.counts);
        let mut missing: usize = self.counts.iter().map(|&n| n as usize).sum();
        if missing < floor {
            return missing;
        }
        for &c in l {
            if let Some(k) = self.find(c as u32) {
                if work[k] > 0 {
                    work[k] -= 1;
                    missing -= 1;
                    if missing < floor {
                        return missing;
                    }
                }
            }
        }
        missing
    }

    /// How many characters of `s` have no partner in this text (exactly).
    fn missing_of(&self, s: &[char], work: &mut Vec<u32>) -> usize {
        work.clear();
        work.extend_from_slice(&self.counts);
        let mut missing = 0;
        for &c in s {
            match self.find(c as u32) {
                Some(k) if work[k] > 0 => work[k] -= 1,
                _ => missing += 1,
            }
        }
        missing
    }
}

/// [`contained_similarity_at_least`] of `s` inside `l` given as characters, with what is
/// [`Prepared`] of them. The same answer, without allocating per pair.
pub(crate) fn contained_at_least(
    s: &[char],
    l: &[char],
    prep: Prepared,
    min: f64,
    scratch: &mut Scratch,
) -> Option<f64> {
    if s.is_empty() {
        return (min <= 0.0).then_some(0.0);
    }
    let budget = budget(s.len(), min);
    if missing_down_to(s, l, budget + 1, prep, scratch) > budget {
        return None;
    }
    aligned_at_least(s, l, prep, min, scratch)
}

/// The most edits a score of `min` allows a text of `n` characters.
pub(crate) fn budget(n: usize, min: f64) -> usize {
    ((1.0 - min) * n as f64 + 1e-9).floor().max(0.0) as usize
}

/// [`contained_at_least`] after its bound on characters without a partner.
fn aligned_at_least(
    s: &[char],
    l: &[char],
    prep: Prepared,
    min: f64,
    scratch: &mut Scratch,
) -> Option<f64> {
    let budget = budget(s.len(), min);
    if too_few_shared_trigrams(s, l, prep, budget, scratch) {
        return None;
    }
    let d = semi_global_distance(s, l, scratch);
    let score = 1.0 - d as f64 / s.len() as f64;
    (score >= min).then_some(score)
}

/// [`contained_at_least`] with its score and 0; or else, when `s` without its first or last
/// `k ≤ edge` characters (an attribution at one edge of a quote) occurs verbatim in `l`, the
/// share of `s` that does, `1 − k / |s|`, and `k` (the least such `k`). The rest must occur
/// verbatim: a slot that differs inside a template's sentence leaves edits in what remains.
pub(crate) fn contained_with_edge_at_least(
    s: &[char],
    l: &[char],
    prep: Prepared,
    edge: usize,
    min: f64,
    scratch: &mut Scratch,
) -> Option<(f64, usize)> {
    let edge = edge.min(s.len().saturating_sub(1));
    if s.is_empty() || edge == 0 {
        return contained_at_least(s, l, prep, min, scratch).map(|x| (x, 0));
    }
    // One count of the characters without a partner bounds both: the whole alignment allows
    // `budget` of them, a trim only the characters it leaves out (what remains occurs
    // verbatim).
    let whole = budget(s.len(), min);
    let missing = missing_down_to(s, l, whole.min(edge) + 1, prep, scratch);
    if missing <= whole {
        if let Some(score) = aligned_at_least(s, l, prep, min, scratch) {
            return Some((score, 0));
        }
    }
    if missing > edge {
        return None;
    }
    // Every trim keeps `s[edge..n - edge]`: a few characters of it must occur in `l` (a
    // quick scan before the matchers).
    let n = s.len();
    if n > 2 * edge {
        let middle = &s[edge..(edge + 4).min(n - edge)];
        let (first, rest) = (middle[0], &middle[1..]);
        let occurs = l
            .windows(middle.len())
            .any(|w| w[0] == first && w[1..].iter().zip(rest).all(|(a, b)| a == b));
        if !occurs {
            return None;
        }
    }
    // `s[k..]` occurs for every `k` from the least that does (a suffix of an occurrence
    // occurs), so the least trim at the beginning is `|s|` less the longest suffix of `s` that
    // occurs in `l`, and at the end `|s|` less the longest prefix that does.
    let prefix = longest_prefix_inside(s.iter().copied(), l.iter().copied(), scratch);
    let suffix = longest_prefix_inside(s.iter().rev().copied(), l.iter().rev().copied(), scratch);
    let k = n - prefix.max(suffix);
    (k <= edge).then(|| (1.0 - k as f64 / n as f64, k))
}

/// The longest prefix of `pattern` that occurs in `text`: the largest state of the pattern's
/// Knuth–Morris–Pratt matcher over the text (its state after a character is the longest
/// prefix of the pattern ending there). Linear.
fn longest_prefix_inside(
    pattern: impl Iterator<Item = char>,
    text: impl Iterator<Item = char>,
    scratch: &mut Scratch,
) -> usize {
    let p = &mut scratch.pattern;
    p.clear();
    p.extend(pattern);
    // `fail[i]`: the longest proper border of `p[..=i]`.
    let fail = &mut scratch.fail;
    fail.clear();
    fail.resize(p.len(), 0);
    let mut b = 0;
    for i in 1..p.len() {
        while b > 0 && p[i] != p[b] {
            b = fail[b - 1];
        }
        if p[i] == p[b] {
            b += 1;
        }
        fail[i] = b;
    }
    let (mut state, mut best) = (0, 0);
    for c in text {
        if state == p.len() {
            return state;
        }
        while state > 0 && c != p[state] {
            state = fail[state - 1];
        }
        if c == p[state] {
            state += 1;
        }
        best = best.max(state);
    }
    best
}

/// The fewest edits that turn `s` (not empty) into some substring of `l`: the least value of
/// the last row of the semi-global edit-distance table, whose first row is all zeros (a match
/// may start anywhere in `l`) — the table the tests build row by row — computed 64 rows
/// at a time by bit-parallel columns (Myers 1999, in blocks as Hyyrö 2003): for each
/// character of `l` a block holds its 64 rows' vertical differences (+1, −1 or 0) in two
/// words, and passes the horizontal difference of its last row to the block below. Time
/// O(|l| · ⌈|s| / 64⌉) instead of O(|l| · |s|).
fn semi_global_distance(s: &[char], l: &[char], scratch: &mut Scratch) -> usize {
    let blocks = s.len().div_ceil(64);
    // `peq[k * blocks + b]`: the rows of block `b` where `s` has the `k`-th distinct character
    // (`k` from 1; entry 0 is the rows of a character `s` does not have: none).
    let index = &mut scratch.index;
    index.clear();
    let peq = &mut scratch.peq;
    peq.clear();
    peq.resize(blocks, 0);
    for (i, &c) in s.iter().enumerate() {
        let k = *index.entry(c).or_insert_with(|| {
            peq.resize(peq.len() + blocks, 0);
            peq.len() / blocks - 1
        });
        peq[k * blocks + i / 64] |= 1 << (i % 64);
    }
    // Vertical differences: `pv` rows where the value grows by one down the column, `mv`
    // where it shrinks by one (initially every row one more than the row above: column 0).
    let (pv, mv) = (&mut scratch.pv, &mut scratch.mv);
    pv.clear();
    pv.resize(blocks, u64::MAX);
    mv.clear();
    mv.resize(blocks, 0);
    let last = 1u64 << ((s.len() - 1) % 64);
    let mut score = s.len(); // the last row's value at the current column
    let mut best = score;
    for c in l {
        let k = index.get(c).copied().unwrap_or(0);
        let eqs = &peq[k * blocks..(k + 1) * blocks];
        // The horizontal difference entering the top block: the first row is all zeros.
        let mut h_in: i32 = 0;
        for b in 0..blocks {
            let high = if b + 1 == blocks { last } else { 1 << 63 };
            let (p, m) = (pv[b], mv[b]);
            let mut eq = eqs[b];
            let xv = eq | m;
            if h_in < 0 {
                eq |= 1;
            }
            let xh = (((eq & p).wrapping_add(p)) ^ p) | eq;
            let mut ph = m | !(xh | p);
            let mut mh = p & xh;
            let h_out = if ph & high != 0 {
                1
            } else if mh & high != 0 {
                -1
            } else {
                0
            };
            ph <<= 1;
            mh <<= 1;
            if h_in < 0 {
                mh |= 1;
            } else if h_in > 0 {
                ph |= 1;
            }
            pv[b] = mh | !(xv | ph);
            mv[b] = ph & xv;
            h_in = h_out;
        }
        score = (score as i64 + h_in as i64) as usize;
        best = best.min(score);
    }
    best
}

/// The q-gram lemma for q = 3: an edit touches at most three of `s`'s character 3-grams, so
/// if `s` lies inside `l` within `budget` edits, at least `|s| − 2 − 3·budget` of its 3-grams
/// (by position) occur in `l`. Whether fewer do — then the alignment cannot succeed. Linear:
/// by either side's prepared [`TextGrams`], else by `l`'s 3-grams sorted.
fn too_few_shared_trigrams(
    s: &[char],
    l: &[char],
    prep: Prepared,
    budget: usize,
    scratch: &mut Scratch,
) -> bool {
    if !trigram_bound_applies(s, l, budget) {
        return false;
    }
    let need = ((s.len() - 2) - 3 * budget) as u64;
    if let Some(g) = prep.s {
        // `s`'s 3-grams that `l` has, each counted at all its positions once `l` shows it.
        let t = g.trigrams(s);
        let seen = &mut scratch.seen;
        seen.clear();
        seen.resize(t.counts.len().div_ceil(64), 0);
        let mut shared = 0u64;
        for w in l.windows(3) {
            if let Some(k) = t.find(trigram(w)) {
                if seen[k / 64] >> (k % 64) & 1 == 0 {
                    seen[k / 64] |= 1 << (k % 64);
                    shared += u64::from(t.counts[k]);
                    if shared >= need {
                        return false;
                    }
                }
            }
        }
        return true;
    }
    let shared = match prep.l {
        Some(g) => {
            let theirs = g.trigrams(l);
            s.windows(3)
                .filter(|w| theirs.find(trigram(w)).is_some())
                .count()
        }
        None => {
            let mut theirs = std::mem::take(&mut scratch.trigrams);
            sorted_trigrams(l, &mut theirs);
            let shared = s
                .windows(3)
                .filter(|w| theirs.binary_search(&trigram(w)).is_ok())
                .count();
            scratch.trigrams = theirs;
            shared
        }
    };
    (shared as u64) < need
}

/// Whether the q-gram bound can refuse anything: `s` needs at least one shared 3-gram.
fn trigram_bound_applies(s: &[char], l: &[char], budget: usize) -> bool {
    (s.len() as i64 - 2) - 3 * (budget as i64) > 0 && l.len() >= 3
}

/// Whether at least `floor` characters of `s` can have no partner in `l`: every character of
/// `s` beyond the number of times it occurs in `l` costs an edit in any alignment (each
/// character of `l` stands for at most one of `s`), so their count bounds the distance from
/// below. Linear, where the alignment is quadratic: most candidate pairs that are not
/// contained are refused here.
#[cfg(test)]
fn missing_at_least(s: &[char], l: &[char], floor: usize, scratch: &mut Scratch) -> bool {
    floor <= s.len() && missing_down_to(s, l, floor, Prepared::default(), scratch) >= floor
}

/// How many characters of `s` have no partner in `l` (see [`missing_at_least`]), or, once
/// fewer than `floor` are left without one, some number below `floor` (the count may stop
/// there). Counts by whichever side's character counts (its [`TextGrams`]) `prep` holds, else by `s`'s.
fn missing_down_to(
    s: &[char],
    l: &[char],
    floor: usize,
    prep: Prepared,
    scratch: &mut Scratch,
) -> usize {
    if let Some(g) = prep.s {
        return g.chars.missing_in(l, floor, &mut scratch.work);
    }
    if let Some(g) = prep.l {
        return g.chars.missing_of(s, &mut scratch.work);
    }
    scratch.counts.reset(s.iter().map(|&c| c as u32));
    scratch.counts.missing_in(l, floor, &mut scratch.work)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The semi-global edit-distance table row by row (the definition): the least value of
    /// its last row.
    fn semi_global_distance_table(s: &[char], l: &[char]) -> usize {
        let mut row = vec![0usize; l.len() + 1];
        let mut next = vec![0usize; l.len() + 1];
        for (i, &c) in s.iter().enumerate() {
            next[0] = i + 1;
            for j in 1..=l.len() {
                let sub = row[j - 1] + usize::from(l[j - 1] != c);
                next[j] = sub.min(row[j] + 1).min(next[j - 1] + 1);
            }
            std::mem::swap(&mut row, &mut next);
        }
        row.iter().copied().min().unwrap_or(s.len())
    }

    #[test]
    fn a_quote_with_its_attribution_is_found_with_an_edge() {
        let original: Vec<char> =
            "今天我们读了一本很好的书，书中讲的是一个人如何在困难中坚持下去的故事"
                .chars()
                .collect();
        let quote: Vec<char> = "小明说今天我们读了一本很好的书，书中讲的是一个人"
            .chars()
            .collect();
        let scratch = &mut Scratch::default();
        assert_eq!(
            contained_with_edge_at_least(&quote, &original, Prepared::default(), 0, 0.9, scratch),
            None
        );
        let (score, left_out) =
            contained_with_edge_at_least(&quote, &original, Prepared::default(), 4, 0.9, scratch)
                .unwrap();
        assert_eq!((score, left_out), (1.0 - 3.0 / quote.len() as f64, 3));
    }

    /// What [`Prepared`] can hold of a pair: nothing, `s`'s grams, or `l`'s.
    struct Ways {
        s: Option<TextGrams>,
        l: Option<TextGrams>,
    }

    impl Ways {
        fn get(&self) -> Prepared<'_> {
            Prepared {
                s: self.s.as_ref(),
                l: self.l.as_ref(),
            }
        }
    }

    fn prepared_ways(s: &[char], l: &[char]) -> Vec<Ways> {
        vec![
            Ways { s: None, l: None },
            Ways {
                s: Some(TextGrams::of(s)),
                l: None,
            },
            Ways {
                s: None,
                l: Some(TextGrams::of(l)),
            },
        ]
    }

    proptest! {
        /// One scratch reused over many pairs, with and without the longer text's 3-grams and
        /// either side's character counts given, answers what each pair alone answers.
        #[test]
        fn reused_scratch_and_given_trigrams_answer_as_alone(
            pairs in proptest::collection::vec(("[a-d中文]{0,70}", "[a-e中]{0,140}"), 1..8),
            min in 0.5f64..1.0,
        ) {
            let mut scratch = Scratch::default();
            for (s, l) in &pairs {
                let sc: Vec<char> = s.chars().collect();
                let lc: Vec<char> = l.chars().collect();
                let alone = contained_similarity_at_least(s, l, min);
                for prep in prepared_ways(&sc, &lc) {
                    prop_assert_eq!(contained_at_least(&sc, &lc, prep.get(), min, &mut scratch), alone);
                }
            }
        }

        /// An edge answers the whole text's alignment when it passes, else the least trim at
        /// one edge that leaves a verbatim substring.
        #[test]
        fn edge_is_the_least_verbatim_trim(
            s in "[a-d]{1,20}", l in "[a-e]{0,60}", cut in 0usize..20, edge in 0usize..6, min in 0.5f64..1.0,
        ) {
            // Often make most of `s` occur in `l`.
            let l = if cut < s.len() { format!("{l}{}", &s[cut..]) } else { l };
            let sc: Vec<char> = s.chars().collect();
            let lc: Vec<char> = l.chars().collect();
            let e = edge.min(sc.len() - 1);
            let want = match contained_similarity_at_least(&s, &l, min) {
                Some(x) => Some((x, 0)),
                None => (1..=e).find(|&k| l.contains(&s[k..]) || l.contains(&s[..s.len() - k]))
                    .map(|k| (1.0 - k as f64 / sc.len() as f64, k)),
            };
            for prep in prepared_ways(&sc, &lc) {
                let got = contained_with_edge_at_least(&sc, &lc, prep.get(), edge, min, &mut Scratch::default());
                prop_assert_eq!(got, want);
            }
        }

        /// The bit-parallel columns give the table's distance, for texts of one block and of
        /// several (a block boundary anywhere), over small and large alphabets.
        #[test]
        fn bit_parallel_equals_the_table(
            s in proptest::collection::vec(proptest::sample::select(vec!['a', 'b', 'c', '中', '文']), 1..200),
            l in proptest::collection::vec(proptest::sample::select(vec!['a', 'b', 'c', 'd', '中', '文']), 0..260),
            cut in 0usize..200,
        ) {
            // Often make `s` nearly contained: `l` holds a piece of it.
            let l: Vec<char> = if cut < s.len() { l.iter().chain(&s[cut..]).copied().collect() } else { l };
            prop_assert_eq!(semi_global_distance(&s, &l, &mut Scratch::default()), semi_global_distance_table(&s, &l));
        }

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
            prop_assert!(!missing_at_least(&sc, &lc, d + 1, &mut Scratch::default()));
            prop_assert!(missing_at_least(&sc, &lc, 0, &mut Scratch::default()));
        }

        /// The count of characters without a partner is what counting with a map gives, at
        /// every floor.
        #[test]
        fn missing_characters_are_counted_exactly(
            s in proptest::collection::vec(proptest::sample::select(vec!['a', 'b', 'c', '中', '文', '😀', '\u{10FFFF}']), 1..120),
            l in proptest::collection::vec(proptest::sample::select(vec!['a', 'b', 'd', '中', '😀', '\u{0}']), 0..200),
        ) {
            let mut counts: std::collections::HashMap<char, usize> = Default::default();
            for &c in &s {
                *counts.entry(c).or_default() += 1;
            }
            let mut missing = s.len();
            for c in &l {
                if let Some(n) = counts.get_mut(c).filter(|n| **n > 0) {
                    *n -= 1;
                    missing -= 1;
                }
            }
            for floor in 0..=s.len() + 1 {
                prop_assert_eq!(missing_at_least(&s, &l, floor, &mut Scratch::default()), missing >= floor, "floor {}", floor);
                // Counted by either side's prepared counts, one scratch reused.
                let scratch = &mut Scratch::default();
                for prep in prepared_ways(&s, &l) {
                    let n = missing_down_to(&s, &l, floor, prep.get(), scratch);
                    prop_assert_eq!(n >= floor, missing >= floor, "floor {}", floor);
                    if n >= floor {
                        prop_assert_eq!(n, missing);
                    }
                }
            }
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
            for prep in prepared_ways(&sc, &lc) {
                prop_assert!(!too_few_shared_trigrams(&sc, &lc, prep.get(), d, &mut Scratch::default()));
            }
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
