//! `neardup serve` (being written).

/// Arguments of `neardup serve`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `neardup serve`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("neardup serve is not implemented yet")
}
