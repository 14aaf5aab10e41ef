//! Planting near-duplicates: the perturbations of seed 001 and the page templates.
//!
//! All text here (templates, ads, phrases) is written for this project.

use neardup_index::random::SplitMix64;

/// Whether a text is mostly Chinese (decides the language of templates and ads).
pub(crate) fn is_chinese(text: &str) -> bool {
    let mut han = 0usize;
    let mut latin = 0usize;
    for c in text.chars().take(2000) {
        if crate::features::is_han(c) {
            han += 1;
        } else if c.is_ascii_alphabetic() {
            latin += 1;
        }
    }
    han * 3 > latin
}

fn pick<'a>(rng: &mut SplitMix64, xs: &[&'a str]) -> &'a str {
    xs[rng.below(xs.len() as u64) as usize]
}

fn chance(rng: &mut SplitMix64, percent: u64) -> bool {
    rng.below(100) < percent
}

const ZH_SITES: &[&str] = &[
    "技术博客园",
    "编程之家",
    "开发者社区",
    "代码人生",
    "极客文库",
    "学习笔记网",
    "资讯中心",
    "知识分享站",
];
const EN_SITES: &[&str] = &[
    "DevNotes",
    "The Daily Reader",
    "Code Corner",
    "Library Online",
    "Text Archive",
    "Reading Room",
    "Open Pages",
    "Story Hub",
];
const ZH_NAV: &[&str] = &[
    "首页",
    "新闻",
    "博客",
    "问答",
    "下载",
    "专栏",
    "论坛",
    "学院",
    "关于我们",
    "联系我们",
    "登录",
    "注册",
    "热门标签",
    "排行榜",
    "投稿",
    "帮助中心",
];
const EN_NAV: &[&str] = &[
    "Home",
    "News",
    "Blog",
    "Questions",
    "Downloads",
    "Columns",
    "Forum",
    "Academy",
    "About us",
    "Contact",
    "Sign in",
    "Register",
    "Popular tags",
    "Top charts",
    "Submit",
    "Help",
];
const ZH_RELATED: &[&str] = &[
    "如何高效地学习一门新的编程语言",
    "十个提升工作效率的小技巧",
    "数据库索引的原理与实践",
    "从零开始搭建个人网站",
    "浅谈分布式系统的一致性",
    "程序员的职业发展规划",
    "图解网络协议的基本概念",
    "读书笔记：代码整洁之道",
    "周末去哪儿：城市周边游推荐",
    "一文看懂机器学习的基本流程",
    "正则表达式入门与进阶",
    "浏览器缓存机制详解",
];
const EN_RELATED: &[&str] = &[
    "How to learn a new programming language quickly",
    "Ten small habits that make you more productive",
    "Database indexes explained with examples",
    "Building a personal website from scratch",
    "A gentle introduction to distributed consensus",
    "Career advice for junior developers",
    "Networking protocols in pictures",
    "Book notes: writing clean code",
    "Weekend trips near the city",
    "Machine learning, step by step",
    "Regular expressions for beginners",
    "How browser caching works",
];
const ZH_FOOTER: &[&str] = &[
    "版权所有 © {site} 保留所有权利",
    "本站内容仅供学习交流使用，如有侵权请联系删除",
    "京ICP备{n}号",
    "客服邮箱：service@example.com",
    "友情链接：合作伙伴 | 网站地图 | 隐私政策 | 用户协议",
];
const EN_FOOTER: &[&str] = &[
    "Copyright © {site}. All rights reserved.",
    "Content on this site is for study and discussion only; contact us to request removal.",
    "Registered company no. {n}",
    "Support: service@example.com",
    "Partners | Site map | Privacy policy | Terms of use",
];
const ZH_ADS: &[&str] = &[
    "【广告】限时特惠！新用户注册即送100元优惠券，点击领取。",
    "推荐阅读：月入过万的副业秘籍，扫码关注公众号获取。",
    "【赞助】云服务器首年仅需99元，立即抢购！",
    "广告：专业英语培训，免费试听三节课，名额有限。",
    "点击下载APP，阅读体验更流畅，还有海量免费好书。",
];
const EN_ADS: &[&str] = &[
    "Advertisement: New customers get $100 off their first order. Click to claim!",
    "Sponsored: Cloud servers from $5 a month. Start your free trial today.",
    "Recommended: The side hustle that doubled my income. Subscribe to learn how.",
    "Ad: Learn a language in 30 days. Free trial lessons, limited places.",
    "Download our app for a smoother reading experience and thousands of free books.",
];

