//! A Redis / Redis Cluster backend for neardup: one near-duplicate index shared by many
//! `neardup serve` instances.
//!
//! # What it owns
//! - The index in Redis: for each block table `t` and each key value `v` (the table's blocks of
//!   the fingerprint, see [`layout`]), a sorted set `{P:t<t>:<v hex>}` whose members are the
//!   documents (`C | fp (8 bytes) | seq (8 bytes) | id`, binary, exact) and whose scores are their
//!   timestamps in milliseconds. The table number and the block value are both in the key, so
//!   equal block values of different tables never collide; the fingerprint is stored exactly in
//!   the member (never as a float score).
//! - The document record: the same member, also in the id bucket `{P:i:<20-bit hash of id>}`
//!   (a sorted set; the member carries the id, fingerprint and sequence number, the score the
//!   timestamp). The bucket doubles as the "id table" that makes a re-submitted id a duplicate
//!   of itself.
//! - `{P:seq}` (sequence counter and, on a cluster, the per-attempt status keys
//!   `{P:seq}:s:<nonce>`), `{P:stats}` (counters, live documents per time bucket) and
//!   `{P:meta}` (the configuration that affects answers; connecting with another one fails).
//!   `P` is the key prefix of the index (one Redis can hold many indexes). The braces are Redis
//!   Cluster hash tags: every key is its own slot, so each lookup touches one node.
//!
//! # Semantics (the same as the embedded engine)
//! A document is a candidate while `timestamp > now - retention`. A check answers
//! `Duplicate { of, distance }` with the nearest live document within distance `k` (ties: the
//! oldest, then the first stored), or with the same id's live document if the id is already
//! stored; otherwise `Unique`, and the document is stored when its timestamp is inside the
//! window. Duplicates are not stored. Timestamps default to the caller's clock and are
//! clamped to it.
//!
//! # Atomicity
//! - **Single Redis**: one Lua script (EVALSHA, one round trip) reads the candidate sets of
//!   all tables, computes distances in Lua and inserts only if nothing is near. Scripts run one
//!   at a time, so any number of instances see one arrival order: exactly one `Unique` per
//!   group of near-duplicates arriving together.
//! - **Redis Cluster**: the keys of one fingerprint live on different nodes, so the check is a
//!   short protocol with a global sequence (see the README for the proof):
//!   1. add a *provisional* member `P | fp | nonce | id` to all of its keys (in parallel);
//!   2. `INCR {P:seq}` and, in the same script, record `seq:P` under the attempt's status key;
//!   3. read all of its keys (in parallel): committed members and provisional members whose
//!      status is `U` with a smaller sequence are stored documents; pending ones with a smaller
//!      sequence are waited for; larger sequences and withdrawn or lapsed attempts are ignored;
//!   4. decide as a single Redis would, in sequence order: `Unique` sets the status to `U` (only
//!      if still pending) and rewrites its members to committed ones; `Duplicate` withdraws.
//!
//!   Any earlier near-duplicate's provisional member was written before its `INCR`, hence
//!   before ours, hence before our reads: a later attempt always sees every earlier one, and
//!   every attempt decides exactly as if all had been serialised by sequence number. Two
//!   instances racing near-duplicates therefore keep exactly one.
//! - Nothing is acknowledged that Redis did not apply: any Redis error is returned as
//!   [`Error::Unavailable`] (the HTTP layer answers 503), and the connection is re-established
//!   on the next call (after a restart the scripts are reloaded on the fly).
//!   How durable an applied write is depends on the Redis persistence settings
//!   (`appendonly yes` + `appendfsync always` loses nothing on a Redis crash).
//!
//! # Retention and memory
//! Checks ignore members older than the window (exact, by score); every write trims the
//! expired members of the keys it touches (`ZREMRANGEBYSCORE`) and extends the key's TTL to
//! `ts + retention - now + grace`, so keys nobody writes to any more are dropped by Redis
//! itself. `max_docs` of the embedded engine is not supported here.
//!
//! # Example
//! ```no_run
//! # async fn demo() -> Result<(), neardup_redis::Error> {
//! use neardup_redis::{Decision, RedisBackend, RedisConfig};
//! let backend = RedisBackend::connect("redis://127.0.0.1:6379/0", RedisConfig::default()).await?;
//! let a = backend.check_and_insert("a", 0xdead_beef_0000_0001, None).await?;
//! assert_eq!(a.decision, Decision::Unique);
//! let b = backend.check_and_insert("b", 0xdead_beef_0000_0007, None).await?;
//! assert!(matches!(b.decision, Decision::Duplicate { ref of, distance: Some(2), .. } if of == "a"));
//! # Ok(()) }
//! ```
#![warn(missing_docs)]

mod backend;
mod cluster;
mod config;
mod conn;
mod error;
mod keys;
pub mod layout;
mod lookup;
mod member;
mod scripts;
#[cfg(feature = "server")]
pub mod server;
mod single;
mod stats;
pub mod stream;

pub use backend::RedisBackend;
pub use config::RedisConfig;
pub use error::{Error, Result};
pub use keys::ID_BUCKET_BITS;
pub use layout::Layout;
pub use lookup::MAX_HITS;
pub use member::MAX_ID_BYTES;
/// The answers are the embedded engine's own types.
pub use neardup::engine::{Decision, DocInfo, Hit, Outcome, Stage};
pub use neardup_clock::{Clock, ManualClock, SystemClock};
pub use stats::RedisStats;
pub use stream::{StreamEngine, StreamStats};
