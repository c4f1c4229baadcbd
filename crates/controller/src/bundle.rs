//! Bundle reconciler (upstream `bundle_controller.go`): targets from `fleet_targeting` → one
//! BundleDeployment per target in the cluster's namespace, options Secrets with `valuesHash`,
//! the Content named by manifestID, rollout (no fixed 50-per-pass pacing unless
//! `rolloutStrategy.maxNew` asks), orphaned BDs deleted, finalizer, and the Bundle's status.
//!
//! Every write is a difference against the reflector cache: an identical BD is not written, an
//! unchanged status is not written.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use fleet_api::keys::*;
use fleet_api::{Bundle, BundleDeployment, BundleStatus, BundleSummary, PartitionStatus};
use fleet_targeting::Stats;
use fleet_targeting::rollout::{DeploymentIds, RolloutTarget};
use fleet_targeting::status::{message_of, state_of};
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use serde_json::json;

use crate::bds::{CachedBd, Facts, SpecHash, values_fingerprint};
use crate::context::{Context, QueueConfig, run_queue};
use crate::{conditions, secs};

/// Why a reconcile failed (the key is retried).
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// An API call failed.
    #[error("{context}: {source}")]
    Kube {
        /// What was being done.
        context: String,
        /// The client error.
        source: kube::Error,
    },
    /// Anything else, worded for the status.
    #[error("{0}")]
    Other(String),
}

pub(crate) fn kerr(context: impl Into<String>) -> impl FnOnce(kube::Error) -> ReconcileError {
    let context = context.into();
    move |source| ReconcileError::Kube { context, source }
}

/// Runs the Bundle controller until its trigger streams end.
pub async fn controller(ctx: Arc<Context>) {
    let parts = ctx.take_queue(|s| s.bundles.take(), |r| r.bundle.take());
    let cfg = QueueConfig {
        kind: "bundle",
        debounce: Duration::ZERO,
        trigger_debounce: Duration::from_millis(50),
        concurrency: 2,
        skip_status_only: Some(crate::context::no_status_input),
    };
    run_queue(
        ctx.clone(),
        parts,
        ctx.stores.bundles.clone(),
        cfg,
        reconcile,
    )
    .await;
}

fn keys(k: Vec<crate::bds::BdKey>) -> Vec<(String, String)> {
    k.into_iter()
        .map(|(ns, n)| (ns.to_string(), n.to_string()))
        .collect()
}

fn ns_name(b: &Bundle) -> (String, String) {
    (
        b.metadata.namespace.clone().unwrap_or_default(),
        b.metadata.name.clone().unwrap_or_default(),
    )
}

/// What targeting and rollout decided for one bundle (computed under the Fleet read lock).
struct Plan {
    /// The [`fleet_targeting::Fleet`]'s revision the targets were computed at.
    revision: u64,
    targets: Vec<fleet_targeting::Target>,
    existing: Vec<Option<Arc<CachedBd>>>,
    rts: Vec<RolloutTarget>,
    rs: fleet_targeting::rollout::RolloutStatus,
    partitions: Vec<fleet_targeting::rollout::PartitionPlan>,
}

