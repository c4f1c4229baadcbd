//! `fleet apply NAME [PATH...]`: builds Bundles from directories (upstream flags). With `-o` the
//! Bundles are written as YAML and nothing touches a cluster; otherwise they are created,
//! updated and pruned through the Kubernetes API of the kubeconfig.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use fleet_bundle::{ApplyOptions, Auth};

/// Flags of `fleet apply`, spelled as upstream.
#[derive(Args, Debug)]
pub struct ApplyArgs {
    /// Bundle (GitRepo) name, then the paths (globs) to read; default `.`.
    #[arg(required = true, num_args = 1..)]
    pub args: Vec<String>,
    /// Output file, `-` for stdout: write YAML instead of applying to a cluster.
    #[arg(short = 'o', long = "output")]
    pub output: Option<String>,
    /// Namespace of the Bundles.
    #[arg(
        short = 'n',
        long = "namespace",
        env = "NAMESPACE",
        default_value = "fleet-local"
    )]
    pub namespace: String,
    /// Alternative name of fleet.yaml, relative to each bundle directory.
    #[arg(short = 'b', long = "bundle-file")]
    pub bundle_file: Option<String>,
    /// Labels for the Bundles (`k=v`, repeatable or comma-separated).
    #[arg(short = 'l', long = "label")]
    pub label: Vec<String>,
    /// Additional targets and target restrictions (JSON/YAML BundleSpec).
    #[arg(long = "targets-file")]
    pub targets_file: Option<PathBuf>,
    /// Compress every resource.
    #[arg(short = 'c', long = "compress")]
    pub compress: bool,
    /// Service account for the deployments.
    #[arg(short = 'a', long = "service-account")]
    pub service_account: Option<String>,
    /// Generation number used to force sync the deployment.
    #[arg(long = "sync-generation", default_value_t = 0)]
    pub sync_generation: i64,
    /// Ensure the bundle goes to this target namespace.
    #[arg(long = "target-namespace")]
    pub target_namespace: Option<String>,
    /// Create the Bundles paused.
    #[arg(long = "paused")]
    pub paused: bool,
    /// Commit to record in the `fleet.cattle.io/commit` label (default: HEAD of `.`).
    #[arg(long = "commit", env = "COMMIT")]
    pub commit: Option<String>,
    /// Basic auth user for Helm repositories.
    #[arg(long = "username", env = "HELM_USERNAME")]
    pub username: Option<String>,
    /// File holding the basic auth password.
    #[arg(long = "password-file")]
    pub password_file: Option<PathBuf>,
    /// Custom CA certificates for Helm repositories.
    #[arg(long = "cacerts-file")]
    pub cacerts_file: Option<PathBuf>,
    /// SSH private key for Helm repositories (accepted for compatibility).
    #[arg(long = "ssh-privatekey-file")]
    pub ssh_privatekey_file: Option<PathBuf>,
    /// Helm credentials are only sent to repositories matching this regex.
    #[arg(long = "helm-repo-url-regex")]
    pub helm_repo_url_regex: Option<String>,
    /// Keep resources after the Bundle is deleted.
    #[arg(long = "keep-resources")]
    pub keep_resources: bool,
    /// Delete the target namespace after the Bundle is deleted.
    #[arg(long = "delete-namespace")]
    pub delete_namespace: bool,
    /// YAML map of path glob → credentials.
    #[arg(long = "helm-credentials-by-path-file")]
    pub helm_credentials_by_path_file: Option<PathBuf>,
    /// Plain HTTP for Helm (OCI) registries.
    #[arg(long = "helm-basic-http")]
    pub helm_basic_http: bool,
    /// Skip TLS verification for Helm repositories.
    #[arg(long = "helm-insecure-skip-tls")]
    pub helm_insecure_skip_tls: bool,
    /// Roll back changes made outside of Fleet.
    #[arg(long = "correct-drift")]
    pub correct_drift: bool,
    /// Use force when correcting drift.
    #[arg(long = "correct-drift-force")]
    pub correct_drift_force: bool,
    /// Keep Helm history of failed rollbacks.
    #[arg(long = "correct-drift-keep-fail-history")]
    pub correct_drift_keep_fail_history: bool,
    /// OCI storage registry secret name (accepted for compatibility).
    #[arg(long = "oci-registry-secret")]
    pub oci_registry_secret: Option<String>,
    /// Driven scan: every path is one bundle, `dir[SEP fleet-file]`.
    #[arg(long = "driven-scan")]
    pub driven_scan: bool,
    /// Separator of driven-scan paths.
    #[arg(long = "driven-scan-sep", default_value = ":")]
    pub driven_scan_sep: String,
    /// Maximum concurrent bundle creations (accepted for compatibility).
    #[arg(
        long = "bundle-creation-max-concurrency",
        env = "FLEET_BUNDLE_CREATION_MAX_CONCURRENCY",
        default_value_t = 4
    )]
    pub bundle_creation_max_concurrency: usize,
    /// Allow imageScans in fleet.yaml.
    #[arg(long = "imagescan-enabled")]
    pub imagescan_enabled: bool,
    /// Kubeconfig for online mode (default: $KUBECONFIG or ~/.kube/config).
    #[arg(long = "kubeconfig", env = "KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
}

