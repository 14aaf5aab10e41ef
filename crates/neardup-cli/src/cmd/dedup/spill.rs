//! `neardup dedup --memory-budget-mib`: the library's bounded-memory dedup
//! ([`neardup::dedup::spill`]) with the command's inputs, progress and outputs. The ids and
//! origins of the documents go to a spill file as well, so memory holds about 20 bytes a
//! document beyond the budget.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use neardup::dedup::spill::{read_exact_at, SpillOptions, SpillingDeduper};
use neardup::dedup::{Keep, BATCH_DOCS};
use neardup::minhash::MinHashDetector;
use serde_json::Value;

use super::pipeline::{progress, write_kept_again, Outputs};
use super::write::{self, Names};
use super::Args;
use crate::input::{BadPolicy, DocReader, InputDoc};

/// Text bytes a batch holds: small, since batches are read ahead and their texts, parsed
/// lines and normalised copies live beside the budget (the decisions do not depend on the
/// batches here: nothing is learnt from them, unlike the template veto).
const BATCH_BYTES: usize = 1 << 20;

/// Refuses `--memory-budget-mib` with settings it cannot honour.
pub(super) fn check(args: &Args) -> anyhow::Result<()> {
    if args.detector != "minhash" || !args.no_template {
        anyhow::bail!(
            "--memory-budget-mib spills MinHash band buckets to disk, which gives the clusters of \
             --method minhash --no-template-veto (either --linkage); add those flags (now \
             --method {}{}), or drop --memory-budget-mib to keep the index in memory",
            args.detector,
            if args.no_template {
                ""
            } else {
                ", template veto on"
            }
        );
    }
    if args.kept.is_some() && super::reads_stdin(&args.inputs) {
        anyhow::bail!(
            "--memory-budget-mib with --kept reads the input twice, which standard input cannot \
             be; name the input files"
        );
    }
    Ok(())
}

/// The ids and origins of the documents, in a spill file: 8 bytes a document in memory.
struct SpilledNames {
    file: BufWriter<File>,
    reader: Option<File>,
    offsets: Vec<u64>,
    files: Vec<Arc<str>>,
    written: u64,
}

impl SpilledNames {
    fn new(dir: &Path) -> anyhow::Result<Self> {
        let f = tempfile::tempfile_in(dir)
            .with_context(|| format!("cannot make a spill file in {}", dir.display()))?;
        Ok(SpilledNames {
            file: BufWriter::with_capacity(1 << 20, f),
            reader: None,
            offsets: vec![0],
            files: Vec::new(),
            written: 0,
        })
    }

    /// Appends `d`'s id, file and line.
    fn push(&mut self, d: &InputDoc) -> std::io::Result<()> {
        let file = match self.files.last() {
            Some(f) if Arc::ptr_eq(f, &d.file) => self.files.len() - 1,
            _ => {
                self.files.push(d.file.clone());
                self.files.len() - 1
            }
        };
        let id = serde_json::to_vec(&d.id)?;
        self.file.write_all(&(file as u32).to_le_bytes())?;
        self.file
            .write_all(&d.line.unwrap_or(u64::MAX).to_le_bytes())?;
        self.file.write_all(&id)?;
        self.written += 12 + id.len() as u64;
        self.offsets.push(self.written);
        Ok(())
    }

    /// Ends writing; the names can be read from now on.
    fn seal(&mut self) -> std::io::Result<()> {
        self.file.flush()?;
        self.reader = Some(self.file.get_ref().try_clone()?);
        Ok(())
    }

    fn record(&self, i: usize) -> std::io::Result<Vec<u8>> {
        let (a, b) = (self.offsets[i], self.offsets[i + 1]);
        let mut buf = vec![0u8; (b - a) as usize];
        let f = self.reader.as_ref().expect("sealed before reading");
        read_exact_at(f, &mut buf, a)?;
        Ok(buf)
    }
}

impl Names for SpilledNames {
    fn id_of(&self, i: usize) -> std::io::Result<Value> {
        let r = self.record(i)?;
        Ok(serde_json::from_slice(&r[12..])?)
    }

