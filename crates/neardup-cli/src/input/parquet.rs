//! Parquet input: one document a row, the text from a column named by `--text-field` (a nested
//! field by its path, `a.b`), the id from `--id-field` when the file has that column.
//!
//! Rows are numbered from 1 in each file, as lines are: errors and provenance name `FILE:ROW`.
//! With `--kept`, each row is also written as one JSON object holding every column
//! ([`super::InputDoc::raw`]), so kept rows keep every field.

use std::collections::VecDeque;
use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Fields};
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};
use parquet::arrow::ProjectionMask;
use serde_json::Value;

use super::{BadInput, DocKind, InputArgs, InputDoc, Item};

/// The first bytes of every Parquet file.
pub const MAGIC: &[u8; 4] = b"PAR1";

/// Rows read at a time.
const BATCH_ROWS: usize = 4096;

/// Whether the file at `path` starts with the Parquet magic bytes.
pub fn is_parquet(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 4];
    File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| &head == MAGIC)
}

/// The rows of one Parquet file, as documents.
pub struct ParquetSource {
    name: Arc<str>,
    reader: ParquetRecordBatchReader,
    text: Vec<String>,
    id: Option<Vec<String>>,
    multi: bool,
    keep_raw: bool,
    row: u64,
    ready: VecDeque<Item>,
}

/// A column path: the field itself when a top-level column has that exact name, else its
/// dot-separated parts.
fn path_of(name: &str, fields: &Fields) -> Vec<String> {
    if fields.iter().any(|f| f.name() == name) {
        vec![name.to_string()]
    } else {
        name.split('.').map(str::to_string).collect()
    }
}

/// Whether `path` names a field of `fields` (through structs).
fn has_path(fields: &Fields, path: &[String]) -> bool {
    let Some((first, rest)) = path.split_first() else {
        return false;
    };
    match fields.iter().find(|f| f.name() == first) {
        None => false,
        Some(_) if rest.is_empty() => true,
        Some(f) => match f.data_type() {
            DataType::Struct(inner) => has_path(inner, rest),
            _ => false,
        },
    }
}

/// The column at `path` of `batch` (which has it: see [`has_path`]).
fn column(batch: &RecordBatch, path: &[String]) -> ArrayRef {
    let mut col = batch
        .column_by_name(&path[0])
        .expect("a checked path")
        .clone();
    for part in &path[1..] {
        col = col
            .as_struct()
            .column_by_name(part)
            .expect("a checked path")
            .clone();
    }
    col
}

