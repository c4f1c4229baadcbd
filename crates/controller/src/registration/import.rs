//! Manager-initiated registration (upstream's `agentmanagement/controllers/cluster/import.go`): a
//! Cluster with `spec.kubeConfigSecret` is imported by writing, into that cluster, the agent's
//! namespace, its `fleet-agent-bootstrap` Secret (an `import-token-<cluster>` token's values) and
//! its `fleet-agent` ConfigMap (the Cluster's clientID and labels). An agent already waiting there
//! then registers as in agent-initiated registration. This is the one place the manager dials a
//! downstream cluster. Re-imported when `spec.redeployAgentGeneration` changes.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use fleet_api::keys::CLUSTER_MANAGEMENT_LABEL;
use fleet_api::{Cluster, ClusterRegistrationToken, ClusterRegistrationTokenSpec};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{ObjectMeta, Patch};
use kube::runtime::controller::Action;
use kube::runtime::{Controller, WatchStreamExt, reflector, watcher};
use kube::{Api, Resource, ResourceExt};

use super::names::SECRET_TYPE_REGISTRATION_VALUES;
use super::request::cluster_labels;
use super::values::RegistrationValues;
use super::write::{ensure, patch_params};
use super::{Ctx, Error, RETRY};

/// The agent's namespace downstream unless the Cluster names one.
const DEFAULT_AGENT_NAMESPACE: &str = "cattle-fleet-system";

pub(super) async fn run(ctx: Arc<Ctx>) {
    let clusters: Api<Cluster> = Api::all(ctx.client.clone());
    // Only Clusters the manager imports are cached, as reconcile reads them: without
    // managedFields and with only the status field it reads. Whole Clusters (their managedFields
    // and BundleDeployment summaries) were 8–14 MiB per 1,000 clusters of a controller's memory,
    // and even an identity-only copy of each agent-registered Cluster about 2 KB per cluster.
    let (reader, writer) = reflector::store();
    let stream = watcher(clusters, watcher::Config::default())
        .default_backoff()
        .map_ok(only_imported)
        .reflect(writer)
        .applied_objects();
    Controller::for_stream(stream, reader)
        .run(
            reconcile,
            |_, e, _| {
                tracing::warn!(error = %e, "cluster import");
                Action::requeue(RETRY)
            },
            ctx,
        )
        .for_each(|r| async move {
            if let Err(e) = r {
                tracing::debug!(error = %e, "cluster import controller");
            }
        })
        .await;
}

/// Whether the manager imports `c` (it names a kubeconfig Secret).
fn is_imported(c: &Cluster) -> bool {
    !c.spec.kube_config_secret.is_empty()
}

/// A watch event as the import cache takes it: an imported Cluster without managedFields and
/// with only the status field reconcile reads; any other Cluster as a deletion, so it leaves
/// the cache if it was there (its `kubeConfigSecret` was cleared) and never enters it.
fn only_imported(ev: watcher::Event<Cluster>) -> watcher::Event<Cluster> {
    use watcher::Event;
    let slim = |mut c: Cluster| {
        c.metadata.managed_fields = None;
        if let Some(s) = c.status.as_mut() {
            *s = fleet_api::ClusterStatus {
                agent_deployed_generation: s.agent_deployed_generation,
                ..Default::default()
            };
        }
        c
    };
    match ev {
        Event::Apply(c) | Event::InitApply(c) if !is_imported(&c) => Event::Delete(c),
        Event::Apply(c) => Event::Apply(slim(c)),
        Event::InitApply(c) => Event::InitApply(slim(c)),
        other => other,
    }
}

fn bytes(s: &str) -> ByteString {
    ByteString(s.as_bytes().to_vec())
}

fn secret_str(s: &Secret, key: &str) -> Option<String> {
    s.data
        .as_ref()
        .and_then(|d| d.get(key))
        .map(|b| String::from_utf8_lossy(&b.0).into_owned())
        .filter(|v| !v.is_empty())
}

