//! The integration tests of `neardup-redis`, against real redis-server processes started on
//! free loopback ports (`common`), one module per topic:
//!
//! - `http_parity`: the same HTTP requests against the embedded engine and against Redis
//!   (single and cluster) get the same answers;
//! - `redis`: the Hamming-table backend (single node and a 3-master cluster): model test,
//!   races, crashed attempts, restarts, expiry;
//! - `stream`: the shared-log backend: instances answer what `dedup` answers, race to exactly
//!   one unique, rebuild from the log, survive a Redis restart, refuse a log that lost entries.

mod common;
#[cfg(feature = "server")]
mod http_parity;
mod redis;
mod stream;
