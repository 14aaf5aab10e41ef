//! External sort of fixed-size keys: sorted runs spilled to files, then one k-way merge.
//!
//! Question: how are more keys sorted than memory holds? [`Sorter::push`] fills a buffer of at
//! most the budget's keys; a full buffer is sorted and written as a run (a temporary file in the
//! spill directory, deleted when the [`Sorter`] or its [`Merged`] stream is dropped).
//! [`Sorter::finish`] hands back every key in ascending order, from memory when nothing was
//! spilled, else merged from the runs (at most [`MAX_RUNS`] open at once: more runs are first
//! merged into fewer, a pass at a time).
//!
//! Invariant: the stream is the sorted multiset of the pushed keys, whatever the budget
//! (property test against `sort`).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::Path;

/// A fixed-size key with a byte encoding (little-endian) that runs hold.
pub(crate) trait Key: Copy + Ord + Send {
    /// Bytes a key takes in a run.
    const BYTES: usize;
    /// Writes the key.
    fn put(self, out: &mut Vec<u8>);
    /// Reads a key from exactly [`Key::BYTES`] bytes.
    fn get(b: &[u8]) -> Self;
}

impl Key for u64 {
    const BYTES: usize = 8;
    fn put(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn get(b: &[u8]) -> Self {
        u64::from_le_bytes(b.try_into().expect("8 bytes"))
    }
}

impl Key for u128 {
    const BYTES: usize = 16;
    fn put(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn get(b: &[u8]) -> Self {
        u128::from_le_bytes(b.try_into().expect("16 bytes"))
    }
}

/// Most runs merged at once (each holds a [`READ_BUFFER`] buffer and a file descriptor).
pub(crate) const MAX_RUNS: usize = 64;

/// The read buffer of each run during a merge.
const READ_BUFFER: usize = 64 << 10;

/// Sorts keys within a memory budget, spilling sorted runs to a directory.
pub(crate) struct Sorter<K: Key> {
    buf: Vec<K>,
    cap: usize,
    dir: std::path::PathBuf,
    runs: Vec<File>,
    spilled_bytes: u64,
}

impl<K: Key> Sorter<K> {
    /// A sorter holding at most `budget` bytes of keys in memory (at least 4 keys), spilling
    /// to anonymous files in `dir`.
    pub(crate) fn new(budget: usize, dir: &Path) -> Self {
        let cap = (budget / std::mem::size_of::<K>()).max(4);
        Sorter {
            buf: Vec::new(),
            cap,
            dir: dir.to_path_buf(),
            runs: Vec::new(),
            spilled_bytes: 0,
        }
    }

    /// Adds a key.
    pub(crate) fn push(&mut self, k: K) -> io::Result<()> {
        if self.buf.len() == self.cap {
            self.spill()?;
        }
        if self.buf.capacity() == 0 {
            self.buf.reserve_exact(self.cap);
        }
        self.buf.push(k);
        Ok(())
    }

    /// Bytes written to runs so far.
    pub(crate) fn spilled_bytes(&self) -> u64 {
        self.spilled_bytes
    }

    fn spill(&mut self) -> io::Result<()> {
        self.buf.sort_unstable();
        let run = write_run(&self.dir, self.buf.drain(..))?;
        self.spilled_bytes += run.1;
        self.runs.push(run.0);
        Ok(())
    }

