//! The held-out evaluation of the `auto` detector's defaults: planted sets from every corpus,
//! several seeds, three families of sets, and a split of the corpora into a *development* half
//! (defaults are chosen looking only at it) and a *held-out* half (run once the choice is made,
//! to confirm it). Prints one Markdown table per split: pairwise precision / recall / F1 per
//! set and variant (as `neardup eval score`).
//!
//! ```sh
//! cargo run --release -p neardup --example split_eval -- ../shared/corpora dev 1,2,3
//! cargo run --release -p neardup --example split_eval -- ../shared/corpora heldout 1,2,3
//! ```
//!
//! Set families (per corpus and seed; 1,500 sources at most):
//!
//! - `classic`: `neardup eval make` defaults — one copy per group (mirror, reformat, ads,
//!   counters, edit, excerpt) and 20 % template hard negatives.
//! - `families`: no template at all, no negatives; each group is an original and one to four
//!   copies (ads, counters, excerpt, edit, reformat), so a text's lines repeat across its
//!   group — a syndicated article, an e-mail thread. A safe template veto changes nothing here.
//! - `containment`: one to two copies per group, reposts (comment, forwarding marker,
//!   attribution added), quotes and excerpts, with 20 % template hard negatives.
//! - `short classic`, `short families`, `short containment`: the same three with short texts
//!   for sources — the corpus's distinct lines of 30–140 characters (Chinese) or 60–280
//!   (English), as posts, captions and one-line notes are.
//!
//! `SPLIT_EVAL_MINHASH=v1|v2|v3` and `SPLIT_EVAL_MINHASH_SEED=n` set the long path's MinHash
//! scheme and seed (every column but the online engine's).
//! `SPLIT_EVAL_BITS=32,16,8` replaces the columns with the default and the default without the
//! veto, the long path's signature entries kept at those bits.
//! `SPLIT_EVAL_SHARES=0.05,0.175,0.35` replaces the columns with the default searching the body
//! from those template shares (`TemplateVetoOptions::strip_template_share`).
//! `SPLIT_EVAL_COPIES=n` plants up to `n` copies per group in every family (a story
//! syndicated widely).
//! `SPLIT_EVAL_BATCH=n` cuts batch dedup into batches of `n` documents (4,096 by default).
//! `SPLIT_EVAL_LINKAGE=components` deduplicates every batch column by single linkage.
//! `SPLIT_EVAL_DUMP=dir` writes each set to `dir` as JSONL (`id`, `text`, `group`, `kind`).
//! `SPLIT_EVAL_MISSES=repost` (a kind) prints each planted copy of that kind left out of its
//! original's cluster, with both texts, to standard error.
//! `SPLIT_EVAL_FALSE_LINKS=1` prints each decision that links documents of different planted
//! groups (the kinds, the stage and similarity, both texts) to standard error.
//! `SPLIT_EVAL_BODY_INDEX=1` replaces the columns with the default against the default that
//! searched a text's body but indexed only whole texts, and the online engine's default.
//! `SPLIT_EVAL_BODY=1` replaces the columns with the default against the previous default
//! (no body search, exact line keys), both in batch and through the online engine.
//! `SPLIT_EVAL_ONLINE=1,100` replaces the columns with the default in batch and the online
//! engine in requests of those sizes; with `SPLIT_EVAL_BY_CONTENT=1` the online engine vetoes
//! by content too (`TemplateVetoOptions::by_content`).
//! `SPLIT_EVAL_CONTAINMENT=0.8,0.85,0.9` replaces the columns with the default whose short path
//! confirms containment from those alignment similarities (`ContainmentOptions::threshold`).
//! `SPLIT_EVAL_PASSAGES=0,1,4,1/5` replaces the columns with the default without passages (0)
//! and with long texts indexed by their sentences (`PolicyOptions::passages`: quotes of long
//! texts), a sentence held by more than `h` documents counting for none; `h/m` keys fragments
//! from `m` letters.
//! `SPLIT_EVAL_NO_PASSAGES=1` turns passages off in every column (the online engine's too).
//! `SPLIT_EVAL_MINIFY=1` puts every HTML page's markup on one line (line breaks removed), as
//! minified pages come from many sites.
//! `SPLIT_EVAL_TEXT_LINES=1` replaces the columns with the default whose veto reads the lines
//! of HTML pages from their markup and from their text (`TemplateVetoOptions::text_lines`), in
//! batch and online (requests of 1 and of 100).
//! `SPLIT_EVAL_EDGE=0,0.1,0.2` replaces the columns with the default whose short path's
//! containment lets that share of the shorter text lie outside the longer at one edge
//! (`ContainmentOptions::edge`).
//! `SPLIT_EVAL_SHORT=0.75,0.8,0.8/0.2` replaces the columns with the default whose short path
//! confirms by the measure from those similarities (`ShortTextOptions::threshold`); `t/l` also
//! bands its candidates for a Jaccard threshold of `l` (`ShortTextOptions::lsh`).
//! `SPLIT_EVAL_SCRIPT=1` replaces the columns with the default keeping Traditional Chinese
//! characters and folding them to Simplified (`NormalizeOptions::fold_traditional`), in batch
//! and online (requests of 100).
//! `SPLIT_EVAL_GUARD_SAMPLE=256,128,64` replaces the columns with the default whose stored
//! documents keep guard samples of those sizes (`TemplateVetoOptions::guard_sample`), in batch
//! and online (requests of 100).
//! `SPLIT_EVAL_THRESHOLDS=0.4,0.5,0.6` replaces the columns with the default at those MinHash
//! thresholds; `SPLIT_EVAL_GUARDS=0.3,0.5,0.7` adds columns of the guarded veto at those
//! `contained_above` values.
//!
//! Held-out also runs the natural pairs (`pairs_*.jsonl`: every document of the paired corpora
//! deduplicated, the listed pairs the truth; only their recall is meaningful).

