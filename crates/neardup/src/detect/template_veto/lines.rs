//! A document's lines, as the veto counts them: which text they are read from, their keys,
//! and the lines below a count.
//!
//! A plain text's lines are its own. An HTML page's are its markup's when the markup is laid
//! out in lines — at least as many lines holding something as its visible text has — and otherwise
//! those of its visible text, one block element a line
//! ([`Normalizer::text_of`](crate::normalize::Normalizer::text_of);
//! [`TemplateVetoOptions::text_lines`](super::TemplateVetoOptions::text_lines)): a page whose
//! markup is minified to one line still has its template's paragraphs as lines, and pages
//! written a block a line are read as they always were. Every method of [`VetoRules`] that
//! takes a document's text reads its lines through [`VetoRules::lines_of`]; the thread's last
//! page is remembered, so asking again is a comparison, not a parse.

use super::digits::{has_numeral, mask_digits};
use super::{LineKey, VetoRules};
use std::sync::Arc;

use crate::hash::xxh3;
use crate::normalize::TextOf;

impl VetoRules {
    /// The text `text`'s lines are read from (see the module docs).
    pub fn lines_of<'a>(&self, text: &'a str) -> TextOf<'a> {
        if !self.opts.text_lines || !self.normalizer.is_html(text) {
            return TextOf::Same(text);
        }
        let visible = self.normalizer.text_of(text);
        let TextOf::Extracted(v) = &visible else {
            return visible;
        };
        // The answer for the thread's last page is kept with its visible text: the same
        // `Arc` is the normaliser's answer for the same page, and holding it keeps its address
        // from being reused.
        let by_text = LAST.with(|last| match &*last.borrow() {
            Some((seen, by_text)) if Arc::ptr_eq(seen, v) => Some(*by_text),
            _ => None,
        });
        let by_text = by_text.unwrap_or_else(|| {
            let by_text = filled_lines(v) > filled_lines(text);
            LAST.with(|last| *last.borrow_mut() = Some((v.clone(), by_text)));
            by_text
        });
        if by_text {
            visible
        } else {
            TextOf::Same(text)
        }
    }

    /// The visible text of `text` when it is an HTML page whose lines may be read from it
    /// (what [`lines_of`](Self::lines_of) parses), for [`remember_visible`](Self::remember_visible)
    /// on the thread that sketches the page.
    pub(crate) fn visible_text(&self, text: &str) -> Option<Arc<str>> {
        match self
            .opts
            .text_lines
            .then(|| self.normalizer.text_of(text))?
        {
            TextOf::Extracted(v) => Some(v),
            TextOf::Same(_) => None,
        }
    }

    /// Lets this thread's next reading of HTML `text` (its lines, its normalisation) take
    /// `visible`, its [`visible_text`](Self::visible_text) got on another thread, instead of
    /// parsing the page again.
    pub(crate) fn remember_visible(&self, text: &str, visible: Arc<str>) {
        self.normalizer.remember_text(text, visible);
    }

    /// The keys of each line of `text` (of [`lines_of`](Self::lines_of), as [`str::lines`]
    /// splits it), in order; `None` for a line too short to be counted.
    pub fn line_keys(&self, text: &str) -> Vec<Option<LineKey>> {
        let mut masked = String::new();
        self.lines_of(text)
            .lines()
            .map(|line| {
                let t = line.trim();
                (t.len() >= self.opts.min_line_bytes).then(|| {
                    let exact = xxh3(t.as_bytes()) & !1;
                    let template = if self.opts.mask_line_digits && has_numeral(t) {
                        xxh3(mask_digits(t, &mut masked).as_bytes()) | 1
                    } else {
                        exact
                    };
                    LineKey { exact, template }
                })
            })
            .collect()
    }

    /// The distinct keys of `text`'s counted lines, sorted: what one document adds to the
    /// line counts (both keys of each line).
    pub fn counted_lines(&self, text: &str) -> Vec<u64> {
        let mut keys: Vec<u64> = self
            .line_keys(text)
            .into_iter()
            .flatten()
            .flat_map(|k| [k.exact, k.template])
            .collect();
        keys.sort_unstable();
        keys.dedup();
        keys
    }
}

thread_local! {
    /// The last page [`VetoRules::lines_of`] judged on this thread: its visible text, and
    /// whether its lines are read from it.
    static LAST: std::cell::RefCell<Option<(Arc<str>, bool)>> = const { std::cell::RefCell::new(None) };
}

/// How many of `text`'s lines ([`str::lines`]) hold more than white space.
fn filled_lines(text: &str) -> usize {
    text.lines().filter(|l| !l.trim().is_empty()).count()
}

