//! Deploying one BundleDeployment downstream, the way upstream's helmdeployer installs or
//! upgrades a release: render, order (Namespaces and CRDs first, custom resources once their CRD
//! is Established), server-side apply under one field manager with Helm's ownership metadata,
//! prune what the previous release had and this one drops (only objects of this release), and
//! store a Helm release record. Also uninstall.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use fleet_api::{BundleDeployment, BundleDeploymentOptions, BundleResource};
use fleet_patch::json::ReadPointer as _;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::ListParams;
use serde_json::{Value, json};

use crate::objects::{Downstream, ObjRef};
use crate::release::{self, NewRelease, Record};

/// Helm's label marking objects it manages.
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// Helm's annotation naming an object's release.
pub const RELEASE_NAME_ANNOTATION: &str = "meta.helm.sh/release-name";
/// Helm's annotation naming an object's release namespace.
pub const RELEASE_NAMESPACE_ANNOTATION: &str = "meta.helm.sh/release-namespace";
/// Objects Helm must not delete (CRDs get it unless `deleteCRDResources`).
pub const RESOURCE_POLICY_ANNOTATION: &str = "helm.sh/resource-policy";

/// Why a deploy failed; `Render` is a manifest error that becomes status instead of a retry.
#[derive(Debug, thiserror::Error)]
pub enum DeployError {
    /// The bundle could not be rendered (names the file).
    #[error("{0}")]
    Render(#[from] fleet_render::deploy::RenderError),
    /// An object the bundle wants belongs to someone else and `takeOwnership` is off.
    #[error(
        "rendered manifests contain a resource that already exists. Unable to continue with install: {what} exists and cannot be imported into the current release: invalid ownership metadata; annotation validation error: key \"{RELEASE_NAME_ANNOTATION}\" must equal \"{release}\": current value is \"{current}\""
    )]
    NotOwned {
        /// The object, Helm-style.
        what: String,
        /// Our release.
        release: String,
        /// The owner it has.
        current: String,
    },
    /// The downstream API refused an object (names it).
    #[error("{what}: {}", crate::objects::api_message(source))]
    Apply {
        /// The object.
        what: String,
        /// The API error.
        source: kube::Error,
    },
    /// A CRD did not become Established in time.
    #[error("CustomResourceDefinition {0} was not established within 60s")]
    NotEstablished(String),
    /// The release record could not be written.
    #[error("{0}")]
    Release(#[from] release::ReleaseError),
    /// A `valuesFrom` ConfigMap or Secret could not be read (retried: it may appear later).
    #[error("{0}")]
    ValuesFrom(#[from] crate::values_from::ValuesFromError),
    /// The `serviceAccount` to deploy as does not exist or could not be read.
    #[error("looking up service account {namespace}/{name}: {reason}")]
    ServiceAccount {
        /// The agent's namespace, where the account is looked up.
        namespace: String,
        /// The account.
        name: String,
        /// Not found, or what the API said.
        reason: String,
    },
}

impl DeployError {
    /// Manifest errors: retrying cannot fix them, a new deploymentID can.
    pub fn is_manifest_error(&self) -> bool {
        match self {
            DeployError::Render(_) | DeployError::NotOwned { .. } => true,
            DeployError::Apply { source, .. } => {
                matches!(source, kube::Error::Api(s) if s.code == 422 || s.code == 400)
            }
            _ => false,
        }
    }
}

/// Release name and namespace of a BundleDeployment, as upstream: `helm.releaseName` or
/// `HelmReleaseName(bdName)`; namespace = `namespace` > `defaultNamespace` > `default`.
pub fn release_of(bd_name: &str, opts: &BundleDeploymentOptions) -> (String, String) {
    let name = opts
        .helm
        .as_ref()
        .map(|h| h.release_name.clone())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| fleet_api::names::helm_release_name(bd_name));
    let ns = [&opts.namespace, &opts.default_namespace]
        .into_iter()
        .find(|s| !s.is_empty())
        .cloned()
        .unwrap_or_else(|| "default".into());
    (name, ns)
}

