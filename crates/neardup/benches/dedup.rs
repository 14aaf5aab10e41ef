//! Throughput of batch dedup (parallel simhash sketching + serial index step) in MB/s of UTF-8
//! input, on all cores, over real text from `shared/corpora` (Chinese: Debian docs; English:
//! State of the Union). Set `NEARDUP_CORPORA` to the corpora directory; without it a small
//! built-in text is used. Every corpus is fed twice, so the benchmark first asserts that each
//! second copy is found as a duplicate in its twin's cluster.

mod common;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use neardup::dedup::{dedup, Keep};
use neardup::detect::SimhashDetector;
use neardup::{FingerprintConfig, Fingerprinter};

/// Up to `max_bytes` of document texts from a corpus JSONL file, each twice (second half).
fn load(file: &str, fallback: &str, max_bytes: usize) -> Vec<String> {
    let mut docs = common::corpus_texts(file, 0, max_bytes);
    if docs.is_empty() {
        docs = (0..200)
            .map(|i| format!("{fallback} {i} {}", fallback.len() * i))
            .collect();
    }
    let again = docs.clone();
    docs.extend(again);
    docs
}

fn check(docs: &[String], fp: &Fingerprinter) {
    let half = docs.len() / 2;
    let c = dedup(
        SimhashDetector::new(fp.clone(), 3).unwrap(),
        docs,
        Keep::First,
    )
    .unwrap();
    for i in 0..half {
        let (a, b) = (&c.outcomes[i], &c.outcomes[half + i]);
        if a.empty {
            assert!(b.empty, "copy {i} of an empty document is not empty");
            continue; // empty documents are their own clusters
        }
        assert_eq!(a.cluster, b.cluster, "copy {i} not in its twin's cluster");
        assert!(b.duplicate_of.is_some(), "copy {i} kept");
    }
}

fn bench(c: &mut Criterion) {
    let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
    fp.warm_up();
    let mut g = c.benchmark_group("dedup");
    g.sample_size(10);
    for (name, file, fallback) in [
        (
            "zh_debian_docs",
            "zh_debian_docs.jsonl",
            "春天来了，小镇上的樱花开得正好。每天早上，老王都会沿着河边散步。",
        ),
        (
            "en_sotu",
            "en_sotu.jsonl",
            "The old lighthouse on the northern cape has been restored by volunteers.",
        ),
    ] {
        let docs = load(file, fallback, 4 << 20);
        check(&docs, &fp);
        let bytes: usize = docs.iter().map(String::len).sum();
        g.throughput(Throughput::Bytes(bytes as u64));
        g.bench_function(format!("simhash_k3/{name}"), |b| {
            b.iter(|| {
                let det = SimhashDetector::new(fp.clone(), 3).unwrap();
                dedup(det, &docs, Keep::First).unwrap().outcomes.len()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
