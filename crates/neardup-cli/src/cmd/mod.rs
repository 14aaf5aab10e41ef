//! One module per subcommand; each exposes a clap `Args` struct and a `run` function.
pub mod index_cmds;