fn list_items(rng: &mut SplitMix64, pool: &[&str], n: usize) -> Vec<String> {
    let mut idx: Vec<usize> = (0..pool.len()).collect();
    super::shuffle(rng, &mut idx);
    idx.into_iter()
        .take(n)
        .map(|i| pool[i].to_string())
        .collect()
}

const ZH_NOTICE: &[&str] = &[
    "编者按：本文由本站特约作者投稿，观点仅代表作者本人，不代表本站立场。",
    "版权声明：本文版权归原作者所有，未经授权，任何单位和个人不得转载、摘编或以其他方式使用。",
    "如需转载，请在文首注明出处和作者，并保留原文链接，违者本站将依法追究其法律责任。",
    "本站致力于为读者提供优质内容，如发现文中存在错误或侵权内容，请及时与编辑部联系，我们将在核实后第一时间处理。",
    "欢迎关注本站公众号，每天推送精选文章，回复关键词即可获取往期合集与独家资料。",
    "读者交流群已开放，扫描页面底部二维码即可加入，与数万名读者一起讨论、分享与成长。",
    "免责声明：文中涉及的数据和信息仅供参考，不构成任何建议，读者据此操作，风险自担。",
    "投稿邮箱长期开放，欢迎各位作者踊跃来稿，一经采用，稿酬从优，并有机会获得年度优秀作者称号。",
];
const EN_NOTICE: &[&str] = &[
    "Editor's note: this article was contributed by a guest author; the views expressed are the author's own and not those of this site.",
    "Copyright notice: all rights are reserved by the original author; no part of this article may be reproduced without written permission.",
    "If you wish to republish this piece, please credit the author and the source at the top and keep a link to the original article.",
    "We strive to provide accurate content; if you find an error or believe this article infringes your rights, please contact the editors and we will respond promptly.",
    "Follow us to receive a daily selection of articles, and reply with a keyword to get collections of past issues and exclusive material.",
    "Our readers' community is open: scan the code at the bottom of the page to join thousands of readers discussing and sharing every day.",
    "Disclaimer: data and information in this article are for reference only and do not constitute advice; readers act on them at their own risk.",
    "Submissions are always welcome: accepted articles are paid generously and may be considered for our author of the year award.",
];

/// A page template: visible boilerplate before and after the article.
pub(crate) struct Template {
    head: String,
    /// Boilerplate inside the article, after the text (notices); empty for short templates.
    notice: String,
    tail: String,
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

impl Template {
    /// A site template; `long` gives a long sidebar and footer (the hard-negative kind).
    pub(crate) fn new(rng: &mut SplitMix64, chinese: bool, long: bool) -> Template {
        let (sites, nav, related, footer) = if chinese {
            (ZH_SITES, ZH_NAV, ZH_RELATED, ZH_FOOTER)
        } else {
            (EN_SITES, EN_NAV, EN_RELATED, EN_FOOTER)
        };
        let site = pick(rng, sites);
        let nav_n = if long { 14 } else { 5 + rng.below(4) as usize };
        let rel_n = if long { 12 } else { 3 + rng.below(3) as usize };
        let mut head = format!(
            "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{}</title></head>\n<body>\n<header><h1>{}</h1><nav><ul>",
            esc(site),
            esc(site)
        );
        for item in list_items(rng, nav, nav_n) {
            head.push_str(&format!(
                "<li><a href=\"/{}\">{}</a></li>",
                item.len(),
                esc(&item)
            ));
        }
        head.push_str("</ul></nav></header>\n<main><article>\n");
        // Long templates carry boilerplate inside the article itself, which no main-content
        // extraction can tell from the text: the hard part of hard negatives.
        let mut notice = String::new();
        if long {
            let pool = if chinese { ZH_NOTICE } else { EN_NOTICE };
            for item in list_items(rng, pool, pool.len()) {
                notice.push_str(&format!("<p>{}</p>\n", esc(&item)));
            }
        }
        let mut tail = String::from("</article></main>\n<aside><h2>");
        tail.push_str(if chinese {
            "相关文章"
        } else {
            "Related articles"
        });
        tail.push_str("</h2><ul>");
        let rounds = if long { 2 } else { 1 };
        for _ in 0..rounds {
            for item in list_items(rng, related, rel_n) {
                tail.push_str(&format!(
                    "<li><a href=\"/a/{}\">{}</a></li>",
                    item.len(),
                    esc(&item)
                ));
            }
        }
        tail.push_str("</ul></aside>\n<footer>");
        let n = 10_000_000 + rng.below(89_999_999);
        let lines = if long { footer.len() } else { 2 };
        for f in footer.iter().take(lines) {
            let line = f.replace("{site}", site).replace("{n}", &n.to_string());
            tail.push_str(&format!("<p>{}</p>", esc(&line)));
        }
        tail.push_str("</footer>\n</body></html>\n");
        Template { head, notice, tail }
    }

