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

use serde::{Deserialize, Serialize};

use super::fold::Folder;
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

thread_local! {
    static MEMO: std::cell::RefCell<Memo> = const { std::cell::RefCell::new(None) };
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
            return self.normalize_tracked(text, breaks);
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
        let (out, b) = self.normalize_tracked(text, true);
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
        self.normalize_tracked(text, true)
    }

    /// Normalises `text`, returning a new string.
    pub fn normalize(&self, text: &str) -> String {
        self.normalize_tracked(text, false).0
    }

    /// [`Normalizer::normalize`], with its line breaks when `breaks` (else none).
    fn normalize_tracked(&self, text: &str, breaks: bool) -> (String, Vec<usize>) {
        let is_html = match self.opts.html {
            HtmlMode::Always => true,
            HtmlMode::Never => false,
            HtmlMode::Auto => looks_like_html(text),
        };
        // Intermediate copies are dropped as soon as the next step has consumed them, so a
        // huge document needs at most the input plus two copies at any time.
        let owned: Option<String> =
            is_html.then(|| html_to_text_with(text, self.opts.main_content));
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

/// Whether `text` looks like HTML: it has a closing tag (`</` + an ASCII letter … `>`), a
/// comment or doctype (`<!`), or one of the void tags `<br`, `<hr`, `<img`, `<meta`, `<link`,
/// `<input` (any case) followed by `>`. A lone `<A name>` or `a < b > c` in plain text is not
/// markup.
pub fn looks_like_html(text: &str) -> bool {
    let b = text.as_bytes();
    let mut i = 0;
    while let Some(p) = memchr(b'<', &b[i..]) {
        let at = i + p;
        let rest = &b[at + 1..];
        let tagged = match rest.first() {
            Some(b'/') => rest.get(1).is_some_and(|c| c.is_ascii_alphabetic()),
            Some(b'!') => true,
            Some(_) => ["br", "hr", "img", "meta", "link", "input"]
                .iter()
                .any(|t| {
                    rest.len() > t.len()
                        && rest[..t.len()].eq_ignore_ascii_case(t.as_bytes())
                        && matches!(rest[t.len()], b'>' | b'/' | b' ' | b'\t' | b'\n' | b'\r')
                }),
            None => false,
        };
        if tagged && memchr(b'>', rest).is_some() {
            return true;
        }
        i = at + 1;
    }
    false
}

#[inline]
fn memchr(needle: u8, hay: &[u8]) -> Option<usize> {
    memchr::memchr(needle, hay)
}

/// Elements whose start and end mark a block break (rendered as a line break).
const BLOCK_ELEMENTS: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "br",
    "dd",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "li",
    "main",
    "nav",
    "ol",
    "p",
    "pre",
    "section",
    "table",
    "tbody",
    "td",
    "th",
    "thead",
    "tfoot",
    "tr",
    "ul",
    "title",
    "option",
];

/// Elements whose content is never visible text.
const SKIPPED_ELEMENTS: &[&str] = &[
    "head", "noscript", "template", "svg", "script", "style", "iframe", "object", "canvas",
];

/// Elements that hold page furniture rather than the document (main-content extraction).
const BOILERPLATE_ELEMENTS: &[&str] = &[
    "nav", "header", "footer", "aside", "form", "menu", "button", "select",
];

/// `class`/`id` tokens (split at white space, `-` and `_`) that mark page furniture.
const BOILERPLATE_TOKENS: &[&str] = &[
    "nav",
    "navbar",
    "navigation",
    "menu",
    "footer",
    "sidebar",
    "breadcrumb",
    "breadcrumbs",
    "comment",
    "comments",
    "share",
    "sharing",
    "social",
    "related",
    "recommend",
    "recommended",
    "ad",
    "ads",
    "advert",
    "advertisement",
    "sponsor",
    "banner",
    "copyright",
    "toolbar",
    "pagination",
    "pager",
    "login",
    "subscribe",
    "popup",
    "cookie",
    "hot",
    "rank",
    "topbar",
    "masthead",
];

/// `class`/`id` tokens that mark the main article.
const ARTICLE_TOKENS: &[&str] = &[
    "article",
    "post",
    "entry",
    "story",
    "content",
    "articlebody",
    "main",
];

fn attr_tokens(el: &lol_html::html_content::Element, f: &mut dyn FnMut(&str) -> bool) -> bool {
    for name in ["class", "id"] {
        if let Some(v) = el.get_attribute(name) {
            for tok in v.split(|c: char| c.is_whitespace() || c == '-' || c == '_') {
                if !tok.is_empty() && f(&tok.to_ascii_lowercase()) {
                    return true;
                }
            }
        }
    }
    false
}

#[derive(Debug, Default, Clone)]
struct Block {
    text: String,
    chars: usize,
    link_chars: usize,
    article: bool,
    boiler: bool,
    title: bool,
}

#[derive(Debug, Default)]
struct Extract {
    blocks: Vec<Block>,
    cur: Block,
    pending: String,
    skip: usize,
    title: usize,
    boiler: usize,
    article: usize,
    link: usize,
}