    /// Every key pushed, in ascending order.
    pub(crate) fn finish(mut self) -> io::Result<Merged<K>> {
        if self.runs.is_empty() {
            self.buf.sort_unstable();
            return Ok(Merged {
                memory: std::mem::take(&mut self.buf).into_iter(),
                heap: BinaryHeap::new(),
                readers: Vec::new(),
            });
        }
        if !self.buf.is_empty() {
            self.spill()?;
        }
        self.buf = Vec::new();
        let mut runs = std::mem::take(&mut self.runs);
        while runs.len() > MAX_RUNS {
            let mut fewer = Vec::with_capacity(runs.len().div_ceil(MAX_RUNS));
            let mut rest = runs.into_iter();
            loop {
                let group: Vec<File> = rest.by_ref().take(MAX_RUNS).collect();
                if group.is_empty() {
                    break;
                }
                let merged = Merged::<K>::of_runs(group)?;
                let mut err = None;
                let run = write_run(
                    &self.dir,
                    merged.map_while(|r| r.map_err(|e| err = Some(e)).ok()),
                )?;
                if let Some(e) = err {
                    return Err(e);
                }
                self.spilled_bytes += run.1;
                fewer.push(run.0);
            }
            runs = fewer;
        }
        Merged::of_runs(runs)
    }
}

/// Writes keys to a new anonymous file and rewinds it: the file and its size in bytes.
fn write_run<K: Key>(dir: &Path, keys: impl Iterator<Item = K>) -> io::Result<(File, u64)> {
    let file = tempfile::tempfile_in(dir)?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    let mut bytes = Vec::with_capacity(64 << 10);
    let mut total = 0u64;
    for k in keys {
        k.put(&mut bytes);
        if bytes.len() >= 60 << 10 {
            w.write_all(&bytes)?;
            total += bytes.len() as u64;
            bytes.clear();
        }
    }
    w.write_all(&bytes)?;
    total += bytes.len() as u64;
    let mut file = w.into_inner().map_err(|e| e.into_error())?;
    io::Seek::rewind(&mut file)?;
    Ok((file, total))
}

/// The sorted stream of a [`Sorter`]'s keys.
pub(crate) struct Merged<K: Key> {
    memory: std::vec::IntoIter<K>,
    heap: BinaryHeap<Reverse<(K, usize)>>,
    readers: Vec<BufReader<File>>,
}

impl<K: Key> Merged<K> {
    fn of_runs(runs: Vec<File>) -> io::Result<Self> {
        let mut m = Merged {
            memory: Vec::new().into_iter(),
            heap: BinaryHeap::with_capacity(runs.len()),
            readers: runs
                .into_iter()
                .map(|f| BufReader::with_capacity(READ_BUFFER, f))
                .collect(),
        };
        for i in 0..m.readers.len() {
            if let Some(k) = read_key::<K>(&mut m.readers[i])? {
                m.heap.push(Reverse((k, i)));
            }
        }
        Ok(m)
    }
}

fn read_key<K: Key>(r: &mut BufReader<File>) -> io::Result<Option<K>> {
    let mut b = [0u8; 16];
    let b = &mut b[..K::BYTES];
    match r.read_exact(b) {
        Ok(()) => Ok(Some(K::get(b))),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(None),
        Err(e) => Err(e),
    }
}

impl<K: Key> Iterator for Merged<K> {
    type Item = io::Result<K>;
    fn next(&mut self) -> Option<io::Result<K>> {
        if self.readers.is_empty() {
            return self.memory.next().map(Ok);
        }
        let Reverse((k, i)) = self.heap.pop()?;
        match read_key::<K>(&mut self.readers[i]) {
            Ok(Some(next)) => self.heap.push(Reverse((next, i))),
            Ok(None) => {}
            Err(e) => return Some(Err(e)),
        }
        Some(Ok(k))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Whatever the budget (one run, several, more than MAX_RUNS), the stream is the sorted
        /// input.
        #[test]
        fn merged_stream_is_the_sorted_input(
            keys in proptest::collection::vec(any::<u64>(), 0..6000),
            budget_keys in 4usize..3000,
        ) {
            let dir = tempfile::tempdir().unwrap();
            let mut s = Sorter::<u64>::new(budget_keys * 8, dir.path());
            for &k in &keys {
                s.push(k).unwrap();
            }
            let got: Vec<u64> = s.finish().unwrap().map(Result::unwrap).collect();
            let mut want = keys.clone();
            want.sort_unstable();
            prop_assert_eq!(got, want);
        }
    }

    #[test]
    fn wide_keys_round_trip_through_runs() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Sorter::<u128>::new(0, dir.path());
        let keys: Vec<u128> = (0..100u128).map(|i| (i * 7919 % 101) << 70 | i).collect();
        for &k in &keys {
            s.push(k).unwrap();
        }
        assert!(s.spilled_bytes() > 0);
        let got: Vec<u128> = s.finish().unwrap().map(Result::unwrap).collect();
        let mut want = keys;
        want.sort_unstable();
        assert_eq!(got, want);
    }
}
