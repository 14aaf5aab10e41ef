//! All pairs within distance `k` in one set (self-join), table by table: each table is
//! radix-partitioned on the top bits of its key, and each partition grouped by the rest of the
//! key (a bucket array, or a sort for long keys); a pair is reported only from its canonical
//! table, so once.
use crate::error::Result;
use crate::index::check_len;
use crate::layout::{Layout, TableSpec};
use rayon::prelude::*;

/// Every pair `(i, j, distance)` with `i < j` positions in `fps` and `hamming(fps[i], fps[j]) <= k`,
/// sorted. The layout is chosen by [`Layout::plan_self_join`].
///
/// # Errors
/// [`crate::Error::DistanceTooLarge`] if `k >= 64`, [`crate::Error::TooManyEntries`] for 2^32 or
/// more fingerprints.
pub fn all_pairs(fps: &[u64], k: u32) -> Result<Vec<(u32, u32, u8)>> {
    let layout = Layout::plan_self_join(fps.len() as u64, k)?;
    all_pairs_with(fps, &layout, k)
}

/// [`all_pairs`] with an explicit layout. For each table (one at a time, in buffers reused from
/// table to table: about 24 bytes per fingerprint beyond the input), the permuted fingerprints are radix-partitioned on
/// the top (at most 16) bits of the table's key, each partition is sorted on its own (a few
/// hundred entries at 50 M, in cache), and pairs within each group sharing the whole key are
/// compared and reported from their canonical table only.
///
/// # Errors
/// [`crate::Error::DistanceTooLarge`] if `k > layout.max_distance()`,
/// [`crate::Error::TooManyEntries`] for 2^32 or more fingerprints.
pub fn all_pairs_with(fps: &[u64], layout: &Layout, k: u32) -> Result<Vec<(u32, u32, u8)>> {
    layout.check_distance(k)?;
    check_len(fps.len())?;
    let kb = layout.key_blocks() as u32;
    let masks = layout.original_block_masks();
    let mut out: Vec<(u32, u32, u8)> = Vec::new();
    let mut parts = Partitioned::new(fps.len());
    for s in layout.specs() {
        if s.max_block >= kb + k {
            continue;
        }
        parts.fill(fps, s.key_bits.min(PARTITION_BITS), s);
        let shift = 64 - s.key_bits;
        let key = |p: u64| if shift >= 64 { 0 } else { p >> shift };
        // Below the partition's bits, the rest of the key indexes a bucket array directly when
        // it is small (chains of equal keys, no sort); otherwise partitions are sorted.
        let rest = s.key_bits - parts.bits;
        let found: Vec<Vec<(u32, u32, u8)>> = (0..parts.len())
            .into_par_iter()
            .with_min_len(16)
            .fold(
                || (Vec::new(), Groups::new(rest), Vec::new()),
                |state: Worker, p| {
                    let (mut scratch, mut groups, mut res) = state;
                    parts.gather(p, &mut scratch);
                    let mut pair = |(pa, ia): (u64, u32), (pb, ib): (u64, u32)| {
                        let dist = (pa ^ pb).count_ones();
                        if dist <= k {
                            let diff = fps[ia as usize] ^ fps[ib as usize];
                            if layout.canonical_key_set(&masks, diff) == s.key_set {
                                res.push((ia.min(ib), ia.max(ib), dist as u8));
                            }
                        }
                    };
                    groups.each_pair(&mut scratch, key, &mut pair);
                    (scratch, groups, res)
                },
            )
            .map(|(_, _, res)| res)
            .collect();
        for f in found {
            out.extend(f);
        }
    }
    drop(parts);
    out.par_sort_unstable();
    Ok(out)
}

/// A join worker's state: a partition's entries, its groups, the pairs found.
type Worker = (Vec<(u64, u32)>, Groups, Vec<(u32, u32, u8)>);

/// Most bits of a table's key the self-join partitions on (4,096 partitions).
const PARTITION_BITS: u32 = 12;

/// `(permuted fingerprint, position)` of every fingerprint, counting-sorted by the top `bits`
/// bits of the permuted value within each of a few chunks (in parallel); partition `p` is the
/// concatenation of every chunk's run `p`.
struct Partitioned {
    chunks: Vec<Chunk>,
    chunk_len: usize,
    parts: usize,
    bits: u32,
}

