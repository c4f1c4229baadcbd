//! Cluster and ClusterGroup reconcilers: the cluster namespace (upstream's name, labels and
//! annotations) and `status.namespace`, deletion of a Cluster's BDs and namespace, Cluster status
//! (summary over its BDs, `display.readyBundles`, state incl. `WaitCheckIn`) and ClusterGroup
//! status (counts, non-ready clusters, summed summary, display).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fleet_api::keys::*;
use fleet_api::{BundleSummary, Cluster, ClusterGroup};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use serde_json::json;

use crate::bundle::{ReconcileError, kerr};
use crate::context::{Context, QueueConfig, run_queue};
use crate::{conditions, secs};

/// Runs the Cluster controller.
pub async fn controller(ctx: Arc<Context>) {
    let parts = ctx.take_queue(|s| s.clusters.take(), |r| r.cluster.take());
    let cfg = QueueConfig {
        kind: "cluster",
        debounce: Duration::from_millis(100),
        trigger_debounce: Duration::ZERO,
        concurrency: 8,
        // Its own status writes do not queue a Cluster again: during a rollout each write
        // would recompute (and rewrite) the summary at once, bypassing the BundleDeployment
        // trigger window. The agent's first check-in does (the display state reads it).
        skip_status_only: Some(status_input),
    };
    run_queue(
        ctx.clone(),
        parts,
        ctx.stores.clusters.clone(),
        cfg,
        reconcile,
    )
    .await;
}

/// The least time between two status writes of one Cluster while its BundleDeployments change:
/// during a rollout a cluster's BDs arrive one bundle after another, and a write per trigger
/// window (1 s) was 12 writes per cluster for 50 bundles, as many as a quarter of the writes of
/// the BundleDeployments themselves.
const STATUS_SPACING: Duration = Duration::from_secs(5);

/// The fleet's Cluster status writes per second at most during a rollout: past 1,000 clusters
/// the spacing grows with the fleet (50 s at 10,000), so these summaries stay a bounded share of
/// the write path instead of 8 to 11 writes per cluster in a four-minute round at 10,000.
const FLEET_STATUS_WRITES_PER_SEC: u32 = 200;

/// [`STATUS_SPACING`], or longer for a fleet of more than 1,000 clusters (see
/// [`FLEET_STATUS_WRITES_PER_SEC`]). Public so that `fleet bench` waits out exactly this.
pub fn status_spacing(clusters: usize) -> Duration {
    let fleet = Duration::from_secs(1) * u32::try_from(clusters).unwrap_or(u32::MAX)
        / FLEET_STATUS_WRITES_PER_SEC;
    STATUS_SPACING.max(fleet)
}

/// How much longer the spacing is while the agent has yet to apply some of the cluster's BDs: a
/// rollout in progress moves the counts with every BD, and at 10,000 clusters a Cluster was
/// still written every 50 s of a five-minute round (0.74 writes per BD). Once every BD is
/// applied (Ready or not) the usual spacing holds, so the settled state shows soon.
pub const ROLLOUT_SPACING_FACTOR: u32 = 4;

/// The spacing of a Cluster's status writes, given the fleet's size and its new summary.
fn spacing_for(clusters: usize, summary: &BundleSummary) -> Duration {
    let base = status_spacing(clusters);
    if summary.wait_applied > 0 {
        base * ROLLOUT_SPACING_FACTOR
    } else {
        base
    }
}

/// Runs the ClusterGroup controller.
pub async fn group_controller(ctx: Arc<Context>) {
    let parts = ctx.take_queue(|s| s.groups.take(), |r| r.group.take());
    let cfg = QueueConfig {
        kind: "clustergroup",
        debounce: Duration::from_millis(200),
        trigger_debounce: Duration::ZERO,
        concurrency: 4,
        skip_status_only: Some(crate::context::no_status_input),
    };
    run_queue(
        ctx.clone(),
        parts,
        ctx.stores.groups.clone(),
        cfg,
        reconcile_group,
    )
    .await;
}

