//! Text normalisation: HTML to visible text, Unicode NFKC, full-width to half-width, case
//! folding and white-space collapsing.
//!
//! Normalisation runs before feature extraction so that copies that differ only in encoding
//! details (markup, `ＡＢＣ` vs `ABC`, `Ｈｅｌｌｏ` vs `hello`, runs of spaces) produce the same
//! features. Every step can be switched off; the defaults are chosen for web pages.
//!
//! The steps run in this fixed order (it is part of the fingerprint spec, `docs/fingerprint-spec.md`):
//!
//! 1. **HTML** ([`HtmlMode`]): markup to visible text (see [`html_to_text`]).
//! 2. **NFKC** (Unicode compatibility composition; this already maps full-width ASCII to ASCII).
//! 3. **Width**: U+FF01..U+FF5E to U+0021..U+007E and U+3000 to a space (only matters when NFKC
//!    is off).
//! 4. **Lower case** (`char::to_lowercase`, full Unicode mapping).
//! 5. **White space**: every run of Unicode white space becomes one space; leading and trailing
//!    white space is removed.
//! 6. **Script** ([`NormalizeOptions::fold_traditional`]): Traditional Chinese characters to
//!    their Simplified forms ([`fold_char`](super::script::fold_char)).
//!
//! ```
//! use neardup::normalize::{Normalizer, NormalizeOptions};
//! let n = Normalizer::new(NormalizeOptions::default());
//! assert_eq!(n.normalize("<p>Ｈｅｌｌｏ,&nbsp;&nbsp; <b>World</b></p><script>x()</script>"), "hello, world");
//! assert_eq!(n.normalize("臺灣的天氣"), n.normalize("台湾的天气"));
//! ```

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::fold::Folder;
pub use super::html::{html_to_text, html_to_text_with, looks_like_html};
pub use super::nfkc::nfkc;
use super::nfkc::nfkc_each;

/// When to treat input as HTML.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum HtmlMode {
    /// Treat the input as HTML when it looks like markup: it contains `<` directly followed by
    /// an ASCII letter, `/` or `!`, and later a `>` (see [`looks_like_html`]).
    #[default]
    Auto,
    /// Always parse the input as HTML.
    Always,
    /// Never: the input is plain text (a literal `<b>` stays in the text).
    Never,
}

/// Which normalisation steps run. Part of the fingerprint configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NormalizeOptions {
    /// HTML to text.
    pub html: HtmlMode,
    /// For HTML: keep only the main content (drop navigation, headers, footers, sidebars, link
    /// lists; prefer the marked article), so that the same article in two sites' templates
    /// yields the same text.
    pub main_content: bool,
    /// Unicode NFKC.
    pub nfkc: bool,
    /// Full-width ASCII forms and the ideographic space to their half-width forms.
    pub width: bool,
    /// Lower case.
    pub lowercase: bool,
    /// Collapse runs of white space to one space and trim.
    pub whitespace: bool,
    /// Traditional Chinese characters to their Simplified forms, a character at a time
    /// ([`crate::text::script`]), so that a text and its copy in the other script are one
    /// text. On by default. Off, it is not written (a configuration recorded without this
    /// key was made without the step, and reads as off), so a configuration without the step
    /// has the descriptor and `config_id` it had before the step existed.
    #[serde(default, skip_serializing_if = "is_false")]
    pub fold_traditional: bool,
}

impl Default for NormalizeOptions {
    fn default() -> Self {
        NormalizeOptions {
            html: HtmlMode::Auto,
            main_content: true,
            nfkc: true,
            width: true,
            lowercase: true,
            whitespace: true,
            fold_traditional: true,
        }
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Texts longer than this (bytes) are not remembered by [`Normalizer::normalize_remembered`].
pub const MEMO_MAX_BYTES: usize = 4 << 20;

/// The last remembered normalisation of a thread: options, input, output, its line breaks.
type Memo = Option<(NormalizeOptions, String, String, Vec<usize>)>;

/// The last HTML page of a thread turned into text: HTML options, input, visible text.
type TextMemo = Option<(HtmlMode, bool, String, Arc<str>)>;

thread_local! {
    static MEMO: std::cell::RefCell<Memo> = const { std::cell::RefCell::new(None) };
    static TEXT_MEMO: std::cell::RefCell<TextMemo> = const { std::cell::RefCell::new(None) };
}

/// A document's text before the steps after HTML ([`Normalizer::text_of`]): the input itself,
/// or the visible text of an HTML page.
#[derive(Debug, Clone)]
pub enum TextOf<'a> {
    /// Not HTML (or HTML off): the input.
    Same(&'a str),
    /// The visible text of an HTML page ([`html_to_text_with`]), one block a line.
    Extracted(Arc<str>),
}

impl std::ops::Deref for TextOf<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        match self {
            TextOf::Same(s) => s,
            TextOf::Extracted(s) => s,
        }
    }
}

