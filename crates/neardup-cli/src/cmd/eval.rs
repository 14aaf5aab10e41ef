//! `neardup eval`: evaluation sets with planted near-duplicates (`make`), pairwise scoring of
//! dedup output (`score`), and precision/recall against the distance k (`sweep`).
//!
//! Definitions are in the library's [`neardup::eval`] docs.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use neardup::detect::spec::DetectorSpec;
use neardup::eval::{self, MakeOptions, NgramSetting, SetDoc, SourceDoc, Truth};
use serde_json::Value;

use super::common::{set_threads, FeatureArgs};
use crate::input::{DocReader, Format, InputArgs};

/// Arguments of `neardup eval`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  neardup eval make corpus.jsonl --seed 7 --output set.jsonl
  neardup dedup set.jsonl > out.jsonl && neardup eval score set.jsonl out.jsonl
  neardup eval sweep set.jsonl --chart pr.svg            # the default detector's threshold
  neardup eval sweep set.jsonl --threshold 0.4,0.5,0.6 --no-template-veto
  neardup eval sweep set.jsonl --minhash-char-ngram 3..7   # the default detector's shingle size
  neardup eval sweep set.jsonl --k 0..8 --features jieba  # simhash distance

Pairwise scoring: a true pair is two documents of the same planted group, a predicted pair two
documents of the same dedup cluster; precision = correct/predicted, recall = correct/true.
Per kind, a pair counts for the planted kinds of its documents; per length bucket (short < 140
characters ≤ medium < 500 ≤ long, of the source text) for the shorter one.")]
pub struct Args {
    #[command(subcommand)]
    pub command: EvalCommand,
}

/// The `neardup eval` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum EvalCommand {
    /// Build an evaluation set from corpus JSONL files by planting near-duplicates.
    Make(MakeArgs),
    /// Score dedup output against an evaluation set: pairwise precision, recall, F1.
    Score(ScoreArgs),
    /// Run dedup in-process at a range of settings (the Jaccard threshold or the MinHash
    /// shingle size of the default detector or of minhash, or the simhash distance) and score
    /// each: a table and an SVG chart.
    Sweep(SweepArgs),
}

/// Arguments of `neardup eval make`.
#[derive(Debug, clap::Args)]
pub struct MakeArgs {
    /// Corpus files (JSONL, `{"id","text"}`).
    #[arg(required = true)]
    pub corpus: Vec<PathBuf>,
    /// Random seed (the same corpus and seed give the same set).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Where to write the set (JSONL).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: PathBuf,
    /// At most this many source documents (chosen at random).
    #[arg(long, default_value_t = 2000)]
    pub max_sources: usize,
    /// Sources shorter than this many characters are left out.
    #[arg(long, default_value_t = 20)]
    pub min_chars: usize,
    /// The kinds a planted copy is drawn from, comma-separated (mirror, reformat, ads,
    /// counters, edit, excerpt, repost, quote) [default: the first six].
    #[arg(long, value_delimiter = ',', value_parser = ["mirror", "reformat", "ads", "counters", "edit", "excerpt", "repost", "quote"])]
    pub kinds: Vec<String>,
    /// Each planted group holds its original and 1 to N copies.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=16))]
    pub copies: u64,
    /// Percent of sources made template hard negatives.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(0..=80))]
    pub negative_percent: u64,
    /// JSONL field holding the document id.
    #[arg(long, default_value = "id")]
    pub id_field: String,
    /// JSONL field holding the document text.
    #[arg(long, default_value = "text")]
    pub text_field: String,
}

