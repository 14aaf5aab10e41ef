//! `neardup pairs` and `neardup search`: exact Hamming search over fingerprint files.
//!
//! Both read fingerprint files with `neardup_index::fpfile` (raw little-endian u64, or hex text
//! one per line, detected by extension or content), write TSV results to stdout or `--output`,
//! and print a one-line JSON summary to stderr.
use anyhow::{bail, Context, Result};
use neardup_index::{
    all_pairs_with, fpfile, plan_index, IndexChoice, Layout, PlannedIndex, LEAN_MAX_DISTANCE,
};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

const FILE_HELP: &str = "Fingerprint files are either raw little-endian u64s (8 bytes each) or text with one hex \
fingerprint per line (optional 0x prefix, blank lines skipped). The format is chosen by extension \
(.txt .hex .tsv .csv = hex; .bin .raw .u64 .fp .fps = raw) or else by content. Positions are 0-based.";

/// Arguments of `neardup pairs`.
#[derive(Debug, clap::Args)]
#[command(after_help = format!("{FILE_HELP}

Output: one line per pair, `i<TAB>j<TAB>distance` with i < j, sorted by i then j.
Summary (stderr, JSON): n, queries (= n), k, layout, tables, pairs, build_seconds (0: the self-join
has no separate build), query_seconds, queries_per_second, peak_memory_bytes.

Examples:
  neardup pairs corpus.fps                      # pairs within distance 3, to stdout
  neardup pairs corpus.hex --distance 5 --output pairs.tsv
  neardup pairs corpus.fps --layout m5x2        # force 5 blocks, 2-block keys (10 tables)"))]
pub struct PairsArgs {
    /// Fingerprint file (raw u64 little-endian, or hex text one per line).
    pub fps: PathBuf,
    /// Largest Hamming distance reported (inclusive), 0 to 63.
    #[arg(short = 'k', long = "distance", default_value_t = 3)]
    pub distance: u32,
    /// Write the TSV to this file instead of stdout (`-`: stdout).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// No summary on standard error (errors still print).
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Block layout: `auto` (planner), `mM` (M blocks, 1-block keys, e.g. m4) or `mMxC` (M blocks,
    /// C-block keys, e.g. m5x2); answers distances up to M - C.
    #[arg(long, default_value = "auto")]
    pub layout: String,
}

/// Arguments of `neardup search`.
#[derive(Debug, clap::Args)]
#[command(after_help = format!("{FILE_HELP}

Output: one line per match, `query_position<TAB>stored_position<TAB>distance`, sorted by query
position then stored position.
Summary (stderr, JSON): n, queries, k, layout, tables, plan (the planner's reason, with --layout
auto), matches, build_seconds, query_seconds, queries_per_second, index_bytes, peak_memory_bytes.

Examples:
  neardup search corpus.fps --queries new.fps                 # distance <= 3, to stdout
  neardup search corpus.hex --queries q.txt -k 2 -o hits.tsv
  neardup search corpus.fps --queries q.fps --memory-budget-mib 8192   # allow a faster, larger layout
  neardup search corpus.fps --queries q.fps --layout lean              # ~15.5 bytes a fingerprint"))]
pub struct SearchArgs {
    /// Stored fingerprint file (raw u64 little-endian, or hex text one per line).
    pub fps: PathBuf,
    /// Query fingerprint file (same formats).
    #[arg(long)]
    pub queries: PathBuf,
    /// Largest Hamming distance reported (inclusive), 0 to 63.
    #[arg(short = 'k', long = "distance", default_value_t = 3)]
    pub distance: u32,
    /// Write the TSV to this file instead of stdout (`-`: stdout).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// No summary on standard error (errors still print).
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Index layout: `auto` (planner, within --memory-budget-mib), `mM` or `mMxC` block tables
    /// (e.g. m4, m5x2), or `lean` (two tables and one-bit query flips: ~15.5 bytes per
    /// fingerprint, distances up to 3).
    #[arg(long, default_value = "auto")]
    pub layout: String,
    /// Memory budget for the index when --layout is auto, in MiB (below what the block tables
    /// need, the planner picks the lean index).
    #[arg(long, default_value_t = 6144)]
    pub memory_budget_mib: u64,
}

/// Peak resident memory of this process (VmHWM), if the platform reports it.
fn peak_memory_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    Some(line.split_whitespace().nth(1)?.parse::<u64>().ok()? * 1024)
}

fn explicit_layout(name: &str, k: u32) -> Result<Layout> {
    let layout = Layout::from_name(name).with_context(|| format!("--layout {name}"))?;
    if k > layout.max_distance() {
        bail!(
            "--distance {k} is out of range for --layout {name}, which answers at most {}; \
             use --layout auto, or a layout mMxC with M - C >= {k} (e.g. m{})",
            layout.max_distance(),
            k + 1
        );
    }
    Ok(layout)
}

