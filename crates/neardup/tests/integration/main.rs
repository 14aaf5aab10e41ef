//! The integration tests of `neardup`, one module per topic:
//!
//! - `dedup_eval`: batch dedup against brute-force connected components; the eval scorer;
//! - `engine`: the online engine's decisions, ids, batches, durability across reopen,
//!   configuration mismatch;
//! - `engine_parity`: one detector everywhere: documents streamed through the engine get batch
//!   dedup's decisions, across restarts;
//! - `fingerprint`: the fingerprint spec's test vectors, the seeds' examples, robustness to
//!   markup;
//! - `methods`: MinHash, LSH banding, I-Match, exact digests, the short-text path and the `auto`
//!   policy: spec vectors and detectors against brute force;
//! - `minhash`: MinHash's and LSH banding's statistical properties;
//! - `robustness`: arbitrary bytes and markup-shaped strings never panic on the text path.
//!
//! Two tests are binaries of their own: `tests/engine_crash.rs` (acknowledged documents survive
//! SIGKILL; it forks children, and a fork shares the lock of every data directory open in the
//! process until it execs) and `tests/engine_failpoints.rs` (`--features failpoints`;
//! failpoints are process-global).

mod dedup_eval;
mod engine;
mod engine_parity;
mod fingerprint;
mod methods;
mod minhash;
mod robustness;
