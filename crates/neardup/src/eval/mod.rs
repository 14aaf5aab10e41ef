//! Evaluation sets with planted near-duplicates, pairwise scoring, and distance sweeps.
//!
//! # Evaluation sets
//!
//! [`make_set`] takes source documents (a real corpus) and plants near-duplicates of the kinds
//! that make web pages repeat (seed 001: mirror sites, copies, inserted ads, changed counters,
//! small edits) plus excerpts, and hard negatives:
//!
//! | kind | what the planted copy is |
//! | --- | --- |
//! | `mirror` | the same text as the article of another site's HTML page (nav, related links, footer) |
//! | `reformat` | re-punctuated (ASCII ↔ CJK/full-width), runs of full-width letters and digits, line breaks and spaces changed, some capitals |
//! | `ads` | one to three advertisement lines inserted at sentence or line boundaries |
//! | `counters` | original and copy both carry a date / views / comments / likes header, with different values |
//! | `edit` | a few characters (Chinese) or words (other scripts) inserted, deleted or substituted (1–2 for short texts, 2–5 otherwise) |
//! | `excerpt` | a contiguous 70–95 % of the text |
//! | `repost` | the text with a comment, a forwarding marker (`//@user: 转发微博`, `RT @user:`) or an attribution added before or after it (only when [`MakeOptions::kinds`] names it) |
//! | `quote` | one to three sentences of the text (a short text: 40–65 % of it) in quotation marks or after an attribution (only when [`MakeOptions::kinds`] names it) |
//! | `negative` | a *different* document in a long page template shared with other negatives — nav, related links, footer, and ~8 notices (copyright, editor's note, disclaimer) *inside the article*, which main-content extraction cannot remove — must **not** be linked |
//!
//! Each source becomes one *group*: `unique` (the source alone), `original` + one planted copy
//! (one kind, chosen at random), or `negative` (the source in a shared long template, alone in
//! its group). Sources that are already near-duplicates of an earlier source (half or more of
//! their sampled character 5-grams shared — a measure independent of simhash) are left out, so
//! the corpus's own repeats do not count as false positives. Every document records its
//! group, kind, the id of the original (`of`), its source, and its length bucket.
//!
//! # Scoring (pairwise)
//!
//! A *true pair* is two documents of the same group; a *predicted pair* is two documents in the
//! same predicted cluster. With *correct* = predicted ∩ true:
//! precision = |correct| / |predicted|, recall = |correct| / |true|, F1 = 2PR/(P+R).
//! An undefined ratio (0/0) is reported as `null`.
//!
//! - **Per kind**, a pair counts for the kinds of its documents other than `original` and
//!   `unique` (a pair of two such documents counts as `unplanted`). A true pair's kind is the
//!   planted copy's; `negative` has no true pairs, so its precision shows how often hard
//!   negatives were wrongly linked (0 when any was).
//! - **Per length bucket**, a document's bucket is that of its *source* text: `short`
//!   (< 140 characters), `medium`, `long` (≥ 500 characters); a pair's bucket is the smaller
//!   of its two documents' buckets.
//!
//! ```
//! use neardup::eval::{score, Bucket, Kind, Truth};
//! let t = |group, kind| Truth { group, kind, bucket: Bucket::Long };
//! // Truth: {a, b} and {c}; prediction: {a, b, c}.
//! let truth = [t(0, Kind::Original), t(0, Kind::Edit), t(1, Kind::Unique)];
//! let s = score(&truth, &[7, 7, 7]);
//! assert_eq!((s.overall.correct_pairs, s.overall.predicted_pairs, s.overall.true_pairs), (1, 3, 1));
//! assert_eq!(s.overall.recall, Some(1.0));
//! assert!((s.overall.precision.unwrap() - 1.0 / 3.0).abs() < 1e-12);
//! ```

mod plant;
mod score;
mod sources;
mod sweep;

pub use score::{score, Prf, Row, Scores};
pub use sources::{jsonl_sources, pair_truth, paragraph_sources, sentence_sources};
pub use sweep::{
    simhashes, sweep_ngram, sweep_simhash, sweep_svg, sweep_table, sweep_threshold, NgramSetting,
    SweepPoint,
};

