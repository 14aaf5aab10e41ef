//! Passages of long texts: finds a quote — one to three sentences of a long document, in
//! quotation marks or after an attribution — inside the document it was taken from.
//!
//! The long path compares whole texts, so a quote of two sentences shares too few of a long
//! document's shingles to be a candidate there; the short path indexes only texts within its
//! reach. With passages on ([`PassageOptions`], `neardup dedup --passages`), every text on the
//! long path is also indexed by its **fragments**: the runs of its normalised text between
//! sentence ends and line breaks (`。 . ！ ! ？ ? ｡` and new lines), each keyed by the XXH3 of
//! its letters and digits. A text within the short path's reach is cut the same way; since
//! both sides are cut by the same rule, every fragment that lies wholly inside the quote is a
//! fragment of its source, key for key. Only the quote's first and last fragments may be cut
//! differently — an attribution before the first sentence (`某某说：“…`), a quote that ends
//! inside a sentence — so the first is also looked up by each of its suffixes and the last by
//! each of its prefixes.
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

/// The letters and digits of each fragment of `text`, in order (empty fragments left out).
fn fragments(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in text.chars() {
        if ends_fragment(c) {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
        } else if is_word_char(c) {
            cur.push(c);
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
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
    /// The sketch of a stored long text (`text` normalised with its line breaks kept).
    pub fn of_stored(text: &str, opts: &PassageOptions) -> Self {
        let mut s = PassageSketch::default();
        s.add_keys(&fragments(text), opts);
        s
    }

    /// The sketch of a checked text (normalised with its line breaks kept).
    pub fn of_probe(text: &str, opts: &PassageOptions) -> Self {
        let mut s = PassageSketch::default();
        s.add_probes(&fragments(text), opts);
        s
    }

    /// Both: a text that is stored on the long path and checked as well.
    pub fn of_text(text: &str, opts: &PassageOptions, stored: bool, checked: bool) -> Self {
        let f = fragments(text);
        let mut s = PassageSketch::default();
        if stored {
            s.add_keys(&f, opts);
        }
        if checked {
            s.add_probes(&f, opts);
        }
        s
    }

    fn add_keys(&mut self, f: &[String], opts: &PassageOptions) {
        let min = opts.min_fragment as usize;
        self.keys = f
            .iter()
            .filter(|t| t.chars().count() >= min)
            .map(|t| xxh3(t.as_bytes()))
            .collect();
        self.keys.sort_unstable();
        self.keys.dedup();
    }

    fn add_probes(&mut self, f: &[String], opts: &PassageOptions) {
        let min = opts.min_fragment as usize;
        let last = f.len().saturating_sub(1);
        self.letters = 0;
        self.han = 0;
        for (i, t) in f.iter().enumerate() {
            let starts: Vec<usize> = t.char_indices().map(|(b, _)| b).collect();
            let n = starts.len();
            self.letters += n as u32;
            self.han += t.chars().filter(|&c| is_han(c)).count() as u32;
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
                // Every proper suffix of at least `min` letters (an attribution before it).
                for (k, &b) in starts.iter().enumerate().skip(1) {
                    if n - k < min {
                        break;
                    }
                    push(&t[b..], n - k);
                }
            }
            if i == last {
                // Every proper prefix of at least `min` letters (a quote that stops inside a
                // sentence, an attribution after it).
                for k in min..n {
                    push(&t[..starts[k]], k);
                }
            }
        }
    }

    /// A stored document's sketch from its keys (as [`PassageSketch::keys`] gave them).
    pub fn from_keys(mut keys: Vec<u64>) -> Self {
        keys.sort_unstable();
        keys.dedup();
        PassageSketch {
            keys,
            ..PassageSketch::default()
        }
    }

    /// The keys it is indexed by (sorted, distinct; empty when it is not stored).
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

/// Marks an index value as a list in `PassageIndex::many`.
const MANY: u32 = 1 << 31;
/// An index value: the key is held by more than `max_holders` documents.
const SATURATED: u32 = u32::MAX;

/// The stored long texts' fragments (see the module docs).
#[derive(Debug, Default)]
pub struct PassageIndex {
    opts: PassageOptions,
    /// Key → a document below [`MANY`], or `MANY | i` for `many[i]`, or [`SATURATED`].
    keys: HashMap<u64, u32>,
    many: Vec<Vec<u32>>,
}

impl PassageIndex {
    /// An empty index.
    pub fn new(opts: PassageOptions) -> Self {
        PassageIndex {
            opts,
            keys: HashMap::new(),
            many: Vec::new(),
        }
    }

    /// Indexes document `doc` (below 2³¹) by its fragments.
    pub fn insert(&mut self, doc: u32, s: &PassageSketch) {
        debug_assert!(doc < MANY, "passage documents are numbered below 2^31");
        let max = self.opts.max_holders as usize;
        for &k in &s.keys {
            match self.keys.get_mut(&k) {
                None => {
                    self.keys.insert(k, doc);
                }
                Some(v) if *v == SATURATED => {}
                Some(v) if *v & MANY == 0 => {
                    if max < 2 {
                        *v = SATURATED;
                    } else {
                        self.many.push(vec![*v, doc]);
                        *v = MANY | (self.many.len() - 1) as u32;
                    }
                }
                Some(v) => {
                    let list = &mut self.many[(*v & !MANY) as usize];
                    if list.len() >= max {
                        *list = Vec::new();
                        *v = SATURATED;
                    } else {
                        list.push(doc);
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

    /// The documents holding `key`: `None` when it counts for none (held by more than
    /// `max_holders`).
    fn holders(&self, key: u64) -> Option<&[u32]> {
        match self.keys.get(&key) {
            None => Some(&[]),
            Some(&SATURATED) => None,
            Some(v) if v & MANY == 0 => Some(std::slice::from_ref(v)),
            Some(v) => Some(&self.many[(v & !MANY) as usize]),
        }
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.keys.capacity() * (8 + 4 + 1)
            + self.many.capacity() * std::mem::size_of::<Vec<u32>>()
            + self.many.iter().map(|l| l.capacity() * 4).sum::<usize>()
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
    // (order, index, document, fragment, letters) of every hit.
    let mut hits: Vec<(u64, u32, u32, u16, u16)> = Vec::new();
    let mut held: Vec<(usize, &[u32])> = Vec::new();
    'probe: for p in &s.probes {
        held.clear();
        for (i, x) in indexes.iter().enumerate() {
            match x.holders(p.key) {
                None => continue 'probe,
                Some([]) => {}
                Some(docs) => held.push((i, docs)),
            }
        }
        if held.iter().map(|(_, d)| d.len()).sum::<usize>() > max {
            continue;
        }
        for &(i, docs) in &held {
            hits.extend(
                docs.iter()
                    .map(|&d| (order(i, d), i as u32, d, p.fragment, p.letters)),
            );
        }
    }
    // Per document, each fragment's longest hit, summed; documents in arrival order.
    hits.sort_unstable_by(|a, b| (a.0, a.3, b.4).cmp(&(b.0, b.3, a.4)));
    let mut best: Option<(usize, u32, u32)> = None;
    let mut i = 0;
    while i < hits.len() {
        let (at, index, doc) = (hits[i].0, hits[i].1, hits[i].2);
        let mut found = 0u32;
        let mut last_fragment = None;
        while i < hits.len() && hits[i].0 == at {
            if last_fragment != Some(hits[i].3) {
                found += u32::from(hits[i].4);
                last_fragment = Some(hits[i].3);
            }
            i += 1;
        }
        if best.is_none_or(|(_, _, f)| found > f) {
            best = Some((index as usize, doc, found));
        }
    }
    best
}

#[cfg(test)]
mod tests;
