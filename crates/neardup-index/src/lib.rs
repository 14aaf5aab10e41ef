//! Exact Hamming-distance search over 64-bit fingerprints with permuted block tables
//! (Manku, Jain and Das Sarma, *Detecting near-duplicates for web crawling*, WWW 2007).
//!
//! This crate owns:
//! - [`Layout`] — how the 64 bits are cut into blocks and which block sets key the tables, and
//!   the planner ([`Layout::plan`], [`Layout::plan_self_join`]) with its documented cost model;
//! - [`HammingIndex`] — a mutable index over `(fingerprint, handle)` entries answering "every
//!   entry within distance `k`" exactly, with inserts, removals, early-exit search and parallel
//!   batch search;
//! - [`LeanIndex`] — a built-once index for distances up to 3 in about 15.5 bytes per entry (two
//!   tables and query-side one-bit flips), for when the block tables do not fit in memory;
//! - [`plan_index`] — the choice between the two within a memory budget, with its reason, and
//!   [`PlannedIndex`], the index it builds;
//! - [`all_pairs`] — the self-join of a set of fingerprints;
//! - [`fpfile`] — fingerprint file reading/writing; [`random`] — the one SplitMix64 of the workspace and synthetic fingerprints;
//! - [`linear_search`] / [`linear_all_pairs`] — the brute-force reference used by the tests and
//!   benches.
//!
//! # Representation
//! Per table: a directory of `u32` offsets over the top `d` bits of the permuted fingerprint
//! ([`layout::directory_bits`]) and three parallel arrays sorted by slot — the residual's bits
//! 16..47 (`u32`, scanned first with a vectorised xor + popcount filter), its bits 0..15 (`u16`)
//! and the handle (`u32`): 10 bytes per entry per table, no per-entry allocation. Large arrays
//! are backed by transparent huge pages where Linux allows (`madvise`), and a query prefetches
//! the slots of all its tables before scanning any. When the directory is coarser than the key
//! (long keys), big slots are sorted so a query binary-searches its key's range: a hot prefix
//! does not turn into a scan of the slot. Inserts go to a per-table delta bucketed by the top 16
//! bits (merged by a linear rebuild once it passes 1/8 of the main arrays); removals set a
//! tombstone bit (compacted past 1/4). Rebuilds and bulk builds are a two-pass radix sort,
//! parallel over tables.
//!
//! # Invariants
//! - Results are exact: a search returns every live entry with `hamming(q, fp) <= k` and nothing
//!   else, each entry once (entries are a multiset: a duplicate insert is reported twice).
//! - `k` may be anything up to the layout's [`Layout::max_distance`]; larger is an
//!   [`Error::DistanceTooLarge`], never a wrong answer.
//! - Public functions never panic on user input (files, distances, layout names).
//!
//! # Example
//! ```
//! use neardup_index::{HammingIndex, Layout};
//! let layout = Layout::new(4, 3).unwrap(); // 4 tables with 16-bit keys, k <= 3
//! let mut index = HammingIndex::build(layout, &[(0xdead_beef, 1), (0xdead_beef ^ 0b111, 2)]).unwrap();
//! index.insert(!0u64, 3).unwrap();
//! let hits = index.search(0xdead_beef ^ 1, 3).unwrap();
//! assert_eq!(hits.iter().map(|m| (m.handle, m.distance)).collect::<Vec<_>>(), [(1, 1), (2, 2)]);
//! assert!(index.remove(0xdead_beef, 1));
//! assert_eq!(index.len(), 2);
//! assert!(index.search(0, 9).is_err()); // beyond the layout's max distance
//! let pairs = neardup_index::all_pairs(&[5, 4, 1 << 40, 7], 1).unwrap();
//! assert_eq!(pairs, [(0, 1, 1), (0, 3, 1)]);
//! ```
#![warn(missing_docs)]

mod batch;
mod error;
pub mod fpfile;
mod index;
mod kernel;
pub mod layout;
mod lean;
mod pairs;
mod plan;
pub mod random;
mod table;

pub use batch::SORTED_BATCH;
pub use error::{Error, Result};
pub use index::{HammingIndex, Match, MAX_ENTRIES};
pub use layout::Layout;
pub use lean::{lean_directory_bits, lean_estimate, LeanIndex, LEAN_MAX_DISTANCE};
pub use pairs::{all_pairs, all_pairs_with};
pub use plan::{plan_index, IndexChoice, Plan, PlannedIndex};
pub use table::{huge_vec, prefetch};

/// Hamming distance between two fingerprints.
#[inline]
pub fn hamming(a: u64, b: u64) -> u32 {
    (a ^ b).count_ones()
}

/// Brute force: every entry within distance `k` of `q`, sorted like [`HammingIndex::search`].
pub fn linear_search(entries: &[(u64, u32)], q: u64, k: u32) -> Vec<Match> {
    let mut out: Vec<Match> = entries
        .iter()
        .filter_map(|&(fp, handle)| {
            let d = hamming(fp, q);
            (d <= k).then_some(Match {
                handle,
                fingerprint: fp,
                distance: d as u8,
            })
        })
        .collect();
    out.sort_unstable();
    out
}

/// Brute force: every pair `(i, j, distance)`, `i < j`, within distance `k`, sorted.
pub fn linear_all_pairs(fps: &[u64], k: u32) -> Vec<(u32, u32, u8)> {
    let mut out = Vec::new();
    for i in 0..fps.len() {
        for j in i + 1..fps.len() {
            let d = hamming(fps[i], fps[j]);
            if d <= k {
                out.push((i as u32, j as u32, d as u8));
            }
        }
    }
    out
}
