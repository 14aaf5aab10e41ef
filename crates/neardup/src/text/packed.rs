//! Character n-grams: a text's letters and digits packed back to back ([`PackedChars`]), so
//! that every n-gram is a slice of one buffer, and [`chars_each`], which cuts long texts a
//! piece at a time. Re-exported from [`crate::features`].

use super::features::{is_word_char, method_of, Method, ScriptCounts};

/// Calls `f` with the UTF-8 bytes of every character n-gram (letters and digits only), in
/// order; a text with fewer than `n` of them is one n-gram of all of them. Texts longer than
/// [`PACK_PIECE`] bytes are packed a piece at a time, so memory stays bounded.
pub fn chars_each<F: FnMut(&[u8])>(text: &str, n: usize, mut f: F) {
    if n == 0 {
        return;
    }
    if text.len() <= PACK_PIECE {
        return PackedChars::new(text).ngrams_each(n, f);
    }
    let mut p = PackedChars::default();
    let mut seen = 0usize;
    let mut rest = text;
    while !rest.is_empty() {
        let mut cut = PACK_PIECE.min(rest.len());
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        let (piece, tail) = rest.split_at(cut);
        rest = tail;
        let before = p.len();
        p.push_str(piece);
        seen += p.len() - before;
        // Every window of the buffer is new: at most n − 1 characters were kept from before.
        if p.len() >= n {
            for w in p.starts.windows(n + 1) {
                f(&p.kept[w[0] as usize..w[n] as usize]);
            }
        }
        p.keep_last(n - 1);
    }
    if seen > 0 && seen < n {
        f(&p.kept);
    }
}

/// Whether a UTF-8 lead byte `b0`, followed by `b1`, starts a character of U+4E00..=U+9FFF,
/// the CJK Unified Ideographs (`E4 B8 80` ..= `E9 BF BF`), all of them Han letters.
#[inline(always)]
pub(crate) fn is_ideograph_lead(b0: u8, b1: u8) -> bool {
    (0xE5..=0xE9).contains(&b0) || (b0 == 0xE4 && b1 >= 0xB8)
}

/// The longest character n-gram [`char_codes_each`] packs: six 21-bit code points fill 126
/// of 128 bits.
pub const MAX_CODES: usize = 6;

/// Calls `f` with every character n-gram of `text` (letters and digits only, as
/// [`chars_each`]) as its code points packed into one integer, 21 bits each, the first
/// highest: `Σ cp_j · 2^(21·(k−1−j))` over the n-gram's `k` characters. A text with fewer than
/// `n` of them is one n-gram of all of them. No code point is 0, so the packing is injective
/// for `n` ≤ [`MAX_CODES`]. One pass, no buffer; returns the method `auto` picks for the text
/// ([`detect_method`](crate::features::detect_method)), counted on the way.
///
/// ```
/// use neardup::features::char_codes_each;
/// let mut grams = Vec::new();
/// char_codes_each("你好，世界!", 3, |g| grams.push(g));
/// let cp = |c: char| c as u128;
/// assert_eq!(grams, [
///     cp('你') << 42 | cp('好') << 21 | cp('世'),
///     cp('好') << 42 | cp('世') << 21 | cp('界'),
/// ]);
/// ```
///
/// # Panics
/// When `n` is 0 or above [`MAX_CODES`].
pub fn char_codes_each<F: FnMut(u128)>(text: &str, n: usize, f: F) -> Method {
    char_codes_scan(text, n, f).0
}