/// Arguments of `neardup eval score`.
#[derive(Debug, clap::Args)]
pub struct ScoreArgs {
    /// The evaluation set (from `neardup eval make`).
    pub set: PathBuf,
    /// `neardup dedup` output for the set (JSONL with `id` and `cluster`).
    pub dedup_output: PathBuf,
    /// Also write the scores as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// Arguments of `neardup eval sweep`.
#[derive(Debug, clap::Args)]
pub struct SweepArgs {
    /// The evaluation set (from `neardup eval make`).
    pub set: PathBuf,
    /// Sweep the simhash Hamming distance over these: a range `A..B` (inclusive) or a list
    /// `0,2,3` (the detector is then simhash).
    #[arg(long, value_parser = parse_ks, conflicts_with_all = ["threshold", "detector", "minhash_char_ngram", "minhash_word_ngram"])]
    pub k: Option<KList>,
    /// Sweep the Jaccard threshold over these: a list `0.4,0.5,0.6`
    /// [default: 0.3,0.35,…,0.9 when no other knob is given].
    #[arg(long, value_delimiter = ',', value_parser = parse_sweep_threshold)]
    pub threshold: Vec<f64>,
    /// Sweep MinHash's character shingle size (Han-heavy and spaceless text) over these: a
    /// list `3,4,5,6` or a range `3..6`, at the default threshold.
    #[arg(long, value_name = "NS", value_parser = parse_ngrams, conflicts_with_all = ["threshold", "minhash_word_ngram"])]
    pub minhash_char_ngram: Option<KList>,
    /// Sweep MinHash's word shingle size (other text) over these: a list `1,2,3,4` or a range.
    #[arg(long, value_name = "NS", value_parser = parse_ngrams, conflicts_with = "threshold")]
    pub minhash_word_ngram: Option<KList>,
    /// The detector whose threshold is swept: auto (the default of `neardup dedup`) or minhash.
    #[arg(
        long = "method",
        id = "detector",
        value_name = "DETECTOR",
        default_value = "auto",
        value_parser = ["auto", "minhash"]
    )]
    pub detector: String,
    /// Sweep without the template veto (as `neardup dedup --no-template-veto`).
    #[arg(long)]
    pub no_template_veto: bool,
    #[command(flatten)]
    pub features: FeatureArgs,
    /// Write an SVG chart of precision and recall against k to FILE.
    #[arg(long, value_name = "FILE")]
    pub chart: Option<PathBuf>,
    /// Also write the sweep as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Chart title (default: the set's file name and the feature method).
    #[arg(long)]
    pub title: Option<String>,
    /// Worker threads (0 = one per core).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
}

fn parse_sweep_threshold(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(t) if t > 0.0 && t <= 1.0 => Ok(t),
        _ => Err(format!(
            "`{s}`: a threshold is a Jaccard similarity in (0, 1], e.g. 0.5"
        )),
    }
}

/// A list of distances.
#[derive(Debug, Clone)]
pub struct KList(pub Vec<u32>);

fn parse_ks(s: &str) -> Result<KList, String> {
    let ks = parse_list(s)?;
    if ks.iter().any(|&k| k >= 64) {
        return Err(format!("`{s}`: distances must be 0 to 63"));
    }
    Ok(KList(ks))
}

fn parse_ngrams(s: &str) -> Result<KList, String> {
    let ns = parse_list(s)?;
    if ns.iter().any(|&n| n == 0 || n > 64) {
        return Err(format!(
            "`{s}`: shingle sizes must be 1 to 64 (characters) or 1 to 16 (words)"
        ));
    }
    Ok(KList(ns))
}

/// A range `A..B` (inclusive) or a list `A,B,C` of numbers.
fn parse_list(s: &str) -> Result<Vec<u32>, String> {
    let bad = || format!("`{s}`: use a range like 0..8 (inclusive) or a list like 0,2,3");
    let ks: Vec<u32> = if let Some((a, b)) = s.split_once("..") {
        let a: u32 = a.trim().parse().map_err(|_| bad())?;
        let b: u32 = b
            .trim_start_matches('=')
            .trim()
            .parse()
            .map_err(|_| bad())?;
        if a > b {
            return Err(bad());
        }
        (a..=b).collect()
    } else {
        s.split(',')
            .map(|x| x.trim().parse().map_err(|_| bad()))
            .collect::<Result<_, _>>()?
    };
    if ks.is_empty() {
        return Err(bad());
    }
    Ok(ks)
}

