//! One integration-test binary for the `neardup` CLI, with a module per topic.
mod index;
mod util;
mod fingerprint;
mod dedup;
mod eval;
mod serve;