use std::collections::HashMap;

use neardup_index::random::SplitMix64;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// What a document of an evaluation set is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A source with no planted copy.
    Unique,
    /// A source that has a planted copy.
    Original,
    /// The source in another site's page template.
    Mirror,
    /// Re-punctuated, full-width/half-width, white space changed.
    Reformat,
    /// Advertisements inserted.
    Ads,
    /// Date and counters header changed.
    Counters,
    /// A few characters or words edited.
    Edit,
    /// A large contiguous part.
    Excerpt,
    /// The text reposted with a comment, a forwarding marker or an attribution before or
    /// after it (containment: the original lies inside the copy).
    Repost,
    /// A quotation: one to three sentences (short texts: about half) of the text, in quotation
    /// marks or after an attribution (containment: the copy lies inside the original).
    Quote,
    /// A different document in a shared long template (must not be linked).
    Negative,
}

impl Kind {
    /// The planted kinds.
    pub const PLANTED: [Kind; 6] = [
        Kind::Mirror,
        Kind::Reformat,
        Kind::Ads,
        Kind::Counters,
        Kind::Edit,
        Kind::Excerpt,
    ];

    /// The containment kinds: one text lies inside the other. Not planted by default
    /// ([`MakeOptions::kinds`]).
    pub const CONTAINMENT: [Kind; 2] = [Kind::Repost, Kind::Quote];

    /// Every kind, in table order.
    pub const ALL: [Kind; 11] = [
        Kind::Unique,
        Kind::Original,
        Kind::Mirror,
        Kind::Reformat,
        Kind::Ads,
        Kind::Counters,
        Kind::Edit,
        Kind::Excerpt,
        Kind::Repost,
        Kind::Quote,
        Kind::Negative,
    ];

    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Unique => "unique",
            Kind::Original => "original",
            Kind::Mirror => "mirror",
            Kind::Reformat => "reformat",
            Kind::Ads => "ads",
            Kind::Counters => "counters",
            Kind::Edit => "edit",
            Kind::Excerpt => "excerpt",
            Kind::Repost => "repost",
            Kind::Quote => "quote",
            Kind::Negative => "negative",
        }
    }

    fn planted(self) -> bool {
        !matches!(self, Kind::Unique | Kind::Original)
    }
}

/// Length bucket of a source text, in characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Bucket {
    /// Fewer than 140 characters.
    Short,
    /// 140 to 499 characters.
    Medium,
    /// 500 characters or more.
    Long,
}

impl Bucket {
    /// Every bucket, shortest first.
    pub const ALL: [Bucket; 3] = [Bucket::Short, Bucket::Medium, Bucket::Long];

    /// The bucket of a text of `chars` characters.
    pub fn of_chars(chars: usize) -> Bucket {
        if chars < 140 {
            Bucket::Short
        } else if chars < 500 {
            Bucket::Medium
        } else {
            Bucket::Long
        }
    }

    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Bucket::Short => "short",
            Bucket::Medium => "medium",
            Bucket::Long => "long",
        }
    }
}

/// One document of an evaluation set (one JSONL line).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetDoc {
    /// `d<position>`.
    pub id: String,
    /// The text.
    pub text: String,
    /// Ground truth: documents of the same group are near-duplicates, others are not.
    pub group: u32,
    /// What the document is.
    pub kind: Kind,
    /// For a planted copy, the id of its original.
    pub of: Option<String>,
    /// The source document (`<label>`, e.g. `corpus.jsonl#42`).
    pub source: String,
    /// Length bucket of the source text.
    pub bucket: Bucket,
}

impl SetDoc {
    /// The ground truth of this document.
    pub fn truth(&self) -> Truth {
        Truth {
            group: self.group,
            kind: self.kind,
            bucket: self.bucket,
        }
    }
}

/// Ground truth of one document, for [`score`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct Truth {
    /// Documents of the same group are near-duplicates.
    pub group: u32,
    /// What the document is.
    pub kind: Kind,
    /// Length bucket of its source text.
    pub bucket: Bucket,
}

/// A source document for [`make_set`].
#[derive(Debug, Clone)]
pub struct SourceDoc {
    /// Where it came from (recorded in [`SetDoc::source`]).
    pub label: String,
    /// The text.
    pub text: String,
}

