//! `fleet kustomize DIR`: prints what `kustomize build DIR` (v4.5.4) prints, byte for byte,
//! or an error naming the file, line and field on stderr with a non-zero exit.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

/// Arguments of `fleet kustomize`.
#[derive(Args, Debug)]
pub struct KustomizeArgs {
    /// Directory holding a kustomization.yaml (default: current directory).
    #[arg(default_value = ".")]
    pub dir: PathBuf,
}

/// Runs the build; on failure prints `Error: <message>` and exits with status 1.
pub fn run(args: KustomizeArgs) -> anyhow::Result<()> {
    match fleet_render::kustomize::build_yaml(&args.dir) {
        Ok(out) => {
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(out.as_bytes())?;
            stdout.flush()?;
            Ok(())
        }
        Err(e) => {
            eprintln!("Error: {e}");
            std::process::exit(1);
        }
    }
}