/// [`char_codes_each`], also returning the share of the letters and digits in Han or another
/// spaceless script (`None` without any; [`spaceless_share`](crate::features::spaceless_share)).
pub(crate) fn char_codes_scan<F: FnMut(u128)>(
    text: &str,
    n: usize,
    mut f: F,
) -> (Method, Option<f64>) {
    assert!(
        (1..=MAX_CODES).contains(&n),
        "n = {n}: 1 to {MAX_CODES} code points"
    );
    let mask: u128 = (1u128 << (21 * n)) - 1;
    let bytes = text.as_bytes();
    let (mut i, mut window, mut count) = (0usize, 0u128, 0usize);
    let mut scripts = ScriptCounts::default();
    while let Some(&b) = bytes.get(i) {
        let cp = if b < 0x80 {
            i += 1;
            if !b.is_ascii_alphanumeric() {
                continue;
            }
            b as u32
        } else {
            // Fast path, as `PackedChars`: U+4E00–U+9FFF, all Han letters.
            match bytes.get(i..i + 3).and_then(|c| c.first_chunk()) {
                Some(&[b0, b1, b2]) if is_ideograph_lead(b0, b1) => {
                    i += 3;
                    scripts.han += 1;
                    (b0 as u32 & 0x0F) << 12 | (b1 as u32 & 0x3F) << 6 | (b2 as u32 & 0x3F)
                }
                _ => {
                    let c = text[i..]
                        .chars()
                        .next()
                        .unwrap_or(char::REPLACEMENT_CHARACTER);
                    i += c.len_utf8();
                    if !is_word_char(c) {
                        continue;
                    }
                    scripts.add(c);
                    c as u32
                }
            }
        };
        window = (window << 21 | cp as u128) & mask;
        count += 1;
        if count >= n {
            f(window);
        }
    }
    if count > 0 && count < n {
        f(window);
    }
    (method_of(count, scripts), scripts.spaceless_share(count))
}

/// The piece size, in bytes, past which [`chars_each`] packs a text a piece at a time.
pub const PACK_PIECE: usize = 64 << 10;

/// A text's letters and digits packed back to back, with the counts [`detect_method`](crate::features::detect_method) decides
/// on, from one pass over the text.
///
/// Every character n-gram is a slice of the packed bytes: one copy of each character instead
/// of `n` (a punctuation mark inside a window does not force the window to be assembled).
///
/// ```
/// use neardup::features::{detect_method, PackedChars};
/// let p = PackedChars::new("你好，世界! ok");
/// assert_eq!(p.method(), detect_method("你好，世界! ok"));
/// let mut grams = Vec::new();
/// p.ngrams_each(3, |g| grams.push(String::from_utf8(g.to_vec()).unwrap()));
/// assert_eq!(grams, ["你好世", "好世界", "世界o", "界ok"]);
/// ```
#[derive(Debug, Default)]
pub struct PackedChars {
    kept: Vec<u8>,
    /// Offset in `kept` of each kept character, then of the end.
    starts: Vec<u32>,
    scripts: ScriptCounts,
}

impl PackedChars {
    /// Packs the letters and digits of `text` (offsets are 32-bit: up to 4 GiB of them;
    /// [`chars_each`] packs long texts a piece at a time).
    pub fn new(text: &str) -> PackedChars {
        let mut p = PackedChars::default();
        p.push_str(text);
        p
    }

    /// Packs the letters and digits of `text` after those already packed.
    fn push_str(&mut self, text: &str) {
        // Locals, not fields, in the loop: the compiler keeps lengths and counts in registers.
        let mut kept = std::mem::take(&mut self.kept);
        let mut starts = std::mem::take(&mut self.starts);
        let mut scripts = self.scripts;
        // The end entry is pushed back after the new characters.
        starts.pop();
        kept.reserve(text.len());
        starts.reserve(text.len() / 2 + 2);
        let bytes = text.as_bytes();
        let mut i = 0;
        while let Some(&b) = bytes.get(i) {
            if b < 0x80 {
                if b.is_ascii_alphanumeric() {
                    starts.push(kept.len() as u32);
                    kept.push(b);
                }
                i += 1;
                continue;
            }
            // Fast path: lead bytes E5–E9, and E4 followed by B8–BF, encode U+4E00–U+9FFF,
            // all Han letters.
            if let Some(&[b0, b1, b2]) = bytes.get(i..i + 3).and_then(|c| c.first_chunk()) {
                if is_ideograph_lead(b0, b1) {
                    starts.push(kept.len() as u32);
                    kept.extend_from_slice(&[b0, b1, b2]);
                    scripts.han += 1;
                    i += 3;
                    continue;
                }
            }
            // `text` is UTF-8: decode the character starting at `i` from its lead byte.
            let (len, lead) = match b {
                0xC0..=0xDF => (2, (b & 0x1F) as u32),
                0xE0..=0xEF => (3, (b & 0x0F) as u32),
                _ => (4, (b & 0x07) as u32),
            };
            let Some(tail) = bytes.get(i + 1..i + len) else {
                break;
            };
            let cp = tail.iter().fold(lead, |cp, &t| cp << 6 | (t & 0x3F) as u32);
            let c = char::from_u32(cp).unwrap_or(char::REPLACEMENT_CHARACTER);
            if is_word_char(c) {
                starts.push(kept.len() as u32);
                kept.extend_from_slice(&bytes[i..i + len]);
                scripts.add(c);
            }
            i += len;
        }
        starts.push(kept.len() as u32);
        self.kept = kept;
        self.starts = starts;
        self.scripts = scripts;
    }

