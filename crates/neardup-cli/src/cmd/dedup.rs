//! `neardup dedup`: which documents of a corpus are near-duplicates of which, in clusters.
//!
//! A three-stage pipeline over batches: while batch N is decided serially in input order (the
//! library's [`neardup::dedup::Deduper`]), rayon sketches batch N + 1 in parallel with a second,
//! identically built detector ([`neardup::dedup::sketch_batch`]) and batch N + 2 is read. Batch
//! boundaries, observations and decisions happen in the order of a sequential run, so the
//! output never depends on `--threads`.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use neardup::boilerplate::{TemplateAware, TemplateOptions};
use neardup::dedup::{sketch_batch, Clustering, Deduper, Keep, Outcome};
use neardup::detect::{Detector, SimhashDetector};
use neardup::exact::ExactDetector;
use neardup::imatch::{IMatchDetector, IMatchOptions};
use neardup::minhash::{MinHashDetector, MinHashDetectorOptions};
use neardup::policy::{AutoDetector, LongMethod, PolicyOptions};
use neardup::shorttext::{ShortTextDetector, ShortTextOptions};
use neardup::Fingerprinter;
use serde_json::Value;

use super::common::{set_threads, FeatureArgs};
use crate::input::{BadPolicy, Doc, DocKind, DocReader, InputArgs};

