//! Passages of long texts: finds a quote — one to three sentences of a long document, in
//! quotation marks or after an attribution — inside the document it was taken from.
//!
//! The long path compares whole texts, so a quote of two sentences shares too few of a long
//! document's shingles to be a candidate there; the short path indexes only texts within its
//! reach. With passages (on by default: [`PolicyOptions::passages`](crate::policy::PolicyOptions::passages);
//! `neardup dedup --no-passages` turns them off), every text on the long path is also indexed
//! by its **fragments**: the runs of its normalised text between
//! sentence ends and line breaks (`。 . ！ ! ？ ? ｡` and new lines), each keyed by the XXH3 of
//! its letters and digits. A text within the short path's reach is cut the same way; since
//! both sides are cut by the same rule, every fragment that lies wholly inside the quote is a
//! fragment of its source, key for key. Only the quote's first and last fragments may be cut
//! differently — an attribution before the first sentence (`某某说：“…`), a quote that ends
//! inside a sentence — so the first is also looked up by each of its suffixes and the last by
//! each of its prefixes.
//!
//! The fragments found must be one run of the stored document, as a quote is: the next one
//! found is the document's next fragment, and no fragment of the text's own lies between two
//! found ones. A page of a site template, its own body between the template's header and
//! footer, is not a quote of another page that shares the header and footer, nor is a text
//! that takes sentences from here and there.
//!
//! A stored document matches when the fragments found in it hold at least
//! [`PassageOptions::min_share`] of the quote's letters and digits (the rest is the
//! attribution) and at least [`PassageOptions::han_min_chars`] (Han-heavy) or
//! [`PassageOptions::other_min_chars`] of them. A fragment held by more than
//! [`PassageOptions::max_holders`] stored documents names no one source (a template's
//! sentence, a licence line) and counts for none. The verdict is
//! [`crate::detect::Stage::Passage`] with the share found as its similarity.
//!
//! The relation is one way: a quote stored before its source does not make the source a
//! duplicate of the quote (a long document is never removed for a sentence of it seen first).
//!
//! ```
//! use neardup::detect::passages::{PassageIndex, PassageOptions, PassageSketch};
//! use neardup::detect::Stage;
//!
//! let opts = PassageOptions::default();
//! let mut index = PassageIndex::new(opts.clone());
//! let article = "天下大势，分久必合，合久必分。周末七国分争，并入于秦。\n及秦灭之后，楚、汉分争，又并入于汉。";
//! index.insert(0, &PassageSketch::of_stored(article, &opts));
//! let quote = PassageSketch::of_probe("罗贯中说：“周末七国分争，并入于秦。及秦灭之后，楚、汉分争，又并入于汉。”", &opts);
//! let v = index.find(&quote).unwrap();
//! assert_eq!((v.of, v.stage), (0, Stage::Passage));
//! assert!(v.similarity.unwrap() > 0.8);
//! ```

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_64 as xxh3;

use crate::detect::{Stage, Verdict};
use crate::error::{Error, Result};
use crate::features::is_word_char;
use crate::hash::FastBuild;
use crate::text::packed::is_ideograph_lead;

/// Options of the passage index (serde defaults = [`Default`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PassageOptions {
    /// A fragment is indexed and looked up when it has at least this many letters/digits.
    /// Default 8.
    pub min_fragment: u32,
    /// The fragments found in one stored document hold at least this share of the checked
    /// text's letters/digits. Default 0.8 (what the short path's quotes leave to an
    /// attribution: [`ContainmentOptions::edge`](crate::shorttext::ContainmentOptions::edge)).
    pub min_share: f64,
    /// … and at least this many of them when the checked text is Han-heavy. Default 10.
    pub han_min_chars: u32,
    /// … and at least this many otherwise. Default 30.
    pub other_min_chars: u32,
    /// A fragment held by more stored documents than this counts for none. Default 1.
    pub max_holders: u32,
}

