//! Throughput of the sketches besides simhash: MinHash signatures (128 slots, v2 and v1 side by
//! side with the bound of both, cutting and hashing the shingles; Chinese 5-grams and English
//! word 3-grams), LSH banding and band-table lookups at 1 M documents (growing and frozen), I-Match digests, exact digests, and the short-text path
//! (sketch + find against 5,000 indexed texts, and find against 40,000 that share phrases) and its containment alignment, and passages (long texts' fragments keyed, quotes of them found). Reads real text from the corpora
//! (`NEARDUP_CORPORA` or `../../../shared/corpora`) when present, else the test fixtures.
//! Every benchmark also checks its result.

use std::hint::black_box;

#[path = "common/mod.rs"]
mod common;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use neardup::detect::Detector;
use neardup::imatch::{IMatchOptions, IMatcher};
use neardup::minhash::{
    fold32, jaccard_estimate, MinHashLsh, MinHashOptions, MinHasher, Scheme, Shingles,
};
use neardup::shorttext::{ShortSketch, ShortTextDetector, ShortTextOptions};
use neardup::template_veto::{TemplateVetoOptions, VetoRules};
use neardup::{FingerprintConfig, Fingerprinter};

fn corpus_dir() -> std::path::PathBuf {
    std::env::var("NEARDUP_CORPORA")
        .map(Into::into)
        .unwrap_or_else(|_| "../../../shared/corpora".into())
}

/// Up to `max_bytes` of texts from a corpus file, or the fixture.
fn texts(file: &str, fixture: &str, max_bytes: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut total = 0;
    if let Ok(all) = std::fs::read_to_string(corpus_dir().join(file)) {
        for l in all.lines() {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(l) {
                if let Some(t) = v["text"].as_str() {
                    total += t.len();
                    out.push(t.to_string());
                    if total >= max_bytes {
                        break;
                    }
                }
            }
        }
    }
    if out.is_empty() {
        out.push(fixture.to_string());
    }
    out
}

fn bench_minhash(c: &mut Criterion) {
    let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
    let sets = [
        (
            "zh-5grams",
            texts(
                "zh_sanguo_yanyi.jsonl",
                include_str!("../tests/fixtures/sanguo_ch1.txt"),
                4 << 20,
            ),
        ),
        (
            "en-word3",
            texts(
                "en_sotu.jsonl",
                include_str!("../tests/fixtures/moby_dick_excerpt.txt"),
                4 << 20,
            ),
        ),
    ];
    let mh = MinHasher::new(&MinHashOptions::default()).unwrap();
    let mut g = c.benchmark_group("minhash");
    g.sample_size(10);
    for (name, docs) in &sets {
        let norm: Vec<String> = docs.iter().map(|d| fp.normalize(d)).collect();
        let bytes: usize = norm.iter().map(String::len).sum();
        assert_eq!(
            mh.shingles_for(&norm[0]),
            if name.starts_with("zh") {
                Shingles::Chars
            } else {
                Shingles::Words
            }
        );
        g.throughput(Throughput::Bytes(bytes as u64));
        for (scheme, tag) in [
            (Scheme::CodePointSketch, "v3"),
            (Scheme::SimilaritySketch, "v2"),
            (Scheme::Permutations, "v1"),
        ] {
            let mh = MinHasher::new(&MinHashOptions {
                scheme,
                ..Default::default()
            })
            .unwrap();
            // Correctness: the signature of a text with one edit is close to the original's.
            let a = mh.signature_normalized(&norm[0]).unwrap();
            let edited = norm[0].replacen(char::is_alphanumeric, "ж", 1);
            let b = mh.signature_normalized(&edited).unwrap();
            assert!(jaccard_estimate(&a, &b) > 0.8, "{name} {tag}");
            g.bench_function(format!("signature-128-{tag}/{name}"), |bch| {
                bch.iter(|| {
                    for t in &norm {
                        black_box(mh.signature_normalized(t));
                    }
                })
            });
        }
        // The bound of both: cutting the shingles and hashing each once.
        let mut want = 0u64;
        for t in &norm {
            mh.shingles_each(t, &mut |_| want += 1);
        }
        g.bench_function(format!("shingle-hashes/{name}"), |bch| {
            bch.iter(|| {
                let (mut n, mut acc) = (0u64, 0u32);
                for t in &norm {
                    mh.shingles_each(t, &mut |s| {
                        n += 1;
                        acc ^= fold32(xxhash_rust::xxh3::xxh3_64(s));
                    });
                }
                assert_eq!(n, want);
                black_box(acc)
            })
        });
    }
    let lsh = MinHashLsh::new(128, &Default::default()).unwrap();
    let sig = mh.signature_normalized("the quick brown fox").unwrap();
    assert_eq!(lsh.keys(&sig).len(), lsh.params().0);
    g.throughput(Throughput::Elements(1));
    g.bench_function("band-keys", |b| b.iter(|| black_box(lsh.keys(&sig))));
    g.finish();
}