/// Arguments of `neardup dedup`.
#[derive(Debug, clap::Args)]
#[command(
    mut_arg("method", |a| a.long("features").help("Feature method of the fingerprint: auto (Han-heavy → jieba, spaceless scripts → chars, else words), jieba, chars, words")),
    after_help = "\
Examples:
  neardup dedup corpus.jsonl > dedup.jsonl
  neardup dedup --distance 3 --kept clean.jsonl --report report.json crawl/*.jsonl
  neardup dedup --format lines titles.txt
  neardup dedup pages/                      # a directory of .txt/.html files (id = relative path)

Output (one JSON line per input document, in input order):
  {\"id\": …, \"duplicate_of\": <kept id>|null, \"cluster\": <number of the cluster's first document>,
   \"distance\": <Hamming distance to the closest earlier near-duplicate>|null,
   \"matched\": <id of that closest earlier document>|null}
  Empty documents (nothing left after normalisation) add \"skipped\": \"empty\"; they are kept
  and form their own cluster.

Clusters are the connected components of the near-duplicate graph (every document is indexed,
duplicates included; union-find), numbered by their first document. --keep first decides on
arrival: a document is kept when nothing earlier is within the distance, else it points at the
first document of the cluster it joins. --keep longest waits for the whole input, then keeps the
longest document of every cluster (characters; ties → earliest) and points the others at it;
with --kept it reads the input files a second time (not possible from standard input).
--kept writes the kept documents unchanged (the original line for jsonl and lines input; whole
files and JSONL from standard input as {\"id\",\"text\"} lines)."
)]
pub struct Args {
    /// Input files or directories (standard input when none).
    pub inputs: Vec<PathBuf>,
    #[command(flatten)]
    pub input: InputArgs,
    #[command(flatten)]
    pub features: FeatureArgs,
    /// Near-duplicate detector: auto (exact digest, then short texts by MinHash candidates
    /// confirmed by edit distance, long texts by MinHash LSH — the measured best, see README),
    /// simhash, minhash, imatch, exact, short.
    #[arg(
        long = "method",
        id = "detector",
        value_name = "DETECTOR",
        default_value = "auto",
        value_parser = ["auto", "simhash", "minhash", "imatch", "exact", "short"]
    )]
    pub detector: String,
    /// Do not veto matches that rest only on lines repeated across many documents (a shared
    /// page template inside the text); see README "Quality".
    #[arg(long)]
    pub no_template: bool,
    /// simhash: near-duplicates are within this Hamming distance (inclusive).
    #[arg(long, short = 'k', default_value_t = 3)]
    pub distance: u32,
    /// minhash (and auto's long path): Jaccard threshold of near-duplicates, in (0, 1). 0.6
    /// measured best on the planted sets (README, "Quality").
    #[arg(long, default_value_t = 0.6)]
    pub threshold: f64,
    /// Which document of a cluster is kept: first or longest.
    #[arg(long, default_value = "first", value_parser = ["first", "longest"])]
    pub keep: String,
    /// Write the JSONL decisions here instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also write the kept documents, unchanged, to FILE.
    #[arg(long, value_name = "FILE")]
    pub kept: Option<PathBuf>,
    /// Write the cluster report and run summary as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Number of largest clusters in the report.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Bad input lines (malformed JSON, invalid UTF-8) are counted, reported and skipped
    /// instead of stopping.
    #[arg(long)]
    pub skip_bad: bool,
    /// Worker threads (0 = one per core).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// No progress bar and no report on standard error (errors and warnings still print).
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

const BATCH_DOCS: usize = 4096;
const BATCH_BYTES: usize = 8 << 20;

/// Runs `neardup dedup`.
pub fn run(args: Args) -> anyhow::Result<()> {
    set_threads(args.threads);
    let keep: Keep = args.keep.parse()?;
    if keep == Keep::Longest && args.kept.is_some() && reads_stdin(&args.inputs) {
        anyhow::bail!("--keep longest with --kept reads the input twice, which standard input cannot be; name the input files, or use --keep first");
    }
    // Every detector is built twice, identically: one sketches batch N + 1 while the other
    // decides batch N (see `run_with`).
    match args.detector.as_str() {
        "simhash" => {
            let fp = args.features.fingerprinter()?;
            fp.warm_up();
            run_with(
                || Ok(SimhashDetector::new(fp.clone(), args.distance)?),
                &args,
                keep,
            )
        }
        "minhash" => {
            let fp = args.features.fingerprinter()?;
            let mut opts = MinHashDetectorOptions::default();
            opts.lsh.threshold = args.threshold;
            run_template(
                || Ok(MinHashDetector::new(fp.clone(), opts.clone())?),
                &fp,
                &args,
                keep,
            )
        }
        "imatch" => {
            let fp = args.features.fingerprinter()?;
            fp.warm_up();
            run_with(
                || Ok(IMatchDetector::new(&fp, IMatchOptions::default())?),
                &args,
                keep,
            )
        }
        "exact" => {
            let fp = args.features.fingerprinter()?;
            run_with(|| Ok(ExactDetector::new(fp.clone())), &args, keep)
        }
        "short" => {
            let fp = args.features.fingerprinter()?;
            run_with(
                || {
                    Ok(ShortTextDetector::new(
                        fp.clone(),
                        ShortTextOptions::default(),
                    )?)
                },
                &args,
                keep,
            )
        }
        "auto" => {
            let fp = args.features.fingerprinter()?;
            let mut opts = PolicyOptions {
                simhash_k: args.distance,
                ..PolicyOptions::default()
            };
            opts.minhash.lsh.threshold = args.threshold;
            // Only the simhash long path uses the feature method (jieba's dictionary, ~0.1 s
            // to load); the MinHash and short paths hash characters or words.
            if opts.long != LongMethod::Minhash {
                fp.warm_up();
            }
            run_template(
                || Ok(AutoDetector::new(fp.clone(), opts.clone())?),
                &fp,
                &args,
                keep,
            )
        }
        other => anyhow::bail!(
            "unknown --method `{other}`; use auto, simhash, minhash, imatch, exact or short"
        ),
    }
}

/// Runs the detectors `make` builds, wrapped in the template veto unless `--no-template`.
fn run_template<D: Detector>(
    make: impl Fn() -> anyhow::Result<D>,
    fp: &Fingerprinter,
    args: &Args,
    keep: Keep,
) -> anyhow::Result<()> {
    if args.no_template {
        run_with(make, args, keep)
    } else {
        run_with(
            || {
                Ok(TemplateAware::new(
                    make()?,
                    fp.clone(),
                    TemplateOptions::default(),
                )?)
            },
            args,
            keep,
        )
    }
}

fn reads_stdin(inputs: &[PathBuf]) -> bool {
    inputs.is_empty() || inputs.iter().any(|p| p.as_os_str() == "-")
}

/// What is kept of each document until the end: its id.
struct Record {
    id: Value,
}

fn progress(total: Option<u64>, quiet: bool) -> indicatif::ProgressBar {
    use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
    if quiet || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    match total {
        Some(t) => ProgressBar::with_draw_target(Some(t), ProgressDrawTarget::stderr()).with_style(
            ProgressStyle::with_template(
                "{bar:30} {bytes}/{total_bytes} {binary_bytes_per_sec} · {msg} · ETA {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        ),
        None => ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()).with_style(
            ProgressStyle::with_template("{spinner} {bytes} {binary_bytes_per_sec} · {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        ),
    }
}

/// Sketches a batch with `sketcher` (in parallel) and counts its documents' characters.
fn sketch_docs<D: Detector>(sketcher: &D, batch: &[Doc]) -> Sketched<D> {
    let texts: Vec<&str> = batch.iter().map(|d| d.text.as_str()).collect();
    let lengths = texts.iter().map(|t| t.chars().count() as u32).collect();
    (sketch_batch(sketcher, &texts), lengths)
}

/// A batch's sketches and character counts.
type Sketched<D> = (Vec<neardup::Result<<D as Detector>::Sketch>>, Vec<u32>);

/// Three-stage pipeline over batches: while batch N is decided (serially, in input order, by
/// the deduper's detector), batch N + 1 is sketched in parallel by a second, identically built
/// detector that has observed the same batches in the same order (sketches are pure, so they
/// are the deduper's own), and batch N + 2 is read. Batch boundaries and the order of
/// observations and decisions are those of a sequential run: the output never depends on
/// `--threads`.
fn run_with<D: Detector>(
    make: impl Fn() -> anyhow::Result<D>,
    args: &Args,
    keep: Keep,
) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut reader = DocReader::open(&args.inputs, &args.input)?;
    let pb = progress(reader.total_bytes, args.quiet);
    let mut bad = BadPolicy {
        skip: args.skip_bad,
        count: 0,
    };
    let mut kept_writer = match &args.kept {
        Some(p) => Some(KeptWriter::create(p, &args.input)?),
        None => None,
    };
    let sketcher = make()?;
    let mut dd = Deduper::new(make()?);
    let mut records: Vec<Record> = Vec::new();
    let mut total_bytes = 0u64;
    let (mut batch, mut bytes) = reader.next_batch(BATCH_DOCS, BATCH_BYTES, &mut bad)?;
    let (mut sketched, mut next) = rayon::join(
        || sketch_docs(&sketcher, &batch),
        || reader.next_batch(BATCH_DOCS, BATCH_BYTES, &mut bad),
    );
    while !batch.is_empty() {
        let mut decide = |batch: &[Doc], (sketches, lengths): Sketched<D>| -> anyhow::Result<()> {
            let start = dd.len();
            let outcomes = dd.decide_batch(sketches, &lengths).map_err(|e| {
                let origin = &batch[e.doc as usize - start].origin;
                anyhow::anyhow!("{origin}: {}", e.source)
            })?;
            if let (Some(w), Keep::First) = (kept_writer.as_mut(), keep) {
                for (doc, o) in batch.iter().zip(outcomes) {
                    if o.duplicate_of.is_none() {
                        w.write(doc)?;
                    }
                }
            }
            pb.inc(bytes as u64);
            pb.set_message(format!(
                "{} docs, {:.0} docs/s",
                dd.len(),
                dd.len() as f64 / started.elapsed().as_secs_f64().max(1e-9)
            ));
            Ok(())
        };
        let (next_batch, next_bytes) = match next {
            Ok(n) => n,
            Err(e) => {
                // As in a sequential run: this batch's errors first, then the reading error.
                decide(&batch, sketched)?;
                return Err(e);
            }
        };
        let (decided, (next_sketched, after)) = rayon::join(
            || decide(&batch, sketched),
            || {
                rayon::join(
                    || sketch_docs(&sketcher, &next_batch),
                    || {
                        if next_batch.is_empty() {
                            Ok((Vec::new(), 0))
                        } else {
                            reader.next_batch(BATCH_DOCS, BATCH_BYTES, &mut bad)
                        }
                    },
                )
            },
        );
        decided?;
        total_bytes += bytes as u64;
        records.extend(batch.into_iter().map(|d| Record { id: d.id }));
        (batch, bytes, sketched, next) = (next_batch, next_bytes, next_sketched, after);
    }
    pb.finish_and_clear();
    let clustering = dd.finish(keep);

    // Decisions, in input order.
    let mut out: Box<dyn Write> = match &args.output {
        Some(p) => Box::new(std::io::BufWriter::with_capacity(
            1 << 16,
            File::create(p).with_context(|| format!("cannot create {}", p.display()))?,
        )),
        None => Box::new(std::io::BufWriter::with_capacity(
            1 << 16,
            std::io::stdout().lock(),
        )),
    };
    for (rec, o) in records.iter().zip(&clustering.outcomes) {
        write_decision(&mut out, rec, o, &records)?;
    }
    out.flush()?;
    drop(out);

    if keep == Keep::Longest {
        if let Some(w) = kept_writer.as_mut() {
            let reader = DocReader::open(&args.inputs, &args.input)?;
            let mut i = 0usize;
            for item in reader {
                let Ok(doc) = item else { continue };
                if clustering
                    .outcomes
                    .get(i)
                    .is_some_and(|o| o.duplicate_of.is_none())
                {
                    w.write(&doc)?;
                }
                i += 1;
            }
        }
    }
    if let Some(w) = kept_writer {
        w.finish()?;
    }

    let seconds = started.elapsed().as_secs_f64();
    let report = full_report(&clustering, &records, args, bad.count, total_bytes, seconds);
    if let Some(p) = &args.report {
        std::fs::write(p, serde_json::to_string_pretty(&report)? + "\n")
            .with_context(|| format!("cannot write {}", p.display()))?;
    }
    if !args.quiet {
        eprint!("{}", human_report(&report));
    }
    Ok(())
}

fn write_decision(
    out: &mut dyn Write,
    rec: &Record,
    o: &Outcome,
    records: &[Record],
) -> anyhow::Result<()> {
    let id_of = |d: Option<u32>| d.map_or(Value::Null, |d| records[d as usize].id.clone());
    write!(
        out,
        "{{\"id\":{},\"duplicate_of\":{},\"cluster\":{},\"distance\":{},\"matched\":{}",
        rec.id,
        id_of(o.duplicate_of),
        o.cluster,
        o.distance.map_or(Value::Null, Value::from),
        id_of(o.matched),
    )?;
    if let Some(s) = o.similarity {
        write!(out, ",\"similarity\":{}", Value::from(s))?;
    }
    if o.empty {
        out.write_all(b",\"skipped\":\"empty\"")?;
    }
    out.write_all(b"}\n")?;
    Ok(())
}

fn full_report(
    c: &Clustering,
    records: &[Record],
    args: &Args,
    bad: u64,
    bytes: u64,
    seconds: f64,
) -> Value {
    let r = c.report(args.top);
    let largest: Vec<Value> = r
        .largest
        .iter()
        .map(|l| {
            serde_json::json!({
                "cluster": l.cluster,
                "size": l.size,
                "sample_ids": l.sample.iter().map(|&d| records[d as usize].id.clone()).collect::<Vec<_>>(),
            })
        })
        .collect();
    let dist: Vec<Value> = r
        .size_distribution
        .iter()
        .map(|(label, n)| serde_json::json!({"size": label, "clusters": n}))
        .collect();
    serde_json::json!({
        "method": r.method,
        "distance": args.distance,
        "keep": args.keep,
        "documents": r.documents,
        "duplicates": r.duplicates,
        "empty": r.empty,
        "bad_skipped": bad,
        "clusters": r.clusters,
        "clusters_with_duplicates": r.clusters_with_duplicates,
        "size_distribution": dist,
        "largest": largest,
        "bytes": bytes,
        "seconds": seconds,
        "mb_per_s": bytes as f64 / 1e6 / seconds.max(1e-9),
        "threads": rayon::current_num_threads(),
    })
}

fn human_report(r: &Value) -> String {
    let mut s = String::new();
    if let Some(dist) = r["size_distribution"].as_array() {
        s.push_str("cluster sizes:");
        for d in dist {
            s.push_str(&format!(
                " {}×{}",
                d["size"].as_str().unwrap_or("?"),
                d["clusters"]
            ));
        }
        s.push('\n');
    }
    if let Some(largest) = r["largest"].as_array().filter(|l| !l.is_empty()) {
        s.push_str("largest clusters:\n");
        for l in largest {
            let ids: Vec<String> = l["sample_ids"]
                .as_array()
                .map(|a| a.iter().map(Value::to_string).collect())
                .unwrap_or_default();
            s.push_str(&format!(
                "  cluster {} ({} docs): {}\n",
                l["cluster"],
                l["size"],
                ids.join(", ")
            ));
        }
    }
    s.push_str(&format!(
        "dedup: {} documents, {} duplicates, {} clusters ({} with duplicates), {} empty, {} bad skipped; {:.1} MB in {:.2} s = {:.1} MB/s ({}, {} threads)\n",
        r["documents"],
        r["duplicates"],
        r["clusters"],
        r["clusters_with_duplicates"],
        r["empty"],
        r["bad_skipped"],
        r["bytes"].as_f64().unwrap_or(0.0) / 1e6,
        r["seconds"].as_f64().unwrap_or(0.0),
        r["mb_per_s"].as_f64().unwrap_or(0.0),
        r["method"].as_str().unwrap_or(""),
        r["threads"],
    ));
    s
}

/// Writes kept documents unchanged: the original line of jsonl/lines input (JSONL lines are
/// re-read from their file in step with the main reader), `{"id","text"}` for whole files and
/// JSONL from standard input.
struct KeptWriter {
    out: std::io::BufWriter<File>,
    files: HashMap<String, (BufReader<File>, usize)>,
    input: InputArgs,
}

impl KeptWriter {
    fn create(path: &PathBuf, input: &InputArgs) -> anyhow::Result<KeptWriter> {
        let f = File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
        Ok(KeptWriter {
            out: std::io::BufWriter::with_capacity(1 << 16, f),
            files: HashMap::new(),
            input: input.clone(),
        })
    }

    fn write(&mut self, doc: &Doc) -> anyhow::Result<()> {
        match doc.kind {
            DocKind::Line => {
                self.out.write_all(doc.text.as_bytes())?;
                self.out.write_all(b"\n")?;
            }
            DocKind::JsonLine => match doc.origin.rsplit_once(':') {
                Some((name, line)) if name != "<stdin>" => {
                    let line: usize = line.parse().context("document origin")?;
                    self.copy_line(name, line)?;
                }
                _ => self.write_json(doc)?,
            },
            DocKind::File => self.write_json(doc)?,
        }
        Ok(())
    }

    fn write_json(&mut self, doc: &Doc) -> anyhow::Result<()> {
        let mut m = serde_json::Map::new();
        m.insert(self.input.id_field.clone(), doc.id.clone());
        m.insert(self.input.text_field.clone(), Value::from(doc.text.clone()));
        serde_json::to_writer(&mut self.out, &Value::Object(m))?;
        self.out.write_all(b"\n")?;
        Ok(())
    }

    /// Copies line `line` (1-based) of `name`; lines are requested in increasing order per file.
    fn copy_line(&mut self, name: &str, line: usize) -> anyhow::Result<()> {
        if !self.files.contains_key(name) {
            let f = File::open(name).with_context(|| format!("cannot reopen {name} for --kept"))?;
            self.files
                .insert(name.to_string(), (BufReader::with_capacity(1 << 20, f), 0));
        }
        let (r, at) = self.files.get_mut(name).expect("inserted above");
        let mut buf = Vec::new();
        while *at < line {
            buf.clear();
            let n = r.read_until(b'\n', &mut buf)?;
            if n == 0 {
                anyhow::bail!("{name} changed while being read (line {line} is gone)");
            }
            *at += 1;
        }
        if buf.last() != Some(&b'\n') {
            buf.push(b'\n');
        }
        self.out.write_all(&buf)?;
        Ok(())
    }

    fn finish(mut self) -> anyhow::Result<()> {
        self.out.flush()?;
        Ok(())
    }
}