fn obj_desc(r: &ObjRef) -> String {
    if r.namespace.is_empty() {
        format!("{} \"{}\"", r.kind, r.name)
    } else {
        format!("{} \"{}\" in namespace \"{}\"", r.kind, r.name, r.namespace)
    }
}

/// The chart name and version the release record shows: the bundle's own `Chart.yaml` when it
/// has one at its root, else the synthesised chart's (`<bundle>`, `v0.0.0+<manifestID>`).
fn chart_identity(bd_name: &str, manifest_id: &str, res: &[BundleResource]) -> (String, String) {
    let chart = res
        .iter()
        .find(|r| r.name == "Chart.yaml")
        .and_then(|r| r.decode().ok())
        .and_then(|b| serde_saphyr::from_slice::<Value>(&b).ok());
    let field = |k: &str| {
        chart
            .as_ref()
            .and_then(|c| c.get(k))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    match (field("name"), field("version")) {
        (Some(n), Some(v)) => (n, v),
        _ => (
            bd_name.rsplit('/').next().unwrap_or(bd_name).to_string(),
            format!("v0.0.0+{manifest_id}"),
        ),
    }
}

fn order_rank(o: &Value) -> u8 {
    match o.get("kind").and_then(Value::as_str) {
        Some("Namespace") => 0,
        Some("CustomResourceDefinition") => 1,
        _ => 2,
    }
}

/// Adds Helm's ownership metadata (what makes `helm` consider the object part of the release).
fn own(o: &mut Value, release: &str, release_ns: &str) {
    let Some(meta) = o
        .as_object_mut()
        .map(|m| m.entry("metadata").or_insert_with(|| json!({})))
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    if let Some(l) = meta
        .entry("labels")
        .or_insert_with(|| json!({}))
        .as_object_mut()
    {
        l.insert(MANAGED_BY_LABEL.into(), json!("Helm"));
    }
    if let Some(a) = meta
        .entry("annotations")
        .or_insert_with(|| json!({}))
        .as_object_mut()
    {
        a.insert(RELEASE_NAME_ANNOTATION.into(), json!(release));
        a.insert(RELEASE_NAMESPACE_ANNOTATION.into(), json!(release_ns));
    }
}

/// The release an existing object belongs to (by Helm's annotations).
pub fn owner_of(live: &Value) -> (String, String) {
    let a = |k: &str| {
        live.get("metadata")
            .and_then(|m| m.get("annotations"))
            .and_then(|m| m.get(k))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    (a(RELEASE_NAME_ANNOTATION), a(RELEASE_NAMESPACE_ANNOTATION))
}

fn keep_policy(o: &Value) -> bool {
    o.at("/metadata/annotations")
        .and_then(|m| m.get(RESOURCE_POLICY_ANNOTATION))
        .and_then(Value::as_str)
        == Some("keep")
}

/// Release namespaces this agent has seen exist or created: a first install into one of them
/// does not read it again (one request per BundleDeployment of a first rollout). A deploy that
/// fails forgets its namespace, and an uninstall or a pruned Namespace object forgets all, so a
/// namespace deleted meanwhile is created again by the next attempt.
#[derive(Debug, Default)]
pub struct KnownNamespaces(std::sync::Mutex<BTreeSet<String>>);

impl KnownNamespaces {
    fn set(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether `ns` was seen to exist.
    pub fn contains(&self, ns: &str) -> bool {
        self.set().contains(ns)
    }

    /// `ns` exists (read or created).
    pub fn insert(&self, ns: &str) {
        self.set().insert(ns.to_string());
    }

    /// `ns` may be gone.
    pub fn forget(&self, ns: &str) {
        self.set().remove(ns);
    }

    /// Any of them may be gone.
    pub fn clear(&self) {
        self.set().clear();
    }
}

/// What the agent needs to render for this cluster.
pub struct Target<'a> {
    /// The downstream cluster.
    pub ds: &'a Downstream,
    /// The agent's system namespace.
    pub agent_namespace: &'a str,
    /// The agent's namespace upstream (holds its BundleDeployments).
    pub deployment_namespace: &'a str,
    /// The downstream Kubernetes version (`.Capabilities.KubeVersion`).
    pub kube_version: &'a str,
    /// Called with each object just before it is applied, so that watch events on it (its
    /// status set by a controller while the rest of the bundle is still being applied) are
    /// already attributed to the BundleDeployment when they arrive.
    pub claim: &'a (dyn Fn(&ObjRef) + Send + Sync),
    /// Decoded release records: the records a deploy writes go in as written.
    pub releases: &'a release::ReleaseCache,
    /// The agent namespace's ServiceAccounts (which one the bundle deploys as).
    pub accounts: &'a crate::accounts::Accounts,
    /// Release namespaces known to exist.
    pub namespaces: &'a KnownNamespaces,
    /// Called with each object's apply answer: its watch's echo of that write is no news.
    pub applied: &'a (dyn Fn(&ObjRef, &Value) + Send + Sync),
}

/// Result of a deploy: the release (`ns/name:version`) and the applied objects.
pub struct Deployed {
    /// `namespace/name:version`, the BD status `release` field.
    pub release: String,
    /// The objects as applied (namespace and ownership metadata set), as the release record
    /// that lists them holds them.
    pub objects: Vec<Value>,
    /// The server's answers to those applies: the live objects right after the deploy, so the
    /// first status check needs no GET per object.
    pub live: Vec<Value>,
}

/// Installs or upgrades the release of `bd` from `resources` (its Content).
pub async fn deploy(
    t: &Target<'_>,
    bd: &BundleDeployment,
    resources: &[BundleResource],
    previous: &[Record],
) -> Result<Deployed, DeployError> {
    let bd_name = bd.metadata.name.clone().unwrap_or_default();
    let manifest_id = crate::content::manifest_id(&bd.spec.deployment_id).to_string();
    let (rel_name, rel_ns) = release_of(&bd_name, &bd.spec.options);
    let as_account = deployer(
        t.ds,
        t.accounts,
        t.agent_namespace,
        &bd.spec.options.service_account,
    )
    .await?;
    let ds = &as_account;
    // Read with the agent's own identity, as upstream: the account deploys, the agent configures.
    let opts = &crate::values_from::resolve(&t.ds.client, &bd.spec.options, &rel_ns).await?;
    let r = fleet_render::deploy::Release {
        bundle_id: bd_name.clone(),
        manifest_id: manifest_id.clone(),
        kube_version: t.kube_version.to_string(),
        agent_namespace: t.agent_namespace.to_string(),
    };
    let mut objs = fleet_render::deploy::render_bundle(resources, &r, opts)?;
    objs.sort_by_key(order_rank); // stable: Helm's order within each rank
    let helm = opts.helm.clone().unwrap_or_default();
    let take_ownership = helm.take_ownership;
    // As Helm: with a deployed release this is an upgrade, which neither creates the namespace
    // nor checks the ownership of objects that release already holds (only new ones).
    let current = previous.iter().rev().find(|r| r.status() == "deployed");
    let ours: BTreeSet<ObjRef> = current
        .map(|r| r.objects().into_iter().collect())
        .unwrap_or_default();

    if current.is_none() && opts.create_namespace.unwrap_or(true) && !t.namespaces.contains(&rel_ns)
    {
        let ns_ref = ObjRef {
            api_version: "v1".into(),
            kind: "Namespace".into(),
            namespace: String::new(),
            name: rel_ns.clone(),
        };
        let exists = ds.get(&ns_ref).await.map_err(|source| DeployError::Apply {
            what: obj_desc(&ns_ref),
            source,
        })?;
        if exists.is_none() {
            ds.apply(
                &ns_ref,
                &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": rel_ns}}),
                false,
            )
            .await
            .map_err(|source| DeployError::Apply {
                what: obj_desc(&ns_ref),
                source,
            })?;
        }
        t.namespaces.insert(&rel_ns);
    }

    let mut applied = Vec::with_capacity(objs.len());
    let mut live_after = Vec::with_capacity(objs.len());
    for mut o in objs {
        let api_version = o
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let kind_name = o
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let what = format!(
            "{kind_name} {}",
            o.at("/metadata/name").and_then(Value::as_str).unwrap_or("")
        );
        let kind = resolve(ds, &api_version, &kind_name)
            .await
            .map_err(|source| DeployError::Apply {
                what: what.clone(),
                source,
            })?;
        if let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut) {
            if kind.namespaced {
                let empty = meta
                    .get("namespace")
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty);
                if empty {
                    meta.insert("namespace".into(), json!(rel_ns));
                }
            } else {
                meta.remove("namespace");
            }
        }
        own(&mut o, &rel_name, &rel_ns);
        let Some(r) = ObjRef::of(&o) else { continue };
        let live = if ours.contains(&r) {
            None
        } else {
            ds.get(&r).await.map_err(|source| DeployError::Apply {
                what: obj_desc(&r),
                source,
            })?
        };
        if let Some(live) = &live {
            let (owner, owner_ns) = owner_of(live);
            if (owner != rel_name || owner_ns != rel_ns) && !take_ownership {
                return Err(DeployError::NotOwned {
                    what: obj_desc(&r),
                    release: rel_name.clone(),
                    current: owner,
                });
            }
        }
        (t.claim)(&r);
        let now = ds
            .apply(&r, &o, true)
            .await
            .map_err(|source| DeployError::Apply {
                what: obj_desc(&r),
                source,
            })?;
        if r.kind == "CustomResourceDefinition" {
            wait_established(ds, &r).await?;
        } else {
            (t.applied)(&r, &now);
            live_after.push(now);
        }
        applied.push(o);
    }

    // Prune: what the last release had and this one does not, if it is still ours.
    let keep: BTreeSet<ObjRef> = applied.iter().filter_map(ObjRef::of).collect();
    if let Some(last) = previous.last() {
        for o in &last.manifest_objects() {
            let Some(r) = ObjRef::of(o) else { continue };
            if keep.contains(&r) || keep_policy(o) {
                continue;
            }
            delete_if_ours(ds, &r, &rel_name, &rel_ns).await?;
            if r.kind == "Namespace" {
                t.namespaces.clear();
            }
        }
    }

    let (chart_name, chart_version) = chart_identity(&bd_name, &manifest_id, resources);
    let config = Value::Object(helm.values.clone().unwrap_or_default());
    let new = NewRelease {
        name: &rel_name,
        namespace: &rel_ns,
        chart_name: &chart_name,
        chart_version: &chart_version,
        config,
        bundle_deployment: &bd_name,
        agent_namespace: t.agent_namespace,
        deployment_namespace: t.deployment_namespace,
        keep_resources: opts.keep_resources,
        max_history: helm.max_history,
        service_account: &opts.service_account,
    };
    let version = release::store(&ds.client, t.releases, &new, &applied, previous).await?;
    Ok(Deployed {
        release: format!("{rel_ns}/{rel_name}:{version}"),
        objects: applied,
        live: live_after,
    })
}