/// Lookups in the band tables of 1 M stored documents (18 bands): growing, and frozen as a
/// past time segment's are; each query's candidates checked against the stored keys.
fn bench_lsh_lookups(c: &mut Criterion) {
    let n = 1_000_000u64;
    let opts = neardup::minhash::LshOptions {
        params: Some((18, 7)),
        ..Default::default()
    };
    let keys = |i: u64| -> Vec<u64> {
        (0..18u64)
            .map(|b| neardup::hash::xxh3_seeded(&i.to_le_bytes(), b))
            .collect()
    };
    let mut growing = MinHashLsh::new(128, &opts).unwrap();
    growing.reserve(n as usize);
    for i in 0..n {
        growing.insert_keys(&keys(i));
    }
    let mut frozen = growing.clone();
    assert!(frozen.freeze(), "the index is large enough to freeze");
    assert!(frozen.heap_bytes() * 2 < growing.heap_bytes());
    // Half the queries stored (each finds itself), half new (finds nothing).
    let queries: Vec<Vec<u64>> = (0..2_000u64)
        .map(|q| keys(if q % 2 == 0 { q * 499 } else { n + q }))
        .collect();
    let key_of = |slot: u32, band: usize| keys(slot as u64)[band];
    let mut g = c.benchmark_group("lsh");
    g.sample_size(20);
    g.throughput(Throughput::Elements(queries.len() as u64));
    for (name, lsh) in [("growing", &growing), ("frozen", &frozen)] {
        for (q, k) in queries.iter().enumerate() {
            let want: Vec<u32> = if q % 2 == 0 {
                vec![(q as u32) * 499]
            } else {
                vec![]
            };
            assert_eq!(lsh.candidates_where(k, key_of), want, "{name} query {q}");
        }
        g.bench_function(format!("lookup-18-bands-1m/{name}"), |b| {
            b.iter(|| {
                let mut found = 0;
                for k in &queries {
                    found += lsh.candidates(k).len();
                }
                assert!(found >= queries.len() / 2);
                black_box(found)
            })
        });
    }
    g.finish();
}

fn bench_imatch_exact(c: &mut Criterion) {
    let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
    fp.warm_up();
    let docs = texts(
        "zh_debian_docs.jsonl",
        include_str!("../tests/fixtures/sanguo_ch1.txt"),
        1 << 20,
    );
    let norm: Vec<String> = docs.iter().map(|d| fp.normalize(d)).collect();
    let bytes: usize = norm.iter().map(String::len).sum();
    let im = IMatcher::new(&fp, IMatchOptions::default()).unwrap();
    let long = norm.iter().max_by_key(|t| t.len()).unwrap();
    assert_eq!(
        im.digests_normalized(long),
        im.digests_normalized(&format!("{long} 的 了"))
    );
    let mut g = c.benchmark_group("imatch-exact");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(bytes as u64));
    g.bench_function("imatch/zh", |b| {
        b.iter(|| {
            for t in &norm {
                black_box(im.digests_normalized(t));
            }
        })
    });
    assert_eq!(
        neardup::exact::digest(&norm[0]),
        neardup::exact::digest(&norm[0].clone())
    );
    g.bench_function("exact/zh", |b| {
        b.iter(|| {
            for t in &norm {
                black_box(neardup::exact::digest(t));
            }
        })
    });
    g.finish();

    // The exact stage's table: 1 M stored digests, 20,000 lookups (every other one stored).
    use neardup::detect::Detector;
    let digest = |i: u64| neardup::hash::xxh3_128(&i.to_le_bytes());
    let mut exact = neardup::exact::ExactDetector::new(fp.clone());
    for i in 0..1_000_000u64 {
        exact.insert(i as u32, digest(i * 2));
    }
    let queries: Vec<u128> = (0..20_000u64).map(|i| digest(i * 100 + i % 2)).collect();
    let hits = |d: &neardup::exact::ExactDetector| {
        queries.iter().filter(|q| !d.find(q).is_empty()).count()
    };
    assert_eq!(hits(&exact), 10_000);
    let mut g = c.benchmark_group("exact-index");
    g.throughput(Throughput::Elements(queries.len() as u64));
    g.bench_function("find-1m", |b| b.iter(|| assert_eq!(hits(&exact), 10_000)));
    g.finish();
}

