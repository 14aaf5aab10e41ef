//! One integration-test binary for the `neardup` CLI, with a module per topic.
mod dedup;
mod eval;
mod fingerprint;
mod index;
mod serve;
mod util;