/// Upstream's default account to deploy as, used when it exists in the agent's namespace.
pub const DEFAULT_SERVICE_ACCOUNT: &str = "fleet-default";

/// The downstream as the bundle is deployed: impersonating `serviceAccount` from the agent's
/// namespace, so that account's RBAC bounds what a bundle may change. Without one, the account
/// `fleet-default` if it exists, else the agent's own identity, as upstream's agent.
async fn deployer(
    ds: &Downstream,
    accounts: &crate::accounts::Accounts,
    agent_namespace: &str,
    asked: &str,
) -> Result<Downstream, DeployError> {
    let name = if asked.is_empty() {
        DEFAULT_SERVICE_ACCOUNT
    } else {
        asked
    };
    let err = |reason: String| DeployError::ServiceAccount {
        namespace: agent_namespace.to_string(),
        name: name.to_string(),
        reason,
    };
    // An account the bundle names but the watch has not seen (yet) is asked for, so a deploy
    // right after the account was created does not fail on the watch's lag.
    let exists = match accounts.exists(name) {
        Some(known) if known || asked.is_empty() => Ok(known),
        _ => kube::Api::<k8s_openapi::api::core::v1::ServiceAccount>::namespaced(
            ds.client.clone(),
            agent_namespace,
        )
        .get_opt(name)
        .await
        .map(|sa| sa.is_some()),
    };
    match exists {
        Ok(true) => ds
            .impersonating(&format!("system:serviceaccount:{agent_namespace}:{name}"))
            .map_err(|e| err(e.to_string())),
        Ok(false) if asked.is_empty() => Ok(ds.clone()),
        Ok(false) => Err(err(format!("serviceaccounts \"{name}\" not found"))),
        Err(e) => Err(err(crate::objects::api_message(&e))),
    }
}