    /// The text as the template's article, one `<p>` per line.
    pub(crate) fn wrap(&self, text: &str) -> String {
        let mut s = String::with_capacity(self.head.len() + text.len() * 11 / 10 + self.tail.len());
        s.push_str(&self.head);
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            s.push_str("<p>");
            s.push_str(&esc(line));
            s.push_str("</p>\n");
        }
        s.push_str(&self.notice);
        s.push_str(&self.tail);
        s
    }
}

/// Mirror: the same text in another site's page template.
pub(crate) fn mirror(rng: &mut SplitMix64, text: &str) -> String {
    Template::new(rng, is_chinese(text), false).wrap(text)
}

const PUNCT_PAIRS: &[(char, char)] = &[
    (',', '，'),
    ('.', '。'),
    ('!', '！'),
    ('?', '？'),
    (':', '：'),
    (';', '；'),
    ('(', '（'),
    (')', '）'),
    ('"', '“'),
];

/// Copy, reformatted: re-punctuated (ASCII ↔ CJK/full-width), letters and digits in
/// full-width, line breaks and spaces changed, some case changes.
pub(crate) fn reformat(rng: &mut SplitMix64, text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 5 / 4);
    let wide_runs = chance(rng, 50);
    let mut wide = false;
    let mut sentence_start = true;
    for c in text.chars() {
        if wide_runs && rng.below(200) == 0 {
            wide = !wide;
        }
        if let Some(&(a, b)) = PUNCT_PAIRS.iter().find(|(a, b)| *a == c || *b == c) {
            if chance(rng, 80) {
                out.push(if c == a { b } else { a });
            } else {
                out.push(c);
            }
            if c == '.' || c == '。' || c == '!' || c == '！' || c == '?' || c == '？' {
                sentence_start = true;
                if chance(rng, 10) {
                    out.push('\n');
                } else if chance(rng, 30) {
                    out.push(' ');
                }
            }
            continue;
        }
        if c == '\n' {
            match rng.below(3) {
                0 => out.push_str("\n\n"),
                1 => out.push(' '),
                _ => out.push_str("\r\n"),
            }
            continue;
        }
        if c == ' ' && chance(rng, 20) {
            out.push_str("  ");
            continue;
        }
        let mut ch = c;
        if sentence_start && ch.is_ascii_lowercase() && chance(rng, 30) {
            ch = ch.to_ascii_uppercase();
        }
        if !c.is_whitespace() {
            sentence_start = false;
        }
        if wide && ch.is_ascii_alphanumeric() {
            ch = char::from_u32(ch as u32 + 0xFEE0).unwrap_or(ch);
        }
        out.push(ch);
    }
    out
}

/// Positions (byte offsets) of line starts, or of sentence starts in a single-line text.
fn boundaries(text: &str) -> Vec<usize> {
    let mut b: Vec<usize> = text
        .char_indices()
        .filter(|&(_, c)| matches!(c, '\n' | '。' | '.' | '！' | '!' | '？' | '?'))
        .map(|(i, c)| i + c.len_utf8())
        .filter(|&i| i < text.len())
        .collect();
    b.insert(0, 0);
    b.push(text.len());
    b
}

/// Inserted ads: one to three advertisement lines at sentence or line boundaries.
pub(crate) fn ads(rng: &mut SplitMix64, text: &str) -> String {
    let pool = if is_chinese(text) { ZH_ADS } else { EN_ADS };
    let n = 1 + rng.below(3) as usize;
    let bounds = boundaries(text);
    let mut at: Vec<usize> = (0..n)
        .map(|_| bounds[rng.below(bounds.len() as u64) as usize])
        .collect();
    at.sort_unstable();
    let mut out = String::with_capacity(text.len() + 200);
    let mut prev = 0;
    for p in at {
        out.push_str(&text[prev..p]);
        out.push('\n');
        out.push_str(pick(rng, pool));
        out.push('\n');
        prev = p;
    }
    out.push_str(&text[prev..]);
    out
}

