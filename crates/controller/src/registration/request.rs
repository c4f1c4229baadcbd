//! ClusterRegistration → Cluster (found by clientID or created), the agent's ServiceAccount in the
//! cluster namespace, its least-privilege grant, and the `c-…` credential Secret the agent fetches
//! with its bootstrap token. Older registrations of the same client are removed and revoked.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use fleet_api::keys::{
    CLUSTER_ANNOTATION, CLUSTER_LABEL, CLUSTER_MANAGEMENT_LABEL, CLUSTER_NAMESPACE_ANNOTATION,
    CLUSTER_REGISTRATION_ANNOTATION, CLUSTER_REGISTRATION_NAMESPACE_ANNOTATION, FLEET_LABEL_PREFIX,
    MANAGED_LABEL, MANAGEMENT_LABEL_PREFIX, REGISTRATION_TOKEN_LABEL,
};
use fleet_api::names::cluster_namespace;
use fleet_api::{Cluster, ClusterRegistration, ClusterRegistrationToken, ClusterSpec};
use futures::StreamExt;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Namespace, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, Role, RoleBinding};
use kube::api::{ListParams, ObjectMeta, Patch, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Api, Resource, ResourceExt};

use super::names::{
    CREATED_BY_AGENT_POD_LABEL, SECRET_TYPE_AGENT_CREDENTIAL, cluster_name_for_client,
    credential_secret_name, request_service_account, token_secret_name, token_service_account,
};
use super::rbac::Grant;
use super::write::{delete_if_present, ensure, patch_params};
use super::{Ctx, Error, RETRY};

const SA_NAME_ANNOTATION: &str = "kubernetes.io/service-account.name";
const TOKEN_SECRET_TYPE: &str = "kubernetes.io/service-account-token";

pub(super) async fn run(ctx: Arc<Ctx>) {
    ctx.clusters.ready().await;
    let requests: Api<ClusterRegistration> = Api::all(ctx.client.clone());
    let secrets: Api<Secret> = Api::all(ctx.client.clone());
    // A granted registration is only read to find a client's older ones (its client ID and
    // random, uid, age) and to delete its credential.
    let controller = super::slim_controller(requests, watcher::Config::default(), |r| {
        crate::context::strip_cached(r);
        if r.status.as_ref().is_some_and(|s| s.granted) {
            super::keep_identity(&mut r.metadata);
            r.spec.cluster_labels = BTreeMap::new();
        }
    });
    let _ = ctx.requests.set(controller.store());
    controller
        // The agent ServiceAccount's token Secret wakes its registration once it is filled in.
        .watches(
            secrets,
            watcher::Config::default().labels(&format!("{MANAGED_LABEL}=true")),
            |s: Secret| {
                let a = s.annotations();
                match (
                    a.get(CLUSTER_REGISTRATION_ANNOTATION),
                    a.get(CLUSTER_REGISTRATION_NAMESPACE_ANNOTATION),
                ) {
                    (Some(n), Some(ns)) => Some(ObjectRef::new(n).within(ns)),
                    _ => None,
                }
            },
        )
        .run(reconcile, error_policy, ctx)
        .for_each(|r| async move {
            if let Err(e) = r {
                tracing::debug!(error = %e, "cluster registration controller");
            }
        })
        .await;
}

fn error_policy(r: Arc<ClusterRegistration>, e: &Error, _: Arc<Ctx>) -> Action {
    tracing::warn!(registration = %r.name_any(), namespace = ?r.namespace(), error = %e, "cluster registration");
    Action::requeue(RETRY)
}

