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

use std::collections::HashMap;

use neardup_index::random::SplitMix64;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::dedup::{dedup_sketches, Keep};
use crate::detect::SimhashDetector;
use crate::error::{Error, Result};
use crate::fingerprint::Fingerprinter;

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

    /// Every kind, in table order.
    pub const ALL: [Kind; 9] = [
        Kind::Unique,
        Kind::Original,
        Kind::Mirror,
        Kind::Reformat,
        Kind::Ads,
        Kind::Counters,
        Kind::Edit,
        Kind::Excerpt,
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
}

impl Default for MakeOptions {
    fn default() -> Self {
        MakeOptions {
            seed: 1,
            max_sources: 2000,
            min_chars: 20,
            unique_percent: 20,
            negative_percent: 20,
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
            let kind = Kind::PLANTED[rng.below(Kind::PLANTED.len() as u64) as usize];
            let (orig, copy) = match kind {
                Kind::Mirror => (text.clone(), plant::mirror(&mut rng, text)),
                Kind::Reformat => (text.clone(), plant::reformat(&mut rng, text)),
                Kind::Ads => (text.clone(), plant::ads(&mut rng, text)),
                Kind::Counters => {
                    let zh = plant::is_chinese(text);
                    let a = plant::counters_header(&mut rng, zh) + text;
                    let b = plant::counters_header(&mut rng, zh) + text;
                    (a, b)
                }
                Kind::Edit => (text.clone(), plant::edit(&mut rng, text)),
                _ => (text.clone(), plant::excerpt(&mut rng, text)),
            };
            let at = drafts.len();
            drafts.push(Draft {
                text: orig,
                group: g,
                kind: Kind::Original,
                of: None,
                source: src,
            });
            drafts.push(Draft {
                text: copy,
                group: g,
                kind,
                of: Some(at),
                source: src,
            });
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

/// Pair counts, precision, recall, F1.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Prf {
    /// Pairs in the same true group.
    pub true_pairs: u64,
    /// Pairs in the same predicted cluster.
    pub predicted_pairs: u64,
    /// Pairs both true and predicted.
    pub correct_pairs: u64,
    /// correct / predicted (`None` when nothing was predicted).
    pub precision: Option<f64>,
    /// correct / true (`None` when there are no true pairs).
    pub recall: Option<f64>,
    /// Harmonic mean of precision and recall (`None` when either is undefined or both are 0).
    pub f1: Option<f64>,
}

impl Prf {
    fn from_counts(true_pairs: u64, predicted_pairs: u64, correct_pairs: u64) -> Prf {
        let ratio = |a: u64, b: u64| (b > 0).then(|| a as f64 / b as f64);
        let precision = ratio(correct_pairs, predicted_pairs);
        let recall = ratio(correct_pairs, true_pairs);
        let f1 = match (precision, recall) {
            (Some(p), Some(r)) if p + r > 0.0 => Some(2.0 * p * r / (p + r)),
            _ => None,
        };
        Prf {
            true_pairs,
            predicted_pairs,
            correct_pairs,
            precision,
            recall,
            f1,
        }
    }
}

/// One row of a score table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// The kind (or `all`).
    pub kind: String,
    /// The bucket (or `all`).
    pub bucket: String,
    /// The figures.
    #[serde(flatten)]
    pub prf: Prf,
}

/// Pairwise scores of a prediction against the ground truth.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scores {
    /// Documents scored.
    pub documents: u64,
    /// All pairs.
    pub overall: Prf,
    /// Per kind (all buckets), kinds with any pair only.
    pub by_kind: Vec<Row>,
    /// Per bucket (all kinds).
    pub by_bucket: Vec<Row>,
    /// Per kind and bucket, cells with any pair only.
    pub by_kind_bucket: Vec<Row>,
}

/// Category of a document: kind index × 3 + bucket index.
fn category(t: &Truth) -> u8 {
    (t.kind as u8) * 3 + t.bucket as u8
}

type PairCounts = HashMap<(u8, u8), u64>;

