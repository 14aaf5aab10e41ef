//! The integration tests of `neardup-server`, one module per topic:
//!
//! - `edge`: where the service meets the network: connection limits, deadlines, content types;
//! - `http`: every route, every bad-input path, authentication, the body limit, concurrency;
//! - `parity`: one detector everywhere: a planted set streamed through HTTP gets `dedup`'s
//!   decisions.

mod edge;
mod http;
mod parity;
