//! Short texts (titles, posts, reviews; up to ~140 letters/digits): cheap candidates, then an
//! exact measure on what was stored (seed 002). Spec: `docs/fingerprint-spec.md`, section
//! "Short-text path v1".
//!
//! Simhash at distance 3 misses near-duplicate short texts and a wider radius floods long texts
//! with false matches. Here:
//!
//! 1. **Candidates**: MinHash LSH over character n-grams of the letters/digits (n = 2 for
//!    Han-heavy text, 3 otherwise), with a low Jaccard threshold (default 0.3) so that even a
//!    few edits in a 15-character text keep the pair in some band.
//! 2. **Confirmation**: the *confirmation text* (letters and digits of the normalised text;
//!    a run of anything else becomes one space between two characters of space-delimited
//!    scripts and nothing otherwise) is stored for every indexed short document, and each
//!    candidate is confirmed by a [`Measure`] ≥ `threshold`: the normalised Levenshtein
//!    similarity `1 − dist / max(len)` over characters (rapidfuzz, default, threshold 0.8),
//!    the Jaccard or the cosine similarity of the n-gram sets/counts.
//!
//! **Memory**: per short document the stored text (≤ ~3 bytes per Han character, 1 per ASCII;
//! ≤ ~530 bytes at 175 Han characters, typically 60–200 bytes) plus the LSH tables (≈ 20 bytes
//! per band: `b` bands, 20 for the default) — about 0.5 KB a document, 0.5 GB per million.
//!
//! Template-sharing texts ("您的验证码是 123456，5 分钟内有效" with different codes) are
//! rejected: by default a pair whose runs of digits differ is never a duplicate
//! (`numbers_must_match`), and otherwise they differ in many characters relative to their
//! length. A one-character edit is accepted as long as the text has at least 5 letters/digits
//! (1 − 1/5 = 0.8).
//!
//! ```
//! use neardup::detect::Detector;
//! use neardup::shorttext::{ShortTextDetector, ShortTextOptions};
//! use neardup::{FingerprintConfig, Fingerprinter};
//! let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
//! let mut d = ShortTextDetector::new(fp, ShortTextOptions::default()).unwrap();
//! let a = d.sketch("你妈妈喊你回家吃饭哦，回家罗回家罗").unwrap();
//! d.insert(1, a);
//! let b = d.sketch("你妈妈叫你回家吃饭啦，回家罗回家罗").unwrap();
//! assert_eq!(d.find(&b)[0].of, 1);
//! let c = d.sketch("您的验证码是834921，5分钟内有效").unwrap();
//! d.insert(2, c);
//! assert!(d.find(&d.sketch("您的验证码是106577，5分钟内有效").unwrap()).is_empty());
//! ```

mod confirm;
mod search;

pub(crate) use search::{ShortCandidate, ShortCandidates, ShortQuery};

use rapidfuzz::distance::levenshtein;
use serde::{Deserialize, Serialize};

use crate::detect::{Detector, Verdict};
use crate::error::{Error, Result};
use crate::features::{is_spaceless_script, is_word_char, method_of, script_counts, Method};
use crate::fingerprint::Fingerprinter;
use crate::hash::{xxh3, FastBuild};
use crate::minhash::{LshOptions, MinHashLsh, MinHashOptions, MinHasher, Scheme, Shingles};
use crate::spill_store::SpillStore;

/// Version of the short-text path specification.
pub const SHORTTEXT_VERSION: u32 = 1;

/// The exact measure confirming a candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Measure {
    /// `1 − levenshtein(a, b) / max(|a|, |b|)` over characters.
    #[default]
    Levenshtein,
    /// Jaccard similarity of the character n-gram sets.
    Jaccard,
    /// Cosine similarity of the character n-gram count vectors.
    Cosine,
}

