//! Features: what a document is reduced to before fingerprinting.
//!
//! A feature is a 64-bit hash (XXH3-64, seed 0, of the feature's UTF-8 bytes) with an integer
//! weight. Four methods ([`Method`]):
//!
//! - **`jieba`**: Chinese word segmentation (jieba-rs, default dictionary, no HMM), TF-IDF
//!   weights from an IDF dictionary (bundled jieba one by default; unknown words get the median
//!   IDF), stop words removed, words shorter than `min_word_chars` characters or without a
//!   letter/digit dropped, top-N words by weight. Weight = `round(tf × idf × 1000)` (at least 1).
//! - **`chars`**: character n-grams over the document's letters and digits (punctuation and
//!   white space are skipped, so re-punctuated copies match). Weight = occurrences.
//! - **`words`**: word n-grams, words being runs of letters/digits (each Han, kana, Thai, …
//!   character is a word of its own), joined by one space. Weight = occurrences.
//! - **`auto`** (default): per document, by script — Han-heavy text (Han characters ≥ 30 % of
//!   letters and digits, and more Han than kana) uses `jieba`; text mostly in scripts written
//!   without spaces (kana, Thai, Lao, Khmer, Myanmar) uses `chars`; everything else `words`.
//!
//! If the chosen method yields no feature but the text has letters or digits (a one-word
//! post, a text of stop words), the `chars` method is used instead, so every document with
//! any letter or digit gets a fingerprint. A text with fewer letters/digits than `n` is one
//! feature (the whole run).
//!
//! ```
//! use neardup::features::{FeatureExtractor, FeatureOptions, Method};
//! let fx = FeatureExtractor::new(&FeatureOptions { method: Method::Words, word_ngram: 1, ..Default::default() }).unwrap();
//! let f = fx.features("the cat sat on the mat");
//! assert_eq!(f[0].text, "the");
//! assert_eq!(f[0].weight, 2);
//! ```

use std::path::PathBuf;
use std::sync::{Arc, LazyLock};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::hash::{xxh3, FastBuild};
use crate::idf::{IdfTable, StopWords};
use crate::simhash::{UnitAccumulator, WeightedAccumulator};

pub(crate) use super::classes::{is_alphanumeric, numeral_at, script_counts, ScriptCounts};
pub use super::classes::{is_han, is_spaceless_script, is_word_char, words_each, Words};
pub use super::packed::{char_codes_each, chars_each, PackedChars, MAX_CODES, PACK_PIECE};

/// The feature method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// Per document by script (see the module docs).
    #[default]
    Auto,
    /// jieba segmentation with TF-IDF weights.
    Jieba,
    /// Character n-gram shingles.
    Chars,
    /// Word n-gram shingles.
    Words,
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Method::Auto => "auto",
            Method::Jieba => "jieba",
            Method::Chars => "chars",
            Method::Words => "words",
        })
    }
}

impl std::str::FromStr for Method {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "auto" => Ok(Method::Auto),
            "jieba" => Ok(Method::Jieba),
            "chars" => Ok(Method::Chars),
            "words" => Ok(Method::Words),
            _ => Err(Error::Config(format!(
                "unknown feature method `{s}`; use auto, jieba, chars or words"
            ))),
        }
    }
}

/// How many jieba words take part.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum TopN {
    /// Every term (the default: measured most stable — a one-character edit moves no word in
    /// or out of a top-N cut; see README "Choosing the defaults").
    #[default]
    All,
    /// `clamp(normalised bytes / 120, 5, 200)` (cppjieba's rule).
    Auto,
    /// Exactly this many (the highest weights).
    #[serde(untagged)]
    Fixed(usize),
}

impl TopN {
    /// The number of words for a normalised text of `bytes` bytes.
    pub fn resolve(self, bytes: usize) -> usize {
        match self {
            TopN::All => usize::MAX,
            TopN::Auto => (bytes / 120).clamp(5, 200),
            TopN::Fixed(n) => n,
        }
    }
}

/// Feature options; part of the fingerprint configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FeatureOptions {
    /// The method.
    pub method: Method,
    /// `n` of the `chars` method (≥ 1).
    pub char_ngram: usize,
    /// `n` of the `words` method (≥ 1).
    pub word_ngram: usize,
    /// Words kept by the `jieba` method.
    pub top_n: TopN,
    /// Minimum characters of a `jieba` word.
    pub min_word_chars: usize,
    /// A user IDF dictionary (`word idf` a line) instead of the bundled jieba one.
    pub idf_file: Option<PathBuf>,
    /// A user stop-word list (a word a line) instead of the bundled one.
    pub stopwords_file: Option<PathBuf>,
}