impl ParquetSource {
    /// Opens `path`; the error says what is wrong (not Parquet, no such column) and how to fix it.
    pub fn open(
        path: &Path,
        name: Arc<str>,
        args: &InputArgs,
        multi: bool,
        keep_raw: bool,
    ) -> Result<ParquetSource, BadInput> {
        let bad = |message: String| BadInput {
            origin: name.to_string(),
            message,
        };
        let file = File::open(path).map_err(|e| bad(format!("cannot open: {e}")))?;
        let builder = ParquetRecordBatchReaderBuilder::try_new(file)
            .map_err(|e| bad(format!("not a readable Parquet file: {e}")))?;
        let fields = builder.schema().fields().clone();
        let text = path_of(&args.text_field, &fields);
        if !has_path(&fields, &text) {
            return Err(bad(format!(
                "no column `{}`; name the text column with --text-field (a nested field by its path, a.b; columns here: {})",
                args.text_field,
                fields
                    .iter()
                    .map(|f| f.name().as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let id = Some(path_of(&args.id_field, &fields)).filter(|p| has_path(&fields, p));
        // Only the columns needed, unless every column is written out again (--kept).
        let builder = if keep_raw {
            builder
        } else {
            let roots: Vec<usize> = fields
                .iter()
                .enumerate()
                .filter(|(_, f)| {
                    *f.name() == text[0] || id.as_ref().is_some_and(|p| *f.name() == p[0])
                })
                .map(|(i, _)| i)
                .collect();
            let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
            builder.with_projection(mask)
        };
        let reader = builder
            .with_batch_size(BATCH_ROWS)
            .build()
            .map_err(|e| bad(format!("cannot read: {e}")))?;
        Ok(ParquetSource {
            name,
            reader,
            text,
            id,
            multi,
            keep_raw,
            row: 0,
            ready: VecDeque::new(),
        })
    }

    /// The next row, a bad one, or `None` at the end of the file.
    pub fn next_item(&mut self) -> Option<Item> {
        loop {
            if let Some(item) = self.ready.pop_front() {
                return Some(item);
            }
            match self.reader.next()? {
                Ok(batch) => self.take(&batch),
                Err(e) => {
                    return Some(Err(BadInput {
                        origin: format!("{}:{}", self.name, self.row + 1),
                        message: format!("cannot read the Parquet data: {e}"),
                    }))
                }
            }
        }
    }

    /// Turns `batch` into documents (or bad rows) in [`Self::ready`].
    fn take(&mut self, batch: &RecordBatch) {
        let first = self.row;
        self.row += batch.num_rows() as u64;
        let origin = |i: usize| format!("{}:{}", self.name, first + i as u64 + 1);
        let texts = match arrow_cast::cast(&column(batch, &self.text), &DataType::Utf8) {
            Ok(t) => t,
            Err(e) => {
                self.ready.push_back(Err(BadInput {
                    origin: origin(0),
                    message: format!(
                        "column `{}` cannot be read as text ({e}); name a string column with --text-field",
                        self.text.join(".")
                    ),
                }));
                return;
            }
        };
        let texts = texts.as_string::<i32>();
        let ids = self.id.as_ref().and_then(|p| Ids::of(&column(batch, p)));
        let raws = if self.keep_raw {
            json_rows(batch)
        } else {
            None
        };
        for i in 0..batch.num_rows() {
            let line = first + i as u64 + 1;
            if texts.is_null(i) {
                self.ready.push_back(Err(BadInput {
                    origin: origin(i),
                    message: format!(
                        "column `{}` is null in this row; every row needs a text",
                        self.text.join(".")
                    ),
                }));
                continue;
            }
            let text = texts.value(i).to_string();
            let id = ids.as_ref().and_then(|ids| ids.get(i)).unwrap_or_else(|| {
                if self.multi {
                    Value::from(format!("{}:{line}", self.name))
                } else {
                    Value::from(line)
                }
            });
            self.ready.push_back(Ok(InputDoc {
                id,
                bytes: text.len(),
                text,
                file: self.name.clone(),
                line: Some(line),
                kind: DocKind::Row,
                raw: raws.as_ref().and_then(|r| r.get(i).cloned()),
            }));
        }
    }
}

/// A batch's id column, cast once: integers stay numbers, anything else becomes text.
enum Ids {
    Signed(ArrayRef),
    Unsigned(ArrayRef),
    Text(ArrayRef),
}

impl Ids {
    /// `col` cast for [`Ids::get`]; `None` when it cannot be read as text either.
    fn of(col: &ArrayRef) -> Option<Ids> {
        let to = |t: &DataType| arrow_cast::cast(col, t).ok();
        match col.data_type() {
            DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => {
                to(&DataType::Int64).map(Ids::Signed)
            }
            DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => {
                to(&DataType::UInt64).map(Ids::Unsigned)
            }
            _ => to(&DataType::Utf8).map(Ids::Text),
        }
    }

    /// The id in row `i`; `None` when it is null.
    fn get(&self, i: usize) -> Option<Value> {
        use arrow_array::types::{Int64Type, UInt64Type};
        match self {
            Ids::Signed(a) => a
                .is_valid(i)
                .then(|| a.as_primitive::<Int64Type>().value(i).into()),
            Ids::Unsigned(a) => a
                .is_valid(i)
                .then(|| a.as_primitive::<UInt64Type>().value(i).into()),
            Ids::Text(a) => a.is_valid(i).then(|| a.as_string::<i32>().value(i).into()),
        }
    }
}

/// Each row of `batch` as one JSON object (every column), for `--kept`.
fn json_rows(batch: &RecordBatch) -> Option<Vec<Vec<u8>>> {
    // Null columns are written as `null`, not left out: a kept row keeps every field.
    let mut w = arrow_json::WriterBuilder::new()
        .with_explicit_nulls(true)
        .build::<_, arrow_json::writer::LineDelimited>(Vec::new());
    w.write(batch).ok()?;
    w.finish().ok()?;
    let out = w.into_inner();
    let rows: Vec<Vec<u8>> = out
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(<[u8]>::to_vec)
        .collect();
    (rows.len() == batch.num_rows()).then_some(rows)
}
