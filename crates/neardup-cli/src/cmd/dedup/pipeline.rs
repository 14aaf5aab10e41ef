//! `neardup dedup` over its inputs: the library's batch pipeline with a progress bar, then
//! every output.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use neardup::dedup::{run_pipelined, Assignment, Keep, BATCH_BYTES, BATCH_DOCS};
use neardup::detect::Detector;

use super::ids::RepeatedIds;
use super::write::{KeptWriter, Record, Records};
use super::{reads_stdin, write, Args};
use crate::input::{BadPolicy, DocReader, InputDoc};
use crate::output::{self, Sink, Wanted};

/// Every output of a run, checked against the inputs and opened before anything is read.
pub(super) struct Outputs {
    /// The decisions (`--output`, standard output by default).
    pub out: Sink,
    /// `--kept`.
    pub kept_writer: Option<KeptWriter>,
    /// `--report`.
    pub report: Option<Sink>,
    /// `--removed`.
    pub removed: Option<Sink>,
}

impl Outputs {
    /// Refuses an output that is one of `reader`'s inputs, then opens them all.
    pub(super) fn open(args: &Args, reader: &DocReader) -> anyhow::Result<Outputs> {
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
        Ok(Outputs {
            out: sinks.next().flatten().expect("--output is always opened"),
            kept_writer: sinks
                .next()
                .flatten()
                .map(|w| KeptWriter::new(w, &args.input)),
            report: sinks.next().flatten(),
            removed: sinks.next().flatten(),
        })
    }
}

/// Writes the kept documents of a second reading of the inputs: document `i` is written when
/// `kept(i)` (`--keep longest`, bounded-memory runs).
pub(super) fn write_kept_again(
    args: &Args,
    w: &mut KeptWriter,
    mut kept: impl FnMut(usize) -> anyhow::Result<bool>,
) -> anyhow::Result<()> {
    let reader = DocReader::open(&args.inputs, &args.input)?.keep_raw(true);
    let mut i = 0usize;
    for item in reader {
        let Ok(doc) = item else { continue };
        if kept(i)? {
            w.write(&doc)?;
        }
        i += 1;
    }
    Ok(())
}

pub(super) fn progress(total: Option<u64>, quiet: bool) -> indicatif::ProgressBar {
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

/// Reads batch N + 2 and sketches batch N + 1 while batch N is decided — the library's
/// [`run_pipelined`], so batch boundaries, observations and decisions are those of a sequential
/// run and the output never depends on `--threads` — then writes every output.
///
/// Every output is checked against the inputs and opened before the first document is read.
pub fn run_with<D: Detector>(
    make: impl Fn() -> anyhow::Result<D>,
    args: &Args,
    keep: Keep,
) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut reader = DocReader::open(&args.inputs, &args.input)?.keep_raw(args.kept.is_some());
    let Outputs {
        out,
        mut kept_writer,
        report: report_sink,
        removed: removed_sink,
    } = Outputs::open(args, &reader)?;

    let pb = progress(reader.total_bytes, args.quiet);
    let mut bad = BadPolicy::new(args.skip_bad);
    let mut records = Records::default();
    let mut ids = RepeatedIds::default();
    let mut total_bytes = 0u64;
    let next_batch = || {
        let (batch, _bytes) = reader.next_batch(BATCH_DOCS, BATCH_BYTES, &mut bad)?;
        Ok(batch)
    };
    let on_decided = |batch: Vec<InputDoc>, decided: &[Assignment]| -> anyhow::Result<()> {
        if let (Some(w), Keep::First) = (kept_writer.as_mut(), keep) {
            for (doc, o) in batch.iter().zip(decided) {
                if o.duplicate_of.is_none() {
                    w.write(doc)?;
                }
            }
        }
        let bytes: u64 = batch.iter().map(|d| d.bytes as u64).sum();
        total_bytes += bytes;
        for d in batch {
            ids.see(&d);
            records.push(d);
        }
        let n = records.list.len();
        pb.inc(bytes);
        pb.set_message(format!(
            "{n} docs, {:.0} docs/s",
            n as f64 / started.elapsed().as_secs_f64().max(1e-9)
        ));
        Ok(())
    };
    let dd = run_pipelined(make, args.linkage(), next_batch, on_decided).map_err(|e| {
        e.into_error(|failure, doc| anyhow::anyhow!("{}: {}", doc.origin(), failure.source))
    })?;
    pb.finish_and_clear();
    if dd.is_empty() {
        return Err(bad.nothing_read("deduplicate"));
    }
    let clustering = dd.finish(keep);

    // Decisions, in input order; then the removed documents.
    write::decisions_and_removed(
        out,
        removed_sink,
        &records,
        clustering.outcomes.len(),
        keep,
        args.provenance,
        || clustering.outcomes.iter().map(|o| Ok(*o)),
    )?;

    if keep == Keep::Longest {
        if let Some(w) = kept_writer.as_mut() {
            write_kept_again(args, w, |i| {
                Ok(clustering
                    .outcomes
                    .get(i)
                    .is_some_and(|o| o.duplicate_of.is_none()))
            })?;
        }
    }
    if let Some(w) = kept_writer {
        w.finish()?;
    }

    let facts = args.run_facts(bad.count, total_bytes, started);
    let summary = clustering.summary(args.top, facts, |d| records.list[d as usize].id.clone());
    super::write_summary(args, &summary, report_sink)?;
    if let Some(w) = ids.warning(args.provenance) {
        eprintln!("{w}");
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