/// Options of [`make_set`].
#[derive(Debug, Clone)]
pub struct MakeOptions {
    /// Random seed: the same sources and seed give the same set.
    pub seed: u64,
    /// At most this many sources are used (chosen at random).
    pub max_sources: usize,
    /// Sources shorter than this (characters) are left out.
    pub min_chars: usize,
    /// Percent of sources left alone (`unique`).
    pub unique_percent: u64,
    /// Percent of sources made hard negatives.
    pub negative_percent: u64,
    /// The kinds a planted copy is drawn from. Default [`Kind::PLANTED`].
    pub kinds: Vec<Kind>,
    /// A planted group holds the original and 1 to `copies` copies, each of a kind drawn
    /// independently. Default 1. With more, a text's lines repeat across the documents of its
    /// group (a syndicated article, an e-mail thread quoting earlier messages) without any
    /// shared template: what the template veto must not mistake for one.
    pub copies: usize,
}

impl Default for MakeOptions {
    fn default() -> Self {
        MakeOptions {
            seed: 1,
            max_sources: 2000,
            min_chars: 20,
            unique_percent: 20,
            negative_percent: 20,
            kinds: Kind::PLANTED.to_vec(),
            copies: 1,
        }
    }
}

/// An evaluation set and how it was made.
#[derive(Debug, Clone)]
pub struct MadeSet {
    /// The documents, shuffled.
    pub docs: Vec<SetDoc>,
    /// Sources left out for being shorter than `min_chars`.
    pub too_short: usize,
    /// Sources left out as near-duplicates of an earlier source.
    pub natural_duplicates: usize,
    /// Sources used.
    pub sources_used: usize,
}

/// Fisher–Yates shuffle.
pub(crate) fn shuffle<T>(rng: &mut SplitMix64, xs: &mut [T]) {
    for i in (1..xs.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        xs.swap(i, j);
    }
}

