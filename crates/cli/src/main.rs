//! The one `fleet` binary: argument parsing and wiring only.

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "fleet", version, about = "GitOps at scale for Kubernetes")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match cli.command {}
}