/// Targets of `b` from the shared incremental [`Fleet`], existing BDs from the cache, and the
/// rollout pass over them.
fn plan(ctx: &Context, b: &Bundle, mid: &str) -> Result<Plan, String> {
    let fleet = ctx.fleet.read().unwrap_or_else(|p| p.into_inner());
    let name = b.metadata.name.clone().unwrap_or_default();
    let targets = fleet_targeting::targets(b, &fleet, mid, &mut Stats::default())
        .map_err(|e| e.to_string())?;
    let existing: Vec<Option<Arc<CachedBd>>> = targets
        .iter()
        .map(|t| {
            let ns = fleet_targeting::bundle_deployment_namespace(&t.cluster);
            ctx.stores.bds.get(&ns, &name)
        })
        .collect();
    let views: Vec<_> = targets
        .iter()
        .filter_map(|t| fleet.target_view(t))
        .collect();
    if views.len() != targets.len() {
        return Err("targeted cluster missing from the index".into());
    }
    let mut rts: Vec<RolloutTarget> = targets
        .iter()
        .zip(&existing)
        .map(|(t, ex)| RolloutTarget {
            desired_id: t.deployment_id.clone(),
            paused: b.spec.paused || t.cluster.spec.paused,
            deployment: ex.as_ref().map(|bd| {
                let st = bd.status.as_ref();
                DeploymentIds {
                    deployment_id: bd.deployment_id.to_string(),
                    staged_id: bd.staged_deployment_id.to_string(),
                    applied_id: st
                        .map(|s| s.applied_deployment_id.to_string())
                        .unwrap_or_default(),
                    ready: st.is_some_and(|s| s.ready),
                }
            }),
        })
        .collect();
    let mut rollout = b.spec.rollout_strategy.clone().unwrap_or_default();
    if rollout.max_new.is_none() {
        // Upstream creates at most 50 BDs per pass; we write them all unless asked to pace.
        rollout.max_new = Some(i64::MAX);
    }
    fleet_targeting::rollout::update_partitions(&rollout, &views, &mut rts)
        .map_err(|e| e.to_string())?;
    // The status reports the rollout as it stands after this pass's writes: what the next pass
    // would compute from the cache once they land, so that pass has nothing to rewrite (the
    // bundle is not queued again by its own writes).
    let rs = fleet_targeting::rollout::update_partitions(&rollout, &views, &mut rts.clone())
        .map_err(|e| e.to_string())?;
    let partitions =
        fleet_targeting::rollout::partitions(&rollout, &views).map_err(|e| e.to_string())?;
    Ok(Plan {
        revision: fleet.revision(),
        targets,
        existing,
        rts,
        rs,
        partitions,
    })
}

