//! Reading and writing fingerprint files.
//!
//! Two formats:
//! - **raw**: little-endian `u64`s, 8 bytes each, nothing else. A size that is not a multiple of
//!   8 is an error ([`Error::BadFileSize`]).
//! - **hex**: text, one fingerprint per line as 1 to 16 hex digits with an optional `0x`/`0X`
//!   prefix; surrounding spaces and `\r` are ignored; blank lines are skipped (so a fingerprint's
//!   position is its index among the non-blank lines). A bad line is an error naming the file and
//!   its 1-based line number ([`Error::BadHexLine`]). Written as 16 lowercase digits, no prefix.
//!
//! [`Format::Auto`] detection: the extensions `.txt`, `.hex`, `.tsv`, `.csv` mean hex; `.bin`,
//! `.raw`, `.u64`, `.fp`, `.fps` mean raw; otherwise the file is hex if its first 4 KiB are all
//! hex digits, `x`, `X` and ASCII whitespace and either contain a newline or the file size is not
//! a multiple of 8; else raw. An empty file holds no fingerprints.
//!
//! Raw files are streamed in 1 MiB chunks straight into the result vector (no second copy); hex
//! files are read line by line through a buffer.
use crate::error::{Error, Result};
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::Path;

/// A fingerprint file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Format {
    /// Detect from extension, then content (see the module docs).
    #[default]
    Auto,
    /// Little-endian `u64`s.
    Raw,
    /// One hex fingerprint per line.
    Hex,
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn by_extension(path: &Path) -> Option<Format> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    match ext.as_str() {
        "txt" | "hex" | "tsv" | "csv" => Some(Format::Hex),
        "bin" | "raw" | "u64" | "fp" | "fps" => Some(Format::Raw),
        _ => None,
    }
}

/// Decides the format of an existing file (never returns [`Format::Auto`]).
///
/// # Errors
/// [`Error::Io`] if the file cannot be read.
pub fn detect(path: &Path) -> Result<Format> {
    if let Some(f) = by_extension(path) {
        return Ok(f);
    }
    let mut file = File::open(path).map_err(io_err(path))?;
    let size = file.metadata().map_err(io_err(path))?.len();
    let mut head = Vec::with_capacity(4096);
    (&mut file)
        .take(4096)
        .read_to_end(&mut head)
        .map_err(io_err(path))?;
    let texty = !head.is_empty()
        && head
            .iter()
            .all(|&b| b.is_ascii_hexdigit() || b == b'x' || b == b'X' || b.is_ascii_whitespace());
    Ok(if texty && (head.contains(&b'\n') || size % 8 != 0) {
        Format::Hex
    } else {
        Format::Raw
    })
}

/// Reads a fingerprint file, detecting its format.
///
/// # Errors
/// [`Error::Io`], [`Error::BadFileSize`] or [`Error::BadHexLine`].
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let p = dir.path().join("fps.txt");
/// std::fs::write(&p, "0x00ff\nabcdef0123456789\n").unwrap();
/// assert_eq!(neardup_index::fpfile::read(&p).unwrap(), vec![0xff, 0xabcdef0123456789]);
/// ```
pub fn read(path: &Path) -> Result<Vec<u64>> {
    read_with(path, Format::Auto)
}

/// Reads a fingerprint file in the given format.
///
/// # Errors
/// [`Error::Io`], [`Error::BadFileSize`] or [`Error::BadHexLine`].
pub fn read_with(path: &Path, format: Format) -> Result<Vec<u64>> {
    match format {
        Format::Auto => read_with(path, detect(path)?),
        Format::Raw => read_raw(path),
        Format::Hex => read_hex(path),
    }
}

fn read_raw(path: &Path) -> Result<Vec<u64>> {
    let mut file = File::open(path).map_err(io_err(path))?;
    let size = file.metadata().map_err(io_err(path))?.len();
    if size % 8 != 0 {
        return Err(Error::BadFileSize {
            path: path.to_path_buf(),
            size,
        });
    }
    let n = (size / 8) as usize;
    let mut out = Vec::with_capacity(n);
    let mut buf = vec![0u8; 1 << 20];
    let mut left = size as usize;
    while left > 0 {
        let take = left.min(buf.len());
        file.read_exact(&mut buf[..take]).map_err(io_err(path))?;
        out.extend(
            buf[..take]
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8]))),
        );
        left -= take;
    }
    Ok(out)
}

/// Parses one hex fingerprint (1 to 16 digits, optional `0x`), `None` if malformed.
pub fn parse_hex(s: &str) -> Option<u64> {
    let s = s.trim();
    let digits = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    if digits.is_empty() || digits.len() > 16 || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(digits, 16).ok()
}

fn read_hex(path: &Path) -> Result<Vec<u64>> {
    let file = File::open(path).map_err(io_err(path))?;
    let mut r = BufReader::with_capacity(1 << 20, file);
    let mut out = Vec::new();
    let mut line = String::new();
    let mut no = 0u64;
    loop {
        line.clear();
        let got = match r.read_line(&mut line) {
            Ok(g) => g,
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                return Err(Error::BadHexLine {
                    path: path.to_path_buf(),
                    line: no + 1,
                    text: "<not UTF-8>".into(),
                })
            }
            Err(e) => return Err(io_err(path)(e)),
        };
        if got == 0 {
            return Ok(out);
        }
        no += 1;
        if line.trim().is_empty() {
            continue;
        }
        match parse_hex(&line) {
            Some(v) => out.push(v),
            None => {
                return Err(Error::BadHexLine {
                    path: path.to_path_buf(),
                    line: no,
                    text: line.trim().chars().take(80).collect(),
                })
            }
        }
    }
}

/// Writes `fps` to `path` in `format` (`Auto` means hex for the hex extensions, raw otherwise).
///
/// # Errors
/// [`Error::Io`] if the file cannot be written.
pub fn write(path: &Path, fps: &[u64], format: Format) -> Result<()> {
    let format = match format {
        Format::Auto => by_extension(path).unwrap_or(Format::Raw),
        f => f,
    };
    let file = File::create(path).map_err(io_err(path))?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    let res: std::io::Result<()> = (|| {
        match format {
            Format::Hex => {
                for f in fps {
                    writeln!(w, "{f:016x}")?;
                }
            }
            _ => {
                for f in fps {
                    w.write_all(&f.to_le_bytes())?;
                }
            }
        }
        w.flush()
    })();
    res.map_err(io_err(path))
}
