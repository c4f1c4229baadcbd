//! The deploy loop: one watch on the agent's namespace's BundleDeployments upstream; each
//! BundleDeployment is reconciled (deploy when its deploymentID is not applied yet, then monitor)
//! and its status patched only when it changed. Deletion downstream happens only when a
//! BundleDeployment is seen deleted, never because the manager cannot be reached.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use fleet_api::state::BundleState;
use fleet_api::{BundleDeployment, BundleDeploymentStatus};
use fleet_targeting::status::SpecStatus;
use kube::Api;
use kube::api::{Patch, PatchParams};
use kube::runtime::watcher;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use crate::backoff::RateLimitedLog;
use crate::content::ContentCache;
use crate::credential::Upstream;
use crate::deploy::{self, DeployError, Target};
use crate::drift::DriftWatches;
use crate::monitor;
use crate::objects::{Downstream, ObjRef};
use crate::release::{self, Record};
use fleet_api::WatchedBd;

/// How long a BundleDeployment waits before its dependencies are checked again (they are also
/// re-checked whenever any BundleDeployment changes).
const DEPENDS_ON_REQUEUE: Duration = Duration::from_secs(15);
/// How long the status of a deploy whose workloads are not ready yet is held back, waiting for
/// them: workloads that become ready within it (ConfigMaps at once, a quick Deployment soon)
/// cost one status write ("applied and ready") instead of two ("applied, not ready", then
/// "ready"). Readiness changes queue the check that writes it; this bounds the wait.
const STATUS_SETTLE: Duration = Duration::from_secs(1);

/// The BundleDeployment watch's timeout, drawn per agent between 145 and 290 s (client-go's
/// reflectors draw theirs between 5 and 10 minutes). With kube's fixed 290 s, agents started
/// together (a manager's restart, a fleet registered at once) renew their watches together,
/// every 290 s, and the manager serves thousands of resumes in a few seconds.
fn watch_timeout() -> u32 {
    use std::hash::BuildHasher;
    // RandomState is seeded at random per process and per use: a draw without a crate.
    let draw = std::collections::hash_map::RandomState::new().hash_one(0u8);
    145 + (draw % 146) as u32
}

/// State of the deploy loop.
pub struct Agent {
    up: Upstream,
    ds: Downstream,
    agent_namespace: String,
    kube_version: String,
    contents: ContentCache,
    releases: release::ReleaseCache,
    accounts: crate::accounts::Accounts,
    namespaces: deploy::KnownNamespaces,
    /// Shared with the check running on one: a check takes no copy of its BundleDeployment.
    bds: BTreeMap<String, Arc<BundleDeployment>>,
    /// Generation last reconciled per BD (status-only events do not reconcile again).
    reconciled: HashMap<String, Option<i64>>,
    /// deploymentIDs whose deploy failed with a manifest error (not retried until they change).
    failed: HashMap<String, String>,
    /// BDs waiting for their dependencies.
    waiting: HashSet<String>,
    /// Statuses of deploys not written yet (by BD name, with the deploymentID they report
    /// applied): held back for [`STATUS_SETTLE`], or their write failed. The next check starts
    /// from them instead of the BD's stored status, so a retry writes the status of the deploy
    /// that ran instead of deploying again. Dropped once written.
    held: HashMap<String, (String, BundleDeploymentStatus)>,
    drift: DriftWatches,
    queue: VecDeque<String>,
    queued: HashSet<String>,
    tx: mpsc::UnboundedSender<String>,
    /// Held statuses whose [`STATUS_SETTLE`] ran out: checked only if still held (a workload's
    /// readiness usually wrote them first).
    settled: mpsc::UnboundedSender<String>,
}

impl Agent {
    fn enqueue(&mut self, name: String) {
        if self.queued.insert(name.clone()) {
            self.queue.push_back(name);
        }
    }

    fn requeue_after(&self, name: &str, d: Duration) {
        send_after(&self.tx, name, d);
    }

    fn bd_api(&self) -> Api<WatchedBd> {
        Api::namespaced(self.up.client.clone(), &self.up.deployment_namespace)
    }

