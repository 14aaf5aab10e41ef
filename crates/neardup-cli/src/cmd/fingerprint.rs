//! `neardup fingerprint`: one simhash per document.

use std::io::Write;
use std::path::PathBuf;

use neardup::features::Method;
use rayon::prelude::*;

use super::common::{legacy_method, parse_method, set_threads, thousands, FeatureArgs};
use crate::input::{BadPolicy, DocKind, DocReader, InputArgs};

/// What to do with a document that is empty after normalisation (no letters or digits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Empty {
    /// Print nothing for it; count it in the summary on standard error.
    Skip,
    /// Print `-` (or "simhash": null) in its place, keeping output lines aligned with input
    /// lines; count it in the summary.
    Mark,
    /// Stop with an error naming it.
    Fail,
}

/// Arguments of `neardup fingerprint`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  neardup fingerprint page.html other.txt         # one line per file: <16 hex digits>  <file>
  echo 'the cat sat on the mat' | neardup fingerprint   # one line per input line
  neardup fingerprint --format jsonl corpus.jsonl.gz > fps.jsonl
  neardup fingerprint --format jsonl --id-field url --text-field body crawl.jsonl
  neardup fingerprint --empty mark --format lines titles.txt   # `-` for empty lines, aligned

Output: plain formats print `<hex>` (lines) or `<hex>  <file>` (whole files); jsonl prints
{\"id\": …, \"simhash\": \"<16 hex digits>\"}. Documents with nothing left after normalisation have no
fingerprint: by default they are left out and counted on standard error (--empty). The run
fails when nothing at all was fingerprinted. The algorithm is specified in
docs/fingerprint-spec.md.")]
pub struct FingerprintArgs {
    /// Input files or directories (standard input when none).
    pub inputs: Vec<PathBuf>,
    #[command(flatten)]
    pub input: InputArgs,
    #[command(flatten)]
    pub features: FeatureArgs,
    /// Old spelling of --features (deprecated).
    #[arg(long = "method", hide = true, value_parser = parse_method)]
    pub legacy_method: Option<Method>,
    /// Documents empty after normalisation: skip (leave out, count), mark (print `-` or
    /// "simhash": null, count), fail (stop).
    #[arg(long, value_enum, default_value = "skip")]
    pub empty: Empty,
    /// Old spelling of --empty mark (deprecated).
    #[arg(long, hide = true)]
    pub skip_empty: bool,
    /// Bad input lines (malformed JSON, invalid UTF-8) are reported on stderr and skipped
    /// instead of stopping (a run where every line is bad still fails).
    #[arg(long)]
    pub skip_bad: bool,
    /// Worker threads (0 = one per core).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// No summary on standard error (errors and warnings still print).
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

const BATCH_DOCS: usize = 2048;
const BATCH_BYTES: usize = 16 << 20;

/// Runs `neardup fingerprint`.
pub fn run(mut args: FingerprintArgs) -> anyhow::Result<()> {
    legacy_method(&mut args.features, args.legacy_method)?;
    if args.skip_empty {
        eprintln!("warning: --skip-empty is deprecated: use --empty mark (print `-`), or nothing (the default leaves such documents out and counts them)");
        args.empty = Empty::Mark;
    }
    set_threads(args.threads);
    let fp = args.features.fingerprinter()?;
    let mut reader = DocReader::open(&args.inputs, &args.input)?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut bad = BadPolicy::new(args.skip_bad);
    let (mut documents, mut empty) = (0u64, 0u64);
    let (mut batch, _) = reader.next_batch(BATCH_DOCS, BATCH_BYTES, &mut bad)?;
    while !batch.is_empty() {
        // Fingerprint this batch on the pool while the next one is read.
        let (results, next) = rayon::join(
            || {
                batch
                    .par_iter()
                    .map(|d| fp.fingerprint(&d.text))
                    .collect::<Vec<_>>()
            },
            || reader.next_batch(BATCH_DOCS, BATCH_BYTES, &mut bad),
        );
        for (doc, res) in batch.iter().zip(results) {
            documents += 1;
            let hex = match res {
                Ok(f) => Some(neardup::fingerprint::to_hex(f.simhash)),
                Err(neardup::Error::EmptyDocument { .. }) if args.empty != Empty::Fail => {
                    empty += 1;
                    if args.empty == Empty::Skip {
                        continue;
                    }
                    None
                }
                Err(e) => anyhow::bail!(
                    "{}: {e} (--empty skip leaves such documents out, --empty mark prints `-`)",
                    doc.origin()
                ),
            };
            match doc.kind {
                DocKind::JsonLine | DocKind::Row => writeln!(
                    out,
                    "{}",
                    serde_json::json!({ "id": doc.id, "simhash": hex })
                )?,
                DocKind::Line => writeln!(out, "{}", hex.as_deref().unwrap_or("-"))?,
                DocKind::File => writeln!(out, "{}  {}", hex.as_deref().unwrap_or("-"), doc.file)?,
            }
        }
        (batch, _) = next?;
    }
    out.flush()?;
    if documents == 0 {
        return Err(bad.nothing_read("fingerprint"));
    }
    if empty == documents {
        anyhow::bail!(
            "all {} documents were empty after normalisation (no letters or digits); nothing was fingerprinted \
             — is the text in another field (--text-field), or all markup (--html)?",
            thousands(documents)
        );
    }
    if !args.quiet {
        if empty > 0 {
            eprintln!(
                "{} of {} documents were empty after normalisation and have no fingerprint{}",
                thousands(empty),
                thousands(documents),
                if args.empty == Empty::Mark {
                    " (printed as `-`)"
                } else {
                    ""
                }
            );
        }
        if bad.count > 0 {
            eprintln!("{} bad input line(s) skipped", thousands(bad.count));
        }
    }
    Ok(())
}