/// Adds the pairs within each block, by category pair.
fn count_pairs<K: std::hash::Hash + Eq>(keys: impl Iterator<Item = (K, u8)>) -> PairCounts {
    let mut blocks: HashMap<K, [u32; 27]> = HashMap::new();
    for (k, c) in keys {
        blocks.entry(k).or_insert([0; 27])[c as usize] += 1;
    }
    let mut out = PairCounts::new();
    for cnt in blocks.values() {
        let present: Vec<usize> = (0..27).filter(|&c| cnt[c] > 0).collect();
        for (ai, &a) in present.iter().enumerate() {
            let na = u64::from(cnt[a]);
            if na > 1 {
                *out.entry((a as u8, a as u8)).or_default() += na * (na - 1) / 2;
            }
            for &b in &present[ai + 1..] {
                *out.entry((a as u8, b as u8)).or_default() += na * u64::from(cnt[b]);
            }
        }
    }
    out
}

/// Scores a prediction: `predicted[i]` is document `i`'s predicted cluster (any key; equal keys
/// are the same cluster), `truth[i]` its ground truth. See the module docs for the definitions.
pub fn score(truth: &[Truth], predicted: &[u64]) -> Scores {
    assert_eq!(truth.len(), predicted.len(), "one prediction per document");
    let cats: Vec<u8> = truth.iter().map(category).collect();
    let t = count_pairs(truth.iter().zip(&cats).map(|(t, &c)| (t.group, c)));
    let p = count_pairs(predicted.iter().zip(&cats).map(|(&p, &c)| (p, c)));
    let tp = count_pairs(
        truth
            .iter()
            .zip(predicted)
            .zip(&cats)
            .map(|((t, &p), &c)| ((t.group, p), c)),
    );
    // Attribute every category pair to kinds and a bucket.
    #[derive(Default, Clone, Copy)]
    struct Acc {
        t: u64,
        p: u64,
        c: u64,
    }
    let mut overall = Acc::default();
    let mut by: HashMap<(String, Option<Bucket>), Acc> = HashMap::new();
    let mut add = |counts: &PairCounts, pick: fn(&mut Acc) -> &mut u64| {
        for (&(a, b), &n) in counts {
            let (ka, kb) = (Kind::ALL[(a / 3) as usize], Kind::ALL[(b / 3) as usize]);
            let bucket = Bucket::ALL[((a % 3).min(b % 3)) as usize];
            let mut kinds: Vec<&str> = [ka, kb]
                .into_iter()
                .filter(|k| k.planted())
                .map(Kind::as_str)
                .collect();
            kinds.dedup();
            if kinds.is_empty() {
                kinds.push("unplanted");
            }
            *pick(&mut overall) += n;
            *pick(by.entry(("all".into(), Some(bucket))).or_default()) += n;
            for k in kinds {
                *pick(by.entry((k.into(), None)).or_default()) += n;
                *pick(by.entry((k.into(), Some(bucket))).or_default()) += n;
            }
        }
    };
    add(&t, |a| &mut a.t);
    add(&p, |a| &mut a.p);
    add(&tp, |a| &mut a.c);
    let kind_order: Vec<&str> = Kind::PLANTED
        .iter()
        .map(|k| k.as_str())
        .chain(["negative", "unplanted"])
        .collect();
    let row = |kind: &str, bucket: Option<Bucket>, a: &Acc| Row {
        kind: kind.into(),
        bucket: bucket.map_or("all", Bucket::as_str).into(),
        prf: Prf::from_counts(a.t, a.p, a.c),
    };
    let mut by_kind = Vec::new();
    let mut by_kind_bucket = Vec::new();
    for k in &kind_order {
        if let Some(a) = by.get(&(k.to_string(), None)) {
            by_kind.push(row(k, None, a));
        }
        for b in Bucket::ALL {
            if let Some(a) = by.get(&(k.to_string(), Some(b))) {
                by_kind_bucket.push(row(k, Some(b), a));
            }
        }
    }
    let by_bucket = Bucket::ALL
        .iter()
        .filter_map(|&b| {
            by.get(&("all".to_string(), Some(b)))
                .map(|a| row("all", Some(b), a))
        })
        .collect();
    Scores {
        documents: truth.len() as u64,
        overall: Prf::from_counts(overall.t, overall.p, overall.c),
        by_kind,
        by_bucket,
        by_kind_bucket,
    }
}