    /// Patches the status when (and only when) it differs from what the BD holds. Takes the
    /// check's handle on the BD, so that recording the status written copies nothing: the
    /// BD is then held by the map alone.
    async fn write_status(
        &mut self,
        bd: Arc<BundleDeployment>,
        new: BundleDeploymentStatus,
    ) -> Result<(), kube::Error> {
        let mut new = new;
        new.display = display_of(&bd, &new);
        let unset = BundleDeploymentStatus::default();
        let old = bd.status.as_ref().unwrap_or(&unset);
        if *old == new {
            // Equal statuses serialize equal: nothing to diff (most checks change nothing).
            return Ok(());
        }
        let (Ok(old_v), Ok(new_v)) = (serde_json::to_value(old), serde_json::to_value(&new)) else {
            return Ok(());
        };
        let Some(patch) = merge_diff(&old_v, new_v) else {
            return Ok(());
        };
        let name = bd.metadata.name.clone().unwrap_or_default();
        drop(bd);
        let mut body = Map::new();
        body.insert("status".into(), patch);
        // The answer is not decoded: only this agent writes a BD's status, so the status now
        // stored is `new`, and the watch brings the whole object anyway.
        let req = kube::core::Request::new(<BundleDeployment as kube::Resource>::url_path(
            &(),
            Some(&self.up.deployment_namespace),
        ))
        .patch_subresource(
            "status",
            &name,
            &PatchParams::default(),
            &Patch::Merge(Value::Object(body)),
        )
        .map_err(kube::Error::BuildRequest)?;
        self.up.client.request_text(req).await?;
        if let Some(known) = self.bds.get_mut(&name) {
            Arc::make_mut(known).status = Some(new);
        }
        Ok(())
    }

    /// Whether `bd`'s dependencies are in their accepted states; the message when not.
    fn dependencies_pending(&self, bd: &BundleDeployment) -> Option<String> {
        let mut pending = Vec::new();
        for dep in &bd.spec.depends_on {
            let accepted: Vec<String> = if dep.accepted_states.is_empty() {
                vec![BundleState::Ready.as_str().to_string()]
            } else {
                dep.accepted_states.iter().map(|s| s.to_string()).collect()
            };
            let bundle_ns = label(bd, fleet_api::keys::BUNDLE_NAMESPACE_LABEL);
            let matches: Vec<&BundleDeployment> = self
                .bds
                .values()
                .map(Arc::as_ref)
                .filter(|o| {
                    if !dep.name.is_empty() {
                        label(o, fleet_api::keys::BUNDLE_LABEL) == dep.name
                            && label(o, fleet_api::keys::BUNDLE_NAMESPACE_LABEL) == bundle_ns
                    } else if let Some(sel) = &dep.selector {
                        selector_matches(sel, o)
                    } else {
                        false
                    }
                })
                .collect();
            let what = if dep.name.is_empty() {
                "selector".to_string()
            } else {
                dep.name.clone()
            };
            if matches.is_empty() {
                pending.push(format!("{what} (no bundle deployment found)"));
                continue;
            }
            for m in matches {
                let state = fleet_targeting::status::deployment_state(m);
                if !accepted.iter().any(|a| a == state.as_str()) {
                    pending.push(m.metadata.name.clone().unwrap_or_default());
                }
            }
        }
        (!pending.is_empty())
            .then(|| format!("dependent bundle(s) are not ready: [{}]", pending.join(" ")))
    }

