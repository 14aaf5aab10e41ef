//! The integration tests of `neardup`, one module per topic:
//!
//! - `dedup_eval`: batch dedup against brute-force connected components; the eval scorer;
//! - `engine`: the online engine's decisions, ids, batches, durability across reopen,
//!   configuration mismatch;
//! - `engine_crash`: acknowledged documents survive SIGKILL (the binary re-runs itself as the
//!   child);
//! - `engine_failpoints`: the engine when the store fails at precise points (with
//!   `--features failpoints`);
//! - `engine_parity`: one detector everywhere: documents streamed through the engine get batch
//!   dedup's decisions, across restarts;
//! - `fingerprint`: the fingerprint spec's test vectors, the seeds' examples, robustness to
//!   markup;
//! - `methods`: MinHash, LSH banding, I-Match, exact digests, the short-text path and the `auto`
//!   policy;
//! - `robustness`: arbitrary bytes and markup-shaped strings never panic on the text path.

mod dedup_eval;
mod engine;
mod engine_crash;
#[cfg(feature = "failpoints")]
mod engine_failpoints;
mod engine_parity;
mod fingerprint;
mod methods;
mod robustness;
