//! Helm-compatible release records: what the agent deployed, stored exactly as Helm 3's Secrets
//! driver stores releases (`sh.helm.release.v1.<name>.v<N>` Secrets of type `helm.sh/release.v1`,
//! labels `name`/`owner=helm`/`status`/`version`, data `release` = base64(gzip(JSON))), so real
//! `helm list`, `helm history` and `helm get manifest` show what Fleet deployed. The records are
//! also the agent's memory of which objects a BundleDeployment created (for prune and uninstall).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, OnceLock};

use base64::Engine;
use fleet_patch::json::ReadPointer as _;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{DeleteParams, ListParams, ObjectMeta, PostParams};
use kube::{Api, Resource};
use serde_json::{Value, json};

use crate::objects::ObjRef;

/// Helm's Secret type for release records.
pub const SECRET_TYPE: &str = "helm.sh/release.v1";
/// Label naming the BundleDeployment a record belongs to (Helm ignores extra labels).
pub const BUNDLE_DEPLOYMENT_LABEL: &str = "fleet.cattle.io/bundle-deployment";
/// Label naming the system namespace of the agent that wrote a record, so two agents sharing a
/// cluster (a manager's local agent and a registered one) never touch each other's releases.
pub const AGENT_NAMESPACE_LABEL: &str = "fleet.cattle.io/agent-namespace";

/// One stored release, as the agent reads it: the few fields it looks at, the record's data
/// still compressed, and the manifest's objects as compact JSON. Cheap to clone: a reconcile
/// that finds its release unchanged reuses the record instead of inflating and parsing again.
/// The decoded release JSON and the objects as `serde_json::Value`s were most of what a
/// running agent held (`fleet bench scale`'s heap profile: about 20 KiB per record); the data
/// is decoded again only to mark the record superseded.
#[derive(Debug, Clone)]
pub struct Record {
    /// The Secret's name.
    pub secret_name: String,
    /// Release version (1, 2, ...).
    pub version: i64,
    /// `info.status` (`deployed`, `superseded`, ...).
    status: Arc<str>,
    /// `info.first_deployed`, kept by the release's later versions.
    first_deployed: Option<Arc<str>>,
    /// Deployed with `keepResources`.
    keep_resources: bool,
    /// The `release` data without its base64: gzip of the release JSON (or the JSON itself).
    data: Arc<[u8]>,
    /// The manifest's objects, parsed on first use.
    objects: Objects,
}

/// A release's objects as one compact JSON array: given by the deploy that applied them, or
/// parsed from the record's manifest on first use.
pub type Objects = Arc<OnceLock<Box<[u8]>>>;

/// `objs` as [`Objects`] hold them.
fn compact(objs: &[Value]) -> Box<[u8]> {
    // A `Value` always serializes (its map keys are strings).
    serde_json::to_vec(objs)
        .unwrap_or_default()
        .into_boxed_slice()
}

impl Record {
    /// The record a release Secret holds; None for Secrets of another type or that do not
    /// decode.
    pub fn of_secret(s: &Secret) -> Option<Record> {
        if s.type_.as_deref() != Some(SECRET_TYPE) {
            return None;
        }
        Record::of_data(
            s.metadata.name.clone()?,
            &s.data.as_ref()?.get("release")?.0,
        )
    }

    /// The record in a Secret named `secret_name` whose `release` key holds `data`.
    fn of_data(secret_name: String, data: &[u8]) -> Option<Record> {
        let raw = base64::engine::general_purpose::STANDARD
            .decode(data)
            .ok()?;
        let release = decode_raw(&raw)?;
        Record::of_release(secret_name, &release, raw.into(), Arc::default())
    }

    /// The record of `release`, stored as `data` (see [`Record::data`]); None without a
    /// version.
    fn of_release(
        secret_name: String,
        release: &Value,
        data: Arc<[u8]>,
        objects: Objects,
    ) -> Option<Record> {
        let info = release.get("info");
        let info_str = |k: &str| info.and_then(|i| i.get(k)).and_then(Value::as_str);
        Some(Record {
            secret_name,
            version: release.get("version").and_then(Value::as_i64)?,
            status: info_str("status").unwrap_or("").into(),
            first_deployed: info_str("first_deployed").map(Into::into),
            keep_resources: release
                .at("/chart/metadata/annotations/fleet.cattle.io~1keep-resources")
                .and_then(Value::as_str)
                == Some("true"),
            data,
            objects,
        })
    }

