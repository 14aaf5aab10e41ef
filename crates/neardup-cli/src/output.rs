//! Output files: refused when one is also an input (same file, by device and inode), all
//! opened before any work so a bad path fails at once. `-` is standard output.
//!
//! A regular file is written beside its target under a hidden temporary name
//! (`.NAME.neardup-PID.tmp`, which directory inputs pass over) and renamed over the target by
//! [`Sink::finish`], once its command has read every input and written all of it: a run that
//! fails or is interrupted leaves the target as it was, and a file that is read while it is
//! written (`cat corpus.jsonl | neardup dedup --kept corpus.jsonl`) is only replaced after the
//! input has ended. Other outputs (standard output, `/dev/null`, a FIFO) are written as they
//! come.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// A buffered output: standard output, a device, or a regular file staged under a temporary
/// name until [`Sink::finish`].
pub struct Sink {
    w: BufWriter<Box<dyn Write + Send>>,
    staged: Option<Staged>,
}

/// A regular file being written under a temporary name: removed unless renamed over its
/// target.
struct Staged {
    tmp: PathBuf,
    target: PathBuf,
    file: File,
    done: bool,
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.done {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.w.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.w.write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }
}

impl Sink {
    fn new(w: Box<dyn Write + Send>, staged: Option<Staged>) -> Sink {
        Sink {
            w: BufWriter::with_capacity(1 << 16, w),
            staged,
        }
    }

    /// Flushes, and puts a staged file in its place: its data synced, then renamed over the
    /// target. Until this returns, the target holds what it held before the run (or does not
    /// exist); an output dropped without it is removed.
    pub fn finish(mut self) -> anyhow::Result<()> {
        self.w.flush()?;
        if let Some(st) = self.staged.as_mut() {
            let fail = |what: &str, e: io::Error| {
                anyhow::anyhow!(
                    "{}: cannot {what} (the file is left as it was before the run): {e}",
                    st.target.display()
                )
            };
            st.file
                .sync_data()
                .map_err(|e| fail("sync its new contents", e))?;
            std::fs::rename(&st.tmp, &st.target).map_err(|e| fail("replace it", e))?;
            st.done = true;
        }
        Ok(())
    }
}

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
        // A device or FIFO (/dev/null) takes any number of writers and is no input's file.
        if std::fs::metadata(o.path).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
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

/// Opens every output (see the module docs); `None` entries stay `None`. On failure the
/// temporary files this call created are removed and every target is left as it was.
pub fn open_all(outputs: &[Option<Wanted<'_>>]) -> anyhow::Result<Vec<Option<Sink>>> {
    let mut sinks = Vec::with_capacity(outputs.len());
    for o in outputs {
        let Some(o) = o else {
            sinks.push(None);
            continue;
        };
        if is_stdout(o.path) {
            sinks.push(Some(Sink::new(Box::new(io::stdout()), None)));
            continue;
        }
        // Sinks opened so far are dropped on an error, which removes their temporary files.
        sinks.push(Some(open_path(o)?));
    }
    Ok(sinks)
}

/// Opens one output file: a device or FIFO as it is, anything else staged beside its target.
fn open_path(o: &Wanted<'_>) -> anyhow::Result<Sink> {
    let cannot = |e: io::Error| {
        let hint = match e.kind() {
            io::ErrorKind::NotFound => " (does its directory exist?)",
            io::ErrorKind::PermissionDenied => " (permission denied: choose a writable place)",
            _ => "",
        };
        anyhow::anyhow!("{} {}: cannot create: {e}{hint}", o.flag, o.path.display())
    };
    let meta = std::fs::metadata(o.path).ok();
    if meta.as_ref().is_some_and(|m| !m.is_file()) {
        if meta.as_ref().is_some_and(|m| m.is_dir()) {
            anyhow::bail!(
                "{} {} is a directory; name a file to write",
                o.flag,
                o.path.display()
            );
        }
        // /dev/null, a FIFO, a terminal: nothing to stage or replace.
        let f = OpenOptions::new()
            .write(true)
            .open(o.path)
            .map_err(cannot)?;
        return Ok(Sink::new(Box::new(f), None));
    }
    // A symbolic link is followed: its target is what gets replaced.
    let target = match &meta {
        Some(_) => o.path.canonicalize().map_err(cannot)?,
        None => o.path.to_path_buf(),
    };
    let name = target
        .file_name()
        .ok_or_else(|| anyhow::anyhow!("{} {}: not a file name", o.flag, o.path.display()))?;
    let tmp = target.with_file_name(format!(
        ".{}.neardup-{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&tmp)
        .map_err(cannot)?;
    let staged = Staged {
        tmp,
        target,
        file: file.try_clone().map_err(cannot)?,
        done: false,
    };
    if let Some(m) = &meta {
        // The replacement keeps the permissions the file had.
        std::fs::set_permissions(&staged.tmp, m.permissions()).map_err(cannot)?;
    }
    Ok(Sink::new(Box::new(file), Some(staged)))
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