fn bench_short(c: &mut Criterion) {
    let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
    let mut docs: Vec<String> = texts("zh_fortunes.jsonl", "", 4 << 20)
        .into_iter()
        .filter(|t| (15..=140).contains(&t.chars().filter(|c| c.is_alphanumeric()).count()))
        .take(5000)
        .collect();
    if docs.len() < 100 {
        docs = (0..2000)
            .map(|i| format!("第{i}条短消息：今天天气很好，我们一起去公园散步，顺便买点水果回家"))
            .collect();
    }
    let mut d = ShortTextDetector::new(fp, ShortTextOptions::default()).unwrap();
    for (i, t) in docs.iter().enumerate() {
        if let Ok(s) = d.sketch(t) {
            d.insert(i as u32, s);
        }
    }
    // Correctness: every indexed text finds itself.
    let q = d.sketch(&docs[0]).unwrap();
    assert!(d.find(&q).iter().any(|v| v.of == 0));
    let queries: Vec<&String> = docs.iter().take(200).collect();
    let mut g = c.benchmark_group("shorttext");
    g.sample_size(10);
    g.throughput(Throughput::Elements(queries.len() as u64));
    g.bench_function("sketch+find/zh_fortunes-5000", |b| {
        b.iter(|| {
            for t in &queries {
                let s = d.sketch(t).unwrap();
                black_box(d.find(&s));
            }
        })
    });
    g.finish();
}

/// The short path where a stream repeats its phrases (the online engine's benchmark mix):
/// 40,000 stored texts of two 40-character spans of a pool of ~1,800 fortunes each, so a new
/// composition shares a band with thousands of them and `find` confirms `MAX_CONFIRMED`
/// candidates. Sketches are made outside the timed loop: this times the candidates and their
/// confirmation. Checks that each stored text finds itself and that the queries' verdicts are
/// the same on every pass.
fn bench_short_shared_phrases(c: &mut Criterion) {
    let pool: Vec<Vec<char>> = texts("zh_fortunes.jsonl", "", 1 << 20)
        .into_iter()
        .map(|t| t.chars().collect::<Vec<char>>())
        .filter(|t| t.len() >= 40)
        .collect();
    if pool.len() < 100 {
        return; // the fixtures are too small to repeat phrases this way
    }
    let compose = |i: u64| {
        (0..2u64)
            .map(|j| {
                let h = neardup::index::random::SplitMix64::new(i << 4 | j).next();
                let b = &pool[(h % pool.len() as u64) as usize];
                let start = ((h >> 32) as usize) % (b.len() - 40).max(1);
                b[start..start + 40].iter().collect::<String>()
            })
            .collect::<Vec<_>>()
            .join("。")
    };
    let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
    let mut d = ShortTextDetector::new(fp, ShortTextOptions::default()).unwrap();
    let stored = 40_000u64;
    for i in 0..stored {
        if let Ok(s) = d.sketch(&compose(i)) {
            d.insert(i as u32, s);
        }
    }
    for i in (0..stored).step_by(997) {
        let q = d.sketch(&compose(i)).unwrap();
        assert!(
            d.find(&q).iter().any(|v| v.of == i as u32),
            "text {i} finds itself"
        );
    }
    let queries: Vec<_> = (stored..stored + 200)
        .map(|i| d.sketch(&compose(i)).unwrap())
        .collect();
    time_finds(c, "find/shared-phrases-40k", 10, &d, &queries);
}

