//! The integration tests of `neardup-store`, one module per topic:
//!
//! - `store`: recovery, torn tails, corruption, configuration and version checks.
//!
//! Two tests are binaries of their own: `tests/crash.rs` (acknowledged records survive SIGKILL;
//! it forks children, and a fork shares the lock of every store open in the process until it
//! execs) and `tests/failpoints.rs` (`--features failpoints`; failpoints are process-global).

mod store;
