//! Clean-up of registration: credential Secrets are deleted 40 minutes after creation (upstream's
//! `OnSecretChange`), and a ClusterRegistration that is gone has its ServiceAccount and grant
//! revoked, so its credential stops authenticating.

use std::sync::Arc;
use std::time::Duration;

use fleet_api::ClusterRegistration;
use fleet_api::keys::{
    CLUSTER_REGISTRATION_ANNOTATION, CLUSTER_REGISTRATION_NAMESPACE_ANNOTATION, MANAGED_LABEL,
};
use fleet_api::names::cluster_namespace;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, Role, RoleBinding};
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Api, Resource, ResourceExt};

use super::names::{SECRET_TYPE_AGENT_CREDENTIAL, credential_secret_name, request_service_account};
use super::write::delete_if_present;
use super::{Ctx, Error, RETRY, now};

fn log_errors<T, E: std::fmt::Display>(
    what: &'static str,
) -> impl Fn(Result<T, E>) -> std::future::Ready<()> {
    move |r| {
        if let Err(e) = r {
            tracing::debug!(error = %e, "{what}");
        }
        std::future::ready(())
    }
}

/// Deletes `c-…` credential Secrets once they are older than the configured lifetime.
pub(super) async fn run_credential_expiry(ctx: Arc<Ctx>) {
    let secrets: Api<Secret> =
        Api::namespaced(ctx.client.clone(), &ctx.opts.system_registration_namespace);
    // Only the type, name and creation time are read: the credential's data is not cached.
    super::slim_controller(
        secrets,
        watcher::Config::default().labels(&format!("{MANAGED_LABEL}=true")),
        |s: &mut Secret| {
            super::keep_identity(&mut s.metadata);
            s.data = None;
            s.string_data = None;
        },
    )
    .run(expire_credential, |_, _, _| Action::requeue(RETRY), ctx)
    .for_each(log_errors("credential secret clean-up"))
    .await;
}

async fn expire_credential(s: Arc<Secret>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    if s.type_.as_deref() != Some(SECRET_TYPE_AGENT_CREDENTIAL) {
        return Ok(Action::await_change());
    }
    let created = s
        .meta()
        .creation_timestamp
        .as_ref()
        .map(|t| t.0)
        .unwrap_or_else(now);
    let age = Duration::try_from(now().duration_since(created)).unwrap_or_default();
    if age >= ctx.opts.credential_secret_ttl {
        let api: Api<Secret> =
            Api::namespaced(ctx.client.clone(), &ctx.opts.system_registration_namespace);
        delete_if_present(&api, &s.name_any()).await?;
        return Ok(Action::await_change());
    }
    Ok(Action::requeue(ctx.opts.credential_secret_ttl - age))
}

/// Revokes the grants of ClusterRegistrations that are gone: reconciles the agents'
/// ServiceAccounts, woken also by the registration's deletion.
pub(super) async fn run_revocation(ctx: Arc<Ctx>) {
    let accounts: Api<ServiceAccount> = Api::all(ctx.client.clone());
    let requests: Api<ClusterRegistration> = Api::all(ctx.client.clone());
    // Only the registration annotations are read.
    super::slim_controller(
        accounts,
        watcher::Config::default().labels(&format!("{MANAGED_LABEL}=true")),
        |sa: &mut ServiceAccount| {
            let mut annotations = sa.metadata.annotations.take().unwrap_or_default();
            annotations.retain(|k, _| {
                k == CLUSTER_REGISTRATION_ANNOTATION
                    || k == CLUSTER_REGISTRATION_NAMESPACE_ANNOTATION
            });
            super::keep_identity(&mut sa.metadata);
            sa.metadata.annotations = Some(annotations);
            sa.secrets = None;
            sa.image_pull_secrets = None;
        },
    )
    .watches(
        requests,
        watcher::Config::default(),
        |r: ClusterRegistration| {
            let ws = r.namespace()?;
            let cluster = r
                .status
                .as_ref()
                .map(|s| s.cluster_name.clone())
                .filter(|c| !c.is_empty())?;
            Some(
                ObjectRef::new(&request_service_account(&r.name_any(), &r.uid()?))
                    .within(&cluster_namespace(&ws, &cluster)),
            )
        },
    )
    .run(revoke_orphan, |_, _, _| Action::requeue(RETRY), ctx)
    .for_each(log_errors("registration revocation"))
    .await;
}

async fn revoke_orphan(sa: Arc<ServiceAccount>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let a = sa.annotations();
    let (Some(request), Some(ws)) = (
        a.get(CLUSTER_REGISTRATION_ANNOTATION),
        a.get(CLUSTER_REGISTRATION_NAMESPACE_ANNOTATION),
    ) else {
        return Ok(Action::await_change());
    };
    let api: Api<ClusterRegistration> = Api::namespaced(ctx.client.clone(), ws);
    let live = api.get_opt(request).await?;
    let current = live.as_ref().is_some_and(|r| {
        r.meta().deletion_timestamp.is_none()
            && request_service_account(request, &r.uid().unwrap_or_default()) == sa.name_any()
    });
    if current {
        return Ok(Action::await_change());
    }
    let cluster_ns = sa.namespace().unwrap_or_default();
    tracing::info!(registration = %request, namespace = %ws, account = %sa.name_any(), "revoking the grant of a removed registration");
    revoke_named(&ctx, request, &sa.name_any(), ws, &cluster_ns).await?;
    Ok(Action::await_change())
}

/// Deletes a registration's ServiceAccount (its token stops authenticating) and its Roles and
/// bindings.
pub(super) async fn revoke(
    ctx: &Ctx,
    request: &str,
    request_uid: &str,
    ws: &str,
    cluster_ns: &str,
) -> Result<(), Error> {
    let sa = request_service_account(request, request_uid);
    revoke_named(ctx, request, &sa, ws, cluster_ns).await
}

async fn revoke_named(
    ctx: &Ctx,
    request: &str,
    sa: &str,
    ws: &str,
    cluster_ns: &str,
) -> Result<(), Error> {
    let c = &ctx.client;
    let sysreg = &ctx.opts.system_registration_namespace;
    delete_if_present(
        &Api::<ServiceAccount>::namespaced(c.clone(), cluster_ns),
        sa,
    )
    .await?;
    delete_if_present(
        &Api::<RoleBinding>::namespaced(c.clone(), cluster_ns),
        request,
    )
    .await?;
    delete_if_present(
        &Api::<ClusterRoleBinding>::all(c.clone()),
        &format!("{request}-content"),
    )
    .await?;
    delete_if_present(&Api::<RoleBinding>::namespaced(c.clone(), ws), request).await?;
    delete_if_present(&Api::<Role>::namespaced(c.clone(), ws), request).await?;
    let creds = format!("{request}-creds");
    delete_if_present(&Api::<RoleBinding>::namespaced(c.clone(), sysreg), &creds).await?;
    delete_if_present(&Api::<Role>::namespaced(c.clone(), sysreg), &creds).await?;
    Ok(())
}

/// Deletes a registration's `c-…` credential Secret.
pub(super) async fn delete_credential(ctx: &Ctx, r: &ClusterRegistration) -> Result<(), Error> {
    let api: Api<Secret> =
        Api::namespaced(ctx.client.clone(), &ctx.opts.system_registration_namespace);
    delete_if_present(
        &api,
        &credential_secret_name(&r.spec.client_id, &r.spec.client_random),
    )
    .await?;
    Ok(())
}