async fn reconcile(bundle: Arc<Bundle>, ctx: Arc<Context>) -> Result<Action, ReconcileError> {
    ctx.metrics
        .bundle_reconciles
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let (ns, name) = ns_name(&bundle);
    let api: Api<Bundle> = Api::namespaced(ctx.client.clone(), &ns);
    let has_finalizer = bundle
        .metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == BUNDLE_FINALIZER);
    if bundle.metadata.deletion_timestamp.is_some() {
        ctx.forget_desired_memo(&ObjectRef::from(bundle.as_ref()));
        if !has_finalizer {
            return Ok(Action::await_change());
        }
        let left = keys(ctx.stores.bds.of_bundle(&ns, &name));
        if !left.is_empty() {
            delete_bds(&ctx, left).await?;
            return Ok(Action::requeue(secs(2)));
        }
        let fins: Vec<&String> = bundle
            .metadata
            .finalizers
            .iter()
            .flatten()
            .filter(|f| *f != BUNDLE_FINALIZER)
            .collect();
        ctx.metrics.write();
        api.patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": fins, "resourceVersion": bundle.metadata.resource_version}})),
        )
        .await
        .map_err(kerr(format!("removing finalizer of bundle {ns}/{name}")))?;
        return Ok(Action::await_change());
    }
    if !has_finalizer {
        let mut fins: Vec<String> = bundle.metadata.finalizers.clone().unwrap_or_default();
        fins.push(BUNDLE_FINALIZER.into());
        ctx.metrics.write();
        api.patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": fins, "resourceVersion": bundle.metadata.resource_version}})),
        )
        .await
        .map_err(kerr(format!("adding finalizer to bundle {ns}/{name}")))?;
        return Ok(Action::await_change());
    }

    let revision_now = ctx
        .fleet
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .revision();
    if let Some(wait) = ctx.settled_wait(&bundle, revision_now) {
        return Ok(Action::requeue(wait.max(Duration::from_millis(100))));
    }
    let started = std::time::Instant::now();
    let mut b = (*bundle).clone();
    let mut status = bundle.status.clone().unwrap_or_default();
    if !b.spec.values_hash.is_empty()
        && let Err(msg) = load_values(&ctx, &mut b).await
    {
        conditions::set(&mut status.conditions, "Ready", false, "", &msg);
        write_status(&ctx, &bundle, status).await?;
        return Ok(Action::requeue(secs(5)));
    }
    let mid = fleet_targeting::manifest_id(&b);
    let Plan {
        revision,
        targets,
        existing,
        rts,
        rs,
        partitions: plans,
    } = match plan(&ctx, &b, &mid) {
        Ok(p) => p,
        Err(msg) => {
            conditions::set(&mut status.conditions, "Ready", false, "", &msg);
            write_status(&ctx, &bundle, status).await?;
            return Ok(Action::await_change());
        }
    };
    if !targets.is_empty() {
        ensure_content(&ctx, &b, &mid).await?;
    }

    // Desired BDs, written where they differ from the cache. Each is built only when the
    // writes reach it: a bundle's thousand desired objects are not all alive at once.
    // The namespaces of the BDs wanted (all named after the bundle).
    let mut desired_namespaces: HashSet<std::borrow::Cow<'_, str>> = HashSet::new();
    let mut shown: Vec<Option<Shown>> = Vec::with_capacity(targets.len());
    let mut jobs = Vec::new();
    for (i, (t, rt)) in targets.iter().zip(&rts).enumerate() {
        let Some(d) = &rt.deployment else {
            shown.push(None);
            continue;
        };
        let promoted = d.deployment_id == t.deployment_id;
        desired_namespaces.insert(fleet_targeting::bundle_deployment_namespace(&t.cluster));
        shown.push(Some(Shown {
            deployment_id: d.deployment_id.clone(),
            staged_deployment_id: t.deployment_id.clone(),
            existing: existing[i].clone(),
        }));
        jobs.push((i, promoted));
    }
    // Every target has its desired deployment: no rollout step is left for BD changes to unlock.
    let all_promoted = jobs.len() == targets.len() && jobs.iter().all(|(_, promoted)| *promoted);
    let mut memo = ctx.desired_memo(&bundle, revision, targets.len());
    let build = |(i, promoted): (usize, bool)| {
        let (t, ex) = (&targets[i], &existing[i]);
        if promoted
            && let Some(e) = ex
            && memo.hashes[i] != 0
            && memo.hashes[i] == e.spec_hash.with_values(e.values_hash)
            && *e.deployment_id == *t.deployment_id
        {
            return None;
        }
        let mut want = fleet_targeting::bundle_deployment(&b, &t.cluster, t, &mid);
        let mut unsplit = None;
        if !promoted {
            // Not promoted by rollout: keep what the cluster currently deploys. The cache holds
            // a hash of its options, not them: they are read back only if this BD is written.
            if let Some(d) = &rts[i].deployment {
                want.spec.deployment_id = d.deployment_id.clone();
            }
            want.spec.options = Default::default();
            unsplit = ex.is_some().then(|| want.clone());
        }
        let secret = split_values(&mut want);
        let hash = SpecHash::of(&mut want.spec, &want.metadata.labels);
        let values = values_fingerprint(&want.spec.values_hash);
        if promoted {
            memo.hashes[i] = hash.with_values(values);
        }
        // Not promoted: its valuesHash covers the values it deploys now, which live in its
        // options Secret; they are unchanged when its deploymentID is (an ID hashes options
        // with their values), as the staged ones are when its stagedDeploymentID is.
        let same = ex.as_ref().is_some_and(|e| {
            e.spec_hash.rest == hash.rest
                && *e.deployment_id == *want.spec.deployment_id
                && (!promoted || (e.spec_hash.options == hash.options && e.values_hash == values))
        });
        if same {
            return None;
        }
        Some(match (unsplit, ex) {
            (Some(u), Some(e)) => write_unpromoted(ctx.clone(), u, e.clone()).boxed(),
            _ => write_bd(ctx.clone(), want, ex.clone(), secret).boxed(),
        })
    };
    let results: Vec<Result<(), ReconcileError>> =
        futures::stream::iter(jobs.into_iter().filter_map(build))
            .buffer_unordered(ctx.opts.write_concurrency.max(1))
            .collect()
            .await;
    let wrote = !results.is_empty();
    for r in results {
        r?;
    }
    ctx.keep_desired_memo(&bundle, memo);

    // Orphans: BDs of this bundle for clusters it no longer targets.
    let orphans: Vec<(String, String)> = keys(ctx.stores.bds.of_bundle(&ns, &name))
        .into_iter()
        .filter(|(bdns, bdname)| *bdname != name || !desired_namespaces.contains(bdns.as_str()))
        .collect();
    let deleted = !orphans.is_empty();
    delete_bds(&ctx, orphans).await?;
    if all_promoted && !wrote && !deleted {
        ctx.mark_settled(&bundle, started);
    }
    if wrote || deleted {
        // A manifest may have lost its last BD: let the Content collector look soon.
        ctx.content_changed.notify_one();
    }

    // Status.
    let mut summary = BundleSummary::default();
    for (t, bd) in targets.iter().zip(&shown) {
        let facts = bd.as_ref().map(Shown::facts);
        let state = facts
            .as_ref()
            .map_or(fleet_api::state::BundleState::Pending, state_of);
        // A name and a message only for the entries the summary lists.
        let (cname, message) = if fleet_targeting::status::lists(&summary, state) {
            let c = &t.cluster.metadata;
            (
                format!(
                    "{}/{}",
                    c.namespace.as_deref().unwrap_or(""),
                    c.name.as_deref().unwrap_or("")
                ),
                facts.as_ref().map(message_of).unwrap_or_default(),
            )
        } else {
            (String::new(), String::new())
        };
        let st = facts.as_ref().and_then(|f| f.status);
        summary.desired_ready += 1;
        fleet_targeting::status::increment(
            &mut summary,
            &cname,
            state,
            &message,
            st.map_or(&[], |s| &s.modified_status),
            st.map_or(&[], |s| &s.non_ready_status),
        );
    }
    let mut partitions = Vec::new();
    for (p, (pname, count, max_unavailable, unavailable)) in plans.iter().zip(&rs.partitions) {
        let mut ps = BundleSummary::default();
        for &i in &p.targets {
            let s = bundle_partition_entry(&targets[i], &shown[i]);
            ps.desired_ready += 1;
            fleet_targeting::status::increment(&mut ps, "", s, "", &[], &[]);
        }
        partitions.push(PartitionStatus {
            name: pname.clone(),
            count: *count,
            max_unavailable: *max_unavailable,
            unavailable: *unavailable,
            summary: ps,
        });
    }
    let msg = fleet_targeting::status::ready_message(&summary, "Cluster");
    conditions::set(&mut status.conditions, "Ready", msg.is_empty(), "", &msg);
    status.display.ready_clusters = fleet_targeting::status::ready_ratio(&summary);
    status.display.state = fleet_targeting::status::summary_state(&summary)
        .map(|s| s.as_str().to_string())
        .unwrap_or_default();
    status.summary = summary;
    status.unavailable = rs.unavailable;
    status.max_unavailable = rs.max_unavailable;
    status.unavailable_partitions = rs.unavailable_partitions;
    status.max_unavailable_partitions = rs.max_unavailable_partitions;
    status.partitions = partitions;
    status.observed_generation = bundle.metadata.generation.unwrap_or(0);
    status.resource_key.clear();
    write_status(&ctx, &bundle, status).await?;
    Ok(Action::await_change())
}

