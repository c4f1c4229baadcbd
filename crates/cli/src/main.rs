//! The one `fleet` binary: argument parsing and wiring only (one module per subcommand).

use clap::{Parser, Subcommand};

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

mod agent_cmd;
mod apply_cmd;
mod bench;
mod controller_cmd;
mod dev;
mod election;
mod install_cmd;
mod kustomize_cmd;
mod server;
mod target_cmd;
mod template_cmd;
mod test_cmd;

#[derive(Parser)]
#[command(name = "fleet", version, about = "GitOps at scale for Kubernetes")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Embedded Kubernetes-compatible API server over HTTPS (CA and admin kubeconfig in DIR).
    Server(server::ServerArgs),
    /// The whole system on one machine: a manager, N clusters with agents, a GitRepo.
    Dev(dev::DevArgs),
    /// Benchmarks that print the figures the README quotes.
    Bench(bench::BenchArgs),
    /// Render a Helm chart like `helm template`.
    Template(template_cmd::TemplateArgs),
    /// Build a kustomization like `kustomize build DIR`.
    Kustomize(kustomize_cmd::KustomizeArgs),
    /// Build Bundles from directories; print them (`-o`) or apply them to a cluster.
    Apply(Box<apply_cmd::ApplyArgs>),
    /// Print the BundleDeployments a bundle would produce for given clusters.
    Target(target_cmd::TargetArgs),
    /// Render a bundle for a hypothetical cluster.
    Test(test_cmd::TestArgs),
    /// Manager controllers against any Kubernetes API (kubeconfig or in-cluster).
    Controller(controller_cmd::ControllerArgs),
    /// Print installation manifests (`fleet install crds`).
    Install(install_cmd::InstallArgs),
    /// Run the per-cluster agent against a downstream cluster.
    Agent(agent_cmd::AgentArgs),
}

fn main() -> anyhow::Result<()> {
    // Warnings show unless RUST_LOG says otherwise: an agent retrying against an unreachable
    // manager, or a controller failing a write, is what an operator looks for first.
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::builder()
                .with_default_directive(tracing_subscriber::filter::LevelFilter::WARN.into())
                .from_env_lossy(),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match cli.command {
        Command::Server(args) => server::run(args),
        Command::Dev(args) => dev::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Template(args) => template_cmd::run(args),
        Command::Kustomize(args) => kustomize_cmd::run(args),
        Command::Install(args) => install_cmd::run(args),
        Command::Controller(args) => controller_cmd::run(args),
        Command::Apply(args) => apply_cmd::run(*args),
        Command::Target(args) => target_cmd::run(args),
        Command::Test(args) => test_cmd::run(args),
        Command::Agent(args) => agent_cmd::run(args),
    }
}