/// Each query's verdicts: (query, stored text, similarity's bits), sorted.
fn short_verdicts(d: &ShortTextDetector, queries: &[ShortSketch]) -> Vec<(usize, u32, u64)> {
    let mut v: Vec<(usize, u32, u64)> = queries
        .iter()
        .enumerate()
        .flat_map(|(k, q)| {
            d.find(q)
                .into_iter()
                .map(move |v| (k, v.of, v.similarity.unwrap_or(0.0).to_bits()))
        })
        .collect();
    v.sort_unstable();
    v
}

/// Times `d.find` of every query (`shorttext/{name}`) and checks that the verdicts are the
/// same on every pass.
fn time_finds(
    c: &mut Criterion,
    name: &str,
    samples: usize,
    d: &ShortTextDetector,
    queries: &[ShortSketch],
) {
    let expected = short_verdicts(d, queries);
    let mut g = c.benchmark_group("shorttext");
    g.sample_size(samples);
    g.throughput(Throughput::Elements(queries.len() as u64));
    g.bench_function(name, |b| {
        b.iter(|| {
            queries
                .iter()
                .map(|q| black_box(d.find(q)).len())
                .sum::<usize>()
        })
    });
    g.finish();
    assert_eq!(
        short_verdicts(d, queries),
        expected,
        "the same verdicts on every pass"
    );
}

/// The template veto's sketch of a document's distinct part (the text without its repeated
/// lines: normalised again, its 3-gram signature, the guard's 5-gram sets of the part and of
/// the whole document), with line counts taken over the same documents, as batch dedup
/// counts them. Checks that the documents whose lines repeat get a distinct part, and that a
/// document's part matches itself.
fn bench_veto(c: &mut Criterion) {
    let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
    let docs: Vec<String> = texts(
        "zh_debian_docs.jsonl",
        include_str!("../tests/fixtures/sanguo_ch1.txt"),
        4 << 20,
    )
    .into_iter()
    .map(|t| t.chars().take(700).collect())
    .collect();
    let rules = VetoRules::new(fp.clone(), TemplateVetoOptions::default()).unwrap();
    let mut counts: std::collections::HashMap<u64, u32> = Default::default();
    for t in &docs {
        for k in rules.counted_lines(t) {
            *counts.entry(k).or_default() += 1;
        }
    }
    let line_docs: Vec<Vec<u32>> = docs
        .iter()
        .map(|t| {
            rules
                .line_keys(t)
                .into_iter()
                .map(|k| k.map_or(0, |k| counts[&k.exact]))
                .collect()
        })
        .collect();
    let wholes: Vec<String> = docs.iter().map(|t| rules.normalize_whole(t)).collect();
    let parts = |i: usize| rules.distinct_part_normalized(&docs[i], &wholes[i], &line_docs[i]);
    let with_repeats = line_docs
        .iter()
        .filter(|l| l.iter().any(|&n| n >= 3))
        .count();
    let with_part = (0..docs.len()).filter(|&i| parts(i).is_some()).count();
    assert!(
        docs.len() < 100 || (with_part > 0 && with_part <= with_repeats),
        "{with_part} parts, {with_repeats} documents with repeated lines"
    );
    if let Some(p) = (0..docs.len()).find_map(parts) {
        let v = neardup::detect::Verdict {
            of: 0,
            distance: None,
            similarity: Some(0.9),
            stage: neardup::detect::Stage::Minhash,
        };
        assert!(rules.stands(&v, Some(&p), Some(&rules.kept(&p))));
    }
    let bytes: usize = docs.iter().map(String::len).sum();
    let mut g = c.benchmark_group("veto");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(bytes as u64));
    g.bench_function("distinct-part/zh_debian_docs-700", |b| {
        b.iter(|| {
            let n = (0..docs.len()).filter(|&i| parts(i).is_some()).count();
            assert_eq!(n, with_part);
        })
    });
    // As an indexed document pays it: the distinct part and what the index keeps of it (the
    // 16-bit signature and the guard's bottom-256 samples).
    g.bench_function("distinct-part-kept/zh_debian_docs-700", |b| {
        b.iter(|| {
            let kept: Vec<_> = (0..docs.len())
                .filter_map(|i| parts(i).map(|p| rules.kept(&p)))
                .collect();
            assert_eq!(kept.len(), with_part);
            assert!(kept.iter().all(|k| k.samples.is_some()));
            kept
        })
    });
    g.finish();
}