fn bundle_partition_entry(
    _t: &fleet_targeting::Target,
    bd: &Option<Shown>,
) -> fleet_api::state::BundleState {
    match bd {
        Some(bd) => state_of(&bd.facts()),
        None => fleet_api::state::BundleState::Pending,
    }
}

/// A target's BD as the status shows it: the IDs this pass wants with the status the agent
/// last reported.
struct Shown {
    deployment_id: String,
    staged_deployment_id: String,
    existing: Option<Arc<CachedBd>>,
}

impl Shown {
    fn facts(&self) -> Facts<'_> {
        Facts {
            deployment_id: &self.deployment_id,
            staged_deployment_id: &self.staged_deployment_id,
            status: self.existing.as_ref().and_then(|e| e.status.as_deref()),
        }
    }
}

/// Writes the status if it differs from the cached one (PUT on the status subresource).
async fn write_status(
    ctx: &Context,
    bundle: &Bundle,
    status: BundleStatus,
) -> Result<(), ReconcileError> {
    if bundle.status.as_ref() == Some(&status) {
        return Ok(());
    }
    let (ns, name) = ns_name(bundle);
    let api: Api<Bundle> = Api::namespaced(ctx.client.clone(), &ns);
    let mut obj = bundle.clone();
    obj.status = Some(status);
    ctx.metrics.write();
    api.replace_status(&name, &PostParams::default(), &obj)
        .await
        .map_err(kerr(format!("updating status of bundle {ns}/{name}")))?;
    Ok(())
}

