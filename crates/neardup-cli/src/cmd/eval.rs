//! `neardup eval` (being written).

/// Arguments of `neardup eval`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `neardup eval`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("neardup eval is not implemented yet")
}
