//! Options of `fleet apply` that shape the Bundles (flags of upstream's `fleet apply`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use fleet_api::CorrectDrift;

/// Credentials for Helm repositories (sent only where `helm_repo_url_regex` matches).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Auth {
    /// Basic auth user.
    pub username: String,
    /// Basic auth password.
    pub password: String,
    /// Extra CA certificates (PEM).
    pub ca_bundle: Vec<u8>,
    /// Skip TLS verification.
    pub insecure_skip_verify: bool,
    /// Use plain HTTP for OCI registries.
    pub basic_http: bool,
}

impl Auth {
    /// Per-path credentials from a `secrets-path.yaml` (what `--helm-credentials-by-path-file`
    /// reads, and the key of a GitRepo's `helmSecretNameForPaths` Secret): a map from bundle
    /// path to `username`, `password`, `caBundle`, `insecureSkipVerify`, `basicHTTP`.
    pub fn by_path(
        file: &std::path::Path,
        text: &str,
    ) -> Result<BTreeMap<String, Auth>, crate::BundleError> {
        let m: BTreeMap<String, serde_json::Value> = crate::yaml::from_str(file, text)?;
        Ok(m.into_iter()
            .map(|(path, v)| {
                let s = |key: &str| {
                    v.get(key)
                        .and_then(|x| x.as_str())
                        .unwrap_or("")
                        .to_string()
                };
                let b = |key: &str| v.get(key).and_then(|x| x.as_bool()).unwrap_or(false);
                let auth = Auth {
                    username: s("username"),
                    password: s("password"),
                    ca_bundle: s("caBundle").into_bytes(),
                    insecure_skip_verify: b("insecureSkipVerify"),
                    basic_http: b("basicHTTP"),
                };
                (path, auth)
            })
            .collect())
    }
}

/// Everything `fleet apply` needs to turn directories into Bundles.
#[derive(Clone, Debug)]
pub struct ApplyOptions {
    /// Namespace of the Bundles (`-n`).
    pub namespace: String,
    /// Alternative fleet.yaml file name, relative to each bundle directory (`-b`/`--bundle-file`).
    pub bundle_file: String,
    /// Targets file written by the GitRepo controller (`--targets-file`).
    pub targets_file: Option<PathBuf>,
    /// Force `base64+gz` for every resource (`-c`).
    pub compress: bool,
    /// Labels put on every Bundle (`-l`), including `fleet.cattle.io/commit`.
    pub labels: BTreeMap<String, String>,
    /// `--service-account`.
    pub service_account: String,
    /// `--target-namespace`, also copied onto every target.
    pub target_namespace: String,
    /// `--paused`.
    pub paused: bool,
    /// `--sync-generation` → `forceSyncGeneration`.
    pub sync_generation: i64,
    /// `--keep-resources`.
    pub keep_resources: bool,
    /// `--delete-namespace`.
    pub delete_namespace: bool,
    /// `--correct-drift*`.
    pub correct_drift: CorrectDrift,
    /// `--driven-scan`: each path is exactly one bundle, `base[SEP options]`.
    pub driven_scan: bool,
    /// `--driven-scan-sep`.
    pub driven_scan_sep: String,
    /// `--helm-repo-url-regex`.
    pub helm_repo_url_regex: String,
    /// Helm repository credentials.
    pub auth: Auth,
    /// Credentials per bundle path glob (`--helm-credentials-by-path-file`).
    pub auth_by_path: BTreeMap<String, Auth>,
    /// `--imagescan-enabled`.
    pub imagescan_enabled: bool,
}

impl Default for ApplyOptions {
    fn default() -> Self {
        ApplyOptions {
            namespace: fleet_api::keys::DEFAULT_NAMESPACE.into(),
            bundle_file: String::new(),
            targets_file: None,
            compress: false,
            labels: BTreeMap::new(),
            service_account: String::new(),
            target_namespace: String::new(),
            paused: false,
            sync_generation: 0,
            keep_resources: false,
            delete_namespace: false,
            correct_drift: CorrectDrift::default(),
            driven_scan: false,
            driven_scan_sep: ":".into(),
            helm_repo_url_regex: String::new(),
            auth: Auth::default(),
            auth_by_path: BTreeMap::new(),
            imagescan_enabled: false,
        }
    }
}
