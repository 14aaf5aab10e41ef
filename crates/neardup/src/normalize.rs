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
//!
//! ```
//! use neardup::normalize::{Normalizer, NormalizeOptions};
//! let n = Normalizer::new(NormalizeOptions::default());
//! assert_eq!(n.normalize("<p>Ｈｅｌｌｏ,&nbsp;&nbsp; <b>World</b></p><script>x()</script>"), "hello, world");
//! ```

use serde::{Deserialize, Serialize};
use unicode_normalization::{is_nfkc_quick, IsNormalized, UnicodeNormalization};

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
    /// Unicode NFKC.
    pub nfkc: bool,
    /// Full-width ASCII forms and the ideographic space to their half-width forms.
    pub width: bool,
    /// Lower case.
    pub lowercase: bool,
    /// Collapse runs of white space to one space and trim.
    pub whitespace: bool,
}

impl Default for NormalizeOptions {
    fn default() -> Self {
        NormalizeOptions {
            html: HtmlMode::Auto,
            nfkc: true,
            width: true,
            lowercase: true,
            whitespace: true,
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

    /// Normalises `text`, returning a new string.
    pub fn normalize(&self, text: &str) -> String {
        let is_html = match self.opts.html {
            HtmlMode::Always => true,
            HtmlMode::Never => false,
            HtmlMode::Auto => looks_like_html(text),
        };
        // Intermediate copies are dropped as soon as the next step has consumed them, so a
        // huge document needs at most the input plus two copies at any time.
        let mut owned: Option<String> = is_html.then(|| html_to_text(text));
        if self.opts.nfkc {
            if let Some(t) = nfkc(owned.as_deref().unwrap_or(text)) {
                owned = Some(t);
            }
        }
        let s: &str = owned.as_deref().unwrap_or(text);
        let mut out = String::with_capacity(s.len());
        let mut pending_space = false;
        for c in s.chars() {
            if c.is_ascii() && self.opts.whitespace && self.opts.lowercase {
                // Fast path for ASCII (the common case in every script's text).
                if c.is_ascii_whitespace() {
                    pending_space = !out.is_empty();
                    continue;
                }
                if pending_space {
                    out.push(' ');
                    pending_space = false;
                }
                out.push(c.to_ascii_lowercase());
                continue;
            }
            if matches!(c as u32, 0x3001..=0x9FFF) {
                // CJK symbols, kana and ideographs: no case, not white space, not full-width ASCII.
                if pending_space {
                    out.push(' ');
                    pending_space = false;
                }
                out.push(c);
                continue;
            }
            let c = if self.opts.width { to_half_width(c) } else { c };
            if self.opts.whitespace && c.is_whitespace() {
                pending_space = !out.is_empty();
                continue;
            }
            if pending_space {
                out.push(' ');
                pending_space = false;
            }
            if self.opts.lowercase {
                if c.is_ascii() {
                    out.push(c.to_ascii_lowercase());
                } else {
                    out.extend(c.to_lowercase());
                }
            } else {
                out.push(c);
            }
        }
        out
    }
}

/// A character that is unchanged by NFKC and starts a normalisation segment (canonical combining
/// class 0 and NFKC_Quick_Check = Yes): ASCII and the CJK Unified Ideographs block. Text between
/// two such characters can be normalised independently (UAX #15, "boundaries").
#[inline]
fn is_stable_boundary(c: char) -> bool {
    c.is_ascii() || matches!(c as u32, 0x4E00..=0x9FFF)
}

/// NFKC of `s`, or `None` when `s` is already in NFKC. Runs of ASCII and CJK ideographs are
/// copied as they are; only the segments around other characters go through the full
/// algorithm, which makes Chinese text with full-width punctuation several times faster than
/// normalising everything, with identical output (property-tested).
pub fn nfkc(s: &str) -> Option<String> {
    if s.chars().all(is_stable_boundary) {
        return None;
    }
    if is_nfkc_quick(s.chars()) == IsNormalized::Yes {
        return None;
    }
    let mut out = String::with_capacity(s.len() + 16);
    let mut copied = 0; // input bytes already emitted
    let mut last_boundary = 0; // start of the current segment
    let mut slow = false;
    for (i, c) in s.char_indices() {
        if is_stable_boundary(c) {
            if slow {
                out.extend(s[copied..i].nfkc());
                copied = i;
                slow = false;
            }
            last_boundary = i;
        } else if !slow {
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

/// Maps full-width ASCII variants (U+FF01..=U+FF5E) to ASCII and U+3000 to a space.
#[inline]
pub fn to_half_width(c: char) -> char {
    match c as u32 {
        0xFF01..=0xFF5E => char::from_u32(c as u32 - 0xFEE0).unwrap_or(c),
        0x3000 => ' ',
        _ => c,
    }
}

/// Whether `text` looks like HTML: it contains `<` directly followed by an ASCII letter, `/` or
/// `!`, and a `>` somewhere after that.
pub fn looks_like_html(text: &str) -> bool {
    let b = text.as_bytes();
    let mut i = 0;
    while let Some(p) = memchr(b'<', &b[i..]) {
        let at = i + p;
        if let Some(&n) = b.get(at + 1) {
            if (n.is_ascii_alphabetic() || n == b'/' || n == b'!')
                && memchr(b'>', &b[at + 1..]).is_some()
            {
                return true;
            }
        }
        i = at + 1;
    }
    false
}

#[inline]
fn memchr(needle: u8, hay: &[u8]) -> Option<usize> {
    hay.iter().position(|&x| x == needle)
}

/// Elements whose start and end mark a block break (rendered as a line break).
const BLOCK_ELEMENTS: &str = "address, article, aside, blockquote, br, dd, div, dl, dt, fieldset, figcaption, figure, footer, form, h1, h2, h3, h4, h5, h6, header, hr, li, main, nav, ol, p, pre, section, table, tbody, td, th, thead, tfoot, tr, ul, title, option";

/// Converts HTML to its visible text.
///
/// - Text inside `script`, `style` (and other raw-text elements: `xmp`, `iframe`, `noembed`,
///   `noframes`) and comments is dropped; so is the content of `noscript`, `template`, `svg`,
///   `head` except its `title`.
/// - Character references (`&amp;`, `&#20013;`, `&nbsp;`) are decoded.
/// - Block elements (`p`, `div`, `li`, `br`, headings, table cells, …) become line breaks so
///   that words of adjacent blocks do not run together.
///
/// Malformed markup never fails: the HTML5 tokenizer recovers as browsers do. Should the
/// rewriter report an error (it only does on memory limits), the text collected so far is
/// returned.
pub fn html_to_text(html: &str) -> String {
    use lol_html::html_content::TextType;
    use lol_html::{doc_text, element, HtmlRewriter, Settings};

    use std::cell::{Cell, RefCell};
    use std::rc::Rc;

    let out = Rc::new(RefCell::new(String::with_capacity(html.len() / 2)));
    let pending = Rc::new(RefCell::new(String::new()));
    let skip = Rc::new(Cell::new(0usize));

    let (o1, o2) = (out.clone(), out.clone());
    let (p1, p2) = (pending.clone(), pending.clone());
    let (s1, s2) = (skip.clone(), skip.clone());
    let title_depth = Rc::new(Cell::new(0usize));
    let (t1, t2) = (title_depth.clone(), title_depth.clone());
    {
        let mut rewriter = HtmlRewriter::new(
            Settings::new()
                .append_element_content_handler(element!(
                    "noscript, template, svg, head, select > option[hidden]",
                    move |el| {
                        s1.set(s1.get() + 1);
                        let s = s1.clone();
                        if let Some(handlers) = el.end_tag_handlers() {
                            handlers.push(Box::new(
                                move |_end: &mut lol_html::html_content::EndTag<'_>| {
                                    s.set(s.get().saturating_sub(1));
                                    Ok(())
                                },
                            ) as _);
                        } else {
                            // Void or self-closing element: nothing inside to skip.
                            s.set(s.get().saturating_sub(1));
                        }
                        Ok(())
                    }
                ))
                .append_element_content_handler(element!("title", move |el| {
                    t1.set(t1.get() + 1);
                    let t = t1.clone();
                    if let Some(handlers) = el.end_tag_handlers() {
                        handlers.push(Box::new(
                            move |_end: &mut lol_html::html_content::EndTag<'_>| {
                                t.set(t.get().saturating_sub(1));
                                Ok(())
                            },
                        ) as _);
                    } else {
                        t.set(t.get().saturating_sub(1));
                    }
                    Ok(())
                }))
                .append_element_content_handler(element!(BLOCK_ELEMENTS, move |el| {
                    o1.borrow_mut().push('\n');
                    let o = o1.clone();
                    if let Some(handlers) = el.end_tag_handlers() {
                        handlers.push(Box::new(
                            move |_end: &mut lol_html::html_content::EndTag<'_>| {
                                o.borrow_mut().push('\n');
                                Ok(())
                            },
                        ) as _);
                    }
                    Ok(())
                }))
                .append_document_content_handler(doc_text!(move |t| {
                    let ty = t.text_type();
                    let visible = matches!(
                        ty,
                        TextType::Data
                            | TextType::RCData
                            | TextType::PlainText
                            | TextType::CDataSection
                    );
                    let skipping = s2.get() > 0 && t2.get() == 0;
                    if visible && !skipping {
                        p1.borrow_mut().push_str(t.as_str());
                    }
                    if t.last_in_text_node() {
                        let mut p = p1.borrow_mut();
                        if !p.is_empty() {
                            let mut o = o2.borrow_mut();
                            if ty.allows_html_entities() {
                                o.push_str(&html_escape::decode_html_entities(p.as_str()));
                            } else {
                                o.push_str(&p);
                            }
                            p.clear();
                        }
                    }
                    Ok(())
                })),
            |_: &[u8]| {},
        );
        // Errors only arise from memory limits we do not set; keep what was collected.
        let _ = rewriter.write(html.as_bytes());
        let _ = rewriter.end();
    }
    let rest = std::mem::take(&mut *p2.borrow_mut());
    let mut text = std::mem::take(&mut *out.borrow_mut());
    if !rest.is_empty() {
        text.push_str(&html_escape::decode_html_entities(&rest));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_drops_script_style_comments_and_decodes_entities() {
        let t = html_to_text(
            "<html><head><title>T&amp;T</title><style>p{color:red}</style><script>var a='<p>';</script></head>\
             <body><!-- hidden --><p>caf&eacute; &#20013;&#25991;</p><div>one</div><div>two</div><noscript>js off</noscript></body></html>",
        );
        assert!(t.contains("T&T"), "{t:?}");
        assert!(t.contains("café 中文"), "{t:?}");
        assert!(!t.contains("color"), "{t:?}");
        assert!(!t.contains("var a"), "{t:?}");
        assert!(!t.contains("hidden"), "{t:?}");
        assert!(!t.contains("js off"), "{t:?}");
        assert!(t.contains("one\n") && t.contains("two"), "{t:?}");
        assert!(!t.contains("onetwo"), "{t:?}");
    }

    #[test]
    fn malformed_html_never_fails() {
        for s in [
            "<p",
            "<<<>>>",
            "<div><p>unclosed",
            "</p></div>",
            "<script>never closed",
            "&#xFFFFFFFF; &bogus;",
        ] {
            let _ = html_to_text(s);
            let _ = Normalizer::new(NormalizeOptions::default()).normalize(s);
        }
    }

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

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(500))]
        #[test]
        fn fast_nfkc_equals_full_nfkc(v in proptest::collection::vec(proptest::sample::select(vec![
            'a', 'E', ' ', '1', '中', '文', '，', '。', 'Ａ', '１', '\u{3000}', '\u{0301}', '\u{0308}', '\u{0327}',
            'e', 'ﬁ', '①', '㍿', '\u{1100}', '\u{1161}', '\u{11A8}', '가', 'か', '\u{3099}', 'ｶ', 'ﾞ', 'Å', 'Ω', '\u{2126}',
        ]), 0..40)) {
            let s: String = v.into_iter().collect();
            let want: String = s.nfkc().collect();
            let got = nfkc(&s).unwrap_or_else(|| s.clone());
            proptest::prop_assert_eq!(got, want);
        }
    }

    #[test]
    fn html_detection() {
        assert!(looks_like_html("<p>x</p>"));
        assert!(looks_like_html("text <br/> more"));
        assert!(!looks_like_html("a < b and c > d"));
        assert!(!looks_like_html("1<2"));
    }
}