/// Applies [`NormalizeOptions`] to text.
#[derive(Debug, Clone)]
pub struct Normalizer {
    opts: NormalizeOptions,
}

impl Normalizer {
    /// A normaliser with the given options.
    pub fn new(opts: NormalizeOptions) -> Self {
        Normalizer { opts }
    }

    /// The options in force.
    pub fn options(&self) -> &NormalizeOptions {
        &self.opts
    }

    /// [`Normalizer::normalize`], remembering the thread's last result: a second call with the
    /// same text (and options) costs a comparison and a copy instead of a normalisation. For
    /// detectors that wrap others and normalise the same document again (the template veto
    /// around `auto`); texts over [`MEMO_MAX_BYTES`] are not remembered. The result is always
    /// that of [`Normalizer::normalize`].
    pub fn normalize_remembered(&self, text: &str) -> String {
        self.remembered(text, false).0
    }

    /// [`Normalizer::normalize_with_breaks`], remembered as [`Normalizer::normalize_remembered`]
    /// remembers (the two share the thread's memo).
    pub fn normalize_remembered_with_breaks(&self, text: &str) -> (String, Vec<usize>) {
        self.remembered(text, true)
    }

    /// The remembered normalisation of `text`, and its breaks when `breaks`.
    fn remembered(&self, text: &str, breaks: bool) -> (String, Vec<usize>) {
        if text.len() > MEMO_MAX_BYTES {
            return self.normalize_tracked(text, breaks, false);
        }
        let hit = MEMO.with(|m| match &*m.borrow() {
            Some((o, input, out, b)) if input == text && *o == self.opts => {
                Some((out.clone(), if breaks { b.clone() } else { Vec::new() }))
            }
            _ => None,
        });
        if let Some(hit) = hit {
            return hit;
        }
        // The breaks are always tracked for the memo: a push per line break.
        let (out, b) = self.normalize_tracked(text, true, true);
        MEMO.with(|m| {
            let mut m = m.borrow_mut();
            match &mut *m {
                Some((o, input, memo, mb)) => {
                    o.clone_from(&self.opts);
                    input.clear();
                    input.push_str(text);
                    memo.clear();
                    memo.push_str(&out);
                    mb.clone_from(&b);
                }
                None => *m = Some((self.opts.clone(), text.to_owned(), out.clone(), b.clone())),
            }
        });
        (out, if breaks { b } else { Vec::new() })
    }

    /// Normalises `text`, and says where it had line breaks: the byte offsets in the result at
    /// which a run of white space holding a line break (`\n`, `\r`, U+0085, U+2028, U+2029;
    /// with HTML, between blocks) was folded away or into one space, ascending, without
    /// repeats. The text is [`Normalizer::normalize`]'s. With `whitespace` off, line breaks stay
    /// in the text and are reported all the same.
    pub fn normalize_with_breaks(&self, text: &str) -> (String, Vec<usize>) {
        self.normalize_tracked(text, true, false)
    }

    /// Normalises `text`, returning a new string.
    pub fn normalize(&self, text: &str) -> String {
        self.normalize_tracked(text, false, false).0
    }

    /// Whether `text` is read as HTML ([`NormalizeOptions::html`]).
    pub fn is_html(&self, text: &str) -> bool {
        match self.opts.html {
            HtmlMode::Always => true,
            HtmlMode::Never => false,
            HtmlMode::Auto => looks_like_html(text),
        }
    }

