//! How is state as of an LSN published, and how is it read back? Snapshot
//! writing (streamed, checksummed, atomically renamed), the clean-up of what
//! it supersedes, and loading + verifying the newest snapshot on open.
//!
//! Invariants:
//! * A snapshot file is visible only complete: body streamed into `*.tmp`
//!   behind a header, CRC32 trailer appended, file fsynced, renamed, directory
//!   fsynced. A failed write removes the temp file and changes nothing.
//! * The log is synced through `lsn` before the snapshot is written, and only
//!   non-active segments whose successor starts at or before `lsn + 1` are
//!   deleted afterwards: every record after the snapshot stays in the log.
//! * A loaded snapshot's header LSN matches its file name, its config matches
//!   the store's, and its body matches the trailer's length and CRC32;
//!   otherwise opening fails (no silent fall-back to older state).

use std::fs::{self, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use super::commit::Shared;
use super::files::{map_checked, sync_dir};
use super::{fp, lock, SnapshotInfo};
use crate::error::{Error, IoContext, Result};
use crate::format::{self, SNAPSHOT_MAGIC, TRAILER_LEN};
use crate::recovered::Snapshot;
use crate::Lsn;

impl Shared {
    /// Writes `snapshot-<lsn>.snap` and deletes what it supersedes (see
    /// [`Store::snapshot`](super::Store::snapshot); the caller serialises
    /// snapshots).
    pub(super) fn snapshot<F>(&self, lsn: Lsn, write_body: F) -> Result<SnapshotInfo>
    where
        F: FnOnce(&mut dyn Write) -> io::Result<()>,
    {
        self.check_snapshot_lsn(lsn)?;
        self.sync()?;
        let (path, body_bytes) = self.publish_snapshot(lsn, write_body)?;
        let old_snapshot = {
            let mut st = lock(&self.state);
            std::mem::replace(&mut st.snapshot_lsn, lsn)
        };
        fp("snapshot-before-cleanup").at(&self.dir)?;
        let segments_deleted = self.delete_superseded(lsn, old_snapshot)?;
        Ok(SnapshotInfo {
            lsn,
            path,
            body_bytes,
            segments_deleted,
        })
    }

    /// Refuses a closed or failed store, and an `lsn` outside
    /// `newest snapshot ..= last appended`.
    fn check_snapshot_lsn(&self, lsn: Lsn) -> Result<()> {
        let st = lock(&self.state);
        if let Some(e) = st.refusal() {
            return Err(e);
        }
        let last = st.next_lsn - 1;
        if lsn > last || lsn < st.snapshot_lsn {
            return Err(Error::InvalidSnapshotLsn {
                requested: lsn,
                newest: st.snapshot_lsn,
                last,
            });
        }
        Ok(())
    }

    /// Writes the snapshot file atomically; returns its path and body length.
    /// On failure the temp file is removed.
    fn publish_snapshot<F>(&self, lsn: Lsn, write_body: F) -> Result<(PathBuf, u64)>
    where
        F: FnOnce(&mut dyn Write) -> io::Result<()>,
    {
        let dir = &self.dir;
        let path = dir.join(format::snapshot_name(lsn));
        let tmp = dir.join(format::snapshot_name(lsn) + ".tmp");
        match write_snapshot_file(dir, &tmp, &path, lsn, &self.opts.config, write_body) {
            Ok(n) => Ok((path, n)),
            Err(e) => {
                let _ = fs::remove_file(&tmp);
                Err(e)
            }
        }
    }

    /// Deletes the log segments and the older snapshot that the snapshot at
    /// `lsn` makes obsolete; returns the number of segments deleted.
    fn delete_superseded(&self, lsn: Lsn, old_snapshot: Lsn) -> Result<usize> {
        let dir = &self.dir;
        let mut deleted = 0;
        let mut obsolete = Vec::new();
        {
            // Only non-active segments whose successor starts at or before lsn + 1.
            let mut segs = lock(&self.segments);
            while segs.len() >= 2 && segs[1].0 <= lsn + 1 {
                obsolete.push(segs.remove(0).1);
                deleted += 1;
            }
        }
        if old_snapshot != lsn && old_snapshot > 0 {
            obsolete.push(dir.join(format::snapshot_name(old_snapshot)));
        }
        for (i, p) in obsolete.iter().enumerate() {
            if i == 1 {
                fp("snapshot-mid-cleanup").at(dir)?;
            }
            match fs::remove_file(p) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(p, e)),
            }
        }
        if !obsolete.is_empty() {
            sync_dir(dir)?;
        }
        Ok(deleted)
    }
}

/// Streams header, body and trailer into `tmp`, fsyncs it, renames it to
/// `path` and fsyncs `dir`; returns the body length.
fn write_snapshot_file<F>(
    dir: &Path,
    tmp: &Path,
    path: &Path,
    lsn: Lsn,
    config: &[u8],
    write_body: F,
) -> Result<u64>
where
    F: FnOnce(&mut dyn Write) -> io::Result<()>,
{
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(tmp)
        .at(tmp)?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    w.write_all(&format::encode_header(&SNAPSHOT_MAGIC, lsn, config))
        .at(tmp)?;
    let mut body = CrcWriter {
        inner: w,
        hasher: crc32fast::Hasher::new(),
        len: 0,
    };
    write_body(&mut body).at(tmp)?;
    let CrcWriter {
        inner: mut w,
        hasher,
        len,
    } = body;
    w.write_all(&format::encode_trailer(len, hasher.finalize()))
        .at(tmp)?;
    let file = w.into_inner().map_err(|e| e.into_error()).at(tmp)?;
    fp("snapshot-before-sync").at(tmp)?;
    file.sync_all().at(tmp)?;
    fp("before-rename").at(tmp)?;
    fs::rename(tmp, path).at(path)?;
    fp("after-rename-before-dir-sync").at(dir)?;
    sync_dir(dir)?;
    Ok(len)
}

/// Maps and verifies the snapshot at `path`, named for `lsn`, written under `config`.
pub(super) fn load_snapshot(path: &Path, lsn: Lsn, config: &[u8]) -> Result<Snapshot> {
    let (map, hl) = map_checked(path, &SNAPSHOT_MAGIC, lsn, config)?;
    let corrupt = |reason: String| Error::CorruptSnapshot {
        path: path.into(),
        reason,
    };
    if map.len() < hl + TRAILER_LEN {
        return Err(corrupt("file ends before the trailer".into()));
    }
    let (body_len, crc) = format::decode_trailer(&map[map.len() - TRAILER_LEN..])
        .ok_or_else(|| corrupt("bad trailer magic".into()))?;
    let body = hl..map.len() - TRAILER_LEN;
    if body_len != body.len() as u64 {
        return Err(corrupt(format!(
            "trailer says {body_len} body bytes, file holds {}",
            body.len()
        )));
    }
    if crc32fast::hash(&map[body.clone()]) != crc {
        return Err(corrupt("body checksum mismatch".into()));
    }
    Ok(Snapshot {
        lsn,
        path: path.into(),
        map,
        body,
    })
}

/// Writer wrapper that checksums and counts the snapshot body.
struct CrcWriter<W> {
    inner: W,
    hasher: crc32fast::Hasher,
    len: u64,
}

impl<W: Write> Write for CrcWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.len += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}