    /// Reconciles one BundleDeployment by name.
    async fn reconcile(&mut self, name: &str) -> Result<(), String> {
        let Some(bd) = self.bds.get(name).cloned() else {
            return Ok(());
        };
        self.reconciled
            .insert(name.to_string(), bd.metadata.generation);
        if bd.metadata.deletion_timestamp.is_some() {
            return self.uninstall(name, bd.spec.options.keep_resources).await;
        }
        if bd.spec.paused || bd.spec.off_schedule || bd.spec.waiting_for_values {
            return Ok(());
        }
        let bd = with_values(&self.up, bd).await?;
        let held = match self.held.get(name) {
            Some((id, st)) if *id == bd.spec.deployment_id => Some(st.clone()),
            Some(_) => {
                self.held.remove(name);
                None
            }
            None => None,
        };
        let was_held = held.is_some();
        let mut st = held.unwrap_or_else(|| bd.status.clone().unwrap_or_default());
        let (rel_name, rel_ns) = deploy::release_of(name, &bd.spec.options);
        // A held status was made by this agent's own deploy (not written yet), and the release
        // records that deploy wrote are in the cache as written: not read again.
        let cached = was_held
            .then(|| self.releases.records(&rel_ns, &rel_name))
            .flatten();
        let history = match cached {
            Some(h) => h,
            None => release::history(&self.ds.client, &self.releases, &rel_ns, &rel_name)
                .await
                .map_err(|e| crate::backoff::chain(&e))?,
        };
        let current = history
            .iter()
            .rev()
            .find(|r| r.status() == "deployed")
            .cloned();
        let up_to_date = st.applied_deployment_id == bd.spec.deployment_id && current.is_some();

        // After a deploy: the server's answers to its applies, and the objects applied.
        let mut just_applied: Option<Vec<Value>> = None;
        let desired: Vec<Value>;
        // The release record's when no deploy ran (most checks), else the deploy's.
        let objects: &[Value] = if up_to_date {
            self.waiting.remove(name);
            desired = current
                .as_ref()
                .map_or_else(Vec::new, Record::manifest_objects);
            &desired
        } else {
            if self.failed.get(name) == Some(&bd.spec.deployment_id) {
                return Ok(());
            }
            if let Some(msg) = self.dependencies_pending(&bd) {
                self.waiting.insert(name.to_string());
                monitor::set_condition(&mut st.conditions, "Deployed", false, &msg);
                self.write_status(bd, st)
                    .await
                    .map_err(|e| crate::backoff::chain(&e))?;
                self.requeue_after(name, DEPENDS_ON_REQUEUE);
                return Ok(());
            }
            self.waiting.remove(name);
            let resources = self
                .contents
                .get(
                    &self.up.client,
                    crate::content::manifest_id(&bd.spec.deployment_id),
                )
                .await
                .map_err(|e| crate::backoff::chain(&e))?;
            let claim = self.drift.claimer(name);
            let applied = self.drift.apply_recorder();
            let t = Target {
                ds: &self.ds,
                agent_namespace: &self.agent_namespace,
                deployment_namespace: &self.up.deployment_namespace,
                kube_version: &self.kube_version,
                claim: &claim,
                applied: &applied,
                releases: &self.releases,
                accounts: &self.accounts,
                namespaces: &self.namespaces,
            };
            let result = deploy::deploy(&t, &bd, &resources, &history).await;
            if result.is_err() {
                // Its namespace may be what is missing.
                self.namespaces.forget(&rel_ns);
            }
            match result {
                Ok(d) => {
                    self.failed.remove(name);
                    st.release = d.release;
                    st.applied_deployment_id = bd.spec.deployment_id.clone();
                    monitor::set_condition(&mut st.conditions, "Deployed", true, "");
                    monitor::set_condition(&mut st.conditions, "Installed", true, "");
                    // Held until written: should anything below fail, the retry reports this
                    // deploy instead of running it again.
                    self.held.insert(
                        name.to_string(),
                        (bd.spec.deployment_id.clone(), st.clone()),
                    );
                    namespace_metadata(&self.ds, &rel_ns, &bd).await?;
                    just_applied = Some(d.live);
                    desired = d.objects;
                    &desired
                }
                Err(e) if e.is_manifest_error() => {
                    tracing::warn!(bundledeployment = name, "deploy failed: {e}");
                    self.failed
                        .insert(name.to_string(), bd.spec.deployment_id.clone());
                    let msg = e.to_string();
                    monitor::set_condition(&mut st.conditions, "Deployed", false, &msg);
                    monitor::set_condition(&mut st.conditions, "Installed", false, &msg);
                    self.write_status(bd, st)
                        .await
                        .map_err(|e| crate::backoff::chain(&e))?;
                    return Ok(());
                }
                Err(e) => {
                    // Retried with backoff; meanwhile the status says why (a missing
                    // valuesFrom ConfigMap, an account without the rights it needs ...).
                    let msg = e.to_string();
                    monitor::set_condition(&mut st.conditions, "Deployed", false, &msg);
                    self.write_status(bd, st)
                        .await
                        .map_err(|e| crate::backoff::chain(&e))?;
                    return Err(msg);
                }
            }
        };

        // The release before the current one (the history is oldest first and was read before
        // any deploy above, so after a deploy its newest record is the previous release).
        let previous_objects = {
            let mut deployed = history.iter().rev().filter(|r| r.status() != "failed");
            if up_to_date {
                deployed.next();
            }
            deployed
                .next()
                .map_or_else(Vec::new, Record::manifest_objects)
        };
        let previous: &[Value] = &previous_objects;
        // The previous release's objects are watched too: one coming back is reported extra.
        let refs: Vec<ObjRef> = objects
            .iter()
            .chain(previous)
            .filter_map(ObjRef::of)
            .collect();
        let listed_now = self.drift.track(name, &refs).await;
        // Right after a deploy the watches may lag behind what was just written: read what the
        // applies answered, except for kinds whose watch listed after the deploy (newer).
        let drift_cache = self.drift.cache().clone();
        let deployed = just_applied.is_some();
        let applied_cache = just_applied.map(|live| {
            let older: Vec<Value> = live
                .into_iter()
                .filter(|o| {
                    ObjRef::of(o).is_some_and(|r| !listed_now.contains(&(r.api_version, r.kind)))
                })
                .collect();
            crate::drift::LiveCache::of_objects(older)
        });
        let caches: Vec<&crate::drift::LiveCache> =
            applied_cache.iter().chain([&drift_cache]).collect();
        let mut ob = monitor::observe(
            &self.ds,
            &caches,
            objects,
            previous,
            (&rel_name, &rel_ns),
            &bd.spec.options,
        )
        .await
        .map_err(|e| crate::backoff::chain(&e))?;
        // Live state read anew, caches bypassed.
        let observe_fresh = || {
            monitor::observe(
                &self.ds,
                &[],
                objects,
                previous,
                (&rel_name, &rel_ns),
                &bd.spec.options,
            )
        };
        if !ob.modified.is_empty() {
            // The watch caches can trail this agent's own applies, and the echo of its own write
            // is not a change that queues the BD again: a stale read would report "modified"
            // until something else touches the object. Confirm with fresh reads first.
            ob = observe_fresh()
                .await
                .map_err(|e| crate::backoff::chain(&e))?;
        }
        let correct = bd
            .spec
            .correct_drift
            .clone()
            .or_else(|| bd.spec.options.correct_drift.clone())
            .unwrap_or_default();
        if correct.enabled && !ob.modified.is_empty() {
            for m in &ob.modified {
                if m.exist {
                    continue; // not ours: only takeOwnership adopts it
                }
                let r = ObjRef {
                    api_version: m.api_version.clone(),
                    kind: m.kind.clone(),
                    namespace: m.namespace.clone(),
                    name: m.name.clone(),
                };
                let Some(o) = objects.iter().find(|o| ObjRef::of(o).as_ref() == Some(&r)) else {
                    continue;
                };
                tracing::info!(bundledeployment = name, "correcting drift of {r}");
                correct_drift(&self.ds, &r, o, &m.patch, correct.force).await?;
            }
            ob = observe_fresh()
                .await
                .map_err(|e| crate::backoff::chain(&e))?;
        }
        monitor::apply_observation(&mut st, &ob);
        if deployed && !st.ready && !was_held {
            // Once per deploy: the next check (a workload's status changing, or the timer)
            // writes whatever it finds.
            self.held
                .insert(name.to_string(), (bd.spec.deployment_id.clone(), st));
            send_after(&self.settled, name, STATUS_SETTLE);
            return Ok(());
        }
        self.write_status(bd, st)
            .await
            .map_err(|e| crate::backoff::chain(&e))?;
        self.held.remove(name);
        Ok(())
    }

