//! `neardup pairs` and `neardup search`: exact Hamming search over raw fingerprint files.

/// Arguments of `neardup pairs`.
#[derive(Debug, clap::Args)]
pub struct PairsArgs {}

/// Arguments of `neardup search`.
#[derive(Debug, clap::Args)]
pub struct SearchArgs {}

/// Runs `neardup pairs`.
pub fn run_pairs(_args: PairsArgs) -> anyhow::Result<()> {
    anyhow::bail!("not implemented yet")
}

/// Runs `neardup search`.
pub fn run_search(_args: SearchArgs) -> anyhow::Result<()> {
    anyhow::bail!("not implemented yet")
}
