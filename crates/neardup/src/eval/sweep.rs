//! Sweeps of a detector's own knob — the simhash distance k, or the MinHash Jaccard threshold
//! or shingle size of `minhash` and the default `auto` detector —: dedup at each setting,
//! scored, as a table and an SVG chart.

use rayon::prelude::*;
use serde::Serialize;

use super::score::{fmt_opt, score, Prf, Scores};
use super::Truth;
use crate::dedup::{dedup, dedup_sketches, Keep};
use crate::detect::spec::{DetectorSpec, WithDetector};
use crate::detect::{Detector, SimhashDetector};
use crate::error::{Error, Result};
use crate::fingerprint::Fingerprinter;

/// Scores at one setting of a sweep: a simhash distance `k` or a Jaccard `threshold`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepPoint {
    /// The Hamming distance (a simhash sweep).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub k: Option<u32>,
    /// The Jaccard threshold (a `minhash` or `auto` sweep).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threshold: Option<f64>,
    /// MinHash's shingle size (an n-gram sweep of `minhash` or `auto`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ngram: Option<NgramSetting>,
    /// The scores of dedup at that setting.
    pub scores: Scores,
}

/// Which of MinHash's shingle sizes an n-gram sweep varies, and its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NgramSetting {
    /// `n` of the character shingles (Han-heavy and spaceless text).
    Chars(usize),
    /// `n` of the word shingles (other text).
    Words(usize),
}

impl SweepPoint {
    /// The setting, as a number.
    fn x(&self) -> f64 {
        match self.ngram {
            Some(NgramSetting::Chars(n) | NgramSetting::Words(n)) => n as f64,
            None => self.threshold.unwrap_or(self.k.unwrap_or(0) as f64),
        }
    }

    /// The setting, as the table and the chart show it.
    fn label(&self) -> String {
        match (self.k, self.threshold, self.ngram) {
            (Some(k), _, _) => k.to_string(),
            (None, _, Some(NgramSetting::Chars(n))) => format!("c{n}"),
            (None, _, Some(NgramSetting::Words(n))) => format!("w{n}"),
            (None, Some(t), None) => format!("{t:.2}"),
            (None, None, None) => String::new(),
        }
    }
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
                k: Some(k),
                threshold: None,
                ngram: None,
                scores: score(truth, &pred),
            })
        })
        .collect()
}

/// Runs dedup with the detector `base` names at every Jaccard threshold in `thresholds` — the
/// decisions of `neardup dedup --method M --threshold T` (online linkage, keep first, the
/// batches of [`crate::dedup::batch_end`]) — and scores each clustering against `truth`
/// (aligned with `texts`).
///
/// # Errors
/// [`Error::Config`] when `base` names a method without a threshold (simhash: use
/// [`sweep_simhash`]) or a threshold is out of range; a sketching error of a text.
///
/// ```
/// use neardup::detect::spec::DetectorSpec;
/// use neardup::eval::{sweep_threshold, Bucket, Kind, Truth};
/// use neardup::{FingerprintConfig, Fingerprinter};
/// let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
/// // Long texts (over 140 characters: the MinHash path); b changes a's last six words.
/// let a = "the harbour authority announced on tuesday that the northern pier will close for repairs \
///     after engineers found that its wooden supports had rotted through decades of salt water, \
///     and fishing boats will move to the southern dock until the work is done next spring";
/// let b = "the harbour authority announced on tuesday that the northern pier will close for repairs \
///     after engineers found that its wooden supports had rotted through decades of salt water, \
///     and fishing boats will move to the southern dock for the whole coming season";
/// let c = "a storm closed the mountain pass for three days last winter and cut off the villages \
///     beyond it, so that the school stayed shut and the bakery ran out of flour before the \
///     snow ploughs from the valley finally reached the upper road on the fourth morning";
/// let t = |group, kind| Truth { group, kind, bucket: Bucket::Short };
/// let truth = [t(0, Kind::Original), t(0, Kind::Edit), t(1, Kind::Unique)];
/// let points = sweep_threshold(&fp, &[a, b, c], &truth, &DetectorSpec::default(), &[0.5, 0.99]).unwrap();
/// assert_eq!(points[0].scores.overall.recall, Some(1.0));
/// assert_eq!(points[1].scores.overall.recall, Some(0.0));
/// ```
pub fn sweep_threshold(
    fp: &Fingerprinter,
    texts: &[&str],
    truth: &[Truth],
    base: &DetectorSpec,
    thresholds: &[f64],
) -> Result<Vec<SweepPoint>> {
    if !base.method.uses_threshold() {
        return Err(Error::Config(format!(
            "method {} has no Jaccard threshold to sweep: sweep its distance k instead",
            base.method.name()
        )));
    }
    thresholds
        .iter()
        .map(|&t| {
            if !(t > 0.0 && t <= 1.0) {
                return Err(Error::Config(format!(
                    "threshold {t} is out of range: use a Jaccard similarity in (0, 1]"
                )));
            }
            let spec = DetectorSpec {
                threshold: t,
                ..base.clone()
            };
            Ok(SweepPoint {
                k: None,
                threshold: Some(t),
                ngram: None,
                scores: scores_of(fp, texts, truth, &spec)?,
            })
        })
        .collect()
}