mod variants;

use std::path::{Path, PathBuf};

use variants::{variants, Variant};

use neardup::dedup::{Deduper, Keep, Linkage};
use neardup::detect::Detector;
use neardup::eval::{make_set, pair_truth, score, Kind, MakeOptions, Prf, SourceDoc, Truth};
use neardup::normalize::looks_like_html;
use neardup::policy::AutoDetector;
use neardup::template_veto::TemplateVeto;

const DEV: [&str; 4] = [
    "zh_linux_kernel_docs_zh_CN.jsonl",
    "zh_debian_docs.jsonl",
    "en_debian_docs.jsonl",
    "en_sotu.jsonl",
];
const HELD_OUT: [&str; 5] = [
    "zh_fortunes.jsonl",
    "zh_sanguo_yanyi.jsonl",
    "zh_linux_kernel_docs_zh_TW.jsonl",
    "en_moby_dick.jsonl",
    "en_shakespeare_milton.jsonl",
];

/// Short texts from a corpus: its distinct lines of 30–140 characters (Chinese) or 60–280
/// (otherwise), each a source of the `short` set families — posts, captions, one-line notes.
fn short_lines(file: &str, docs: &[(String, String)]) -> Vec<SourceDoc> {
    let (lo, hi) = if file.starts_with("zh_") {
        (30, 140)
    } else {
        (60, 280)
    };
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for (id, text) in docs {
        for (i, line) in text.lines().enumerate() {
            let t = line.trim();
            let n = t.chars().count();
            if (lo..=hi).contains(&n) && seen.insert(t.to_string()) {
                out.push(SourceDoc {
                    label: format!("{file}#{id}:{i}"),
                    text: t.to_string(),
                });
            }
        }
    }
    out
}

fn read_jsonl(path: &Path) -> Vec<(String, String)> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| {
            Some((
                v["id"].as_str()?.to_string(),
                v["text"].as_str()?.to_string(),
            ))
        })
        .collect()
}

/// A decision "document `doc` is a duplicate of `of`", by `stage` at `similarity`.
struct Link {
    doc: usize,
    of: usize,
    stage: neardup::detect::Stage,
    similarity: Option<f64>,
}