fn fmt_opt(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_string(), |v| format!("{v:.3}"))
}

impl Scores {
    /// A plain-text table: overall, per kind, per bucket, and per kind for long texts.
    pub fn table(&self) -> String {
        let mut s = format!(
            "{:<10} {:<7} {:>9} {:>9} {:>9} {:>7} {:>7} {:>7}\n",
            "kind", "bucket", "true", "predicted", "correct", "P", "R", "F1"
        );
        let mut line = |kind: &str, bucket: &str, p: &Prf| {
            s.push_str(&format!(
                "{:<10} {:<7} {:>9} {:>9} {:>9} {:>7} {:>7} {:>7}\n",
                kind,
                bucket,
                p.true_pairs,
                p.predicted_pairs,
                p.correct_pairs,
                fmt_opt(p.precision),
                fmt_opt(p.recall),
                fmt_opt(p.f1)
            ));
        };
        line("all", "all", &self.overall);
        for r in self.by_kind.iter().chain(&self.by_bucket) {
            line(&r.kind, &r.bucket, &r.prf);
        }
        for r in self.by_kind_bucket.iter().filter(|r| r.bucket == "long") {
            line(&r.kind, &r.bucket, &r.prf);
        }
        s
    }
}

/// Scores at one distance of a sweep.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepPoint {
    /// The Hamming distance.
    pub k: u32,
    /// The scores of dedup at that distance.
    pub scores: Scores,
}

/// Simhash fingerprints of texts in parallel; `None` for empty documents.
pub fn simhashes(fp: &Fingerprinter, texts: &[&str]) -> Result<Vec<Option<u64>>> {
    texts
        .par_iter()
        .map(|t| match fp.simhash(t) {
            Ok(h) => Ok(Some(h)),
            Err(Error::EmptyDocument { .. }) => Ok(None),
            Err(e) => Err(e),
        })
        .collect()
}

/// Runs simhash dedup at every distance in `ks` (fingerprints computed once) and scores each
/// clustering against `truth` (aligned with `texts`).
pub fn sweep_simhash(
    fp: &Fingerprinter,
    texts: &[&str],
    truth: &[Truth],
    ks: &[u32],
) -> Result<Vec<SweepPoint>> {
    let sketches = simhashes(fp, texts)?;
    let lengths = vec![0u32; texts.len()];
    ks.iter()
        .map(|&k| {
            let det = SimhashDetector::with_capacity(fp.clone(), k, texts.len() as u64)?;
            let c = dedup_sketches(det, sketches.iter().copied(), &lengths, Keep::First);
            let pred: Vec<u64> = c.outcomes.iter().map(|o| u64::from(o.cluster)).collect();
            Ok(SweepPoint {
                k,
                scores: score(truth, &pred),
            })
        })
        .collect()
}

fn find_row<'a>(s: &'a Scores, kind: &str, bucket: &str) -> Option<&'a Prf> {
    if kind == "all" && bucket == "all" {
        return Some(&s.overall);
    }
    s.by_bucket
        .iter()
        .chain(&s.by_kind)
        .chain(&s.by_kind_bucket)
        .find(|r| r.kind == kind && r.bucket == bucket)
        .map(|r| &r.prf)
}

