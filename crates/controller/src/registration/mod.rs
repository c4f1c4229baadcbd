//! Cluster registration on the manager, over the Kubernetes API only (upstream's agentmanagement
//! `clusterregistrationtoken` and `clusterregistration` controllers):
//!
//! - `token`: a ClusterRegistrationToken gets a ServiceAccount that may only create
//!   ClusterRegistrations in its workspace, and a values Secret with that account's token; it is
//!   deleted at its expiry time;
//! - `request`: a ClusterRegistration finds or creates its Cluster by clientID, gets a ServiceAccount
//!   in the cluster namespace with exactly the agent's least-privilege RBAC, replaces older
//!   registrations of the same client, and hands the credential over in a `c-…` Secret;
//! - `cleanup`: credential Secrets are deleted 40 minutes after creation, and the ServiceAccount
//!   and grants of a ClusterRegistration that is gone are revoked;
//! - `import`: manager-initiated registration of a Cluster with `spec.kubeConfigSecret` (the
//!   bootstrap Secret and agent ConfigMap written into that cluster).

mod bootstrap;
mod cleanup;
mod import;
mod index;
pub mod names;
pub mod rbac;
mod request;
mod token;
pub mod values;
pub mod write;

use std::sync::Arc;
use std::time::Duration;

use kube::Client;

pub use bootstrap::ensure_bootstrap;
pub use fleet_api::duration::parse_go_duration;
pub use names::DEFAULT_SYSTEM_NAMESPACE;
pub use values::RegistrationValues;

/// How the registration controllers run.
#[derive(Clone, Debug)]
pub struct RegistrationOptions {
    /// The manager's system namespace (`cattle-fleet-system`).
    pub system_namespace: String,
    /// Where credential Secrets are handed out (`cattle-fleet-clusters-system`).
    pub system_registration_namespace: String,
    /// The API server URL agents are told to use (token values `apiServerURL`).
    pub api_server_url: String,
    /// PEM CA of that API server (token values `apiServerCA`; empty: trust the system store).
    pub api_server_ca: String,
    /// Tokens without a TTL are deleted (upstream's `registrationTokenTTL.required`).
    pub token_ttl_required: bool,
    /// How long a `c-…` credential Secret lives (upstream: 40 minutes).
    pub credential_secret_ttl: Duration,
}

impl Default for RegistrationOptions {
    fn default() -> Self {
        RegistrationOptions::for_system_namespace(DEFAULT_SYSTEM_NAMESPACE)
    }
}

impl RegistrationOptions {
    /// Defaults for a system namespace, deriving the system registration namespace from it.
    pub fn for_system_namespace(system_namespace: &str) -> RegistrationOptions {
        RegistrationOptions {
            system_namespace: system_namespace.to_string(),
            system_registration_namespace: names::system_registration_namespace(system_namespace),
            api_server_url: String::new(),
            api_server_ca: String::new(),
            token_ttl_required: false,
            credential_secret_ttl: Duration::from_secs(40 * 60),
        }
    }
}

/// Why a registration reconcile failed (retried by the controller).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API refused or failed a call.
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    /// An object is not what registration can work with (named in the message).
    #[error("{0}")]
    Invalid(String),
}

/// What every reconciler shares.
pub(crate) struct Ctx {
    pub client: Client,
    pub opts: RegistrationOptions,
    pub clusters: index::ClusterIndex,
    /// The registration controller's cache (set when it starts).
    pub requests:
        std::sync::OnceLock<kube::runtime::reflector::Store<fleet_api::ClusterRegistration>>,
}

/// Bootstraps what registration needs, then runs the token, registration and cleanup controllers
/// until one of them stops (they run until the process ends).
pub async fn run(client: Client, opts: RegistrationOptions) -> Result<(), Error> {
    ensure_bootstrap(&client, &opts).await?;
    let clusters = index::ClusterIndex::spawn(kube::Api::all(client.clone()));
    let ctx = Arc::new(Ctx {
        client,
        opts,
        clusters,
        requests: std::sync::OnceLock::new(),
    });
    tokio::select! {
        () = token::run(ctx.clone()) => {},
        () = request::run(ctx.clone()) => {},
        () = cleanup::run_credential_expiry(ctx.clone()) => {},
        () = cleanup::run_revocation(ctx.clone()) => {},
        () = import::run(ctx.clone()) => {},
    }
    Ok(())
}

/// A controller of `api`'s objects whose cache holds them as `slim` leaves them: kube-runtime's
/// own cache keeps whole copies, and these caches hold a few objects per registered cluster
/// (managedFields most of each), 25 KiB per cluster in all at 3,000 clusters.
pub(crate) fn slim_controller<K>(
    api: kube::Api<K>,
    cfg: kube::runtime::watcher::Config,
    slim: impl FnMut(&mut K) + Send + 'static,
) -> kube::runtime::Controller<K>
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    use kube::runtime::WatchStreamExt;
    let (reader, writer) = kube::runtime::reflector::store();
    let stream = kube::runtime::watcher(api, cfg)
        .default_backoff()
        .modify(slim)
        .reflect(writer)
        .applied_objects();
    kube::runtime::Controller::for_stream(stream, reader)
}

/// Keeps of a cached object's metadata only what the registration controllers read of an object
/// they have no more work for: its identity (the cache's key, the calls a reconcile makes), its
/// age (which of a client's registrations is older) and whether it is being deleted. These
/// caches hold several objects per registered cluster for as long as the manager runs; their
/// labels, annotations and owner references were most of each (10 KB per cluster in all at
/// 3,000 clusters).
pub(crate) fn keep_identity(meta: &mut kube::api::ObjectMeta) {
    *meta = kube::api::ObjectMeta {
        name: meta.name.take(),
        namespace: meta.namespace.take(),
        uid: meta.uid.take(),
        resource_version: meta.resource_version.take(),
        creation_timestamp: meta.creation_timestamp.take(),
        deletion_timestamp: meta.deletion_timestamp.take(),
        ..Default::default()
    };
}

/// Current time as a Kubernetes timestamp.
pub(crate) fn now() -> jiff::Timestamp {
    jiff::Timestamp::now()
}

/// Retry delay after a failed reconcile.
pub(crate) const RETRY: Duration = Duration::from_secs(2);