impl Default for PassageOptions {
    fn default() -> Self {
        PassageOptions {
            min_fragment: 8,
            min_share: 0.8,
            han_min_chars: 10,
            other_min_chars: 30,
            max_holders: 1,
        }
    }
}

impl PassageOptions {
    /// Checks the options; the error names the setting and its range.
    pub fn check(&self) -> Result<()> {
        if self.min_fragment == 0 {
            return Err(Error::Config(
                "passages.min_fragment must be at least 1 letter (default 8)".into(),
            ));
        }
        if !(self.min_share > 0.0 && self.min_share <= 1.0) {
            return Err(Error::Config(format!(
                "passages.min_share = {} must lie in (0, 1] (default 0.8)",
                self.min_share
            )));
        }
        if self.max_holders == 0 {
            return Err(Error::Config(
                "passages.max_holders must be at least 1 (default 1)".into(),
            ));
        }
        Ok(())
    }
}

/// Whether `c` ends a fragment.
fn ends_fragment(c: char) -> bool {
    matches!(c, '\n' | '\r' | '。' | '｡' | '.' | '！' | '!' | '？' | '?')
}

/// A text's fragments: its letters and digits, and each fragment's byte range in them with
/// its number of letters (empty fragments left out).
struct Fragments {
    /// The letters and digits back to back (UTF-8: whole characters only).
    letters: Vec<u8>,
    ranges: Vec<(usize, usize, u32)>,
    /// Letters in all, and of them Han.
    count: u32,
    han: u32,
}

impl Fragments {
    /// The fragments of `text`, which also ends one at each byte offset of `breaks` (where a
    /// line break was folded away: [`Normalizer::normalize_with_breaks`](crate::normalize::Normalizer::normalize_with_breaks)).
    #[cfg(test)]
    fn of(text: &str, breaks: &[usize]) -> Self {
        let mut f = Fragments {
            letters: Vec::new(),
            ranges: Vec::new(),
            count: 0,
            han: 0,
        };
        f.cut(text, breaks);
        f
    }

    /// Runs `each` with the fragments of `text` (see [`Fragments::of`]), in the thread's
    /// buffers: a document's fragments allocate nothing once the buffers have grown.
    fn with<R>(text: &str, breaks: &[usize], each: impl FnOnce(&Fragments) -> R) -> R {
        thread_local! {
            static SCRATCH: std::cell::RefCell<Fragments> = const {
                std::cell::RefCell::new(Fragments {
                    letters: Vec::new(),
                    ranges: Vec::new(),
                    count: 0,
                    han: 0,
                })
            };
        }
        SCRATCH.with(|f| {
            let mut f = f.borrow_mut();
            f.cut(text, breaks);
            each(&f)
        })
    }

    /// Cuts `text` into this (emptied first).
    fn cut(&mut self, text: &str, breaks: &[usize]) {
        let f = self;
        f.letters.clear();
        f.ranges.clear();
        (f.count, f.han) = (0, 0);
        let (mut start, mut chars) = (0, 0u32);
        let close = |f: &mut Fragments, start: &mut usize, chars: &mut u32| {
            if *chars > 0 {
                f.ranges.push((*start, f.letters.len(), *chars));
            }
            *start = f.letters.len();
            *chars = 0;
        };
        let b = text.as_bytes();
        let mut breaks = breaks.iter().copied();
        let mut next_break = breaks.next().unwrap_or(usize::MAX);
        let mut at = 0;
        while at < b.len() {
            while next_break <= at {
                close(f, &mut start, &mut chars);
                next_break = breaks.next().unwrap_or(usize::MAX);
            }
            let x = b[at];
            if x < 0x80 {
                // ASCII: a letter or digit is a word character; of the rest, `\n \r . ! ?` end
                // a fragment.
                at += 1;
                if x.is_ascii_alphanumeric() {
                    f.letters.push(x);
                    chars += 1;
                    f.count += 1;
                } else if matches!(x, b'\n' | b'\r' | b'.' | b'!' | b'?') {
                    close(f, &mut start, &mut chars);
                }
                continue;
            }
            // U+4E00..U+9FFF is a Han letter, copied as it is; other characters are decoded.
            if is_ideograph_lead(x, b[at + 1]) {
                f.letters.extend_from_slice(&b[at..at + 3]);
                chars += 1;
                f.count += 1;
                f.han += 1;
                at += 3;
                continue;
            }
            let c = text[at..].chars().next().expect("a character starts here");
            let len = c.len_utf8();
            if ends_fragment(c) {
                close(f, &mut start, &mut chars);
            } else if is_word_char(c) {
                f.letters.extend_from_slice(&b[at..at + len]);
                chars += 1;
                f.count += 1;
                f.han += u32::from(is_han(c));
            }
            at += len;
        }
        close(f, &mut start, &mut chars);
    }