/// Resolves a kind, waiting (up to 60 s) for one whose CRD was just created to be served.
async fn resolve(
    ds: &Downstream,
    api_version: &str,
    kind: &str,
) -> Result<std::sync::Arc<crate::objects::Kind>, kube::Error> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match ds.kind(api_version, kind).await {
            Ok(k) => return Ok(k),
            Err(e) if Instant::now() > deadline => return Err(e),
            Err(_) => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    }
}

async fn wait_established(ds: &Downstream, r: &ObjRef) -> Result<(), DeployError> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let live = ds.get(r).await.map_err(|source| DeployError::Apply {
            what: obj_desc(r),
            source,
        })?;
        if live
            .as_ref()
            .is_some_and(|l| crate::readiness::not_ready(l, &[]).is_none())
        {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(DeployError::NotEstablished(r.name.clone()));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn delete_if_ours(
    ds: &Downstream,
    r: &ObjRef,
    rel_name: &str,
    rel_ns: &str,
) -> Result<(), DeployError> {
    let err = |source| DeployError::Apply {
        what: obj_desc(r),
        source,
    };
    let Some(live) = ds.get(r).await.map_err(err)? else {
        return Ok(());
    };
    let (owner, owner_ns) = owner_of(&live);
    if owner == rel_name && owner_ns == rel_ns && !keep_policy(&live) {
        ds.delete(r).await.map_err(err)?;
    }
    Ok(())
}

/// BundleDeployments that have release records written by this agent for its deployment
/// namespace but are not in `existing`, with whether their latest release keeps its resources:
/// what a garbage-collection pass after a complete, successful list uninstalls (BDs deleted
/// while the agent was away).
pub async fn orphans(
    ds: &Downstream,
    agent_namespace: &str,
    deployment_namespace: &str,
    existing: &BTreeSet<String>,
) -> Result<BTreeMap<String, bool>, kube::Error> {
    let all = list_records(
        ds,
        &format!(
            "owner=helm,{}={agent_namespace},{}={deployment_namespace}",
            release::AGENT_NAMESPACE_LABEL,
            fleet_api::keys::CLUSTER_NAMESPACE_LABEL
        ),
    )
    .await?;
    let mut out = BTreeMap::new();
    for (bd, recs) in all {
        if existing.contains(&bd) {
            continue;
        }
        let keep = recs.last().is_some_and(Record::keep_resources);
        out.insert(bd, keep);
    }
    Ok(out)
}

/// Release records matching a label selector, by BundleDeployment label (oldest first).
async fn list_records(
    ds: &Downstream,
    selector: &str,
) -> Result<BTreeMap<String, Vec<Record>>, kube::Error> {
    let api: Api<Secret> = Api::all(ds.client.clone());
    let mut out: BTreeMap<String, Vec<Record>> = BTreeMap::new();
    for s in api
        .list(&ListParams::default().labels(selector))
        .await?
        .items
    {
        let Some(bd) = s
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(release::BUNDLE_DEPLOYMENT_LABEL))
            .cloned()
        else {
            continue;
        };
        let Some(rec) = Record::of_secret(&s) else {
            continue;
        };
        out.entry(bd).or_default().push(rec);
    }
    for v in out.values_mut() {
        v.sort_by_key(|r| r.version);
    }
    Ok(out)
}

