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
    /// position); each share's output, in order. `queries` is the batch [`KeyOrder::new`]
    /// was made for.
    pub(crate) fn each<T: Send>(
        &mut self,
        queries: &[u64],
        key: impl Fn(u64) -> u64 + Sync,
        each: impl Fn(u64, u32, &mut Vec<T>) + Sync,
    ) -> Vec<Vec<T>> {
        assert_eq!(
            queries.len().div_ceil(self.share),
            self.buffers.len(),
            "a KeyOrder serves the batch it was made for"
        );
        let share = self.share;
        self.buffers
            .par_iter_mut()
            .zip(queries.par_chunks(share))
            .enumerate()
            .map(|(c, ((keyed, spare), qs))| {
                order_by_top_bits(qs, c * share, &key, keyed, spare);
                let mut out = Vec::new();
                for &(k, i) in keyed.iter() {
                    each(k, i, &mut out);
                }
                out
            })
            .collect()
    }
}

/// The top [`ORDER_BITS`] bits of `key`: what the queries are ordered by.
#[inline(always)]
fn prefix(key: u64) -> u32 {
    (key >> (64 - ORDER_BITS)) as u32
}

/// Radix digit counts of both passes.
type Counts = [[u32; DIGITS]; 2];

/// Counts `prefix` (below 2^[`ORDER_BITS`]) in both passes' digits.
#[inline(always)]
fn count(counts: &mut Counts, prefix: u32) {
    counts[0][prefix as usize & (DIGITS - 1)] += 1;
    counts[1][(prefix >> DIGIT_BITS) as usize & (DIGITS - 1)] += 1;
}

/// `qs` keyed by `key` with their positions (from `base`) in `v`, ordered by the keys' top
/// [`ORDER_BITS`] bits, stably (equal prefixes in position order), the digits counted as the
/// keys are made; `spare` is the radix sort's second buffer.
fn order_by_top_bits(
    qs: &[u64],
    base: usize,
    key: impl Fn(u64) -> u64,
    v: &mut Vec<Keyed>,
    spare: &mut Vec<Keyed>,
) {
    let mut counts = [[0u32; DIGITS]; 2];
    v.clear();
    v.extend(qs.iter().enumerate().map(|(j, &q)| {
        let k = key(q);
        count(&mut counts, prefix(k));
        (k, (base + j) as u32)
    }));
    scatter(v, spare, counts, |&(k, _)| prefix(k));
}

/// Orders `v` by `prefix` (values below 2^[`ORDER_BITS`]), stably, with `spare` as the second
/// buffer: what batches sort only for the locality of the reads that follow.
pub(crate) fn order_by_prefix<T: Copy>(
    v: &mut Vec<T>,
    spare: &mut Vec<T>,
    prefix: impl Fn(&T) -> u32,
) {
    let mut counts = [[0u32; DIGITS]; 2];
    for e in v.iter() {
        count(&mut counts, prefix(e));
    }
    scatter(v, spare, counts, prefix);
}

/// The two counting passes of a least-significant-digit radix sort of `v` by `prefix`,
/// `counts` its digits' counts.
fn scatter<T: Copy>(
    v: &mut Vec<T>,
    spare: &mut Vec<T>,
    mut counts: Counts,
    prefix: impl Fn(&T) -> u32,
) {
    let Some(&first) = v.first() else {
        return;
    };
    if spare.len() != v.len() {
        spare.clear();
        spare.resize(v.len(), first);
    }
    for (pass, c) in counts.iter_mut().enumerate() {
        // A digit all elements share leaves the order as it is.
        if c.iter().any(|&n| n as usize == v.len()) {
            continue;
        }
        let mut sum = 0;
        for n in c.iter_mut() {
            let here = *n;
            *n = sum;
            sum += here;
        }
        let shift = DIGIT_BITS * pass as u32;
        for &e in v.iter() {
            let d = (prefix(&e) >> shift) as usize & (DIGITS - 1);
            spare[c[d] as usize] = e;
            c[d] += 1;
        }
        std::mem::swap(v, spare);
    }
}