/// The short path's containment measure (`contained_similarity_at_least`, semi-global edit
/// distance): pieces of 三国演义 of 60–460 characters, each with one character in ten replaced,
/// against the passage around them (aligned in full), and against another passage (refused,
/// mostly by the character-count bound).
fn bench_alignment(c: &mut Criterion) {
    use neardup::detect::alignment::contained_similarity_at_least;
    let chars: Vec<char> = texts(
        "zh_sanguo_yanyi.jsonl",
        include_str!("../tests/fixtures/sanguo_ch1.txt"),
        1 << 20,
    )
    .concat()
    .chars()
    .filter(|c| !c.is_whitespace())
    .collect();
    let n = chars.len();
    let mut pairs = Vec::new();
    for k in 0..200usize {
        let len = 60 + (k * 37) % 400;
        let at = (k * 7919) % (n - 3 * len);
        let piece: String = chars[at + len..at + 2 * len]
            .iter()
            .enumerate()
            .map(|(i, &ch)| if i % 10 == 5 { '的' } else { ch })
            .collect();
        let around: String = chars[at..at + 3 * len].iter().collect();
        let other_at = (at + n / 2) % (n - 3 * len);
        if other_at < at + 3 * len && at < other_at + 3 * len {
            continue; // the other passage overlaps this one (a short fixture text)
        }
        let other: String = chars[other_at..other_at + 3 * len].iter().collect();
        pairs.push((piece, around, other));
    }
    assert!(pairs.len() >= 20, "{} pairs", pairs.len());
    // Result check: every piece is found around its place, at 0.8 (one edit in ten at most),
    // and none in the other passage.
    for (piece, around, other) in &pairs {
        let inside = contained_similarity_at_least(piece, around, 0.8);
        assert!(inside.is_some_and(|s| s >= 0.8), "{inside:?}");
        assert_eq!(contained_similarity_at_least(piece, other, 0.8), None);
    }
    let mut g = c.benchmark_group("alignment");
    g.throughput(criterion::Throughput::Elements(pairs.len() as u64));
    for (name, against_other) in [
        ("contained/sanguo-200-pieces", false),
        ("refused/sanguo-200-pieces", true),
    ] {
        g.bench_function(name, |b| {
            b.iter(|| {
                pairs
                    .iter()
                    .filter(|(piece, around, other)| {
                        let long = if against_other { other } else { around };
                        contained_similarity_at_least(black_box(piece), long, 0.8).is_some()
                    })
                    .count()
            })
        });
    }
    g.finish();
}

/// 50,000 distinct lines of 30–140 characters of every corpus stored (a time segment's short
/// texts in the engine's default mix at ~1 M documents), 400 further lines searched: most
/// share a band with a few dozen stored lines (manuals' lines differ by a word or a number)
/// and a third are near-duplicates of one. Sketches are made outside the timed loop. Checks
/// that stored lines find themselves, that some queries match, and that the verdicts are the
/// same on every pass.
fn bench_short_corpus_lines(c: &mut Criterion) {
    let lines = common::corpus_lines(30, 140);
    if lines.len() < 50_400 {
        return; // needs the corpora
    }
    let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
    let mut d = ShortTextDetector::new(fp, ShortTextOptions::default()).unwrap();
    let stored = 50_000usize;
    for (i, l) in lines[..stored].iter().enumerate() {
        if let Ok(s) = d.sketch(l) {
            d.insert(i as u32, s);
        }
    }
    d.tidy(); // frozen band tables, as the engine's maintenance leaves them
    for i in (0..stored).step_by(997) {
        let q = d.sketch(&lines[i]).unwrap();
        assert!(
            d.find(&q).iter().any(|v| v.of == i as u32),
            "line {i} finds itself"
        );
    }
    let queries: Vec<_> = lines[stored..stored + 400]
        .iter()
        .map(|l| d.sketch(l).unwrap())
        .collect();
    let matched = short_verdicts(&d, &queries)
        .iter()
        .map(|v| v.0)
        .collect::<std::collections::HashSet<_>>()
        .len();
    assert!(
        matched >= 40,
        "{matched} of 400 new lines matched a stored one"
    );
    time_finds(c, "find/corpus-lines-50k", 20, &d, &queries);
}

