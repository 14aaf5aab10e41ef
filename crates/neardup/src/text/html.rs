//! HTML to visible text: the first step of normalisation ([`crate::normalize`]).
//!
//! [`looks_like_html`] decides whether a text is markup (the default [`HtmlMode::Auto`](crate::normalize::HtmlMode::Auto));
//! [`html_to_text_with`] keeps what a reader sees, one block element a line, and with
//! main-content extraction drops the page's furniture.
//!
//! ```
//! use neardup::normalize::{html_to_text, looks_like_html};
//! let page = "<html><body><nav>Home</nav><p>Hello, <b>world</b></p><script>x()</script></body></html>";
//! assert!(looks_like_html(page));
//! assert_eq!(html_to_text(page), "Home\nHello, world\n");
//! ```

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

/// What an element's attributes say about it: `itemprop`, `role`, `class` and `id` (the first
/// of each, as [`Element::get_attribute`](lol_html::html_content::Element::get_attribute)
/// gives it), read in one pass over its attributes — none at all for an element without.
#[derive(Debug, Default)]
struct Marks {
    itemprop: Option<String>,
    role: Option<String>,
    class: Option<String>,
    id: Option<String>,
}

impl Marks {
    fn of(el: &lol_html::html_content::Element) -> Marks {
        let mut m = Marks::default();
        for a in el.attributes() {
            let slot = match a.name().as_str() {
                "itemprop" => &mut m.itemprop,
                "role" => &mut m.role,
                "class" => &mut m.class,
                "id" => &mut m.id,
                _ => continue,
            };
            if slot.is_none() {
                *slot = Some(a.value());
            }
        }
        m
    }

    /// Whether a `class` or `id` token (split at white space, `-` and `_`) is one of `words`
    /// (lower case), ignoring ASCII case.
    fn has_token(&self, words: &[&str]) -> bool {
        [&self.class, &self.id].into_iter().flatten().any(|v| {
            v.split(|c: char| c.is_whitespace() || c == '-' || c == '_')
                .any(|tok| !tok.is_empty() && words.iter().any(|w| w.eq_ignore_ascii_case(tok)))
        })
    }
}

