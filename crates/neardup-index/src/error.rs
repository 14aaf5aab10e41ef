//! The crate's error type.
use std::path::PathBuf;

/// Everything that can go wrong in `neardup-index`. Each variant says what happened and how to
/// fix it; none of them is a bug in the caller's data handling that would justify a panic.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The query distance `k` is larger than the layout can answer exactly.
    ///
    /// A layout with `m` blocks and `c` key blocks per table answers distances up to `m - c`.
    /// Fix: lower `k`, or build the index with a layout for a larger distance, e.g.
    /// `Layout::new(k + 1, k)` or `Layout::plan(n, k, budget)`.
    #[error("distance {k} is out of range for layout {layout}: it answers at most {max}; use a smaller distance or a layout planned for {k} (e.g. Layout::plan(n, {k}, budget))")]
    DistanceTooLarge {
        /// The distance asked for.
        k: u32,
        /// The largest distance the layout supports.
        max: u32,
        /// The layout's name.
        layout: String,
    },

    /// The requested layout is not valid (e.g. zero blocks, more than 64 blocks, block lengths
    /// that do not add up to 64, or too many tables).
    ///
    /// Fix: use `Layout::new(m, k)` with `0 <= k < m <= 64` and a table count `C(m, k)` of at
    /// most [`crate::layout::MAX_TABLES`], or let `Layout::plan` choose.
    #[error("invalid layout: {reason}")]
    InvalidLayout {
        /// What is wrong with it.
        reason: String,
    },

    /// A layout name such as `m4` or `m5x2` could not be parsed.
    ///
    /// Fix: write `auto`, `mM` (M blocks, one key block per table) or `mMxC` (M blocks, C key
    /// blocks per table), e.g. `m4`, `m5x2`, `m6x3`.
    #[error("cannot parse layout name {name:?}: expected auto, mM or mMxC (e.g. m4, m5x2)")]
    BadLayoutName {
        /// The text given.
        name: String,
    },

    /// More entries than one index (or one all-pairs run) can address: positions are `u32`.
    ///
    /// Fix: split the input into parts of fewer than 2^32 - 1 fingerprints.
    #[error("too many fingerprints ({n}); at most {max} fit in one index; split the input")]
    TooManyEntries {
        /// How many were given.
        n: u64,
        /// The maximum.
        max: u64,
    },

    /// A file could not be opened, read or written.
    ///
    /// Fix: check that the path exists and is readable (or that its directory is writable).
    #[error("{path}: {source}")]
    Io {
        /// The file concerned.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },

    /// A raw fingerprint file's size is not a multiple of 8 bytes, so it is not a sequence of
    /// little-endian `u64`s (truncated, or not a fingerprint file at all).
    ///
    /// Fix: regenerate the file, or if it is text with one hex fingerprint per line give it a
    /// `.txt` or `.hex` extension (or select the hex format explicitly).
    #[error("{path}: size {size} bytes is not a multiple of 8, so it is not a raw little-endian u64 fingerprint file (truncated? if it is hex text, name it .txt or .hex)")]
    BadFileSize {
        /// The file concerned.
        path: PathBuf,
        /// Its size in bytes.
        size: u64,
    },

    /// A line of a hex fingerprint file is not a 64-bit hexadecimal number.
    ///
    /// Fix: each non-blank line must hold 1 to 16 hex digits, optionally prefixed by `0x`.
    #[error("{path}:{line}: {text:?} is not a 64-bit hex fingerprint (expected 1 to 16 hex digits, optional 0x prefix)")]
    BadHexLine {
        /// The file concerned.
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// The offending text (truncated to 80 characters).
        text: String,
    },
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
