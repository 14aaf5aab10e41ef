//! How does a store file appear on disk, and how is it read back?
//!
//! Invariants:
//! * A segment becomes visible atomically: it is written as `*.tmp` with its
//!   header, fsynced, renamed into place, and the directory is fsynced; a
//!   crash at any point leaves either no segment or a complete header.
//! * A mapped file is never rewritten in place by the store (recovery only
//!   truncates a torn tail after dropping its mapping).

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use super::fp;
use crate::error::{Error, IoContext, Result};
use crate::format::{self, SEGMENT_MAGIC};
use crate::Lsn;

/// Fsyncs the directory, making renames and deletions in it durable.
pub(super) fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir).and_then(|d| d.sync_all()).at(dir)
}

/// Creates segment `base` atomically: temp file, header, fsync, rename, dir fsync.
pub(super) fn create_segment(dir: &Path, base: Lsn, config: &[u8]) -> Result<(File, PathBuf)> {
    let path = dir.join(format::segment_name(base));
    let tmp = dir.join(format::segment_name(base) + ".tmp");
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&tmp)
        .at(&tmp)?;
    f.write_all(&format::encode_header(&SEGMENT_MAGIC, base, config))
        .at(&tmp)?;
    f.sync_all().at(&tmp)?;
    fp("rotate-before-rename").at(&tmp)?;
    fs::rename(&tmp, &path).at(&path)?;
    fp("rotate-after-rename-before-dir-sync").at(dir)?;
    sync_dir(dir)?;
    drop(f);
    let f = OpenOptions::new().append(true).open(&path).at(&path)?;
    Ok((f, path))
}

/// Maps `path` read-only; `None` for an empty file (which cannot be mapped).
pub(super) fn map_file(path: &Path) -> Result<Option<Mmap>> {
    let f = File::open(path).at(path)?;
    let len = f.metadata().at(path)?.len();
    if len == 0 {
        return Ok(None);
    }
    // SAFETY: the directory lock keeps other neardup processes from modifying
    // the file; the store itself never rewrites bytes that were mapped.
    let map = unsafe { Mmap::map(&f) }.at(path)?;
    Ok(Some(map))
}

/// Maps the store file at `path` and checks its header: `magic`, format version, the LSN its
/// name gives and the owner's `config`; returns the mapping and the header's length (where
/// the body starts).
pub(super) fn map_checked(
    path: &Path,
    magic: &[u8; 8],
    lsn: Lsn,
    config: &[u8],
) -> Result<(Mmap, usize)> {
    let map = map_file(path)?.ok_or_else(|| Error::NotStoreFile { path: path.into() })?;
    let h = format::decode_header(&map, magic, path)?;
    if h.lsn != lsn {
        return Err(Error::CorruptHeader {
            path: path.into(),
            reason: format!("header LSN {} disagrees with the file name", h.lsn),
        });
    }
    if h.config != config {
        return Err(Error::ConfigMismatch {
            path: path.into(),
            stored: h.config.to_vec(),
        });
    }
    let len = h.len;
    Ok((map, len))
}
