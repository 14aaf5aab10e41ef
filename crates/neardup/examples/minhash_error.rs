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
//!
//! `MINHASH_ERROR_V3=1` compares v3 with v2 (both at 32 bits).
//! `MINHASH_ERROR_BITS=16,8` compares v2 signatures with their entries kept at those bits
//! (b-bit MinHash, estimated by `jaccard_estimate_bits`) against full v2 signatures instead.

use neardup::index::random::SplitMix64;
use neardup::minhash::{
    jaccard_estimate_bits, jaccard_sorted, keep_low_bits, MinHashOptions, MinHasher, Scheme,
};
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
    // Columns: (name, hasher, bits kept).
    let columns: Vec<(String, MinHasher, u32)> = match std::env::var("MINHASH_ERROR_BITS") {
        _ if std::env::var_os("MINHASH_ERROR_V3").is_some() => vec![
            ("v2".into(), make(Scheme::SimilaritySketch), 32),
            ("v3".into(), make(Scheme::CodePointSketch), 32),
        ],
        Ok(bits) => std::iter::once(32)
            .chain(bits.split(',').map(|b| b.parse().expect("bits: 16,8")))
            .map(|b| (format!("v2 {b}-bit"), make(Scheme::SimilaritySketch), b))
            .collect(),
        Err(_) => vec![
            ("v1".into(), make(Scheme::Permutations), 32),
            ("v2".into(), make(Scheme::SimilaritySketch), 32),
        ],
    };
    let v1 = make(Scheme::Permutations);
    let names: Vec<&str> = columns.iter().map(|c| c.0.as_str()).collect();
    println!(
        "| corpus | distinct shingles | pairs | {} | {} |",
        names
            .iter()
            .map(|n| format!("RMSE {n}"))
            .collect::<Vec<_>>()
            .join(" | "),
        names
            .iter()
            .map(|n| format!("wrong side of 0.5, {n}"))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    println!("|{}", " --- |".repeat(3 + 2 * names.len()));
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{file}: {e}"));
        let mut rng = SplitMix64::new(1);
        // Per bucket: pairs, squared errors, wrong sides.
        let mut acc = vec![
            (
                0usize,
                vec![0.0f64; columns.len()],
                vec![0usize; columns.len()]
            );
            BUCKETS.len()
        ];
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
                let c = &mut acc[k];
                c.0 += 1;
                for (i, (_, h, bits)) in columns.iter().enumerate() {
                    let mut x = h.signature_normalized(&a).unwrap();
                    let mut y = h.signature_normalized(&b).unwrap();
                    keep_low_bits(&mut x, *bits);
                    keep_low_bits(&mut y, *bits);
                    let e = jaccard_estimate_bits(&x, &y, *bits);
                    c.1[i] += (e - j).powi(2);
                    c.2[i] += ((e >= 0.5) != (j >= 0.5)) as usize;
                }
            }
        }
        let name = std::path::Path::new(file)
            .file_stem()
            .map_or(file.clone(), |s| s.to_string_lossy().into_owned());
        for (k, (n, se, wrong)) in acc.iter().enumerate() {
            let n = *n;
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
                "| {name} | {range} | {n} | {} | {} |",
                se.iter()
                    .map(|s| format!("{:.4}", (s / n as f64).sqrt()))
                    .collect::<Vec<_>>()
                    .join(" | "),
                wrong
                    .iter()
                    .map(|&w| pct(w))
                    .collect::<Vec<_>>()
                    .join(" | ")
            );
        }
    }
}