/// Short-text options (serde defaults = [`Default`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ShortTextOptions {
    /// Texts with at most this many letters/digits take the short path (in the `auto`
    /// policy). Default 140.
    pub max_chars: usize,
    /// n-gram size for Han-heavy text. Default 2.
    pub han_ngram: usize,
    /// n-gram size for other text. Default 3.
    pub other_ngram: usize,
    /// MinHash permutations for candidates. Default 128.
    pub num_perm: usize,
    /// Candidate banding (threshold default 0.3).
    pub lsh: LshOptions,
    /// Confirmation measure. Default `levenshtein`.
    pub measure: Measure,
    /// Confirmation threshold in (0, 1]. Default 0.8.
    pub threshold: f64,
    /// Reject a pair whose runs of digits differ (in order), e.g. two messages of one
    /// template with different codes, prices or dates. Default true.
    pub numbers_must_match: bool,
    /// The containment relation (a repost with a comment, forwarding marker or attribution
    /// added; a quotation): a candidate that fails `measure` still matches when the shorter
    /// confirmation text lies inside the longer one. `None`: off. Default on
    /// ([`ContainmentOptions::default`]).
    pub containment: Option<ContainmentOptions>,
    /// Seed of the MinHash functions. Default 1.
    pub seed: u64,
    /// A text whose share of letters in Han or another spaceless script
    /// ([`spaceless_share`](crate::features::spaceless_share)) lies in `[lo, hi)` around the
    /// cut between Han-heavy text (30 %: `han_ngram`) and other text (`other_ngram`) is also
    /// searched by the other n-gram size's band keys, which a copy on the other side of the
    /// cut was indexed by (an ad, a quote's attribution or an excerpt moves a short text's
    /// share far); it is indexed by its own only. `None`: by its own only. Default
    /// [`SHORT_SCRIPT_BAND`] (docs/quality.md, "Texts near the script cut").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub script_band: Option<(f64, f64)>,
}

/// The default of [`ShortTextOptions::script_band`].
pub const SHORT_SCRIPT_BAND: (f64, f64) = (0.1, 0.6);

impl ShortTextOptions {
    /// The longest text (letters/digits) a text of `max_chars` can match: at the threshold,
    /// `⌈max_chars / threshold⌉`, and by containment (when on), `⌈max_chars / min_share⌉` — a
    /// short post inside a longer repost. The `auto` policy indexes texts up to this length
    /// on the short path; the engine records it with its data.
    pub fn reach(&self) -> usize {
        let mut reach = self.max_chars as f64 / self.threshold;
        if let Some(c) = &self.containment {
            reach = reach.max(self.max_chars as f64 / c.min_share);
        }
        reach.ceil() as usize
    }
}

impl Default for ShortTextOptions {
    fn default() -> Self {
        ShortTextOptions {
            max_chars: 140,
            han_ngram: 2,
            other_ngram: 3,
            num_perm: 128,
            lsh: LshOptions {
                threshold: 0.3,
                ..LshOptions::default()
            },
            measure: Measure::Levenshtein,
            threshold: 0.8,
            numbers_must_match: true,
            containment: Some(ContainmentOptions::default()),
            seed: 1,
            script_band: Some(SHORT_SCRIPT_BAND),
        }
    }
}

/// The short path's containment relation: the shorter confirmation text lies inside the
/// longer one (serde defaults = [`Default`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ContainmentOptions {
    /// [`crate::detect::alignment::contained_similarity`] of the shorter text in the longer
    /// must be at least this. Default 0.9.
    pub threshold: f64,
    /// The shorter text has at least this many letters/digits when Han-heavy. Default 10.
    pub han_min_chars: u32,
    /// … and at least this many otherwise. Default 30.
    pub other_min_chars: u32,
    /// The shorter text is at least this share of the longer one's letters/digits. Default 0.3.
    pub min_share: f64,
    /// A quote: when the whole shorter text does not lie inside the longer, it still matches
    /// if, without up to this share of its characters at its beginning or at its end (an
    /// attribution: `某某说：“…”`, `As … put it: "…"`, `… (quoted by …)`), the rest occurs
    /// verbatim in the longer; the score is then the share that does (below `threshold`).
    /// 0: off. Default 0.2. A recorded configuration without it reads as 0 (it is not written
    /// when 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub edge: f64,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

