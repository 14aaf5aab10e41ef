//! The `neardup` command-line tool: a thin face over the `neardup` library.
use clap::{Parser, Subcommand};

/// mimalloc: the server spends ~13 % of its CPU in glibc malloc/free under load.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod cmd;
mod input;
mod memory;
mod output;

/// Find near-duplicate text: fingerprints, exact Hamming search, corpus dedup.
#[derive(Debug, Parser)]
#[command(name = "neardup", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the 64-bit simhash of each document.
    Fingerprint(cmd::fingerprint::FingerprintArgs),
    /// Fingerprint two documents and print their Hamming distance (and why, with --explain).
    Compare(cmd::compare::CompareArgs),
    /// Deduplicate a corpus: which documents are near-duplicates of which, in clusters.
    Dedup(cmd::dedup::Args),
    /// Build evaluation sets with planted near-duplicates and score dedup output.
    Eval(cmd::eval::Args),
    /// Run the online check-and-insert HTTP service.
    Serve(cmd::serve::Args),
    /// Every pair of fingerprints within Hamming distance K in a fingerprint file.
    Pairs(cmd::index_cmds::PairsArgs),
    /// For each query fingerprint, every stored fingerprint within Hamming distance K.
    Search(cmd::index_cmds::SearchArgs),
}

fn main() {
    let cli = Cli::parse();
    if matches!(
        cli.command,
        Command::Fingerprint(_) | Command::Compare(_) | Command::Dedup(_) | Command::Eval(_)
    ) {
        memory::batch_pages();
    }
    let result = match cli.command {
        Command::Fingerprint(a) => cmd::fingerprint::run(a),
        Command::Compare(a) => cmd::compare::run(a),
        Command::Dedup(a) => cmd::dedup::run(a),
        Command::Eval(a) => cmd::eval::run(a),
        Command::Serve(a) => cmd::serve::run(a),
        Command::Pairs(a) => cmd::index_cmds::run_pairs(a),
        Command::Search(a) => cmd::index_cmds::run_search(a),
    };
    if let Err(e) = result {
        // A closed pipe on standard output (`neardup fingerprint big.jsonl | head -1`) is how
        // the reader says it has enough: exit quietly, as ripgrep does.
        if is_broken_pipe(&e) {
            std::process::exit(0);
        }
        eprintln!("error: {e:#}");
        std::process::exit(2);
    }
}

/// Whether `e` is, or was caused by, a write to a closed pipe.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            || c.downcast_ref::<serde_json::Error>()
                .and_then(|j| j.io_error_kind())
                .is_some_and(|k| k == std::io::ErrorKind::BrokenPipe)
    })
}
