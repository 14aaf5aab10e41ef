//! Sorted batches: a large batch of queries searched one table at a time, the queries taken
//! in the order of that table's key. One query alone waits on a cache miss a probe; in key
//! order each probe lands a few slots past the previous query's, so the table is read nearly
//! in order.
//!
//! The order is by the key's top [`ORDER_BITS`] bits only — a table's slot is a prefix of its
//! key, and 2²² regions are finer than any table's slots a query probes apart — found by two
//! passes of a least-significant-digit radix sort instead of a comparison sort, which cost
//! more than the probes it ordered. Each worker thread orders and searches its own contiguous
//! share of the batch (its own sweep of the table), with buffers kept across the tables of
//! one batch ([`KeyOrder`]). The matches are then grouped by query ([`by_query`]), so the
//! result never depends on the order or the threads.

use crate::index::Match;
use rayon::prelude::*;

/// Batches of at least this many queries are searched table by table in sorted order
/// ([`crate::HammingIndex::search_batch`], [`crate::LeanIndex::search_batch`]).
pub const SORTED_BATCH: usize = 1 << 14;

/// Whether a batch of `n` queries is searched in sorted order: from [`SORTED_BATCH`] queries,
/// up to as many as a `u32` position counts.
pub(crate) fn sorted_batch(n: usize) -> bool {
    (SORTED_BATCH..=u32::MAX as usize).contains(&n)
}

/// Candidates handled as one parallel task where a batch's work is cut into runs.
pub(crate) const SORTED_RUN: usize = 4096;

/// Bits of a radix digit: 2,048 counters, whose write fronts stay in the L1 cache.
const DIGIT_BITS: u32 = 11;
/// The key's top bits the queries are ordered by: two digits.
pub(crate) const ORDER_BITS: u32 = 2 * DIGIT_BITS;
const DIGITS: usize = 1 << DIGIT_BITS;

/// A query keyed for one table, and its position in the batch.
type Keyed = (u64, u32);

/// The queries of one batch in the order of each table's key in turn, each worker thread's
/// share ordered and searched apart, the buffers kept from one table to the next.
pub(crate) struct KeyOrder {
    /// Queries a share.
    share: usize,
    /// Each share's keyed queries and the radix sort's second buffer.
    buffers: Vec<(Vec<Keyed>, Vec<Keyed>)>,
}

impl KeyOrder {
    /// Buffers for a batch of `queries` queries, cut into one share a worker thread.
    pub(crate) fn new(queries: usize) -> KeyOrder {
        let share = queries.div_ceil(rayon::current_num_threads().max(1)).max(1);
        KeyOrder {
            share,
            buffers: (0..queries.div_ceil(share))
                .map(|_| Default::default())
                .collect(),
        }
    }

    /// `each(key, position, out)` for every query of the batch, keyed by `key`: each share
    /// in parallel, its queries in the order of their key's top [`ORDER_BITS`] bits (then of
    /// position); the shares' outputs in order. `queries` is the batch [`KeyOrder::new`] was
    /// made for.
    pub(crate) fn each<T: Send>(
        &mut self,
        queries: &[u64],
        key: impl Fn(u64) -> u64 + Sync,
        each: impl Fn(u64, u32, &mut Vec<T>) + Sync,
    ) -> Vec<T> {
        assert_eq!(
            queries.len().div_ceil(self.share),
            self.buffers.len(),
            "a KeyOrder serves the batch it was made for"
        );
        let share = self.share;
        let outs: Vec<Vec<T>> = self
            .buffers
            .par_iter_mut()
            .zip(queries.par_chunks(share))
            .enumerate()
            .map(|(c, ((keyed, spare), qs))| {
                let base = c * share;
                keyed.clear();
                keyed.extend(
                    qs.iter()
                        .enumerate()
                        .map(|(j, &q)| (key(q), (base + j) as u32)),
                );
                order_by_top_bits(keyed, spare);
                let mut out = Vec::new();
                for &(k, i) in keyed.iter() {
                    each(k, i, &mut out);
                }
                out
            })
            .collect();
        let mut all = Vec::with_capacity(outs.iter().map(Vec::len).sum());
        for out in outs {
            all.extend(out);
        }
        all
    }
}