impl ContainmentOptions {
    /// The most characters a shorter text of `chars` may leave out at one edge (`edge`).
    pub fn edge_chars(&self, chars: usize) -> usize {
        (self.edge * chars as f64).floor() as usize
    }
}

impl Default for ContainmentOptions {
    fn default() -> Self {
        ContainmentOptions {
            threshold: 0.9,
            han_min_chars: 10,
            other_min_chars: 30,
            min_share: 0.3,
            edge: 0.2,
        }
    }
}

/// The letters and digits of a confirmation text (what the `auto` policy measures lengths in).
fn letters(text: &str) -> u32 {
    text.chars()
        .filter(|&c| crate::features::is_word_char(c))
        .count() as u32
}

/// The runs of digits (numerals, [`is_numeric`](crate::features::is_numeric)) of `t`, in
/// order: what splitting at every other character and dropping the empty pieces gives, read a
/// byte at a time over ASCII and the CJK ideographs ([`numeral_at`](crate::features::numeral_at)).
fn digit_runs(t: &str) -> DigitRuns<'_> {
    DigitRuns { t, at: 0 }
}

/// The iterator of [`digit_runs`].
struct DigitRuns<'a> {
    t: &'a str,
    at: usize,
}

impl<'a> Iterator for DigitRuns<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let n = self.t.len();
        let mut i = self.at;
        // Skip to the first numeral, then to the first character after the run.
        let start = loop {
            if i >= n {
                self.at = n;
                return None;
            }
            let (numeral, len) = crate::features::numeral_at(self.t, i);
            if numeral {
                break i;
            }
            i += len;
        };
        while i < n {
            let (numeral, len) = crate::features::numeral_at(self.t, i);
            if !numeral {
                break;
            }
            i += len;
        }
        self.at = i;
        Some(&self.t[start..i])
    }
}

/// Whether every run of digits of `short` is also a run of digits of `long`.
pub fn numbers_contained(short: &str, long: &str) -> bool {
    let mut mine = digit_runs(short).peekable();
    if mine.peek().is_none() {
        return true;
    }
    let theirs: Vec<&str> = digit_runs(long).collect();
    mine.all(|r| theirs.contains(&r))
}

/// The containment score of two confirmation texts (`chars`: their letters/digits) under
/// `opts`: `Some(score ≥ threshold)` when the shorter lies inside the longer, `None` otherwise.
/// `han`: whether the shorter text is Han-heavy (which of the least lengths it must have).
pub fn containment(
    opts: &ContainmentOptions,
    han: bool,
    a: (&str, u32),
    b: (&str, u32),
    numbers_must_match: bool,
) -> Option<f64> {
    let ((short, ls), (long, ll)) = if a.1 <= b.1 { (a, b) } else { (b, a) };
    let min = if han {
        opts.han_min_chars
    } else {
        opts.other_min_chars
    };
    if ls < min || (ls as f64) < opts.min_share * ll as f64 {
        return None;
    }
    if numbers_must_match && !numbers_contained(short, long) {
        return None;
    }
    contained_with_edge(opts, short, long).map(|(score, _)| score)
}

/// Whether `short` lies inside `long` under `opts` — aligned whole at `opts.threshold`, or
/// verbatim once up to `opts.edge` of it at one edge is left out (a quote) — with the score
/// and the characters left out (0 when it aligns whole); `None` otherwise.
pub fn contained_with_edge(
    opts: &ContainmentOptions,
    short: &str,
    long: &str,
) -> Option<(f64, usize)> {
    let s: Vec<char> = short.chars().collect();
    let l: Vec<char> = long.chars().collect();
    let edge = opts.edge_chars(s.len());
    let scratch = &mut crate::detect::alignment::Scratch::default();
    crate::detect::alignment::contained_with_edge_at_least(
        &s,
        &l,
        Default::default(),
        edge,
        opts.threshold,
        scratch,
    )
}

