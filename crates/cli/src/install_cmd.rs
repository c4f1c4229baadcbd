//! `fleet install crds`: prints the CustomResourceDefinitions of every Fleet kind as YAML, ready
//! for `kubectl apply -f -`.

use std::io::Write;

use clap::{Args, Subcommand};

/// Arguments of `fleet install`.
#[derive(Args)]
pub struct InstallArgs {
    #[command(subcommand)]
    what: InstallWhat,
}

#[derive(Subcommand)]
enum InstallWhat {
    /// Print the fleet.cattle.io CRDs (status subresources, printer columns) as YAML.
    Crds,
}

/// Runs `fleet install ...`.
pub fn run(args: InstallArgs) -> anyhow::Result<()> {
    match args.what {
        InstallWhat::Crds => {
            let text = crds_yaml()?;
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())?;
            out.flush()?;
            Ok(())
        }
    }
}

/// All CRDs as one multi-document YAML stream.
pub fn crds_yaml() -> anyhow::Result<String> {
    let mut docs = Vec::new();
    for crd in fleet_api::crds::all() {
        docs.push(serde_json::to_value(&crd)?);
    }
    fleet_bundle::export::to_yaml_stream(&docs).map_err(anyhow::Error::msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crds_yaml_round_trips() {
        let text = crds_yaml().unwrap();
        let docs: Vec<serde_json::Value> = serde_saphyr::from_multiple(&text).unwrap();
        assert_eq!(docs.len(), 14);
        for d in &docs {
            assert_eq!(d["kind"], "CustomResourceDefinition");
            assert_eq!(d["spec"]["group"], "fleet.cattle.io");
        }
        let bundle = docs
            .iter()
            .find(|d| d["metadata"]["name"] == "bundles.fleet.cattle.io")
            .unwrap();
        assert!(bundle["spec"]["versions"][0]["subresources"]["status"].is_object());
        assert_eq!(
            bundle["spec"]["versions"][0]["additionalPrinterColumns"][0]["name"],
            "BundleDeployments-Ready"
        );
    }
}
