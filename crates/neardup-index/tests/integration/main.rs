//! The integration tests of `neardup-index`, one module per topic:
//!
//! - `fpfile`: Fingerprint file reading, writing, detection and errors.
//! - `lean`: The lean index (two tables, query-side flips) against brute force.
//! - `props`: Property tests of the index and all-pairs against brute force.

mod fpfile;
mod lean;
mod props;

use neardup_index::Match;

/// Asserts that a batch's results are, query for query, those of one query at a time (`one`),
/// `label` naming the case in the message; returns the number of matches.
fn assert_batch_equals_one_at_a_time(
    queries: &[u64],
    batch: &[Vec<Match>],
    one: impl Fn(u64) -> Vec<Match>,
    label: &str,
) -> usize {
    assert_eq!(batch.len(), queries.len(), "{label}");
    let mut found = 0;
    for (&q, got) in queries.iter().zip(batch) {
        assert_eq!(got, &one(q), "q={q:x} {label}");
        found += got.len();
    }
    found
}