    /// Forgets every BundleDeployment a completed list did not return (deleted upstream while
    /// the watch was down); `collect_garbage` then uninstalls their releases.
    fn forget_all_but(&mut self, listed: &HashSet<String>) {
        let gone: Vec<String> = self
            .bds
            .keys()
            .filter(|n| !listed.contains(*n))
            .cloned()
            .collect();
        for name in gone {
            tracing::info!(bundledeployment = %name, "not in the list any more");
            self.bds.remove(&name);
            self.reconciled.remove(&name);
            self.waiting.remove(&name);
            self.failed.remove(&name);
            self.held.remove(&name);
        }
    }

    /// After a complete list (so only while connected): uninstalls releases whose
    /// BundleDeployment no longer exists (deleted while the agent was away).
    async fn collect_garbage(&mut self) {
        let existing = self.bds.keys().cloned().collect();
        let orphans = match deploy::orphans(
            &self.ds,
            &self.agent_namespace,
            &self.up.deployment_namespace,
            &existing,
        )
        .await
        {
            Ok(o) => o,
            Err(e) => {
                tracing::warn!("garbage collection skipped: listing release records: {e}");
                return;
            }
        };
        for (bd, keep) in orphans {
            tracing::info!(bundledeployment = %bd, "bundledeployment is gone upstream");
            if let Err(e) = self.uninstall(&bd, keep).await {
                tracing::warn!(bundledeployment = %bd, "uninstall failed: {e}");
            }
        }
    }

