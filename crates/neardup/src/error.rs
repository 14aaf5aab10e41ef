//! The library's error type. Every variant's documentation says what went wrong and how to fix it.

use std::path::PathBuf;

/// Result alias used throughout the library.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong turning text into fingerprints.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Nothing was left of the document after normalisation (it was empty, only white space,
    /// only punctuation, or only markup). Such a document has no fingerprint: it cannot be a
    /// near-duplicate of anything meaningful. Fix: skip it (the CLI's `--skip-empty`), or check
    /// that the right text field is being read.
    #[error("empty document: no text left after normalisation ({input_bytes} bytes of input); empty documents have no fingerprint — skip them")]
    EmptyDocument {
        /// Size of the input before normalisation.
        input_bytes: usize,
    },
    /// The input bytes are not valid UTF-8. neardup reads UTF-8 only. Fix: convert the input,
    /// e.g. `iconv -f GB18030 -t UTF-8 file`.
    #[error("invalid UTF-8 at byte {offset}: neardup reads UTF-8 text; convert the input first (e.g. `iconv -f GB18030 -t UTF-8`)")]
    InvalidUtf8 {
        /// Byte offset of the first invalid sequence.
        offset: usize,
    },
    /// A line of a user-supplied IDF dictionary is malformed. Fix: every non-empty line must be
    /// `word idf`, with a finite, non-negative IDF (e.g. `新闻 8.1`).
    #[error("IDF dictionary {path}: line {line}: {reason}; every line must be `word idf` with a finite, non-negative number (e.g. `新闻 8.1`)")]
    IdfFormat {
        /// The dictionary file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong with the line.
        reason: String,
    },
    /// A file named in the configuration could not be read. Fix: check the path and permissions.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Batch dedup in bounded memory could not write or read its spill files. Fix: free disk
    /// space in `dir` (the spill files take about 4·num_perm + 16·bands bytes a document), or
    /// spill elsewhere (`neardup dedup --temp-dir`).
    #[error(
        "spill files in {dir}: {source}; free disk space there or spill elsewhere (--temp-dir)"
    )]
    Spill {
        /// The spill directory.
        dir: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A configuration value is out of range or inconsistent; the message names the setting and
    /// the accepted values.
    #[error("invalid configuration: {0}")]
    Config(String),
}
