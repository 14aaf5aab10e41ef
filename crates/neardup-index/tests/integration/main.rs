//! The integration tests of `neardup-index`, one module per topic:
//!
//! - `fpfile`: Fingerprint file reading, writing, detection and errors.
//! - `lean`: The lean index (two tables, query-side flips) against brute force.
//! - `props`: Property tests of the index and all-pairs against brute force.

mod fpfile;
mod lean;
mod props;