/// The characters of `text` that are not white space (`char::is_whitespace`): a byte at a
/// time over ASCII, decoded beyond it.
fn non_space_chars(text: &str) -> usize {
    if text.is_ascii() {
        return text
            .bytes()
            .filter(|b| !b.is_ascii_whitespace() && *b != 0x0B)
            .count();
    }
    text.chars().filter(|c| !c.is_whitespace()).count()
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
        let n = non_space_chars(text);
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
                    let marks = Marks::of(el);
                    let article = matches!(tag, "article" | "main")
                        || marks
                            .itemprop
                            .as_ref()
                            .is_some_and(|v| v.eq_ignore_ascii_case("articleBody"))
                        || marks
                            .role
                            .as_ref()
                            .is_some_and(|v| v.eq_ignore_ascii_case("main"))
                        || (main_content && tag != "body" && marks.has_token(ARTICLE_TOKENS));
                    let boiler = !article
                        && (BOILERPLATE_ELEMENTS.contains(&tag)
                            || (main_content
                                && !matches!(tag, "body" | "html")
                                && marks.has_token(BOILERPLATE_TOKENS)));
                    {
                        let mut s = s1.borrow_mut();
                        if block {
                            s.flush();
                        }
                    }
                    if !(block || skip || title || link || article || boiler) {
                        return Ok(()); // its end changes nothing
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
                        let mut p = std::mem::take(&mut s.pending);
                        if ty.allows_html_entities() {
                            s.push_text(&html_escape::decode_html_entities(&p));
                        } else {
                            s.push_text(&p);
                        }
                        // Its capacity serves the next text node.
                        p.clear();
                        s.pending = p;
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
    use crate::normalize::{NormalizeOptions, Normalizer};

    proptest::proptest! {
        /// The ASCII path counts what the character filter counts (vertical tab included: it
        /// is white space to `char` but not to `u8::is_ascii_whitespace`).
        #[test]
        fn non_space_chars_equals_the_character_filter(v in proptest::collection::vec(proptest::sample::select(vec!['a', ' ', '\t', '\n', '\r', '\u{0B}', '\u{0C}', '\u{1C}', '\u{85}', '\u{A0}', '中', '\u{3000}']), 0..40)) {
            let t: String = v.into_iter().collect();
            proptest::prop_assert_eq!(non_space_chars(&t), t.chars().filter(|c| !c.is_whitespace()).count());
        }
    }

    proptest::proptest! {
        /// [`Marks`] says what `get_attribute` says, for any attributes in any case, repeated
        /// or not.
        #[test]
        fn marks_equal_get_attribute(attrs in proptest::collection::vec(
            (proptest::sample::select(vec!["class", "CLASS", "id", "Id", "role", "ROLE", "itemprop", "ItemProp", "data-x"]),
             proptest::sample::select(vec!["main", "MAIN", "articleBody", "nav", "Post-Body", "side_bar", "x footer", "", "entry y"])),
            0..5)) {
            use lol_html::{element, HtmlRewriter, Settings};
            let html: String = attrs.iter().map(|(n, v)| format!(" {n}=\"{v}\"")).collect();
            let html = format!("<div{html}>text</div>");
            let seen = std::cell::RefCell::new(Vec::new());
            {
                let mut r = HtmlRewriter::new(
                    Settings::new().append_element_content_handler(element!("*", |el| {
                        let old_tokens = |words: &[&str]| {
                            ["class", "id"].iter().any(|name| {
                                el.get_attribute(name).is_some_and(|v| {
                                    v.split(|c: char| c.is_whitespace() || c == '-' || c == '_')
                                        .any(|t| !t.is_empty() && words.contains(&t.to_ascii_lowercase().as_str()))
                                })
                            })
                        };
                        let old = (
                            el.get_attribute("itemprop").is_some_and(|v| v.eq_ignore_ascii_case("articleBody")),
                            el.get_attribute("role").is_some_and(|v| v.eq_ignore_ascii_case("main")),
                            old_tokens(ARTICLE_TOKENS),
                            old_tokens(BOILERPLATE_TOKENS),
                        );
                        let m = Marks::of(el);
                        let new = (
                            m.itemprop.as_ref().is_some_and(|v| v.eq_ignore_ascii_case("articleBody")),
                            m.role.as_ref().is_some_and(|v| v.eq_ignore_ascii_case("main")),
                            m.has_token(ARTICLE_TOKENS),
                            m.has_token(BOILERPLATE_TOKENS),
                        );
                        seen.borrow_mut().push((old, new));
                        Ok(())
                    })),
                    |_: &[u8]| {},
                );
                r.write(html.as_bytes()).unwrap();
                r.end().unwrap();
            }
            for (old, new) in seen.into_inner() {
                proptest::prop_assert_eq!(old, new, "{}", html);
            }
        }
    }

    /// An element's marks are read as `get_attribute` reads them: names in any case, the first
    /// of two attributes of one name, class and id tokens split at `-`, `_` and white space in
    /// any case; an element without attributes has none.
    #[test]
    fn marks_read_attributes_in_any_case_the_first_of_each() {
        let article = "<p>The council approved the new budget on Tuesday after a long debate about schools, roads and the city's old bridges.</p>\
                       <p>Members said the plan would raise spending on maintenance by a tenth over two years, starting next spring.</p>";
        let page = |open: &str, close: &str| {
            format!(
                "<html><body><DIV CLASS=\"Site_SIDEBAR\"><p>Sidebar links and more links</p></DIV>\
                 {open}{article}{close}<div id=\"x\" id=\"footer\"><p>Kept: not a footer</p></div></body></html>"
            )
        };
        for (open, close) in [
            ("<div ROLE=\"MAIN\">", "</div>"),
            ("<section ItemProp=\"ARTICLEBODY\">", "</section>"),
            ("<div class=\"x POST-body\">", "</div>"),
        ] {
            let t = html_to_text_with(&page(open, close), true);
            assert!(t.contains("council approved"), "{open}: {t:?}");
            assert!(!t.contains("Sidebar"), "{open}: {t:?}");
            assert!(
                !t.contains("Kept"),
                "{open}: the article alone is kept: {t:?}"
            );
        }
        // Without a marked article: the side bar is furniture, the first `id` (x) is not.
        let t = html_to_text_with(&page("<div>", "</div>"), true);
        assert!(
            !t.contains("Sidebar") && t.contains("Kept: not a footer"),
            "{t:?}"
        );
    }

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