/// A plain-text table of a sweep: P/R/F1 overall and per bucket at each k.
pub fn sweep_table(points: &[SweepPoint]) -> String {
    let mut s = format!("{:>3}", "k");
    for b in ["all", "short", "medium", "long"] {
        s.push_str(&format!("  {:>6} {:>6} {:>6}", format!("P.{b}"), "R", "F1"));
    }
    s.push('\n');
    for p in points {
        s.push_str(&format!("{:>3}", p.k));
        for b in ["all", "short", "medium", "long"] {
            let r = find_row(&p.scores, "all", b);
            s.push_str(&format!(
                "  {:>6} {:>6} {:>6}",
                fmt_opt(r.and_then(|r| r.precision)),
                fmt_opt(r.and_then(|r| r.recall)),
                fmt_opt(r.and_then(|r| r.f1))
            ));
        }
        s.push('\n');
    }
    s
}

/// An SVG line chart of precision and recall against k (overall and for long texts).
pub fn sweep_svg(points: &[SweepPoint], title: &str) -> String {
    let (w, h) = (720.0f64, 440.0f64);
    let (l, r, t, b) = (60.0, 170.0, 40.0, 50.0);
    let (pw, ph) = (w - l - r, h - t - b);
    let kmin = points.iter().map(|p| p.k).min().unwrap_or(0) as f64;
    let kmax = points
        .iter()
        .map(|p| p.k)
        .max()
        .unwrap_or(1)
        .max(kmin as u32 + 1) as f64;
    let x = |k: f64| l + (k - kmin) / (kmax - kmin) * pw;
    let y = |v: f64| t + (1.0 - v) * ph;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{}\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">{}</text>\n",
        l + pw / 2.0,
        title.replace('&', "&amp;").replace('<', "&lt;")
    );
    for i in 0..=10 {
        let v = i as f64 / 10.0;
        s.push_str(&format!(
            "<line x1=\"{l}\" x2=\"{}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#ddd\"/><text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{v:.1}</text>\n",
            l + pw,
            y(v),
            y(v),
            l - 6.0,
            y(v) + 4.0
        ));
    }
    for p in points {
        let xv = x(p.k as f64);
        s.push_str(&format!(
            "<line x1=\"{xv:.1}\" x2=\"{xv:.1}\" y1=\"{t}\" y2=\"{}\" stroke=\"#eee\"/><text x=\"{xv:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
            t + ph,
            t + ph + 18.0,
            p.k
        ));
    }
    s.push_str(&format!(
        "<rect x=\"{l}\" y=\"{t}\" width=\"{pw}\" height=\"{ph}\" fill=\"none\" stroke=\"#333\"/>\n<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">Hamming distance k</text>\n",
        l + pw / 2.0,
        h - 10.0
    ));
    let series: [(&str, &str, bool, &str, &str); 6] = [
        ("all", "precision", true, "#1f77b4", ""),
        ("all", "recall", false, "#d62728", ""),
        ("all", "F1", false, "#2ca02c", ""),
        ("long", "precision", true, "#1f77b4", "6,4"),
        ("long", "recall", false, "#d62728", "6,4"),
        ("short", "recall", false, "#ff7f0e", "2,3"),
    ];
    for (i, (bucket, what, _, color, dash)) in series.iter().enumerate() {
        let pts: Vec<String> = points
            .iter()
            .filter_map(|p| {
                let prf = find_row(&p.scores, "all", bucket)?;
                let v = match *what {
                    "precision" => prf.precision,
                    "recall" => prf.recall,
                    _ => prf.f1,
                }?;
                Some(format!("{:.1},{:.1}", x(p.k as f64), y(v)))
            })
            .collect();
        if !pts.is_empty() {
            s.push_str(&format!(
                "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\" stroke-dasharray=\"{dash}\" points=\"{}\"/>\n",
                pts.join(" ")
            ));
        }
        let ly = t + 10.0 + i as f64 * 20.0;
        s.push_str(&format!(
            "<line x1=\"{}\" x2=\"{}\" y1=\"{ly}\" y2=\"{ly}\" stroke=\"{color}\" stroke-width=\"2\" stroke-dasharray=\"{dash}\"/><text x=\"{}\" y=\"{}\">{what} ({bucket})</text>\n",
            l + pw + 10.0,
            l + pw + 40.0,
            l + pw + 46.0,
            ly + 4.0
        ));
    }
    s.push_str("</svg>\n");
    s
}