impl Default for FeatureOptions {
    fn default() -> Self {
        FeatureOptions {
            method: Method::Auto,
            char_ngram: 3,
            word_ngram: 1,
            top_n: TopN::All,
            min_word_chars: 2,
            idf_file: None,
            stopwords_file: None,
        }
    }
}

/// A feature with its text, for explanations and tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedFeature {
    /// The feature's text (a word, or n-gram).
    pub text: String,
    /// XXH3-64 (seed 0) of `text`.
    pub hash: u64,
    /// Its weight.
    pub weight: u64,
}

static JIEBA: LazyLock<jieba_rs::Jieba> = LazyLock::new(jieba_rs::Jieba::new);

/// Extracts features and simhashes from **normalised** text.
#[derive(Debug, Clone)]
pub struct FeatureExtractor {
    opts: FeatureOptions,
    /// A user dictionary; `None`: the bundled one, parsed on first use.
    idf: Option<Arc<IdfTable>>,
    stop: Arc<StopWords>,
}

impl FeatureExtractor {
    /// Builds an extractor, loading the IDF dictionary and stop words.
    pub fn new(opts: &FeatureOptions) -> Result<Self> {
        if opts.char_ngram == 0 || opts.char_ngram > 64 {
            return Err(Error::Config(format!(
                "char_ngram = {} is out of range; use 1..=64 (default 3)",
                opts.char_ngram
            )));
        }
        if opts.word_ngram == 0 || opts.word_ngram > 16 {
            return Err(Error::Config(format!(
                "word_ngram = {} is out of range; use 1..=16 (default 1)",
                opts.word_ngram
            )));
        }
        if let TopN::Fixed(0) = opts.top_n {
            return Err(Error::Config(
                "top_n = 0 keeps no word; use a positive number, all or auto".into(),
            ));
        }
        let idf = match &opts.idf_file {
            Some(p) => Some(Arc::new(IdfTable::from_file(p)?)),
            None => None,
        };
        let stop = match &opts.stopwords_file {
            Some(p) => Arc::new(StopWords::from_file(p)?),
            None => StopWords::bundled(),
        };
        Ok(FeatureExtractor {
            opts: opts.clone(),
            idf,
            stop,
        })
    }

    /// The options.
    pub fn options(&self) -> &FeatureOptions {
        &self.opts
    }

    /// The IDF table in use.
    pub fn idf(&self) -> &IdfTable {
        match &self.idf {
            Some(t) => t,
            None => IdfTable::bundled(),
        }
    }

    /// The IDF table's digest (the bundled one's without parsing it).
    pub fn idf_digest(&self) -> u64 {
        match &self.idf {
            Some(t) => t.digest(),
            None => IdfTable::bundled_digest(),
        }
    }

    /// The stop words in use.
    pub fn stopwords(&self) -> &StopWords {
        &self.stop
    }

    /// Loads jieba's dictionary and the IDF table now rather than on the first Chinese
    /// document.
    pub fn warm_up(&self) {
        LazyLock::force(&JIEBA);
        self.idf();
    }

    /// The concrete method used for `text` (resolves [`Method::Auto`]).
    pub fn method_for(&self, text: &str) -> Method {
        match self.opts.method {
            Method::Auto => detect_method(text),
            m => m,
        }
    }

    /// The simhash of normalised `text`, and the concrete method used; `None` when the text
    /// has no letter or digit.
    pub fn simhash(&self, text: &str) -> Option<(u64, Method)> {
        let method = self.method_for(text);
        let got = match method {
            Method::Jieba => self.jieba_simhash(text),
            Method::Words => self.words_simhash(text),
            Method::Chars | Method::Auto => None,
        };
        match got {
            Some(h) => Some((h, method)),
            None => self.chars_simhash(text).map(|h| (h, Method::Chars)),
        }
    }

    /// All features of normalised `text`, aggregated, heaviest first (ties by hash), with the
    /// method used. For `jieba` only the top-N words are returned: exactly the features that
    /// make the simhash.
    pub fn features_with_method(&self, text: &str) -> (Vec<NamedFeature>, Method) {
        let method = self.method_for(text);
        let mut out = match method {
            Method::Jieba => self.jieba_features(text),
            Method::Words => {
                aggregate(|f: &mut dyn FnMut(&[u8])| words_each(text, self.opts.word_ngram, f))
            }
            _ => Vec::new(),
        };
        let mut used = method;
        if out.is_empty() {
            out = aggregate(|f: &mut dyn FnMut(&[u8])| chars_each(text, self.opts.char_ngram, f));
            used = Method::Chars;
        }
        out.sort_by(|a, b| {
            b.weight
                .cmp(&a.weight)
                .then(a.hash.cmp(&b.hash))
                .then(a.text.cmp(&b.text))
        });
        (out, used)
    }

