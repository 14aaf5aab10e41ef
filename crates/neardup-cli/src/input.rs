//! Reading documents: JSONL, one document a line, whole files, and directories.
//!
//! Every document carries where it came from, so errors name the file and the line.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde_json::Value;

/// How input is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// By extension: `.jsonl`/`.ndjson` → jsonl, a directory → dir, other files → text;
    /// standard input → jsonl when its first non-blank byte is `{`, else lines.
    Auto,
    /// One JSON object a line (`{"id": …, "text": …}`).
    Jsonl,
    /// One document a line.
    Lines,
    /// A whole file is one document.
    Text,
}

/// Options for reading documents.
#[derive(Debug, Clone, clap::Args)]
pub struct InputArgs {
    /// Input format.
    #[arg(long, value_enum, default_value = "auto")]
    pub format: Format,
    /// JSONL field holding the document id (documents without one get their 0-based line number).
    #[arg(long, default_value = "id")]
    pub id_field: String,
    /// JSONL field holding the document text.
    #[arg(long, default_value = "text")]
    pub text_field: String,
}

/// One document.
#[derive(Debug, Clone)]
pub struct Doc {
    /// The id: from the id field, the file's relative path, or the 0-based line number.
    pub id: Value,
    /// The text.
    pub text: String,
    /// `FILE:LINE` (or `FILE` for a whole-file document), for messages.
    pub origin: String,
    /// Bytes this document took in the input (for throughput figures).
    pub bytes: usize,
    /// How the document was stored.
    pub kind: DocKind,
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
}