/// Parses `-l` values: `k=v` or `k=v,k2=v2`.
pub fn parse_labels(items: &[String]) -> anyhow::Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for item in items {
        for kv in item.split(',').filter(|s| !s.is_empty()) {
            let (k, v) = kv
                .split_once('=')
                .with_context(|| format!("--label {kv:?}: expected key=value"))?;
            out.insert(k.to_string(), v.to_string());
        }
    }
    Ok(out)
}

/// HEAD commit of the git repository containing `dir`, read from `.git` without a git binary.
pub fn current_commit(dir: &std::path::Path) -> Option<String> {
    let mut d = std::fs::canonicalize(dir).ok()?;
    loop {
        let git = d.join(".git");
        if git.is_dir() {
            let head = std::fs::read_to_string(git.join("HEAD")).ok()?;
            let head = head.trim();
            let Some(r) = head.strip_prefix("ref: ") else {
                return Some(head.to_string());
            };
            if let Ok(s) = std::fs::read_to_string(git.join(r)) {
                return Some(s.trim().to_string());
            }
            let packed = std::fs::read_to_string(git.join("packed-refs")).ok()?;
            return packed.lines().find_map(|l| {
                let (h, name) = l.split_once(' ')?;
                (name == r).then(|| h.to_string())
            });
        }
        if !d.pop() {
            return None;
        }
    }
}

fn read_opt(p: &Option<PathBuf>) -> anyhow::Result<Vec<u8>> {
    match p {
        None => Ok(Vec::new()),
        Some(p) => match std::fs::read(p) {
            Ok(b) => Ok(b),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(e).with_context(|| p.display().to_string()),
        },
    }
}

/// Turns the flags into reader options.
pub fn options(a: &ApplyArgs) -> anyhow::Result<ApplyOptions> {
    let mut labels = parse_labels(&a.label)?;
    let commit = a
        .commit
        .clone()
        .filter(|c| !c.is_empty())
        .or_else(|| current_commit(std::path::Path::new(".")));
    if let Some(c) = commit {
        labels.insert(fleet_api::keys::COMMIT_LABEL.into(), c);
    }
    let mut auth = Auth::default();
    if let (Some(u), Some(_)) = (&a.username, &a.password_file) {
        auth.username = u.clone();
        auth.password = String::from_utf8_lossy(&read_opt(&a.password_file)?).into_owned();
    }
    auth.ca_bundle = read_opt(&a.cacerts_file)?;
    auth.basic_http = a.helm_basic_http;
    auth.insecure_skip_verify = a.helm_insecure_skip_tls;
    let mut auth_by_path = BTreeMap::new();
    if a.helm_credentials_by_path_file.is_some() {
        let raw = read_opt(&a.helm_credentials_by_path_file)?;
        let file = a.helm_credentials_by_path_file.clone().unwrap_or_default();
        auth_by_path = Auth::by_path(&file, &String::from_utf8_lossy(&raw))?;
    }
    Ok(ApplyOptions {
        namespace: a.namespace.clone(),
        bundle_file: a.bundle_file.clone().unwrap_or_default(),
        targets_file: a.targets_file.clone(),
        compress: a.compress,
        labels,
        service_account: a.service_account.clone().unwrap_or_default(),
        target_namespace: a.target_namespace.clone().unwrap_or_default(),
        paused: a.paused,
        sync_generation: a.sync_generation,
        keep_resources: a.keep_resources,
        delete_namespace: a.delete_namespace,
        correct_drift: fleet_api::CorrectDrift {
            enabled: a.correct_drift,
            force: a.correct_drift_force,
            keep_fail_history: a.correct_drift_keep_fail_history,
        },
        driven_scan: a.driven_scan,
        driven_scan_sep: a.driven_scan_sep.clone(),
        helm_repo_url_regex: a.helm_repo_url_regex.clone().unwrap_or_default(),
        auth,
        auth_by_path,
        imagescan_enabled: a.imagescan_enabled,
    })
}

/// Runs `fleet apply`.
pub fn run(a: ApplyArgs) -> anyhow::Result<()> {
    let opts = options(&a)?;
    let (name, paths) = a
        .args
        .split_first()
        .context("the bundle name is required as the first argument")?;
    let cwd = std::env::current_dir()?;
    let bundles = fleet_bundle::create_bundles(&cwd, name, paths, &opts)?;
    match a.output.as_deref() {
        Some(out) => {
            let text = fleet_bundle::export::export_bundles(&bundles)?;
            if out == "-" {
                let mut o = std::io::stdout().lock();
                o.write_all(text.as_bytes())?;
                o.flush()?;
            } else {
                std::fs::write(out, text).with_context(|| out.to_string())?;
            }
            Ok(())
        }
        None => apply_online(a.kubeconfig.as_deref(), name, &opts, bundles),
    }
}