    fn origin(&self, i: usize) -> std::io::Result<(Arc<str>, Option<u64>)> {
        let r = self.record(i)?;
        let file = u32::from_le_bytes(r[..4].try_into().expect("4 bytes"));
        let line = u64::from_le_bytes(r[4..12].try_into().expect("8 bytes"));
        Ok((
            self.files[file as usize].clone(),
            (line != u64::MAX).then_some(line),
        ))
    }
}

/// Runs `neardup dedup --memory-budget-mib` with `det`'s MinHash settings.
pub(super) fn run(args: &Args, det: MinHashDetector, keep: Keep, mib: u64) -> anyhow::Result<()> {
    let started = Instant::now();
    let dir = args.temp_dir.clone().unwrap_or_else(std::env::temp_dir);
    let mut reader = DocReader::open(&args.inputs, &args.input)?;
    // The spill files first: an unusable --temp-dir is refused before any output is opened.
    let opts = SpillOptions {
        linkage: args.linkage(),
        ..SpillOptions::new(usize::try_from(mib << 20).unwrap_or(usize::MAX), &dir)
    };
    let mut dd = SpillingDeduper::new(det, opts)?;
    let mut names = SpilledNames::new(&dir)?;
    let Outputs {
        out,
        mut kept_writer,
        report: report_sink,
        removed: removed_sink,
    } = Outputs::open(args, &reader)?;

    let pb = progress(reader.total_bytes, args.quiet);
    let mut bad = BadPolicy::new(args.skip_bad);
    let mut total_bytes = 0u64;
    let (mut batch, _) = reader.next_batch(BATCH_DOCS, BATCH_BYTES, &mut bad)?;
    while !batch.is_empty() {
        let start = dd.len();
        // Sketch this batch while the next one is read.
        let (pushed, next) = rayon::join(
            || dd.push_batch(&batch),
            || reader.next_batch(BATCH_DOCS, BATCH_BYTES, &mut bad),
        );
        pushed.map_err(|e| {
            let doc = &batch[e.doc as usize - start];
            anyhow::anyhow!("{}: {}", doc.origin(), e.source)
        })?;
        let bytes: u64 = batch.iter().map(|d| d.bytes as u64).sum();
        total_bytes += bytes;
        for d in &batch {
            names.push(d)?;
        }
        pb.inc(bytes);
        pb.set_message(format!(
            "{} docs, {:.0} docs/s (sketching; the decisions follow)",
            dd.len(),
            dd.len() as f64 / started.elapsed().as_secs_f64().max(1e-9)
        ));
        batch = next?.0;
    }
    pb.finish_and_clear();
    if dd.is_empty() {
        return Err(bad.nothing_read("deduplicate"));
    }
    if !args.quiet {
        eprintln!(
            "dedup: {} documents sketched in {:.1} s; deciding from the spill files…",
            dd.len(),
            started.elapsed().as_secs_f64()
        );
    }
    names.seal()?;
    let clustering = dd.finish(keep)?;

    // Decisions, in input order; then the removed documents.
    write::decisions_and_removed(
        out,
        removed_sink,
        &names,
        clustering.len(),
        keep,
        args.provenance,
        || {
            clustering
                .outcomes()
                .map(|o| o.map_err(anyhow::Error::from))
        },
    )?;
    if let Some(mut w) = kept_writer.take() {
        let mut outcomes = clustering.outcomes();
        write_kept_again(args, &mut w, |_| match outcomes.next() {
            Some(o) => Ok(o?.duplicate_of.is_none()),
            None => Ok(false),
        })?;
        w.finish()?;
    }

    let facts = args.run_facts(bad.count, total_bytes, started);
    let summary = clustering.summary(args.top, facts, |d| {
        names.id_of(d as usize).unwrap_or(Value::Null)
    })?;
    super::write_summary(args, &summary, report_sink)?;
    if !args.quiet {
        let s = clustering.stats();
        eprintln!(
            "spilled: {:.1} MB of band keys and pairs in {}; {} candidate pairs, {} confirmed; \
             largest bucket {} distinct signatures",
            s.spilled_bytes as f64 / 1e6,
            dir.display(),
            s.candidate_pairs,
            s.confirmed_pairs,
            s.largest_bucket
        );
    }
    Ok(())
}