/// Passages: cutting long texts into fragments and keying them (Chinese and English, the
/// normalised text with its line breaks), and looking up quotes of them (two sentences after
/// an attribution) in the index of them all. Asserts that most quotes are found, each in its
/// source.
fn bench_passages(c: &mut Criterion) {
    use neardup::detect::passages::{PassageIndex, PassageOptions, PassageSketch};
    use neardup::normalize::{NormalizeOptions, Normalizer};
    let opts = PassageOptions::default();
    let normalizer = Normalizer::new(NormalizeOptions::default());
    let mut g = c.benchmark_group("passages");
    g.sample_size(10);
    for (name, file, fixture) in [
        (
            "zh_sanguo_yanyi",
            "zh_sanguo_yanyi.jsonl",
            include_str!("../tests/fixtures/sanguo_ch1.txt"),
        ),
        (
            "en_sotu",
            "en_sotu.jsonl",
            include_str!("../tests/fixtures/moby_dick_excerpt.txt"),
        ),
    ] {
        let docs: Vec<(String, Vec<usize>)> = texts(file, fixture, 4 << 20)
            .iter()
            .map(|t| normalizer.normalize_with_breaks(t))
            .collect();
        let bytes: usize = docs.iter().map(|d| d.0.len()).sum();
        let keys =
            |d: &(String, Vec<usize>)| PassageSketch::of_text(&d.0, &d.1, &opts, true, false);
        let total: usize = docs.iter().map(|d| keys(d).keys().len()).sum();
        assert!(
            total > docs.len(),
            "{total} keys of {} documents",
            docs.len()
        );
        g.throughput(Throughput::Bytes(bytes as u64));
        g.bench_function(format!("keys/{name}"), |b| {
            b.iter(|| {
                assert_eq!(
                    docs.iter().map(|d| keys(d).keys().len()).sum::<usize>(),
                    total
                )
            })
        });
        // Two sentences from the middle of each document (with no line break in them), in
        // quotation marks.
        let mut index = PassageIndex::new(opts.clone());
        for (i, d) in docs.iter().enumerate() {
            index.insert(i as u32, &keys(d));
        }
        let quotes: Vec<(u32, PassageSketch)> = docs
            .iter()
            .enumerate()
            .filter_map(|(i, d)| {
                let ends: Vec<usize> =
                    d.0.match_indices(['。', '.'])
                        .map(|(at, m)| at + m.len())
                        .collect();
                let (a, b) = (ends.len() / 2..ends.len().saturating_sub(2))
                    .map(|k| (ends[k], ends[k + 2]))
                    .find(|&(a, b)| !d.1.iter().any(|&x| a < x && x < b))?;
                let quote = format!("“{}”", &d.0[a..b]);
                let s = PassageSketch::of_text(&quote, &[], &opts, false, true);
                s.is_checked().then_some((i as u32, s))
            })
            .collect();
        let found = || {
            quotes
                .iter()
                .filter(|(i, q)| index.find(q).is_some_and(|v| v.of == *i))
                .count()
        };
        let n = found();
        assert!(
            n * 2 >= quotes.len(),
            "{n} of {} quotes found",
            quotes.len()
        );
        g.throughput(Throughput::Elements(quotes.len() as u64));
        g.bench_function(format!("find-quotes/{name}"), |b| {
            b.iter(|| assert_eq!(found(), n))
        });
    }
    g.finish();
}

criterion_group!(
    benches,
    bench_minhash,
    bench_lsh_lookups,
    bench_imatch_exact,
    bench_short,
    bench_short_shared_phrases,
    bench_short_corpus_lines,
    bench_veto,
    bench_alignment,
    bench_passages
);
criterion_main!(benches);