/// The scores of dedup with the detector `spec` names.
fn scores_of(
    fp: &Fingerprinter,
    texts: &[&str],
    truth: &[Truth],
    spec: &DetectorSpec,
) -> Result<Scores> {
    Ok(score(truth, &spec.build(fp, Run(texts))?))
}

/// Dedup with the detector a spec names: each document's cluster.
struct Run<'a>(&'a [&'a str]);

impl WithDetector for Run<'_> {
    type Output = Result<Vec<u64>>;
    fn with<D: Detector>(self, make: impl Fn() -> Result<D>) -> Result<Vec<u64>> {
        let c = dedup(make()?, self.0, Keep::First).map_err(|e| e.source)?;
        Ok(c.outcomes.iter().map(|o| u64::from(o.cluster)).collect())
    }
}

/// Runs dedup with the detector `base` names at every MinHash shingle size in `settings`
/// (each varies the character or the word n-gram of `base`) and scores each clustering against
/// `truth` (aligned with `texts`): the decisions of `neardup dedup --minhash-char-ngram N` (or
/// `--minhash-word-ngram N`).
///
/// # Errors
/// [`Error::Config`] when `base` names a method without MinHash, or a size is out of range;
/// a sketching error of a text.
pub fn sweep_ngram(
    fp: &Fingerprinter,
    texts: &[&str],
    truth: &[Truth],
    base: &DetectorSpec,
    settings: &[NgramSetting],
) -> Result<Vec<SweepPoint>> {
    if !base.method.uses_threshold() {
        return Err(Error::Config(format!(
            "method {} has no MinHash shingles to sweep: sweep its distance k instead",
            base.method.name()
        )));
    }
    settings
        .iter()
        .map(|&n| {
            let spec = match n {
                NgramSetting::Chars(c) => DetectorSpec {
                    char_ngram: c,
                    ..base.clone()
                },
                NgramSetting::Words(w) => DetectorSpec {
                    word_ngram: w,
                    ..base.clone()
                },
            };
            Ok(SweepPoint {
                k: None,
                threshold: None,
                ngram: Some(n),
                scores: scores_of(fp, texts, truth, &spec)?,
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

/// A plain-text table of a sweep: P/R/F1 overall and per bucket at each setting.
pub fn sweep_table(points: &[SweepPoint]) -> String {
    let knob = if points.iter().any(|p| p.ngram.is_some()) {
        "n"
    } else if points.iter().any(|p| p.threshold.is_some()) {
        "t"
    } else {
        "k"
    };
    let width = if knob == "k" { 3 } else { 4 };
    let mut s = format!("{knob:>width$}");
    for b in ["all", "short", "medium", "long"] {
        s.push_str(&format!("  {:>6} {:>6} {:>6}", format!("P.{b}"), "R", "F1"));
    }
    s.push('\n');
    for p in points {
        s.push_str(&format!("{:>width$}", p.label()));
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

/// An SVG line chart of precision and recall against the setting (overall and for long texts).
pub fn sweep_svg(points: &[SweepPoint], title: &str) -> String {
    let (w, h) = (720.0f64, 440.0f64);
    let (l, r, t, b) = (60.0, 170.0, 40.0, 50.0);
    let (pw, ph) = (w - l - r, h - t - b);
    let kmin = points
        .iter()
        .map(SweepPoint::x)
        .fold(f64::INFINITY, f64::min);
    let kmin = if kmin.is_finite() { kmin } else { 0.0 };
    let kmax = points
        .iter()
        .map(SweepPoint::x)
        .fold(f64::NEG_INFINITY, f64::max);
    let kmax = if kmax > kmin { kmax } else { kmin + 1.0 };
    let axis = match points.iter().find_map(|p| p.ngram) {
        Some(NgramSetting::Chars(_)) => "MinHash character n-gram",
        Some(NgramSetting::Words(_)) => "MinHash word n-gram",
        None if points.iter().any(|p| p.threshold.is_some()) => "Jaccard threshold",
        None => "Hamming distance k",
    };
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
        let xv = x(p.x());
        s.push_str(&format!(
            "<line x1=\"{xv:.1}\" x2=\"{xv:.1}\" y1=\"{t}\" y2=\"{}\" stroke=\"#eee\"/><text x=\"{xv:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
            t + ph,
            t + ph + 18.0,
            p.label()
        ));
    }
    s.push_str(&format!(
        "<rect x=\"{l}\" y=\"{t}\" width=\"{pw}\" height=\"{ph}\" fill=\"none\" stroke=\"#333\"/>\n<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{axis}</text>\n",
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
                Some(format!("{:.1},{:.1}", x(p.x()), y(v)))
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