/// Matches found as (query, match), in any order, as one sorted list a query. The query
/// numbers are dense (below `queries`), so the matches are put in query order by one counting
/// pass rather than sorted whole, and each query's few are sorted apart.
pub(crate) fn by_query(found: Vec<(u32, Match)>, queries: usize) -> Vec<Vec<Match>> {
    let Some(&(_, fill)) = found.first() else {
        return vec![Vec::new(); queries];
    };
    if found.len() > u32::MAX as usize {
        // More matches than 32-bit offsets count (over 100 GB of them): grouped by a sort.
        let mut found = found;
        found.par_sort_unstable();
        let mut out = vec![Vec::new(); queries];
        for (q, m) in found {
            out[q as usize].push(m);
        }
        return out;
    }
    // `starts[q]..starts[q + 1]`: where query `q`'s matches go.
    let mut starts = vec![0u32; queries + 1];
    for &(q, _) in &found {
        starts[q as usize + 1] += 1;
    }
    for q in 0..queries {
        starts[q + 1] += starts[q];
    }
    let mut fronts = starts[..queries].to_vec();
    let mut placed = vec![fill; found.len()];
    for (q, m) in found {
        let f = &mut fronts[q as usize];
        placed[*f as usize] = m;
        *f += 1;
    }
    drop(fronts);
    (0..queries)
        .into_par_iter()
        .map(|q| {
            let (a, b) = (starts[q] as usize, starts[q + 1] as usize);
            let mut ms = placed[a..b].to_vec();
            ms.sort_unstable();
            ms
        })
        .collect()
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
            let mut want: Vec<Keyed> =
                keys.iter().enumerate().map(|(i, &k)| (k ^ 1, 7 + i as u32)).collect();
            want.sort_by_key(|&(k, _)| k >> (64 - ORDER_BITS));
            let (mut v, mut spare) = (Vec::new(), Vec::new());
            order_by_top_bits(&keys, 7, |k| k ^ 1, &mut v, &mut spare);
            prop_assert_eq!(v, want);
        }

        /// Any elements ordered by a prefix come out stably sorted by it (the lean index's
        /// candidates by their positions' top bits).
        #[test]
        fn order_by_prefix_is_the_stable_sort_by_prefix(
            v in proptest::collection::vec((any::<u32>(), any::<u16>()), 0..3000),
            shift in 10u32..=32,
        ) {
            let prefix = |e: &(u32, u16)| e.0.checked_shr(shift).unwrap_or(0);
            let mut want = v.clone();
            want.sort_by_key(prefix);
            let mut got = v;
            order_by_prefix(&mut got, &mut Vec::new(), prefix);
            prop_assert_eq!(got, want);
        }

        /// Matches come back one sorted list a query, whatever order they were found in.
        #[test]
        fn by_query_is_each_querys_matches_sorted(
            found in proptest::collection::vec((0u32..50, any::<u32>(), any::<u64>(), 0u8..4), 0..400),
            extra in 0usize..5,
        ) {
            let queries = found.iter().map(|f| f.0 as usize + 1).max().unwrap_or(0) + extra;
            let found: Vec<(u32, Match)> = found
                .into_iter()
                .map(|(q, handle, fingerprint, distance)| (q, Match { handle, fingerprint, distance }))
                .collect();
            let mut want = vec![Vec::new(); queries];
            for &(q, m) in &found {
                want[q as usize].push(m);
            }
            for ms in &mut want {
                ms.sort_unstable();
            }
            prop_assert_eq!(by_query(found, queries), want);
        }

        /// Every query is handed over once, with its key and position, whatever the batch size
        /// against the shares.
        #[test]
        fn each_query_once_with_its_key(queries in proptest::collection::vec(any::<u64>(), 1..5000)) {
            let mut order = KeyOrder::new(queries.len());
            for rot in [0u32, 32] {
                let mut seen: Vec<(u32, u64)> = order
                    .each(&queries, |q| q.rotate_left(rot), |k, i, out| out.push((i, k)))
                    .concat();
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
