//! What `neardup dedup` writes per document: decisions, removed documents with their reason,
//! and the kept documents unchanged.

use std::io::Write;
use std::sync::Arc;

use neardup::dedup::{Assignment, Keep, SharedClusters};
use neardup::detect::Stage;
use serde_json::Value;

use crate::input::{DocKind, InputArgs, InputDoc};
use crate::output::Sink;

/// What is kept of each document until the end.
pub struct Record {
    /// Its id.
    pub id: Value,
    /// Index of its file in [`Records::files`].
    pub file: u32,
    /// Its 1-based line, for line-based input.
    pub line: Option<u64>,
}

/// The records of every document, in input order, with the file names they share.
#[derive(Default)]
pub struct Records {
    /// One per document.
    pub list: Vec<Record>,
    /// File names (consecutive documents of one file share one entry).
    pub files: Vec<Arc<str>>,
}

/// The ids and origins of a run's documents, by 0-based input position: in memory
/// ([`Records`]) or in a spill file (`--memory-budget-mib`).
pub trait Names {
    /// The id of document `i`.
    fn id_of(&self, i: usize) -> std::io::Result<Value>;
    /// The file and the 1-based line of document `i`.
    fn origin(&self, i: usize) -> std::io::Result<(Arc<str>, Option<u64>)>;

    /// The id of document `d` (`null` for none).
    fn id(&self, d: Option<u32>) -> std::io::Result<Value> {
        d.map_or(Ok(Value::Null), |d| self.id_of(d as usize))
    }

    /// Writes `,"file":…,"line":…` of document `i`.
    fn write_provenance(&self, out: &mut dyn Write, i: usize) -> std::io::Result<()> {
        let (file, line) = self.origin(i)?;
        write!(
            out,
            ",\"file\":{},\"line\":{}",
            Value::from(&*file),
            line.map_or(Value::Null, Value::from)
        )
    }
}

impl Names for Records {
    fn id_of(&self, i: usize) -> std::io::Result<Value> {
        Ok(self.list[i].id.clone())
    }

    fn origin(&self, i: usize) -> std::io::Result<(Arc<str>, Option<u64>)> {
        let r = &self.list[i];
        Ok((self.files[r.file as usize].clone(), r.line))
    }
}

/// Writes every decision line in input order (with `shares_cluster_with`), then, to
/// `removed`, one line per removed document: two passes over `outcomes()`, the run's
/// assignments in input order (in memory or read back from a spill file).
pub fn decisions_and_removed<I: Iterator<Item = anyhow::Result<Assignment>>>(
    mut out: Sink,
    removed: Option<Sink>,
    names: &dyn Names,
    n: usize,
    keep: Keep,
    provenance: bool,
    outcomes: impl Fn() -> I,
) -> anyhow::Result<()> {
    let mut shared = SharedClusters::new(n, keep);
    for (i, o) in outcomes().enumerate() {
        let o = o?;
        let bridge = shared.next(i as u32, &o);
        decision(&mut out, names, i, &o, bridge, provenance)?;
    }
    out.finish()?;
    if let Some(mut w) = removed {
        for (i, o) in outcomes().enumerate() {
            let o = o?;
            if o.duplicate_of.is_some() {
                self::removed(&mut w, names, i, &o, keep, provenance)?;
            }
        }
        w.finish()?;
    }
    Ok(())
}

/// Writes the decision line of document `i`.
pub fn decision(
    out: &mut dyn Write,
    records: &dyn Names,
    i: usize,
    o: &Assignment,
    shares_cluster_with: Option<u32>,
    provenance: bool,
) -> anyhow::Result<()> {
    write!(
        out,
        "{{\"id\":{},\"duplicate_of\":{},\"cluster\":{},\"distance\":{},\"matched\":{}",
        records.id_of(i)?,
        records.id(o.duplicate_of)?,
        o.cluster,
        o.distance.map_or(Value::Null, Value::from),
        records.id(o.matched)?,
    )?;
    measure(out, o)?;
    if o.empty {
        out.write_all(b",\"skipped\":\"empty\"")?;
    }
    if shares_cluster_with.is_some() {
        write!(
            out,
            ",\"shares_cluster_with\":{}",
            records.id(shares_cluster_with)?
        )?;
    }
    if provenance {
        records.write_provenance(out, i)?;
    }
    out.write_all(b"}\n")?;
    Ok(())
}

