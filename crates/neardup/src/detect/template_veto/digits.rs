//! Digit runs in lines: a line's key with its runs of digits masked (a counter header is one
//! line on every page whatever its numbers), and a text without its numerals. Both read a byte
//! at a time over ASCII and the CJK ideographs ([`numeral_at`]), and equal their per-character
//! definitions (property tests in `tests.rs`).

use crate::features::numeral_at;

/// `s` without its numerals ([`is_numeric`](crate::features::is_numeric) characters): `s` itself when it has none, else a
/// copy of the runs between them, read a byte at a time over ASCII and the CJK ideographs
/// ([`numeral_at`]).
pub(super) fn without_numerals(s: String) -> String {
    let mut out: Option<String> = None;
    let (mut run, mut i) = (0, 0);
    while i < s.len() {
        let (numeral, len) = numeral_at(&s, i);
        if numeral {
            out.get_or_insert_with(|| String::with_capacity(s.len()))
                .push_str(&s[run..i]);
            run = i + len;
        }
        i += len;
    }
    match out {
        None => s,
        Some(mut o) => {
            o.push_str(&s[run..]);
            o
        }
    }
}

/// `line` with each run of digits ([`char::is_numeric`]) replaced by one `0`, written to `out`
/// (cleared first): a line's key under [`TemplateVetoOptions::mask_line_digits`](super::TemplateVetoOptions::mask_line_digits). The runs
/// between the digits are copied whole, found a byte at a time over ASCII and the CJK
/// ideographs.
pub fn mask_digits<'a>(line: &str, out: &'a mut String) -> &'a str {
    out.clear();
    let n = line.len();
    let (mut run, mut i) = (0, 0);
    while i < n {
        let (numeral, len) = numeral_at(line, i);
        i += len;
        if numeral {
            out.push_str(&line[run..i - len]);
            out.push('0');
            while i < n {
                let (numeral, len) = numeral_at(line, i);
                if !numeral {
                    break;
                }
                i += len;
            }
            run = i;
        }
    }
    out.push_str(&line[run..]);
    out
}

/// Whether `s` has a digit ([`char::is_numeric`]), read as [`mask_digits`] reads it.
pub(super) fn has_numeral(s: &str) -> bool {
    let mut i = 0;
    while i < s.len() {
        let (numeral, len) = numeral_at(s, i);
        if numeral {
            return true;
        }
        i += len;
    }
    false
}