/// A short document's sketch: its confirmation text and LSH band keys.
#[derive(Debug, Clone, PartialEq)]
pub struct ShortSketch {
    /// The confirmation text.
    pub text: Box<str>,
    /// Its length in characters.
    pub chars: u32,
    /// Whether Han-heavy (n-gram size `han_ngram`).
    pub han: bool,
    /// LSH band keys.
    pub keys: Vec<u64>,
    /// For a text near the script cut ([`ShortTextOptions::script_band`]), its band keys by
    /// the other n-gram size: searched too, never indexed nor stored.
    pub other_keys: Option<Vec<u64>>,
}

/// The confirmation text of normalised `text` (see the module docs).
pub fn confirmation_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut gap = false;
    let mut last: Option<char> = None;
    for c in text.chars() {
        if is_word_char(c) {
            if gap {
                if let Some(p) = last {
                    if !is_spaceless_script(p) && !is_spaceless_script(c) {
                        out.push(' ');
                    }
                }
            }
            out.push(c);
            last = Some(c);
            gap = false;
        } else {
            gap = true;
        }
    }
    out
}

/// Whether the runs of digits of `a` and `b` are the same, in the same order.
pub fn same_numbers(a: &str, b: &str) -> bool {
    digit_runs(a).eq(digit_runs(b))
}

/// Character n-gram hashes of a confirmation text (spaces skipped), unsorted.
fn ngrams(text: &str, n: usize) -> Vec<u64> {
    let mut v = Vec::new();
    crate::features::chars_each(text, n, |g: &[u8]| v.push(xxh3(g)));
    v
}

/// The similarity of two confirmation texts by `measure` (n = n-gram size for the set
/// measures).
pub fn similarity(measure: Measure, a: &str, b: &str, n: usize) -> f64 {
    match measure {
        // Identical texts (exact copies are common in deduplication) have similarity 1.
        Measure::Levenshtein if a == b => 1.0,
        Measure::Levenshtein => levenshtein::normalized_similarity(a.chars(), b.chars()),
        Measure::Jaccard => {
            let mut x = ngrams(a, n);
            let mut y = ngrams(b, n);
            x.sort_unstable();
            x.dedup();
            y.sort_unstable();
            y.dedup();
            crate::minhash::jaccard_sorted(&x, &y)
        }
        Measure::Cosine => {
            let mut m: std::collections::HashMap<u64, (f64, f64), FastBuild> = Default::default();
            for h in ngrams(a, n) {
                m.entry(h).or_default().0 += 1.0;
            }
            for h in ngrams(b, n) {
                m.entry(h).or_default().1 += 1.0;
            }
            let (mut dot, mut na, mut nb) = (0.0, 0.0, 0.0);
            for (x, y) in m.values() {
                dot += x * y;
                na += x * x;
                nb += y * y;
            }
            if na == 0.0 || nb == 0.0 {
                return if na == nb { 1.0 } else { 0.0 };
            }
            dot / (na.sqrt() * nb.sqrt())
        }
    }
}

/// The most candidates [`ShortTextDetector`] confirms for one text: when more stored texts
/// share a band with it (thousands can, in a stream of short texts that share phrases), those
/// sharing the most bands — the likeliest near-duplicates — are confirmed, so a decision costs
/// at most this many alignments however the stream repeats itself (in each key space a text
/// is searched in: twice as many near the script cut, [`ShortTextOptions::script_band`]).
pub const MAX_CONFIRMED: usize = 256;

/// How many candidates ahead of its checks a candidate's `meta` and `sets` entries are
/// prefetched.
const PREFETCH_AHEAD: usize = 8;

/// What a stored text's checks read besides the text.
#[derive(Debug, Clone, Copy)]
struct Meta {
    /// The confirmation text's characters.
    chars: u32,
    /// Its letters/digits.
    letters: u32,
    /// [`confirm::runs_digest`] of it.
    digits: u32,
    /// Whether Han-heavy.
    han: bool,
}

