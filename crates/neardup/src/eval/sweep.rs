//! Sweeps of the simhash distance k: dedup at each k, scored, as a table and an SVG chart.

use rayon::prelude::*;
use serde::Serialize;

use super::score::{fmt_opt, score, Prf, Scores};
use super::Truth;
use crate::dedup::{dedup_sketches, Keep};
use crate::detect::SimhashDetector;
use crate::error::{Error, Result};
use crate::fingerprint::Fingerprinter;

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
