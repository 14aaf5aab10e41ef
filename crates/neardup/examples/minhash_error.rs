//! How far MinHash v1 and v2 estimates fall from the exact Jaccard similarity on real text, by
//! document size (distinct shingles of the pair's union).
//!
//! ```text
//! cargo run --release -p neardup --example minhash_error -- ../shared/corpora/zh_sanguo_yanyi.jsonl ...
//! ```
//!
//! Each document with enough text gives 4 to 40 pairs (one per 1,000 characters) of overlapping windows of its letters and
//! digits (window lengths from 60 to 3,000 characters, overlaps from 30 % to 100 %), so exact
//! Jaccard spans the whole range; both schemes sketch both windows with the default shingles
//! (character 5-grams for Chinese, word 3-grams otherwise). Prints, per size bucket, the pairs,
//! the root mean squared error of each scheme and the share of pairs that each puts on the
//! wrong side of the 0.5 threshold.

use neardup::index::random::SplitMix64;
use neardup::minhash::{jaccard_estimate, jaccard_sorted, MinHashOptions, MinHasher, Scheme};
use neardup::{FingerprintConfig, Fingerprinter};

const BUCKETS: [(usize, usize); 5] = [
    (0, 64),
    (64, 128),
    (128, 256),
    (256, 1024),
    (1024, usize::MAX),
];

fn main() {
    let files: Vec<String> = std::env::args().skip(1).collect();
    assert!(!files.is_empty(), "usage: minhash_error FILE.jsonl ...");
    let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
    let make = |scheme| {
        MinHasher::new(&MinHashOptions {
            scheme,
            ..Default::default()
        })
        .unwrap()
    };
    let (v1, v2) = (make(Scheme::Permutations), make(Scheme::SimilaritySketch));
    println!(
        "| corpus | distinct shingles | pairs | RMSE v1 | RMSE v2 | wrong side of 0.5, v1 | v2 |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{file}: {e}"));
        let mut rng = SplitMix64::new(1);
        // Per bucket: pairs, squared errors, wrong sides.
        let mut acc = [(0usize, 0.0f64, 0.0f64, 0usize, 0usize); BUCKETS.len()];
        for line in text.lines().take(3000) {
            let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            let Some(t) = v["text"].as_str() else {
                continue;
            };
            let norm = fp.normalize(t);
            let chars: Vec<char> = norm.chars().collect();
            if chars.len() < 80 {
                continue;
            }
            for _ in 0..(chars.len() / 1000).clamp(4, 40) {
                let len = 60 + (rng.next() % 2940) as usize;
                let len = len.min(chars.len());
                let overlap = 0.3 + (rng.next() % 700) as f64 / 1000.0;
                let shift = ((1.0 - overlap) * len as f64) as usize;
                if len + shift > chars.len() {
                    continue;
                }
                let start = (rng.next() % (chars.len() - len - shift + 1) as u64) as usize;
                let a: String = chars[start..start + len].iter().collect();
                let b: String = chars[start + shift..start + shift + len].iter().collect();
                let (sa, sb) = (v1.shingle_set(&a), v1.shingle_set(&b));
                if sa.is_empty() || sb.is_empty() {
                    continue;
                }
                let j = jaccard_sorted(&sa, &sb);
                let union = ((sa.len() + sb.len()) as f64 / (1.0 + j)).round() as usize;
                let k = BUCKETS
                    .iter()
                    .position(|&(lo, hi)| union >= lo && union < hi)
                    .unwrap_or(0);
                let e1 = jaccard_estimate(
                    &v1.signature_normalized(&a).unwrap(),
                    &v1.signature_normalized(&b).unwrap(),
                );
                let e2 = jaccard_estimate(
                    &v2.signature_normalized(&a).unwrap(),
                    &v2.signature_normalized(&b).unwrap(),
                );
                let wrong = |e: f64| ((e >= 0.5) != (j >= 0.5)) as usize;
                let c = &mut acc[k];
                c.0 += 1;
                c.1 += (e1 - j).powi(2);
                c.2 += (e2 - j).powi(2);
                c.3 += wrong(e1);
                c.4 += wrong(e2);
            }
        }
        let name = std::path::Path::new(file)
            .file_stem()
            .map_or(file.clone(), |s| s.to_string_lossy().into_owned());
        for (k, &(n, s1, s2, w1, w2)) in acc.iter().enumerate() {
            if n == 0 {
                continue;
            }
            let (lo, hi) = BUCKETS[k];
            let range = if hi == usize::MAX {
                format!("≥ {lo}")
            } else {
                format!("{lo}–{}", hi - 1)
            };
            let pct = |w: usize| format!("{:.1} %", 100.0 * w as f64 / n as f64);
            println!(
                "| {name} | {range} | {n} | {:.4} | {:.4} | {} | {} |",
                (s1 / n as f64).sqrt(),
                (s2 / n as f64).sqrt(),
                pct(w1),
                pct(w2)
            );
        }
    }
}
