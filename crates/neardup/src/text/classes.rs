//! Character classes: which characters are letters and digits, numerals, Han, or of a script
//! written without spaces; the words of a text (runs of letters and digits, a spaceless
//! script's characters one word each); and the script counts the `auto` method decides on.
//!
//! Every class agrees with the standard library's (`char::is_alphanumeric`,
//! `char::is_numeric`) on every character (tested over all of Unicode); the fast paths only
//! answer ASCII and the CJK block from their code points and the rest of the Basic
//! Multilingual Plane from a bit table.
//!
//! ```
//! use neardup::features::{is_han, is_word_char, Words};
//! assert!(is_han('中') && is_word_char('é') && !is_word_char('，'));
//! assert_eq!(Words::new("linux内核 abc").collect::<Vec<_>>(), ["linux", "内", "核", "abc"]);
//! ```

use std::sync::LazyLock;

use super::packed::is_ideograph_lead;

/// Whether `c` is a character of a script written without spaces between words, where each
/// character is treated as a word: Han, kana, Thai, Lao, Khmer, Myanmar.
#[inline]
pub fn is_spaceless_script(c: char) -> bool {
    is_han(c) || is_other_spaceless(c)
}

/// A letter or digit (`char::is_alphanumeric`), with fast paths for ASCII, the CJK block and
/// the rest of the Basic Multilingual Plane (a bit table).
#[inline]
pub fn is_word_char(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_alphanumeric()
    } else if matches!(c as u32, 0x4E00..=0x9FFF) {
        true
    } else {
        is_alphanumeric_nonascii(c)
    }
}

/// `char::is_alphanumeric` and `char::is_numeric` of every BMP character, one bit each
/// (16 KiB, built on first use): the standard library binary-searches its tables for every
/// non-ASCII character, which showed up as a tenth of `dedup`'s time on Chinese text.
struct BmpClasses {
    alphanumeric: Box<[u64]>,
    numeric: Box<[u64]>,
}

static BMP: LazyLock<BmpClasses> = LazyLock::new(|| {
    let mut alphanumeric = vec![0u64; 1024].into_boxed_slice();
    let mut numeric = vec![0u64; 1024].into_boxed_slice();
    for c in (0..0x10000u32).filter_map(char::from_u32) {
        let i = c as usize;
        if c.is_alphanumeric() {
            alphanumeric[i >> 6] |= 1 << (i & 63);
        }
        if c.is_numeric() {
            numeric[i >> 6] |= 1 << (i & 63);
        }
    }
    BmpClasses {
        alphanumeric,
        numeric,
    }
});

#[inline]
fn is_alphanumeric_nonascii(c: char) -> bool {
    let i = c as usize;
    if i < 0x10000 {
        BMP.alphanumeric[i >> 6] >> (i & 63) & 1 == 1
    } else {
        c.is_alphanumeric()
    }
}

/// `char::is_alphanumeric`, fast (see [`is_word_char`]).
#[inline]
pub(crate) fn is_alphanumeric(c: char) -> bool {
    is_word_char(c)
}

/// `char::is_numeric`, fast: ASCII digits, the CJK block (no numerals), a bit table for the
/// rest of the BMP.
#[inline]
pub(crate) fn is_numeric(c: char) -> bool {
    let i = c as usize;
    if c.is_ascii() {
        c.is_ascii_digit()
    } else if matches!(i, 0x4E00..=0x9FFF) {
        false
    } else if i < 0x10000 {
        BMP.numeric[i >> 6] >> (i & 63) & 1 == 1
    } else {
        c.is_numeric()
    }
}

/// Whether the character starting at byte `i` of `s` (a character boundary) is a numeral
/// ([`is_numeric`]), and its length in bytes: ASCII and the CJK ideographs (none a numeral) are
/// answered from their bytes, other characters decoded.
#[inline(always)]
pub(crate) fn numeral_at(s: &str, i: usize) -> (bool, usize) {
    let b = s.as_bytes();
    match b[i] {
        x if x < 0x80 => (x.is_ascii_digit(), 1),
        x if is_ideograph_lead(x, b[i + 1]) => (false, 3),
        _ => {
            let c = s[i..].chars().next().expect("a character starts here");
            (is_numeric(c), c.len_utf8())
        }
    }
}

/// Han (CJK ideographs).
#[inline]
pub fn is_han(c: char) -> bool {
    matches!(c as u32, 0x4E00..=0x9FFF | 0x3400..=0x4DBF | 0x20000..=0x3134F | 0xF900..=0xFAFF)
}

#[inline]
fn is_kana(c: char) -> bool {
    matches!(c as u32, 0x3040..=0x30FF | 0x31F0..=0x31FF)
}