/// Online mode: create/update the Bundles (values in the values Secret) and prune stale ones.
fn apply_online(
    kubeconfig: Option<&std::path::Path>,
    repo: &str,
    opts: &ApplyOptions,
    bundles: Vec<fleet_bundle::BuiltBundle>,
) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let client = fleet_kube::client(kubeconfig).await.with_context(|| {
            if kubeconfig.is_none() {
                "no kubeconfig: pass --kubeconfig, set KUBECONFIG, or use -o -".to_string()
            } else {
                "connecting to the cluster".to_string()
            }
        })?;
        apply_bundles(client, repo, &opts.namespace, bundles).await
    })
}

/// The library's online apply, printing each change on stderr as upstream does.
pub async fn apply_bundles(
    client: kube::Client,
    repo: &str,
    namespace: &str,
    bundles: Vec<fleet_bundle::BuiltBundle>,
) -> anyhow::Result<()> {
    fleet_bundle::online::apply_bundles(client, repo, namespace, bundles, &mut |line| {
        eprintln!("{line}")
    })
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_parse() {
        let l = parse_labels(&["a=b,c=d".into(), "e=f=g".into()]).unwrap();
        assert_eq!(l["a"], "b");
        assert_eq!(l["c"], "d");
        assert_eq!(l["e"], "f=g");
        assert!(parse_labels(&["nope".into()]).is_err());
    }

    /// End to end against our embedded API server (`fleet server`), when the binary is built.
    #[test]
    fn online_apply_creates_updates_and_prunes() {
        use fleet_api::Bundle;
        use k8s_openapi::api::core::v1::{Namespace, Secret};
        use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
        use kube::api::{Api, ListParams, PostParams};
        use std::io::BufRead;

        let bin = std::env::current_exe()
            .ok()
            .and_then(|p| p.parent().and_then(|d| d.parent()).map(|d| d.join("fleet")))
            .filter(|p| p.exists());
        let Some(bin) = bin else {
            println!("skipping: the fleet binary is not built next to the test executable");
            return;
        };
        let data = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new(&bin)
            .args(["server", "--data-dir"])
            .arg(data.path())
            // The API only: this test installs the CRDs and checks `fleet apply`'s own writes.
            .args(["--listen", "127.0.0.1:0", "--no-controllers"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(line.starts_with("ready "), "{line}");
        let repo = tempfile::tempdir().unwrap();
        for d in ["a", "b"] {
            std::fs::create_dir_all(repo.path().join(d)).unwrap();
            std::fs::write(
                repo.path().join(d).join("fleet.yaml"),
                "helm:\n  values: {replicas: 2}\n",
            )
            .unwrap();
            std::fs::write(
                repo.path().join(d).join("cm.yaml"),
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shared\n",
            )
            .unwrap();
        }
        let mut opts = ApplyOptions::default();
        opts.labels
            .insert(fleet_api::keys::REPO_LABEL.into(), "r".into());
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let client = fleet_kube::client(Some(&data.path().join("kubeconfig")))
                .await
                .unwrap();
            let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
            for c in fleet_api::crds::all() {
                crds.create(&PostParams::default(), &c).await.unwrap();
            }
            let nss: Api<Namespace> = Api::all(client.clone());
            let ns: Namespace =
                serde_json::from_value(serde_json::json!({"metadata": {"name": "fleet-local"}}))
                    .unwrap();
            nss.create(&PostParams::default(), &ns).await.unwrap();
            let bundles: Api<Bundle> = Api::namespaced(client.clone(), "fleet-local");
            for _ in 0..50 {
                if bundles.list(&ListParams::default()).await.is_ok() {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            let built =
                fleet_bundle::create_bundles(repo.path(), "r", &["a".into()], &opts).unwrap();
            apply_bundles(client.clone(), "r", "fleet-local", built)
                .await
                .unwrap();
            let a = bundles.get("r-a").await.unwrap();
            assert_eq!(a.spec.values_hash.len(), 64);
            assert!(
                a.spec
                    .options
                    .helm
                    .as_ref()
                    .and_then(|h| h.values.as_ref())
                    .is_none(),
                "values moved to the Secret"
            );
            let secrets: Api<Secret> = Api::namespaced(client.clone(), "fleet-local");
            let s = secrets.get("r-a").await.unwrap();
            assert_eq!(
                s.type_.as_deref(),
                Some(fleet_api::keys::SECRET_TYPE_BUNDLE_VALUES)
            );
            assert!(s.data.unwrap().contains_key("values.yaml"));
            // Same repo, other path: r-a is pruned and its overlapping ConfigMap recorded.
            let built =
                fleet_bundle::create_bundles(repo.path(), "r", &["b".into()], &opts).unwrap();
            apply_bundles(client.clone(), "r", "fleet-local", built.clone())
                .await
                .unwrap();
            assert!(bundles.get_opt("r-a").await.unwrap().is_none());
            let b = bundles.get("r-b").await.unwrap();
            assert_eq!(b.spec.options.overwrites.len(), 1);
            // Re-applying updates in place.
            apply_bundles(client.clone(), "r", "fleet-local", built)
                .await
                .unwrap();
            assert_eq!(
                bundles
                    .list(&ListParams::default())
                    .await
                    .unwrap()
                    .items
                    .len(),
                1
            );
        });
        let _ = child.kill();
        let _ = child.wait();
    }
}