/// Reads the bundle's values Secret back into its spec (the values live out of band).
async fn load_values(ctx: &Context, b: &mut Bundle) -> Result<(), String> {
    let (ns, name) = ns_name(b);
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &ns);
    let s = secrets
        .get_opt(&name)
        .await
        .map_err(|e| format!("reading values secret {ns}/{name}: {e}"))?
        .ok_or_else(|| format!("values secret {ns}/{name} not found"))?;
    let data: BTreeMap<String, Vec<u8>> = s
        .data
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, v.0))
        .collect();
    let hash = fleet_bundle::values::hash_values(&data);
    if hash != b.spec.values_hash {
        return Err(format!(
            "values secret {ns}/{name} does not match the bundle's valuesHash"
        ));
    }
    let parse = |k: &str, v: &[u8]| -> Result<serde_json::Map<String, serde_json::Value>, String> {
        serde_json::from_slice(v).map_err(|e| format!("values secret {ns}/{name} key {k}: {e}"))
    };
    for (k, v) in &data {
        let values = parse(k, v)?;
        if k == "values.yaml" {
            b.spec
                .options
                .helm
                .get_or_insert_with(Default::default)
                .values = Some(values);
        } else if let Some(t) = b.spec.targets.iter_mut().find(|t| &t.name == k) {
            t.options.helm.get_or_insert_with(Default::default).values = Some(values);
        }
    }
    Ok(())
}

/// Moves helm values out of a BD into its options Secret (`values`, `stagedValues`) and sets
/// `valuesHash`; returns the Secret data, if any.
fn split_values(bd: &mut BundleDeployment) -> Option<BTreeMap<String, Vec<u8>>> {
    split_values_with(bd, None)
}

/// [`split_values`], with `values` given (the bytes the cluster deploys now, when rollout keeps
/// them: the BD's options hold no values, those live in its options Secret).
fn split_values_with(
    bd: &mut BundleDeployment,
    current: Option<Vec<u8>>,
) -> Option<BTreeMap<String, Vec<u8>>> {
    let take = |o: &mut fleet_api::BundleDeploymentOptions| -> Vec<u8> {
        o.helm
            .as_mut()
            .and_then(|h| h.values.take())
            .filter(|v| !v.is_empty())
            .and_then(|v| fleet_api::fleetyaml::go_json(&v).ok())
            .map(String::into_bytes)
            .unwrap_or_default()
    };
    let values = match current {
        Some(v) => v,
        None => take(&mut bd.spec.options),
    };
    let staged = take(&mut bd.spec.staged_options);
    if values.is_empty() && staged.is_empty() {
        return None;
    }
    let mut all = values.clone();
    all.extend_from_slice(&staged);
    bd.spec.values_hash = fleet_api::names::sha256_hex(&all);
    Some(BTreeMap::from([
        ("values".to_string(), values),
        ("stagedValues".to_string(), staged),
    ]))
}

/// Writes a Secret holding Helm values (a Bundle's values or a BD's options) with server-side
/// apply as the controller; callers write it only when the values hash changed.
pub(crate) async fn apply_values_secret(
    ctx: &Context,
    ns: &str,
    name: &str,
    labels: Option<BTreeMap<String, String>>,
    type_: &str,
    data: BTreeMap<String, Vec<u8>>,
) -> Result<Secret, kube::Error> {
    let s = Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(ns.to_string()),
            labels,
            ..Default::default()
        },
        type_: Some(type_.into()),
        data: Some(
            data.into_iter()
                .map(|(k, v)| (k, k8s_openapi::ByteString(v)))
                .collect(),
        ),
        ..Default::default()
    };
    ctx.metrics.write();
    Api::<Secret>::namespaced(ctx.client.clone(), ns)
        .patch(
            name,
            &PatchParams::apply("fleet-controller").force(),
            &Patch::Apply(&s),
        )
        .await
}

