//! `neardup fingerprint`: one simhash per document.

use std::io::Write;
use std::path::PathBuf;

use rayon::prelude::*;

use super::common::{set_threads, FeatureArgs};
use crate::input::{BadPolicy, DocKind, DocReader, InputArgs};

/// Arguments of `neardup fingerprint`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  neardup fingerprint page.html other.txt         # one line per file: <16 hex digits>  <file>
  echo 'the cat sat on the mat' | neardup fingerprint   # one line per input line
  neardup fingerprint --format jsonl corpus.jsonl > fps.jsonl
  neardup fingerprint --format jsonl --id-field url --text-field body crawl.jsonl

Output: plain formats print `<hex>` (stdin lines) or `<hex>  <file>` (whole files); jsonl prints
{\"id\": …, \"simhash\": \"<16 hex digits>\"}. The algorithm is specified in docs/fingerprint-spec.md.")]
pub struct FingerprintArgs {
    /// Input files or directories (standard input when none).
    pub inputs: Vec<PathBuf>,
    #[command(flatten)]
    pub input: InputArgs,
    #[command(flatten)]
    pub features: FeatureArgs,
    /// Documents with no letters or digits print `-` (or "simhash": null) instead of stopping.
    #[arg(long)]
    pub skip_empty: bool,
    /// Bad input lines (malformed JSON, invalid UTF-8) are reported on stderr and skipped
    /// instead of stopping.
    #[arg(long)]
    pub skip_bad: bool,
    /// Worker threads (0 = one per core).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
}

const BATCH_DOCS: usize = 2048;
const BATCH_BYTES: usize = 16 << 20;

/// Runs `neardup fingerprint`.
pub fn run(args: FingerprintArgs) -> anyhow::Result<()> {
    set_threads(args.threads);
    let fp = args.features.fingerprinter()?;
    let mut reader = DocReader::open(&args.inputs, &args.input)?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut bad = BadPolicy {
        skip: args.skip_bad,
        count: 0,
    };
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
            let hex = match res {
                Ok(f) => Some(neardup::fingerprint::to_hex(f.simhash)),
                Err(neardup::Error::EmptyDocument { .. }) if args.skip_empty => None,
                Err(e) => anyhow::bail!(
                    "{}: {e} (pass --skip-empty to print `-` for such documents)",
                    doc.origin
                ),
            };
            match doc.kind {
                DocKind::JsonLine => writeln!(
                    out,
                    "{}",
                    serde_json::json!({ "id": doc.id, "simhash": hex })
                )?,
                DocKind::Line => writeln!(out, "{}", hex.as_deref().unwrap_or("-"))?,
                DocKind::File => {
                    writeln!(out, "{}  {}", hex.as_deref().unwrap_or("-"), doc.origin)?
                }
            }
        }
        (batch, _) = next?;
    }
    out.flush()?;
    if bad.count > 0 {
        eprintln!("{} bad input line(s) skipped", bad.count);
    }
    Ok(())
}