    /// The whole release JSON, decoded from the stored data.
    pub fn release(&self) -> Option<Value> {
        decode_raw(&self.data)
    }

    /// The manifest's objects (see [`manifest_objects`]), parsed from the manifest once per
    /// record and decoded from compact JSON on each call.
    pub fn manifest_objects(&self) -> Vec<Value> {
        let json = self.objects.get_or_init(|| {
            let manifest = self.release().and_then(|r| match r.get("manifest") {
                Some(Value::String(m)) => Some(manifest_objects(m)),
                _ => None,
            });
            compact(&manifest.unwrap_or_default())
        });
        serde_json::from_slice(json).unwrap_or_default()
    }

    /// Whether the release was deployed with `keepResources`.
    pub fn keep_resources(&self) -> bool {
        self.keep_resources
    }

    /// `info.status` (`deployed`, `superseded`, ...).
    pub fn status(&self) -> &str {
        &self.status
    }

    /// The objects of the manifest (documents that do not parse are skipped: the record was
    /// written by us from objects, so this only guards against hand edits).
    pub fn objects(&self) -> Vec<ObjRef> {
        self.manifest_objects()
            .iter()
            .filter_map(ObjRef::of)
            .collect()
    }
}

/// Why a release record operation failed.
#[derive(Debug, thiserror::Error)]
pub enum ReleaseError {
    /// The downstream API refused or was unreachable.
    #[error("release {namespace}/{name}: {source}")]
    Api {
        /// Release namespace.
        namespace: String,
        /// Release name.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// A stored record could not be encoded.
    #[error("release {namespace}/{name}: encoding: {msg}")]
    Encode {
        /// Release namespace.
        namespace: String,
        /// Release name.
        name: String,
        /// What went wrong.
        msg: String,
    },
}

/// base64(gzip(json)), as Helm's Secrets driver encodes a release.
pub fn encode(release: &Value) -> std::io::Result<String> {
    Ok(base64::engine::general_purpose::STANDARD.encode(gzip_json(release)?))
}

/// gzip(json) of a release, at gzip's fastest level (any level decodes the same).
fn gzip_json(release: &Value) -> std::io::Result<Vec<u8>> {
    fleet_api::gzip::gzip_fast(&serde_json::to_vec(release)?)
}

/// The inverse of [`encode`] (Helm also accepts un-gzipped JSON).
pub fn decode(data: &[u8]) -> Option<Value> {
    let raw = base64::engine::general_purpose::STANDARD
        .decode(data)
        .ok()?;
    decode_raw(&raw)
}

/// A release from gzip(json) or json.
fn decode_raw(raw: &[u8]) -> Option<Value> {
    if raw.starts_with(&[0x1f, 0x8b]) {
        serde_json::from_slice(&fleet_api::gzip::gunzip(raw).ok()?).ok()
    } else {
        serde_json::from_slice(raw).ok()
    }
}

/// The objects of a release manifest (a YAML stream).
pub fn manifest_objects(manifest: &str) -> Vec<Value> {
    serde_saphyr::from_multiple::<Value>(manifest)
        .unwrap_or_default()
        .into_iter()
        .filter(Value::is_object)
        .collect()
}

/// A release manifest from objects: one `---` document per object, as Helm stores manifests.
pub fn manifest_of(objs: &[Value]) -> String {
    let mut out = String::new();
    for o in objs {
        let y = fleet_render::kustomize::goyaml::to_yaml(o);
        out.push_str("---\n");
        out.push_str(&y);
        if !y.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// Decoded release records by (namespace, release name), each with the Secret's
/// resourceVersion: a record is decoded again only when its Secret changed.
#[derive(Debug, Default)]
pub struct ReleaseCache {
    releases: Mutex<HashMap<(String, String), Vec<Versioned>>>,
}

/// A decoded record and the resourceVersion of the Secret it was decoded from.
type Versioned = (String, Record);

impl ReleaseCache {
    /// Remembers a record this agent just wrote, as the Secret holding it (`rv`): the next
    /// [`history`] reuses it instead of decoding what it encoded a moment ago.
    fn remember(&self, namespace: &str, name: &str, rv: String, record: Record) {
        if rv.is_empty() {
            return;
        }
        if let Ok(mut m) = self.releases.lock() {
            let known = m
                .entry((namespace.to_string(), name.to_string()))
                .or_default();
            known.retain(|(_, r)| r.secret_name != record.secret_name);
            known.push((rv, record));
        }
    }

    /// The records of a release as this agent last read or wrote them, oldest first; None when
    /// it knows none.
    pub fn records(&self, namespace: &str, name: &str) -> Option<Vec<Record>> {
        let m = self.releases.lock().ok()?;
        let known = m.get(&(namespace.to_string(), name.to_string()))?;
        let mut out: Vec<Record> = known.iter().map(|(_, r)| r.clone()).collect();
        out.sort_by_key(|r| r.version);
        Some(out)
    }

    /// Forgets one record of a release (its Secret was deleted).
    fn drop_record(&self, namespace: &str, name: &str, secret_name: &str) {
        if let Ok(mut m) = self.releases.lock()
            && let Some(known) = m.get_mut(&(namespace.to_string(), name.to_string()))
        {
            known.retain(|(_, r)| r.secret_name != secret_name);
        }
    }

    /// Forgets a release (its records were deleted).
    pub fn forget(&self, namespace: &str, name: &str) {
        if let Ok(mut m) = self.releases.lock() {
            m.remove(&(namespace.to_string(), name.to_string()));
        }
    }
}

/// A list of release Secrets as [`history`] reads it: a record's name, resourceVersion, type
/// and its `release` data still in the list's base64, decoded only when not cached (Secrets'
/// other fields, managedFields and labels included, are skipped unread).
#[derive(serde::Deserialize)]
struct RecordList {
    #[serde(default)]
    items: Vec<RecordSecret>,
}

#[derive(serde::Deserialize)]
struct RecordSecret {
    #[serde(default)]
    metadata: RecordMeta,
    #[serde(rename = "type")]
    type_: Option<String>,
    data: Option<RecordData>,
}

#[derive(serde::Deserialize, Default)]
struct RecordMeta {
    name: Option<String>,
    #[serde(rename = "resourceVersion")]
    resource_version: Option<String>,
}

#[derive(serde::Deserialize)]
struct RecordData {
    release: Option<String>,
}

impl RecordSecret {
    fn record(&self) -> Option<Record> {
        if self.type_.as_deref() != Some(SECRET_TYPE) {
            return None;
        }
        let b64 = self.data.as_ref()?.release.as_ref()?;
        let data = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
        Record::of_data(self.metadata.name.clone()?, &data)
    }
}

/// The release records of one release, oldest first, read from the cluster; records whose
/// Secret is unchanged since the last call come from `cache`.
pub async fn history(
    client: &kube::Client,
    cache: &ReleaseCache,
    namespace: &str,
    name: &str,
) -> Result<Vec<Record>, ReleaseError> {
    let api_err = |source| ReleaseError::Api {
        namespace: namespace.into(),
        name: name.into(),
        source,
    };
    let lp = ListParams::default().labels(&format!("owner=helm,name={name}"));
    let mut req = kube::core::Request::new(Secret::url_path(&(), Some(namespace)))
        .list(&lp)
        .map_err(|e| api_err(kube::Error::BuildRequest(e)))?;
    req.extensions_mut().insert("list");
    let list: RecordList = client.request(req).await.map_err(api_err)?;
    let key = (namespace.to_string(), name.to_string());
    let known = cache
        .releases
        .lock()
        .ok()
        .and_then(|mut m| m.remove(&key))
        .unwrap_or_default();
    let mut fresh: Vec<Versioned> = Vec::with_capacity(list.items.len());
    for s in &list.items {
        let rv = s.metadata.resource_version.clone().unwrap_or_default();
        let cached = known.iter().find(|(krv, r)| {
            !rv.is_empty() && *krv == rv && Some(&r.secret_name) == s.metadata.name.as_ref()
        });
        let record = match cached {
            Some((_, r)) => Some(r.clone()),
            None => s.record(),
        };
        if let Some(r) = record {
            fresh.push((rv, r));
        }
    }
    fresh.sort_by_key(|(_, r)| r.version);
    let out = fresh.iter().map(|(_, r)| r.clone()).collect();
    if let Ok(mut m) = cache.releases.lock() {
        m.insert(key, fresh);
    }
    Ok(out)
}

/// What a new release record holds besides its manifest.
pub struct NewRelease<'a> {
    /// Release name.
    pub name: &'a str,
    /// Release namespace.
    pub namespace: &'a str,
    /// Chart name and version shown by `helm list`.
    pub chart_name: &'a str,
    /// Chart version.
    pub chart_version: &'a str,
    /// Helm values the release was rendered with (`helm get values`).
    pub config: Value,
    /// The BundleDeployment that owns the release.
    pub bundle_deployment: &'a str,
    /// The agent's system namespace.
    pub agent_namespace: &'a str,
    /// The upstream namespace of the BundleDeployment (the agent's deployment namespace).
    pub deployment_namespace: &'a str,
    /// `keepResources`: an uninstall (also by garbage collection) leaves the objects.
    pub keep_resources: bool,
    /// `helm.maxHistory` (0 = Helm's default for Fleet, 2).
    pub max_history: i64,
    /// `serviceAccount` as the bundle asked for it (empty: the default), kept as upstream does.
    pub service_account: &'a str,
}

fn secret_name(name: &str, version: i64) -> String {
    format!("sh.helm.release.v1.{name}.v{version}")
}

/// Stores a new deployed release after `previous` (marking earlier deployed records superseded
/// and pruning beyond `maxHistory`, as Helm's upgrade does). Returns the new version.
pub async fn store(
    client: &kube::Client,
    cache: &ReleaseCache,
    new: &NewRelease<'_>,
    applied: &[Value],
    previous: &[Record],
) -> Result<i64, ReleaseError> {
    let manifest = manifest_of(applied);
    let api: Api<Secret> = Api::namespaced(client.clone(), new.namespace);
    let api_err = |source| ReleaseError::Api {
        namespace: new.namespace.into(),
        name: new.name.into(),
        source,
    };
    let version = previous.iter().map(|r| r.version).max().unwrap_or(0) + 1;
    let now = jiff::Timestamp::now().to_string();
    let first = previous
        .first()
        .and_then(|r| r.first_deployed.as_deref())
        .unwrap_or(&now)
        .to_string();
    let description = if previous.is_empty() {
        "Install complete"
    } else {
        "Upgrade complete"
    };
    let release = json!({
        "name": new.name,
        "info": {
            "first_deployed": first,
            "last_deployed": now,
            "deleted": "",
            "description": description,
            "status": "deployed",
        },
        "chart": {
            "metadata": {
                "name": new.chart_name,
                "version": new.chart_version,
                "apiVersion": "v2",
                "annotations": {
                    "fleet.cattle.io/bundle-id": new.bundle_deployment,
                    "fleet.cattle.io/agent-namespace": new.agent_namespace,
                    "fleet.cattle.io/keep-resources": new.keep_resources.to_string(),
                    "fleet.cattle.io/service-account": new.service_account,
                },
            },
            "lock": null,
            "templates": [],
            "values": null,
            "schema": null,
            "files": [],
        },
        "config": new.config,
        "manifest": manifest,
        "version": version,
        "namespace": new.namespace,
    });
    let url = Secret::url_path(&(), Some(new.namespace));
    let encode_err = |msg: String| ReleaseError::Encode {
        namespace: new.namespace.into(),
        name: new.name.into(),
        msg,
    };
    let gzip = |release: &Value| gzip_json(release).map_err(|e| encode_err(e.to_string()));
    let data = gzip(&release)?;
    let created = write(
        client,
        &url,
        None,
        &record_secret(new, version, "deployed", &data),
    )
    .await
    .map_err(api_err)?;
    // What the records hold is known here: remembered as written, with their manifests'
    // objects (the applied objects themselves, which is what reading the manifest gives).
    let remember = |s: Written, release: &Value, data: Vec<u8>, objects: Objects| {
        let (Some(rv), Some(secret_name)) = (s.metadata.resource_version, s.metadata.name) else {
            return;
        };
        if let Some(record) = Record::of_release(secret_name, release, data.into(), objects) {
            cache.remember(new.namespace, new.name, rv, record);
        }
    };
    let objects: Objects = Arc::new(OnceLock::from(compact(applied)));
    remember(created, &release, data, objects);
    drop(release);
    // Earlier deployed records become superseded, as after a Helm upgrade.
    for r in previous.iter().filter(|r| r.status() == "deployed") {
        let mut rel = r
            .release()
            .ok_or_else(|| encode_err(format!("{} no longer decodes", r.secret_name)))?;
        if let Some(info) = rel.get_mut("info").and_then(Value::as_object_mut) {
            info.insert("status".into(), json!("superseded"));
        }
        let data = gzip(&rel)?;
        let s = record_secret(new, r.version, "superseded", &data);
        let replaced = write(client, &url, Some(&r.secret_name), &s)
            .await
            .map_err(api_err)?;
        remember(replaced, &rel, data, r.objects.clone());
    }
    // Keep at most maxHistory records (Helm's default for Fleet is 2).
    let max = if new.max_history > 0 {
        new.max_history
    } else {
        2
    };
    let total = previous.len() as i64 + 1;
    for r in previous.iter().take((total - max).max(0) as usize) {
        delete_secret(&api, &r.secret_name).await.map_err(api_err)?;
        cache.drop_record(new.namespace, new.name, &r.secret_name);
    }
    Ok(version)
}

/// A written record's answer as [`store`] reads it: the name and resourceVersion (the record's
/// data and managedFields, most of the answer, are skipped unread).
#[derive(serde::Deserialize)]
struct Written {
    #[serde(default)]
    metadata: RecordMeta,
}

/// Creates the record Secret `s` in the collection at `url`, or replaces the one named
/// `replace`.
async fn write(
    client: &kube::Client,
    url: &str,
    replace: Option<&str>,
    s: &Secret,
) -> Result<Written, kube::Error> {
    let body = serde_json::to_vec(s).map_err(kube::Error::SerdeError)?;
    let pp = PostParams::default();
    let req = kube::core::Request::new(url);
    let mut req = match replace {
        None => req.create(&pp, body),
        Some(name) => req.replace(name, &pp, body),
    }
    .map_err(kube::Error::BuildRequest)?;
    req.extensions_mut().insert(if replace.is_some() {
        "replace"
    } else {
        "create"
    });
    client.request(req).await
}

/// The Secret of a record whose release JSON, gzipped, is `gzip`.
fn record_secret(new: &NewRelease<'_>, version: i64, status: &str, gzip: &[u8]) -> Secret {
    let data = base64::engine::general_purpose::STANDARD.encode(gzip);
    let labels: BTreeMap<String, String> = [
        ("name", new.name),
        ("owner", "helm"),
        ("status", status),
        ("version", &version.to_string()),
        (BUNDLE_DEPLOYMENT_LABEL, new.bundle_deployment),
        (AGENT_NAMESPACE_LABEL, new.agent_namespace),
        (
            fleet_api::keys::CLUSTER_NAMESPACE_LABEL,
            new.deployment_namespace,
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    Secret {
        metadata: ObjectMeta {
            name: Some(secret_name(new.name, version)),
            namespace: Some(new.namespace.into()),
            labels: Some(labels),
            ..Default::default()
        },
        type_: Some(SECRET_TYPE.into()),
        data: Some(BTreeMap::from([(
            "release".to_string(),
            ByteString(data.into_bytes()),
        )])),
        ..Default::default()
    }
}

async fn delete_secret(api: &Api<Secret>, name: &str) -> Result<(), kube::Error> {
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Deletes every record of a release (uninstall; with keepResources the objects stay).
pub async fn delete_all(
    client: &kube::Client,
    namespace: &str,
    records: &[Record],
) -> Result<(), kube::Error> {
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    for r in records {
        delete_secret(&api, &r.secret_name).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_holds_what_was_written_oldest_first_and_forgets_deleted_records() {
        let cache = ReleaseCache::default();
        let rec = |v: i64| {
            Record::of_release(
                secret_name("r", v),
                &json!({"version": v}),
                Arc::from(&[][..]),
                Arc::default(),
            )
            .unwrap()
        };
        assert!(cache.records("ns", "r").is_none());
        for v in [3, 1, 2] {
            cache.remember("ns", "r", format!("rv{v}"), rec(v));
        }
        let versions = |c: &ReleaseCache| -> Vec<i64> {
            c.records("ns", "r")
                .unwrap_or_default()
                .iter()
                .map(|r| r.version)
                .collect()
        };
        assert_eq!(versions(&cache), [1, 2, 3]);
        cache.drop_record("ns", "r", &secret_name("r", 1));
        assert_eq!(versions(&cache), [2, 3]);
        assert!(cache.records("ns", "other").is_none());
        cache.forget("ns", "r");
        assert!(cache.records("ns", "r").is_none());
    }

    #[test]
    fn a_record_read_back_gives_its_fields_release_and_manifest_objects() {
        let objs = vec![
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"}, "data": {"a": "1"}}),
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 2}}),
        ];
        let rel = json!({
            "name": "r",
            "version": 4,
            "info": {"status": "superseded", "first_deployed": "2026-01-01T00:00:00Z"},
            "chart": {"metadata": {"annotations": {"fleet.cattle.io/keep-resources": "true"}}},
            "manifest": manifest_of(&objs),
        });
        let rec = Record::of_data(
            "sh.helm.release.v1.r.v4".into(),
            encode(&rel).unwrap().as_bytes(),
        )
        .unwrap();
        assert_eq!(rec.version, 4);
        assert_eq!(rec.status(), "superseded");
        assert!(rec.keep_resources());
        assert_eq!(rec.first_deployed.as_deref(), Some("2026-01-01T00:00:00Z"));
        assert_eq!(rec.release().unwrap(), rel);
        // Parsed from the manifest the first time, from the compact form after.
        assert_eq!(rec.manifest_objects(), objs);
        assert_eq!(rec.clone().manifest_objects(), objs);
        assert_eq!(rec.objects().len(), 2);
        // A record written with its objects holds them as given.
        let written = Record::of_release(
            "x".into(),
            &rel,
            gzip_json(&rel).unwrap().into(),
            Arc::new(OnceLock::from(compact(&objs))),
        )
        .unwrap();
        assert_eq!(written.manifest_objects(), objs);
        assert_eq!(written.release().unwrap(), rel);
        // Without a version there is no record; bad data decodes to nothing.
        assert!(
            Record::of_data(
                "y".into(),
                encode(&json!({"name": "r"})).unwrap().as_bytes()
            )
            .is_none()
        );
        assert!(Record::of_data("y".into(), b"not base64!").is_none());
    }

    #[test]
    fn encode_decode_round_trip_and_helm_layout() {
        let rel = json!({"name": "r", "version": 3, "manifest": "---\na: 1\n"});
        let enc = encode(&rel).unwrap();
        let raw = base64::engine::general_purpose::STANDARD
            .decode(&enc)
            .unwrap();
        assert_eq!(
            &raw[..2],
            &[0x1f, 0x8b],
            "gzip inside base64, as Helm writes"
        );
        assert_eq!(decode(enc.as_bytes()).unwrap(), rel);
        assert_eq!(secret_name("app", 2), "sh.helm.release.v1.app.v2");
    }

    #[test]
    fn manifest_round_trip_keeps_scalars_that_look_like_others() {
        // A record written by a deploy keeps the applied objects as its parsed manifest
        // (`store`), which holds only if reading the manifest back gives them again.
        let data: serde_json::Map<String, Value> = [
            "yes",
            "no",
            "on",
            "off",
            "true",
            "False",
            "null",
            "~",
            "",
            " ",
            "1",
            "1.0",
            "1e3",
            "0x1F",
            "0o17",
            "017",
            ".inf",
            "-.inf",
            ".nan",
            "+1",
            "1_000",
            "2026-11-26",
            "12:30:00",
            "a: b",
            "- x",
            "#c",
            "x #c",
            "'q'",
            "\"q\"",
            "line\nbreak",
            "trail ",
            "tab\there",
            "{a}",
            "[b]",
            "&anchor",
            "*alias",
            "!tag",
            "%d",
            "@at",
            "`tick",
            "|",
            ">",
            "é ☃",
            "\u{85}",
            "=",
        ]
        .iter()
        .enumerate()
        .map(|(i, v)| (format!("k{i}"), json!(v)))
        .collect();
        let objs = vec![json!({
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "n",
            "labels": {"x": "1"}, "annotations": {"y": "true"}},
            "data": data,
            "numbers": [0, -1, 1.5, 1e300, 9007199254740993u64, -9223372036854775808i64],
            "nested": {"empty": {}, "list": [], "null": null, "bool": false},
        })];
        assert_eq!(manifest_objects(&manifest_of(&objs)), objs);
    }

    fn json_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let scalar = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            (-1e6f64..1e6).prop_map(Value::from),
            // Long strings with spaces and breaks: an emitter folds them past its width.
            "[ a-z0-9:#'\"\\-]{0,200}".prop_map(Value::from),
            "[ -~\n\t\u{a0}\u{85}é☃]{0,40}".prop_map(Value::from),
        ];
        scalar.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                proptest::collection::btree_map("[a-zA-Z0-9_./ -]{1,12}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        #[test]
        fn manifest_round_trip_keeps_any_object(data in proptest::collection::btree_map("[a-z0-9_.-]{1,12}", json_value(), 0..6)) {
            let mut obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}});
            for (k, v) in data {
                obj[format!("f{k}")] = v;
            }
            let objs = vec![obj];
            proptest::prop_assert_eq!(manifest_objects(&manifest_of(&objs)), objs);
        }
    }

    #[test]
    fn manifest_round_trip_keeps_objects() {
        let objs = vec![
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "n"}, "data": {"k": "v: x"}}),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}}),
        ];
        let m = manifest_of(&objs);
        assert!(m.starts_with("---\n"));
        assert_eq!(manifest_objects(&m), objs);
    }
}
