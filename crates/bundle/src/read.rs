//! Directory → Bundles, following upstream `fleet apply` (`apply.go`, `bundlereader/read.go`,
//! `resources.go`): bundle discovery, fleet.yaml, values files, resources, targets assembly and
//! CLI overrides.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use fleet_api::fleetyaml::FleetYaml;
use fleet_api::keys::ENCODING_BASE64_GZ;
use fleet_api::state::BundleState;
use fleet_api::{
    Bundle, BundleResource, BundleSpec, BundleTarget, GitTarget, HelmOptions, ImageScan,
};
use kube::core::ObjectMeta;

use crate::error::BundleError;
use crate::options::{ApplyOptions, Auth};
use crate::paths;
use crate::walk;

/// Bundles whose JSON is at least this large are re-read with every resource compressed
/// (etcd's object size limit).
pub const COMPRESS_THRESHOLD: usize = 1_000_000;

/// One produced Bundle and the ImageScans declared next to it.
#[derive(Clone, Debug)]
pub struct BuiltBundle {
    /// The directory (relative to the working directory) the bundle was read from.
    pub path: String,
    /// The Bundle.
    pub bundle: Bundle,
    /// ImageScans from fleet.yaml `imageScans`.
    pub scans: Vec<ImageScan>,
}

/// Reads `paths` (globs relative to `cwd`; default `.`) into Bundles named after `repo_name`.
pub fn create_bundles(
    cwd: &Path,
    repo_name: &str,
    paths_in: &[String],
    opts: &ApplyOptions,
) -> Result<Vec<BuiltBundle>, BundleError> {
    let default = vec![".".to_string()];
    let bases = if paths_in.is_empty() {
        &default
    } else {
        paths_in
    };
    let mut out = Vec::new();
    if opts.driven_scan {
        for base in bases {
            let parts: Vec<&str> = base.split(opts.driven_scan_sep.as_str()).collect();
            let (dir, file) = match parts.as_slice() {
                [d] => (d.to_string(), String::new()),
                [d, f] => (d.to_string(), f.to_string()),
                _ => return Err(BundleError::Other(format!("invalid bundle path: {base:?}"))),
            };
            let mut o = opts.clone();
            o.bundle_file = file;
            if let Some(b) = bundle_from_dir(cwd, repo_name, &dir, &o)? {
                out.push(b);
            }
        }
    } else {
        for base in bases {
            for matched in paths::glob_dirs(cwd, base)? {
                let mut dirs = Vec::new();
                discover(cwd, &matched, &matched, &mut dirs)?;
                for dir in dirs {
                    if let Some(b) = bundle_from_dir(cwd, repo_name, &dir, opts)? {
                        out.push(b);
                    }
                }
            }
        }
    }
    if out.is_empty() {
        return Err(BundleError::NoResources(bases.to_vec()));
    }
    Ok(out)
}

fn has_fleet_yaml(dir: &Path) -> bool {
    dir.join("fleet.yaml").exists() || dir.join("fleet.yml").exists()
}

/// Walks `path` in lexical order (skipping `.git`) and records the directories that become
/// bundles: the root if it has a fleet.yaml or YAML files outside fleet.yaml subtrees, and every
/// subdirectory with a fleet.yaml.
fn discover(cwd: &Path, base: &str, path: &str, out: &mut Vec<String>) -> Result<(), BundleError> {
    let abs = cwd.join(path);
    let is_root = base == path;
    if is_root {
        if has_fleet_yaml(&abs) || has_yaml_outside_fleet_dirs(&abs)? {
            out.push(path.to_string());
        }
    } else if has_fleet_yaml(&abs) {
        out.push(path.to_string());
    }
    let mut entries: Vec<_> = std::fs::read_dir(&abs)
        .map_err(|e| BundleError::io(&abs, e))?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().map(|t| t.is_dir()).unwrap_or(false))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    entries.sort();
    for name in entries {
        if name == ".git" {
            continue;
        }
        discover(cwd, base, &paths::join(&[path, &name]), out)?;
    }
    Ok(())
}

