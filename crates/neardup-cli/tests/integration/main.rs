//! One integration-test binary for the `neardup` CLI, with a module per topic.
mod dedup;
mod eval;
mod fingerprint;
mod flags;
mod index;
mod inputs;
mod memory;
mod parquet;
mod provenance;
mod readme;
mod safety;
mod serve;
mod spill;
mod util;
