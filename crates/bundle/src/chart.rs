//! Remote Helm charts: resolve `repo` + `chart` + `version` through the repository's
//! `index.yaml` (semver ranges allowed), or take an http(s) `.tgz` URL, download it and unpack it
//! so that its files become bundle resources under `.chart/<sha256>/`.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use fleet_api::HelmOptions;
use serde::Deserialize;

use crate::error::BundleError;
use crate::options::Auth;
use gotmpl::semver::{Constraints, Version};

/// Upper bound for a downloaded chart or index (protects against hostile servers).
const MAX_DOWNLOAD: usize = 256 * 1024 * 1024;

/// Resource-name prefix of a remote chart: `.chart/<sha256hex(chart:repo:version)>`.
pub fn checksum_prefix(helm: &HelmOptions) -> String {
    fleet_api::names::chart_prefix(helm)
}

fn context(helm: &HelmOptions) -> String {
    format!(
        "repo={} chart={} version={}",
        helm.repo, helm.chart, helm.version
    )
}

/// Whether credentials may be sent for this chart (`^(?:regex)` must match repo, else chart).
pub fn should_add_auth(regex: &str, helm: &HelmOptions) -> Result<bool, BundleError> {
    if regex.is_empty() {
        return Ok(false);
    }
    let re = regex::Regex::new(&format!("^(?:{regex})"))
        .map_err(|e| BundleError::Other(format!("invalid helmRepoURLRegex {regex:?}: {e}")))?;
    let target = if helm.repo.is_empty() {
        &helm.chart
    } else {
        &helm.repo
    };
    Ok(re.is_match(target))
}

#[derive(Deserialize, Default)]
struct IndexFile {
    #[serde(default)]
    entries: BTreeMap<String, Vec<ChartVersion>>,
}

#[derive(Deserialize, Default, Clone)]
struct ChartVersion {
    #[serde(default)]
    version: String,
    #[serde(default)]
    urls: Vec<String>,
}

/// Resolves the download URL of a chart, as upstream's `ChartURL`.
pub fn chart_url(helm: &HelmOptions, auth: &Auth) -> Result<String, BundleError> {
    if helm.repo.starts_with("oci://") || helm.chart.starts_with("oci://") {
        return Err(BundleError::Fetch {
            context: context(helm),
            message: "oci:// charts are not supported yet".into(),
        });
    }
    if helm.repo.is_empty() {
        return Ok(helm.chart.clone());
    }
    let index_url = format!("{}/index.yaml", helm.repo.trim_end_matches('/'));
    let body = http_get(&index_url, auth).map_err(|m| BundleError::Fetch {
        context: context(helm),
        message: m,
    })?;
    let text = String::from_utf8_lossy(&body);
    let index: IndexFile = crate::yaml::from_str(Path::new(&index_url), &text)?;
    let version =
        select_version(&index, &helm.chart, &helm.version).map_err(|m| BundleError::Fetch {
            context: context(helm),
            message: m,
        })?;
    let url = version.urls.first().ok_or_else(|| BundleError::Fetch {
        context: context(helm),
        message: format!(
            "no URLs found for chart {} {} at {}",
            helm.chart, version.version, helm.repo
        ),
    })?;
    Ok(absolute_url(&helm.repo, url))
}

/// Helm's `IndexFile.Get`: exact string match first, then the highest version satisfying the
/// constraint (`*` when empty, which excludes pre-releases).
fn select_version(index: &IndexFile, chart: &str, version: &str) -> Result<ChartVersion, String> {
    let list = index
        .entries
        .get(chart)
        .ok_or_else(|| format!("chart {chart:?} not found in repository index"))?;
    if !version.is_empty()
        && let Some(v) = list.iter().find(|v| v.version == version)
    {
        return Ok(v.clone());
    }
    let constraint = Constraints::parse(if version.is_empty() { "*" } else { version })?;
    let mut candidates: Vec<(Version, &ChartVersion)> = list
        .iter()
        .filter_map(|v| Version::parse(&v.version).ok().map(|s| (s, v)))
        .collect();
    candidates.sort_by(|a, b| b.0.cmp(&a.0));
    candidates
        .into_iter()
        .find(|(s, _)| constraint.check(s))
        .map(|(_, v)| v.clone())
        .ok_or_else(|| format!("no chart version found for {chart}-{version}"))
}