/// Sampled character 5-gram hashes of a text (letters and digits only, lowercased; one in 4).
fn sampled_shingles(text: &str) -> Vec<u64> {
    let cs: Vec<char> = text
        .chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect();
    let mut out: Vec<u64> = cs
        .windows(5)
        .map(|w| {
            let mut buf = [0u8; 20];
            let mut len = 0;
            for c in w {
                len += c.encode_utf8(&mut buf[len..]).len();
            }
            crate::hash::xxh3(&buf[..len])
        })
        .filter(|h| h % 4 == 0)
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// For each text, whether it shares half or more of its sampled 5-grams with an earlier one
/// that is not itself marked (containment relative to the smaller set).
fn natural_duplicates(texts: &[&str]) -> Vec<bool> {
    let sets: Vec<Vec<u64>> = texts.par_iter().map(|t| sampled_shingles(t)).collect();
    let mut postings: HashMap<u64, Vec<u32>, crate::hash::FastBuild> = HashMap::default();
    let mut marked = vec![false; texts.len()];
    let mut counts: HashMap<u32, u32, crate::hash::FastBuild> = HashMap::default();
    for (i, s) in sets.iter().enumerate() {
        counts.clear();
        for h in s {
            if let Some(p) = postings.get(h) {
                if p.len() <= 200 {
                    for &d in p {
                        *counts.entry(d).or_default() += 1;
                    }
                }
            }
        }
        let dup = counts.iter().any(|(&d, &c)| {
            let m = s.len().min(sets[d as usize].len()).max(1);
            c as usize * 2 >= m
        });
        if dup || s.is_empty() {
            marked[i] = dup;
            continue;
        }
        for &h in s {
            postings.entry(h).or_default().push(i as u32);
        }
    }
    marked
}

/// Builds an evaluation set from source documents (see the module docs).
pub fn make_set(sources: &[SourceDoc], opts: &MakeOptions) -> MadeSet {
    let mut rng = SplitMix64::new(opts.seed);
    let lens: Vec<usize> = sources.par_iter().map(|s| s.text.chars().count()).collect();
    let long_enough: Vec<usize> = (0..sources.len())
        .filter(|&i| lens[i] >= opts.min_chars.max(1))
        .collect();
    let too_short = sources.len() - long_enough.len();
    let texts: Vec<&str> = long_enough
        .iter()
        .map(|&i| sources[i].text.as_str())
        .collect();
    let nat = natural_duplicates(&texts);
    let mut pool: Vec<usize> = long_enough
        .iter()
        .zip(&nat)
        .filter(|(_, &d)| !d)
        .map(|(&i, _)| i)
        .collect();
    let natural = nat.iter().filter(|&&d| d).count();
    shuffle(&mut rng, &mut pool);
    pool.truncate(opts.max_sources);

    struct Draft {
        text: String,
        group: u32,
        kind: Kind,
        of: Option<usize>,
        source: usize,
    }
    let mut drafts: Vec<Draft> = Vec::with_capacity(pool.len() * 2);
    let mut templates: [Vec<plant::Template>; 2] = [Vec::new(), Vec::new()];
    for t in 0..3 {
        let mut trng = SplitMix64::new(opts.seed ^ (0x5eed_0000 + t));
        templates[0].push(plant::Template::new(&mut trng, false, true));
        templates[1].push(plant::Template::new(&mut trng, true, true));
    }
    let mut negatives = 0usize;
    for (g, &src) in pool.iter().enumerate() {
        let g = g as u32;
        let text = &sources[src].text;
        let roll = rng.below(100);
        if roll < opts.unique_percent {
            drafts.push(Draft {
                text: text.clone(),
                group: g,
                kind: Kind::Unique,
                of: None,
                source: src,
            });
        } else if roll < opts.unique_percent + opts.negative_percent {
            let zh = usize::from(plant::is_chinese(text));
            let t = &templates[zh][negatives % templates[zh].len()];
            negatives += 1;
            drafts.push(Draft {
                text: t.wrap(text),
                group: g,
                kind: Kind::Negative,
                of: None,
                source: src,
            });
        } else {
            let kinds = if opts.kinds.is_empty() {
                &Kind::PLANTED[..]
            } else {
                &opts.kinds[..]
            };
            // One draw for a single copy (sets made with `copies: 1` stay as they were).
            let n = if opts.copies > 1 {
                1 + rng.below(opts.copies as u64) as usize
            } else {
                1
            };
            let at = drafts.len();
            drafts.push(Draft {
                text: text.clone(),
                group: g,
                kind: Kind::Original,
                of: None,
                source: src,
            });
            for c in 0..n {
                let kind = kinds[rng.below(kinds.len() as u64) as usize];
                let copy = match kind {
                    Kind::Mirror => plant::mirror(&mut rng, text),
                    Kind::Reformat => plant::reformat(&mut rng, text),
                    Kind::Ads => plant::ads(&mut rng, text),
                    Kind::Counters => {
                        let zh = plant::is_chinese(text);
                        // The original carries a header too when its first copy does.
                        if c == 0 {
                            drafts[at].text = plant::counters_header(&mut rng, zh) + text;
                        }
                        plant::counters_header(&mut rng, zh) + text
                    }
                    Kind::Edit => plant::edit(&mut rng, text),
                    Kind::Repost => plant::repost(&mut rng, text),
                    Kind::Quote => plant::quote(&mut rng, text),
                    _ => plant::excerpt(&mut rng, text),
                };
                drafts.push(Draft {
                    text: copy,
                    group: g,
                    kind,
                    of: Some(at),
                    source: src,
                });
            }
        }
    }
    let mut order: Vec<usize> = (0..drafts.len()).collect();
    shuffle(&mut rng, &mut order);
    let mut pos = vec![0usize; drafts.len()];
    for (p, &d) in order.iter().enumerate() {
        pos[d] = p;
    }
    let docs = order
        .iter()
        .map(|&d| {
            let dr = &drafts[d];
            SetDoc {
                id: format!("d{}", pos[d]),
                text: dr.text.clone(),
                group: dr.group,
                kind: dr.kind,
                of: dr.of.map(|o| format!("d{}", pos[o])),
                source: sources[dr.source].label.clone(),
                bucket: Bucket::of_chars(lens[dr.source]),
            }
        })
        .collect();
    MadeSet {
        docs,
        too_short,
        natural_duplicates: natural,
        sources_used: pool.len(),
    }
}
