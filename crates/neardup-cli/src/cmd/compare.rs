//! `neardup compare A B`: whether two documents are near-duplicates under the detector that
//! `dedup` and `serve` use (default `auto`: which stage matched and how similar they are), or
//! under simhash (`--method simhash`: the two fingerprints and their Hamming distance);
//! `--explain` adds the simhash features of each side.

use std::collections::HashMap;
use std::path::Path;

use std::io::Write;

use super::common::{legacy_method, parse_method, parse_threshold, FeatureArgs};

/// Arguments of `neardup compare`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  neardup compare a.html b.html
  neardup compare --text 'the cat sat on the mat' 'the cat sat on a mat' --explain
  neardup compare --method simhash --features chars --char-ngram 3 a.txt b.txt

With --method auto (the default, as dedup and serve) the first line is the verdict and the stage
that decides it: exact (identical after normalisation), short (texts of at most 140 letters:
edit-distance similarity ≥ 0.8, digit runs equal) or minhash (Jaccard estimate ≥ --threshold);
the lines after it give each stage's measure on the pair.")]
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
    /// The detector: auto (as dedup and serve) or simhash. (jieba, chars and words are the
    /// deprecated spelling of --features.)
    #[arg(long = "method", id = "detector", default_value = "auto", value_parser = ["auto", "simhash", "jieba", "chars", "words"])]
    pub detector: String,
    /// simhash: distance up to which the pair is a near-duplicate, 0 to 63 [default: 3].
    #[arg(long, short = 'k', value_parser = clap::value_parser!(u32).range(0..=63))]
    pub distance: Option<u32>,
    /// auto: the MinHash Jaccard threshold of long texts, strictly between 0 and 1
    /// [default: 0.6, as dedup --no-template-veto: a pair has no corpus for the veto].
    #[arg(long, value_parser = parse_threshold)]
    pub threshold: Option<f64>,
    #[command(flatten)]
    pub features: FeatureArgs,
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
    if !matches!(args.detector.as_str(), "auto" | "simhash") {
        let m = parse_method(&args.detector).map_err(anyhow::Error::msg)?;
        legacy_method(&mut args.features, Some(m))?;
        args.detector = "simhash".into();
    }
    let simhash = args.detector == "simhash";
    if simhash && args.threshold.is_some() {
        anyhow::bail!("--threshold is the MinHash threshold of --method auto; --method simhash decides by --distance");
    }
    if !simhash && args.distance.is_some() {
        anyhow::bail!("--distance is the Hamming distance of --method simhash; --method auto decides long texts by MinHash similarity (--threshold) — pass --method simhash to use --distance");
    }
    let fp = args.features.fingerprinter()?;
    let mut out = std::io::stdout().lock();
    let ta = load(&args.a, args.text)?;
    let tb = load(&args.b, args.text)?;
    if !simhash {
        let mut opts = neardup::policy::PolicyOptions::default();
        if let Some(t) = args.threshold {
            opts.minhash.lsh.threshold = t;
        }
        let e =
            neardup::policy::explain(&fp, &opts, &ta, &tb).map_err(|e| anyhow::anyhow!("{e}"))?;
        let (ts, tm) = e.thresholds;
        match &e.verdict {
            Some(v) => {
                let how = match (v.stage, v.similarity) {
                    (neardup::detect::Stage::Exact, _) => {
                        "identical after normalisation".to_string()
                    }
                    (neardup::detect::Stage::Short, Some(s)) => {
                        format!("edit-distance similarity {s:.3} ≥ {ts}")
                    }
                    (neardup::detect::Stage::Minhash, Some(s)) => {
                        format!("Jaccard estimate {s:.3} ≥ {tm}")
                    }
                    (neardup::detect::Stage::Containment, Some(s)) => match e.short_quote {
                        Some((_, k)) => format!(
                            "a quote: the shorter text lies verbatim inside the other once {k} \
                             characters at one edge are left out, share {s:.3}"
                        ),
                        None => format!("the shorter text lies inside the other, alignment {s:.3}"),
                    },
                    (neardup::detect::Stage::Passage, Some(s)) => format!(
                        "a quote: {:.0} % of B's letters are in sentences of A",
                        s * 100.0
                    ),
                    (st, _) => st.to_string(),
                };
                writeln!(out, "near-duplicates  (stage {}: {how})", v.stage)?;
            }
            None => writeln!(out, "different  (no stage matched)")?,
        }
        writeln!(out, "A  {} path  {}", e.paths[0], label(&args.a))?;
        writeln!(out, "B  {} path  {}", e.paths[1], label(&args.b))?;
        writeln!(
            out,
            "  exact:   {}",
            if e.exact {
                "identical after normalisation"
            } else {
                "different"
            }
        )?;
        match (e.short_similarity, e.same_numbers) {
            (Some(s), Some(n)) => writeln!(
                out,
                "  short:   edit-distance similarity {s:.3} (threshold {ts}){}",
                if n {
                    ""
                } else {
                    "; digit runs differ, so never a match"
                }
            )?,
            _ => writeln!(
                out,
                "  short:   — (both texts must be short, of one script)"
            )?,
        }
        if let Some(c) = e.short_containment {
            writeln!(
                out,
                "  contain: the shorter text aligns inside the other at {c:.3} (threshold {})",
                opts.short.containment.as_ref().map_or(0.0, |c| c.threshold)
            )?;
        }
        if let Some((share, k)) = e.short_quote {
            writeln!(
                out,
                "  quote:   without {k} characters at one edge (an attribution) it occurs verbatim: share {share:.3} (at most {} of it left out)",
                opts.short.containment.as_ref().map_or(0.0, |c| c.edge)
            )?;
        }
        if let Some(share) = e.passage_share {
            writeln!(
                out,
                "  passage: {:.0} % of B's letters are in sentences of A (a quote from {:.0} %)",
                share * 100.0,
                opts.passages.as_ref().map_or(0.0, |p| p.min_share * 100.0)
            )?;
        }
        match e.minhash_similarity {
            Some(s) if e.minhash_other_kind => writeln!(
                out,
                "  minhash: Jaccard estimate {s:.3} (threshold {tm}), B cut into the other kind \
                 of shingles: A and B lie on either side of the script cut (30 % Han)"
            )?,
            Some(s) => writeln!(out, "  minhash: Jaccard estimate {s:.3} (threshold {tm})")?,
            None => writeln!(out, "  minhash: — (both texts must be long)")?,
        }
        if !args.explain {
            return Ok(());
        }
        writeln!(out)?;
    }
    let k = args.distance.unwrap_or(3);
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
    let verdict = if d <= k {
        "near-duplicates"
    } else {
        "different"
    };
    writeln!(out, "distance {d}  ({verdict} at k = {k})")?;
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