    /// Drops all but the last `k` packed characters (the script counts stay).
    fn keep_last(&mut self, k: usize) {
        let count = self.len();
        if count <= k {
            return;
        }
        let from = self.starts[count - k];
        self.kept.drain(..from as usize);
        self.starts.drain(..count - k);
        for s in &mut self.starts {
            *s -= from;
        }
    }

    /// Number of letters and digits.
    pub fn len(&self) -> usize {
        self.starts.len().saturating_sub(1)
    }

    /// Whether the text has no letter or digit.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The method `auto` picks for the text: [`detect_method`](crate::features::detect_method) of it.
    pub fn method(&self) -> Method {
        method_of(self.len(), self.scripts)
    }

    /// Calls `f` with the UTF-8 bytes of every character n-gram, as [`chars_each`].
    pub fn ngrams_each<F: FnMut(&[u8])>(&self, n: usize, mut f: F) {
        let count = self.len();
        if n == 0 || count == 0 {
            return;
        }
        if count < n {
            f(&self.kept);
            return;
        }
        for w in self.starts.windows(n + 1) {
            f(&self.kept[w[0] as usize..w[n] as usize]);
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::features::detect_method;

    /// The n-grams `each` yields, as strings (also used by the word n-gram tests).
    pub(crate) fn collect(each: impl FnOnce(&mut dyn FnMut(&[u8]))) -> Vec<String> {
        let mut v = Vec::new();
        each(&mut |g: &[u8]| v.push(String::from_utf8(g.to_vec()).unwrap()));
        v
    }

    #[test]
    fn char_ngrams_skip_punctuation() {
        assert_eq!(
            collect(|f| chars_each("你好，世界!", 3, f)),
            ["你好世", "好世界"]
        );
        assert_eq!(collect(|f| chars_each("ab", 3, f)), ["ab"]);
        assert!(collect(|f| chars_each("，。 !", 3, f)).is_empty());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]
        /// Packed n-grams equal the naive definition: windows of n kept characters; texts
        /// longer than a piece (the repeat) are cut a piece at a time with the same result.
        #[test]
        fn chars_each_equals_naive(v in proptest::collection::vec(proptest::sample::select(vec!['a', '中', '文', ' ', '，', 'é', '1', '-', '😀', 'ß']), 0..40), n in 1usize..6, repeat in proptest::prop_oneof![proptest::strategy::Just(1usize), 1usize..8000]) {
            let s: String = v.into_iter().collect::<String>().repeat(repeat);
            let kept: Vec<char> = s.chars().filter(|&c| is_word_char(c)).collect();
            let naive: Vec<String> = if kept.is_empty() {
                vec![]
            } else if kept.len() <= n {
                vec![kept.iter().collect()]
            } else {
                kept.windows(n).map(|w| w.iter().collect()).collect()
            };
            // (`kept.len() == n` gives one window either way.)
            proptest::prop_assert_eq!(collect(|f| chars_each(&s, n, f)), naive.clone());
            proptest::prop_assert_eq!(PackedChars::new(&s).method(), detect_method(&s));
            // The same n-grams as code points, and the same method.
            let mut codes = Vec::new();
            let method = char_codes_each(&s, n, |g| codes.push(g));
            let packed: Vec<u128> = naive
                .iter()
                .map(|g| g.chars().fold(0u128, |h, c| h << 21 | c as u128))
                .collect();
            proptest::prop_assert_eq!(codes, packed);
            proptest::prop_assert_eq!(method, detect_method(&s));
        }
    }
}