/// One chunk of the fingerprints: its permuted values, and its entries counting-sorted by
/// partition (`starts[p]..starts[p + 1]`). Kept from table to table, so that only the first
/// table pays for fresh pages.
#[derive(Default)]
struct Chunk {
    permuted: Vec<u64>,
    run: Vec<(u64, u32)>,
    starts: Vec<u32>,
}

impl Partitioned {
    fn new(n: usize) -> Self {
        let chunk_len = n.div_ceil(rayon::current_num_threads() * 4).max(1 << 16);
        Partitioned {
            chunks: (0..n.div_ceil(chunk_len))
                .map(|_| Chunk::default())
                .collect(),
            chunk_len,
            parts: 0,
            bits: 0,
        }
    }

    /// Partitions `fps` by the top `bits` bits of their permutation by `table`.
    fn fill(&mut self, fps: &[u64], bits: u32, table: &TableSpec) {
        let parts = 1usize << bits;
        let part = |p: u64| {
            if bits == 0 {
                0
            } else {
                (p >> (64 - bits)) as usize
            }
        };
        let chunk_len = self.chunk_len;
        self.chunks
            .par_iter_mut()
            .zip(fps.par_chunks(chunk_len))
            .enumerate()
            .for_each(|(c, (chunk, ch))| {
                let base = (c * chunk_len) as u32;
                chunk.permuted.clear();
                chunk.permuted.extend(ch.iter().map(|&f| table.permute(f)));
                chunk.starts.clear();
                chunk.starts.resize(parts + 1, 0);
                let starts = &mut chunk.starts;
                for &p in &chunk.permuted {
                    starts[part(p) + 1] += 1;
                }
                for i in 0..parts {
                    starts[i + 1] += starts[i];
                }
                let mut at = starts.clone();
                chunk.run.resize(ch.len(), (0, 0));
                for (i, &p) in chunk.permuted.iter().enumerate() {
                    let b = part(p);
                    chunk.run[at[b] as usize] = (p, base + i as u32);
                    at[b] += 1;
                }
            });
        self.parts = parts;
        self.bits = bits;
    }

    fn len(&self) -> usize {
        self.parts
    }

    /// Partition `p` into `out` (cleared first).
    fn gather(&self, p: usize, out: &mut Vec<(u64, u32)>) {
        out.clear();
        for c in &self.chunks {
            out.extend_from_slice(&c.run[c.starts[p] as usize..c.starts[p + 1] as usize]);
        }
    }
}

/// Most key bits below the partition's that are grouped through a bucket array (64 Ki slots).
const CHAIN_BITS: u32 = 16;

/// Finds the pairs of entries with equal keys in one partition.
struct Groups {
    /// `Some(bits)`: the key's low `bits` index `head` directly.
    bits: Option<u32>,
    head: Vec<u32>,
    next: Vec<u32>,
}

impl Groups {
    fn new(rest: u32) -> Self {
        let bits = (rest <= CHAIN_BITS).then_some(rest);
        Groups {
            bits,
            head: bits.map_or(Vec::new(), |b| vec![u32::MAX; 1 << b]),
            next: Vec::new(),
        }
    }

    /// Calls `pair(a, b)` once for every two entries of `v` whose keys are equal (all of `v`
    /// shares the partition's bits).
    fn each_pair(
        &mut self,
        v: &mut [(u64, u32)],
        key: impl Fn(u64) -> u64,
        pair: &mut impl FnMut((u64, u32), (u64, u32)),
    ) {
        if v.len() < 2 {
            return;
        }
        let Some(bits) = self.bits else {
            v.sort_unstable();
            for group in v.chunk_by(|a, b| key(a.0) == key(b.0)) {
                for (x, &a) in group.iter().enumerate() {
                    for &b in &group[x + 1..] {
                        pair(a, b);
                    }
                }
            }
            return;
        };
        let mask = (1u64 << bits) - 1;
        let slot = |e: &(u64, u32)| (key(e.0) & mask) as usize;
        self.next.clear();
        for (i, e) in v.iter().enumerate() {
            let h = &mut self.head[slot(e)];
            self.next.push(*h);
            *h = i as u32;
        }
        for (i, &a) in v.iter().enumerate() {
            let mut j = self.next[i];
            while j != u32::MAX {
                pair(a, v[j as usize]);
                j = self.next[j as usize];
            }
        }
        for e in v.iter() {
            self.head[slot(e)] = u32::MAX;
        }
    }
}
