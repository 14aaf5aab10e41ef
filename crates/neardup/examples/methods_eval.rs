//! Planted-duplicate evaluation of every method on short and long, Chinese and English texts.
//!
//! ```text
//! cargo run --release -p neardup --example methods_eval -- [CORPORA_DIR] [vectors]
//! ```
//!
//! For each set: base documents from a corpus (short sets: `zh_fortunes` texts and Moby-Dick
//! sentences with 15–140 letters/digits; long sets: `zh_debian_docs` and `en_sotu` documents),
//! cleaned of pre-existing near-duplicates by brute force; then half of them get a perturbed
//! copy (short: 1–max(1, len/15) character edits plus punctuation noise; long: 0.5–2 % character
//! edits, and half the time a dropped chunk or an added header line). Documents are shuffled and
//! fed to each detector (find, then insert). Precision and recall are over pairs: a predicted
//! pair is correct when it is a planted (original, copy) pair. MB/s is single-thread sketch
//! throughput (normalisation included) over the set's bytes.

use std::time::Instant;

use neardup::detect::{Detector, SimhashDetector};
use neardup::exact::ExactDetector;
use neardup::imatch::{IMatchDetector, IMatchOptions};
use neardup::minhash::{MinHashDetector, MinHashDetectorOptions};
use neardup::policy::{AutoDetector, LongMethod, PolicyOptions};
use neardup::shorttext::{confirmation_text, ShortTextDetector, ShortTextOptions};
use neardup::{FingerprintConfig, Fingerprinter};

struct Rng(neardup::index::random::SplitMix64);
impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(neardup::index::random::SplitMix64::new(seed))
    }
    fn next(&mut self) -> u64 {
        self.0.next()
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn read(dir: &str, name: &str) -> Vec<String> {
    let path = format!("{dir}/{name}.jsonl");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["text"].as_str().map(str::to_owned))
        .collect()
}

fn alnum(s: &str) -> usize {
    s.chars().filter(|c| c.is_alphanumeric()).count()
}

fn sentences(docs: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for d in docs {
        for s in d.split(['.', '!', '?', '\n']) {
            let s = s.trim();
            if !s.is_empty() {
                out.push(s.to_string());
            }
        }
    }
    out
}

/// Drops documents that are near-duplicates of an earlier one (brute force).
fn clean(fp: &Fingerprinter, docs: Vec<String>, short: bool, max: usize) -> Vec<String> {
    let mut kept: Vec<String> = Vec::new();
    let mut keys: Vec<String> = Vec::new();
    let mut sets: Vec<Vec<u64>> = Vec::new();
    let mh = neardup::minhash::MinHasher::new(&Default::default()).unwrap();
    for d in docs {
        if kept.len() >= max {
            break;
        }
        let n = fp.normalize(&d);
        if short {
            let c = confirmation_text(&n);
            let dup = keys.iter().any(|k| {
                rapidfuzz::distance::levenshtein::normalized_similarity(c.chars(), k.chars()) >= 0.6
            });
            if !dup {
                keys.push(c);
                kept.push(d);
            }
        } else {
            let s = mh.shingle_set(&n);
            let dup = sets
                .iter()
                .any(|k| neardup::minhash::jaccard_sorted(&s, k) >= 0.2);
            if !dup {
                sets.push(s);
                kept.push(d);
            }
        }
    }
    kept
}

const PUNCT: &[char] = &['，', '。', '!', ',', '.', ' ', '~', '？'];

fn perturb(rng: &mut Rng, text: &str, short: bool) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    let letters: Vec<char> = chars
        .iter()
        .copied()
        .filter(|c| c.is_alphanumeric())
        .collect();
    let n_alnum = letters.len().max(1);
    let edits = if short {
        1 + rng.below((n_alnum / 15).max(1))
    } else {
        ((n_alnum as f64) * (0.005 + 0.015 * rng.unit())).ceil() as usize
    };
    for _ in 0..edits {
        if chars.is_empty() {
            break;
        }
        let i = rng.below(chars.len());
        let c = letters[rng.below(letters.len().max(1))];
        match rng.below(3) {
            0 => chars[i] = c,
            1 => chars.insert(i, c),
            _ => {
                chars.remove(i);
            }
        }
    }
    // Punctuation noise (normalisation / confirmation text ignore most of it).
    for _ in 0..rng.below(3) {
        let i = rng.below(chars.len() + 1);
        chars.insert(i, PUNCT[rng.below(PUNCT.len())]);
    }
    let mut out: String = chars.into_iter().collect();
    if !short && rng.below(2) == 0 {
        if rng.below(2) == 0 {
            let cs: Vec<char> = out.chars().collect();
            let len = cs.len() / 20;
            let at = rng.below(cs.len().saturating_sub(len).max(1));
            out = cs[..at].iter().chain(&cs[at + len..]).collect();
        } else {
            out = format!("Posted 2019-03-0{} by admin\n{out}", rng.below(9));
        }
    }
    out
}

