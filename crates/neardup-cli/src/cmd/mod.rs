//! One module per subcommand; each exposes a clap `Args` struct and a `run` function.
pub mod common;
pub mod compare;
pub mod dedup;
pub mod eval;
pub mod fingerprint;
pub mod index_cmds;
pub mod serve;
