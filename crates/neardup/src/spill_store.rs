//! Append-only bytes that stay in memory, or spill to an anonymous file of a directory.
//!
//! The engine keeps, per time segment, bytes that a decision reads only for the few candidates
//! it finds: each document's encoded sketch (under the template veto its distinct part — the
//! containment guard's two samples, ~1.4 KB — and its line keys; what snapshots write), and
//! the short path's confirmation texts. Spilled ([`SpillStore::spilled`]), they go to an
//! unlinked file (gone however the process ends: nothing to recover, the log and snapshots are
//! the record) through a buffer of [`TAIL_BYTES`], and are read back through a read-only
//! mapping of the file: the page cache holds them, not the heap, and the kernel can drop them
//! under memory pressure. [`SpillStore::release_pages`] lets go of the pages reads mapped (the
//! engine calls it after snapshots and at most once a minute).
//! `neardup dedup` spills the short path's texts too ([`Detector::spill_texts`](crate::detect::Detector::spill_texts),
//! in `--temp-dir`), and lets go of the mapped pages between batches; the library's batch
//! [`Deduper`](crate::dedup::Deduper) keeps its stores in memory unless asked.
//!
//! A write that fails (a full disk) leaves the store in memory from then on: nothing is lost
//! and nothing refused; the failure is logged once.

use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use memmap2::{Mmap, MmapOptions};

/// Bytes appended in memory before they are written to the file together (a few hundred in
/// unit tests, so that the engine's own tests read most sketches back from files).
pub(crate) const TAIL_BYTES: usize = if cfg!(test) { 512 } else { 64 * 1024 };

/// The smallest mapping of a spill file; mappings grow by doubling.
const MIN_MAP_BYTES: u64 = 1 << 20;

/// An append-only byte store ([module docs](self)).
#[derive(Default)]
pub(crate) struct SpillStore {
    /// Everything appended (in memory), or what is not in the file yet (spilled).
    tail: Vec<u8>,
    spill: Option<Spill>,
}

/// The file part of a spilled store.
struct Spill {
    file: File,
    /// Bytes written to the file: offsets below it are read from `map`.
    written: u64,
    /// A read-only mapping of at least `written` bytes (`None` while nothing is written).
    map: Option<Mmap>,
    /// Set after a write failed: everything from `written` on stays in `tail`.
    failed: bool,
    /// Whether a read went through `map` since the pages were last released.
    read: AtomicBool,
}

impl SpillStore {
    /// A store that keeps everything in memory.
    pub(crate) fn in_memory() -> SpillStore {
        SpillStore::default()
    }

    /// A store that spills to an anonymous file in `dir` (in memory if none can be made there,
    /// which is logged).
    pub(crate) fn spilled(dir: &Path) -> SpillStore {
        match tempfile::tempfile_in(dir) {
            Ok(file) => SpillStore {
                tail: Vec::new(),
                spill: Some(Spill {
                    file,
                    written: 0,
                    map: None,
                    failed: false,
                    read: AtomicBool::new(false),
                }),
            },
            Err(e) => {
                tracing::warn!(
                    dir = %dir.display(),
                    error = %e,
                    "cannot create a spill file; its bytes stay in memory"
                );
                SpillStore::in_memory()
            }
        }
    }

    /// This store spilling to an anonymous file in `dir` from now on, with the bytes it holds
    /// in memory written there too; a store that spills already stays as it is.
    pub(crate) fn into_spilled(self, dir: &Path) -> SpillStore {
        if self.spill.is_some() {
            return self;
        }
        let mut spilled = SpillStore::spilled(dir);
        if !self.tail.is_empty() {
            spilled.append(|b| b.extend_from_slice(&self.tail));
        }
        spilled
    }

    /// Bytes appended.
    pub(crate) fn len(&self) -> u64 {
        self.spill.as_ref().map_or(0, |s| s.written) + self.tail.len() as u64
    }