    /// Fragment `i`'s letters, as bytes.
    fn bytes(&self, i: usize) -> &[u8] {
        let (s, e, _) = self.ranges[i];
        &self.letters[s..e]
    }

    /// Fragment `i`'s letters.
    fn text(&self, i: usize) -> &str {
        std::str::from_utf8(self.bytes(i)).expect("whole characters of a UTF-8 text")
    }
}

fn is_han(c: char) -> bool {
    matches!(c as u32, 0x3400..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x2FFFF)
}

/// One key to look up: a fragment of the checked text (or a suffix of its first, a prefix of
/// its last) and how many letters/digits it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Probe {
    key: u64,
    fragment: u16,
    letters: u16,
}

/// A document's passages: the keys it is indexed by (a text on the long path) and the keys it
/// looks up (a text within the short path's reach).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PassageSketch {
    /// The distinct keys of its fragments of at least `min_fragment` letters, sorted.
    keys: Vec<u64>,
    /// Its lookups (empty when it is not checked).
    probes: Vec<Probe>,
    /// Its letters and digits.
    letters: u32,
    /// Of them Han.
    han: u32,
}

impl PassageSketch {
    /// The sketch of a stored long text (normalised; its line breaks as new lines).
    pub fn of_stored(text: &str, opts: &PassageOptions) -> Self {
        Self::of_text(text, &[], opts, true, false)
    }

    /// The sketch of a checked text (normalised; its line breaks as new lines).
    pub fn of_probe(text: &str, opts: &PassageOptions) -> Self {
        Self::of_text(text, &[], opts, false, true)
    }

    /// The sketch of normalised `text` with line breaks at `breaks` (byte offsets, ascending;
    /// [`Normalizer::normalize_with_breaks`](crate::normalize::Normalizer::normalize_with_breaks)):
    /// its keys when `stored` (a text on the long path), its lookups when `checked` (a text
    /// within the short path's reach).
    pub fn of_text(
        text: &str,
        breaks: &[usize],
        opts: &PassageOptions,
        stored: bool,
        checked: bool,
    ) -> Self {
        Fragments::with(text, breaks, |f| {
            let mut s = PassageSketch::default();
            if stored {
                s.add_keys(f, opts);
            }
            if checked {
                s.add_probes(f, opts);
            }
            s
        })
    }

    fn add_keys(&mut self, f: &Fragments, opts: &PassageOptions) {
        let keys = (0..f.ranges.len())
            .filter(|&i| f.ranges[i].2 >= opts.min_fragment)
            .map(|i| xxh3(f.bytes(i)));
        self.keys = first_occurrences(keys);
    }

