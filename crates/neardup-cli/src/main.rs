//! The `neardup` command-line tool: a thin face over the `neardup` library.
use clap::{Parser, Subcommand};

mod cmd;

/// Find near-duplicate text: fingerprints, exact Hamming search, corpus dedup.
#[derive(Debug, Parser)]
#[command(name = "neardup", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Every pair of fingerprints within Hamming distance K in a fingerprint file.
    Pairs(cmd::index_cmds::PairsArgs),
    /// For each query fingerprint, every stored fingerprint within Hamming distance K.
    Search(cmd::index_cmds::SearchArgs),
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Pairs(a) => cmd::index_cmds::run_pairs(a),
        Command::Search(a) => cmd::index_cmds::run_search(a),
    };
    if let Err(e) = result {
        eprintln!("error: {e:#}");
        std::process::exit(2);
    }
}