/// Runs `neardup eval`.
pub fn run(args: Args) -> anyhow::Result<()> {
    match args.command {
        EvalCommand::Make(a) => make(a),
        EvalCommand::Score(a) => score(a),
        EvalCommand::Sweep(a) => sweep(a),
    }
}

fn make(a: MakeArgs) -> anyhow::Result<()> {
    let mut w = crate::output::open_one("--output", Some(&a.output), &a.corpus)?;
    let input = InputArgs {
        format: Format::Jsonl,
        id_field: a.id_field.clone(),
        text_field: a.text_field.clone(),
    };
    let mut sources = Vec::new();
    for path in &a.corpus {
        let name = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        for item in DocReader::open(std::slice::from_ref(path), &input)? {
            let doc = item.map_err(|e| anyhow::anyhow!("{e}"))?;
            let id = match &doc.id {
                Value::String(s) => s.clone(),
                v => v.to_string(),
            };
            sources.push(SourceDoc {
                label: format!("{name}#{id}"),
                text: doc.text,
            });
        }
    }
    let opts = MakeOptions {
        seed: a.seed,
        max_sources: a.max_sources,
        min_chars: a.min_chars,
        kinds: if a.kinds.is_empty() {
            eval::Kind::PLANTED.to_vec()
        } else {
            a.kinds
                .iter()
                .filter_map(|k| eval::Kind::ALL.into_iter().find(|x| x.as_str() == k))
                .collect()
        },
        copies: a.copies as usize,
        negative_percent: a.negative_percent,
        ..MakeOptions::default()
    };
    let set = eval::make_set(&sources, &opts);
    for d in &set.docs {
        serde_json::to_writer(&mut w, d)?;
        w.write_all(b"\n")?;
    }
    w.finish()?;
    let mut kinds: HashMap<&str, usize> = HashMap::new();
    for d in &set.docs {
        *kinds.entry(d.kind.as_str()).or_default() += 1;
    }
    let mut kinds: Vec<_> = kinds.into_iter().collect();
    kinds.sort();
    eprintln!(
        "eval make: {} sources read, {} used ({} too short, {} near-duplicates of earlier sources left out); {} documents: {}",
        sources.len(),
        set.sources_used,
        set.too_short,
        set.natural_duplicates,
        set.docs.len(),
        kinds
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(())
}

fn id_key(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

/// Reads an evaluation set: `(id, text, truth)` per document.
fn read_set(path: &Path) -> anyhow::Result<Vec<SetDoc>> {
    let f = std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut out = Vec::new();
    for (i, line) in BufReader::with_capacity(1 << 20, f).lines().enumerate() {
        let line = line.with_context(|| format!("{}:{}", path.display(), i + 1))?;
        if line.trim().is_empty() {
            continue;
        }
        let d: SetDoc = serde_json::from_str(&line).with_context(|| {
            format!(
                "{}:{}: not an evaluation-set line (make one with `neardup eval make`)",
                path.display(),
                i + 1
            )
        })?;
        out.push(d);
    }
    Ok(out)
}

fn score(a: ScoreArgs) -> anyhow::Result<()> {
    let set = read_set(&a.set)?;
    let f = std::fs::File::open(&a.dedup_output)
        .with_context(|| format!("cannot open {}", a.dedup_output.display()))?;
    let mut clusters: HashMap<String, u64> = HashMap::new();
    for (i, line) in BufReader::with_capacity(1 << 20, f).lines().enumerate() {
        let origin = || format!("{}:{}", a.dedup_output.display(), i + 1);
        let line = line.with_context(origin)?;
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(&line).with_context(origin)?;
        let (Some(id), Some(c)) = (v.get("id"), v.get("cluster")) else {
            anyhow::bail!(
                "{}: expected `neardup dedup` output with \"id\" and \"cluster\"",
                origin()
            );
        };
        clusters.insert(id_key(id), neardup::hash::xxh3(c.to_string().as_bytes()));
    }
    let mut truth: Vec<Truth> = Vec::with_capacity(set.len());
    let mut pred = Vec::with_capacity(set.len());
    for d in &set {
        let Some(&c) = clusters.get(&d.id) else {
            anyhow::bail!(
                "document {} of {} is not in {}; run dedup over the whole set",
                d.id,
                a.set.display(),
                a.dedup_output.display()
            );
        };
        truth.push(d.truth());
        pred.push(c);
    }
    let s = eval::score(&truth, &pred);
    print!("{}", s.table());
    if let Some(p) = &a.json {
        std::fs::write(p, serde_json::to_string_pretty(&s)? + "\n")
            .with_context(|| format!("cannot write {}", p.display()))?;
    }
    Ok(())
}

fn sweep(a: SweepArgs) -> anyhow::Result<()> {
    set_threads(a.threads);
    let set = read_set(&a.set)?;
    let fp = a.features.fingerprinter()?;
    let texts: Vec<&str> = set.iter().map(|d| d.text.as_str()).collect();
    let truth: Vec<Truth> = set.iter().map(SetDoc::truth).collect();
    // The chart's name of a MinHash sweep's detector.
    let what_minhash = || {
        let veto = if a.no_template_veto {
            ", no template veto"
        } else {
            ""
        };
        format!("{}{veto}", a.detector)
    };
    let (points, what) = match &a.k {
        Some(ks) => {
            if a.no_template_veto {
                anyhow::bail!("--no-template-veto applies to a threshold sweep; simhash (--k) has no template veto");
            }
            fp.warm_up();
            (
                eval::sweep_simhash(&fp, &texts, &truth, &ks.0)?,
                format!("simhash, features {:?}", a.features.method),
            )
        }
        None if a.minhash_char_ngram.is_some() || a.minhash_word_ngram.is_some() => {
            let settings: Vec<NgramSetting> = match (&a.minhash_char_ngram, &a.minhash_word_ngram) {
                (Some(ns), _) => {
                    ns.0.iter()
                        .map(|&n| NgramSetting::Chars(n as usize))
                        .collect()
                }
                (None, Some(ns)) => {
                    ns.0.iter()
                        .map(|&n| NgramSetting::Words(n as usize))
                        .collect()
                }
                (None, None) => unreachable!("one of them is given"),
            };
            let template_veto = !a.no_template_veto;
            let method = a.detector.parse()?;
            let spec = DetectorSpec {
                method,
                template_veto,
                threshold: DetectorSpec::default_threshold(method, template_veto),
                ..DetectorSpec::default()
            };
            (
                eval::sweep_ngram(&fp, &texts, &truth, &spec, &settings)?,
                what_minhash(),
            )
        }
        None => {
            let thresholds: Vec<f64> = if a.threshold.is_empty() {
                (6..=18).map(|i| f64::from(i) * 0.05).collect()
            } else {
                a.threshold.clone()
            };
            let spec = DetectorSpec {
                method: a.detector.parse()?,
                template_veto: !a.no_template_veto,
                ..DetectorSpec::default()
            };
            (
                eval::sweep_threshold(&fp, &texts, &truth, &spec, &thresholds)?,
                what_minhash(),
            )
        }
    };
    print!("{}", eval::sweep_table(&points));
    if let Some(p) = &a.json {
        std::fs::write(p, serde_json::to_string_pretty(&points)? + "\n")
            .with_context(|| format!("cannot write {}", p.display()))?;
    }
    if let Some(p) = &a.chart {
        let title = a.title.clone().unwrap_or_else(|| {
            format!(
                "{} — {what}",
                a.set
                    .file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
            )
        });
        std::fs::write(p, eval::sweep_svg(&points, &title))
            .with_context(|| format!("cannot write {}", p.display()))?;
    }
    Ok(())
}
