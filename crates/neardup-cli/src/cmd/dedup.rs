//! `neardup dedup` (being written).

/// Arguments of `neardup dedup`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `neardup dedup`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("neardup dedup is not implemented yet")
}
