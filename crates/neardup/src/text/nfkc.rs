//! Unicode NFKC, fast on Chinese text: runs of characters that NFKC leaves as they are and that
//! start a normalisation segment are copied, the full-width forms of Chinese punctuation are
//! written as their ASCII NFKC, and only the segments around other characters go through the
//! full algorithm (`unicode-normalization`). The output is that algorithm's (property-tested).
//!
//! ```
//! use neardup::normalize::nfkc;
//! assert_eq!(nfkc("中文，ＡＢＣ。"), Some("中文,ABC。".to_string()));
//! assert_eq!(nfkc("already normal"), None);
//! ```

use std::sync::LazyLock;

use unicode_normalization::char::canonical_combining_class;
use unicode_normalization::{is_nfkc_quick, IsNormalized, UnicodeNormalization};

/// A character that is unchanged by NFKC and starts a normalisation segment (canonical combining
/// class 0 and NFKC_Quick_Check = Yes): text between two such characters can be normalised
/// independently (UAX #15, "boundaries"). ASCII and the CJK Unified Ideographs block are
/// answered at once; other characters (Chinese text's `。「」“”、`) from the tables.
#[inline]
fn is_stable_boundary(c: char) -> bool {
    let i = c as usize;
    if c.is_ascii() || matches!(i, 0x4E00..=0x9FFF) {
        true
    } else if i < 0x10000 {
        STABLE_BMP[i >> 6] >> (i & 63) & 1 == 1
    } else {
        is_stable(c)
    }
}

/// Canonical combining class 0 and NFKC_Quick_Check = Yes, from the Unicode tables.
fn is_stable(c: char) -> bool {
    canonical_combining_class(c) == 0 && is_nfkc_quick(std::iter::once(c)) == IsNormalized::Yes
}

/// [`is_stable`] of every BMP character, one bit each (8 KiB, built on first use): the
/// tables' lookups cost more than the rest of normalising a Chinese character.
static STABLE_BMP: LazyLock<Box<[u64]>> = LazyLock::new(|| {
    let mut bits = vec![0u64; 1024].into_boxed_slice();
    for c in (0..0x10000u32).filter_map(char::from_u32) {
        if is_stable(c) {
            let i = c as usize;
            bits[i >> 6] |= 1 << (i & 63);
        }
    }
    bits
});

/// NFKC of the compatibility characters common in Chinese text whose NFKC is ASCII: the
/// full-width ASCII variants (U+FF01..=U+FF5E), the ideographic space (U+3000) and the
/// ellipsis (U+2026, three full stops).
#[inline]
fn ascii_nfkc(c: char) -> Option<&'static str> {
    const PRINTABLE: &str = "!\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~";
    match c as u32 {
        x @ 0xFF01..=0xFF5E => {
            let at = (x - 0xFF01) as usize;
            Some(&PRINTABLE[at..at + 1])
        }
        0x3000 => Some(" "),
        0x2026 => Some("..."),
        _ => None,
    }
}

/// NFKC of `s`, or `None` when `s` is already in NFKC. Runs of ASCII and CJK ideographs are
/// copied as they are, and a full-width ASCII variant (Chinese text's `，：；！？（）`), the
/// ideographic space or the ellipsis is mapped to its ASCII form when what follows is such a
/// run, another of them or the end (its NFKC is ASCII starters, which compose with nothing
/// before them, and nothing after composes with them then); only the segments around other
/// characters go through the full algorithm. That makes Chinese text several times faster than normalising everything,
/// with identical output (property-tested).
pub fn nfkc(s: &str) -> Option<String> {
    // Up to the first character that is not a stable boundary, the text is its own NFKC
    // (ASCII is skipped a byte at a time).
    let ascii = s.bytes().position(|b| !b.is_ascii())?;
    let first = ascii
        + s[ascii..]
            .char_indices()
            .find(|&(_, c)| !is_stable_boundary(c))?
            .0;
    let mut out = String::with_capacity(s.len() + 16);
    let mut copied = 0; // input bytes already emitted
                        // Start of the current segment: the character before the first unstable one.
    let mut last_boundary = s[..first].char_indices().next_back().map_or(0, |(i, _)| i);
    let mut slow = false;
    let mut chars = s[first..]
        .char_indices()
        .map(|(i, c)| (first + i, c))
        .peekable();
    while let Some((i, c)) = chars.next() {
        if is_stable_boundary(c) {
            if slow {
                out.extend(s[copied..i].nfkc());
                copied = i;
                slow = false;
            }
            last_boundary = i;
            continue;
        }
        if let Some(a) = ascii_nfkc(c) {
            let next_ok = chars
                .peek()
                .is_none_or(|&(_, n)| is_stable_boundary(n) || ascii_nfkc(n).is_some());
            if next_ok {
                if slow {
                    out.extend(s[copied..i].nfkc());
                    slow = false;
                } else {
                    out.push_str(&s[copied..i]);
                }
                out.push_str(a);
                copied = i + c.len_utf8();
                last_boundary = copied;
                continue;
            }
        }
        if !slow {
            out.push_str(&s[copied..last_boundary]);
            copied = last_boundary;
            slow = true;
        }
    }
    if slow {
        out.extend(s[copied..].nfkc());
    } else {
        out.push_str(&s[copied..]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ASCII forms `nfkc` writes are NFKC's.
    #[test]
    fn ascii_forms_are_nfkcs() {
        for c in (0xFF01..=0xFF5Eu32)
            .chain([0x3000, 0x2026])
            .filter_map(char::from_u32)
        {
            let want: String = std::iter::once(c).nfkc().collect();
            assert_eq!(ascii_nfkc(c), Some(want.as_str()), "{c:?}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(500))]
        #[test]
        fn fast_nfkc_equals_full_nfkc(v in proptest::collection::vec(proptest::sample::select(vec![
            'a', 'E', ' ', '1', '中', '文', '，', '。', 'Ａ', '１', '\u{3000}', '\u{0301}', '\u{0308}', '\u{0327}', '：', '～', 'ｚ', '！', '…', '“', '\u{2028}', '\u{205F}', '\u{2000}', '「', '─', '²', '🔎', '\u{FE0E}', 'é', 'ᄀ',
            'e', 'ﬁ', '①', '㍿', '\u{1100}', '\u{1161}', '\u{11A8}', '가', 'か', '\u{3099}', 'ｶ', 'ﾞ', 'Å', 'Ω', '\u{2126}',
        ]), 0..40)) {
            let s: String = v.into_iter().collect();
            let want: String = s.nfkc().collect();
            let got = nfkc(&s).unwrap_or_else(|| s.clone());
            proptest::prop_assert_eq!(got, want);
        }
    }
}