/// The clusters of the online engine (the online rule: a duplicate joins its match's
/// cluster) over `texts` sent in requests of `request` documents, and its links.
fn engine_clusters(v: &Variant, texts: &[String], request: usize) -> (Vec<u64>, Vec<Link>) {
    use neardup::engine::{
        Decision, Doc, Engine, EngineConfig, EngineDetector, EngineError, ManualClock, SyncMode,
    };
    let dir = tempfile::tempdir().unwrap();
    // `SPLIT_EVAL_BY_CONTENT=1`: the online engine with `TemplateVetoOptions::by_content`.
    let mut veto = v.veto.clone();
    if std::env::var_os("SPLIT_EVAL_BY_CONTENT").is_some() {
        veto.iter_mut().for_each(|o| o.by_content = true);
    }
    let cfg = EngineConfig {
        detector: EngineDetector::Auto(v.policy.clone()),
        template_veto: veto,
        sync: SyncMode::None,
        maintenance_interval: None,
        ..EngineConfig::default()
    };
    let fp = v.fingerprinter();
    let clock = std::sync::Arc::new(ManualClock::new(1_700_000_000_000));
    let e = Engine::open(dir.path(), fp, cfg, clock).unwrap();
    let mut out: Vec<u64> = Vec::with_capacity(texts.len());
    let mut links = Vec::new();
    for (k, chunk) in texts.chunks(request).enumerate() {
        let docs = chunk
            .iter()
            .enumerate()
            .map(|(i, t)| Doc::text(format!("{}", k * request + i), t.clone()))
            .collect();
        for r in e.check_and_insert_batch(docs) {
            let me = out.len() as u64;
            out.push(match r {
                Ok(o) => match o.decision {
                    Decision::Unique => me,
                    Decision::Duplicate {
                        of,
                        stage,
                        similarity,
                        ..
                    } => {
                        let of = of.parse::<usize>().unwrap();
                        links.push(Link {
                            doc: me as usize,
                            of,
                            stage,
                            similarity,
                        });
                        out[of]
                    }
                },
                Err(EngineError::Fingerprint(neardup::Error::EmptyDocument { .. })) => me,
                Err(e) => panic!("{e}"),
            });
        }
    }
    (out, links)
}

fn run<D: Detector>(det: D, texts: &[String]) -> (Vec<u64>, Vec<Link>) {
    // `SPLIT_EVAL_LINKAGE=components`: single linkage in every batch column.
    let linkage = match std::env::var("SPLIT_EVAL_LINKAGE").as_deref() {
        Ok("components") => Linkage::Components,
        _ => Linkage::Kept,
    };
    let mut dd = Deduper::with_linkage(det, linkage);
    // `SPLIT_EVAL_BATCH=n`: batches of `n` documents (as a corpus larger than one batch of
    // `neardup dedup` is read), not the command's 4,096.
    let batch = std::env::var("SPLIT_EVAL_BATCH")
        .ok()
        .and_then(|b| b.parse().ok())
        .unwrap_or(4096);
    for chunk in texts.chunks(batch) {
        dd.push_batch(chunk).expect("sketches");
    }
    let outcomes = dd.finish(Keep::First).outcomes;
    let links = outcomes
        .iter()
        .enumerate()
        .filter_map(|(doc, o)| {
            Some(Link {
                doc,
                of: o.matched? as usize,
                stage: o.stage?,
                similarity: o.similarity,
            })
        })
        .collect();
    (
        outcomes.iter().map(|o| u64::from(o.cluster)).collect(),
        links,
    )
}

/// The clusters a variant gives `texts`, and the links that made them.
fn clusters(v: &Variant, texts: &[String]) -> (Vec<u64>, Vec<Link>) {
    if let Some(r) = v.engine {
        return engine_clusters(v, texts, r);
    }
    let fp = v.fingerprinter();
    let auto = AutoDetector::new(fp.clone(), v.policy.clone()).unwrap();
    match &v.veto {
        Some(o) if v.body_index => run(
            TemplateVeto::with_body_index(
                auto,
                AutoDetector::new(fp.clone(), v.policy.clone()).unwrap(),
                fp,
                o.clone(),
            )
            .unwrap(),
            texts,
        ),
        Some(o) => run(TemplateVeto::new(auto, fp, o.clone()).unwrap(), texts),
        None => run(auto, texts),
    }
}

