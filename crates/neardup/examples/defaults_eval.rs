//! Compares candidate defaults of `neardup dedup` on planted sets and natural pairs, in one
//! process: the linkage (the online rule against single linkage), the template veto on and
//! off, and the MinHash threshold. Prints one Markdown table row per set and variant
//! (pairwise precision / recall / F1, as `neardup eval score`).
//!
//! ```sh
//! cargo run --release -p neardup --example defaults_eval -- ../shared/corpora [SEEDS]
//! ```
//!
//! Sets: for each seed, one planted set from every Chinese corpus together and one from every
//! English corpus together (`neardup eval make … --max-sources 3000`), one per single corpus
//! (the held-out view: a default must not lose on any of them), and the natural pairs
//! (`pairs_*.jsonl`: the same document in two scripts, releases or spellings; every document
//! of those corpora is deduplicated, the pairs are the truth).

use std::path::{Path, PathBuf};

use neardup::dedup::{Deduper, Keep, Linkage};
use neardup::detect::Detector;
use neardup::eval::{make_set, pair_truth, score, MakeOptions, Prf, SourceDoc, Truth};
use neardup::policy::{AutoDetector, PolicyOptions};
use neardup::template_veto::{TemplateVeto, TemplateVetoOptions};
use neardup::{FingerprintConfig, Fingerprinter};

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

fn sources(dir: &Path, files: &[&str]) -> Vec<SourceDoc> {
    files
        .iter()
        .flat_map(|f| {
            read_jsonl(&dir.join(f))
                .into_iter()
                .map(move |(id, text)| SourceDoc {
                    label: format!("{f}#{id}"),
                    text,
                })
        })
        .collect()
}

#[derive(Clone, Copy)]
struct Variant {
    name: &'static str,
    linkage: Linkage,
    veto: bool,
    threshold: f64,
}

fn run<D: Detector>(det: D, texts: &[String], linkage: Linkage) -> Vec<u64> {
    let mut dd = Deduper::with_linkage(det, linkage);
    for chunk in texts.chunks(4096) {
        dd.push_batch(chunk).expect("sketches");
    }
    dd.finish(Keep::First)
        .outcomes
        .iter()
        .map(|o| u64::from(o.cluster))
        .collect()
}

fn clusters(v: Variant, texts: &[String]) -> Vec<u64> {
    let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
    let mut opts = PolicyOptions::default();
    opts.minhash.lsh.threshold = v.threshold;
    // The detector as this comparison was made: the veto without its containment guard, the
    // short path without containment (the guard, containment and the threshold under the veto
    // are compared by the `split_eval` example).
    opts.short.containment = None;
    let auto = AutoDetector::new(fp.clone(), opts).unwrap();
    if v.veto {
        run(
            TemplateVeto::new(auto, fp, TemplateVetoOptions::unguarded()).unwrap(),
            texts,
            v.linkage,
        )
    } else {
        run(auto, texts, v.linkage)
    }
}

fn fmt(p: &Prf) -> String {
    let f = |x: Option<f64>| x.map_or("—".to_string(), |x| format!("{x:.3}"));
    format!("{} / {} / {}", f(p.precision), f(p.recall), f(p.f1))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = PathBuf::from(args.get(1).map_or("../shared/corpora", |s| s.as_str()));
    let seeds: Vec<u64> = args
        .get(2)
        .map_or("1", |s| s.as_str())
        .split(',')
        .map(|s| s.parse().expect("seeds: 1,2,3"))
        .collect();
    let variants = [
        Variant {
            name: "previous default: veto, t=0.6, single linkage",
            linkage: Linkage::Components,
            veto: true,
            threshold: 0.6,
        },
        Variant {
            name: "veto, t=0.6, online rule",
            linkage: Linkage::Kept,
            veto: true,
            threshold: 0.6,
        },
        Variant {
            name: "no veto, t=0.6, online rule",
            linkage: Linkage::Kept,
            veto: false,
            threshold: 0.6,
        },
        Variant {
            name: "no veto, t=0.5, online rule",
            linkage: Linkage::Kept,
            veto: false,
            threshold: 0.5,
        },
        Variant {
            name: "no veto, t=0.5, single linkage",
            linkage: Linkage::Components,
            veto: false,
            threshold: 0.5,
        },
    ];
    let zh = [
        "zh_debian_docs.jsonl",
        "zh_fortunes.jsonl",
        "zh_linux_kernel_docs_zh_CN.jsonl",
        "zh_linux_kernel_docs_zh_TW.jsonl",
        "zh_sanguo_yanyi.jsonl",
    ];
    let en = [
        "en_debian_docs.jsonl",
        "en_moby_dick.jsonl",
        "en_shakespeare_milton.jsonl",
        "en_sotu.jsonl",
    ];
    let mut sets: Vec<(String, Vec<String>, Vec<Truth>)> = Vec::new();
    for &seed in &seeds {
        let mut groups: Vec<(String, Vec<&str>)> = vec![
            ("all zh".into(), zh.to_vec()),
            ("all en".into(), en.to_vec()),
        ];
        if seed == seeds[0] {
            for f in zh.iter().chain(&en) {
                groups.push((f.trim_end_matches(".jsonl").to_string(), vec![*f]));
            }
        }
        for (name, files) in groups {
            let set = make_set(
                &sources(&dir, &files),
                &MakeOptions {
                    seed,
                    max_sources: 3000,
                    ..MakeOptions::default()
                },
            );
            let truth = set
                .docs
                .iter()
                .map(|d| Truth {
                    group: d.group,
                    kind: d.kind,
                    bucket: d.bucket,
                })
                .collect();
            let texts = set.docs.into_iter().map(|d| d.text).collect();
            sets.push((format!("{name}, seed {seed}"), texts, truth));
        }
    }
    // Natural pairs: every document of the paired corpora; truth groups = connected pairs.
    for (name, pairs, files) in [
        (
            "natural pairs zh (scripts, releases)",
            "pairs_zh_script_and_version.jsonl",
            &zh[..],
        ),
        (
            "natural pairs en (Shakespeare spellings)",
            "pairs_en_shakespeare.jsonl",
            &en[..],
        ),
    ] {
        let docs: Vec<(String, String)> = files
            .iter()
            .flat_map(|f| read_jsonl(&dir.join(f)))
            .collect();
        let ids: Vec<&str> = docs.iter().map(|d| d.0.as_str()).collect();
        let truth: Vec<Truth> =
            pair_truth(&ids, &std::fs::read_to_string(dir.join(pairs)).unwrap());
        sets.push((name.into(), docs.into_iter().map(|d| d.1).collect(), truth));
    }
    println!(
        "| set | documents | {} |",
        variants.map(|v| v.name).join(" | ")
    );
    println!("| --- | --- |{}", " --- |".repeat(variants.len()));
    for (name, texts, truth) in &sets {
        let cells: Vec<String> = variants
            .iter()
            .map(|&v| fmt(&score(truth, &clusters(v, texts)).overall))
            .collect();
        println!("| {name} | {} | {} |", texts.len(), cells.join(" | "));
    }
}