    /// The first step alone: `text` itself, or for HTML its visible text, one block a line
    /// ([`html_to_text_with`], with [`NormalizeOptions::main_content`]) — the text whose
    /// lines the other steps fold. The thread's last page is remembered (and shared with
    /// [`normalize`](Self::normalize)), so asking again for the same page, or normalising it
    /// after, does not parse it twice.
    pub fn text_of<'a>(&self, text: &'a str) -> TextOf<'a> {
        if !self.is_html(text) {
            return TextOf::Same(text);
        }
        TextOf::Extracted(self.extracted(text, true))
    }

    /// Remembers on this thread that HTML `text`'s visible text is `visible` (what
    /// [`text_of`](Self::text_of) gave for it, on any thread), so that the next
    /// [`text_of`](Self::text_of) or normalisation of `text` here does not parse it again:
    /// for callers that read a batch's lines on some threads and sketch it on others.
    pub(crate) fn remember_text(&self, text: &str, visible: Arc<str>) {
        if text.len() <= MEMO_MAX_BYTES {
            self.keep_text(text, visible);
        }
    }

    fn keep_text(&self, text: &str, out: Arc<str>) {
        let (mode, main) = (self.opts.html, self.opts.main_content);
        TEXT_MEMO.with(|m| {
            let mut m = m.borrow_mut();
            match &mut *m {
                Some((h, mc, input, o)) => {
                    (*h, *mc) = (mode, main);
                    input.clear();
                    input.push_str(text);
                    *o = out;
                }
                None => *m = Some((mode, main, text.to_owned(), out)),
            }
        });
    }

    /// The visible text of HTML `text`, from the thread's memo when it is the last page; kept
    /// there when `keep` (a document's whole text, not a piece of one: the piece would push
    /// out the page the caller reads again).
    fn extracted(&self, text: &str, keep: bool) -> Arc<str> {
        let (mode, main) = (self.opts.html, self.opts.main_content);
        let hit = TEXT_MEMO.with(|m| match &*m.borrow() {
            Some((h, mc, input, out)) if *h == mode && *mc == main && input == text => {
                Some(out.clone())
            }
            _ => None,
        });
        if let Some(hit) = hit {
            return hit;
        }
        let out: Arc<str> = html_to_text_with(text, main).into();
        if keep && text.len() <= MEMO_MAX_BYTES {
            self.keep_text(text, out.clone());
        }
        out
    }

    /// [`Normalizer::normalize`], with its line breaks when `breaks` (else none); an HTML
    /// page's visible text kept in the thread's memo when `keep`.
    fn normalize_tracked(&self, text: &str, breaks: bool, keep: bool) -> (String, Vec<usize>) {
        // Intermediate copies are dropped as soon as the next step has consumed them, so a
        // huge document needs at most the input plus two copies at any time.
        let owned = self.is_html(text).then(|| self.extracted(text, keep));
        let s: &str = owned.as_deref().unwrap_or(text);
        // The steps after NFKC (width, case, white space, script) fold what NFKC writes, piece
        // by piece.
        let mut f = Folder::new(&self.opts, s.len());
        if breaks {
            f.track_breaks();
        }
        if self.opts.nfkc {
            nfkc_each(s, self.opts.fold_traditional, &mut |piece, clean| {
                if clean {
                    f.push_clean(piece)
                } else {
                    f.push(piece)
                }
            });
        } else {
            f.push(s);
        }
        f.finish_with_breaks()
    }
}