/// Updates a BD that rollout does not promote: it keeps the options the cluster deploys now,
/// which the cache does not hold, so they are read back first.
async fn write_unpromoted(
    ctx: Arc<Context>,
    mut want: BundleDeployment,
    existing: Arc<CachedBd>,
) -> Result<(), ReconcileError> {
    let ns = want.metadata.namespace.clone().unwrap_or_default();
    let name = want.metadata.name.clone().unwrap_or_default();
    let api: Api<BundleDeployment> = Api::namespaced(ctx.client.clone(), &ns);
    let cur = api
        .get(&name)
        .await
        .map_err(kerr(format!("reading bundledeployment {ns}/{name}")))?;
    if cur.metadata.resource_version.as_deref() != Some(&*existing.resource_version) {
        // Changed since cached: the watch event brings it and a new pass.
        return Err(ReconcileError::Other(format!(
            "bundledeployment {ns}/{name} changed meanwhile"
        )));
    }
    want.spec.options = cur.spec.options;
    // Its current values are in its options Secret (`values`), not in its options.
    let current = if cur.spec.values_hash.is_empty() {
        Vec::new()
    } else {
        let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &ns);
        secrets
            .get_opt(&name)
            .await
            .map_err(kerr(format!("reading options secret {ns}/{name}")))?
            .and_then(|s| s.data)
            .and_then(|mut d| d.remove("values"))
            .map(|b| b.0)
            .unwrap_or_default()
    };
    let secret = split_values_with(&mut want, Some(current));
    write_bd(ctx, want, Some(existing), secret).await
}

/// Creates or updates one BD (its options Secret first, when its values changed). An update is
/// a JSON patch of the spec and labels conditioned on the cached resourceVersion: the object's
/// other metadata (annotations, finalizers, owner references) stays as it is.
async fn write_bd(
    ctx: Arc<Context>,
    want: BundleDeployment,
    existing: Option<Arc<CachedBd>>,
    secret: Option<BTreeMap<String, Vec<u8>>>,
) -> Result<(), ReconcileError> {
    let _slot = ctx.write_slot().await;
    let ns = want.metadata.namespace.clone().unwrap_or_default();
    let name = want.metadata.name.clone().unwrap_or_default();
    if let Some(data) = secret
        && existing.as_ref().map(|e| e.values_hash)
            != Some(values_fingerprint(&want.spec.values_hash))
    {
        apply_values_secret(
            &ctx,
            &ns,
            &name,
            want.metadata.labels.clone(),
            SECRET_TYPE_BUNDLE_DEPLOYMENT_OPTIONS,
            data,
        )
        .await
        .map_err(kerr(format!("writing options secret {ns}/{name}")))?;
    }
    ctx.metrics.write();
    match existing {
        Some(e) => {
            let ops = json!([
                {"op": "add", "path": "/metadata/resourceVersion", "value": &*e.resource_version},
                {"op": "add", "path": "/metadata/labels", "value": want.metadata.labels},
                {"op": "add", "path": "/spec", "value": want.spec},
            ]);
            let patch: json_patch::Patch =
                serde_json::from_value(ops).map_err(|e| ReconcileError::Other(e.to_string()))?;
            patch_bd(&ctx, &ns, &name, patch)
                .await
                .map_err(kerr(format!("updating bundledeployment {ns}/{name}")))?;
        }
        None => match create_bd(&ctx, &ns, &want).await {
            Ok(_) => {}
            // Created meanwhile (cache behind): the watch event brings it and a new pass.
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(e) => return Err(kerr(format!("creating bundledeployment {ns}/{name}"))(e)),
        },
    }
    Ok(())
}

/// Creates a BD without decoding the answer (the BD cache is fed by the watch).
async fn create_bd(ctx: &Context, ns: &str, bd: &BundleDeployment) -> Result<String, kube::Error> {
    let body = serde_json::to_vec(bd).map_err(kube::Error::SerdeError)?;
    let req = bd_request(ns)
        .create(&PostParams::default(), body)
        .map_err(kube::Error::BuildRequest)?;
    ctx.client.request_text(req).await
}

/// Updates a BD with a JSON patch, without decoding the answer (as [`create_bd`]).
async fn patch_bd(
    ctx: &Context,
    ns: &str,
    name: &str,
    patch: json_patch::Patch,
) -> Result<String, kube::Error> {
    let req = bd_request(ns)
        .patch(name, &PatchParams::default(), &Patch::Json::<()>(patch))
        .map_err(kube::Error::BuildRequest)?;
    ctx.client.request_text(req).await
}

/// Requests on the BundleDeployments of namespace `ns`.
fn bd_request(ns: &str) -> kube::core::Request {
    kube::core::Request::new(<BundleDeployment as kube::Resource>::url_path(
        &(),
        Some(ns),
    ))
}

