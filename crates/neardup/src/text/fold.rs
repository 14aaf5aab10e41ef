//! The normalisation steps after NFKC: full-width forms to half-width, lower case, runs of
//! white space to one space (trimmed at both ends), and Traditional Chinese characters to
//! Simplified ([`super::script`]). [`Folder`] folds text a piece at a time, so NFKC can hand
//! it what it writes without an intermediate string.
//!
//! With the default options, runs of characters the steps leave as they are (ASCII but for
//! capitals and white space, a single space between two such characters, CJK punctuation,
//! kana and ideographs the script step does not fold) are found a byte at a time and copied
//! whole; every other character goes through the general steps, which are the definition
//! (property-tested equal).

use super::normalize::{to_half_width, NormalizeOptions};
use super::script::Folds;

/// Folds width, case and white space into a growing string; see the module docs.
pub(crate) struct Folder<'o> {
    opts: &'o NormalizeOptions,
    /// The script step's table, when it is on.
    fold: Option<&'static Folds>,
    out: String,
    /// White space was seen after something was written: one space goes before the next
    /// character.
    pending_space: bool,
    /// With [`Folder::track_breaks`]: where line breaks were, as byte offsets of `out`.
    breaks: Option<Vec<usize>>,
}

/// Whether `c` breaks a line.
#[inline]
fn is_line_break(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

impl<'o> Folder<'o> {
    /// An empty folder with room for `capacity` bytes.
    pub(crate) fn new(opts: &'o NormalizeOptions, capacity: usize) -> Self {
        Folder {
            opts,
            fold: opts.fold_traditional.then(Folds::get),
            out: String::with_capacity(capacity),
            pending_space: false,
            breaks: None,
        }
    }

    /// Also notes where line breaks are ([`Folder::finish_with_breaks`]).
    pub(crate) fn track_breaks(&mut self) {
        self.breaks = Some(Vec::new());
    }

    /// Notes a line break at the end of what is written (once per offset).
    #[inline]
    fn line_break(&mut self, c: char) {
        if let Some(b) = self.breaks.as_mut().filter(|_| is_line_break(c)) {
            if b.last() != Some(&self.out.len()) {
                b.push(self.out.len());
            }
        }
    }

    /// Folds `s`, continuing the text pushed before.
    pub(crate) fn push(&mut self, s: &str) {
        if self.opts.whitespace && self.opts.lowercase {
            self.push_runs(s);
        } else {
            for c in s.chars() {
                self.push_char(c);
            }
        }
    }

    /// Appends `s`, which holds no white space and nothing the steps change, the script step
    /// included (as [`nfkc_each`](super::nfkc::nfkc_each) marks its clean pieces): copied as
    /// it is.
    pub(crate) fn push_clean(&mut self, s: &str) {
        self.flush_space();
        self.out.push_str(s);
    }

    /// The folded text, and where its line breaks were ([`Folder::track_breaks`]; else none).
    /// A break at the end of the text (trailing white space) is left out.
    pub(crate) fn finish_with_breaks(self) -> (String, Vec<usize>) {
        let mut breaks = self.breaks.unwrap_or_default();
        while breaks.last().is_some_and(|&b| b >= self.out.len()) {
            breaks.pop();
        }
        (self.out, breaks)
    }

    /// [`Folder::push`] for the default options: verbatim runs are copied whole.
    fn push_runs(&mut self, s: &str) {
        let b = s.as_bytes();
        let mut run = 0; // start of the verbatim run not yet copied
        let mut i = 0;
        while i < b.len() {
            let x = b[i];
            if !self.pending_space {
                // Runs of ASCII that is neither a capital nor white space, and of U+3001..=U+9FFF
                // (E3 80 81 ..= E9 BF BF), a byte comparison each.
                let start = i;
                loop {
                    match b.get(i) {
                        Some(&y)
                            if y < 0x80 && !y.is_ascii_uppercase() && !y.is_ascii_whitespace() =>
                        {
                            i += 1
                        }
                        Some(&y)
                            if y.wrapping_sub(0xE4) < 6
                                || (y == 0xE3 && (b[i + 1] != 0x80 || b[i + 2] != 0x80)) =>
                        {
                            if self.fold.is_some_and(|f| f.folds_direct(code3(b, i))) {
                                break;
                            }
                            i += 3
                        }
                        _ => break,
                    }
                }
                if i > start {
                    continue;
                }
            }
            let verbatim = if x < 0x80 {
                if x == b' ' {
                    // A single space after written text and before an ASCII character that is
                    // not white space is written as it is.
                    !self.pending_space
                        && (i > run || !self.out.is_empty())
                        && b.get(i + 1)
                            .is_some_and(|&y| y < 0x80 && !y.is_ascii_whitespace())
                } else {
                    !x.is_ascii_uppercase() && !x.is_ascii_whitespace()
                }
            } else if (0xE2..=0xE9).contains(&x) {
                // A three-byte sequence: U+2000..U+9FFF.
                let c = code3(b, i);
                if is_unchanged_bmp(c) && !self.fold.is_some_and(|f| f.folds_direct(c)) {
                    if self.pending_space {
                        self.out.push(' ');
                        self.pending_space = false;
                    }
                    i += 3;
                    continue;
                }
                false
            } else {
                false
            };
            if verbatim {
                if self.pending_space {
                    self.out.push(' ');
                    self.pending_space = false;
                }
                i += 1;
                continue;
            }
            self.out.push_str(&s[run..i]);
            let c = s[i..].chars().next().expect("a character starts here");
            self.push_char(c);
            i += c.len_utf8();
            run = i;
        }
        self.out.push_str(&s[run..]);
    }

    /// The general steps for one character: the definition the fast path keeps to.
    fn push_char(&mut self, c: char) {
        let opts = self.opts;
        if c.is_ascii() && opts.whitespace && opts.lowercase {
            if c.is_ascii_whitespace() {
                self.line_break(c);
                self.pending_space = !self.out.is_empty();
                return;
            }
            self.flush_space();
            self.out.push(c.to_ascii_lowercase());
            return;
        }
        if is_unchanged_bmp(c as u32) {
            self.flush_space();
            self.out.push(self.script(c));
            return;
        }
        let c = if opts.width { to_half_width(c) } else { c };
        if opts.whitespace && c.is_whitespace() {
            self.line_break(c);
            self.pending_space = !self.out.is_empty();
            return;
        }
        self.line_break(c);
        self.flush_space();
        if opts.lowercase {
            if c.is_ascii() {
                self.out.push(c.to_ascii_lowercase());
            } else {
                for l in c.to_lowercase() {
                    let l = self.script(l);
                    self.out.push(l);
                }
            }
        } else {
            self.out.push(self.script(c));
        }
    }

    /// The script step for one character.
    #[inline]
    fn script(&self, c: char) -> char {
        match self.fold {
            Some(f) => f.fold(c),
            None => c,
        }
    }

    #[inline]
    fn flush_space(&mut self) {
        if self.pending_space {
            self.out.push(' ');
            self.pending_space = false;
        }
    }
}

/// The code point of the three-byte UTF-8 sequence at `b[i..]`.
#[inline]
fn code3(b: &[u8], i: usize) -> u32 {
    (u32::from(b[i] & 0x0F) << 12) | (u32::from(b[i + 1] & 0x3F) << 6) | u32::from(b[i + 2] & 0x3F)
}

/// General punctuation (but its spaces and separators), CJK symbols, kana and ideographs: no
/// case, not white space, not a full-width form, so every step leaves them as they are.
#[inline]
pub(crate) fn is_unchanged_bmp(c: u32) -> bool {
    matches!(c, 0x2010..=0x2027 | 0x2030..=0x205E | 0x3001..=0x9FFF)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The per-character definition, one character at a time.
    fn reference(opts: &NormalizeOptions, pieces: &[String]) -> String {
        let mut f = Folder::new(opts, 0);
        for c in pieces.iter().flat_map(|p| p.chars()) {
            f.push_char(c);
        }
        f.finish_with_breaks().0
    }

    /// Every character the fast path copies is one the general steps leave as it is.
    #[test]
    fn unchanged_ranges_are_unchanged_by_the_general_steps() {
        let fast = (0x2010..=0x2027u32)
            .chain(0x2030..=0x205E)
            .chain(0x3001..=0x9FFF);
        for c in fast.filter_map(char::from_u32) {
            assert!(!c.is_whitespace(), "{c:?}");
            assert_eq!(to_half_width(c), c, "{c:?}");
            assert!(c.to_lowercase().eq(std::iter::once(c)), "{c:?}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1000))]
        /// Run copying, in pieces cut anywhere, equals the per-character definition under every
        /// combination of options.
        #[test]
        fn runs_equal_the_definition(
            v in proptest::collection::vec(proptest::sample::select(vec![
                'a', 'Z', ' ', ' ', '\t', '\n', '\u{0B}', '\r', '1', '.', '中', '文', '，', '。', 'Ａ', 'ｚ',
                '\u{3000}', '\u{00A0}', '\u{2028}', '\u{2009}', '\u{2010}', '\u{2027}', '\u{2030}',
                '\u{205F}', '\u{2000}', 'É', 'ß', 'İ', 'Σ', '😀', '─', 'か', '\u{9FFF}', '\u{A000}',
                '國', '體', '後', '㑯', '𠁞',
            ]), 0..60),
            cuts in proptest::collection::vec(0usize..60, 0..4),
            width in proptest::bool::ANY, lowercase in proptest::bool::ANY, whitespace in proptest::bool::ANY,
            fold_traditional in proptest::bool::ANY,
        ) {
            let opts = NormalizeOptions {
                width, lowercase, whitespace, fold_traditional, ..NormalizeOptions::default()
            };
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(v.len())).collect();
            cuts.sort_unstable();
            let mut pieces = Vec::new();
            let mut at = 0;
            for c in cuts.into_iter().chain([v.len()]) {
                pieces.push(v[at..c].iter().collect::<String>());
                at = c;
            }
            let mut f = Folder::new(&opts, 0);
            for p in &pieces {
                f.push(p);
            }
            proptest::prop_assert_eq!(f.finish_with_breaks().0, reference(&opts, &pieces));
        }
    }
}