struct Set {
    name: String,
    docs: Vec<String>,
    truth: std::collections::HashSet<(u32, u32)>,
    bytes: usize,
}

fn build(name: &str, base: Vec<String>, short: bool, seed: u64) -> Set {
    let mut rng = Rng::new(seed);
    let mut items: Vec<(String, Option<usize>)> = Vec::new();
    for (i, d) in base.iter().enumerate() {
        items.push((d.clone(), Some(i)));
        if i % 2 == 0 {
            items.push((perturb(&mut rng, d, short), Some(i)));
        }
    }
    // Shuffle.
    for i in (1..items.len()).rev() {
        let j = rng.below(i + 1);
        items.swap(i, j);
    }
    let mut by_base: std::collections::HashMap<usize, Vec<u32>> = Default::default();
    for (k, (_, b)) in items.iter().enumerate() {
        by_base.entry(b.unwrap()).or_default().push(k as u32);
    }
    let mut truth = std::collections::HashSet::new();
    for v in by_base.values() {
        for &a in v {
            for &b in v {
                if a > b {
                    truth.insert((a, b));
                }
            }
        }
    }
    let docs: Vec<String> = items.into_iter().map(|(d, _)| d).collect();
    let bytes = docs.iter().map(String::len).sum();
    Set {
        name: name.into(),
        docs,
        truth,
        bytes,
    }
}

fn eval<D: Detector>(set: &Set, mut d: D) {
    let t = Instant::now();
    let sketches: Vec<_> = set.docs.iter().map(|x| d.sketch(x)).collect();
    let sketch_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut pred = std::collections::HashSet::new();
    for (i, s) in sketches.into_iter().enumerate() {
        let Ok(s) = s else { continue };
        for v in d.find(&s) {
            pred.insert((i as u32, v.of));
        }
        d.insert(i as u32, s);
    }
    let index_s = t.elapsed().as_secs_f64();
    let tp = pred.intersection(&set.truth).count() as f64;
    let p = if pred.is_empty() {
        1.0
    } else {
        tp / pred.len() as f64
    };
    let r = tp / set.truth.len() as f64;
    let f1 = if p + r == 0.0 {
        0.0
    } else {
        2.0 * p * r / (p + r)
    };
    println!(
        "| {} | {} | {:.3} | {:.3} | {:.3} | {:.1} | {:.1} | {} |",
        set.name,
        d.name(),
        p,
        r,
        f1,
        set.bytes as f64 / sketch_s / 1e6,
        set.bytes as f64 / (sketch_s + index_s) / 1e6,
        d.heap_bytes() / 1024
    );
}

fn vectors() {
    use neardup::minhash::{band_key, MinHasher};
    let mh = MinHasher::new(&Default::default()).unwrap();
    for t in [
        "你妈妈喊你回家吃饭哦,回家罗回家罗",
        "the quick brown fox jumps over the lazy dog",
    ] {
        let s = mh.signature_normalized(t).unwrap();
        println!(
            "{t:?}: {:?} band0(r=8) {:#018x}",
            &s[..4],
            band_key(&s, 0, 8)
        );
    }
    println!(
        "exact(\"hello, world\") = {:#034x}",
        neardup::exact::digest("hello, world")
    );
    let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
    let im = neardup::imatch::IMatcher::new(
        &fp,
        IMatchOptions {
            min_terms: 3,
            ..Default::default()
        },
    )
    .unwrap();
    let t = "wombats dig burrows using strong claws and teeth";
    println!("imatch terms {:?}", im.terms_normalized(t));
    for (j, d) in im.digests(t).unwrap() {
        println!("imatch {t:?} j={j}: {d:#034x}");
    }
    println!("band {:?}", im.band());
}

