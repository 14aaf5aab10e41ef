//! Pairwise scoring of a clustering against the planted truth: precision, recall and F1 overall,
//! per kind and per length bucket.

use std::collections::HashMap;

use serde::Serialize;

use super::{Bucket, Kind, Truth};

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

/// Number of categories.
const CATEGORIES: usize = Kind::ALL.len() * Bucket::ALL.len();

type PairCounts = HashMap<(u8, u8), u64>;

/// Adds the pairs within each block, by category pair.
fn count_pairs<K: std::hash::Hash + Eq>(keys: impl Iterator<Item = (K, u8)>) -> PairCounts {
    let mut blocks: HashMap<K, [u32; CATEGORIES]> = HashMap::new();
    for (k, c) in keys {
        blocks.entry(k).or_insert([0; CATEGORIES])[c as usize] += 1;
    }
    let mut out = PairCounts::new();
    for cnt in blocks.values() {
        let present: Vec<usize> = (0..CATEGORIES).filter(|&c| cnt[c] > 0).collect();
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
        .chain(&Kind::CONTAINMENT)
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

pub(super) fn fmt_opt(x: Option<f64>) -> String {
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
