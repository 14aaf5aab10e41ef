//! Which files an input list names: files as given, directories walked for shards in sorted
//! path order, standard input for `-` (or no input at all).

use std::path::{Path, PathBuf};

/// Compression suffixes recognised in names (the content decides: see `decode`).
const COMPRESSED: [&str; 3] = ["gz", "zst", "zstd"];

/// What a file name says its content is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameKind {
    /// `.jsonl`, `.ndjson` (and `.json` when named explicitly).
    Jsonl,
    /// `.txt`, `.html`, `.htm`: one document per file.
    Text,
    /// `.parquet`, `.pq`: one document a row.
    Parquet,
    /// Anything else: decided by content.
    Unknown,
}

/// The extension of `p`, lower-cased, a compression suffix (`.gz`, `.zst`) set aside.
fn inner_ext(p: &Path) -> Option<String> {
    let mut name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if let Some((stem, ext)) = name.rsplit_once('.') {
        if COMPRESSED.contains(&ext.to_ascii_lowercase().as_str()) {
            name = stem;
        }
    }
    name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase())
}

/// The kind of `p` by its extension, a compression suffix (`.gz`, `.zst`) set aside.
pub fn name_kind(p: &Path) -> NameKind {
    match inner_ext(p).as_deref() {
        Some("jsonl" | "ndjson" | "json") => NameKind::Jsonl,
        Some("txt" | "html" | "htm") => NameKind::Text,
        Some("parquet" | "pq") => NameKind::Parquet,
        _ => NameKind::Unknown,
    }
}

/// Whether `p` looks compressed by its name (for progress totals only: the text it holds is
/// not its size). Parquet files are compressed column by column.
pub fn named_compressed(p: &Path) -> bool {
    p.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| COMPRESSED.contains(&e.to_ascii_lowercase().as_str()))
        || name_kind(p) == NameKind::Parquet
}

/// A file read inside a directory: shards and pages (`.json` is left out: in a directory it
/// is more often metadata than a shard).
fn dir_member(p: &Path) -> bool {
    matches!(
        inner_ext(p).as_deref(),
        Some("jsonl" | "ndjson" | "txt" | "html" | "htm" | "parquet" | "pq")
    )
}

/// One place documents come from.
#[derive(Debug, Clone)]
pub enum Source {
    /// Standard input.
    Stdin,
    /// A file named on the command line.
    File(PathBuf),
    /// A file found inside a directory: (path, id relative to the directory).
    DirFile(PathBuf, String),
}

/// The sources an input list names, in reading order.
#[derive(Debug, Default)]
pub struct Resolved {
    /// In reading order.
    pub sources: Vec<Source>,
    /// Total size of the files in bytes, when known and uncompressed (for progress bars).
    pub total_bytes: Option<u64>,
}

/// Resolves `inputs` (standard input when empty or `-`). Fails on a path that cannot be
/// read, and on a directory that holds no file neardup reads.
pub fn resolve(inputs: &[PathBuf]) -> anyhow::Result<Resolved> {
    let mut r = Resolved {
        sources: Vec::new(),
        total_bytes: Some(0),
    };
    if inputs.is_empty() {
        r.sources.push(Source::Stdin);
        r.total_bytes = None;
    }
    for p in inputs {
        if p.as_os_str() == "-" {
            r.sources.push(Source::Stdin);
            r.total_bytes = None;
            continue;
        }
        let meta = std::fs::metadata(p)
            .map_err(|e| anyhow::anyhow!("cannot open {}: {e}", p.display()))?;
        if !meta.is_dir() {
            add_size(&mut r, p, meta.len());
            r.sources.push(Source::File(p.clone()));
            continue;
        }
        let mut files = Vec::new();
        let mut others = Vec::new();
        walk(p, &mut files, &mut others)
            .map_err(|e| anyhow::anyhow!("cannot read directory {}: {e}", p.display()))?;
        files.sort();
        others.sort();
        if files.is_empty() {
            let seen = match others.first() {
                Some(o) => format!(
                    " ({} other file(s) ignored, e.g. {})",
                    others.len(),
                    o.display()
                ),
                None => " (it is empty)".to_string(),
            };
            anyhow::bail!(
                "the directory {} held no .jsonl, .ndjson, .txt, .html or .parquet files (plain or .gz/.zst){seen}; \
                 name the files themselves to read them (e.g. with --format jsonl)",
                p.display()
            );
        }
        if let Some(o) = others.first() {
            eprintln!(
                "warning: {}: ignored {} file(s) that are not .jsonl, .ndjson, .txt, .html (plain or .gz/.zst) or .parquet, e.g. {}",
                p.display(),
                others.len(),
                o.display()
            );
        }
        for f in files {
            let rel = f
                .strip_prefix(p)
                .unwrap_or(&f)
                .to_string_lossy()
                .into_owned();
            let len = std::fs::metadata(&f).map_or(0, |m| m.len());
            add_size(&mut r, &f, len);
            r.sources.push(Source::DirFile(f, rel));
        }
    }
    Ok(r)
}

fn add_size(r: &mut Resolved, p: &Path, len: u64) {
    if named_compressed(p) {
        r.total_bytes = None;
    }
    if let Some(t) = r.total_bytes.as_mut() {
        *t += len;
    }
}

/// Files read and files ignored under `dir`; hidden entries (`.name`) are passed over.
fn walk(dir: &Path, out: &mut Vec<PathBuf>, others: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let p = entry.path();
        // Follows symbolic links, as naming the file would.
        let meta = std::fs::metadata(&p)?;
        if meta.is_dir() {
            walk(&p, out, others)?;
        } else if dir_member(&p) {
            out.push(p);
        } else {
            others.push(p);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_by_name() {
        let k = |s: &str| name_kind(Path::new(s));
        assert_eq!(k("a/b.jsonl"), NameKind::Jsonl);
        assert_eq!(k("b.JSONL.GZ"), NameKind::Jsonl);
        assert_eq!(k("b.ndjson.zst"), NameKind::Jsonl);
        assert_eq!(k("p.html"), NameKind::Text);
        assert_eq!(k("p.txt.gz"), NameKind::Text);
        assert_eq!(k("data.gz"), NameKind::Unknown);
        assert_eq!(k("x.parquet"), NameKind::Parquet);
        assert!(dir_member(Path::new("d/part-0001.parquet")));
        assert!(dir_member(Path::new("d/s.jsonl.gz")));
        assert!(!dir_member(Path::new("d/meta.json")));
        assert!(!dir_member(Path::new("d/meta.json.gz")));
    }
}