    async fn uninstall(&mut self, name: &str, keep_resources: bool) -> Result<(), String> {
        tracing::info!(bundledeployment = name, keep_resources, "uninstalling");
        deploy::uninstall(
            &self.ds,
            &self.releases,
            &self.agent_namespace,
            name,
            keep_resources,
        )
        .await
        .map_err(deploy_error)?;
        // It may have deleted a Namespace of its own.
        self.namespaces.clear();
        self.drift.forget(name);
        Ok(())
    }
}

/// Restores one drifted object. A missing object is applied again; a modified one gets the
/// merge patch that restores desired state: lists are replaced whole, so an entry someone else
/// added (a changed Service port is a new entry of a keyed list, upstream #2834) goes too, which
/// a server-side apply would leave to its new owner. With `force`, an object the patch cannot
/// fix (immutable fields) is deleted and created again, as Helm's `--force` does.
async fn correct_drift(
    ds: &Downstream,
    r: &ObjRef,
    desired: &Value,
    patch: &str,
    force: bool,
) -> Result<(), String> {
    if patch.is_empty() {
        return ds
            .apply(r, desired, true)
            .await
            .map(drop)
            .map_err(|e| format!("{r}: {e}"));
    }
    let p: Value = serde_json::from_str(patch).map_err(|e| format!("{r}: drift patch: {e}"))?;
    let api = ds.api(r).await.map_err(|e| format!("{r}: {e}"))?;
    let pp = PatchParams {
        field_manager: Some(crate::objects::FIELD_MANAGER.into()),
        ..Default::default()
    };
    match api.patch(&r.name, &pp, &Patch::Merge(&p)).await {
        Ok(_) => Ok(()),
        Err(e) if force => {
            tracing::info!("recreating {r} after a failed drift patch: {e}");
            ds.delete(r).await.map_err(|e| format!("{r}: {e}"))?;
            ds.apply(r, desired, true)
                .await
                .map(drop)
                .map_err(|e| format!("{r}: {e}"))
        }
        Err(e) => Err(format!("{r}: {e}")),
    }
}

