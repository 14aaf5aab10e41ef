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
//! The normaliser applies it as it copies the text ([`crate::normalize::Normalizer`]: NFKC's
//! pass marks a piece holding a folded character, and the folder folds it); [`fold_char`] is
//! the definition:
//!
//! ```
//! use neardup::text::script::fold_char;
//! let fold = |s: &str| s.chars().map(fold_char).collect::<String>();
//! assert_eq!(fold("臺灣的軟體開發"), "台湾的软体开发");
//! assert_eq!(fold("简体中文 stays"), "简体中文 stays");
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
        assert!(s.chars().all(|c| fold_char(c) == c));
    }

    /// Regional variants go to the common Simplified form; supplementary characters are folded
    /// too.
    #[test]
    fn variants_and_supplementary_characters_are_folded() {
        let fold = |s: &str| s.chars().map(fold_char).collect::<String>();
        assert_eq!(fold("裏裡後"), "里里后");
        assert_eq!(fold("啟啓"), "启启");
        assert_eq!(fold_char('𠁞'), '𠀾');
        assert_eq!(fold("a𠁞b"), "a𠀾b");
        // A compatibility ideograph is folded after NFKC maps it to its Traditional form.
        let n = crate::normalize::Normalizer::new(Default::default());
        assert_eq!(n.normalize("\u{F91D}杆"), "栏杆");
    }

    proptest::proptest! {
        /// `folds`, which NFKC's pass and the folder ask, says exactly which characters the
        /// fold changes.
        #[test]
        fn folds_says_which_characters_change(c in proptest::char::any()) {
            let f = Folds::get();
            proptest::prop_assert_eq!(f.folds(c as u32), fold_char(c) != c);
        }
    }

    /// … every character of the direct block and the table's supplementary ones included.
    #[test]
    fn folds_agrees_with_the_table_everywhere_it_holds_entries() {
        let f = Folds::get();
        let block = (FIRST..=LAST).filter_map(char::from_u32);
        for c in block.chain(f.others.iter().map(|&(k, _)| k)) {
            assert_eq!(f.folds(c as u32), fold_char(c) != c, "{c}");
        }
    }
}