    /// Appends what `write` writes to the buffer it is given; returns the end offset of the
    /// store afterwards. A spilled store writes its buffer out once it holds [`TAIL_BYTES`].
    pub(crate) fn append(&mut self, write: impl FnOnce(&mut Vec<u8>)) -> u64 {
        write(&mut self.tail);
        let end = self.len();
        if let Some(s) = self.spill.as_mut() {
            if !s.failed && self.tail.len() >= TAIL_BYTES {
                s.write_out(&mut self.tail);
            }
        }
        end
    }

    /// The bytes at `range` (offsets as [`SpillStore::append`] returns them). A range never
    /// straddles the file and the buffer: a buffer is written out whole.
    pub(crate) fn get(&self, range: std::ops::Range<u64>) -> &[u8] {
        let written = self.spill.as_ref().map_or(0, |s| s.written);
        if range.start >= written {
            return &self.tail[(range.start - written) as usize..(range.end - written) as usize];
        }
        let spill = self
            .spill
            .as_ref()
            .expect("bytes below `written` are in the file");
        if !spill.read.load(Ordering::Relaxed) {
            spill.read.store(true, Ordering::Relaxed);
        }
        let map = spill
            .map
            .as_ref()
            .expect("bytes below `written` were written to the mapped file");
        &map[range.start as usize..range.end as usize]
    }

    /// Lets the pages of the spill file that reads brought into the process go (a snapshot
    /// reads them all): they stay in the page cache, and a later read maps them again. Does
    /// nothing when nothing was read since the last call.
    pub(crate) fn release_pages(&self) {
        let Some(spill) = self.spill.as_ref() else {
            return;
        };
        if !spill.read.swap(false, Ordering::Relaxed) {
            return;
        }
        if let Some(map) = spill.map.as_ref() {
            // SAFETY: the mapping is a shared, read-only mapping of a file: dropping its pages
            // changes no byte a read sees (they are read again from the file), for readers at
            // the same time too.
            let _ = unsafe { map.unchecked_advise(memmap2::UncheckedAdvice::DontNeed) };
        }
    }

    /// Heap bytes (the buffer, or everything in memory).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.tail.capacity()
    }

    /// Bytes in the spill file.
    pub(crate) fn spilled_bytes(&self) -> u64 {
        self.spill.as_ref().map_or(0, |s| s.written)
    }
}

impl Clone for SpillStore {
    /// A copy in memory (a detector cloned for another use keeps its bytes on the heap).
    fn clone(&self) -> SpillStore {
        let mut tail = Vec::with_capacity(self.len() as usize);
        if let Some(map) = self.spill.as_ref().and_then(|s| s.map.as_ref()) {
            tail.extend_from_slice(&map[..self.spilled_bytes() as usize]);
        }
        tail.extend_from_slice(&self.tail);
        SpillStore { tail, spill: None }
    }
}

impl std::fmt::Debug for SpillStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpillStore")
            .field("len", &self.len())
            .field("spilled", &self.spilled_bytes())
            .finish()
    }
}

impl Spill {
    /// Writes `tail` at the end of the file and empties it, mapping the file further when
    /// needed; on a failure keeps it and every later byte in memory.
    fn write_out(&mut self, tail: &mut Vec<u8>) {
        let end = self.written + tail.len() as u64;
        let result = write_all_at(&self.file, tail, self.written).and_then(|()| {
            if self.map.as_ref().is_some_and(|m| m.len() as u64 >= end) {
                return Ok(());
            }
            let mapped = self.map.as_ref().map_or(0, |m| m.len() as u64);
            let len = (mapped * 2).max(end).max(MIN_MAP_BYTES);
            // SAFETY: the file is this store's own, unlinked and never truncated; the mapping
            // is read only below `written`, bytes the file holds and nothing rewrites.
            let map = unsafe { MmapOptions::new().len(len as usize).map(&self.file)? };
            self.map = Some(map);
            Ok(())
        });
        match result {
            Ok(()) => {
                self.written = end;
                tail.clear();
            }
            Err(e) => {
                tracing::warn!(
                    error = %e,
                    "cannot write to a spill file; later bytes stay in memory"
                );
                self.failed = true;
            }
        }
    }
}

