//! Traditional Chinese characters folded to their Simplified forms: the last normalisation step
//! (`NormalizeOptions::fold_traditional`, spec §2 step 6), so that a text and its copy in the
//! other script — a story reposted by a Taiwan or Hong Kong site, a manual in both scripts —
//! are one text to every detector.
//!
//! The fold is a character for a character, by a fixed table (`t2s.tsv`, 3,234 entries made
//! by `scripts/gen-t2s-table` from the character tables of OpenCC, Apache-2.0): regional
//! variants first, then Traditional to Simplified, taking each table's first candidate, so
//! `後`, `裏` and `裡` all become `后`/`里` whatever the word. Phrase-level conversion (which
//! picks `乾` or `干` by context) is out of scope: both copies are folded alike, so a
//! distinction lost costs nothing here. Simplified text is left as it is, but for the few
//! characters the table folds that Simplified text also writes (`乾` → `干`, `於` → `于`).
//!
//! ```
//! use neardup::normalize::fold_traditional;
//! assert_eq!(fold_traditional("臺灣的軟體開發".into()), "台湾的软体开发");
//! assert_eq!(fold_traditional("简体中文 stays".into()), "简体中文 stays");
//! ```

use std::sync::LazyLock;

/// The table: a line a character, `traditional TAB simplified`, `#` comments.
const TABLE: &str = include_str!("t2s.tsv");

/// The first and last code point of the block the table is indexed by directly (CJK Extension A
/// and the Unified Ideographs); its other entries are looked up by a binary search.
const FIRST: u32 = 0x3400;
const LAST: u32 = 0x9FFF;

/// The table, indexed ([`Folds::get`]).
pub(crate) struct Folds {
    /// One bit per code point of `FIRST..=LAST`: whether it is folded.
    bits: Box<[u64]>,
    /// Per code point of `FIRST..=LAST`, its folded form (`'\0'` when none).
    direct: Box<[char]>,
    /// The other entries, by code point.
    others: Box<[(char, char)]>,
}

static FOLD: LazyLock<Folds> = LazyLock::new(|| {
    let span = (LAST - FIRST + 1) as usize;
    let mut bits = vec![0u64; span.div_ceil(64)].into_boxed_slice();
    let mut direct = vec!['\0'; span].into_boxed_slice();
    let mut others = Vec::new();
    for line in TABLE
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let mut cs = line.chars();
        let (Some(from), Some('\t'), Some(to), None) = (cs.next(), cs.next(), cs.next(), cs.next())
        else {
            unreachable!("t2s.tsv line {line:?} is not `character TAB character`");
        };
        let c = from as u32;
        if (FIRST..=LAST).contains(&c) {
            let i = (c - FIRST) as usize;
            bits[i / 64] |= 1 << (i % 64);
            direct[i] = to;
        } else {
            others.push((from, to));
        }
    }
    others.sort_unstable();
    Folds {
        bits,
        direct,
        others: others.into_boxed_slice(),
    }
});

impl Folds {
    /// The table, built on first use.
    pub(crate) fn get() -> &'static Folds {
        &FOLD
    }

    /// Whether [`fold_char`] changes the character `c`, which lies in U+3400..=U+9FFF.
    #[inline]
    pub(crate) fn folds_direct(&self, c: u32) -> bool {
        let j = c.wrapping_sub(FIRST) as usize;
        j <= (LAST - FIRST) as usize && self.bits[j >> 6] >> (j & 63) & 1 == 1
    }

    /// Whether [`fold_char`] changes the character `c`.
    #[inline]
    pub(crate) fn folds(&self, c: u32) -> bool {
        if c < 0x10000 {
            return self.folds_direct(c);
        }
        self.others
            .binary_search_by_key(&c, |&(k, _)| k as u32)
            .is_ok()
    }
}

/// The Simplified form of `c`, or `c` when the table has none.
#[inline]
pub fn fold_char(c: char) -> char {
    Folds::get().fold(c)
}

/// `text` with every Traditional character folded ([`fold_char`]). Text without one (any text
/// in Simplified Chinese or another script) is given back as it is, after a scan; otherwise
/// the runs between folded characters are copied whole.
pub fn fold_traditional(text: String) -> String {
    let f = Folds::get();
    let Some(mut at) = f.next_folded(&text, 0) else {
        return text;
    };
    let mut out = String::with_capacity(text.len() + 8);
    let mut copied = 0;
    loop {
        out.push_str(&text[copied..at]);
        let c = text[at..].chars().next().expect("a character starts here");
        out.push(f.fold(c));
        copied = at + c.len_utf8();
        match f.next_folded(&text, copied) {
            Some(next) => at = next,
            None => break,
        }
    }
    out.push_str(&text[copied..]);
    out
}