/// A header with a date and view/comment counters (the counters differ between copies).
pub(crate) fn counters_header(rng: &mut SplitMix64, chinese: bool) -> String {
    let (y, mo, d) = (2005 + rng.below(20), 1 + rng.below(12), 1 + rng.below(28));
    let (h, mi, s) = (rng.below(24), rng.below(60), rng.below(60));
    let views = rng.below(100_000);
    let comments = rng.below(500);
    let likes = rng.below(2000);
    if chinese {
        format!("发布时间：{y}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}  阅读：{views}  评论：{comments}  点赞：{likes}\n")
    } else {
        format!("Posted {y}-{mo:02}-{d:02} {h:02}:{mi:02} · {views} views · {comments} comments · {likes} likes\n")
    }
}

/// Small edits: a few characters (Chinese) or words (other scripts) inserted, deleted or
/// substituted.
pub(crate) fn edit(rng: &mut SplitMix64, text: &str) -> String {
    let chars = text.chars().count();
    let edits = if chars < 140 {
        1 + rng.below(2)
    } else {
        2 + rng.below(4)
    };
    let chinese = is_chinese(text);
    let mut s: Vec<char> = text.chars().collect();
    const ZH_FILL: &[char] = &['的', '了', '是', '在', '和', '也', '就', '都', '很', '又'];
    const EN_FILL: &[&str] = &[
        "very", "also", "just", "the", "indeed", "quite", "then", "really",
    ];
    for _ in 0..edits {
        if s.is_empty() {
            break;
        }
        let at = rng.below(s.len() as u64) as usize;
        let op = rng.below(3);
        if chinese {
            let span = 1 + rng.below(3) as usize;
            match op {
                0 => {
                    s.drain(at..(at + span).min(s.len()));
                }
                1 => {
                    for _ in 0..span {
                        s.insert(at, ZH_FILL[rng.below(ZH_FILL.len() as u64) as usize]);
                    }
                }
                _ => {
                    for c in s.iter_mut().skip(at).take(span) {
                        *c = ZH_FILL[rng.below(ZH_FILL.len() as u64) as usize];
                    }
                }
            }
        } else {
            // Word-level: find the word around `at`.
            let mut st = at;
            while st > 0 && !s[st - 1].is_whitespace() {
                st -= 1;
            }
            let mut en = at;
            while en < s.len() && !s[en].is_whitespace() {
                en += 1;
            }
            let word: Vec<char> = EN_FILL[rng.below(EN_FILL.len() as u64) as usize]
                .chars()
                .collect();
            match op {
                0 => {
                    let end = (en + 1).min(s.len());
                    s.drain(st..end);
                }
                1 => {
                    let mut w = word;
                    w.push(' ');
                    s.splice(st..st, w);
                }
                _ => {
                    s.splice(st..en, word);
                }
            }
        }
    }
    s.into_iter().collect()
}

/// Excerpt: a contiguous 70–95 % of the text.
pub(crate) fn excerpt(rng: &mut SplitMix64, text: &str) -> String {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let n = chars.len();
    let keep = n * (70 + rng.below(26) as usize) / 100;
    let start = rng.below((n - keep) as u64 + 1) as usize;
    let b0 = chars.get(start).map_or(text.len(), |c| c.0);
    let b1 = chars.get(start + keep).map_or(text.len(), |c| c.0);
    text[b0..b1].to_string()
}

const ZH_USERS: &[&str] = &[
    "小明同学",
    "晴天娃娃",
    "老王读书",
    "南山南",
    "一只猫",
    "北京青年",
    "读书会",
    "码农日记",
    "江湖夜雨",
    "看客甲",
];
const EN_USERS: &[&str] = &[
    "jsmith",
    "reader42",
    "anna_k",
    "old_sailor",
    "dev_notes",
    "bookworm",
    "mary.ellen",
    "tomcat",
    "quietfox",
    "news_bot",
];
/// Comments put before a repost (`{u}`: a user name).
const ZH_BEFORE: &[&str] = &[
    "转发微博",
    "说得太好了，转给大家看看：",
    "//@{u}: 转发微博",
    "好文，收藏了。",
    "转：",
    "哈哈哈，太真实了",
    "【转载】",
    "值得一读！",
];
const EN_BEFORE: &[&str] = &[
    "RT @{u}:",
    "So true. Sharing this:",
    "Fwd:",
    "Worth reading!",
    "Found this today --",
    "Reposting for everyone who asked:",
    "This made my day.",
    "Saved.",
];
/// Attributions and markers put after a repost.
const ZH_AFTER: &[&str] = &[
    "//@{u}: 转发微博",
    "——转自{u}的微博",
    "（来源：网络，如有侵权请联系删除）",
    "转自：{u}",
    "via @{u}",
    "#每日一句#",
];
const EN_AFTER: &[&str] = &[
    "(via @{u})",
    "-- shared by {u}",
    "Source: the internet; credit to the original author.",
    "Forwarded by {u}",
    "#quote #daily",
    "h/t @{u}",
];