    fn add_probes(&mut self, f: &Fragments, opts: &PassageOptions) {
        let min = opts.min_fragment as usize;
        let last = f.ranges.len().saturating_sub(1);
        // A probe that leaves out more letters than the share allows could never match: the
        // most that may be left out, as `find` computes the share.
        let n = f64::from(f.count);
        let mut slack = ((1.0 - opts.min_share) * n).floor().max(0.0) as usize;
        while slack < f.count as usize && (n - slack as f64 - 1.0) / n >= opts.min_share {
            slack += 1;
        }
        while slack > 0 && (n - slack as f64) / n < opts.min_share {
            slack -= 1;
        }
        self.letters = f.count;
        self.han = f.han;
        for i in 0..f.ranges.len() {
            let (t, n) = (f.text(i), f.ranges[i].2 as usize);
            let (Ok(fragment), true) = (u16::try_from(i), n >= min) else {
                continue;
            };
            let mut push = |piece: &str, letters: usize| {
                self.probes.push(Probe {
                    key: xxh3(piece.as_bytes()),
                    fragment,
                    letters: letters.min(u16::MAX as usize) as u16,
                })
            };
            push(t, n);
            if i == 0 {
                // Every proper suffix of at least `min` letters that leaves out at most
                // `slack` (an attribution before it).
                for (k, (b, _)) in t.char_indices().enumerate().skip(1) {
                    if n - k < min || k > slack {
                        break;
                    }
                    push(&t[b..], n - k);
                }
            }
            if i == last {
                // Every proper prefix of at least `min` letters that leaves out at most
                // `slack` (a quote that stops inside a sentence, an attribution after it).
                for (k, (b, _)) in t.char_indices().enumerate().skip(min.max(n - slack.min(n))) {
                    push(&t[..b], k);
                }
            }
        }
    }

    /// A stored document's sketch from its keys (as [`PassageSketch::keys`] gave them).
    pub fn from_keys(keys: Vec<u64>) -> Self {
        PassageSketch {
            keys: first_occurrences(keys),
            ..PassageSketch::default()
        }
    }

    /// The keys it is indexed by, in the order of its fragments, each once (where it first
    /// occurs); empty when it is not stored.
    pub fn keys(&self) -> &[u64] {
        &self.keys
    }

    /// The sketch without its lookups (what an index keeps of a stored document).
    pub fn stored_only(self) -> Self {
        PassageSketch::from_keys(self.keys)
    }

    /// The share of its letters that `found` of them are (at most 1).
    fn share(&self, found: u32) -> f64 {
        (f64::from(found) / f64::from(self.letters.max(1))).min(1.0)
    }

    /// Whether it holds keys to index.
    pub fn is_stored(&self) -> bool {
        !self.keys.is_empty()
    }

    /// Whether it holds keys to look up.
    pub fn is_checked(&self) -> bool {
        !self.probes.is_empty()
    }
}

/// `keys` without repeats, each where it first occurs.
fn first_occurrences(keys: impl IntoIterator<Item = u64>) -> Vec<u64> {
    let keys: Vec<u64> = keys.into_iter().collect();
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    if sorted.windows(2).all(|w| w[0] != w[1]) {
        return keys; // most texts repeat no sentence
    }
    let mut seen = std::collections::HashSet::<u64, FastBuild>::default();
    keys.into_iter().filter(|&k| seen.insert(k)).collect()
}

/// An index value that marks a list in `PassageIndex::many` (its low 32 bits the list).
const MANY: u64 = 1 << 63;
/// An index value: the key is held by more than `max_holders` documents.
const SATURATED: u64 = u64::MAX;

/// A holder of a key: the document and the key's rank among its keys (its place in the
/// document's order of fragments).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Holder {
    doc: u32,
    rank: u32,
}

impl Holder {
    fn pack(self) -> u64 {
        (u64::from(self.rank) << 32) | u64::from(self.doc)
    }
    fn unpack(v: u64) -> Self {
        Holder {
            doc: v as u32,
            rank: (v >> 32) as u32,
        }
    }
}

