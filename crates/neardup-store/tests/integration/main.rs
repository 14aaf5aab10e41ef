//! The integration tests of `neardup-store`, one module per topic:
//!
//! - `crash`: acknowledged records survive SIGKILL (the test binary re-runs itself as the child);
//! - `failpoints`: torn writes, failures between write and fsync, crashes at every step of
//!   rotation and snapshot publication (with `--features failpoints`);
//! - `store`: recovery, torn tails, corruption, configuration and version checks.

mod crash;
#[cfg(feature = "failpoints")]
mod failpoints;
mod store;
