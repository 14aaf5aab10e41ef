//! `neardup dedup`: which documents of a corpus are near-duplicates of which, in clusters.
//!
//! The flags become a [`DetectorSpec`] and a [`Keep`]; the library runs the batch pipeline
//! ([`neardup::dedup::run_pipelined`]: batch N + 2 is read while N + 1 is sketched and N is
//! decided, so the output never depends on `--threads`) and makes the run summary of `--report`
//! ([`neardup::dedup::RunSummary`]). This command reads the inputs, shows progress and writes
//! the outputs (`pipeline`, `write`).

mod ids;
mod pipeline;
mod spill;
mod write;

use std::path::PathBuf;

use neardup::dedup::{Keep, RunFacts, RunSummary};
use neardup::detect::spec::{DetectorSpec, WithDetector};
use neardup::detect::Detector;
use neardup::policy::{LongMethod, PolicyOptions};

use super::common::{parse_threshold, set_threads, FeatureArgs};
use crate::input::InputArgs;
use pipeline::run_with;

/// Default Hamming distance of the simhash detectors (the library's, in one place).
fn default_distance() -> u32 {
    DetectorSpec::default().distance
}

/// Arguments of `neardup dedup`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  neardup dedup corpus.jsonl > dedup.jsonl
  neardup dedup --method simhash --distance 3 --kept clean.jsonl --report report.json crawl/*.jsonl
  neardup dedup --removed removed.jsonl --provenance shards/    # a directory of .jsonl(.gz/.zst) shards
  neardup dedup --format lines titles.txt
  neardup dedup pages/                      # a directory of .txt/.html files (id = relative path)
  neardup dedup --method minhash --no-template-veto --memory-budget-mib 512 --kept clean.jsonl crawl/   # index beyond memory

Input: files, directories (their .jsonl, .ndjson, .txt and .html files, plain or .gz/.zst, in
sorted path order) or standard input; gzip and zstd are recognised by content. Documents without
an id get their 1-based line number (FILE:LINE when several files are read).

Output (one JSON line per input document, in input order):
  {\"id\": …, \"duplicate_of\": <kept id>|null, \"cluster\": <number of the cluster's first document>,
   \"distance\": <Hamming distance to the strongest earlier match>|null,
   \"matched\": <id of that match>|null, \"similarity\": …, \"stage\": exact|short|containment|minhash|simhash|imatch}
  Empty documents (nothing left after normalisation) add \"skipped\": \"empty\"; they are kept
  and form their own cluster. --provenance adds \"file\" and \"line\" (1-based; null for whole
  files) to every line.

Clusters (--linkage online, the default) are the decisions `neardup serve` takes on the same
documents in the same order: only kept documents are indexed; a document near one of them is a
duplicate of the strongest match (smallest distance, then highest similarity, then earliest) and
joins its cluster, else it is kept and starts one — exactly one kept document per cluster.
--linkage components indexes every document and makes clusters the connected components of the
near-duplicate graph (union-find): chains of drifting copies join, and a document near two
clusters merges them, so a cluster can hold two documents kept on arrival; the later one carries
\"shares_cluster_with\": <id of the cluster's first kept document>. Clusters are numbered by
their first document, 0-based. --keep longest waits for the whole input, then keeps the longest
document of every cluster (characters; ties → earliest) and points the others at it; with
--kept it reads the input files a second time (not possible from standard input).
--kept writes the kept documents unchanged (the original line for jsonl and lines input, from
files and standard input alike; a Parquet row as one JSON object holding every column; whole
files as {\"id\",\"text\"} lines).
--memory-budget-mib MIB bounds the index's memory by spilling to disk (--temp-dir): the run
sketches everything first, then sorts band keys and candidate pairs within the budget and decides;
it gives the clusters of --method minhash --no-template-veto (which it needs), either linkage.
--removed writes one JSON line per removed document: id, duplicate_of, matched, distance or
similarity, cluster and a reason in words (with --provenance, file and line).
An output may not be an input (the run is refused before anything is written); -o - is
standard output.")]
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
    /// Turn off the template veto, which refuses matches that rest only on lines repeated
    /// across many documents (a shared page template inside the text) and searches a text that
    /// finds no match again without the lines many documents share (ads, counter headers, a
    /// site's template); without it the default --threshold is 0.6 (docs/quality.md), as for
    /// `neardup serve --no-template-veto`.
    /// (`--no-template` is the old spelling.)
    #[arg(long = "no-template-veto", alias = "no-template")]
    pub no_template: bool,
    /// --method simhash: near-duplicates are within this Hamming distance (inclusive), 0 to 63
    /// [default: 3]. Refused with detectors that do not use it.
    #[arg(long, short = 'k', value_parser = clap::value_parser!(u32).range(0..=63))]
    pub distance: Option<u32>,
    /// --method minhash and auto (long texts): Jaccard threshold of near-duplicates, strictly
    /// between 0 and 1 [default: 0.5 for auto under the template veto, otherwise 0.6;
    /// docs/quality.md].
    /// Refused with detectors that do not use it.
    #[arg(long, value_parser = parse_threshold)]
    pub threshold: Option<f64>,
    /// --method minhash and auto (long texts): n of MinHash's character shingles, for
    /// Han-heavy and spaceless text, 1 to 64 [default: 5; docs/quality.md]. Refused with
    /// detectors that do not use it.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=64))]
    pub minhash_char_ngram: Option<u32>,
    /// --method minhash and auto (long texts): n of MinHash's word shingles, for other text,
    /// 1 to 16 [default: 3]. Refused with detectors that do not use it.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=16))]
    pub minhash_word_ngram: Option<u32>,
    /// --method minhash and auto (long texts): bits kept of each MinHash signature entry, 8,
    /// 16 or 32 (b-bit MinHash: 8 stores a quarter of 32 and decides as well;
    /// docs/quality.md) [default: 8]. Refused with detectors that do not use it.
    #[arg(long, value_name = "BITS", value_parser = ["8", "16", "32"])]
    pub minhash_bits: Option<String>,
    /// --method minhash and auto (long texts): the MinHash signature scheme, v3 (code points
    /// of character n-grams packed and mixed), v2 (their bytes hashed with XXH3) or v1 (128
    /// permutations) [default: v3; docs/fingerprint-spec.md]. Refused with detectors that do
    /// not use it.
    #[arg(long, value_name = "SCHEME", value_parser = ["v3", "v2", "v1"])]
    pub minhash_scheme: Option<String>,
    /// auto and --method short: quotes — a short text still matches a longer one that holds
    /// it verbatim without up to this share of its characters at its beginning or its end (an
    /// attribution: `某某说：“…”`, `As … put it: "…"`), 0 to 0.5; 0 turns quotes off
    /// [default: 0.2; docs/quality.md].
    #[arg(long, value_name = "SHARE")]
    pub quote_edge: Option<f64>,
    /// auto: do not index long texts by their sentences. By default a text of up to 467
    /// letters whose sentences (at least 80 % of its letters) occur in one earlier long
    /// document is its duplicate — a quote of one to three sentences [docs/quality.md].
    #[arg(long)]
    pub no_passages: bool,
    /// Which document of a cluster is kept: first or longest.
    #[arg(long, default_value = "first", value_parser = ["first", "longest"])]
    pub keep: String,
    /// How a near-duplicate joins a cluster. online (default): only kept documents are
    /// indexed, a duplicate joins the cluster of its strongest match, every cluster has one
    /// kept document — the decisions `neardup serve` takes on the same documents in the same
    /// order. components: every document is indexed and clusters are connected components
    /// (chains of drifting copies join; a document bridging two clusters merges them).
    #[arg(long, default_value = "online", value_parser = ["online", "components"])]
    pub linkage: String,
    /// Write the JSONL decisions here instead of standard output (`-`: standard output).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also write the kept documents, unchanged, to FILE.
    #[arg(long, value_name = "FILE")]
    pub kept: Option<PathBuf>,
    /// Also write one JSON line per removed document, with why, to FILE.
    #[arg(long, value_name = "FILE")]
    pub removed: Option<PathBuf>,
    /// Add "file" and "line" (1-based) to each line of the decisions and of --removed.
    #[arg(long)]
    pub provenance: bool,
    /// Write the cluster report and run summary as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Number of largest clusters in the report.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Bad input lines (malformed JSON, invalid UTF-8) are counted, reported and skipped
    /// instead of stopping (a run where every line is bad still fails).
    #[arg(long)]
    pub skip_bad: bool,
    /// Worker threads (0 = one per core).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Bound the memory of the index by spilling to disk: MinHash band keys and candidate
    /// pairs are sorted in at most this many MiB (at least 4), signatures and ids live in
    /// files; 20 to 50 bytes a document stay in memory. Gives the clusters of --method minhash
    /// --no-template-veto (which it needs; either --linkage), for corpora whose index does not
    /// fit in memory.
    #[arg(long, value_name = "MIB", value_parser = clap::value_parser!(u64).range(4..=(1u64 << 40)))]
    pub memory_budget_mib: Option<u64>,
    /// Directory of the spill files (anonymous files, removed however the run ends): the
    /// texts the short path keeps to confirm its candidates (read back from the page cache,
    /// not held on the heap), and the files of --memory-budget-mib [default: the system's
    /// temporary directory, $TMPDIR].
    #[arg(long, value_name = "DIR")]
    pub temp_dir: Option<PathBuf>,
    /// No progress bar and no report on standard error (errors and warnings still print).
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

impl Args {
    /// The Hamming distance in force.
    fn distance(&self) -> u32 {
        self.distance.unwrap_or_else(default_distance)
    }

    /// The linkage in force.
    fn linkage(&self) -> neardup::dedup::Linkage {
        match self.linkage.as_str() {
            "components" => neardup::dedup::Linkage::Components,
            _ => neardup::dedup::Linkage::Kept,
        }
    }

    /// The Jaccard threshold in force: `--threshold`, or the library's default for the method
    /// with or without the template veto.
    fn threshold(&self) -> f64 {
        self.threshold.unwrap_or_else(|| {
            let method = self.detector.parse().unwrap_or_default();
            DetectorSpec::default_threshold(method, !self.no_template)
        })
    }
}

impl Args {
    /// The facts of a finished run for its summary.
    fn run_facts(&self, bad_skipped: u64, bytes: u64, started: std::time::Instant) -> RunFacts {
        RunFacts {
            distance: self.distance(),
            threshold: self.threshold(),
            bad_skipped,
            bytes,
            seconds: started.elapsed().as_secs_f64(),
        }
    }
}

/// Writes the run summary to `--report` (JSON) and, unless quiet, to standard error.
fn write_summary(
    args: &Args,
    summary: &RunSummary,
    report: Option<crate::output::Sink>,
) -> anyhow::Result<()> {
    use std::io::Write;
    if let Some(mut w) = report {
        w.write_all((serde_json::to_string_pretty(summary)? + "\n").as_bytes())?;
        w.finish()?;
    }
    if !args.quiet {
        eprint!("{summary}");
    }
    Ok(())
}

/// Refuses --distance and --threshold where the chosen detector would ignore them.
fn check_flags(args: &Args) -> anyhow::Result<()> {
    let long = PolicyOptions::default().long;
    let det = args.detector.as_str();
    let uses_distance = det == "simhash" || (det == "auto" && long != LongMethod::Minhash);
    let uses_threshold = det == "minhash" || (det == "auto" && long != LongMethod::Simhash);
    let what = match det {
        "auto" => "decides exact copies by digest, short texts by edit distance and long texts by MinHash (--threshold)",
        "simhash" => "compares simhash fingerprints by Hamming distance (--distance)",
        "minhash" => "compares MinHash sketches by Jaccard similarity (--threshold)",
        "imatch" => "compares I-Match lexicon digests and has neither setting",
        "exact" => "compares exact digests and has neither setting",
        _ => "compares short texts by edit distance and has neither setting",
    };
    if args.distance.is_some() && !uses_distance {
        anyhow::bail!(
            "--distance is the Hamming distance of --method simhash, and --method {det} would ignore it: it {what}; \
             pass --method simhash to use --distance{}",
            if uses_threshold { ", or set --threshold instead" } else { "" }
        );
    }
    if args.threshold.is_some() && !uses_threshold {
        anyhow::bail!(
            "--threshold is the Jaccard threshold of --method minhash and auto, and --method {det} would ignore it: it {what}; \
             pass --method minhash or auto to use --threshold{}",
            if uses_distance { ", or set --distance instead" } else { "" }
        );
    }
    if (args.minhash_char_ngram.is_some() || args.minhash_word_ngram.is_some()) && !uses_threshold {
        anyhow::bail!(
            "--minhash-char-ngram and --minhash-word-ngram size the shingles of --method minhash and auto, and --method {det} would ignore them: it {what}; \
             pass --method minhash or auto to use them"
        );
    }
    if (args.minhash_bits.is_some() || args.minhash_scheme.is_some()) && !uses_threshold {
        anyhow::bail!(
            "--minhash-bits and --minhash-scheme set the signatures of --method minhash and auto, and --method {det} would ignore them: it {what}; \
             pass --method minhash or auto to use them"
        );
    }
    if args.quote_edge.is_some() && !matches!(det, "auto" | "short") {
        anyhow::bail!(
            "--quote-edge sets the quotes of the short-text path (--method auto and short), and --method {det} would ignore it: it {what}; \
             pass --method auto or short to use it"
        );
    }
    if args.no_passages && det != "auto" {
        anyhow::bail!(
            "--no-passages turns off the auto detector's quotes of long texts, and --method {det} has none: it {what}; drop the flag"
        );
    }
    Ok(())
}

/// Runs `neardup dedup`.
pub fn run(args: Args) -> anyhow::Result<()> {
    check_flags(&args)?;
    if args.memory_budget_mib.is_some() {
        spill::check(&args)?;
    }
    set_threads(args.threads);
    let keep: Keep = args.keep.parse()?;
    if keep == Keep::Longest && args.kept.is_some() && reads_stdin(&args.inputs) {
        anyhow::bail!("--keep longest with --kept reads the input twice, which standard input cannot be; name the input files, or use --keep first");
    }
    // The library builds the detector the flags name; the pipeline builds it twice,
    // identically: one sketches batch N + 1 while the other decides batch N.
    let spec = DetectorSpec {
        method: args.detector.parse()?,
        distance: args.distance(),
        threshold: args.threshold(),
        template_veto: !args.no_template,
        char_ngram: args
            .minhash_char_ngram
            .map_or(DetectorSpec::default().char_ngram, |n| n as usize),
        word_ngram: args
            .minhash_word_ngram
            .map_or(DetectorSpec::default().word_ngram, |n| n as usize),
        scheme: match &args.minhash_scheme {
            Some(s) => s.parse()?,
            None => DetectorSpec::default().scheme,
        },
        bits: match &args.minhash_bits {
            Some(b) => b.parse()?,
            None => DetectorSpec::default().bits,
        },
        quote_edge: args
            .quote_edge
            .unwrap_or(DetectorSpec::default().quote_edge),
        passages: !args.no_passages,
    };
    let fp = args.features.fingerprinter()?;
    if let Some(mib) = args.memory_budget_mib {
        let det = neardup::minhash::MinHashDetector::new(fp, spec.minhash_options())?;
        return spill::run(&args, det, keep, mib);
    }
    let spill_dir = match &args.temp_dir {
        Some(dir) => {
            // Refused before any output is opened.
            tempfile::tempfile_in(dir).map_err(|e| {
                anyhow::anyhow!(
                    "--temp-dir {}: cannot make a spill file there ({e}); name an existing, writable directory",
                    dir.display()
                )
            })?;
            dir.clone()
        }
        None => std::env::temp_dir(),
    };
    spec.build(
        &fp,
        Pipeline {
            args: &args,
            keep,
            spill_dir: &spill_dir,
        },
    )
}

/// The pipeline, run with whatever detector the spec names, its stored short texts spilled to
/// `spill_dir` (in memory when no file can be made there).
struct Pipeline<'a> {
    args: &'a Args,
    keep: Keep,
    spill_dir: &'a std::path::Path,
}

impl WithDetector for Pipeline<'_> {
    type Output = anyhow::Result<()>;
    fn with<D: Detector>(self, make: impl Fn() -> neardup::Result<D>) -> anyhow::Result<()> {
        let spilled = || {
            let mut d = make()?;
            d.spill_texts(self.spill_dir);
            Ok(d)
        };
        run_with(spilled, self.args, self.keep)
    }
}

fn reads_stdin(inputs: &[PathBuf]) -> bool {
    inputs.is_empty() || inputs.iter().any(|p| p.as_os_str() == "-")
}