/// Prints (to standard error) each link between documents of different planted groups: the
/// kinds, the stage and similarity, and both texts.
fn false_links(set: &str, truth: &[Truth], texts: &[String], links: &[Link]) {
    for l in links {
        let (a, b) = (&truth[l.of], &truth[l.doc]);
        if a.group != b.group {
            eprintln!(
                "false link in {set}: {:?} {} ← {:?} {}, {:?} {:?}\n  {:?}\n  {:?}",
                a.kind, l.of, b.kind, l.doc, l.stage, l.similarity, texts[l.of], texts[l.doc]
            );
        }
    }
}

/// Prints each planted copy of `kind` that ends up outside its original's cluster (`c[i]`:
/// document `i`'s cluster), with both texts.
fn misses(set: &str, truth: &[Truth], texts: &[String], c: &[u64], kind: &str) {
    for (i, t) in truth.iter().enumerate() {
        if format!("{:?}", t.kind).to_lowercase() != kind {
            continue;
        }
        let original = truth
            .iter()
            .position(|o| o.group == t.group && o.kind == Kind::Original);
        if let Some(o) = original.filter(|&o| c[o] != c[i]) {
            eprintln!(
                "missed {kind} in {set}: {i} of {o}\n  {:?}\n  {:?}",
                texts[i], texts[o]
            );
        }
    }
}

