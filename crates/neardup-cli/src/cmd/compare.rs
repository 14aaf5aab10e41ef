//! `neardup compare A B`: two fingerprints and their Hamming distance, optionally explained.

use std::collections::HashMap;
use std::path::Path;

use std::io::Write;

use neardup::features::Method;

use super::common::{legacy_method, parse_method, FeatureArgs};

/// Arguments of `neardup compare`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  neardup compare a.html b.html
  neardup compare --text 'the cat sat on the mat' 'the cat sat on a mat' --explain
  neardup compare --features chars --char-ngram 3 a.txt b.txt")]
pub struct CompareArgs {
    /// First document: a file (or literal text with --text).
    pub a: String,
    /// Second document: a file (or literal text with --text).
    pub b: String,
    /// Treat A and B as the texts themselves rather than file names.
    #[arg(long)]
    pub text: bool,
    /// Show the normalised text's top features of each side and which ones differ.
    #[arg(long)]
    pub explain: bool,
    /// Features to list with --explain.
    #[arg(long, default_value_t = 20)]
    pub top: usize,
    /// Distance up to which the pair is called a near-duplicate in the verdict line, 0 to 63.
    #[arg(long, short = 'k', default_value_t = 3, value_parser = clap::value_parser!(u32).range(0..=63))]
    pub distance: u32,
    #[command(flatten)]
    pub features: FeatureArgs,
    /// Old spelling of --features (deprecated).
    #[arg(long = "method", hide = true, value_parser = parse_method)]
    pub legacy_method: Option<Method>,
}

fn load(arg: &str, literal: bool) -> anyhow::Result<String> {
    if literal {
        return Ok(arg.to_string());
    }
    let bytes = std::fs::read(Path::new(arg)).map_err(|e| {
        anyhow::anyhow!("cannot read {arg}: {e} (to compare literal text, pass --text)")
    })?;
    String::from_utf8(bytes)
        .map_err(|e| anyhow::anyhow!("{arg}: invalid UTF-8 at byte {}; neardup reads UTF-8 — convert it first (e.g. iconv -f GB18030 -t UTF-8)", e.utf8_error().valid_up_to()))
}

/// Runs `neardup compare`.
pub fn run(mut args: CompareArgs) -> anyhow::Result<()> {
    legacy_method(&mut args.features, args.legacy_method)?;
    let fp = args.features.fingerprinter()?;
    let mut out = std::io::stdout().lock();
    let ta = load(&args.a, args.text)?;
    let tb = load(&args.b, args.text)?;
    let ea = fp
        .explain(&ta)
        .map_err(|e| anyhow::anyhow!("A ({}): {e}", label(&args.a)))?;
    let eb = fp
        .explain(&tb)
        .map_err(|e| anyhow::anyhow!("B ({}): {e}", label(&args.b)))?;
    let d = neardup::hamming(ea.simhash, eb.simhash);
    writeln!(
        out,
        "A  {:016x}  {} features ({})  {}",
        ea.simhash,
        ea.features.len(),
        ea.method,
        label(&args.a)
    )?;
    writeln!(
        out,
        "B  {:016x}  {} features ({})  {}",
        eb.simhash,
        eb.features.len(),
        eb.method,
        label(&args.b)
    )?;
    let verdict = if d <= args.distance {
        "near-duplicates"
    } else {
        "different"
    };
    writeln!(out, "distance {d}  ({verdict} at k = {})", args.distance)?;
    if args.explain {
        let wa: HashMap<&str, u64> = ea
            .features
            .iter()
            .map(|f| (f.text.as_str(), f.weight))
            .collect();
        let wb: HashMap<&str, u64> = eb
            .features
            .iter()
            .map(|f| (f.text.as_str(), f.weight))
            .collect();
        let only_a = ea
            .features
            .iter()
            .filter(|f| !wb.contains_key(f.text.as_str()))
            .count();
        let only_b = eb
            .features
            .iter()
            .filter(|f| !wa.contains_key(f.text.as_str()))
            .count();
        writeln!(out, "differing bits {:016x}", ea.simhash ^ eb.simhash)?;
        writeln!(
            out,
            "features only in A: {only_a}, only in B: {only_b}, shared: {}",
            ea.features.len() - only_a
        )?;
        for (name, e, other) in [("A", &ea, &wb), ("B", &eb, &wa)] {
            writeln!(out, "\ntop features of {name} (weight; `*` = not in the other side, `~` = other weight):")?;
            for f in e.features.iter().take(args.top) {
                let mark = match other.get(f.text.as_str()) {
                    None => "*".to_string(),
                    Some(w) if *w != f.weight => format!("~{w}"),
                    Some(_) => String::new(),
                };
                writeln!(
                    out,
                    "  {:>10}  {:016x}  {:?} {mark}",
                    f.weight, f.hash, f.text
                )?;
            }
        }
    }
    Ok(())
}

fn label(s: &str) -> String {
    let mut t: String = s.chars().take(40).collect();
    if t.len() < s.len() {
        t.push('…');
    }
    t
}