/// Real (not planted) pairs the short path finds in the raw short Chinese corpus, for a
/// qualitative precision check.
fn inspect(dir: &str) {
    let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
    let docs: Vec<String> = read(dir, "zh_fortunes")
        .into_iter()
        .filter(|t| (15..=140).contains(&alnum(t)))
        .collect();
    let mut d = ShortTextDetector::new(fp, ShortTextOptions::default()).unwrap();
    let (mut pairs, mut exact) = (Vec::new(), 0);
    for (i, t) in docs.iter().enumerate() {
        let s = d.sketch(t).unwrap();
        for v in d.find(&s) {
            if v.similarity == Some(1.0) {
                exact += 1;
            } else {
                pairs.push((v.similarity.unwrap_or(0.0), v.of as usize, i));
            }
        }
        d.insert(i as u32, s);
    }
    println!(
        "{} short docs: {exact} identical confirmation texts, {} near pairs",
        docs.len(),
        pairs.len()
    );
    for (sim, a, b) in pairs.iter() {
        println!(
            "{sim:.3}\n  {}\n  {}",
            docs[*a].replace('\n', " "),
            docs[*b].replace('\n', " ")
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "vectors") {
        return vectors();
    }
    if args.get(1).is_some_and(|a| a == "inspect") {
        return inspect(&args[0]);
    }
    let dir = args
        .first()
        .cloned()
        .or_else(|| std::env::var("NEARDUP_CORPORA").ok())
        .unwrap_or_else(|| "../../../shared/corpora".into());
    let only: Option<&str> = args.get(1).map(String::as_str);
    let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
    fp.warm_up();

    let mut sets = Vec::new();
    let want = |n: &str| only.is_none_or(|o| n.starts_with(o));
    if want("short-zh") {
        let d: Vec<String> = read(&dir, "zh_fortunes")
            .into_iter()
            .filter(|t| (15..=140).contains(&alnum(t)))
            .collect();
        sets.push(build("short-zh", clean(&fp, d, true, 2000), true, 1));
    }
    if want("short-en") {
        let d: Vec<String> = sentences(&read(&dir, "en_moby_dick"))
            .into_iter()
            .filter(|t| (15..=140).contains(&alnum(t)))
            .collect();
        sets.push(build("short-en", clean(&fp, d, true, 2000), true, 2));
    }
    if want("long-zh") {
        let d: Vec<String> = read(&dir, "zh_debian_docs")
            .into_iter()
            .filter(|t| alnum(t) > 300)
            .collect();
        sets.push(build("long-zh", clean(&fp, d, false, 400), false, 3));
    }
    if want("long-en") {
        let d: Vec<String> = read(&dir, "en_sotu").into_iter().collect();
        sets.push(build("long-en", clean(&fp, d, false, 233), false, 4));
    }
    println!("| set | method | precision | recall | F1 | sketch MB/s | total MB/s | index KiB |");
    println!("|---|---|---|---|---|---|---|---|");
    for set in &sets {
        eprintln!(
            "{}: {} docs, {} planted pairs, {:.1} MB",
            set.name,
            set.docs.len(),
            set.truth.len(),
            set.bytes as f64 / 1e6
        );
        let n = set.docs.len() as u64;
        eval(set, ExactDetector::new(fp.clone()));
        for k in [3, 6, 10] {
            eval(
                set,
                SimhashDetector::with_capacity(fp.clone(), k, n).unwrap(),
            );
        }
        for t in [0.5, 0.7] {
            let mut o = MinHashDetectorOptions::default();
            o.lsh.threshold = t;
            eval(set, MinHashDetector::new(fp.clone(), o).unwrap());
        }
        eval(
            set,
            IMatchDetector::new(&fp, IMatchOptions::default()).unwrap(),
        );
        eval(
            set,
            ShortTextDetector::new(fp.clone(), ShortTextOptions::default()).unwrap(),
        );
        for long in [LongMethod::Simhash, LongMethod::Minhash, LongMethod::Either] {
            let o = PolicyOptions {
                long,
                capacity: n,
                ..Default::default()
            };
            eval(set, AutoDetector::new(fp.clone(), o).unwrap());
        }
    }
}