fn has_yaml_outside_fleet_dirs(dir: &Path) -> Result<bool, BundleError> {
    if has_fleet_yaml(dir) {
        return Ok(false);
    }
    let rd = std::fs::read_dir(dir).map_err(|e| BundleError::io(dir, e))?;
    for e in rd.filter_map(|e| e.ok()) {
        let name = e.file_name().to_string_lossy().into_owned();
        if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            if has_yaml_outside_fleet_dirs(&e.path())? {
                return Ok(true);
            }
        } else if name.ends_with(".yaml") || name.ends_with(".yml") {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Builds the bundle of one directory; `None` when it has no resources.
pub fn bundle_from_dir(
    cwd: &Path,
    repo_name: &str,
    dir: &str,
    opts: &ApplyOptions,
) -> Result<Option<BuiltBundle>, BundleError> {
    let mut id = paths::join(&[repo_name, dir]);
    if !opts.bundle_file.is_empty() {
        let f = &opts.bundle_file;
        let stem = match f.rfind('.') {
            Some(i) if !f[i..].contains('/') => &f[..i],
            _ => f.as_str(),
        };
        id = paths::join(&[&id, stem]);
    }
    let name = fleet_api::names::helm_release_name(&id);
    let base = if dir == "." {
        cwd.to_path_buf()
    } else {
        cwd.join(dir)
    };
    let mut o = opts.clone();
    o.auth = auth_for_path(opts, dir)?;
    let (file, text) = read_fleet_yaml(&base, &opts.bundle_file)?;
    let (mut bundle, scans) = load_bundle(&name, &base, &file, &text, &o)?;
    if bundle.spec.resources.is_empty() {
        return Ok(None);
    }
    bundle.metadata.namespace = Some(opts.namespace.clone());
    Ok(Some(BuiltBundle {
        path: dir.to_string(),
        bundle,
        scans,
    }))
}

/// Credentials for a bundle path: the first `--helm-credentials-by-path-file` glob that matches.
fn auth_for_path(opts: &ApplyOptions, dir: &str) -> Result<Auth, BundleError> {
    if opts.auth_by_path.is_empty() {
        return Ok(opts.auth.clone());
    }
    for (glob, auth) in &opts.auth_by_path {
        let m = crate::gomatch::matches(glob, dir).map_err(|_| {
            BundleError::Other(format!(
                "invalid path glob {glob:?} in helm credentials file"
            ))
        })?;
        if m {
            return Ok(auth.clone());
        }
    }
    Ok(Auth::default())
}

fn read_fleet_yaml(base: &Path, bundle_file: &str) -> Result<(PathBuf, String), BundleError> {
    if !bundle_file.is_empty() {
        let p = base.join(bundle_file);
        let text = std::fs::read_to_string(&p).map_err(|e| BundleError::io(&p, e))?;
        return Ok((p, text));
    }
    for n in ["fleet.yaml", "fleet.yml"] {
        let p = base.join(n);
        match std::fs::read_to_string(&p) {
            Ok(t) => return Ok((p, t)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(BundleError::io(&p, e)),
        }
    }
    Ok((base.join("fleet.yaml"), String::new()))
}

/// Reads the bundle; if its JSON reaches [`COMPRESS_THRESHOLD`] bytes, reads it again compressed.
pub fn load_bundle(
    name: &str,
    base: &Path,
    file: &Path,
    text: &str,
    opts: &ApplyOptions,
) -> Result<(Bundle, Vec<ImageScan>), BundleError> {
    let (b, s) = build(name, base, file, text, opts, opts.compress)?;
    if opts.compress {
        return Ok((b, s));
    }
    let size = serde_json::to_vec(&b).map(|v| v.len()).unwrap_or(0);
    if size < COMPRESS_THRESHOLD {
        return Ok((b, s));
    }
    build(name, base, file, text, opts, true)
}

fn validate(fy: &FleetYaml, file: &Path) -> Result<(), BundleError> {
    for (i, dep) in fy.spec.depends_on.iter().enumerate() {
        if dep.name.is_empty() && dep.selector.is_none() {
            return Err(BundleError::Invalid {
                file: file.to_path_buf(),
                key: format!("dependsOn[{i}]"),
                message: "must specify either 'name' or 'selector'".into(),
            });
        }
        for (j, st) in dep.accepted_states.iter().enumerate() {
            if BundleState::parse(st).is_none() {
                let valid: Vec<&str> = {
                    let mut v = BundleState::ALL.to_vec();
                    v.sort_by_key(|s| s.rank());
                    v.into_iter().map(|s| s.as_str()).collect()
                };
                return Err(BundleError::Invalid {
                    file: file.to_path_buf(),
                    key: format!("dependsOn[{i}].acceptedStates[{j}]"),
                    message: format!(
                        "invalid state {st:?}, valid values are: [{}]",
                        valid.join(" ")
                    ),
                });
            }
        }
    }
    Ok(())
}

fn build(
    name: &str,
    base: &Path,
    file: &Path,
    text: &str,
    opts: &ApplyOptions,
    compress: bool,
) -> Result<(Bundle, Vec<ImageScan>), BundleError> {
    let fy: FleetYaml = crate::fleet_yaml(file, text)?;
    validate(&fy, file)?;
    let FleetYaml {
        name: fy_name,
        labels: fy_labels,
        annotations,
        spec,
        target_customizations,
        image_scans,
        override_targets,
    } = fy;
    let mut spec: BundleSpec = spec;

    let mut scans = Vec::new();
    if !image_scans.is_empty() && !opts.imagescan_enabled {
        return Err(BundleError::Invalid {
            file: file.to_path_buf(),
            key: "imageScans".into(),
            message: "imagescan is disabled; remove imagescans from your config files, or enable imagescan".into(),
        });
    }
    for (i, scan) in image_scans.into_iter().enumerate() {
        if scan.spec.image.is_empty() {
            continue;
        }
        if scan.spec.tag_name.is_empty() {
            return Err(BundleError::Invalid {
                file: file.to_path_buf(),
                key: format!("imageScans[{i}].tagName"),
                message: "the name of scan is required".into(),
            });
        }
        let mut s = ImageScan::new(
            &fleet_api::names::safe_concat_name(&["imagescan", name, &i.to_string()]),
            scan.spec,
        );
        s.metadata.namespace = Some(opts.namespace.clone());
        scans.push(s);
    }

    spec.targets.extend(target_customizations);
    for (i, t) in spec.targets.iter_mut().enumerate() {
        if t.name.is_empty() {
            t.name = format!("target{i:03}");
        }
    }
    propagate_helm_chart(&mut spec);
    spec.resources = read_resources(&mut spec, base, file, compress, opts)?;

    let bundle_name = if fy_name.is_empty() {
        name.to_string()
    } else {
        fy_name
    };
    let mut labels = fy_labels.clone();
    for (k, v) in &opts.labels {
        labels.insert(k.clone(), v.clone());
    }
    for (k, v) in fy_labels {
        labels.insert(k, v);
    }
    let mut bundle = Bundle::new(&bundle_name, spec);
    bundle.metadata = ObjectMeta {
        name: Some(bundle_name),
        labels: (!labels.is_empty()).then_some(labels),
        annotations: (!annotations.is_empty()).then_some(annotations),
        ..Default::default()
    };
    let spec = &mut bundle.spec;
    if !opts.service_account.is_empty() {
        spec.options.service_account = opts.service_account.clone();
    }
    spec.options.force_sync_generation = opts.sync_generation;
    if !override_targets.is_empty() {
        for t in override_targets {
            spec.targets.push(target_from_git(&t));
            spec.target_restrictions.push(t);
        }
    } else if let Some(tf) = &opts.targets_file {
        let text = std::fs::read_to_string(tf).map_err(|e| BundleError::io(tf, e))?;
        let extra: BundleSpec = crate::yaml::from_str(tf, &text)?;
        spec.targets.extend(extra.targets);
        spec.target_restrictions.extend(extra.target_restrictions);
    }
    if spec.targets.is_empty() {
        spec.targets.push(BundleTarget {
            name: "default".into(),
            cluster_group: "default".into(),
            ..Default::default()
        });
    }
    if !opts.target_namespace.is_empty() {
        spec.options.namespace = opts.target_namespace.clone();
        for t in &mut spec.targets {
            t.options.namespace = opts.target_namespace.clone();
        }
    }
    if opts.paused {
        spec.paused = true;
    }
    if opts.keep_resources {
        spec.options.keep_resources = true;
    }
    if opts.delete_namespace {
        spec.options.delete_namespace = true;
    }
    if opts.correct_drift.enabled {
        spec.options.correct_drift = Some(opts.correct_drift.clone());
    }
    Ok((bundle, scans))
}

fn target_from_git(t: &GitTarget) -> BundleTarget {
    BundleTarget {
        name: t.name.clone(),
        cluster_name: t.cluster_name.clone(),
        cluster_selector: t.cluster_selector.clone(),
        cluster_group: t.cluster_group.clone(),
        cluster_group_selector: t.cluster_group_selector.clone(),
        ..Default::default()
    }
}

/// Root `helm.repo/chart/version` fill in targets' helm blocks that lack them.
fn propagate_helm_chart(spec: &mut BundleSpec) {
    let Some(root) = spec.options.helm.clone() else {
        return;
    };
    for t in &mut spec.targets {
        if let Some(h) = t.options.helm.as_mut() {
            if h.repo.is_empty() {
                h.repo = root.repo.clone();
            }
            if h.chart.is_empty() {
                h.chart = root.chart.clone();
            }
            if h.version.is_empty() {
                h.version = root.version.clone();
            }
        }
    }
}

/// wrangler `data.MergeMaps`: nested maps merge, anything else from `b` wins.
pub fn merge_maps(
    a: &mut serde_json::Map<String, serde_json::Value>,
    b: serde_json::Map<String, serde_json::Value>,
) {
    for (k, v) in b {
        match (a.get_mut(&k), v) {
            (Some(serde_json::Value::Object(av)), serde_json::Value::Object(bv)) => {
                merge_maps(av, bv)
            }
            (_, v) => {
                a.insert(k, v);
            }
        }
    }
}

fn merge_values_files(base: &Path, helm: &mut HelmOptions) -> Result<(), BundleError> {
    if helm.values_files.is_empty() {
        return Ok(());
    }
    let mut values = helm.values.clone().unwrap_or_default();
    for vf in &helm.values_files {
        let p = base.join(vf);
        let text = std::fs::read_to_string(&p).map_err(|e| BundleError::io(&p, e))?;
        let m: serde_json::Map<String, serde_json::Value> = crate::yaml::from_str(&p, &text)?;
        merge_maps(&mut values, m);
    }
    if !values.is_empty() {
        helm.values = Some(values);
    }
    Ok(())
}

fn read_resources(
    spec: &mut BundleSpec,
    base: &Path,
    file: &Path,
    compress: bool,
    opts: &ApplyOptions,
) -> Result<Vec<BundleResource>, BundleError> {
    let mut charts: Vec<HelmOptions> = Vec::new();
    if let Some(h) = spec.options.helm.as_mut()
        && (!h.chart.is_empty() || !h.repo.is_empty())
    {
        merge_values_files(base, h)?;
        charts.push(h.clone());
    }
    for t in &mut spec.targets {
        if let Some(h) = t.options.helm.as_mut() {
            merge_values_files(base, h)?;
            if !h.chart.is_empty() || !h.repo.is_empty() {
                charts.push(h.clone());
            }
        }
    }
    // Files fleet apply consumes itself are not resources.
    let mut skip = vec!["fleet.yaml".to_string()];
    if !opts.bundle_file.is_empty() {
        skip.push(opts.bundle_file.clone());
    }
    let helms = spec
        .options
        .helm
        .iter()
        .chain(spec.targets.iter().filter_map(|t| t.options.helm.as_ref()));
    for h in helms {
        for vf in &h.values_files {
            skip.push(vf.clone());
            skip.push(
                Path::new(vf)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            );
        }
    }
    let _ = file;
    let mut files: BTreeMap<String, Vec<u8>> = walk::collect_files(base, &skip)?;
    let mut seen = std::collections::BTreeSet::new();
    for h in &charts {
        let local = base.join(&h.chart);
        if !h.repo.is_empty() || h.chart.is_empty() || !local.exists() {
            let prefix = crate::chart::checksum_prefix(h);
            if !seen.insert(prefix.clone()) {
                continue;
            }
            let mut auth = opts.auth.clone();
            if !crate::chart::should_add_auth(&opts.helm_repo_url_regex, h)? {
                auth.username.clear();
                auth.password.clear();
            }
            let url = crate::chart::chart_url(h, &auth)?;
            for (n, d) in crate::chart::fetch_chart(&url, &auth, &skip)? {
                files.insert(format!("{prefix}/{n}"), d);
            }
        }
    }
    let mut out = Vec::with_capacity(files.len());
    for (name, data) in files {
        out.push(to_resource(name, data, compress)?);
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// A resource: plain text if UTF-8 and not compressing, else `base64+gz`.
pub fn to_resource(
    name: String,
    data: Vec<u8>,
    compress: bool,
) -> Result<BundleResource, BundleError> {
    if !compress && let Ok(s) = String::from_utf8(data.clone()) {
        return Ok(BundleResource {
            name,
            content: s,
            encoding: String::new(),
        });
    }
    Ok(BundleResource {
        name,
        content: base64_gz(&data).map_err(|e| BundleError::io("gzip", e))?,
        encoding: ENCODING_BASE64_GZ.into(),
    })
}

/// gzip then standard base64, as upstream's `content.Base64GZ`.
pub fn base64_gz(data: &[u8]) -> std::io::Result<String> {
    use base64::Engine;
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(data)?;
    let gz = enc.finish()?;
    Ok(base64::engine::general_purpose::STANDARD.encode(gz))
}

/// Decodes a resource's content (plain or `base64+gz`); the error names the resource.
pub fn decode_resource(r: &BundleResource) -> Result<Vec<u8>, String> {
    r.decode().map_err(|e| format!("{}: {e}", r.name))
}