    /// All features of normalised `text` (see [`features_with_method`](Self::features_with_method)).
    pub fn features(&self, text: &str) -> Vec<NamedFeature> {
        self.features_with_method(text).0
    }

    fn chars_simhash(&self, text: &str) -> Option<u64> {
        let mut acc = UnitAccumulator::new();
        chars_each(text, self.opts.char_ngram, |g: &[u8]| acc.add(xxh3(g)));
        (acc.count() > 0).then(|| acc.finish())
    }

    fn words_simhash(&self, text: &str) -> Option<u64> {
        let mut acc = UnitAccumulator::new();
        words_each(text, self.opts.word_ngram, &mut |g| acc.add(xxh3(g)));
        (acc.count() > 0).then(|| acc.finish())
    }

    /// jieba terms as (weight, hash, word); when a top-N cut applies, the kept ones sorted by
    /// weight desc, hash asc, word asc.
    fn jieba_weighted<'t>(&self, text: &'t str) -> Vec<(u64, u64, &'t str)> {
        // Sized for about one distinct term in sixteen bytes, so that most documents never
        // grow it.
        let mut tf: std::collections::HashMap<&str, u64, FastBuild> =
            std::collections::HashMap::with_capacity_and_hasher(
                text.len().min(JIEBA_CHUNK) / 16,
                FastBuild::default(),
            );
        // Segment in bounded chunks cut where jieba itself splits, so memory stays bounded
        // for huge documents and the result equals segmenting the whole text at once.
        for chunk in JiebaChunks::new(text, JIEBA_CHUNK) {
            for t in JIEBA.cut(chunk, false) {
                let t = t.word;
                if self.is_term(t) {
                    *tf.entry(t).or_insert(0) += 1;
                }
            }
        }
        let idf = self.idf();
        let mut words: Vec<(u64, u64, &str)> = tf
            .into_iter()
            .map(|(w, n)| {
                let h = xxh3(w.as_bytes());
                let q = (n as f64 * idf.idf_hashed(h) * 1000.0).round();
                let q = if q >= 1.0 { q.min(1e15) as u64 } else { 1 };
                (q, h, w)
            })
            .collect();
        let top = self.opts.top_n.resolve(text.len());
        if top < words.len() {
            words.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(b.2)));
            words.truncate(top);
        }
        words
    }

    #[inline]
    fn is_term(&self, w: &str) -> bool {
        let mut chars = 0;
        let mut alnum = false;
        for c in w.chars() {
            chars += 1;
            alnum |= is_word_char(c);
        }
        alnum && chars >= self.opts.min_word_chars && !self.stop.contains(w)
    }

    fn jieba_simhash(&self, text: &str) -> Option<u64> {
        let words = self.jieba_weighted(text);
        if words.is_empty() {
            return None;
        }
        let mut acc = WeightedAccumulator::new();
        for (q, h, _) in &words {
            acc.add(*h, *q);
        }
        Some(acc.finish())
    }

    fn jieba_features(&self, text: &str) -> Vec<NamedFeature> {
        self.jieba_weighted(text)
            .into_iter()
            .map(|(q, h, w)| NamedFeature {
                text: w.to_string(),
                hash: h,
                weight: q,
            })
            .collect()
    }
}

/// Target size of the pieces jieba segments at once.
const JIEBA_CHUNK: usize = 64 * 1024;

/// Splits text into pieces of about `target` bytes at characters where jieba splits anyway
/// (white space and punctuation outside `[A-Za-z0-9+#&._%-]`).
struct JiebaChunks<'a> {
    rest: &'a str,
    target: usize,
}

impl<'a> JiebaChunks<'a> {
    fn new(text: &'a str, target: usize) -> Self {
        JiebaChunks { rest: text, target }
    }
}

impl<'a> Iterator for JiebaChunks<'a> {
    type Item = &'a str;
    fn next(&mut self) -> Option<&'a str> {
        if self.rest.is_empty() {
            return None;
        }
        if self.rest.len() <= 2 * self.target {
            return Some(std::mem::take(&mut self.rest));
        }
        let splits = |c: char| !(is_word_char(c) || "+#&._%-".contains(c));
        let from = (self.target..)
            .find(|&i| self.rest.is_char_boundary(i))
            .unwrap_or(self.rest.len());
        let mut cut = None;
        for (i, c) in self.rest[from..].char_indices() {
            if splits(c) {
                cut = Some(from + i + c.len_utf8());
                break;
            }
            if i > self.target {
                break;
            }
        }
        // No boundary within a window (a 64 KB "word"): cut at a char boundary anyway.
        let cut = cut.unwrap_or_else(|| {
            (2 * self.target..)
                .find(|&i| self.rest.is_char_boundary(i))
                .unwrap_or(self.rest.len())
        });
        let (head, tail) = self.rest.split_at(cut);
        self.rest = tail;
        Some(head)
    }
}