/// The stored long texts' fragments (see the module docs).
#[derive(Debug, Default)]
pub struct PassageIndex {
    opts: PassageOptions,
    /// Key → a [`Holder`] packed (`rank << 32 | doc`, below [`MANY`]), or `MANY | i` for
    /// `many[i]`, or [`SATURATED`].
    keys: HashMap<u64, u64, FastBuild>,
    many: Vec<Vec<Holder>>,
}

impl PassageIndex {
    /// An empty index.
    pub fn new(opts: PassageOptions) -> Self {
        PassageIndex {
            opts,
            keys: HashMap::default(),
            many: Vec::new(),
        }
    }

    /// Indexes document `doc` by its fragments.
    pub fn insert(&mut self, doc: u32, s: &PassageSketch) {
        let max = self.opts.max_holders as usize;
        for (rank, &k) in s.keys.iter().enumerate() {
            let h = Holder {
                doc,
                // A rank past 2³¹ (a document of billions of sentences) never adjoins another.
                rank: rank.min(i32::MAX as usize) as u32,
            };
            match self.keys.get_mut(&k) {
                None => {
                    self.keys.insert(k, h.pack());
                }
                Some(v) if *v == SATURATED => {}
                Some(v) if *v & MANY == 0 => {
                    if max < 2 {
                        *v = SATURATED;
                    } else {
                        self.many.push(vec![Holder::unpack(*v), h]);
                        *v = MANY | (self.many.len() - 1) as u64;
                    }
                }
                Some(v) => {
                    let list = &mut self.many[(*v & !MANY) as usize];
                    if list.len() >= max {
                        *list = Vec::new();
                        *v = SATURATED;
                    } else {
                        list.push(h);
                    }
                }
            }
        }
    }

    /// The stored document that holds the most of `s`'s letters in its fragments (of equally
    /// many, the first stored), when they are enough (see the module docs).
    pub fn find(&self, s: &PassageSketch) -> Option<Verdict> {
        find_across(&[self], s, |_, doc| u64::from(doc)).map(|(_, v)| v)
    }

    /// The stored document that holds the most of `s`'s letters in its fragments (of equally
    /// many, the first stored), and the share of them it holds, enough or not.
    pub fn best_share(&self, s: &PassageSketch) -> Option<(u32, f64)> {
        best_across(&[self], s, |_, doc| u64::from(doc))
            .map(|(_, doc, found)| (doc, s.share(found)))
    }

    /// The holders of `key`, into `out`; `false` when it counts for none (held by more than
    /// `max_holders`).
    fn holders(&self, key: u64, out: &mut Vec<Holder>) -> bool {
        match self.keys.get(&key) {
            None => {}
            Some(&SATURATED) => return false,
            Some(&v) if v & MANY == 0 => out.push(Holder::unpack(v)),
            Some(&v) => out.extend_from_slice(&self.many[(v & !MANY) as usize]),
        }
        true
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.keys.capacity() * (8 + 8 + 1)
            + self.many.capacity() * std::mem::size_of::<Vec<Holder>>()
            + self.many.iter().map(|l| l.capacity() * 8).sum::<usize>()
    }
}

/// [`PassageIndex::find`] over the documents of several indexes built with the same options
/// (the online engine's time segments): a fragment counts for none when more than
/// `max_holders` documents of them all hold it, and of equally good documents the one with the
/// least `order(index, doc)` (arrival order) is chosen. Returns the index and the verdict.
pub fn find_across(
    indexes: &[&PassageIndex],
    s: &PassageSketch,
    order: impl Fn(usize, u32) -> u64,
) -> Option<(usize, Verdict)> {
    let opts = &indexes.first()?.opts;
    let (index, doc, found) = best_across(indexes, s, order)?;
    let min_chars = if s.han * 2 >= s.letters {
        opts.han_min_chars
    } else {
        opts.other_min_chars
    };
    let share = s.share(found);
    (found >= min_chars && share >= opts.min_share).then_some((
        index,
        Verdict {
            of: doc,
            distance: None,
            similarity: Some(share),
            stage: Stage::Passage,
        },
    ))
}

