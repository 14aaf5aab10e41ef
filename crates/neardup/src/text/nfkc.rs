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

use super::fold::is_unchanged_bmp;
use super::packed::is_ideograph_lead;

use unicode_normalization::char::canonical_combining_class;
use unicode_normalization::{is_nfkc_quick, IsNormalized, UnicodeNormalization};

/// A character that is unchanged by NFKC and starts a normalisation segment (canonical combining
/// class 0 and NFKC_Quick_Check = Yes): text between two such characters can be normalised
/// independently (UAX #15, "boundaries"). ASCII and the CJK Unified Ideographs block are
/// answered at once; other characters (Chinese text's `。「」“”、`) from the tables.
#[inline]
fn is_stable_boundary(c: u32) -> bool {
    let i = c as usize;
    if c < 0x80 || matches!(i, 0x4E00..=0x9FFF) {
        true
    } else if i < 0x10000 {
        STABLE_BMP[i >> 6] >> (i & 63) & 1 == 1
    } else {
        char::from_u32(c).is_some_and(is_stable)
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
fn ascii_nfkc(c: u32) -> Option<&'static str> {
    const PRINTABLE: &str = "!\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~";
    match c {
        x @ 0xFF01..=0xFF5E => {
            let at = (x - 0xFF01) as usize;
            Some(&PRINTABLE[at..at + 1])
        }
        0x3000 => Some(" "),
        0x2026 => Some("..."),
        _ => None,
    }
}

/// The code point that starts at byte `i` of `s` (a character boundary), and its length.
#[inline(always)]
fn decode(s: &str, i: usize) -> (u32, usize) {
    let b = s.as_bytes();
    let x = b[i];
    if x < 0x80 {
        (u32::from(x), 1)
    } else if x & 0xF0 == 0xE0 {
        let c = (u32::from(x & 0x0F) << 12)
            | (u32::from(b[i + 1] & 0x3F) << 6)
            | u32::from(b[i + 2] & 0x3F);
        (c, 3)
    } else {
        let c = s[i..].chars().next().expect("a character starts here");
        (c as u32, c.len_utf8())
    }
}

/// NFKC of `s`, or `None` when `s` is already in NFKC. Runs of ASCII and CJK ideographs are
/// copied as they are, and a full-width ASCII variant (Chinese text's `，：；！？（）`), the
/// ideographic space or the ellipsis is mapped to its ASCII form when what follows is such a
/// run, another of them or the end (its NFKC is ASCII starters, which compose with nothing
/// before them, and nothing after composes with them then); only the segments around other
/// characters go through the full algorithm. That makes Chinese text several times faster than
/// normalising everything, with identical output (property-tested).
pub fn nfkc(s: &str) -> Option<String> {
    // Up to the first character that is not a stable boundary, the text is its own NFKC.
    let mut i = s.bytes().position(|b| !b.is_ascii())?;
    loop {
        let (c, len) = decode(s, i);
        if !is_stable_boundary(c) {
            break;
        }
        i += len;
        if i == s.len() {
            return None;
        }
    }
    let mut out = String::with_capacity(s.len() + 16);
    nfkc_each(s, false, &mut |piece, _| out.push_str(piece));
    Some(out)
}

/// Writes the NFKC of `s` to `emit` a piece at a time (as [`nfkc`] computes it; the pieces
/// concatenated are the result). The flag says that a piece is *clean*: no white space, and
/// nothing the later steps change (ASCII but capitals, CJK punctuation, kana and ideographs;
/// [`is_unchanged_bmp`]), so they may copy it as it is. With `fold` (the script step is on) a
/// piece holding a character [`fold_char`](super::script::fold_char) changes is not clean.
pub(crate) fn nfkc_each(s: &str, fold: bool, emit: &mut impl FnMut(&str, bool)) {
    let folds = fold.then(super::script::Folds::get);
    let mut emit_nonempty = |p: &str, clean: bool| {
        if !p.is_empty() {
            emit(p, clean)
        }
    };
    let mut segment = String::new();
    let mut normalise = |p: &str, emit: &mut dyn FnMut(&str, bool)| {
        segment.clear();
        segment.extend(p.nfkc());
        emit(&segment, false);
    };
    let mut copied = 0; // input bytes already emitted
    let mut last_boundary = 0; // start of the last stable boundary before the current character
    let mut slow = false; // the characters from `copied` on need the full algorithm
    let mut clean = true; // `s[copied..i]` is clean (when not slow)
    let mut i = 0;
    let b = s.as_bytes();
    while i < s.len() {
        if !slow {
            // Runs of ASCII and of CJK ideographs (U+4E00..=U+9FFF: E4 B8 80 ..= E9 BF BF),
            // every character a stable boundary, a byte comparison each.
            let start = i;
            let mut last = i;
            loop {
                match b.get(i) {
                    Some(&x) if x < 0x80 => {
                        let run = b[i..]
                            .iter()
                            .position(|x| !x.is_ascii())
                            .unwrap_or(b.len() - i);
                        if clean {
                            clean = b[i..i + run]
                                .iter()
                                .all(|x| !(x.is_ascii_uppercase() || x.is_ascii_whitespace()));
                        }
                        i += run;
                        last = i - 1;
                    }
                    Some(&x) if is_ideograph_lead(x, b[i + 1]) => {
                        if let Some(f) = folds {
                            let c = (u32::from(x & 0x0F) << 12)
                                | (u32::from(b[i + 1] & 0x3F) << 6)
                                | u32::from(b[i + 2] & 0x3F);
                            clean &= !f.folds_direct(c);
                        }
                        last = i;
                        i += 3;
                    }
                    _ => break,
                }
            }
            if i > start {
                last_boundary = last;
                continue;
            }
        }
        let (c, len) = decode(s, i);
        if is_stable_boundary(c) {
            if slow {
                normalise(&s[copied..i], &mut emit_nonempty);
                copied = i;
                slow = false;
                clean = true;
            }
            clean &= is_unchanged_bmp(c) && !folds.is_some_and(|f| f.folds(c));
            last_boundary = i;
            i += len;
            continue;
        }
        if let Some(a) = ascii_nfkc(c) {
            let next = i + len;
            let next_ok = next == s.len() || {
                let (n, _) = decode(s, next);
                is_stable_boundary(n) || ascii_nfkc(n).is_some()
            };
            if next_ok {
                if slow {
                    normalise(&s[copied..i], &mut emit_nonempty);
                    slow = false;
                } else {
                    emit_nonempty(&s[copied..i], clean);
                }
                let a_clean = !a.bytes().any(|x| x.is_ascii_uppercase() || x == b' ');
                emit_nonempty(a, a_clean);
                copied = next;
                last_boundary = next;
                clean = true;
                i = next;
                continue;
            }
        }
        if !slow {
            emit_nonempty(&s[copied..last_boundary], clean);
            copied = last_boundary;
            slow = true;
        }
        i += len;
    }
    if slow {
        normalise(&s[copied..], &mut emit_nonempty);
    } else {
        emit_nonempty(&s[copied..], clean);
    }
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
            assert_eq!(ascii_nfkc(c as u32), Some(want.as_str()), "{c:?}");
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