/// The status fields a Cluster reconcile reads as input rather than writes: whether its agent
/// has checked in, and the cluster namespace.
fn status_input(c: &Cluster) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    if let Some(st) = &c.status {
        st.agent.last_seen.is_some().hash(&mut h);
        st.namespace.hash(&mut h);
    }
    h.finish()
}

async fn reconcile(c: Arc<Cluster>, ctx: Arc<Context>) -> Result<Action, ReconcileError> {
    ctx.metrics
        .cluster_reconciles
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    if !crate::context::in_shard(&ctx.opts, &c.metadata) {
        return Ok(Action::await_change());
    }
    let ns = c.metadata.namespace.clone().unwrap_or_default();
    let name = c.metadata.name.clone().unwrap_or_default();
    let cns = fleet_api::names::cluster_namespace(&ns, &name);
    let api: Api<Cluster> = Api::namespaced(ctx.client.clone(), &ns);
    let nss: Api<Namespace> = Api::all(ctx.client.clone());
    let fins: Vec<String> = c.metadata.finalizers.clone().unwrap_or_default();
    let has_finalizer = fins.iter().any(|f| f == CLUSTER_FINALIZER);
    if c.metadata.deletion_timestamp.is_some() {
        if !has_finalizer {
            return Ok(Action::await_change());
        }
        let left = ctx.stores.bds.in_namespace(&cns);
        if !left.is_empty() {
            let bds: Api<fleet_api::BundleDeployment> = Api::namespaced(ctx.client.clone(), &cns);
            for (n, _) in left {
                ctx.metrics.write();
                match bds.delete(&n, &DeleteParams::default()).await {
                    Ok(_) => {}
                    Err(kube::Error::Api(e)) if e.code == 404 => {}
                    Err(e) => return Err(kerr(format!("deleting bundledeployment {cns}/{n}"))(e)),
                }
            }
            return Ok(Action::requeue(secs(2)));
        }
        ctx.metrics.write();
        match nss.delete(&cns, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(kerr(format!("deleting namespace {cns}"))(e)),
        }
        let keep: Vec<&String> = fins.iter().filter(|f| *f != CLUSTER_FINALIZER).collect();
        ctx.metrics.write();
        api.patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": keep, "resourceVersion": c.metadata.resource_version}})),
        )
        .await
        .map_err(kerr(format!("removing finalizer of cluster {ns}/{name}")))?;
        return Ok(Action::await_change());
    }
    if !has_finalizer {
        let mut f = fins.clone();
        f.push(CLUSTER_FINALIZER.into());
        ctx.metrics.write();
        api.patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": f, "resourceVersion": c.metadata.resource_version}})),
        )
        .await
        .map_err(kerr(format!("adding finalizer to cluster {ns}/{name}")))?;
        return Ok(Action::await_change());
    }

    // While a status write would wait for the spacing anyway, the summary is computed only
    // once the wait is over. Why: every BD status change queues its Cluster, and at 10,000
    // clusters most of those passes computed a summary only to put its write off.
    let clusters = ctx.fleet.read().map_or(0, |f| f.cluster_count());
    if c.status.as_ref().is_some_and(|s| s.namespace == cns)
        && let Some(wait) =
            ctx.cluster_status_written
                .wait((&ns, &name), status_spacing(clusters), Instant::now())
    {
        return Ok(Action::requeue(wait));
    }
    let mut status = c.status.clone().unwrap_or_default();
    if status.namespace != cns {
        let n: Namespace = serde_json::from_value(json!({"metadata": {
            "name": cns,
            "labels": {MANAGED_LABEL: "true"},
            "annotations": {CLUSTER_NAMESPACE_ANNOTATION: ns, CLUSTER_ANNOTATION: name},
        }}))
        .map_err(|e| ReconcileError::Other(e.to_string()))?;
        ctx.metrics.write();
        crate::bootstrap::create_absent(&nss, &n)
            .await
            .map_err(kerr(format!("creating namespace {cns}")))?;
        status.namespace = cns.clone();
    }

    // Summary over the BDs in the cluster namespace.
    let mut summary = BundleSummary::default();
    let mut counts = fleet_api::ResourceCounts::default();
    let mut repos: BTreeMap<(String, String), bool> = BTreeMap::new();
    let no_counts = fleet_api::ResourceCounts::default();
    for (bdname, bd) in ctx.stores.bds.in_namespace(&cns) {
        let f = bd.facts();
        let state = fleet_targeting::status::state_of(&f);
        let bns = bd.owner.bundle_namespace.as_deref().unwrap_or_default();
        summary.desired_ready += 1;
        // A name and a message only for the entries the summary lists.
        let (name, message) = if fleet_targeting::status::lists(&summary, state) {
            (
                format!("{bns}/{bdname}"),
                fleet_targeting::status::message_of(&f),
            )
        } else {
            (String::new(), String::new())
        };
        fleet_targeting::status::increment(
            &mut summary,
            &name,
            state,
            &message,
            f.status.map_or(&[], |s| &s.modified_status),
            f.status.map_or(&[], |s| &s.non_ready_status),
        );
        let rc = f.status.map_or(&no_counts, |s| &s.resource_counts);
        counts.ready += rc.ready;
        counts.desired_ready += rc.desired_ready;
        counts.wait_applied += rc.wait_applied;
        counts.modified += rc.modified;
        counts.orphaned += rc.orphaned;
        counts.missing += rc.missing;
        counts.unknown += rc.unknown;
        counts.not_ready += rc.not_ready;
        if let Some(repo) = &bd.owner.repo {
            // Upstream quirk: a GitRepo counts as ready if any of its BDs here is Ready.
            let e = repos
                .entry((bns.to_string(), repo.to_string()))
                .or_insert(false);
            *e = *e || state == fleet_api::state::BundleState::Ready;
        }
    }
    let seen = status.agent.last_seen.is_some();
    status.display.ready_bundles = fleet_targeting::status::ready_ratio(&summary);
    status.display.state = fleet_targeting::status::cluster_display_state(&summary, seen);
    status.desired_ready_git_repos = repos.len() as i64;
    status.ready_git_repos = repos.values().filter(|r| **r).count() as i64;
    status.resource_counts = counts;
    let msg = fleet_targeting::status::ready_message(&summary, "Bundle");
    conditions::set(&mut status.conditions, "Ready", msg.is_empty(), "", &msg);
    status.summary = summary;
    if c.status.as_ref() != Some(&status) {
        // A new namespace is written at once (bundles target the cluster through it); summary
        // changes at most once per `spacing_for`, the last one after it.
        let new_namespace = c.status.as_ref().map(|s| &s.namespace) != Some(&status.namespace);
        let spacing = spacing_for(clusters, &status.summary);
        if !new_namespace
            && let Some(wait) =
                ctx.cluster_status_written
                    .book((&ns, &name), spacing, Instant::now())
        {
            return Ok(Action::requeue(wait));
        }
        let mut obj = (*c).clone();
        obj.status = Some(status);
        ctx.metrics.write();
        api.replace_status(&name, &PostParams::default(), &obj)
            .await
            .map_err(kerr(format!("updating status of cluster {ns}/{name}")))?;
    }
    Ok(Action::await_change())
}