/// Deletes BDs (and their options Secrets).
async fn delete_bds(ctx: &Arc<Context>, keys: Vec<(String, String)>) -> Result<(), ReconcileError> {
    let dels = keys.into_iter().map(|(ns, name)| {
        let ctx = ctx.clone();
        async move {
            let api: Api<BundleDeployment> = Api::namespaced(ctx.client.clone(), &ns);
            let cached = ctx.stores.bds.get(&ns, &name);
            if cached.as_ref().is_some_and(|c| c.deleting) {
                return Ok(());
            }
            let _slot = ctx.write_slot().await;
            ctx.metrics.write();
            match api.delete(&name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(e)) if e.code == 404 => {}
                Err(e) => return Err(kerr(format!("deleting bundledeployment {ns}/{name}"))(e)),
            }
            if cached.is_some_and(|c| c.values_hash != 0) {
                let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &ns);
                ctx.metrics.write();
                let _ = secrets.delete(&name, &DeleteParams::default()).await;
            }
            Ok(())
        }
    });
    let results: Vec<Result<(), ReconcileError>> = futures::stream::iter(dels)
        .buffer_unordered(ctx.opts.write_concurrency.max(1))
        .collect()
        .await;
    results.into_iter().collect()
}

#[derive(serde::Serialize)]
struct Manifest<'a> {
    resources: &'a [fleet_api::BundleResource],
}

/// Creates the Content `mid` once (if this process has not seen it).
async fn ensure_content(ctx: &Context, b: &Bundle, mid: &str) -> Result<(), ReconcileError> {
    if ctx
        .contents
        .lock()
        .map(|s| s.contains(mid))
        .unwrap_or(false)
    {
        return Ok(());
    }
    let json = fleet_api::fleetyaml::go_json_ordered(&Manifest {
        resources: &b.spec.resources,
    })
    .map_err(|e| ReconcileError::Other(e.to_string()))?;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, json.as_bytes())
        .map_err(|e| ReconcileError::Other(e.to_string()))?;
    let bytes = gz
        .finish()
        .map_err(|e| ReconcileError::Other(e.to_string()))?;
    use base64::Engine;
    let obj = json!({
        "apiVersion": API_VERSION, "kind": "Content",
        "metadata": {"name": mid},
        "content": base64::engine::general_purpose::STANDARD.encode(bytes),
        "sha256sum": fleet_api::names::sha256_hex(json.as_bytes()),
    });
    let api: Api<kube::api::DynamicObject> = Api::all_with(ctx.client.clone(), &content_resource());
    let obj: kube::api::DynamicObject =
        serde_json::from_value(obj).map_err(|e| ReconcileError::Other(e.to_string()))?;
    ctx.metrics.write();
    match api.create(&PostParams::default(), &obj).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(e) => return Err(kerr(format!("creating content {mid}"))(e)),
    }
    if let Ok(mut s) = ctx.contents.lock() {
        s.insert(mid.to_string());
    }
    Ok(())
}

fn content_resource() -> kube::api::ApiResource {
    kube::api::ApiResource::erase::<fleet_api::Content>(&())
}

/// Deletes Contents no BundleDeployment and no Bundle references any more: shortly after BDs
/// changed, and every 30 s.
pub async fn content_gc(ctx: Arc<Context>) {
    let api: Api<kube::api::DynamicObject> = Api::all_with(ctx.client.clone(), &content_resource());
    // Learn the existing Contents once (names only matter).
    if let Ok(list) = api.list(&Default::default()).await
        && let Ok(mut s) = ctx.contents.lock()
    {
        s.extend(list.items.into_iter().filter_map(|o| o.metadata.name));
    }
    let mut tick = tokio::time::interval(Duration::from_secs(30));
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = ctx.content_changed.notified() => {
                // Let the watch caches catch up with the writes that woke us.
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
        }
        let mut used: HashSet<Arc<str>> = ctx.stores.bds.contents();
        for b in ctx.stores.bundles.state() {
            used.insert(fleet_targeting::manifest_id(&b).into());
        }
        let unused: Vec<String> = ctx
            .contents
            .lock()
            .map(|s| {
                s.iter()
                    .filter(|c| !used.contains(c.as_str()))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        for c in unused {
            ctx.metrics.write();
            match api.delete(&c, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(e)) if e.code == 404 => {}
                Err(e) => {
                    tracing::warn!("deleting content {c}: {e}");
                    continue;
                }
            }
            if let Ok(mut s) = ctx.contents.lock() {
                s.remove(&c);
            }
        }
    }
}