async fn reconcile(c: Arc<Cluster>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    if c.spec.kube_config_secret.is_empty()
        || c.meta().deletion_timestamp.is_some()
        || c.labels().contains_key(CLUSTER_MANAGEMENT_LABEL)
    {
        return Ok(Action::await_change());
    }
    let generation = c.spec.redeploy_agent_generation;
    if c.status.as_ref().and_then(|s| s.agent_deployed_generation) == Some(generation) {
        return Ok(Action::await_change());
    }
    let ns = c.namespace().unwrap_or_default();
    let name = c.name_any();
    let clusters: Api<Cluster> = Api::namespaced(ctx.client.clone(), &ns);
    if c.spec.client_id.is_empty() {
        let id = uuid::Uuid::new_v4().simple().to_string();
        let patch = serde_json::json!({"spec": {"clientID": id}});
        clusters
            .patch(&name, &patch_params(), &Patch::Merge(&patch))
            .await?;
        return Ok(Action::await_change());
    }

    // The downstream cluster's kubeconfig.
    let secret_ns = if c.spec.kube_config_secret_namespace.is_empty() {
        ns.clone()
    } else {
        c.spec.kube_config_secret_namespace.clone()
    };
    let kc_secret = Api::<Secret>::namespaced(ctx.client.clone(), &secret_ns)
        .get(&c.spec.kube_config_secret)
        .await?;
    let where_ = format!("Secret {secret_ns}/{}", c.spec.kube_config_secret);
    let kubeconfig = secret_str(&kc_secret, "value").ok_or_else(|| {
        Error::Invalid(format!("{where_}: key \"value\" (kubeconfig) is missing"))
    })?;
    let cfg = fleet_kube::config_from_kubeconfig_yaml(&kubeconfig)
        .await
        .map_err(|e| Error::Invalid(format!("{where_}: {e}")))?;
    let mut cfg = cfg;
    cfg.read_timeout = Some(Duration::from_secs(15));
    let downstream = fleet_kube::client_from_config(cfg)
        .map_err(|e| Error::Invalid(format!("{where_}: {e}")))?;

    // The import token and its values.
    let token_name = format!("import-token-{name}");
    let mut token = ClusterRegistrationToken::new(
        &token_name,
        ClusterRegistrationTokenSpec {
            ttl: Some("12h".into()),
        },
    );
    token.metadata.namespace = Some(ns.clone());
    token.metadata.owner_references = c.controller_owner_ref(&()).map(|o| vec![o]);
    ensure(&Api::namespaced(ctx.client.clone(), &ns), &token).await?;
    let values_secret = Api::<Secret>::namespaced(ctx.client.clone(), &ns)
        .get_opt(&token_name)
        .await?
        .filter(|s| s.type_.as_deref() == Some(SECRET_TYPE_REGISTRATION_VALUES));
    let Some(values) = values_secret.as_ref().and_then(|s| secret_str(s, "values")) else {
        // The token controller is writing it.
        return Ok(Action::requeue(Duration::from_millis(500)));
    };
    let values =
        RegistrationValues::from_yaml(&values).map_err(|e| Error::Invalid(e.to_string()))?;
    let url = secret_str(&kc_secret, "apiServerURL").unwrap_or(values.api_server_url.clone());
    let ca = secret_str(&kc_secret, "apiServerCA").unwrap_or(values.api_server_ca.clone());
    if url.is_empty() {
        tracing::warn!(cluster = %name, namespace = %ns, "no API server URL for the agent (set apiServerURL in the kubeconfig Secret or the controller's options); not importing");
        return Ok(Action::await_change());
    }

    // Write the agent's bootstrap into the downstream cluster.
    let agent_ns = if c.spec.agent_namespace.is_empty() {
        DEFAULT_AGENT_NAMESPACE.to_string()
    } else {
        c.spec.agent_namespace.clone()
    };
    ensure(
        &Api::<Namespace>::all(downstream.clone()),
        &Namespace {
            metadata: ObjectMeta {
                name: Some(agent_ns.clone()),
                ..Default::default()
            },
            ..Default::default()
        },
    )
    .await?;
    let mut labels = cluster_labels(&c.labels().clone(), &name);
    labels.remove(fleet_api::keys::CLUSTER_LABEL);
    let config = serde_json::json!({"clientID": c.spec.client_id, "labels": labels});
    ensure(
        &Api::<ConfigMap>::namespaced(downstream.clone(), &agent_ns),
        &ConfigMap {
            metadata: ObjectMeta {
                name: Some("fleet-agent".into()),
                namespace: Some(agent_ns.clone()),
                ..Default::default()
            },
            data: Some(BTreeMap::from([("config".to_string(), config.to_string())])),
            ..Default::default()
        },
    )
    .await?;
    ensure(
        &Api::<Secret>::namespaced(downstream.clone(), &agent_ns),
        &Secret {
            metadata: ObjectMeta {
                name: Some("fleet-agent-bootstrap".into()),
                namespace: Some(agent_ns.clone()),
                ..Default::default()
            },
            data: Some(BTreeMap::from([
                ("apiServerURL".to_string(), bytes(&url)),
                ("apiServerCA".to_string(), bytes(&ca)),
                (
                    "clusterNamespace".to_string(),
                    bytes(&values.cluster_namespace),
                ),
                (
                    "systemRegistrationNamespace".to_string(),
                    bytes(&values.system_registration_namespace),
                ),
                ("token".to_string(), bytes(&values.token)),
                ("tokenName".to_string(), bytes(&values.token_name)),
            ])),
            ..Default::default()
        },
    )
    .await?;

    let patch = serde_json::json!({"status": {
        "agentDeployedGeneration": generation,
        "agentMigrated": true,
        "agentNamespaceMigrated": true,
        "cattleNamespaceMigrated": true,
        "agentConfigChanged": false,
        "apiServerURL": url,
    }});
    clusters
        .patch_status(&name, &patch_params(), &Patch::Merge(&patch))
        .await?;
    tracing::info!(cluster = %name, namespace = %ns, "imported: bootstrap written to the cluster");
    Ok(Action::await_change())
}