/// Puts the Helm values the manager keeps out of the BundleDeployment back into its options: they
/// live in the options Secret named like the BD (keys `values` and `stagedValues`, JSON), and the
/// Secret must match the BD's `valuesHash` (sha256 of both), else the BD is retried later, as
/// upstream's agent does while the manager is still writing them.
async fn with_values(
    up: &Upstream,
    bd: Arc<BundleDeployment>,
) -> Result<Arc<BundleDeployment>, String> {
    if bd.spec.values_hash.is_empty() {
        return Ok(bd);
    }
    let name = bd.metadata.name.clone().unwrap_or_default();
    let secrets: kube::Api<k8s_openapi::api::core::v1::Secret> =
        kube::Api::namespaced(up.client.clone(), &up.deployment_namespace);
    let secret = secrets
        .get_opt(&name)
        .await
        .map_err(|e| format!("options secret {name}: {e}"))?
        .ok_or_else(|| format!("options secret {name} not found yet"))?;
    let data = secret.data.unwrap_or_default();
    let get = |k: &str| data.get(k).map(|b| b.0.clone()).unwrap_or_default();
    let (values, staged) = (get("values"), get("stagedValues"));
    let mut all = values.clone();
    all.extend_from_slice(&staged);
    if fleet_api::names::sha256_hex(&all) != bd.spec.values_hash {
        return Err(format!(
            "options secret {name} does not match the BundleDeployment's valuesHash yet"
        ));
    }
    let parse = |b: &[u8]| -> Result<Option<serde_json::Map<String, Value>>, String> {
        if b.is_empty() {
            return Ok(None);
        }
        serde_json::from_slice(b).map_err(|e| format!("options secret {name}: values: {e}"))
    };
    let (v, sv) = (parse(&values)?, parse(&staged)?);
    let mut bd = Arc::unwrap_or_clone(bd);
    if let Some(v) = v {
        bd.spec
            .options
            .helm
            .get_or_insert_with(Default::default)
            .values = Some(v);
    }
    if let Some(v) = sv {
        bd.spec
            .staged_options
            .helm
            .get_or_insert_with(Default::default)
            .values = Some(v);
    }
    Ok(Arc::new(bd))
}

fn deploy_error(e: DeployError) -> String {
    e.to_string()
}

fn label(bd: &BundleDeployment, key: &str) -> String {
    bd.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(key))
        .cloned()
        .unwrap_or_default()
}

fn selector_matches(
    sel: &k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector,
    bd: &BundleDeployment,
) -> bool {
    let empty = BTreeMap::new();
    let labels = bd.metadata.labels.as_ref().unwrap_or(&empty);
    let ml_ok = sel
        .match_labels
        .as_ref()
        .is_none_or(|m| m.iter().all(|(k, v)| labels.get(k) == Some(v)));
    let me_ok = sel.match_expressions.as_ref().is_none_or(|es| {
        es.iter().all(|e| {
            let vals = e.values.clone().unwrap_or_default();
            let v = labels.get(&e.key);
            match e.operator.as_str() {
                "In" => v.is_some_and(|v| vals.contains(v)),
                "NotIn" => v.is_none_or(|v| !vals.contains(v)),
                "Exists" => v.is_some(),
                "DoesNotExist" => v.is_none(),
                _ => false,
            }
        })
    });
    ml_ok && me_ok && (sel.match_labels.is_some() || sel.match_expressions.is_some())
}

/// `namespaceLabels` / `namespaceAnnotations` on the release namespace, applied under their own
/// field manager so that keys dropped from the options are removed and others' keys stay.
async fn namespace_metadata(
    ds: &Downstream,
    ns: &str,
    bd: &BundleDeployment,
) -> Result<(), String> {
    let o = &bd.spec.options;
    if o.namespace_labels.is_empty() && o.namespace_annotations.is_empty() {
        return Ok(());
    }
    let labels: Map<String, Value> = o
        .namespace_labels
        .iter()
        .filter(|(k, _)| !k.starts_with("pod-security.kubernetes.io/"))
        .map(|(k, v)| (k.clone(), json!(v)))
        .collect();
    let r = ObjRef {
        api_version: "v1".into(),
        kind: "Namespace".into(),
        namespace: String::new(),
        name: ns.into(),
    };
    let obj = json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": ns, "labels": labels, "annotations": o.namespace_annotations}});
    let api = ds.api(&r).await.map_err(|e| crate::backoff::chain(&e))?;
    let mut pp = PatchParams::apply("fleet-agent-namespace");
    pp.force = true;
    api.patch(ns, &pp, &Patch::Apply(&obj))
        .await
        .map_err(|e| format!("namespace {ns}: {e}"))?;
    Ok(())
}