fn fmt(p: &Prf) -> String {
    let f = |x: Option<f64>| x.map_or("—".to_string(), |x| format!("{x:.3}"));
    format!("{} / {} / {}", f(p.precision), f(p.recall), f(p.f1))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = PathBuf::from(args.get(1).map_or("../shared/corpora", |s| s.as_str()));
    let split = args.get(2).map_or("dev", |s| s.as_str());
    let seeds: Vec<u64> = args
        .get(3)
        .map_or("1", |s| s.as_str())
        .split(',')
        .map(|s| s.parse().expect("seeds: 1,2,3"))
        .collect();
    let only: Option<&str> = args.get(4).map(|s| s.as_str());
    let files: &[&str] = match split {
        "dev" => &DEV,
        "heldout" => &HELD_OUT,
        _ => panic!("split: dev or heldout"),
    };
    let families: [(&str, MakeOptions); 3] = [
        ("classic", MakeOptions::default()),
        (
            "families",
            MakeOptions {
                negative_percent: 0,
                kinds: vec![
                    Kind::Ads,
                    Kind::Counters,
                    Kind::Excerpt,
                    Kind::Edit,
                    Kind::Reformat,
                ],
                copies: 4,
                ..MakeOptions::default()
            },
        ),
        (
            "containment",
            MakeOptions {
                kinds: vec![Kind::Repost, Kind::Quote, Kind::Excerpt],
                copies: 2,
                ..MakeOptions::default()
            },
        ),
    ];
    let variants = variants();
    println!(
        "| set | documents | {} |",
        variants
            .iter()
            .map(|v| v.name.as_str())
            .collect::<Vec<_>>()
            .join(" | ")
    );
    println!("| --- | --- |{}", " --- |".repeat(variants.len()));
    for f in files {
        if std::env::var("SPLIT_EVAL_FILE").is_ok_and(|o| !f.starts_with(&o)) {
            continue;
        }
        let docs = read_jsonl(&dir.join(f));
        let sources: Vec<SourceDoc> = docs
            .iter()
            .map(|(id, text)| SourceDoc {
                label: format!("{f}#{id}"),
                text: text.clone(),
            })
            .collect();
        let lines = short_lines(f, &docs);
        for ((fam, base), sources) in families
            .iter()
            .map(|(n, o)| (n.to_string(), o))
            .zip(std::iter::repeat(&sources))
            .chain(
                families
                    .iter()
                    .map(|(n, o)| (format!("short {n}"), o))
                    .zip(std::iter::repeat(&lines)),
            )
        {
            if only.is_some_and(|o| o != fam) {
                continue;
            }
            // Too few lines of the right length make no short set.
            if fam.starts_with("short") && sources.len() < 100 {
                continue;
            }
            for &seed in &seeds {
                // `SPLIT_EVAL_COPIES=n`: up to `n` copies per group in every family.
                let copies = std::env::var("SPLIT_EVAL_COPIES")
                    .ok()
                    .and_then(|c| c.parse().ok())
                    .unwrap_or(base.copies);
                let set = make_set(
                    sources,
                    &MakeOptions {
                        seed,
                        max_sources: 1500,
                        copies,
                        ..base.clone()
                    },
                );
                let truth: Vec<Truth> = set.docs.iter().map(|d| d.truth()).collect();
                let mut texts: Vec<String> = set.docs.into_iter().map(|d| d.text).collect();
                // `SPLIT_EVAL_MINIFY=1`: every HTML page's markup on one line.
                if std::env::var_os("SPLIT_EVAL_MINIFY").is_some() {
                    for t in texts.iter_mut().filter(|t| looks_like_html(t)) {
                        *t = t.replace(['\n', '\r'], "");
                    }
                }
                // `SPLIT_EVAL_DUMP=dir`: each set as JSONL (`id` = position, `text`, `group`).
                if let Ok(dir) = std::env::var("SPLIT_EVAL_DUMP") {
                    let name = format!(
                        "{}/{} {fam} {seed}.jsonl",
                        dir,
                        f.trim_end_matches(".jsonl")
                    );
                    let lines: String = texts
                        .iter()
                        .zip(&truth)
                        .enumerate()
                        .map(|(i, (t, tr))| {
                            format!(
                                "{}\n",
                                serde_json::json!({"id": i, "text": t, "group": tr.group, "kind": format!("{:?}", tr.kind)})
                            )
                        })
                        .collect();
                    std::fs::write(&name, lines).expect("SPLIT_EVAL_DUMP: a writable directory");
                }
                let cells: Vec<String> = variants
                    .iter()
                    .map(|v| {
                        let (c, links) = clusters(v, &texts);
                        if std::env::var_os("SPLIT_EVAL_FALSE_LINKS").is_some() {
                            false_links(
                                &format!("{f} {fam} {seed}, {}", v.name),
                                &truth,
                                &texts,
                                &links,
                            );
                        }
                        if let Ok(kind) = std::env::var("SPLIT_EVAL_MISSES") {
                            misses(
                                &format!("{f} {fam} {seed}, {}", v.name),
                                &truth,
                                &texts,
                                &c,
                                &kind,
                            );
                        }
                        let s = score(&truth, &c);
                        if std::env::var_os("SPLIT_EVAL_KINDS").is_some() {
                            eprintln!("{f} {fam} {seed} {}:\n{}", v.name, s.table());
                        }
                        fmt(&s.overall)
                    })
                    .collect();
                println!(
                    "| {} {fam}, seed {seed} | {} | {} |",
                    f.trim_end_matches(".jsonl"),
                    texts.len(),
                    cells.join(" | ")
                );
            }
        }
    }
    if split != "heldout" || only.is_some() {
        return;
    }
    let all: Vec<&str> = DEV.iter().chain(&HELD_OUT).copied().collect();
    for (name, pairs, prefix) in [
        (
            "natural pairs zh",
            "pairs_zh_script_and_version.jsonl",
            "zh_",
        ),
        ("natural pairs en", "pairs_en_shakespeare.jsonl", "en_"),
    ] {
        let docs: Vec<(String, String)> = all
            .iter()
            .filter(|f| f.starts_with(prefix))
            .flat_map(|f| read_jsonl(&dir.join(f)))
            .collect();
        let ids: Vec<&str> = docs.iter().map(|d| d.0.as_str()).collect();
        let truth: Vec<Truth> =
            pair_truth(&ids, &std::fs::read_to_string(dir.join(pairs)).unwrap());
        let texts: Vec<String> = docs.into_iter().map(|d| d.1).collect();
        let cells: Vec<String> = variants
            .iter()
            .map(|v| fmt(&score(&truth, &clusters(v, &texts).0).overall))
            .collect();
        println!("| {name} | {} | {} |", texts.len(), cells.join(" | "));
    }
}
