//! `fleet template CHART`: prints what `helm template` prints (helm v3.6.2), or Helm's error
//! (naming the template and line) on stderr with a non-zero exit.

use std::path::PathBuf;

use clap::Args;
use fleet_render::helm::{TemplateOptions, ValueOptions, template_path};

/// Arguments of `fleet template` (flag names as `helm template`).
#[derive(Args, Debug)]
pub struct TemplateArgs {
    /// Chart directory or packaged `.tgz`.
    pub chart: PathBuf,
    /// Release name (`.Release.Name`).
    #[arg(long, default_value = "RELEASE-NAME")]
    pub name: String,
    /// Release namespace (`.Release.Namespace`).
    #[arg(short = 'n', long, default_value = "default")]
    pub namespace: String,
    /// Values files, later ones win (`-` reads stdin).
    #[arg(short = 'f', long = "values")]
    pub values: Vec<PathBuf>,
    /// Set values (`a.b=1,c[0]=x`).
    #[arg(long = "set")]
    pub set: Vec<String>,
    /// Set string values.
    #[arg(long = "set-string")]
    pub set_string: Vec<String>,
    /// Set values from files (`key=path`).
    #[arg(long = "set-file")]
    pub set_file: Vec<String>,
    /// Kubernetes version for `.Capabilities.KubeVersion`.
    #[arg(long = "kube-version")]
    pub kube_version: Option<String>,
    /// Extra API versions for `.Capabilities.APIVersions`.
    #[arg(short = 'a', long = "api-versions")]
    pub api_versions: Vec<String>,
    /// Include the chart's `crds/` in the output.
    #[arg(long = "include-crds")]
    pub include_crds: bool,
    /// Set `.Release.IsUpgrade` instead of `.Release.IsInstall`.
    #[arg(long = "is-upgrade")]
    pub is_upgrade: bool,
}

/// Runs the command; on failure prints Helm's message and exits with status 1.
pub fn run(args: TemplateArgs) -> anyhow::Result<()> {
    let vo = ValueOptions {
        value_files: args.values,
        values: args.set,
        string_values: args.set_string,
        file_values: args.set_file,
    };
    let opts = TemplateOptions {
        release_name: args.name,
        namespace: args.namespace,
        kube_version: args.kube_version,
        api_versions: args.api_versions,
        include_crds: args.include_crds,
        is_upgrade: args.is_upgrade,
    };
    let result = vo
        .merge()
        .and_then(|vals| template_path(&args.chart, &vals, &opts));
    match result {
        Ok(out) => {
            use std::io::Write as _;
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(out.as_bytes())?;
            stdout.flush()?;
            Ok(())
        }
        Err(e) => {
            if e.during_render {
                eprintln!(
                    "Error: {}\n\nUse --debug flag to render out invalid YAML",
                    e.message
                );
            } else {
                eprintln!("Error: {}", e.message);
            }
            std::process::exit(1);
        }
    }
}