/// The labels a registered Cluster gets: the agent's labels without `management.cattle.io/*` and
/// `fleet.cattle.io/*` (except `created-by-agent-pod`), plus `fleet.cattle.io/cluster=<name>`.
pub fn cluster_labels(
    requested: &BTreeMap<String, String>,
    cluster: &str,
) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> = requested
        .iter()
        .filter(|(k, _)| {
            k.as_str() == CREATED_BY_AGENT_POD_LABEL
                || !(k.starts_with(MANAGEMENT_LABEL_PREFIX) || k.starts_with(FLEET_LABEL_PREFIX))
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    out.insert(CLUSTER_LABEL.to_string(), cluster.to_string());
    out
}

fn refuse(r: &ClusterRegistration, why: String) -> Result<Action, Error> {
    tracing::warn!(
        registration = %r.name_any(),
        namespace = ?r.namespace(),
        client_id = %r.spec.client_id,
        "registration refused: {why}"
    );
    Ok(Action::await_change())
}

async fn reconcile(r: Arc<ClusterRegistration>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let status = r.status.clone().unwrap_or_default();
    if status.granted
        || r.meta().deletion_timestamp.is_some()
        || r.labels().contains_key(CLUSTER_MANAGEMENT_LABEL)
    {
        return Ok(Action::await_change());
    }
    let ws = r.namespace().unwrap_or_default();
    let name = r.name_any();
    let uid = r.uid().unwrap_or_default();
    if r.spec.client_id.is_empty() || r.spec.client_random.is_empty() {
        return refuse(
            &r,
            "spec.clientID and spec.clientRandom are required".into(),
        );
    }

    // The token the request came with must still be valid: an expired or deleted token grants
    // nothing, even if its ServiceAccount managed to create this request before it was revoked.
    let token_name = r
        .labels()
        .get(REGISTRATION_TOKEN_LABEL)
        .cloned()
        .unwrap_or_default();
    if token_name.is_empty() {
        return refuse(&r, format!("no {REGISTRATION_TOKEN_LABEL} label"));
    }
    let tokens: Api<ClusterRegistrationToken> = Api::namespaced(ctx.client.clone(), &ws);
    let Some(token) = tokens.get_opt(&token_name).await? else {
        return refuse(
            &r,
            format!("registration token {ws}/{token_name} does not exist (expired or deleted)"),
        );
    };
    if token.meta().deletion_timestamp.is_some()
        || super::token::expiry(&token)?.is_some_and(|e| e <= super::now())
    {
        return refuse(
            &r,
            format!("registration token {ws}/{token_name} has expired"),
        );
    }
    let token_sa = token_service_account(&token_name, &token.uid().unwrap_or_default());

    let cluster = find_or_create_cluster(&ctx, &r, &ws).await?;
    let cluster_name = cluster.name_any();
    let cluster_ns = match cluster.status.as_ref().map(|s| s.namespace.clone()) {
        Some(ns) if !ns.is_empty() => ns,
        _ => {
            let ns = cluster_namespace(&ws, &cluster_name);
            ensure_cluster_namespace(&ctx, &ns, &ws, &cluster_name).await?;
            ns
        }
    };

    // The Cluster owns its registrations (deleting a Cluster removes them).
    if let Some(owner) = cluster.controller_owner_ref(&()) {
        let owned = r.owner_references().iter().any(|o| o.uid == owner.uid);
        if !owned {
            let patch = serde_json::json!({"metadata": {"ownerReferences": [owner]}});
            Api::<ClusterRegistration>::namespaced(ctx.client.clone(), &ws)
                .patch(&name, &patch_params(), &Patch::Merge(&patch))
                .await?;
        }
    }

    // The agent's ServiceAccount and its token.
    let sa_name = request_service_account(&name, &uid);
    let annotations = BTreeMap::from([
        (CLUSTER_ANNOTATION.to_string(), cluster_name.clone()),
        (CLUSTER_REGISTRATION_ANNOTATION.to_string(), name.clone()),
        (
            CLUSTER_REGISTRATION_NAMESPACE_ANNOTATION.to_string(),
            ws.clone(),
        ),
    ]);
    let managed = BTreeMap::from([(MANAGED_LABEL.to_string(), "true".to_string())]);
    ensure(
        &Api::<ServiceAccount>::namespaced(ctx.client.clone(), &cluster_ns),
        &ServiceAccount {
            metadata: ObjectMeta {
                name: Some(sa_name.clone()),
                namespace: Some(cluster_ns.clone()),
                labels: Some(managed.clone()),
                annotations: Some(annotations.clone()),
                ..Default::default()
            },
            ..Default::default()
        },
    )
    .await?;
    let mut token_annotations = annotations.clone();
    token_annotations.insert(SA_NAME_ANNOTATION.to_string(), sa_name.clone());
    let token_secret = ensure(
        &Api::<Secret>::namespaced(ctx.client.clone(), &cluster_ns),
        &Secret {
            metadata: ObjectMeta {
                name: Some(token_secret_name(&sa_name)),
                namespace: Some(cluster_ns.clone()),
                labels: Some(managed.clone()),
                annotations: Some(token_annotations),
                ..Default::default()
            },
            type_: Some(TOKEN_SECRET_TYPE.into()),
            ..Default::default()
        },
    )
    .await?;
    let Some(agent_token) = token_secret
        .data
        .as_ref()
        .and_then(|d| d.get("token"))
        .filter(|t| !t.0.is_empty())
        .cloned()
    else {
        // Filled in by the token controller; that write wakes this registration.
        return Ok(Action::requeue(Duration::from_secs(5)));
    };

    remove_older_registrations(&ctx, &r, &ws, &cluster_ns).await?;

    // The grant: RBAC first, the credential last, so that an agent that sees its credential can
    // use it at once.
    let credential = credential_secret_name(&r.spec.client_id, &r.spec.client_random);
    let sysreg = ctx.opts.system_registration_namespace.clone();
    let grant = Grant {
        request: name.clone(),
        workspace: ws.clone(),
        cluster: cluster_name.clone(),
        cluster_namespace: cluster_ns.clone(),
        service_account: sa_name.clone(),
        system_registration_namespace: sysreg.clone(),
        credential_secret: credential.clone(),
        token_service_account: token_sa,
    };
    let rbac = grant.rbac();
    let owner = r.controller_owner_ref(&()).map(|o| vec![o]);
    let mut status_role = rbac.cluster_status_role;
    status_role.metadata.owner_references = owner.clone();
    let mut status_binding = rbac.cluster_status_binding;
    status_binding.metadata.owner_references = owner;
    let c = &ctx.client;
    ensure(&Api::<Role>::namespaced(c.clone(), &ws), &status_role).await?;
    ensure(
        &Api::<RoleBinding>::namespaced(c.clone(), &ws),
        &status_binding,
    )
    .await?;
    ensure(
        &Api::<RoleBinding>::namespaced(c.clone(), &cluster_ns),
        &with_annotations(rbac.bundle_deployment_binding, &annotations),
    )
    .await?;
    ensure(
        &Api::<ClusterRoleBinding>::all(c.clone()),
        &with_annotations(rbac.content_binding, &annotations),
    )
    .await?;
    ensure(
        &Api::<Role>::namespaced(c.clone(), &sysreg),
        &with_annotations(rbac.creds_role, &annotations),
    )
    .await?;
    ensure(
        &Api::<RoleBinding>::namespaced(c.clone(), &sysreg),
        &with_annotations(rbac.creds_binding, &annotations),
    )
    .await?;

    let data = BTreeMap::from([
        ("token".to_string(), agent_token),
        ("deploymentNamespace".to_string(), bytes(&cluster_ns)),
        ("clusterNamespace".to_string(), bytes(&ws)),
        ("clusterName".to_string(), bytes(&cluster_name)),
        (
            "systemNamespace".to_string(),
            bytes(&ctx.opts.system_namespace),
        ),
    ]);
    let mut labels = managed.clone();
    labels.insert(CLUSTER_LABEL.to_string(), cluster_name.clone());
    ensure(
        &Api::<Secret>::namespaced(c.clone(), &sysreg),
        &Secret {
            metadata: ObjectMeta {
                name: Some(credential),
                namespace: Some(sysreg.clone()),
                labels: Some(labels),
                annotations: Some(annotations),
                ..Default::default()
            },
            type_: Some(SECRET_TYPE_AGENT_CREDENTIAL.into()),
            data: Some(data),
            ..Default::default()
        },
    )
    .await?;

    let patch = serde_json::json!({"status": {"granted": true, "clusterName": cluster_name}});
    Api::<ClusterRegistration>::namespaced(c.clone(), &ws)
        .patch_status(&name, &patch_params(), &Patch::Merge(&patch))
        .await?;
    tracing::info!(registration = %name, namespace = %ws, cluster = %cluster_name, "registration granted");
    Ok(Action::await_change())
}

fn bytes(s: &str) -> ByteString {
    ByteString(s.as_bytes().to_vec())
}

fn with_annotations<K: Resource>(mut o: K, a: &BTreeMap<String, String>) -> K {
    o.meta_mut().annotations = Some(a.clone());
    o
}

/// The Cluster of this client: the deterministic `cluster-<hash>` name, else one the index knows
/// (e.g. a Cluster created by hand or by manager-initiated registration), else a new one.
async fn find_or_create_cluster(
    ctx: &Ctx,
    r: &ClusterRegistration,
    ws: &str,
) -> Result<Cluster, Error> {
    let api: Api<Cluster> = Api::namespaced(ctx.client.clone(), ws);
    let client_id = &r.spec.client_id;
    let name = cluster_name_for_client(client_id);
    let check = |c: Cluster| -> Result<Cluster, Error> {
        if c.spec.client_id != *client_id {
            return Err(Error::Invalid(format!(
                "Cluster {ws}/{} has clientID {:?}, not {client_id:?} (hash collision)",
                c.name_any(),
                c.spec.client_id
            )));
        }
        Ok(c)
    };
    if let Some(c) = api.get_opt(&name).await? {
        return check(c);
    }
    if let Some(other) = ctx.clusters.find(ws, client_id)
        && let Some(c) = api.get_opt(&other).await?
        && c.spec.client_id == *client_id
    {
        return Ok(c);
    }
    let mut cluster = Cluster::new(
        &name,
        ClusterSpec {
            client_id: client_id.clone(),
            ..Default::default()
        },
    );
    cluster.metadata.namespace = Some(ws.to_string());
    cluster.metadata.labels = Some(cluster_labels(&r.spec.cluster_labels, &name));
    match api.create(&PostParams::default(), &cluster).await {
        Ok(c) => {
            tracing::info!(cluster = %name, namespace = %ws, "created cluster for registration");
            Ok(c)
        }
        Err(kube::Error::Api(e)) if e.code == 409 => check(api.get(&name).await?),
        Err(e) => Err(e.into()),
    }
}

/// The cluster namespace, as the cluster reconciler creates it (idempotent; it may win the race).
async fn ensure_cluster_namespace(
    ctx: &Ctx,
    ns: &str,
    ws: &str,
    cluster: &str,
) -> Result<(), Error> {
    let api: Api<Namespace> = Api::all(ctx.client.clone());
    if api.get_opt(ns).await?.is_some() {
        return Ok(());
    }
    let n = Namespace {
        metadata: ObjectMeta {
            name: Some(ns.to_string()),
            labels: Some(BTreeMap::from([(
                MANAGED_LABEL.to_string(),
                "true".to_string(),
            )])),
            annotations: Some(BTreeMap::from([
                (CLUSTER_NAMESPACE_ANNOTATION.to_string(), ws.to_string()),
                (CLUSTER_ANNOTATION.to_string(), cluster.to_string()),
            ])),
            ..Default::default()
        },
        ..Default::default()
    };
    match api.create(&PostParams::default(), &n).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Deletes the client's older registrations (same clientID, different clientRandom, created
/// earlier) and revokes what they were granted, so an old credential stops working.
async fn remove_older_registrations(
    ctx: &Ctx,
    r: &ClusterRegistration,
    ws: &str,
    cluster_ns: &str,
) -> Result<(), Error> {
    let api: Api<ClusterRegistration> = Api::namespaced(ctx.client.clone(), ws);
    // Ties on the (second-resolution) timestamp are broken by name, so two requests never
    // remove each other.
    let age = |x: &ClusterRegistration| (x.meta().creation_timestamp.clone(), x.name_any());
    let mine = age(r);
    let is_older = |old: &ClusterRegistration| {
        old.spec.client_id == r.spec.client_id
            && old.spec.client_random != r.spec.client_random
            && old.uid() != r.uid()
            && old.namespace().as_deref() == Some(ws)
            && age(old) < mine
    };
    let older: Vec<ClusterRegistration> = match ctx.requests.get() {
        // The controller's own cache: no list per registration, and only the client's own
        // requests are copied (copying every one made registering N clusters cost O(N²)).
        Some(store) => store
            .state()
            .iter()
            .filter(|o| is_older(o))
            .map(|o| (**o).clone())
            .collect(),
        None => api
            .list(&ListParams::default())
            .await?
            .items
            .into_iter()
            .filter(is_older)
            .collect(),
    };
    for old in older {
        tracing::info!(old = %old.name_any(), new = %r.name_any(), namespace = %ws, "replacing older registration");
        super::cleanup::revoke(
            ctx,
            &old.name_any(),
            &old.uid().unwrap_or_default(),
            ws,
            cluster_ns,
        )
        .await?;
        super::cleanup::delete_credential(ctx, &old).await?;
        delete_if_present(&api, &old.name_any()).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_sanitised() {
        let req = BTreeMap::from([
            ("env".to_string(), "prod".to_string()),
            ("management.cattle.io/x".to_string(), "1".to_string()),
            ("fleet.cattle.io/cluster".to_string(), "spoof".to_string()),
            (CREATED_BY_AGENT_POD_LABEL.to_string(), "pod-1".to_string()),
        ]);
        let got = cluster_labels(&req, "cluster-abc");
        assert_eq!(
            got,
            BTreeMap::from([
                ("env".to_string(), "prod".to_string()),
                (CREATED_BY_AGENT_POD_LABEL.to_string(), "pod-1".to_string()),
                (
                    "fleet.cattle.io/cluster".to_string(),
                    "cluster-abc".to_string()
                ),
            ])
        );
    }
}