/// Short-text detector: MinHash LSH candidates on character n-grams (at most
/// [`MAX_CONFIRMED`]), confirmed by an exact measure on the stored confirmation texts.
#[derive(Debug, Clone)]
pub struct ShortTextDetector {
    fp: Fingerprinter,
    opts: ShortTextOptions,
    han: MinHasher,
    other: MinHasher,
    lsh: MinHashLsh,
    docs: Vec<u32>,
    /// The confirmation texts, one after the other (in memory, or spilled to a file by
    /// [`ShortTextDetector::spill_texts`]).
    arena: SpillStore,
    /// Where each slot's text ends in `arena`.
    ends: Vec<u64>,
    meta: Vec<Meta>,
    /// Per slot: [`confirm::GramSet::of`] its text (apart from `meta`: read only for the
    /// candidates that pass the checks on lengths).
    sets: Vec<confirm::GramSet>,
}

impl ShortTextDetector {
    /// A detector normalising with `fp`'s configuration.
    pub fn new(fp: Fingerprinter, opts: ShortTextOptions) -> Result<Self> {
        if let Some(c) = &opts.containment {
            if !(0.0..=0.5).contains(&c.edge) {
                return Err(Error::Config(format!(
                    "quote edge {} is out of range; use a share of the shorter text in [0, 0.5] \
                     (0 turns quotes off; default 0.2)",
                    c.edge
                )));
            }
        }
        crate::detect::check_script_band("short script_band", opts.script_band, SHORT_SCRIPT_BAND)?;
        if !(opts.threshold > 0.0 && opts.threshold <= 1.0) {
            return Err(Error::Config(format!(
                "short-text threshold {} is out of range; use a similarity in (0, 1] (default 0.8)",
                opts.threshold
            )));
        }
        let mh = |n| {
            MinHasher::new(&MinHashOptions {
                num_perm: opts.num_perm,
                shingles: Shingles::Chars,
                char_ngram: n,
                word_ngram: 1,
                seed: opts.seed,
                // Short-text path v1 (docs/fingerprint-spec.md) is specified with MinHash v1.
                scheme: Scheme::Permutations,
            })
        };
        let han = mh(opts.han_ngram)?;
        let other = mh(opts.other_ngram)?;
        let lsh = MinHashLsh::new(opts.num_perm, &opts.lsh)?;
        Ok(ShortTextDetector {
            fp,
            opts,
            han,
            other,
            lsh,
            docs: Vec::new(),
            arena: SpillStore::in_memory(),
            ends: Vec::new(),
            meta: Vec::new(),
            sets: Vec::new(),
        })
    }

    /// The options.
    pub fn options(&self) -> &ShortTextOptions {
        &self.opts
    }

    /// `(bands, rows)` of the candidate LSH.
    pub fn params(&self) -> (usize, usize) {
        self.lsh.params()
    }

    /// The candidate LSH.
    pub(crate) fn lsh(&self) -> &MinHashLsh {
        &self.lsh
    }

    /// The candidate LSH, to put frozen tables in place ([`MinHashLsh::put_frozen`]).
    pub(crate) fn lsh_mut(&mut self) -> &mut MinHashLsh {
        &mut self.lsh
    }

    /// The longest text (letters/digits) a text of `max_chars` can match by the measure:
    /// `⌈max_chars / threshold⌉`.
    fn measure_reach(&self) -> u32 {
        (self.opts.max_chars as f64 / self.opts.threshold).ceil() as u32
    }

    /// [`ShortTextOptions::reach`] of this detector's options.
    pub fn reach(&self) -> usize {
        self.opts.reach()
    }

    /// The sketch of already-normalised text.
    pub fn sketch_normalized(&self, normalized: &str, input_bytes: usize) -> Result<ShortSketch> {
        let text = confirmation_text(normalized);
        if text.is_empty() {
            return Err(Error::EmptyDocument { input_bytes });
        }
        // One pass counts the scripts for both the n-gram size and the script band.
        let (alnum, scripts) = script_counts(&text);
        let han = method_of(alnum, scripts) == Method::Jieba;
        let keys = self
            .keys_of(&text, han)
            .ok_or(Error::EmptyDocument { input_bytes })?;
        let near_cut = self.opts.script_band.is_some_and(|(lo, hi)| {
            scripts
                .spaceless_share(alnum)
                .is_some_and(|share| lo <= share && share < hi)
        });
        Ok(ShortSketch {
            other_keys: near_cut.then(|| self.keys_of(&text, !han)).flatten(),
            chars: text.chars().count() as u32,
            text: text.into_boxed_str(),
            han,
            keys,
        })
    }

