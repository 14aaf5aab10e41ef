//! Reading documents: JSONL, one document a line, whole files, Parquet rows, and directories of
//! shards; gzip and zstd by magic bytes.
//!
//! Every document carries where it came from (file and 1-based line), so errors and
//! provenance name the file and the line.

mod decode;
mod parquet;
mod sources;

use std::io::{BufRead, Read};
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use sources::{name_kind, NameKind, Source};

/// How input is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// By name: `.jsonl`/`.ndjson`/`.json` → jsonl, `.txt`/`.html` → one document per file
    /// (a `.gz`/`.zst` suffix set aside), `.parquet`/`.pq` → parquet, a directory → its shards
    /// and pages; anything else → parquet when it starts with `PAR1`, jsonl when its first
    /// non-blank byte is `{`, else one document per file (lines for standard input).
    Auto,
    /// One JSON object a line (`{"id": …, "text": …}`).
    Jsonl,
    /// One document a line.
    Lines,
    /// A whole file is one document.
    Text,
    /// Parquet: one document a row, the text from the `--text-field` column (`a.b` for a
    /// nested field), the id from the `--id-field` column when there is one.
    Parquet,
}

/// Options for reading documents.
#[derive(Debug, Clone, clap::Args)]
pub struct InputArgs {
    /// Input format. Compression (gzip, zstd) is recognised by content, in every format.
    #[arg(long, value_enum, default_value = "auto")]
    pub format: Format,
    /// JSONL field (Parquet column) holding the document id (documents without one get their
    /// 1-based line or row number, or FILE:LINE when several files are read).
    #[arg(long, default_value = "id")]
    pub id_field: String,
    /// JSONL field (Parquet column; a nested one by its path, a.b) holding the document text.
    #[arg(long, default_value = "text")]
    pub text_field: String,
}

/// One document.
#[derive(Debug, Clone)]
pub struct InputDoc {
    /// The id: from the id field, the file's path (relative inside a directory), or the
    /// 1-based line number.
    pub id: Value,
    /// The text.
    pub text: String,
    /// The file it came from (`<stdin>` for standard input).
    pub file: Arc<str>,
    /// Its 1-based line, for line-based input (its 1-based row, for Parquet).
    pub line: Option<u64>,
    /// Bytes this document took in the (decompressed) input, for throughput figures.
    pub bytes: usize,
    /// How the document was stored.
    pub kind: DocKind,
    /// The original line without its line ending (JSON lines), or the row as one JSON object
    /// of every column (Parquet), when asked for with [`DocReader::keep_raw`].
    pub raw: Option<Vec<u8>>,
}

/// Its text: what is deduplicated.
impl AsRef<str> for InputDoc {
    fn as_ref(&self) -> &str {
        &self.text
    }
}

impl InputDoc {
    /// `FILE:LINE`, or `FILE` for a whole-file document: for messages.
    pub fn origin(&self) -> String {
        match self.line {
            Some(l) => format!("{}:{l}", self.file),
            None => self.file.to_string(),
        }
    }
}

/// How a document was stored in the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocKind {
    /// A JSON object on a line.
    JsonLine,
    /// A line of text.
    Line,
    /// A whole file (or all of standard input).
    File,
    /// A row of a Parquet file.
    Row,
}

/// A bad input record: names the place and says how to fix it.
#[derive(Debug, Clone)]
pub struct BadInput {
    /// `FILE:LINE` or `FILE`.
    pub origin: String,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl std::fmt::Display for BadInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.origin, self.message)
    }
}

/// An item from the reader: a document, or a bad record (the reader goes on after it).
pub type Item = Result<InputDoc, BadInput>;

/// What to do with bad records while reading batches: stop with an error naming the record
/// (the default), or — with `skip` (`--skip-bad`) — count them, warn about the first 20, go on.
#[derive(Debug, Default)]
pub struct BadPolicy {
    /// Skip and count bad records instead of stopping.
    pub skip: bool,
    /// Bad records skipped so far.
    pub count: u64,
    /// The first one skipped, for the message when every record was bad.
    pub first: Option<String>,
}