impl Extract {
    fn flush(&mut self) {
        if self.cur.chars > 0 {
            self.blocks.push(std::mem::take(&mut self.cur));
        } else {
            self.cur = Block::default();
        }
    }

    fn push_text(&mut self, text: &str) {
        let (article, boiler, title) = (self.article > 0, self.boiler > 0, self.title > 0);
        if self.cur.chars > 0
            && (self.cur.article != article || self.cur.boiler != boiler || self.cur.title != title)
        {
            self.flush();
        }
        let n = text.chars().filter(|c| !c.is_whitespace()).count();
        if n == 0 {
            self.cur.text.push_str(text);
            return;
        }
        self.cur.article = article;
        self.cur.boiler = boiler;
        self.cur.title = title;
        self.cur.text.push_str(text);
        self.cur.chars += n;
        if self.link > 0 {
            self.cur.link_chars += n;
        }
    }

    /// Joins the kept blocks. With `main_content`: page furniture (nav, header, footer, aside,
    /// forms, elements whose class/id says nav/menu/footer/sidebar/comment/share/related/ad…)
    /// and link lists (blocks with more than half of their text in links) are dropped, and when
    /// the page marks its article (`article`, `main`, `itemprop=articleBody`, class/id
    /// `article`/`post`/`entry`/`content`…) holding at least 200 characters or a third of the
    /// text, only the article is kept. The `title` is kept only without `main_content`.
    fn finish(mut self, main_content: bool) -> String {
        self.flush();
        let keep: Vec<&Block> = if main_content {
            let body: Vec<&Block> = self
                .blocks
                .iter()
                .filter(|b| !b.boiler && !b.title && b.link_chars * 2 <= b.chars)
                .collect();
            let total: usize = body.iter().map(|b| b.chars).sum();
            let art: usize = body.iter().filter(|b| b.article).map(|b| b.chars).sum();
            let all: usize = self.blocks.iter().map(|b| b.chars).sum();
            if art >= 200 || (art > 0 && art * 3 >= total) {
                body.into_iter().filter(|b| b.article).collect()
            } else if total * 10 < all {
                // Extraction kept under a tenth of the page: the heuristics misread it (an
                // unclosed `<a>` in text, a page that is one big list); keep the whole page.
                self.blocks.iter().collect()
            } else {
                body
            }
        } else {
            self.blocks.iter().collect()
        };
        let mut out = String::with_capacity(keep.iter().map(|b| b.text.len() + 1).sum());
        for b in keep {
            out.push_str(&b.text);
            out.push('\n');
        }
        out
    }
}

/// Converts HTML to its visible text (see [`html_to_text_with`]), keeping the whole page.
pub fn html_to_text(html: &str) -> String {
    html_to_text_with(html, false)
}