/// The lines of `lines` (a [`VetoRules::lines_of`] text, as [`str::lines`] splits it) held by
/// fewer than `floor` documents (`line_docs[i]` for line `i`), each ended by a line feed.
pub(super) fn lines_below(lines: &str, line_docs: &[u32], floor: u32) -> String {
    let mut out = String::new();
    for (line, &n) in lines.lines().zip(line_docs) {
        if n < floor {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::{run, POSTS};
    use super::super::{TemplateVeto, TemplateVetoOptions};
    use crate::minhash::{MinHashDetector, MinHashDetectorOptions};
    use crate::{FingerprintConfig, Fingerprinter};

    /// A site's page: a menu, an article holding `post` and the site's notices, a footer.
    fn page(post: &str) -> String {
        let notices = [
            "编者按：本文由本站特约作者投稿，观点仅代表作者本人，不代表本站立场。",
            "欢迎关注本站公众号，每天推送精选文章，回复关键词即可获取往期合集与独家资料。",
            "如需转载，请在文首注明出处和作者，并保留原文链接，违者本站将依法追究其法律责任。",
            "读者交流群已开放，扫描页面底部二维码即可加入，与数万名读者一起讨论、分享与成长。",
            "投稿邮箱长期开放，欢迎各位作者踊跃来稿，一经采用，稿酬从优，并有机会获得年度优秀作者称号。",
            "版权声明：本文版权归原作者所有，未经授权，任何单位和个人不得转载、摘编或以其他方式使用。",
        ];
        let mut p = String::from(
            "<!DOCTYPE html>\n<html><head><title>知识分享站</title></head>\n<body>\n\
             <nav><ul><li><a href=\"/\">首页</a></li><li><a href=\"/n\">新闻</a></li></ul></nav>\n\
             <main><article>\n",
        );
        p.push_str(&format!("<p>{post}</p>\n"));
        for n in notices {
            p.push_str(&format!("<p>{n}</p>\n"));
        }
        p.push_str(
            "</article></main>\n<footer><p>版权所有 © 知识分享站</p></footer>\n</body></html>\n",
        );
        p
    }

    /// Each page's matches among the earlier ones, under the veto with `text_lines`.
    fn found(docs: &[String], text_lines: bool) -> Vec<Vec<u32>> {
        let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
        let inner = MinHashDetector::new(fp.clone(), MinHashDetectorOptions::default()).unwrap();
        let opts = TemplateVetoOptions {
            text_lines,
            ..TemplateVetoOptions::default()
        };
        run(&mut TemplateVeto::new(inner, fp, opts).unwrap(), docs)
    }

    /// Regression (found by minifying the pages of an evaluation set: F1 0.986 → 0.050): the
    /// lines of an HTML page were the lines of its markup, so pages of one template minified
    /// to a single line had no line in common, nothing was vetoed, and every page matched the
    /// first on the template alone. Their lines are now those of their text, and the pages
    /// are told apart whatever their markup's line breaks.
    #[test]
    fn minified_pages_of_one_template_are_not_duplicates() {
        let pretty: Vec<String> = POSTS.iter().map(|p| page(p)).collect();
        let minified: Vec<String> = pretty.iter().map(|p| p.replace('\n', "")).collect();
        for docs in [&pretty, &minified] {
            let f = found(docs, true);
            assert!(f.iter().all(Vec::is_empty), "{f:?}");
        }
        // As before the rule: the minified pages match on the template alone.
        let before = found(&minified, false);
        assert!(before.iter().skip(1).all(|f| !f.is_empty()), "{before:?}");
        // A copy of a page is still found, minified or not.
        let mut docs = minified.clone();
        docs.push(minified[3].replace("<p>", "<p> "));
        let f = found(&docs, true);
        assert_eq!(f.last().unwrap(), &vec![3], "{f:?}");
    }

    /// A minified page's lines are its text's blocks; a page laid out a block a line keeps
    /// its markup's, and so does a plain text with a stray tag; with `text_lines` off, every
    /// page's are its markup's.
    #[test]
    fn lines_of_a_minified_page_are_its_text_blocks() {
        let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
        let rules = |text_lines| {
            let inner =
                MinHashDetector::new(fp.clone(), MinHashDetectorOptions::default()).unwrap();
            let opts = TemplateVetoOptions {
                text_lines,
                ..TemplateVetoOptions::default()
            };
            TemplateVeto::new(inner, fp.clone(), opts)
                .unwrap()
                .rules()
                .clone()
        };
        let (on, off) = (rules(true), rules(false));
        let p = page(POSTS[0]);
        let m = p.replace('\n', "");
        let lines = on.lines_of(&m);
        assert!(lines.lines().any(|l| l == POSTS[0]), "{:?}", &*lines);
        assert!(
            !lines.contains('<') && !lines.contains("首页"),
            "{:?}",
            &*lines
        );
        assert_eq!(on.line_keys(&m).iter().flatten().count(), 7); // the post and six notices
        assert_eq!(&*on.lines_of(&p), p);
        assert_eq!(on.line_keys(&p), off.line_keys(&p));
        assert_eq!(&*off.lines_of(&m), m);
        assert_eq!(off.line_keys(&m).len(), 1);
        let plain = "第一行文字足够长可以被计数的一行\n第二行";
        assert_eq!(&*on.lines_of(plain), plain);
        // A plain text with a stray tag (a `<META …>` line in a post) keeps its lines: its
        // visible text has fewer lines holding anything, not more.
        let stray = "\nSponsored: cloud servers from $5 a month.\n<META NAME=\"a\" CONTENT=\"b\">\nA post of its own\n";
        assert_eq!(&*on.lines_of(stray), stray);
        assert_eq!(super::filled_lines(stray), 3);
    }
}