/// A bad input record: names the place and says how to fix it.
#[derive(Debug, Clone)]
pub struct BadInput {
    /// `FILE:LINE`.
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
pub type Item = Result<Doc, BadInput>;

/// What to do with bad records while reading batches: stop with an error naming the record
/// (the default), or — with `skip` (`--skip-bad`) — count them, warn about the first 20, go on.
#[derive(Debug, Default)]
pub struct BadPolicy {
    /// Skip and count bad records instead of stopping.
    pub skip: bool,
    /// Bad records skipped so far.
    pub count: u64,
}

impl DocReader {
    /// Reads up to `max_docs` documents or about `max_bytes` bytes, whichever comes first; an
    /// empty batch means the input is exhausted. Returns the documents and their input bytes.
    pub fn next_batch(
        &mut self,
        max_docs: usize,
        max_bytes: usize,
        bad: &mut BadPolicy,
    ) -> anyhow::Result<(Vec<Doc>, usize)> {
        let mut batch = Vec::new();
        let mut bytes = 0;
        while batch.len() < max_docs && bytes < max_bytes {
            match self.next() {
                Some(Ok(doc)) => {
                    bytes += doc.bytes;
                    batch.push(doc);
                }
                Some(Err(e)) if bad.skip => {
                    bad.count += 1;
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

enum Source {
    Stdin,
    File(PathBuf),
    /// A file found inside a directory: (path, id relative to the directory).
    DirFile(PathBuf, String),
}

/// Reads documents from files, directories or standard input, in order.
pub struct DocReader {
    sources: std::vec::IntoIter<Source>,
    current: Option<LineSource>,
    args: InputArgs,
    multi: bool,
    /// Total size of the named files, when known (for progress bars).
    #[allow(dead_code)]
    pub total_bytes: Option<u64>,
}

struct LineSource {
    name: String,
    reader: Box<dyn BufRead + Send>,
    line: usize,
    jsonl: bool,
}

impl DocReader {
    /// A reader over `inputs` (standard input when empty or `-`). Fails when a named input
    /// cannot be opened.
    pub fn open(inputs: &[PathBuf], args: &InputArgs) -> anyhow::Result<DocReader> {
        let mut sources = Vec::new();
        let mut total = Some(0u64);
        if inputs.is_empty() {
            sources.push(Source::Stdin);
            total = None;
        }
        for p in inputs {
            if p.as_os_str() == "-" {
                sources.push(Source::Stdin);
                total = None;
                continue;
            }
            let meta = std::fs::metadata(p)
                .map_err(|e| anyhow::anyhow!("cannot open {}: {e}", p.display()))?;
            if meta.is_dir() {
                let mut files = Vec::new();
                walk(p, &mut files)
                    .map_err(|e| anyhow::anyhow!("cannot read directory {}: {e}", p.display()))?;
                files.sort();
                for f in files {
                    let rel = f
                        .strip_prefix(p)
                        .unwrap_or(&f)
                        .to_string_lossy()
                        .into_owned();
                    if let (Some(t), Ok(m)) = (total.as_mut(), std::fs::metadata(&f)) {
                        *t += m.len();
                    }
                    sources.push(Source::DirFile(f, rel));
                }
            } else {
                if let Some(t) = total.as_mut() {
                    *t += meta.len();
                }
                sources.push(Source::File(p.clone()));
            }
        }
        let multi = sources.len() > 1;
        Ok(DocReader {
            sources: sources.into_iter(),
            current: None,
            args: args.clone(),
            multi,
            total_bytes: total,
        })
    }

    fn next_source(&mut self) -> Option<Item> {
        let src = self.sources.next()?;
        match src {
            Source::Stdin => {
                let mut r: Box<dyn BufRead + Send> =
                    Box::new(BufReader::with_capacity(1 << 20, std::io::stdin()));
                let jsonl = match self.args.format {
                    Format::Jsonl => true,
                    Format::Auto => sniff_jsonl(&mut r),
                    Format::Lines => false,
                    Format::Text => {
                        let mut buf = Vec::new();
                        if let Err(e) = r.read_to_end(&mut buf) {
                            return Some(Err(BadInput {
                                origin: "<stdin>".into(),
                                message: format!("read error: {e}"),
                            }));
                        }
                        return Some(whole_doc(buf, "<stdin>".into(), Value::from("-")));
                    }
                };
                self.current = Some(LineSource {
                    name: "<stdin>".into(),
                    reader: r,
                    line: 0,
                    jsonl,
                });
                None
            }
            Source::File(p) if self.is_whole_file(&p) => {
                let name = p.display().to_string();
                let id = Value::from(name.clone());
                Some(match std::fs::read(&p) {
                    Ok(buf) => whole_doc(buf, name, id),
                    Err(e) => Err(BadInput {
                        origin: name,
                        message: format!("cannot read: {e}"),
                    }),
                })
            }
            Source::DirFile(p, rel) if self.is_whole_file(&p) => {
                let name = p.display().to_string();
                let id = Value::from(rel);
                Some(match std::fs::read(&p) {
                    Ok(buf) => whole_doc(buf, name, id),
                    Err(e) => Err(BadInput {
                        origin: name,
                        message: format!("cannot read: {e}"),
                    }),
                })
            }
            Source::File(p) | Source::DirFile(p, _) => {
                let name = p.display().to_string();
                match File::open(&p) {
                    Ok(f) => {
                        let jsonl = match self.args.format {
                            Format::Jsonl => true,
                            Format::Lines => false,
                            _ => is_jsonl_ext(&p),
                        };
                        self.current = Some(LineSource {
                            name,
                            reader: Box::new(BufReader::with_capacity(1 << 20, f)),
                            line: 0,
                            jsonl,
                        });
                        None
                    }
                    Err(e) => Some(Err(BadInput {
                        origin: name,
                        message: format!("cannot open: {e}"),
                    })),
                }
            }
        }
    }

    fn is_whole_file(&self, p: &Path) -> bool {
        match self.args.format {
            Format::Text => true,
            Format::Auto => !is_jsonl_ext(p),
            _ => false,
        }
    }
}

fn whole_doc(buf: Vec<u8>, name: String, id: Value) -> Item {
    let bytes = buf.len();
    match String::from_utf8(buf) {
        Ok(text) => Ok(Doc { id, text, origin: name, bytes, kind: DocKind::File }),
        Err(e) => Err(BadInput {
            origin: name,
            message: format!("invalid UTF-8 at byte {}; neardup reads UTF-8 — convert it first (e.g. iconv -f GB18030 -t UTF-8)", e.utf8_error().valid_up_to()),
        }),
    }
}

fn is_jsonl_ext(p: &Path) -> bool {
    matches!(
        p.extension().and_then(|e| e.to_str()),
        Some("jsonl" | "ndjson" | "json")
    )
}

fn sniff_jsonl(r: &mut Box<dyn BufRead + Send>) -> bool {
    match r.fill_buf() {
        Ok(buf) => buf.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{'),
        Err(_) => false,
    }
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let p = entry.path();
        let ft = entry.file_type()?;
        if ft.is_dir() {
            walk(&p, out)?;
        } else if matches!(
            p.extension().and_then(|e| e.to_str()),
            Some("txt" | "html" | "htm")
        ) {
            out.push(p);
        }
    }
    Ok(())
}

impl Iterator for DocReader {
    type Item = Item;

    fn next(&mut self) -> Option<Item> {
        loop {
            if let Some(cur) = self.current.as_mut() {
                let mut buf = Vec::new();
                match cur.reader.read_until(b'\n', &mut buf) {
                    Ok(0) => {
                        self.current = None;
                        continue;
                    }
                    Ok(n) => {
                        let line = cur.line;
                        cur.line += 1;
                        let origin = format!("{}:{}", cur.name, line + 1);
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
                            Value::from(format!("{}:{}", cur.name, line))
                        } else {
                            Value::from(line)
                        };
                        return Some(if cur.jsonl {
                            parse_json_line(&buf, origin, default_id, &self.args, n)
                        } else {
                            match String::from_utf8(buf) {
                                Ok(text) => Ok(Doc { id: default_id, text, origin, bytes: n, kind: DocKind::Line }),
                                Err(e) => Err(BadInput {
                                    origin,
                                    message: format!("invalid UTF-8 at byte {} of the line; neardup reads UTF-8 — convert it first (e.g. iconv -f GB18030 -t UTF-8)", e.utf8_error().valid_up_to()),
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
            self.current.as_ref()?;
        }
    }
}

fn parse_json_line(
    buf: &[u8],
    origin: String,
    default_id: Value,
    args: &InputArgs,
    bytes: usize,
) -> Item {
    let v: Value = match serde_json::from_slice(buf) {
        Ok(v) => v,
        Err(e) => {
            let msg = if std::str::from_utf8(buf).is_err() {
                "invalid UTF-8; neardup reads UTF-8 JSON — convert it first (e.g. iconv -f GB18030 -t UTF-8)".to_string()
            } else {
                format!("malformed JSON ({e}); each line must be one JSON object like {{\"id\": 1, \"text\": \"…\"}}")
            };
            return Err(BadInput {
                origin,
                message: msg,
            });
        }
    };
    let Value::Object(mut obj) = v else {
        return Err(BadInput {
            origin,
            message: "expected a JSON object like {\"id\": 1, \"text\": \"…\"}".into(),
        });
    };
    let text = match obj.remove(&args.text_field) {
        Some(Value::String(s)) => s,
        Some(other) => {
            return Err(BadInput {
                origin,
                message: format!(
                    "field `{}` is {}, expected a string",
                    args.text_field,
                    json_kind(&other)
                ),
            });
        }
        None => {
            return Err(BadInput {
                origin,
                message: format!(
                    "no `{}` field; name the text field with --text-field (fields here: {})",
                    args.text_field,
                    obj.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            });
        }
    };
    let id = match obj.remove(&args.id_field) {
        Some(Value::Null) | None => default_id,
        Some(v) => v,
    };
    Ok(Doc {
        id,
        text,
        origin,
        bytes,
        kind: DocKind::JsonLine,
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