fn absolute_url(repo: &str, url: &str) -> String {
    if url.contains("://") {
        return url.to_string();
    }
    format!(
        "{}/{}",
        repo.trim_end_matches('/'),
        url.trim_start_matches('/')
    )
}

/// Downloads and unpacks a chart archive, returning its files (relative names, `/`-separated).
pub fn fetch_chart(
    url: &str,
    auth: &Auth,
    skip: &[String],
) -> Result<BTreeMap<String, Vec<u8>>, BundleError> {
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(BundleError::Fetch {
            context: url.to_string(),
            message:
                "unsupported chart source (expected an http(s) URL, a helm repo, or a local path)"
                    .into(),
        });
    }
    let data = http_get(url, auth).map_err(|m| BundleError::Fetch {
        context: url.to_string(),
        message: m,
    })?;
    let dir = tempfile::tempdir().map_err(|e| BundleError::io(std::env::temp_dir(), e))?;
    unpack_tgz(&data, dir.path()).map_err(|m| BundleError::Fetch {
        context: url.to_string(),
        message: m,
    })?;
    crate::walk::collect_files(dir.path(), skip)
}

/// Unpacks a gzip'd tar into `dest`, refusing entries that would escape it.
fn unpack_tgz(data: &[u8], dest: &Path) -> Result<(), String> {
    let gz = flate2::read::GzDecoder::new(data);
    let mut ar = tar::Archive::new(gz);
    let entries = ar
        .entries()
        .map_err(|e| format!("reading chart archive: {e}"))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| format!("reading chart archive: {e}"))?;
        let path = entry
            .path()
            .map_err(|e| format!("bad path in chart archive: {e}"))?
            .into_owned();
        if path.components().any(|c| {
            !matches!(
                c,
                std::path::Component::Normal(_) | std::path::Component::CurDir
            )
        }) {
            return Err(format!(
                "chart archive entry {} escapes the chart directory",
                path.display()
            ));
        }
        let kind = entry.header().entry_type();
        if !(kind.is_file() || kind.is_dir()) {
            continue;
        }
        let out = dest.join(&path);
        if kind.is_dir() {
            std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
            continue;
        }
        if let Some(parent) = out.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        let mut buf = Vec::new();
        entry
            .read_to_end(&mut buf)
            .map_err(|e| format!("reading {}: {e}", path.display()))?;
        std::fs::write(&out, buf).map_err(|e| format!("{}: {e}", out.display()))?;
    }
    Ok(())
}

/// GET with redirects, basic auth and a timeout, on a private runtime (callers may or may not
/// be inside tokio, so the request runs on its own thread).
pub fn http_get(url: &str, auth: &Auth) -> Result<Vec<u8>, String> {
    let url = url.to_string();
    let auth = auth.clone();
    std::thread::scope(|s| {
        s.spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| format!("starting HTTP runtime: {e}"))?;
            rt.block_on(async move {
                tokio::time::timeout(
                    Duration::from_secs(300),
                    get_following_redirects(&url, &auth),
                )
                .await
                .map_err(|_| format!("GET {url}: timed out"))?
            })
        })
        .join()
        .map_err(|_| "HTTP worker failed".to_string())?
    })
}