/// Maps full-width ASCII variants (U+FF01..=U+FF5E) to ASCII and U+3000 to a space.
#[inline]
pub fn to_half_width(c: char) -> char {
    match c as u32 {
        0xFF01..=0xFF5E => char::from_u32(c as u32 - 0xFEE0).unwrap_or(c),
        0x3000 => ' ',
        _ => c,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn width_case_and_space() {
        let n = Normalizer::new(NormalizeOptions {
            nfkc: false,
            ..Default::default()
        });
        assert_eq!(n.normalize("  ＡＢＣ\u{3000}ｄｅｆ \t\n x  "), "abc def x");
        let n = Normalizer::new(NormalizeOptions::default());
        assert_eq!(n.normalize("ＡＢＣ１２３，中文"), "abc123,中文");
    }

    /// [`Normalizer::text_of`] and normalising share the thread's last page: in either order,
    /// with another page or other options in between, each gives what it gives alone.
    #[test]
    fn text_of_and_normalize_share_the_last_page() {
        let n = Normalizer::new(NormalizeOptions::default());
        let a = "<html><body><nav><a href=/>Home</a> <a href=/n>News</a></nav>\
                 <p>第一段 Alpha</p><p>Second &amp; last</p></body></html>";
        let b = "<html><body><div>another page</div></body></html>";
        let (text_a, norm_a) = (html_to_text_with(a, true), n.normalize(a));
        let whole = Normalizer::new(NormalizeOptions {
            main_content: false,
            ..Default::default()
        });
        for _ in 0..2 {
            assert_eq!(&*n.text_of(a), text_a);
            assert_eq!(n.normalize(a), norm_a);
            assert_eq!(&*whole.text_of(a), html_to_text_with(a, false));
            assert_eq!(&*n.text_of(a), text_a);
            assert_eq!(&*n.text_of(b), html_to_text_with(b, true));
            assert_eq!(n.normalize(a), norm_a);
        }
        assert!(
            text_a.contains("第一段 Alpha\n") && !text_a.contains("Home"),
            "{text_a:?}"
        );
        assert!(matches!(n.text_of("a < b and c > d"), TextOf::Same(_)));
        let never = Normalizer::new(NormalizeOptions {
            html: HtmlMode::Never,
            ..Default::default()
        });
        assert!(matches!(never.text_of(a), TextOf::Same(t) if t == a));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// The per-thread memo never changes a result: texts normalised in any order, repeated,
        /// under two configurations, equal the plain normalisation.
        #[test]
        fn memo_is_transparent(picks in proptest::collection::vec((0usize..4, proptest::bool::ANY), 1..24)) {
            let base = "ＡＢＣ１２３，中文 Text <b>bold</b> ﬁ① ".repeat(20);
            let texts = [
                base.clone(),
                format!("{base}x"),
                format!("<p>{base}</p>"),
                base.replace('中', "\u{3000}"),
            ];
            let plain = Normalizer::new(NormalizeOptions::default());
            let other = Normalizer::new(NormalizeOptions {
                lowercase: false,
                html: HtmlMode::Always,
                ..NormalizeOptions::default()
            });
            for (i, alt) in picks {
                let n = if alt { &other } else { &plain };
                proptest::prop_assert_eq!(n.normalize_remembered(&texts[i]), n.normalize(&texts[i]));
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1000))]
        /// NFKC and the steps after it, fused (clean pieces copied without a second look, the
        /// script step skipped when NFKC's pass saw no Traditional character), equal the full
        /// NFKC algorithm followed by the steps and the per-character fold, under every
        /// combination of the steps' options. Traditional characters come as ideographs, in
        /// Extension A, in a supplementary plane, as a compatibility ideograph NFKC maps to one
        /// (U+F91D → 欄), and before a combining mark (NFKC's slow path).
        #[test]
        fn fused_steps_equal_nfkc_then_fold(
            v in proptest::collection::vec(proptest::sample::select(vec![
                'a', 'Z', ' ', '\t', '\n', '1', ',', '中', '文', '一', '\u{4DFF}', '，', '。', '“', '、',
                'Ａ', 'ｚ', '１', '\u{3000}', '\u{00A0}', '…', '\u{0301}', 'é', 'É', 'ﬁ', '①', '㍿',
                'か', '\u{3099}', 'ｶ', 'ﾞ', 'Σ', 'İ', '😀', '─', '\u{2028}', '\u{2010}', '\u{FF5E}',
                '國', '體', '後', '㑯', '𠁞', '\u{F91D}', '欄', '栏',
            ]), 0..50),
            width in proptest::bool::ANY, lowercase in proptest::bool::ANY, whitespace in proptest::bool::ANY,
            fold_traditional in proptest::bool::ANY, nfkc in proptest::bool::ANY,
        ) {
            use unicode_normalization::UnicodeNormalization;
            let opts = NormalizeOptions {
                html: HtmlMode::Never, width, lowercase, whitespace, fold_traditional, nfkc,
                ..NormalizeOptions::default()
            };
            let s: String = v.into_iter().collect();
            let full: String = if nfkc { s.nfkc().collect() } else { s.clone() };
            let mut f = Folder::new(&opts, 0);
            f.push(&full);
            let mut want = f.finish_with_breaks().0;
            if fold_traditional {
                want = want.chars().map(crate::text::script::fold_char).collect();
            }
            proptest::prop_assert_eq!(Normalizer::new(opts.clone()).normalize(&s), want);
        }
    }
}