impl BadPolicy {
    /// A policy that skips bad records when `skip`.
    pub fn new(skip: bool) -> Self {
        BadPolicy {
            skip,
            ..BadPolicy::default()
        }
    }

    /// The error for a run that read no document: every record was bad, or there were none.
    pub fn nothing_read(&self, what: &str) -> anyhow::Error {
        match &self.first {
            Some(first) => anyhow::anyhow!(
                "every input record was bad: {} skipped, none left to {what} (the first: {first})",
                self.count
            ),
            None => anyhow::anyhow!(
                "the input held no documents (empty, or only blank lines); nothing to {what}"
            ),
        }
    }
}

impl DocReader {
    /// Reads up to `max_docs` documents, closing the batch once their texts hold `max_bytes`
    /// bytes (UTF-8), whichever comes first — the rule of `neardup::dedup::batch_end`, which
    /// depends on the texts alone, so that every face cuts a corpus into the same batches. An
    /// empty batch means the input is exhausted. Returns the documents and their input bytes.
    pub fn next_batch(
        &mut self,
        max_docs: usize,
        max_bytes: usize,
        bad: &mut BadPolicy,
    ) -> anyhow::Result<(Vec<InputDoc>, usize)> {
        let mut batch = Vec::new();
        let mut bytes = 0;
        let mut text_bytes = 0;
        while batch.len() < max_docs && text_bytes < max_bytes {
            match self.next() {
                Some(Ok(doc)) => {
                    bytes += doc.bytes;
                    text_bytes += doc.text.len();
                    batch.push(doc);
                }
                Some(Err(e)) if bad.skip => {
                    bad.count += 1;
                    if bad.first.is_none() {
                        bad.first = Some(e.to_string());
                    }
                    if bad.count <= 20 {
                        eprintln!("warning: skipped {e}");
                    } else if bad.count == 21 {
                        eprintln!("warning: more bad input skipped; the count is in the summary");
                    }
                }
                Some(Err(e)) => anyhow::bail!("{e} (pass --skip-bad to count and skip bad lines)"),
                None => break,
            }
        }
        Ok((batch, bytes))
    }
}

/// Reads documents from files, directories or standard input, in order.
pub struct DocReader {
    sources: std::vec::IntoIter<Source>,
    files: Vec<PathBuf>,
    current: Option<LineSource>,
    rows: Option<parquet::ParquetSource>,
    args: InputArgs,
    multi: bool,
    keep_raw: bool,
    /// Total size of the named files, when known (for progress bars).
    pub total_bytes: Option<u64>,
}

struct LineSource {
    name: Arc<str>,
    reader: decode::Stream,
    line: u64,
    jsonl: bool,
}

impl DocReader {
    /// A reader over `inputs` (standard input when empty or `-`). Fails when a named input
    /// cannot be opened, or a directory holds nothing neardup reads.
    pub fn open(inputs: &[PathBuf], args: &InputArgs) -> anyhow::Result<DocReader> {
        let r = sources::resolve(inputs)?;
        let files = r
            .sources
            .iter()
            .filter_map(|s| match s {
                Source::Stdin => None,
                Source::File(p) | Source::DirFile(p, _) => Some(p.clone()),
            })
            .collect();
        Ok(DocReader {
            multi: r.sources.len() > 1,
            sources: r.sources.into_iter(),
            files,
            current: None,
            rows: None,
            args: args.clone(),
            keep_raw: false,
            total_bytes: r.total_bytes,
        })
    }

    /// Every file this reader will read (those found in directories included), in order.
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// Keep each JSON line's original bytes (each Parquet row as JSON) in [`InputDoc::raw`].
    pub fn keep_raw(mut self, keep: bool) -> Self {
        self.keep_raw = keep;
        self
    }