/// JSON merge patch from `old` to `new` (None when equal): changed keys, and `null` for keys
/// `new` no longer has. `new`'s values move into the patch, uncopied.
pub fn merge_diff(old: &Value, new: Value) -> Option<Value> {
    match (old, new) {
        (Value::Object(o), Value::Object(n)) => {
            let mut p = Map::new();
            for k in o.keys() {
                if !n.contains_key(k) {
                    p.insert(k.clone(), Value::Null);
                }
            }
            for (k, nv) in n {
                match o.get(&k) {
                    Some(ov) => {
                        if let Some(d) = merge_diff(ov, nv) {
                            p.insert(k, d);
                        }
                    }
                    None => {
                        p.insert(k, nv);
                    }
                }
            }
            (!p.is_empty()).then_some(Value::Object(p))
        }
        (old, new) if *old == new => None,
        (_, new) => Some(new),
    }
}

/// `status.display` as upstream's manager derives it from the agent's status (the `Deployed` and
/// `Monitored` printer columns and the state), written here in the same status patch: upstream
/// spends one more manager write per status change on it.
fn display_of(
    bd: &BundleDeployment,
    status: &BundleDeploymentStatus,
) -> fleet_api::BundleDeploymentDisplay {
    let message = |t: &str| {
        status
            .conditions
            .iter()
            .find(|c| c.type_ == t)
            .map(|c| {
                if c.reason == "Error" {
                    format!("Error: {}", c.message)
                } else {
                    c.status.clone()
                }
            })
            .unwrap_or_default()
    };
    fleet_api::BundleDeploymentDisplay {
        deployed: message("Deployed"),
        monitored: message("Monitored"),
        state: fleet_targeting::status::state_of(&SpecStatus(&bd.spec, Some(status)))
            .as_str()
            .to_string(),
    }
}

/// Sends `name` on `tx` after `d`, without holding up the loop.
fn send_after(tx: &mpsc::UnboundedSender<String>, name: &str, d: Duration) {
    let tx = tx.clone();
    let name = name.to_string();
    tokio::spawn(async move {
        tokio::time::sleep(d).await;
        let _ = tx.send(name);
    });
}