/// Every release record this agent wrote for BundleDeployment `bd`, grouped by release
/// (namespace, name), oldest first.
pub async fn records_of(
    ds: &Downstream,
    agent_namespace: &str,
    bd: &str,
) -> Result<BTreeMap<(String, String), Vec<Record>>, kube::Error> {
    let api: Api<Secret> = Api::all(ds.client.clone());
    let lp = ListParams::default().labels(&format!(
        "owner=helm,{}={bd},{}={agent_namespace}",
        release::BUNDLE_DEPLOYMENT_LABEL,
        release::AGENT_NAMESPACE_LABEL
    ));
    let mut out: BTreeMap<(String, String), Vec<Record>> = BTreeMap::new();
    for s in api.list(&lp).await?.items {
        let (Some(ns), Some(name)) = (
            s.metadata.namespace.clone(),
            s.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("name"))
                .cloned(),
        ) else {
            continue;
        };
        let Some(rec) = Record::of_secret(&s) else {
            continue;
        };
        out.entry((ns, name)).or_default().push(rec);
    }
    for v in out.values_mut() {
        v.sort_by_key(|r| r.version);
    }
    Ok(out)
}

/// Uninstalls every release of BundleDeployment `bd`: deletes the objects of its latest record
/// that are still ours (unless `keep_resources`), then the records. Called only when the
/// BundleDeployment was seen deleted, never because the manager is unreachable. Each release
/// whose records are deleted is forgotten by `cache`.
pub async fn uninstall(
    ds: &Downstream,
    cache: &release::ReleaseCache,
    agent_namespace: &str,
    bd: &str,
    keep_resources: bool,
) -> Result<(), DeployError> {
    let records = records_of(ds, agent_namespace, bd)
        .await
        .map_err(|source| DeployError::Apply {
            what: format!("release records of {bd}"),
            source,
        })?;
    for ((ns, name), recs) in records {
        if !keep_resources && let Some(last) = recs.last() {
            // Reverse order: custom resources before their CRDs, namespaces last.
            let manifest = last.manifest_objects();
            let mut objs: Vec<(ObjRef, &Value)> = manifest
                .iter()
                .filter_map(|o| ObjRef::of(o).map(|r| (r, o)))
                .collect();
            objs.reverse();
            for (r, o) in objs {
                if !keep_policy(o) {
                    delete_if_ours(ds, &r, &name, &ns).await?;
                }
            }
        }
        release::delete_all(&ds.client, &ns, &recs)
            .await
            .map_err(|source| DeployError::Apply {
                what: format!("release {ns}/{name}"),
                source,
            })?;
        cache.forget(&ns, &name);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn release_name_and_namespace_as_upstream() {
        let o: BundleDeploymentOptions = serde_json::from_value(json!({})).unwrap();
        assert_eq!(release_of("app", &o), ("app".into(), "default".into()));
        let o: BundleDeploymentOptions = serde_json::from_value(
            json!({"defaultNamespace": "d", "namespace": "n", "helm": {"releaseName": "r"}}),
        )
        .unwrap();
        assert_eq!(release_of("app", &o), ("r".into(), "n".into()));
        let o: BundleDeploymentOptions =
            serde_json::from_value(json!({"defaultNamespace": "d"})).unwrap();
        assert_eq!(release_of("app", &o).1, "d");
    }

    #[test]
    fn ownership_metadata_is_helms() {
        let mut o = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        own(&mut o, "rel", "ns");
        assert_eq!(owner_of(&o), ("rel".into(), "ns".into()));
        assert_eq!(o["metadata"]["labels"][MANAGED_BY_LABEL], "Helm");
    }
}