    fn next_source(&mut self) -> Option<Item> {
        let (path, dir_id) = match self.sources.next()? {
            Source::Stdin => (None, None),
            Source::File(p) => (Some(p), None),
            Source::DirFile(p, rel) => (Some(p), Some(rel)),
        };
        let name: Arc<str> = match &path {
            Some(p) => p.display().to_string().into(),
            None => "<stdin>".into(),
        };
        let by_name = path.as_deref().map_or(NameKind::Unknown, name_kind);
        let rows = match (self.args.format, by_name, path.as_deref()) {
            (Format::Parquet, _, _) | (Format::Auto, NameKind::Parquet, _) => true,
            (Format::Auto, NameKind::Unknown, Some(p)) => parquet::is_parquet(p),
            _ => false,
        };
        if rows {
            let Some(p) = path.as_deref() else {
                return Some(Err(BadInput {
                    origin: name.to_string(),
                    message: "Parquet cannot be read from standard input (its index is at the end of the file); name the file".into(),
                }));
            };
            match parquet::ParquetSource::open(p, name, &self.args, self.multi, self.keep_raw) {
                Ok(src) => self.rows = Some(src),
                Err(e) => return Some(Err(e)),
            }
            return None;
        }
        let (mut stream, _) = match decode::open(path.as_deref()) {
            Ok(s) => s,
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                return Some(Err(BadInput {
                    origin: name.to_string(),
                    message: e.to_string(),
                }))
            }
            Err(e) => {
                return Some(Err(BadInput {
                    origin: name.to_string(),
                    message: format!("cannot open: {e}"),
                }))
            }
        };
        let jsonl = match (self.args.format, by_name) {
            (Format::Jsonl | Format::Parquet, _) => true,
            (Format::Lines, _) => false,
            (Format::Text, _) | (Format::Auto, NameKind::Text) => {
                return Some(self.whole(stream, name, path.is_none(), dir_id))
            }
            (Format::Auto, NameKind::Jsonl) => true,
            (Format::Auto, NameKind::Unknown | NameKind::Parquet) => {
                let json = sniff_jsonl(&mut stream);
                if !json && path.is_some() {
                    return Some(self.whole(stream, name, false, dir_id));
                }
                json
            }
        };
        self.current = Some(LineSource {
            name,
            reader: stream,
            line: 0,
            jsonl,
        });
        None
    }

    /// All of `stream` as one document; its id is the path (relative inside a directory),
    /// `-` for standard input.
    fn whole(
        &self,
        mut stream: decode::Stream,
        name: Arc<str>,
        stdin: bool,
        dir_id: Option<String>,
    ) -> Item {
        let mut buf = Vec::new();
        if let Err(e) = stream.read_to_end(&mut buf) {
            return Err(BadInput {
                origin: name.to_string(),
                message: format!("read error: {e}"),
            });
        }
        let id = match (stdin, dir_id) {
            (true, _) => Value::from("-"),
            (false, Some(rel)) => Value::from(rel),
            (false, None) => Value::from(name.to_string()),
        };
        let bytes = buf.len();
        match String::from_utf8(buf) {
            Ok(text) => Ok(InputDoc {
                id,
                text,
                file: name,
                line: None,
                bytes,
                kind: DocKind::File,
                raw: None,
            }),
            Err(e) => Err(BadInput {
                origin: name.to_string(),
                message: not_utf8(e.utf8_error().valid_up_to(), "the file"),
            }),
        }
    }
}

/// The message for bytes that are not UTF-8.
fn not_utf8(at: usize, what: &str) -> String {
    format!("invalid UTF-8 at byte {at} of {what}; neardup reads UTF-8 (gzip and zstd are decompressed) — convert other encodings first (e.g. iconv -f GB18030 -t UTF-8)")
}

