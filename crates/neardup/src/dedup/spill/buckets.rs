//! The bucket stage of a spilled run: the band keys' merged stream, bucket by bucket. In the
//! first band, documents with identical signatures are mapped to their earliest copy; in every
//! band, each bucket's distinct representatives give their pairs (later, earlier) to the pair
//! sort.
//!
//! Invariant: every two representatives sharing a bucket in some band are a pair; copies of
//! one signature are one representative.

use super::files::Signatures;
use super::sort::Sorter;
use super::SpillStats;

/// The bucket stage: collapse in the first band, pairs from every band.
pub(super) struct Buckets<'a> {
    pub(super) sigs: &'a Signatures,
    pub(super) rep: &'a mut [u32],
    pub(super) pairs: &'a mut Sorter<u64>,
    pub(super) stats: &'a mut SpillStats,
    pub(super) seen: rustc_hash::FxHashMap<Vec<u32>, u32>,
    pub(super) nodes: Vec<u32>,
}

impl Buckets<'_> {
    /// Handles one bucket's documents (ascending) and empties it.
    pub(super) fn close(&mut self, band: u32, docs: &mut Vec<u32>) -> std::io::Result<()> {
        if docs.len() < 2 {
            docs.clear();
            return Ok(());
        }
        if band == 0 {
            // Identical signatures share every band, so all copies of one meet here: each is
            // mapped to its earliest.
            self.seen.clear();
            let mut sig = vec![0u32; self.sigs.num_perm];
            for &d in docs.iter() {
                self.sigs.read(d, &mut sig)?;
                let first = *self.seen.entry(sig.clone()).or_insert(d);
                self.rep[d as usize] = first;
            }
        }
        self.nodes.clear();
        self.nodes
            .extend(docs.iter().map(|&d| self.rep[d as usize]));
        self.nodes.sort_unstable();
        self.nodes.dedup();
        docs.clear();
        self.stats.largest_bucket = self.stats.largest_bucket.max(self.nodes.len() as u64);
        for (i, &later) in self.nodes.iter().enumerate().skip(1) {
            for &earlier in &self.nodes[..i] {
                self.pairs
                    .push(u64::from(later) << 32 | u64::from(earlier))?;
            }
        }
        Ok(())
    }
}
