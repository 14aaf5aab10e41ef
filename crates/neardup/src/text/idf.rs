//! IDF dictionaries and stop-word lists for TF-IDF weighted features.
//!
//! The bundled IDF dictionary is jieba's (`data/jieba_idf.txt`, 270,132 words); a user may load
//! their own with [`IdfTable::from_file`]. Words missing from the dictionary get its **median**
//! IDF (the lower median of all values read, duplicates included), as jieba does.
//!
//! Every table carries a [`digest`](IdfTable::digest) (XXH3-64 of the dictionary bytes) that is
//! written into the fingerprint configuration, so fingerprints computed with different
//! dictionaries are never mixed silently.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, LazyLock};

use crate::error::{Error, Result};
use crate::hash::{xxh3, FastBuild};

/// The bundled jieba IDF dictionary text.
pub const BUNDLED_IDF: &str = include_str!("../../data/jieba_idf.txt");
/// The bundled Chinese and English stop words, one a line.
pub const BUNDLED_STOPWORDS: &str = include_str!("../../data/stopwords.txt");

/// A word → IDF map with a median for unknown words.
///
/// Words are held by their XXH3-64 (the hash the TF-IDF features compute anyway), so a lookup
/// reads one table slot and no string: two words with the same 64-bit hash (odds of about
/// 2^-64 a pair; none in the bundled dictionary, which a test checks) would share an IDF.
#[derive(Debug)]
pub struct IdfTable {
    map: HashMap<u64, f64, FastBuild>,
    median: f64,
    digest: u64,
}

impl IdfTable {
    /// The bundled jieba dictionary, parsed on first use (tens of milliseconds; only the
    /// jieba TF-IDF features and I-Match read it) and shared by the whole process.
    pub fn bundled() -> &'static IdfTable {
        static BUNDLED: LazyLock<IdfTable> = LazyLock::new(|| {
            IdfTable::parse(BUNDLED_IDF, Path::new("<bundled jieba idf>"))
                .expect("bundled IDF dictionary is well formed")
        });
        &BUNDLED
    }

    /// [`digest`](Self::digest) of the bundled dictionary, without parsing it.
    pub fn bundled_digest() -> u64 {
        static DIGEST: LazyLock<u64> = LazyLock::new(|| xxh3(BUNDLED_IDF.as_bytes()));
        *DIGEST
    }

    /// Loads a dictionary file: one `word idf` pair a line, separated by white space; empty
    /// lines and lines starting with `#` are ignored.
    pub fn from_file(path: &Path) -> Result<IdfTable> {
        let bytes = std::fs::read(path).map_err(|source| Error::Io {
            path: path.to_owned(),
            source,
        })?;
        let text = std::str::from_utf8(&bytes).map_err(|e| Error::IdfFormat {
            path: path.to_owned(),
            line: bytes[..e.valid_up_to()]
                .iter()
                .filter(|&&b| b == b'\n')
                .count()
                + 1,
            reason: "invalid UTF-8".into(),
        })?;
        IdfTable::parse(text, path)
    }

    /// Parses dictionary text (see [`from_file`](Self::from_file)); `path` is used in errors.
    pub fn parse(text: &str, path: &Path) -> Result<IdfTable> {
        let mut map: HashMap<u64, f64, FastBuild> =
            HashMap::with_capacity_and_hasher(text.len() / 20, FastBuild::default());
        let mut values = Vec::with_capacity(text.len() / 20);
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut parts = line.split_whitespace();
            let (Some(word), Some(v)) = (parts.next(), parts.next()) else {
                return Err(Error::IdfFormat {
                    path: path.to_owned(),
                    line: i + 1,
                    reason: "expected two fields".into(),
                });
            };
            let idf: f64 = v.parse().map_err(|_| Error::IdfFormat {
                path: path.to_owned(),
                line: i + 1,
                reason: format!("`{v}` is not a number"),
            })?;
            if !idf.is_finite() || idf < 0.0 {
                return Err(Error::IdfFormat {
                    path: path.to_owned(),
                    line: i + 1,
                    reason: format!("IDF {v} is negative or not finite"),
                });
            }
            map.insert(xxh3(word.as_bytes()), idf);
            values.push(idf);
        }
        if values.is_empty() {
            return Err(Error::IdfFormat {
                path: path.to_owned(),
                line: 0,
                reason: "the dictionary has no entries".into(),
            });
        }
        let mid = (values.len() - 1) / 2;
        let (_, median, _) = values.select_nth_unstable_by(mid, |a, b| a.total_cmp(b));
        Ok(IdfTable {
            median: *median,
            map,
            digest: xxh3(text.as_bytes()),
        })
    }

    /// IDF of `word`, or the median IDF when the word is not in the dictionary.
    #[inline]
    pub fn idf(&self, word: &str) -> f64 {
        self.idf_hashed(xxh3(word.as_bytes()))
    }

    /// [`idf`](Self::idf) of the word whose [`xxh3`] is `hash`.
    #[inline]
    pub fn idf_hashed(&self, hash: u64) -> f64 {
        self.map.get(&hash).copied().unwrap_or(self.median)
    }

    /// The median IDF, given to unknown words.
    pub fn median(&self) -> f64 {
        self.median
    }

    /// Number of words.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether the dictionary is empty (never true for a parsed table).
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// XXH3-64 of the dictionary text.
    pub fn digest(&self) -> u64 {
        self.digest
    }
}