/// Writes all of `buf` at offset `at` of `file`.
fn write_all_at(file: &File, buf: &[u8], at: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::write_all_at(file, buf, at)
    }
    #[cfg(not(unix))]
    {
        use std::io::{Seek, SeekFrom, Write};
        let mut f = file;
        f.seek(SeekFrom::Start(at))?;
        f.write_all(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Appends `n` records of pseudo-random lengths to `store`, each filled with its number;
    /// returns their ranges.
    fn fill(store: &mut SpillStore, n: usize) -> Vec<std::ops::Range<u64>> {
        let mut ranges = Vec::new();
        let mut start = store.len();
        for i in 0..n {
            let len = (i * 7919) % 3000;
            let end = store.append(|b| b.extend(std::iter::repeat_n((i % 251) as u8, len)));
            ranges.push(start..end);
            start = end;
        }
        ranges
    }

    fn check(store: &SpillStore, ranges: &[std::ops::Range<u64>]) {
        for (i, r) in ranges.iter().enumerate() {
            let b = store.get(r.clone());
            assert_eq!(b.len() as u64, r.end - r.start, "record {i}");
            assert!(b.iter().all(|&x| x == (i % 251) as u8), "record {i}");
        }
    }

    #[test]
    fn spilled_records_read_back_as_written_across_remaps() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = SpillStore::spilled(dir.path());
        // ~1.5 KB a record, ~4.5 MB in all: past the first mapping and many buffers.
        let ranges = fill(&mut store, 3000);
        check(&store, &ranges);
        assert!(
            store.spilled_bytes() > 2 * MIN_MAP_BYTES,
            "{}",
            store.spilled_bytes()
        );
        assert!(store.heap_bytes() < 2 * TAIL_BYTES + 3000);
        // The file is unlinked: nothing is left in the directory.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn released_pages_read_back_the_same_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = SpillStore::spilled(dir.path());
        let ranges = fill(&mut store, 2000);
        check(&store, &ranges);
        let read = |s: &SpillStore| s.spill.as_ref().unwrap().read.load(Ordering::Relaxed);
        assert!(read(&store));
        store.release_pages();
        assert!(!read(&store));
        check(&store, &ranges);
        // More records after a release land in the same file and mapping.
        let more = fill(&mut store, 2000);
        store.release_pages();
        check(&store, &more);
    }

    /// A store moved to a file keeps what it held in memory, and a store moved twice stays
    /// in its first file.
    #[test]
    fn a_store_moved_to_a_file_keeps_its_records() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = SpillStore::in_memory();
        let first = fill(&mut store, 300);
        let mut store = store.into_spilled(dir.path());
        let more = fill(&mut store, 300);
        let store = store.into_spilled(dir.path());
        assert!(store.spilled_bytes() > 0);
        check(&store, &first);
        check(&store, &more);
        assert_eq!(store.len(), more.last().unwrap().end);
    }

    #[test]
    fn in_memory_records_read_back_as_written() {
        let mut store = SpillStore::in_memory();
        let ranges = fill(&mut store, 500);
        check(&store, &ranges);
        assert_eq!(store.spilled_bytes(), 0);
        assert_eq!(store.len(), ranges.last().unwrap().end);
    }

    #[test]
    fn a_spill_file_that_cannot_be_written_keeps_the_records_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = SpillStore::spilled(dir.path());
        let first = fill(&mut store, 200);
        // A file opened read only: every later write fails.
        let ro = tempfile::NamedTempFile::new_in(dir.path()).unwrap();
        let written = store.spilled_bytes();
        let s = store.spill.as_mut().unwrap();
        let kept = std::mem::replace(&mut s.file, File::open(ro.path()).unwrap());
        // The bytes already written are read through the existing mapping.
        let more = fill(&mut store, 200);
        assert_eq!(store.spilled_bytes(), written, "nothing more is written");
        assert!(store.spill.as_ref().unwrap().failed);
        check(&store, &first);
        check(&store, &more);
        drop(kept);
    }

    #[test]
    fn a_directory_where_no_file_can_be_made_keeps_the_records_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = SpillStore::spilled(&dir.path().join("missing"));
        let ranges = fill(&mut store, 300);
        check(&store, &ranges);
        assert_eq!(store.spilled_bytes(), 0);
    }
}