#[inline]
fn is_other_spaceless(c: char) -> bool {
    is_kana(c) || matches!(c as u32, 0x0E00..=0x0EFF | 0x1780..=0x17FF | 0x1000..=0x109F)
}

/// Calls `f` with every word n-gram: words are runs of letters/digits, each character of a
/// spaceless script ([`is_spaceless_script`]) being a word of its own; an n-gram is its words
/// joined by one space. A text of fewer than `n` words is one n-gram of all its words. Streams:
/// memory use is independent of the text's length.
pub fn words_each(text: &str, n: usize, f: &mut dyn FnMut(&[u8])) {
    let mut ring: Vec<&str> = vec![""; n];
    let mut seen = 0usize;
    let mut buf: Vec<u8> = Vec::new();
    for w in Words::new(text) {
        if n == 1 {
            f(w.as_bytes());
            continue;
        }
        ring[seen % n] = w;
        seen += 1;
        if seen >= n {
            buf.clear();
            for i in 0..n {
                if i > 0 {
                    buf.push(b' ');
                }
                buf.extend_from_slice(ring[(seen + i) % n].as_bytes());
            }
            f(&buf);
        }
    }
    if n > 1 && seen > 0 && seen < n {
        f(ring[..seen].join(" ").as_bytes());
    }
}

/// Iterator over the words of a text (see [`words_each`]).
#[derive(Debug, Clone)]
pub struct Words<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Words<'a> {
    /// Words of `text`.
    pub fn new(text: &'a str) -> Self {
        Words { text, pos: 0 }
    }
}

impl<'a> Iterator for Words<'a> {
    type Item = &'a str;
    fn next(&mut self) -> Option<&'a str> {
        let rest = &self.text[self.pos..];
        let mut start: Option<usize> = None;
        for (i, c) in rest.char_indices() {
            let alnum = is_word_char(c);
            match start {
                None if alnum => {
                    if is_spaceless_script(c) {
                        let end = i + c.len_utf8();
                        self.pos += end;
                        return Some(&rest[i..end]);
                    }
                    start = Some(i);
                }
                Some(s) if !alnum || is_spaceless_script(c) => {
                    self.pos += i;
                    return Some(&rest[s..i]);
                }
                _ => {}
            }
        }
        self.pos = self.text.len();
        start.map(|s| &rest[s..])
    }
}

/// Counts of the characters `auto` decides on (besides letters and digits in all).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct ScriptCounts {
    pub(crate) han: usize,
    pub(crate) kana: usize,
    /// Kana and the other spaceless scripts.
    pub(crate) spaceless: usize,
}

impl ScriptCounts {
    /// The share of `alnum` letters and digits that are Han or of another spaceless script
    /// ([`spaceless_share`]; `None` without any).
    pub(crate) fn spaceless_share(&self, alnum: usize) -> Option<f64> {
        (alnum > 0).then(|| (self.han + self.spaceless) as f64 / alnum as f64)
    }

    /// Counts non-ASCII letter or digit `c`.
    #[inline]
    pub(crate) fn add(&mut self, c: char) {
        if is_han(c) {
            self.han += 1;
        } else if is_kana(c) {
            self.kana += 1;
            self.spaceless += 1;
        } else if is_other_spaceless(c) {
            self.spaceless += 1;
        }
    }
}

/// The letters and digits of `text` and their script counts, which `auto` decides on.
pub(crate) fn script_counts(text: &str) -> (usize, ScriptCounts) {
    let (mut alnum, mut scripts) = (0usize, ScriptCounts::default());
    for c in text.chars() {
        if c.is_ascii() {
            alnum += c.is_ascii_alphanumeric() as usize;
            continue;
        }
        if is_word_char(c) {
            alnum += 1;
            scripts.add(c);
        }
    }
    (alnum, scripts)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast character classes agree with the standard library on every character.
    #[test]
    fn fast_classes_match_std() {
        for c in (0..=0x10FFFFu32).filter_map(char::from_u32) {
            assert_eq!(is_word_char(c), c.is_alphanumeric(), "{c:?}");
            assert_eq!(is_alphanumeric(c), c.is_alphanumeric(), "{c:?}");
            assert_eq!(is_numeric(c), c.is_numeric(), "{c:?}");
        }
    }

    use crate::text::packed::tests::collect;

    #[test]
    fn word_ngrams() {
        assert_eq!(
            collect(|f| words_each("the cat, sat", 2, f)),
            ["the cat", "cat sat"]
        );
        assert_eq!(collect(|f| words_each("solo", 3, f)), ["solo"]);
        assert_eq!(
            collect(|f| words_each("linux内核abc", 1, f)),
            ["linux", "内", "核", "abc"]
        );
    }
}
