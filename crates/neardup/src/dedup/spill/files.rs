//! The spill files a run reads back at random: signatures (document `d` at byte
//! `4·num_perm·d`) and decided outcomes (16 bytes a document), with positioned reads that share
//! a file between readers.
//!
//! Invariant: what is read is what was written, little-endian, at a fixed stride.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

/// The signature file: document `d`'s signature at byte `4·num_perm·d`.
pub(super) struct Signatures {
    pub(super) file: File,
    pub(super) num_perm: usize,
}

impl Signatures {
    pub(super) fn read(&self, doc: u32, out: &mut [u32]) -> std::io::Result<()> {
        let mut bytes = [0u8; 4 * 1024];
        let len = 4 * self.num_perm;
        let mut at = doc as u64 * len as u64;
        for chunk in out.chunks_mut(1024) {
            let b = &mut bytes[..4 * chunk.len()];
            read_exact_at(&self.file, b, at)?;
            for (v, w) in chunk.iter_mut().zip(b.chunks_exact(4)) {
                *v = u32::from_le_bytes(w.try_into().expect("4 bytes"));
            }
            at += b.len() as u64;
        }
        Ok(())
    }
}

/// Reads exactly `buf.len()` bytes of `f` at byte `at`, without moving its cursor (so readers
/// may share the file): the spill files' random access, on every platform.
///
/// # Errors
/// The read failed or the file ends before.
#[cfg(unix)]
pub fn read_exact_at(f: &File, buf: &mut [u8], at: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(f, buf, at)
}

/// Reads exactly `buf.len()` bytes of `f` at byte `at` (see the Unix version).
///
/// # Errors
/// The read failed or the file ends before.
#[cfg(windows)]
pub fn read_exact_at(f: &File, mut buf: &mut [u8], mut at: u64) -> std::io::Result<()> {
    while !buf.is_empty() {
        match std::os::windows::fs::FileExt::seek_read(f, buf, at)? {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => {
                buf = &mut buf[n..];
                at += n as u64;
            }
        }
    }
    Ok(())
}

/// A decided document as the outcome file holds it (16 bytes).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Outcome {
    /// The cluster's smallest member at decision time, when not this document.
    pub(super) duplicate_of: Option<u32>,
    /// The strongest earlier match and its estimated Jaccard.
    pub(super) matched: Option<(u32, f64)>,
}

const NONE: u32 = u32::MAX;
pub(super) const OUTCOME_BYTES: usize = 16;

pub(super) struct OutcomeWriter {
    w: BufWriter<File>,
}

impl OutcomeWriter {
    pub(super) fn new(dir: &Path) -> std::io::Result<Self> {
        Ok(OutcomeWriter {
            w: BufWriter::with_capacity(1 << 20, tempfile::tempfile_in(dir)?),
        })
    }

    pub(super) fn push(&mut self, o: Outcome) -> std::io::Result<()> {
        let mut b = [0u8; OUTCOME_BYTES];
        b[..4].copy_from_slice(&o.duplicate_of.unwrap_or(NONE).to_le_bytes());
        let (m, sim) = o.matched.unwrap_or((NONE, 0.0));
        b[4..8].copy_from_slice(&m.to_le_bytes());
        b[8..].copy_from_slice(&sim.to_le_bytes());
        self.w.write_all(&b)
    }

    pub(super) fn finish(self) -> std::io::Result<File> {
        self.w.into_inner().map_err(|e| e.into_error())
    }
}

pub(super) fn decode(b: &[u8]) -> Outcome {
    let u = |r: std::ops::Range<usize>| u32::from_le_bytes(b[r].try_into().expect("4 bytes"));
    let (d, m) = (u(0..4), u(4..8));
    let sim = f64::from_le_bytes(b[8..16].try_into().expect("8 bytes"));
    Outcome {
        duplicate_of: (d != NONE).then_some(d),
        matched: (m != NONE).then_some((m, sim)),
    }
}