impl Folds {
    /// The Simplified form of `c` ([`fold_char`]).
    #[inline]
    pub(crate) fn fold(&self, c: char) -> char {
        let u = c as u32;
        if self.folds_direct(u) {
            return self.direct[(u - FIRST) as usize];
        }
        if u < 0x10000 {
            return c;
        }
        match self.others.binary_search_by_key(&c, |&(k, _)| k) {
            Ok(i) => self.others[i].1,
            Err(_) => c,
        }
    }

    /// The byte offset of the first character from byte `from` on that [`fold_char`] changes.
    fn next_folded(&self, text: &str, from: usize) -> Option<usize> {
        let b = text.as_bytes();
        let mut i = from;
        while i < b.len() {
            let x = b[i];
            if x < 0xE3 {
                // ASCII, continuation bytes, two-byte sequences and U+0800..U+2FFF: none
                // folded.
                i += 1;
            } else if x <= 0xE9 {
                // U+3000..U+9FFF: one bit of the direct block's map (3.4 KiB) each.
                let (Some(&y), Some(&z)) = (b.get(i + 1), b.get(i + 2)) else {
                    break;
                };
                let c =
                    (u32::from(x & 0x0F) << 12) | (u32::from(y & 0x3F) << 6) | u32::from(z & 0x3F);
                if self.folds_direct(c) {
                    return Some(i);
                }
                i += 3;
            } else if x >= 0xF0 {
                let c = text[i..].chars().next().expect("a character starts here");
                if self.folds(c as u32) {
                    return Some(i);
                }
                i += 4;
            } else {
                // U+A000..U+FFFF: none folded.
                i += 3;
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every entry of the table is folded to its form, and every form is a fixed point: folding
    /// twice is folding once.
    #[test]
    fn the_table_is_applied_and_idempotent() {
        let mut n = 0;
        for line in TABLE.lines().filter(|l| !l.starts_with('#')) {
            let mut cs = line.chars();
            let (from, to) = (cs.next().unwrap(), cs.nth(1).unwrap());
            assert_ne!(from, to);
            assert_eq!(fold_char(from), to, "{from}");
            assert_eq!(fold_char(to), to, "{to} is folded again");
            n += 1;
        }
        assert_eq!(n, 3234);
        assert!(FOLD.others.iter().all(|&(k, _)| k as u32 > 0xFFFF));
    }

    /// Characters the table does not hold stay: ASCII, kana, hangul, Simplified characters,
    /// and a supplementary character not in it.
    #[test]
    fn other_characters_stay() {
        let s = "abc かな 한글 简体中文后里 😀 𠀀 \u{9FFF}\u{3400}";
        assert_eq!(Folds::get().next_folded(s, 0), None);
        assert_eq!(fold_traditional(s.to_string()), s);
    }

    /// Regional variants go to the common Simplified form; supplementary characters are folded
    /// too.
    #[test]
    fn variants_and_supplementary_characters_are_folded() {
        assert_eq!(fold_traditional("裏裡後".into()), "里里后");
        assert_eq!(fold_traditional("啟啓".into()), "启启");
        assert_eq!(fold_char('𠁞'), '𠀾');
        assert_eq!(fold_traditional("a𠁞b".into()), "a𠀾b");
        // A compatibility ideograph is folded after NFKC maps it to its Traditional form.
        let n = crate::normalize::Normalizer::new(Default::default());
        assert_eq!(n.normalize("\u{F91D}杆"), "栏杆");
    }

    proptest::proptest! {
        /// The scan finds the first character the fold changes, and the result is the
        /// per-character fold.
        #[test]
        fn fold_equals_the_per_character_definition(
            v in proptest::collection::vec(proptest::sample::select(vec![
                'a', ' ', '中', '國', '国', '臺', '灣', '简', '體', '后', '後', 'か', '한', '😀',
                '𠁞', '𠀾', '\u{3400}', '\u{9FFF}', '\u{A000}', '\u{FFFD}', 'é', '─', '，',
            ]), 0..40),
        ) {
            let s: String = v.iter().collect();
            let want: String = s.chars().map(fold_char).collect();
            let first = s.char_indices().find(|&(_, c)| fold_char(c) != c).map(|(i, _)| i);
            proptest::prop_assert_eq!(Folds::get().next_folded(&s, 0), first);
            proptest::prop_assert_eq!(fold_traditional(s), want);
        }
    }
}
