//! ClusterRegistrationToken → its ServiceAccount (may only create ClusterRegistrations), the
//! account's token, the values Secret, status `secretName`/`expires`, and deletion at expiry (the
//! reconcile is requeued for the expiry time; nothing polls).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use fleet_api::ClusterRegistrationToken;
use fleet_api::keys::MANAGED_LABEL;
use futures::StreamExt;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{ObjectMeta, Patch};
use kube::runtime::controller::Action;
use kube::runtime::{Controller, watcher};
use kube::{Api, Resource, ResourceExt};

use super::names::{
    DEFAULT_SYSTEM_NAMESPACE, SECRET_TYPE_REGISTRATION_VALUES, token_secret_name,
    token_service_account,
};
use super::rbac::{token_role, token_role_binding};
use super::values::{InternalValues, RegistrationValues};
use super::write::{delete_if_present, ensure, patch_params};
use super::{Ctx, Error, RETRY, now};

const SA_NAME_ANNOTATION: &str = "kubernetes.io/service-account.name";
const TOKEN_SECRET_TYPE: &str = "kubernetes.io/service-account-token";

pub(super) async fn run(ctx: Arc<Ctx>) {
    let tokens: Api<ClusterRegistrationToken> = Api::all(ctx.client.clone());
    let secrets: Api<Secret> = Api::all(ctx.client.clone());
    Controller::new(tokens, watcher::Config::default())
        .owns(
            secrets,
            watcher::Config::default().labels(&format!("{MANAGED_LABEL}=true")),
        )
        .run(reconcile, error_policy, ctx)
        .for_each(|r| async move {
            if let Err(e) = r {
                tracing::debug!(error = %e, "registration token controller");
            }
        })
        .await;
}

fn error_policy(t: Arc<ClusterRegistrationToken>, e: &Error, _: Arc<Ctx>) -> Action {
    tracing::warn!(token = %t.name_any(), namespace = ?t.namespace(), error = %e, "registration token");
    Action::requeue(RETRY)
}

/// When the token expires, from its creation time and `spec.ttl` (`None`: never).
pub(super) fn expiry(t: &ClusterRegistrationToken) -> Result<Option<jiff::Timestamp>, Error> {
    let Some(ttl) = t.spec.ttl.as_deref() else {
        return Ok(None);
    };
    let ttl = super::parse_go_duration(ttl).map_err(|e| {
        Error::Invalid(format!(
            "ClusterRegistrationToken {}/{}: spec.ttl: {e}",
            t.namespace().unwrap_or_default(),
            t.name_any()
        ))
    })?;
    if ttl.is_zero() {
        return Ok(None);
    }
    let created = t
        .meta()
        .creation_timestamp
        .as_ref()
        .map(|c| c.0)
        .unwrap_or_else(now);
    let span = jiff::SignedDuration::try_from(ttl)
        .map_err(|e| Error::Invalid(format!("spec.ttl: {e}")))?;
    created
        .checked_add(span)
        .map(Some)
        .map_err(|e| Error::Invalid(format!("spec.ttl: {e}")))
}

fn owned_meta(t: &ClusterRegistrationToken, name: &str, ns: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        namespace: Some(ns.to_string()),
        labels: Some(BTreeMap::from([(
            MANAGED_LABEL.to_string(),
            "true".to_string(),
        )])),
        owner_references: t.controller_owner_ref(&()).map(|o| vec![o]),
        ..Default::default()
    }
}

async fn reconcile(t: Arc<ClusterRegistrationToken>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    if t.meta().deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let ns = t.namespace().unwrap_or_default();
    let name = t.name_any();
    let uid = t.uid().unwrap_or_default();
    let sa_name = token_service_account(&name, &uid);
    let tokens: Api<ClusterRegistrationToken> = Api::namespaced(ctx.client.clone(), &ns);
    let accounts: Api<ServiceAccount> = Api::namespaced(ctx.client.clone(), &ns);

    let expires = expiry(&t)?;
    let expired = expires.is_some_and(|e| e <= now());
    if expired || (ctx.opts.token_ttl_required && expires.is_none()) {
        // The account goes first so the bootstrap token stops authenticating at once, not when
        // garbage collection gets to it.
        tracing::info!(token = %name, namespace = %ns, expired, "deleting registration token");
        delete_if_present(&accounts, &sa_name).await?;
        delete_if_present(&tokens, &name).await?;
        return Ok(Action::await_change());
    }

    ensure(
        &accounts,
        &ServiceAccount {
            metadata: owned_meta(&t, &sa_name, &ns),
            ..Default::default()
        },
    )
    .await?;
    let mut role = token_role(&sa_name, &ns);
    role.metadata = ObjectMeta {
        name: role.metadata.name.take(),
        ..owned_meta(&t, "", &ns)
    };
    ensure(&Api::<Role>::namespaced(ctx.client.clone(), &ns), &role).await?;
    let mut binding = token_role_binding(&sa_name, &ns);
    binding.metadata = ObjectMeta {
        name: binding.metadata.name.take(),
        ..owned_meta(&t, "", &ns)
    };
    ensure(
        &Api::<RoleBinding>::namespaced(ctx.client.clone(), &ns),
        &binding,
    )
    .await?;

    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &ns);
    let mut token_meta = owned_meta(&t, &token_secret_name(&sa_name), &ns);
    token_meta.annotations = Some(BTreeMap::from([(
        SA_NAME_ANNOTATION.to_string(),
        sa_name.clone(),
    )]));
    let token_secret = ensure(
        &secrets,
        &Secret {
            metadata: token_meta,
            type_: Some(TOKEN_SECRET_TYPE.into()),
            ..Default::default()
        },
    )
    .await?;
    let Some(token) = token_secret
        .data
        .as_ref()
        .and_then(|d| d.get("token"))
        .map(|b| String::from_utf8_lossy(&b.0).into_owned())
        .filter(|t| !t.is_empty())
    else {
        // The token controller fills it in; its write wakes this reconcile (owned Secret).
        return Ok(Action::requeue(Duration::from_secs(5)));
    };

    let values = RegistrationValues {
        api_server_ca: ctx.opts.api_server_ca.clone(),
        api_server_url: ctx.opts.api_server_url.clone(),
        cluster_namespace: ns.clone(),
        internal: (ctx.opts.system_namespace != DEFAULT_SYSTEM_NAMESPACE).then(|| InternalValues {
            system_namespace: ctx.opts.system_namespace.clone(),
        }),
        system_registration_namespace: ctx.opts.system_registration_namespace.clone(),
        token,
        token_name: name.clone(),
    };
    let yaml = values
        .to_yaml()
        .map_err(|e| Error::Invalid(e.to_string()))?;
    ensure(
        &secrets,
        &Secret {
            metadata: owned_meta(&t, &name, &ns),
            type_: Some(SECRET_TYPE_REGISTRATION_VALUES.into()),
            data: Some(BTreeMap::from([(
                "values".to_string(),
                ByteString(yaml.into_bytes()),
            )])),
            ..Default::default()
        },
    )
    .await?;

    let status = t.status.clone().unwrap_or_default();
    let want_expires = expires.map(Time);
    if status.secret_name != name || status.expires != want_expires {
        let patch = serde_json::json!({"status": {"secretName": name, "expires": want_expires}});
        tokens
            .patch_status(&name, &patch_params(), &Patch::Merge(&patch))
            .await?;
    }
    Ok(match expires {
        Some(e) => {
            let left = e.duration_since(now());
            Action::requeue(
                Duration::try_from(left).unwrap_or_default() + Duration::from_millis(50),
            )
        }
        None => Action::await_change(),
    })
}