/// Writes the `--removed` line of document `i` (a duplicate), with its reason in words.
pub fn removed(
    out: &mut dyn Write,
    records: &dyn Names,
    i: usize,
    o: &Assignment,
    keep: Keep,
    provenance: bool,
) -> anyhow::Result<()> {
    let matched = records.id(o.matched)?;
    let kept = records.id(o.duplicate_of)?;
    let (m, k) = (plain(&matched), plain(&kept));
    let mut reason = match (o.stage, o.distance, o.similarity) {
        (Some(Stage::Exact), _, _) => format!("identical to {m} after normalisation"),
        (Some(Stage::Short), _, Some(s)) => {
            format!("short text, edit-distance similarity {s:.3} to {m}")
        }
        (Some(Stage::Containment), _, Some(s)) => {
            format!("short text, the shorter lies inside the other (alignment {s:.3}) with {m}")
        }
        (Some(Stage::Passage), _, Some(s)) => {
            format!(
                "a quote: its sentences ({:.0} % of its letters) are sentences of {m}",
                s * 100.0
            )
        }
        (Some(Stage::Minhash), _, Some(s)) => format!("MinHash Jaccard estimate {s:.3} to {m}"),
        (Some(Stage::Imatch), _, _) => format!("same I-Match digest as {m}"),
        (_, Some(d), _) => format!("simhash Hamming distance {d} to {m}"),
        (_, None, Some(s)) => format!("similarity {s:.3} to {m}"),
        (_, None, None) => format!("near-duplicate of {m}"),
    };
    if o.matched != o.duplicate_of {
        reason.push_str(&match keep {
            Keep::First => format!("; {k} is the kept document of its cluster"),
            Keep::Longest => format!("; {k} is the longest document of its cluster"),
        });
    } else if keep == Keep::Longest {
        reason.push_str("; it is the longest document of its cluster");
    }
    write!(
        out,
        "{{\"id\":{},\"duplicate_of\":{kept},\"matched\":{matched},\"cluster\":{}",
        records.id_of(i)?,
        o.cluster,
    )?;
    write!(
        out,
        ",\"distance\":{}",
        o.distance.map_or(Value::Null, Value::from)
    )?;
    measure(out, o)?;
    write!(out, ",\"reason\":{}", Value::from(reason))?;
    if provenance {
        records.write_provenance(out, i)?;
    }
    out.write_all(b"}\n")?;
    Ok(())
}

/// The match's similarity and stage. Every line has every field (null when it does not apply):
/// one schema for jq and dataframes.
fn measure(out: &mut dyn Write, o: &Assignment) -> std::io::Result<()> {
    write!(
        out,
        ",\"similarity\":{},\"stage\":",
        o.similarity.map_or(Value::Null, Value::from)
    )?;
    match o.stage {
        Some(st) => write!(out, "\"{st}\""),
        None => out.write_all(b"null"),
    }
}

/// An id as text: a string without its quotes.
fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

/// Writes kept documents unchanged: the original line of jsonl and lines input (files and
/// standard input alike), a Parquet row as one JSON object of every column, `{"id","text"}`
/// for whole files.
pub struct KeptWriter {
    out: Sink,
    id_field: String,
    text_field: String,
}

impl KeptWriter {
    /// A writer to `out`; whole files are written with these id and text field names.
    pub fn new(out: Sink, input: &InputArgs) -> KeptWriter {
        KeptWriter {
            out,
            id_field: input.id_field.clone(),
            text_field: input.text_field.clone(),
        }
    }

    /// Writes `doc` (read with `keep_raw` for JSON lines).
    pub fn write(&mut self, doc: &InputDoc) -> anyhow::Result<()> {
        match (doc.kind, &doc.raw) {
            (DocKind::Line, _) => {
                self.out.write_all(doc.text.as_bytes())?;
                self.out.write_all(b"\n")?;
            }
            (DocKind::JsonLine | DocKind::Row, Some(raw)) => {
                self.out.write_all(raw)?;
                self.out.write_all(b"\n")?;
            }
            (DocKind::JsonLine | DocKind::Row, None) | (DocKind::File, _) => {
                let mut m = serde_json::Map::new();
                m.insert(self.id_field.clone(), doc.id.clone());
                m.insert(self.text_field.clone(), Value::from(doc.text.as_str()));
                serde_json::to_writer(&mut self.out, &Value::Object(m))?;
                self.out.write_all(b"\n")?;
            }
        }
        Ok(())
    }

    /// Flushes, and puts the file in place ([`Sink::finish`]).
    pub fn finish(self) -> anyhow::Result<()> {
        self.out.finish()
    }
}