/// A set of stop words.
#[derive(Debug)]
pub struct StopWords {
    set: HashSet<Box<str>, FastBuild>,
    digest: u64,
}

impl StopWords {
    /// The bundled list, shared.
    pub fn bundled() -> Arc<StopWords> {
        static BUNDLED: LazyLock<Arc<StopWords>> =
            LazyLock::new(|| Arc::new(StopWords::parse(BUNDLED_STOPWORDS)));
        BUNDLED.clone()
    }

    /// Loads a list: one word a line; empty lines and `#` comments are ignored. Words are
    /// compared after normalisation, so write them in lower case.
    pub fn from_file(path: &Path) -> Result<StopWords> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
            path: path.to_owned(),
            source,
        })?;
        Ok(StopWords::parse(&text))
    }

    /// Parses a list (see [`from_file`](Self::from_file)).
    pub fn parse(text: &str) -> StopWords {
        let set = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(Into::into)
            .collect();
        StopWords {
            set,
            digest: xxh3(text.as_bytes()),
        }
    }

    /// An empty list.
    pub fn none() -> StopWords {
        StopWords::parse("")
    }

    /// Whether `word` is a stop word.
    #[inline]
    pub fn contains(&self, word: &str) -> bool {
        self.set.contains(word)
    }

    /// XXH3-64 of the list text.
    pub fn digest(&self) -> u64 {
        self.digest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The digest a fingerprinter records before the table is ever parsed is the parsed
    /// table's: configuration ids do not depend on when the dictionary was first used.
    #[test]
    fn bundled_digest_without_parsing_is_the_parsed_tables() {
        assert_eq!(IdfTable::bundled_digest(), IdfTable::bundled().digest());
    }

    #[test]
    fn bundled_median_matches_jieba() {
        let t = IdfTable::bundled();
        assert_eq!(t.len(), 270_132);
        assert_eq!(t.median(), 11.9547675029);
        assert_eq!(t.idf("劳动防护"), 13.900677652);
        assert_eq!(t.idf("不存在的词语xyz"), t.median());
    }

    /// Words are held by their 64-bit hash: no two words of the bundled dictionary share one,
    /// and every word reads back the value its last line gives it.
    #[test]
    fn bundled_words_have_distinct_hashes_and_their_own_idf() {
        let t = IdfTable::bundled();
        let mut last: HashMap<&str, f64> = HashMap::new();
        for line in BUNDLED_IDF.lines() {
            let mut parts = line.split_whitespace();
            if let (Some(w), Some(v)) = (parts.next(), parts.next()) {
                last.insert(w, v.parse().unwrap());
            }
        }
        let hashes: HashSet<u64> = last.keys().map(|w| xxh3(w.as_bytes())).collect();
        assert_eq!(hashes.len(), last.len());
        assert_eq!(t.len(), last.len());
        for (w, v) in last {
            assert_eq!(t.idf(w), v, "{w}");
        }
    }

    #[test]
    fn bad_idf_lines_are_named() {
        let e = IdfTable::parse("a 1.0\nb\n", Path::new("x.txt"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("x.txt") && e.contains("line 2"), "{e}");
        let e = IdfTable::parse("a -1\n", Path::new("x.txt"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("negative"), "{e}");
        let e = IdfTable::parse("a NaN\n", Path::new("x.txt"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("not finite"), "{e}");
        assert!(IdfTable::parse("\n# only comments\n", Path::new("x.txt")).is_err());
    }

    #[test]
    fn stopwords() {
        let s = StopWords::bundled();
        assert!(s.contains("的") && s.contains("the"));
        assert!(!s.contains("新闻"));
    }
}