/// Runs the deploy loop until the process ends. Errors talking to the manager are retried by the
/// watch (capped backoff with jitter) and logged at a capped rate; nothing is deleted because of
/// them.
pub async fn run(
    up: Upstream,
    ds: Downstream,
    agent_namespace: String,
    mut synced: Option<tokio::sync::oneshot::Sender<()>>,
) {
    let kube_version = match ds.client.apiserver_version().await {
        Ok(v) => v.git_version,
        Err(e) => {
            tracing::warn!(
                "downstream version unknown ({e}); rendering for {}",
                fleet_render::deploy::TEMPLATE_KUBE_VERSION
            );
            fleet_render::deploy::TEMPLATE_KUBE_VERSION.to_string()
        }
    };
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (settled, mut settled_rx) = mpsc::unbounded_channel::<String>();
    let owners = Arc::default();
    let mut agent = Agent {
        drift: DriftWatches::new(ds.clone(), owners, tx.clone()),
        accounts: crate::accounts::Accounts::watch(ds.client.clone(), &agent_namespace),
        up,
        ds,
        agent_namespace,
        kube_version,
        contents: ContentCache::default(),
        releases: release::ReleaseCache::default(),
        namespaces: deploy::KnownNamespaces::default(),
        bds: BTreeMap::new(),
        reconciled: HashMap::new(),
        failed: HashMap::new(),
        waiting: HashSet::new(),
        held: HashMap::new(),
        queue: VecDeque::new(),
        queued: HashSet::new(),
        tx,
        settled,
    };
    // managedFields is never read here: not decoded, nor kept for every BundleDeployment.
    let mut bd_events = crate::bd_watch::follow(agent.bd_api(), watch_timeout());
    let mut log = RateLimitedLog::new(Duration::from_secs(30));
    let mut retry_delay: HashMap<String, Duration> = HashMap::new();
    // Set by a completed (re-)list: once the queue drains, the agent says it is in sync.
    let mut listed = false;
    // The names a (re-)list in progress has returned: a relist replaces what the agent knows,
    // so a BundleDeployment deleted while the watch was down (no Delete event) is forgotten and
    // its release uninstalled by the garbage collection after the list.
    let mut relisted: Option<HashSet<String>> = None;
    loop {
        tokio::select! {
            ev = bd_events.recv() => {
                let Some(ev) = ev else { return };
                match ev {
                    Ok(watcher::Event::Apply(bd)) | Ok(watcher::Event::InitApply(bd)) => {
                        log.reset();
                        let name = bd.metadata.name.clone().unwrap_or_default();
                        if let Some(seen) = relisted.as_mut() {
                            seen.insert(name.clone());
                        }
                        let changed = agent.reconciled.get(&name) != Some(&bd.metadata.generation)
                            || bd.metadata.deletion_timestamp.is_some();
                        agent.bds.insert(name.clone(), bd);
                        if changed {
                            agent.enqueue(name);
                        }
                        // A status change may satisfy someone's dependsOn.
                        let waiting: Vec<String> = agent.waiting.iter().cloned().collect();
                        for w in waiting {
                            agent.enqueue(w);
                        }
                    }
                    Ok(watcher::Event::Delete(bd)) => {
                        let name = bd.metadata.name.clone().unwrap_or_default();
                        agent.bds.remove(&name);
                        agent.reconciled.remove(&name);
                        agent.waiting.remove(&name);
                        agent.held.remove(&name);
                        if let Err(e) = agent.uninstall(&name, bd.spec.options.keep_resources).await {
                            tracing::warn!(bundledeployment = %name, "uninstall failed: {e}");
                        }
                    }
                    Ok(watcher::Event::InitDone) => {
                        if let Some(seen) = relisted.take() {
                            agent.forget_all_but(&seen);
                        }
                        listed = true;
                    }
                    Ok(watcher::Event::Init) => relisted = Some(HashSet::new()),
                    Err(e) => log.warn(&format!(
                        "watching bundledeployments in {}: {}; retrying with backoff",
                        agent.up.deployment_namespace,
                        crate::backoff::chain(&e)
                    )),
                }
            }
            Some(name) = rx.recv() => agent.enqueue(name),
            Some(name) = settled_rx.recv() => {
                if agent.held.contains_key(&name) {
                    agent.enqueue(name);
                }
            }
        }
        // Every check already asked for joins the queue now, once per BundleDeployment: taken
        // one per turn, each would check its BundleDeployment again (a deploy's objects each
        // report, and a check reads them all).
        while let Ok(name) = rx.try_recv() {
            agent.enqueue(name);
        }
        while let Some(name) = agent.queue.pop_front() {
            agent.queued.remove(&name);
            match agent.reconcile(&name).await {
                Ok(()) => {
                    retry_delay.remove(&name);
                }
                Err(e) => {
                    let d = retry_delay.get(&name).map_or(Duration::from_secs(1), |d| {
                        (*d * 2).min(Duration::from_secs(300))
                    });
                    retry_delay.insert(name.clone(), d);
                    log.warn(&format!("bundledeployment {name}: {e}; retrying"));
                    // Forget the reconciled generation so the retry runs in full.
                    agent.reconciled.remove(&name);
                    agent.requeue_after(&name, crate::backoff::jitter(d));
                }
            }
        }
        if listed {
            listed = false;
            agent.collect_garbage().await;
            tracing::info!("synced {} bundledeployments", agent.bds.len());
            if let Some(s) = synced.take() {
                let _ = s.send(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watch_timeouts_are_spread_within_the_clients_read_timeout() {
        let draws: HashSet<u32> = (0..200).map(|_| watch_timeout()).collect();
        assert!(draws.iter().all(|t| (145..=290).contains(t)), "{draws:?}");
        // 200 draws from 146 values: far more than a handful of distinct ones.
        assert!(draws.len() > 50, "{draws:?}");
    }

    #[test]
    fn merge_diff_nulls_removed_keys_and_skips_equal() {
        let old = json!({"ready": true, "conditions": [1], "display": {"state": "x"}});
        let new = json!({"conditions": [1], "display": {"state": "x"}, "release": "r"});
        assert_eq!(
            merge_diff(&old, new.clone()),
            Some(json!({"ready": null, "release": "r"}))
        );
        assert_eq!(merge_diff(&new, new.clone()), None);
    }
}