/// The radix digit `pass` of `key`: pass 0 the lower of the top [`ORDER_BITS`] bits, pass 1
/// the top [`DIGIT_BITS`].
#[inline(always)]
fn digit(key: u64, pass: usize) -> usize {
    (key >> (64 - ORDER_BITS + DIGIT_BITS * pass as u32)) as usize & (DIGITS - 1)
}

/// Orders `v` by its keys' top [`ORDER_BITS`] bits, stably (equal prefixes keep their order):
/// two counting passes, `spare` the second buffer.
fn order_by_top_bits(v: &mut Vec<Keyed>, spare: &mut Vec<Keyed>) {
    let mut counts = [[0u32; DIGITS]; 2];
    for &(k, _) in v.iter() {
        counts[0][digit(k, 0)] += 1;
        counts[1][digit(k, 1)] += 1;
    }
    if spare.len() != v.len() {
        spare.clear();
        spare.resize(v.len(), (0, 0));
    }
    for (pass, c) in counts.iter_mut().enumerate() {
        // A digit all keys share leaves the order as it is.
        if c.iter().any(|&n| n as usize == v.len()) {
            continue;
        }
        let mut sum = 0;
        for n in c.iter_mut() {
            let here = *n;
            *n = sum;
            sum += here;
        }
        for &e in v.iter() {
            let d = digit(e.0, pass);
            spare[c[d] as usize] = e;
            c[d] += 1;
        }
        std::mem::swap(v, spare);
    }
}

/// Matches found as (query, match), in any order, as one sorted list a query.
pub(crate) fn by_query(mut found: Vec<(u32, Match)>, queries: usize) -> Vec<Vec<Match>> {
    found.par_sort_unstable();
    let groups: Vec<(u32, Vec<Match>)> = found
        .par_chunk_by(|a, b| a.0 == b.0)
        .map(|run| (run[0].0, run.iter().map(|&(_, m)| m).collect()))
        .collect();
    let mut out = vec![Vec::new(); queries];
    for (i, ms) in groups {
        out[i as usize] = ms;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The radix order is the stable sort by the top bits, whatever the keys (keys sharing
        /// a digit included).
        #[test]
        fn radix_order_is_the_stable_sort_by_top_bits(
            keys in proptest::collection::vec(any::<u64>(), 0..3000),
            narrow in 0u32..3,
        ) {
            let keys: Vec<u64> = keys
                .into_iter()
                .map(|k| match narrow {
                    0 => k,
                    1 => k & 0xFFFF_F000_0000_0FFF, // a few top bits vary, the low bits too
                    _ => k | 0xFFF0_0000_0000_0000, // the top digit shared
                })
                .collect();
            let mut v: Vec<Keyed> = keys.iter().enumerate().map(|(i, &k)| (k, i as u32)).collect();
            let mut want = v.clone();
            want.sort_by_key(|&(k, _)| k >> (64 - ORDER_BITS));
            let mut spare = Vec::new();
            order_by_top_bits(&mut v, &mut spare);
            prop_assert_eq!(v, want);
        }

        /// Every query is handed over once, with its key and position, whatever the batch size
        /// against the shares.
        #[test]
        fn each_query_once_with_its_key(queries in proptest::collection::vec(any::<u64>(), 1..5000)) {
            let mut order = KeyOrder::new(queries.len());
            for rot in [0u32, 32] {
                let mut seen: Vec<(u32, u64)> =
                    order.each(&queries, |q| q.rotate_left(rot), |k, i, out| out.push((i, k)));
                seen.sort_unstable();
                let want: Vec<(u32, u64)> = queries
                    .iter()
                    .enumerate()
                    .map(|(i, &q)| (i as u32, q.rotate_left(rot)))
                    .collect();
                prop_assert_eq!(seen, want);
            }
        }
    }
}
