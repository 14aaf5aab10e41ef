//! The integration tests of `neardup-index`, one module per topic:
//!
//! - `fpfile`: Fingerprint file reading, writing, detection and errors.
//! - `props`: Property tests of the index and all-pairs against brute force.

mod fpfile;
mod props;