async fn reconcile_group(
    g: Arc<ClusterGroup>,
    ctx: Arc<Context>,
) -> Result<Action, ReconcileError> {
    ctx.metrics
        .clustergroup_reconciles
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    if !crate::context::in_shard(&ctx.opts, &g.metadata) {
        return Ok(Action::await_change());
    }
    let ns = g.metadata.namespace.clone().unwrap_or_default();
    let name = g.metadata.name.clone().unwrap_or_default();
    let sel = g
        .spec
        .selector
        .as_ref()
        .and_then(|s| fleet_targeting::selector::Selector::compile(s).ok());
    let empty = BTreeMap::new();
    let mut members: Vec<Arc<Cluster>> = ctx
        .stores
        .clusters
        .state()
        .into_iter()
        .filter(|c| c.metadata.namespace.as_deref() == Some(ns.as_str()))
        .filter(|c| {
            sel.as_ref()
                .is_some_and(|s| s.matches(c.metadata.labels.as_ref().unwrap_or(&empty)))
        })
        .collect();
    members.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let mut status = g.status.clone().unwrap_or_default();
    let mut summary = BundleSummary::default();
    let mut counts = fleet_api::ResourceCounts::default();
    let mut non_ready = Vec::new();
    for c in &members {
        let cs = c.status.clone().unwrap_or_default();
        fleet_targeting::status::add(&mut summary, &cs.summary);
        let rc = &cs.resource_counts;
        counts.ready += rc.ready;
        counts.desired_ready += rc.desired_ready;
        counts.wait_applied += rc.wait_applied;
        counts.modified += rc.modified;
        counts.orphaned += rc.orphaned;
        counts.missing += rc.missing;
        counts.unknown += rc.unknown;
        counts.not_ready += rc.not_ready;
        if cs.summary.ready != cs.summary.desired_ready {
            non_ready.push(c.metadata.name.clone().unwrap_or_default());
        }
    }
    summary.non_ready_resources.truncate(10);
    status.cluster_count = members.len() as i64;
    status.non_ready_cluster_count = non_ready.len() as i64;
    non_ready.truncate(10);
    status.display.ready_clusters = fleet_targeting::status::cluster_group_ready(
        members.len() - status.non_ready_cluster_count as usize,
        members.len(),
        &non_ready,
    );
    status.non_ready_clusters = non_ready;
    status.display.ready_bundles = fleet_targeting::status::ready_ratio(&summary);
    status.display.state = fleet_targeting::status::summary_state(&summary)
        .map(|s| s.as_str().to_string())
        .unwrap_or_default();
    status.resource_counts = counts;
    let msg = fleet_targeting::status::ready_message(&summary, "Bundle");
    conditions::set(&mut status.conditions, "Ready", msg.is_empty(), "", &msg);
    status.summary = summary;
    if g.status.as_ref() != Some(&status) {
        let api: Api<ClusterGroup> = Api::namespaced(ctx.client.clone(), &ns);
        let mut obj = (*g).clone();
        obj.status = Some(status);
        ctx.metrics.write();
        api.replace_status(&name, &PostParams::default(), &obj)
            .await
            .map_err(kerr(format!("updating status of clustergroup {ns}/{name}")))?;
    }
    Ok(Action::await_change())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_spacing_grows_with_the_fleet_past_a_thousand_clusters() {
        assert_eq!(status_spacing(0), STATUS_SPACING);
        assert_eq!(status_spacing(1_000), STATUS_SPACING);
        assert_eq!(status_spacing(2_000), Duration::from_secs(10));
        assert_eq!(status_spacing(10_000), Duration::from_secs(50));
        assert!(
            status_spacing(usize::MAX) > status_spacing(10_000),
            "no overflow"
        );
    }

    #[test]
    fn spacing_is_longer_while_bundledeployments_wait_to_be_applied() {
        let mut s = BundleSummary {
            desired_ready: 10,
            ready: 7,
            not_ready: 3,
            ..Default::default()
        };
        assert_eq!(spacing_for(51, &s), STATUS_SPACING);
        assert_eq!(spacing_for(10_000, &s), Duration::from_secs(50));
        s.not_ready = 1;
        s.wait_applied = 2;
        assert_eq!(spacing_for(51, &s), Duration::from_secs(20));
        assert_eq!(spacing_for(10_000, &s), Duration::from_secs(200));
    }
}