/// Repost: the whole text with a comment, a forwarding marker or an attribution before it,
/// after it, or both.
pub(crate) fn repost(rng: &mut SplitMix64, text: &str) -> String {
    let zh = is_chinese(text);
    let (users, before, after) = if zh {
        (ZH_USERS, ZH_BEFORE, ZH_AFTER)
    } else {
        (EN_USERS, EN_BEFORE, EN_AFTER)
    };
    let user = pick(rng, users);
    let sep = if zh { "" } else { " " };
    let mut out = String::with_capacity(text.len() + 120);
    let where_ = rng.below(3);
    if where_ != 1 {
        out.push_str(&pick(rng, before).replace("{u}", user));
        out.push_str(sep);
    }
    out.push_str(text.trim());
    if where_ != 0 {
        out.push_str(sep);
        out.push_str(&pick(rng, after).replace("{u}", user));
    }
    out
}

/// The quoted piece of [`quote`].
fn quote_piece<'a>(rng: &mut SplitMix64, text: &'a str) -> &'a str {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let n = chars.len();
    let byte = |i: usize| chars.get(i).map_or(text.len(), |c| c.0);
    let piece = if n < 140 {
        let keep = (n * (40 + rng.below(26) as usize) / 100).max(1);
        let start = rng.below((n - keep) as u64 + 1) as usize;
        &text[byte(start)..byte(start + keep)]
    } else {
        let mut b = boundaries(text);
        // No piece starts in trailing white space.
        while b.len() > 2 && text[b[b.len() - 2]..].trim().is_empty() {
            b.remove(b.len() - 2);
        }
        let first = rng.below(b.len().saturating_sub(1).max(1) as u64) as usize;
        let mut last = (first + 1 + rng.below(3) as usize).min(b.len() - 1);
        // At least 60 characters: a one-line note ("See also …") recurs across documents.
        while last + 1 < b.len() && text[b[first]..b[last]].chars().count() < 60 {
            last += 1;
        }
        let (b0, mut b1) = (b[first], b[last]);
        // At most 300 characters.
        if let Some((i, _)) = text[b0..b1].char_indices().nth(300) {
            b1 = b0 + i;
        }
        &text[b0..b1]
    };
    piece.trim()
}

/// Quote: for a short text (under 140 characters) a contiguous 40–65 % of it, otherwise one to
/// three consecutive sentences, more while under 60 characters (at most 300 characters, cut
/// there); in quotation marks or after an attribution.
pub(crate) fn quote(rng: &mut SplitMix64, text: &str) -> String {
    let zh = is_chinese(text);
    let piece = quote_piece(rng, text);
    let who = pick(rng, if zh { ZH_USERS } else { EN_USERS });
    match (zh, rng.below(3)) {
        (true, 0) => format!("“{piece}”"),
        (true, 1) => format!("{who}说：“{piece}”"),
        (true, _) => format!("书中写道：{piece}"),
        (false, 0) => format!("\"{piece}\""),
        (false, 1) => format!("As {who} put it: \"{piece}\""),
        (false, _) => format!("{piece} (quoted by {who})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn letters(s: &str) -> String {
        s.chars().filter(|c| c.is_alphanumeric()).collect()
    }

    proptest! {
        /// A repost holds the whole (trimmed) text; a quote's piece lies inside the text.
        #[test]
        fn reposts_contain_and_quotes_are_contained(seed in any::<u64>(), zh in any::<bool>(), n in 1usize..40) {
            let sentence = if zh { "天下大势，分久必合，合久必分。" } else { "The sea was calm that night. " };
            let text = sentence.repeat(n);
            let mut rng = SplitMix64::new(seed);
            let r = repost(&mut rng, &text);
            prop_assert!(r.contains(text.trim()));
            prop_assert!(r.len() > text.trim().len());
            let piece = quote_piece(&mut rng.clone(), &text);
            let q = quote(&mut rng, &text);
            prop_assert!(!letters(piece).is_empty());
            prop_assert!(text.contains(piece));
            prop_assert!(q.contains(piece), "{q:?}");

        }
    }
}