/// Calls `f` with every occurrence of a feature produced by `each`, and aggregates them.
fn aggregate(each: impl FnOnce(&mut dyn FnMut(&[u8]))) -> Vec<NamedFeature> {
    let mut map: std::collections::HashMap<Vec<u8>, u64, FastBuild> = Default::default();
    each(&mut |g: &[u8]| *map.entry(g.to_vec()).or_insert(0) += 1);
    map.into_iter()
        .map(|(g, n)| NamedFeature {
            hash: xxh3(&g),
            text: String::from_utf8(g).unwrap_or_default(),
            weight: n,
        })
        .collect()
}

/// The method `auto` picks for `text` (see the module docs).
pub fn detect_method(text: &str) -> Method {
    let (alnum, scripts) = script_counts(text);
    method_of(alnum, scripts)
}

/// The share of `text`'s letters and digits written in Han or another spaceless script
/// (`None` without any): `auto` cuts text into characters from 0.3 on, into words below.
pub fn spaceless_share(text: &str) -> Option<f64> {
    let (alnum, s) = script_counts(text);
    s.spaceless_share(alnum)
}

/// `auto`'s rule from the number of letters/digits and the script counts.
pub(crate) fn method_of(alnum: usize, scripts: ScriptCounts) -> Method {
    let ScriptCounts {
        han,
        kana,
        spaceless,
    } = scripts;
    if han > 0 && han * 10 >= alnum * 3 && han > kana {
        Method::Jieba
    } else if (han + spaceless) > 0 && (han + spaceless) * 10 >= alnum * 3 {
        Method::Chars
    } else {
        Method::Words
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_detection() {
        assert_eq!(detect_method("今天天气很好，我们去公园散步"), Method::Jieba);
        assert_eq!(detect_method("the quick brown fox"), Method::Words);
        assert_eq!(detect_method("ภาษาไทยเขียนติดกัน"), Method::Chars);
        assert_eq!(detect_method("ひらがなとカタカナの文章です"), Method::Chars);
        assert_eq!(
            detect_method("linux 内核 documentation for the kernel"),
            Method::Words
        );
    }

    #[test]
    fn jieba_top_n_and_weights() {
        let fx = FeatureExtractor::new(&FeatureOptions {
            method: Method::Jieba,
            top_n: TopN::Fixed(3),
            ..Default::default()
        })
        .unwrap();
        let f = fx.features("今天纽约的天气真好啊，京华大酒店的张尧经理吃了一只北京烤鸭。后天纽约的天气不好，昨天纽约的天气也不好，北京烤鸭真好吃");
        let words: Vec<&str> = f.iter().map(|f| f.text.as_str()).collect();
        assert_eq!(words.len(), 3);
        assert!(
            words.contains(&"纽约") && words.contains(&"天气"),
            "{words:?}"
        );
        assert!(f.windows(2).all(|w| w[0].weight >= w[1].weight));
    }

    #[test]
    fn falls_back_to_chars_when_no_word_survives() {
        let fx = FeatureExtractor::new(&FeatureOptions {
            method: Method::Jieba,
            ..Default::default()
        })
        .unwrap();
        let (f, m) = fx.features_with_method("的了");
        assert_eq!(m, Method::Chars);
        assert_eq!(f.len(), 1);
        assert!(fx.simhash("，。").is_none());
    }

    #[test]
    fn jieba_chunking_equals_whole_text() {
        let fx = FeatureExtractor::new(&FeatureOptions {
            method: Method::Jieba,
            top_n: TopN::Fixed(1000),
            ..Default::default()
        })
        .unwrap();
        let text = "今天纽约的天气真好啊，京华大酒店的张尧经理吃了一只北京烤鸭。linux-kernel 3.2 版本发布 ".repeat(3000);
        let whole: Vec<&str> = JIEBA
            .cut(&text, false)
            .into_iter()
            .map(|t| t.word)
            .collect();
        let chunked: Vec<&str> = JiebaChunks::new(&text, 1000)
            .flat_map(|c| JIEBA.cut(c, false).into_iter().map(|t| t.word))
            .collect();
        assert_eq!(whole, chunked);
        assert!(JiebaChunks::new(&text, 1000).count() > 50);
        assert!(fx.simhash(&text).is_some());
    }

    #[test]
    fn bad_options_are_named() {
        let e = FeatureExtractor::new(&FeatureOptions {
            char_ngram: 0,
            ..Default::default()
        })
        .unwrap_err()
        .to_string();
        assert!(e.contains("char_ngram"), "{e}");
    }
}
