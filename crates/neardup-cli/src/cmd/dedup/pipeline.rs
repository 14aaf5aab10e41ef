//! The batch pipeline of `neardup dedup`: read, sketch, decide, then write every output.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use neardup::dedup::{sketch_batch, Deduper, Keep};
use neardup::detect::Detector;

use super::write::{KeptWriter, Record, Records};
use super::{reads_stdin, report, write, Args};
use crate::input::{BadPolicy, DocReader, InputDoc};
use crate::output::{self, Wanted};

use neardup::dedup::{BATCH_BYTES, BATCH_DOCS};

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
fn sketch_docs<D: Detector>(sketcher: &D, batch: &[InputDoc]) -> Sketched<D> {
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
///
/// Every output is checked against the inputs and opened before the first document is read.
pub fn run_with<D: Detector>(
    make: impl Fn() -> anyhow::Result<D>,
    args: &Args,
    keep: Keep,
) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut reader = DocReader::open(&args.inputs, &args.input)?.keep_raw(args.kept.is_some());
    let stdout = Path::new("-");
    let wanted = [
        Some(Wanted {
            flag: "--output",
            path: args.output.as_deref().unwrap_or(stdout),
        }),
        args.kept.as_deref().map(|path| Wanted {
            flag: "--kept",
            path,
        }),
        args.report.as_deref().map(|path| Wanted {
            flag: "--report",
            path,
        }),
        args.removed.as_deref().map(|path| Wanted {
            flag: "--removed",
            path,
        }),
    ];
    output::check(
        &wanted.iter().flatten().copied().collect::<Vec<_>>(),
        reader.files(),
        reads_stdin(&args.inputs),
    )?;
    let mut sinks = output::open_all(&wanted)?.into_iter();
    let mut out = sinks.next().flatten().expect("--output is always opened");
    let mut kept_writer = sinks
        .next()
        .flatten()
        .map(|w| KeptWriter::new(w, &args.input));
    let report_sink = sinks.next().flatten();
    let removed_sink = sinks.next().flatten();

    let pb = progress(reader.total_bytes, args.quiet);
    let mut bad = BadPolicy::new(args.skip_bad);
    let sketcher = make()?;
    let mut dd = Deduper::with_linkage(make()?, args.linkage());
    let mut records = Records::default();
    let mut total_bytes = 0u64;
    let (mut batch, mut bytes) = reader.next_batch(BATCH_DOCS, BATCH_BYTES, &mut bad)?;
    let (mut sketched, mut next) = rayon::join(
        || sketch_docs(&sketcher, &batch),
        || reader.next_batch(BATCH_DOCS, BATCH_BYTES, &mut bad),
    );
    while !batch.is_empty() {
        let mut decide =
            |batch: &[InputDoc], (sketches, lengths): Sketched<D>| -> anyhow::Result<()> {
                let start = dd.len();
                let outcomes = dd.decide_batch(sketches, &lengths).map_err(|e| {
                    let origin = batch[e.doc as usize - start].origin();
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
        for d in batch {
            records.push(d);
        }
        (batch, bytes, sketched, next) = (next_batch, next_bytes, next_sketched, after);
    }
    pb.finish_and_clear();
    if dd.is_empty() {
        return Err(bad.nothing_read("deduplicate"));
    }
    let clustering = dd.finish(keep);

    // Decisions, in input order; then the removed documents.
    let bridges = clustering.shared_clusters();
    for (i, o) in clustering.outcomes.iter().enumerate() {
        write::decision(&mut out, &records, i, o, bridges[i], args.provenance)?;
    }
    out.flush()?;
    drop(out);
    if let Some(mut w) = removed_sink {
        for (i, o) in clustering.outcomes.iter().enumerate() {
            if o.duplicate_of.is_some() {
                write::removed(&mut w, &records, i, o, keep, args.provenance)?;
            }
        }
        w.flush()?;
    }

    if keep == Keep::Longest {
        if let Some(w) = kept_writer.as_mut() {
            let reader = DocReader::open(&args.inputs, &args.input)?.keep_raw(true);
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
    let bridged = bridges.iter().filter(|b| b.is_some()).count();
    let summary = report::full(
        &clustering,
        &records,
        args,
        bad.count,
        bridged,
        total_bytes,
        seconds,
    );
    if let Some(mut w) = report_sink {
        w.write_all((serde_json::to_string_pretty(&summary)? + "\n").as_bytes())?;
        w.flush()?;
    }
    if !args.quiet {
        eprint!("{}", report::human(&summary));
    }
    Ok(())
}

impl Records {
    /// Keeps what the outputs need of `d` (id, file, line).
    fn push(&mut self, d: InputDoc) {
        let file = match self.files.last() {
            Some(f) if Arc::ptr_eq(f, &d.file) => self.files.len() - 1,
            _ => {
                self.files.push(d.file.clone());
                self.files.len() - 1
            }
        };
        self.list.push(Record {
            id: d.id,
            file: file as u32,
            line: d.line,
        });
    }
}