/// Converts HTML to its visible text.
///
/// - Text inside `script`, `style` and other raw-text elements, comments, and everything inside
///   `head` (except `title`), `noscript`, `template`, `svg`, `iframe`, `object`, `canvas` is
///   dropped.
/// - Character references (`&amp;`, `&#20013;`, `&nbsp;`) are decoded.
/// - Block elements (`p`, `div`, `li`, `br`, headings, table cells, …) become line breaks so
///   that words of adjacent blocks do not run together.
/// - With `main_content`, page furniture is removed and the marked article preferred (see
///   `Extract::finish` in the source and the fingerprint spec): the same article in two sites'
///   templates then yields the same text.
///
/// Malformed markup never fails: the HTML5 tokenizer recovers as browsers do. Should the
/// rewriter report an error (it only does on memory limits), the text collected so far is
/// returned.
pub fn html_to_text_with(html: &str, main_content: bool) -> String {
    use lol_html::html_content::{EndTag, TextType};
    use lol_html::{doc_text, element, HtmlRewriter, Settings};
    use std::cell::RefCell;
    use std::rc::Rc;

    let st = Rc::new(RefCell::new(Extract::default()));
    let (s1, s2) = (st.clone(), st.clone());
    {
        let mut rewriter = HtmlRewriter::new(
            Settings::new()
                .append_element_content_handler(element!("*", move |el| {
                    let tag = el.tag_name();
                    let tag = tag.as_str();
                    let block = BLOCK_ELEMENTS.contains(&tag);
                    let skip = SKIPPED_ELEMENTS.contains(&tag);
                    let title = tag == "title";
                    let link = tag == "a";
                    let article = matches!(tag, "article" | "main")
                        || el
                            .get_attribute("itemprop")
                            .is_some_and(|v| v.eq_ignore_ascii_case("articleBody"))
                        || el
                            .get_attribute("role")
                            .is_some_and(|v| v.eq_ignore_ascii_case("main"))
                        || (main_content
                            && tag != "body"
                            && attr_tokens(el, &mut |t| ARTICLE_TOKENS.contains(&t)));
                    let boiler = !article
                        && (BOILERPLATE_ELEMENTS.contains(&tag)
                            || (main_content
                                && !matches!(tag, "body" | "html")
                                && attr_tokens(el, &mut |t| BOILERPLATE_TOKENS.contains(&t))));
                    {
                        let mut s = s1.borrow_mut();
                        if block {
                            s.flush();
                        }
                    }
                    let Some(handlers) = el.end_tag_handlers() else {
                        return Ok(()); // void element: nothing inside
                    };
                    {
                        let mut s = s1.borrow_mut();
                        s.skip += skip as usize;
                        s.title += title as usize;
                        s.link += link as usize;
                        s.article += article as usize;
                        s.boiler += boiler as usize;
                    }
                    let s = s1.clone();
                    handlers.push(Box::new(move |_end: &mut EndTag<'_>| {
                        let mut s = s.borrow_mut();
                        s.skip -= skip as usize;
                        s.title -= title as usize;
                        s.link -= link as usize;
                        s.article -= article as usize;
                        s.boiler -= boiler as usize;
                        if block {
                            s.flush();
                        }
                        Ok(())
                    }) as _);
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
                    let mut s = s2.borrow_mut();
                    let skipping = s.skip > 0 && s.title == 0;
                    if visible && !skipping {
                        s.pending.push_str(t.as_str());
                    }
                    if t.last_in_text_node() && !s.pending.is_empty() {
                        let p = std::mem::take(&mut s.pending);
                        if ty.allows_html_entities() {
                            s.push_text(&html_escape::decode_html_entities(&p));
                        } else {
                            s.push_text(&p);
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
    let mut ex = std::mem::take(&mut *st.borrow_mut());
    if !ex.pending.is_empty() {
        let p = std::mem::take(&mut ex.pending);
        ex.push_text(&html_escape::decode_html_entities(&p));
    }
    ex.finish(main_content)
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
    fn main_content_drops_furniture_and_prefers_the_article() {
        let article = "<p>The council approved the new budget on Tuesday after a long debate about schools and roads.</p>\
                       <p>Members said the plan would raise spending on maintenance by a tenth over two years.</p>";
        let site_a = format!(
            "<html><head><title>Budget approved - Daily A</title></head><body>\
             <div class=\"top-nav\"><a href=/>Home</a> <a href=/news>News</a> <a href=/sport>Sport</a></div>\
             <header><h2>Daily A</h2></header><div id=\"main-content\">{article}</div>\
             <aside>Most read: <a href=/x>Cats</a></aside><div class=\"footer\">© Daily A 2024</div></body></html>"
        );
        let site_b = format!(
            "<html><head><title>Daily B | Budget</title></head><body><nav><ul><li><a href=/>Start</a></li><li><a href=/w>World</a></li></ul></nav>\
             <article>{article}</article><div class=\"related-posts\"><a href=/1>Other story one</a><a href=/2>Other story two</a></div>\
             <footer>Daily B, all rights reserved</footer></body></html>"
        );
        let a = html_to_text_with(&site_a, true);
        let b = html_to_text_with(&site_b, true);
        let n = Normalizer::new(NormalizeOptions::default());
        assert_eq!(n.normalize(&site_a), n.normalize(&site_b), "{a:?} vs {b:?}");
        assert!(
            a.contains("council approved") && !a.contains("Home") && !a.contains("Daily A"),
            "{a:?}"
        );
        // Without main-content extraction the furniture stays.
        assert!(html_to_text(&site_a).contains("Home"));
    }

    #[test]
    fn main_content_keeps_pages_without_markers() {
        let page = "<html><body><div><p>Just a paragraph of text with a <a href=x>link</a> inside it.</p></div></body></html>";
        let t = html_to_text_with(page, true);
        assert!(
            t.contains("Just a paragraph") && t.contains("link"),
            "{t:?}"
        );
        // A pure link list is furniture.
        let t = html_to_text_with("<div><p>Body text that matters here.</p><ul><li><a href=1>One</a></li><li><a href=2>Two</a></li></ul></div>", true);
        assert!(t.contains("Body text") && !t.contains("One"), "{t:?}");
    }

    #[test]
    fn regression_extraction_never_drops_almost_everything() {
        let page = "<div><a name=x>anchor<p>Long body text that is not a link at all, just prose about things.</p>\
                    <p>More prose follows here, and it goes on for a while to be the body.</p></div>";
        let t = html_to_text_with(page, true);
        assert!(
            t.contains("Long body text") && t.contains("More prose"),
            "{t:?}"
        );
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
            let _ = html_to_text_with(s, true);
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

    #[test]
    fn html_detection() {
        assert!(looks_like_html("<p>x</p>"));
        assert!(looks_like_html("text <br/> more"));
        assert!(!looks_like_html("a < b and c > d"));
        assert!(!looks_like_html("1<2"));
        // Regression: plain text mentioning `<A name>` was parsed as HTML and, the `a` never
        // closed, all of it dropped as a link list.
        assert!(!looks_like_html(
            "书签将变为锁定 <A name>，可以用来确定超链接的目标。"
        ));
        assert!(looks_like_html("<html><body>x</body></html>"));
        assert!(looks_like_html("line one<BR>line two"));
        assert!(looks_like_html("<!DOCTYPE html><title>t</title>"));
    }
}
