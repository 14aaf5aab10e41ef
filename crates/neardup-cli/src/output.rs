//! Output files: refused when one is also an input (same file, by device and inode), all
//! opened before any work so a bad path fails at once, and truncated only once every one of
//! them could be opened. `-` is standard output.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// A buffered output: a file or standard output.
pub type Sink = BufWriter<Box<dyn Write + Send>>;

/// An output a command was asked to write: the flag that named it and the path.
#[derive(Debug, Clone, Copy)]
pub struct Wanted<'a> {
    /// The flag, for messages (`--kept`).
    pub flag: &'static str,
    /// The path, `-` for standard output.
    pub path: &'a Path,
}

/// Whether `p` names standard output.
pub fn is_stdout(p: &Path) -> bool {
    p.as_os_str() == "-"
}

/// The identity of an existing file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileId(u64, u64);

#[cfg(unix)]
fn file_id(m: &std::fs::Metadata) -> FileId {
    use std::os::unix::fs::MetadataExt;
    FileId(m.dev(), m.ino())
}

#[cfg(not(unix))]
fn file_id(_m: &std::fs::Metadata) -> FileId {
    FileId(0, 0) // compared by canonical path instead (see `same_file`)
}

fn same_file(a: &Path, am: &std::fs::Metadata, b: &Path, bm: &std::fs::Metadata) -> bool {
    if cfg!(unix) {
        file_id(am) == file_id(bm)
    } else {
        matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
    }
}

/// Metadata of standard input when it is a regular file (`< corpus.jsonl`).
fn stdin_file_meta() -> Option<std::fs::Metadata> {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        let fd = io::stdin().as_fd().try_clone_to_owned().ok()?;
        let m = File::from(fd).metadata().ok()?;
        m.is_file().then_some(m)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// Refuses an output that is also an input, two outputs that are one file, and two outputs
/// on standard output. `inputs` are the files to be read (those inside directories included);
/// `reads_stdin` says whether standard input is read too.
pub fn check(outputs: &[Wanted<'_>], inputs: &[PathBuf], reads_stdin: bool) -> anyhow::Result<()> {
    let stdin_meta = if reads_stdin { stdin_file_meta() } else { None };
    let input_meta: Vec<(&Path, std::fs::Metadata)> = inputs
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok().map(|m| (p.as_path(), m)))
        .collect();
    let mut on_stdout: Option<&'static str> = None;
    for (i, o) in outputs.iter().enumerate() {
        if is_stdout(o.path) {
            if let Some(first) = on_stdout {
                anyhow::bail!(
                    "{first} and {} both write to standard output (-); give one of them a file name",
                    o.flag
                );
            }
            on_stdout = Some(o.flag);
            continue;
        }
        for other in &outputs[..i] {
            if is_stdout(other.path) {
                continue;
            }
            let same = match (std::fs::metadata(o.path), std::fs::metadata(other.path)) {
                (Ok(a), Ok(b)) => same_file(o.path, &a, other.path, &b),
                _ => normalise(o.path) == normalise(other.path),
            };
            if same {
                anyhow::bail!(
                    "{} and {} name the same file ({}); give each output its own file",
                    other.flag,
                    o.flag,
                    o.path.display()
                );
            }
        }
        let Ok(om) = std::fs::metadata(o.path) else {
            continue; // does not exist yet: cannot be an input
        };
        for (ip, im) in &input_meta {
            if same_file(o.path, &om, ip, im) {
                anyhow::bail!(
                    "{} {} is the input file {}: writing it would destroy the input before it is read; \
                     write to another file (and move it over the input afterwards if you mean to replace it)",
                    o.flag,
                    o.path.display(),
                    ip.display()
                );
            }
        }
        if let Some(sm) = &stdin_meta {
            if file_id(sm) == file_id(&om) && cfg!(unix) {
                anyhow::bail!(
                    "{} {} is the file on standard input: writing it would destroy the input before it is read; \
                     write to another file",
                    o.flag,
                    o.path.display()
                );
            }
        }
    }
    Ok(())
}

/// `p` with its directory made absolute, for comparing paths of files not yet created.
fn normalise(p: &Path) -> PathBuf {
    let dir = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    match (dir.canonicalize(), p.file_name()) {
        (Ok(d), Some(n)) => d.join(n),
        _ => p.to_path_buf(),
    }
}

/// Opens every output (see the module docs); `None` entries stay `None`. A file is truncated
/// only after all of them could be opened; on failure the files this call created are removed.
pub fn open_all(outputs: &[Option<Wanted<'_>>]) -> anyhow::Result<Vec<Option<Sink>>> {
    let mut opened: Vec<Option<(Option<File>, bool)>> = Vec::with_capacity(outputs.len());
    let mut created: Vec<&Path> = Vec::new();
    for o in outputs {
        let Some(o) = o else {
            opened.push(None);
            continue;
        };
        if is_stdout(o.path) {
            opened.push(Some((None, false)));
            continue;
        }
        let existed = o.path.exists();
        let res = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false) // truncated below, once every output could be opened
            .open(o.path);
        match res {
            Ok(f) => {
                if !existed {
                    created.push(o.path);
                }
                opened.push(Some((Some(f), existed)));
            }
            Err(e) => {
                for c in &created {
                    let _ = std::fs::remove_file(c);
                }
                let hint = match e.kind() {
                    io::ErrorKind::NotFound => " (does its directory exist?)",
                    io::ErrorKind::PermissionDenied => {
                        " (permission denied: choose a writable place)"
                    }
                    _ => "",
                };
                anyhow::bail!("{} {}: cannot create: {e}{hint}", o.flag, o.path.display());
            }
        }
    }
    let mut sinks = Vec::with_capacity(opened.len());
    for (o, slot) in outputs.iter().zip(opened) {
        sinks.push(match slot {
            None => None,
            Some((None, _)) => Some(BufWriter::with_capacity(
                1 << 16,
                Box::new(io::stdout()) as Box<dyn Write + Send>,
            )),
            Some((Some(f), existed)) => {
                // Only a regular file has a length to cut (/dev/null, a FIFO or a terminal
                // has none).
                let regular = f.metadata().is_ok_and(|m| m.file_type().is_file());
                if existed && regular {
                    f.set_len(0).map_err(|e| {
                        let flag = o.map_or("output", |o| o.flag);
                        anyhow::anyhow!("{flag}: cannot truncate: {e}")
                    })?;
                }
                Some(BufWriter::with_capacity(
                    1 << 16,
                    Box::new(f) as Box<dyn Write + Send>,
                ))
            }
        });
    }
    Ok(sinks)
}

/// Checks and opens one output (`None`: standard output) for a command that reads `inputs`.
pub fn open_one(
    flag: &'static str,
    path: Option<&Path>,
    inputs: &[PathBuf],
) -> anyhow::Result<Sink> {
    let path = path.unwrap_or(Path::new("-"));
    let w = Wanted { flag, path };
    check(&[w], inputs, false)?;
    Ok(open_all(&[Some(w)])?
        .pop()
        .flatten()
        .expect("one output asked for, one opened"))
}