    /// The band keys of confirmation text `text` by the n-gram size of Han-heavy text (`han`)
    /// or of other text, in that size's own key space.
    fn keys_of(&self, text: &str, han: bool) -> Option<Vec<u64>> {
        let hasher = if han { &self.han } else { &self.other };
        let mut keys = self.lsh.keys(&hasher.signature_normalized(text)?);
        // Keep Han and other n-gram spaces apart.
        if han {
            for k in &mut keys {
                *k = !*k;
            }
        }
        Some(keys)
    }

    /// The confirmation text stored for document `doc` (documents are inserted in ascending
    /// order).
    pub(crate) fn text_of(&self, doc: u32) -> Option<&str> {
        let slot = self.docs.binary_search(&doc).ok()?;
        std::str::from_utf8(self.text_bytes(slot)).ok()
    }

    /// The bytes of slot `slot`'s text (not read until they are).
    fn text_bytes(&self, slot: usize) -> &[u8] {
        let start = if slot == 0 { 0 } else { self.ends[slot - 1] };
        self.arena.get(start..self.ends[slot])
    }

    /// Bytes of its texts in a spill file.
    pub(crate) fn spilled_bytes(&self) -> u64 {
        self.arena.spilled_bytes()
    }

    /// Lets go of the spill file's pages that reads mapped ([`SpillStore::release_pages`]).
    pub(crate) fn release_pages(&self) {
        self.arena.release_pages();
    }
}

impl Detector for ShortTextDetector {
    type Sketch = ShortSketch;

    fn name(&self) -> String {
        format!(
            "short({:?}≥{},lsh t={})",
            self.opts.measure, self.opts.threshold, self.opts.lsh.threshold
        )
        .to_lowercase()
    }

    fn sketch(&self, text: &str) -> Result<ShortSketch> {
        self.sketch_normalized(&self.fp.normalize(text), text.len())
    }

    fn find(&self, s: &ShortSketch) -> Vec<Verdict> {
        let slots = self.candidates(s).slots();
        let mut out = Vec::new();
        self.confirm(s, &mut self.query(s), &slots, &mut out);
        out
    }

    /// Between batches (batch dedup): band tables frozen again when worth it, and the spill
    /// file's pages that reads mapped let go (they stay in the page cache).
    fn tidy(&mut self) {
        self.lsh.freeze_if_worth();
        self.arena.release_pages();
    }

    /// Keeps the texts it stores from now on, and those it holds, in a file of `dir` rather
    /// than the heap (an anonymous file read through a mapping): the engine's segments and
    /// `neardup dedup` do.
    fn spill_texts(&mut self, dir: &std::path::Path) {
        self.arena = std::mem::take(&mut self.arena).into_spilled(dir);
    }

    fn insert(&mut self, doc: u32, s: ShortSketch) {
        self.lsh.insert_keys(&s.keys);
        self.docs.push(doc);
        let end = self
            .arena
            .append(|b| b.extend_from_slice(s.text.as_bytes()));
        self.ends.push(end);
        self.meta.push(Meta {
            chars: s.chars,
            letters: letters(&s.text),
            digits: confirm::runs_digest(&s.text),
            han: s.han,
        });
        self.sets.push(confirm::GramSet::of(&s.text, s.han));
    }

    fn heap_bytes(&self) -> usize {
        self.lsh.heap_bytes()
            + self.docs.capacity() * 4
            + self.arena.heap_bytes()
            + self.ends.capacity() * 8
            + self.meta.capacity() * std::mem::size_of::<Meta>()
            + self.sets.capacity() * std::mem::size_of::<confirm::GramSet>()
    }
}

#[cfg(test)]
mod tests;