#[cfg(test)]
mod tests {
    use super::*;
    use watcher::Event;

    fn cluster(name: &str, kubeconfig: &str) -> Cluster {
        let mut c = Cluster::new(name, Default::default());
        c.metadata.namespace = Some("fleet-default".into());
        c.spec.kube_config_secret = kubeconfig.into();
        c.status = Some(fleet_api::ClusterStatus {
            agent_deployed_generation: Some(3),
            namespace: "cluster-fleet-default-x".into(),
            ..Default::default()
        });
        c
    }

    #[test]
    fn only_imported_clusters_enter_the_cache() {
        // An agent-registered Cluster is a deletion, whether listed or changed.
        for ev in [
            Event::Apply(cluster("agent", "")),
            Event::InitApply(cluster("agent", "")),
        ] {
            assert!(
                matches!(only_imported(ev), Event::Delete(c) if c.name_any() == "agent"),
                "a Cluster without kubeConfigSecret must leave the cache"
            );
        }
        // An imported one stays, with only the status field reconcile reads.
        let Event::Apply(c) = only_imported(Event::Apply(cluster("imported", "kc"))) else {
            panic!("an imported Cluster must stay an Apply");
        };
        let status = c.status.unwrap_or_default();
        assert_eq!(status.agent_deployed_generation, Some(3));
        assert!(status.namespace.is_empty());
        assert!(matches!(
            only_imported(Event::InitApply(cluster("imported", "kc"))),
            Event::InitApply(_)
        ));
        assert!(matches!(only_imported(Event::InitDone), Event::InitDone));
    }
}
