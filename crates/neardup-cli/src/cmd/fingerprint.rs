//! `neardup fingerprint`: one simhash per document.

use std::io::Write;
use std::path::PathBuf;

use rayon::prelude::*;

use super::common::{set_threads, FeatureArgs};
use crate::input::{DocKind, DocReader, InputArgs};

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
    let reader = DocReader::open(&args.inputs, &args.input)?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut reader = reader.peekable();
    let mut bad = 0usize;
    let skip_bad = args.skip_bad;
    let mut read_batch = |reader: &mut dyn Iterator<Item = crate::input::Item>| -> anyhow::Result<Vec<crate::input::Doc>> {
        let mut batch = Vec::new();
        let mut bytes = 0;
        while batch.len() < BATCH_DOCS && bytes < BATCH_BYTES {
            match reader.next() {
                Some(Ok(doc)) => {
                    bytes += doc.bytes;
                    batch.push(doc);
                }
                Some(Err(e)) if skip_bad => {
                    eprintln!("warning: skipped {e}");
                    bad += 1;
                }
                Some(Err(e)) => anyhow::bail!("{e} (pass --skip-bad to skip bad lines)"),
                None => break,
            }
        }
        Ok(batch)
    };
    let mut batch = read_batch(&mut reader)?;
    while !batch.is_empty() {
        // Fingerprint this batch on the pool while the next one is read.
        let (results, next) = rayon::join(
            || {
                batch
                    .par_iter()
                    .map(|d| fp.fingerprint(&d.text))
                    .collect::<Vec<_>>()
            },
            || read_batch(&mut reader),
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
        batch = next?;
    }
    out.flush()?;
    if bad > 0 {
        eprintln!("{bad} bad input line(s) skipped");
    }
    Ok(())
}