fn sniff_jsonl(r: &mut decode::Stream) -> bool {
    match r.fill_buf() {
        Ok(buf) => buf.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{'),
        Err(_) => false,
    }
}

impl Iterator for DocReader {
    type Item = Item;

    fn next(&mut self) -> Option<Item> {
        loop {
            if let Some(rows) = self.rows.as_mut() {
                match rows.next_item() {
                    Some(item) => return Some(item),
                    None => {
                        self.rows = None;
                        continue;
                    }
                }
            }
            if let Some(cur) = self.current.as_mut() {
                let mut buf = Vec::new();
                match cur.reader.read_until(b'\n', &mut buf) {
                    Ok(0) => {
                        self.current = None;
                        continue;
                    }
                    Ok(n) => {
                        cur.line += 1;
                        let line = cur.line;
                        if buf.last() == Some(&b'\n') {
                            buf.pop();
                            if buf.last() == Some(&b'\r') {
                                buf.pop();
                            }
                        }
                        if cur.jsonl && buf.iter().all(|b| b.is_ascii_whitespace()) {
                            continue; // blank lines between JSON objects are not documents
                        }
                        let default_id = if self.multi {
                            Value::from(format!("{}:{line}", cur.name))
                        } else {
                            Value::from(line)
                        };
                        let doc = InputDoc {
                            id: default_id,
                            text: String::new(),
                            file: cur.name.clone(),
                            line: Some(line),
                            bytes: n,
                            kind: if cur.jsonl {
                                DocKind::JsonLine
                            } else {
                                DocKind::Line
                            },
                            raw: None,
                        };
                        return Some(if cur.jsonl {
                            parse_json_line(buf, doc, &self.args, self.keep_raw)
                        } else {
                            match String::from_utf8(buf) {
                                Ok(text) => Ok(InputDoc { text, ..doc }),
                                Err(e) => Err(BadInput {
                                    origin: doc.origin(),
                                    message: not_utf8(e.utf8_error().valid_up_to(), "the line"),
                                }),
                            }
                        });
                    }
                    Err(e) => {
                        let origin = format!("{}:{}", cur.name, cur.line + 1);
                        self.current = None;
                        return Some(Err(BadInput {
                            origin,
                            message: format!("read error: {e}"),
                        }));
                    }
                }
            }
            if let Some(item) = self.next_source() {
                return Some(item);
            }
            if self.current.is_none() && self.rows.is_none() {
                return None;
            }
        }
    }
}

/// Parses one JSON line into `doc` (which carries the place and the default id).
fn parse_json_line(buf: Vec<u8>, doc: InputDoc, args: &InputArgs, keep_raw: bool) -> Item {
    let bad = |message: String| BadInput {
        origin: doc.origin(),
        message,
    };
    let v: Value = match serde_json::from_slice(&buf) {
        Ok(v) => v,
        Err(e) => {
            return Err(bad(match std::str::from_utf8(&buf) {
                Err(u) => not_utf8(u.valid_up_to(), "the line"),
                Ok(_) => format!("malformed JSON ({e}); each line must be one JSON object like {{\"id\": 1, \"text\": \"…\"}}"),
            }));
        }
    };
    let Value::Object(mut obj) = v else {
        return Err(bad(
            "expected a JSON object like {\"id\": 1, \"text\": \"…\"}".into(),
        ));
    };
    let text = match obj.remove(&args.text_field) {
        Some(Value::String(s)) => s,
        Some(other) => {
            return Err(bad(format!(
                "field `{}` is {}, expected a string",
                args.text_field,
                json_kind(&other)
            )));
        }
        None => {
            return Err(bad(format!(
                "no `{}` field; name the text field with --text-field (fields here: {})",
                args.text_field,
                obj.keys().cloned().collect::<Vec<_>>().join(", ")
            )));
        }
    };
    let id = match obj.remove(&args.id_field) {
        Some(Value::Null) | None => doc.id.clone(),
        Some(v) => v,
    };
    Ok(InputDoc {
        id,
        text,
        raw: keep_raw.then_some(buf),
        ..doc
    })
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