fn check_k(k: u32) -> Result<()> {
    if k > 63 {
        bail!("--distance {k} is out of range: use 0 to 63 (distances of 64-bit fingerprints)");
    }
    Ok(())
}

/// Opens `--output` (standard output for none or `-`), refused when it is one of `inputs`.
fn open_output(path: Option<&Path>, inputs: &[PathBuf]) -> Result<crate::output::Sink> {
    crate::output::open_one("--output", path, inputs)
}

fn read_fps(path: &Path) -> Result<Vec<u64>> {
    Ok(fpfile::read(path)?)
}

/// Runs `neardup pairs`.
pub fn run_pairs(args: PairsArgs) -> Result<()> {
    let k = args.distance;
    check_k(k)?;
    let mut out = open_output(args.output.as_deref(), std::slice::from_ref(&args.fps))?;
    let fps = read_fps(&args.fps)?;
    let layout = if args.layout == "auto" {
        Layout::plan_self_join(fps.len() as u64, k)?
    } else {
        explicit_layout(&args.layout, k)?
    };
    let t = Instant::now();
    let pairs = all_pairs_with(&fps, &layout, k)?;
    let secs = t.elapsed().as_secs_f64();
    for (i, j, d) in &pairs {
        writeln!(out, "{i}\t{j}\t{d}")?;
    }
    out.finish().context("writing output")?;
    let summary = serde_json::json!({
        "command": "pairs",
        "n": fps.len(),
        "queries": fps.len(),
        "k": k,
        "layout": layout.name(),
        "tables": layout.tables(),
        "pairs": pairs.len(),
        "build_seconds": 0.0,
        "query_seconds": secs,
        "queries_per_second": if secs > 0.0 { fps.len() as f64 / secs } else { 0.0 },
        "peak_memory_bytes": peak_memory_bytes(),
    });
    if !args.quiet {
        eprintln!("{summary}");
    }
    Ok(())
}

/// Runs `neardup search`.
pub fn run_search(args: SearchArgs) -> Result<()> {
    let k = args.distance;
    check_k(k)?;
    let mut out = open_output(
        args.output.as_deref(),
        &[args.fps.clone(), args.queries.clone()],
    )?;
    let fps = read_fps(&args.fps)?;
    let queries = read_fps(&args.queries)?;
    let (choice, reason) = if args.layout == "auto" {
        let plan = plan_index(
            fps.len() as u64,
            k,
            args.memory_budget_mib.saturating_mul(1 << 20),
        )?;
        (plan.choice, Some(plan.reason))
    } else if args.layout == "lean" {
        if k > LEAN_MAX_DISTANCE {
            bail!(
                "--distance {k} is out of range for --layout lean, which answers at most \
                 {LEAN_MAX_DISTANCE}; use --layout auto, or a layout mMxC with M - C >= {k} (e.g. m{})",
                k + 1
            );
        }
        (IndexChoice::Lean, None)
    } else {
        (IndexChoice::Tables(explicit_layout(&args.layout, k)?), None)
    };
    let t = Instant::now();
    let index = PlannedIndex::from_fingerprints(&choice, &fps)?;
    let build = t.elapsed().as_secs_f64();
    let mut query_secs = 0.0;
    let mut matches = 0usize;
    // Large chunks: the lean index searches a batch in sorted order, faster the more queries
    // it holds (1.2 µs a query a core at 1 M queries, 1.0 at 8 M, 50 M stored).
    const CHUNK: usize = 1 << 22;
    for (c, chunk) in queries.chunks(CHUNK).enumerate() {
        let t = Instant::now();
        let res = index.search_batch(chunk, k)?;
        query_secs += t.elapsed().as_secs_f64();
        for (qi, ms) in res.iter().enumerate() {
            let qpos = c * CHUNK + qi;
            for m in ms {
                writeln!(out, "{qpos}\t{}\t{}", m.handle, m.distance)?;
            }
            matches += ms.len();
        }
    }
    out.finish().context("writing output")?;
    let summary = serde_json::json!({
        "command": "search",
        "n": fps.len(),
        "queries": queries.len(),
        "k": k,
        "layout": choice.name(),
        "tables": choice.tables(),
        "plan": reason,
        "matches": matches,
        "build_seconds": build,
        "query_seconds": query_secs,
        "queries_per_second": if query_secs > 0.0 { queries.len() as f64 / query_secs } else { 0.0 },
        "index_bytes": index.heap_bytes(),
        "peak_memory_bytes": peak_memory_bytes(),
    });
    if !args.quiet {
        eprintln!("{summary}");
    }
    Ok(())
}