/// The document (its index, its number) that holds the most of `s`'s letters in its
/// fragments, and how many (see [`find_across`]).
fn best_across(
    indexes: &[&PassageIndex],
    s: &PassageSketch,
    order: impl Fn(usize, u32) -> u64,
) -> Option<(usize, u32, u32)> {
    let max = indexes.first()?.opts.max_holders as usize;
    if s.probes.is_empty() || indexes.iter().all(|x| x.keys.is_empty()) {
        return None;
    }
    /// One probe found in one document.
    struct Hit {
        order: u64,
        index: u32,
        doc: u32,
        rank: u32,
        fragment: u16,
        letters: u16,
    }
    let mut hits: Vec<Hit> = Vec::new();
    let mut held: Vec<(usize, Holder)> = Vec::new();
    let mut one: Vec<Holder> = Vec::new();
    // The fragments looked up whole (a fragment's first probe is its whole), and of them
    // those whose key counts for none: they name no source, so they neither match nor part
    // the matched ones.
    let (mut whole, mut neutral): (Vec<u16>, Vec<u16>) = (Vec::new(), Vec::new());
    'probe: for p in &s.probes {
        let is_whole = whole.last() != Some(&p.fragment);
        if is_whole {
            whole.push(p.fragment);
        }
        held.clear();
        for (i, x) in indexes.iter().enumerate() {
            one.clear();
            if !x.holders(p.key, &mut one) {
                if is_whole {
                    neutral.push(p.fragment);
                }
                continue 'probe;
            }
            held.extend(one.iter().map(|&h| (i, h)));
        }
        if held.len() > max {
            if is_whole {
                neutral.push(p.fragment);
            }
            continue;
        }
        hits.extend(held.iter().map(|&(i, h)| Hit {
            order: order(i, h.doc),
            index: i as u32,
            doc: h.doc,
            rank: h.rank,
            fragment: p.fragment,
            letters: p.letters,
        }));
    }
    whole.retain(|f| neutral.binary_search(f).is_err());
    // How many of `of` lie strictly between fragments `a` and `b`.
    let between = |of: &[u16], a: u16, b: u16| {
        of.partition_point(|&f| f < b)
            .saturating_sub(of.partition_point(|&f| f <= a))
    };
    // Per document, each fragment's longest hit, summed; documents in arrival order.
    hits.sort_unstable_by(|a, b| {
        (a.order, a.fragment, b.letters).cmp(&(b.order, b.fragment, a.letters))
    });
    let mut best: Option<(usize, u32, u32)> = None;
    let mut i = 0;
    while i < hits.len() {
        let (at, index, doc) = (hits[i].order, hits[i].index, hits[i].doc);
        let mut found = 0u32;
        let mut last: Option<(u16, u32)> = None;
        let mut quoted = true;
        while i < hits.len() && hits[i].order == at {
            let h = &hits[i];
            if last.is_none_or(|(f, _)| f != h.fragment) {
                // A quote is one run of the document's fragments: the next fragment found is
                // the document's next one, and no fragment of the text's own (a page's body
                // between its template's header and footer) lies between them.
                // (A fragment that counts for none may lie between, in both.)
                if let Some((f, rank)) = last {
                    let skipped = between(&neutral, f, h.fragment) as u64;
                    let step = u64::from(h.rank).wrapping_sub(u64::from(rank));
                    quoted &=
                        between(&whole, f, h.fragment) == 0 && (1..=1 + skipped).contains(&step);
                }
                found += u32::from(h.letters);
                last = Some((h.fragment, h.rank));
            }
            i += 1;
        }
        if quoted && best.is_none_or(|(_, _, f)| found > f) {
            best = Some((index as usize, doc, found));
        }
    }
    best
}

#[cfg(test)]
mod tests;