async fn get_following_redirects(url: &str, auth: &Auth) -> Result<Vec<u8>, String> {
    use http_body_util::{BodyExt, Empty, Limited};
    use hyper_util::client::legacy::Client;

    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    let native = rustls_native_certs::load_native_certs();
    for c in native.certs {
        let _ = roots.add(c);
    }
    if !auth.ca_bundle.is_empty() {
        use rustls::pki_types::pem::PemObject;
        for c in rustls::pki_types::CertificateDer::pem_slice_iter(&auth.ca_bundle) {
            let c = c.map_err(|e| format!("reading CA bundle: {e}"))?;
            roots
                .add(c)
                .map_err(|e| format!("adding CA certificate: {e}"))?;
        }
    }
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .build();
    let client: Client<_, Empty<bytes::Bytes>> =
        Client::builder(hyper_util::rt::TokioExecutor::new()).build(https);
    let mut current = url.to_string();
    for _ in 0..10 {
        let mut req = hyper::Request::get(&current);
        if !auth.username.is_empty() && !auth.password.is_empty() {
            use base64::Engine;
            let token = base64::engine::general_purpose::STANDARD
                .encode(format!("{}:{}", auth.username, auth.password));
            req = req.header("Authorization", format!("Basic {token}"));
        }
        let req = req
            .body(Empty::new())
            .map_err(|e| format!("GET {current}: {e}"))?;
        let resp = client
            .request(req)
            .await
            .map_err(|e| format!("GET {current}: {e}"))?;
        let status = resp.status();
        if status.is_redirection() {
            let loc = resp
                .headers()
                .get("location")
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| format!("GET {current}: redirect without location"))?;
            current = resolve_location(&current, loc);
            continue;
        }
        if !status.is_success() {
            return Err(format!("GET {current}: HTTP {}", status.as_u16()));
        }
        let body = Limited::new(resp.into_body(), MAX_DOWNLOAD)
            .collect()
            .await
            .map_err(|e| format!("GET {current}: {e}"))?;
        return Ok(body.to_bytes().to_vec());
    }
    Err(format!("GET {url}: too many redirects"))
}

fn resolve_location(base: &str, loc: &str) -> String {
    if loc.contains("://") {
        return loc.to_string();
    }
    let scheme_end = base.find("://").map(|i| i + 3).unwrap_or(0);
    let host_end = base[scheme_end..]
        .find('/')
        .map(|i| i + scheme_end)
        .unwrap_or(base.len());
    if loc.starts_with('/') {
        format!("{}{}", &base[..host_end], loc)
    } else {
        let dir_end = base
            .rfind('/')
            .filter(|i| *i >= host_end)
            .unwrap_or(host_end);
        format!("{}/{}", &base[..dir_end], loc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_selection() {
        let index: IndexFile = crate::yaml::from_str(
            Path::new("index.yaml"),
            "entries:\n  c:\n  - version: 0.2.0\n    urls: [c-0.2.0.tgz]\n  - version: 0.1.0\n    urls: [c-0.1.0.tgz]\n  - version: 1.0.0-rc1\n    urls: [x]\n",
        )
        .unwrap();
        assert_eq!(select_version(&index, "c", "").unwrap().version, "0.2.0");
        assert_eq!(
            select_version(&index, "c", "~0.1").unwrap().version,
            "0.1.0"
        );
        assert_eq!(
            select_version(&index, "c", "1.0.0-rc1").unwrap().version,
            "1.0.0-rc1"
        );
        assert!(select_version(&index, "c", ">5").is_err());
        assert!(select_version(&index, "d", "").is_err());
    }

    #[test]
    fn urls() {
        assert_eq!(
            absolute_url("http://h/charts/", "c.tgz"),
            "http://h/charts/c.tgz"
        );
        assert_eq!(
            absolute_url("http://h/charts", "https://x/c.tgz"),
            "https://x/c.tgz"
        );
        assert_eq!(
            resolve_location("http://h/a/b.tgz", "/c.tgz"),
            "http://h/c.tgz"
        );
        assert_eq!(
            resolve_location("http://h/a/b.tgz", "c.tgz"),
            "http://h/a/c.tgz"
        );
    }

    #[test]
    fn prefix_is_sha_of_chart_repo_version() {
        let h = HelmOptions {
            chart: "c".into(),
            repo: "r".into(),
            version: "1".into(),
            ..Default::default()
        };
        assert_eq!(
            checksum_prefix(&h),
            format!(".chart/{}", fleet_api::names::sha256_hex(b"c:r:1"))
        );
    }
}
