//! Throughput of the fingerprint hot paths in MB/s of UTF-8 input, single thread, over real
//! text from `shared/corpora` (Chinese: Debian docs + 三国演义; English: State of the Union).
//! Set `NEARDUP_CORPORA` to the corpora directory; without it the test fixtures are used.
//! Every benchmark first asserts its result (fingerprints stable and plausible).

mod common;

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use neardup::features::{FeatureOptions, Method};
use neardup::normalize::{NormalizeOptions, Normalizer};
use neardup::{FingerprintConfig, Fingerprinter};

/// Up to `max_bytes` of document texts from a corpus JSONL file.
fn load(file: &str, fallback: &str, max_bytes: usize) -> Vec<String> {
    let mut docs = common::corpus_texts(file, 200, max_bytes);
    if docs.is_empty() {
        docs.push(fallback.repeat(max_bytes / fallback.len().max(1)));
    }
    docs
}

fn fp(method: Method) -> Fingerprinter {
    let f = Fingerprinter::new(FingerprintConfig {
        features: FeatureOptions {
            method,
            ..Default::default()
        },
        ..Default::default()
    })
    .unwrap();
    f.warm_up();
    f
}

fn bench(c: &mut Criterion) {
    let zh = load(
        "zh_sanguo_yanyi.jsonl",
        include_str!("../tests/fixtures/sanguo_ch1.txt"),
        4 << 20,
    );
    let zh_docs = load(
        "zh_debian_docs.jsonl",
        include_str!("../tests/fixtures/sanguo_ch1.txt"),
        4 << 20,
    );
    let en = load(
        "en_sotu.jsonl",
        include_str!("../tests/fixtures/moby_dick_excerpt.txt"),
        4 << 20,
    );
    let bytes = |d: &[String]| d.iter().map(|s| s.len() as u64).sum::<u64>();

    let tw = load(
        "zh_linux_kernel_docs_zh_TW.jsonl",
        "臺灣的軟體開發者說：這個系統的記憶體管理與排程器都需要重新設計。",
        4 << 20,
    );
    let default = Normalizer::new(NormalizeOptions::default());
    let kept = Normalizer::new(NormalizeOptions {
        fold_traditional: false,
        ..NormalizeOptions::default()
    });
    // Traditional text is folded: the normalised text differs from the one that keeps it.
    assert_ne!(default.normalize(&tw[0]), kept.normalize(&tw[0]));
    let mut g = c.benchmark_group("normalize");
    for (name, docs, norm) in [
        ("zh", &zh, &default),
        ("zh-keep-traditional", &zh, &kept),
        ("zh-traditional", &tw, &default),
        ("en", &en, &default),
    ] {
        // Result check: normalisation is idempotent and keeps the text.
        let n0 = norm.normalize(&docs[0]);
        assert_eq!(norm.normalize(&n0), n0);
        assert!(n0.len() * 2 > docs[0].len());
        g.throughput(Throughput::Bytes(bytes(docs)));
        g.bench_function(name, |b| {
            b.iter(|| {
                docs.iter()
                    .map(|d| norm.normalize(black_box(d)).len())
                    .sum::<usize>()
            })
        });
    }
    g.finish();

    // HTML pages: each document's lines as paragraphs of an article, in a site's menu,
    // related-articles list and footer (what a crawler fetches), laid out a block a line.
    let pages = |docs: &[String]| -> Vec<String> {
        docs.iter()
            .map(|d| {
                let mut p = String::from(
                    "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Site</title>\
                     <script>var t = '<p>not text</p>';</script></head>\n<body>\n<header><h1>Site</h1>\
                     <nav><ul><li><a href=\"/\">Home</a></li><li><a href=\"/n\">News</a></li>\
                     <li><a href=\"/s\">Sport</a></li></ul></nav></header>\n<main><article>\n",
                );
                for line in d.lines().filter(|l| !l.trim().is_empty()) {
                    let esc = line.replace('&', "&amp;").replace('<', "&lt;");
                    p.push_str(&format!("<p class=\"para\">{esc}</p>\n"));
                }
                p.push_str(
                    "</article></main>\n<aside><h2>Related</h2><ul><li><a href=\"/a/1\">One story</a></li>\
                     <li><a href=\"/a/2\">Another story</a></li></ul></aside>\n\
                     <footer><p>Copyright © Site. All rights reserved.</p></footer>\n</body></html>\n",
                );
                p
            })
            .collect()
    };
    let mut g = c.benchmark_group("html");
    for (name, texts) in [("zh", &zh_docs), ("en", &en)] {
        let docs = pages(texts);
        // Result check: the article's text is kept, the menu and the script are not.
        let t = neardup::normalize::html_to_text_with(&docs[0], true);
        assert!(!t.contains("Home") && !t.contains("not text"), "{t:?}");
        let first: String = texts[0].trim().chars().take(12).collect();
        assert!(
            !first.is_empty() && t.contains(first.as_str()),
            "{first:?} in {t:?}"
        );
        g.throughput(Throughput::Bytes(bytes(&docs)));
        g.bench_function(format!("to-text/{name}"), |b| {
            b.iter(|| {
                docs.iter()
                    .map(|d| neardup::normalize::html_to_text_with(black_box(d), true).len())
                    .sum::<usize>()
            })
        });
        g.bench_function(format!("normalize/{name}"), |b| {
            b.iter(|| {
                docs.iter()
                    .map(|d| default.normalize(black_box(d)).len())
                    .sum::<usize>()
            })
        });
    }
    g.finish();

    let mut g = c.benchmark_group("simhash");
    g.sample_size(10);
    let cases: [(&str, Method, &Vec<String>); 5] = [
        ("jieba_zh_novel", Method::Jieba, &zh),
        ("jieba_zh_docs", Method::Jieba, &zh_docs),
        ("chars3_zh_novel", Method::Chars, &zh),
        ("chars3_zh_docs", Method::Chars, &zh_docs),
        ("words1_en", Method::Words, &en),
    ];
    for (name, method, docs) in cases {
        let f = fp(method);
        // Result check: deterministic, and a one-character edit stays within distance 3.
        let a = f.simhash(&docs[0]).unwrap();
        assert_eq!(a, f.simhash(&docs[0]).unwrap());
        let mut edited: Vec<char> = docs[0].chars().collect();
        let mid = edited.len() / 2;
        edited[mid] = if edited[mid] == '的' { '之' } else { '的' };
        let b = f.simhash(&edited.into_iter().collect::<String>()).unwrap();
        assert!(
            neardup::hamming(a, b) <= 3,
            "{name}: one-character edit moved {} bits",
            neardup::hamming(a, b)
        );
        g.throughput(Throughput::Bytes(bytes(docs)));
        g.bench_function(name, |b| {
            b.iter(|| {
                docs.iter()
                    .map(|d| f.simhash(black_box(d)).unwrap())
                    .fold(0, |x, y| x ^ y)
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
