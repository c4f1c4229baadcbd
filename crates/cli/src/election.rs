//! Leader-election flags shared by `fleet controller` and `fleet agent`, under upstream's
//! environment variables, so one replica works while the others stand by.

use anyhow::Context;
use clap::Args;
use std::time::Duration;

/// Timings of a Lease election (Go durations).
#[derive(Args, Debug, Clone)]
pub struct ElectionArgs {
    /// Leader election: how long an unrenewed Lease keeps standbys out (Go duration).
    #[arg(
        long = "lease-duration",
        env = "CATTLE_ELECTION_LEASE_DURATION",
        default_value = "30s"
    )]
    pub lease_duration: String,
    /// Leader election: how long the leader retries a failing renewal before it stops.
    #[arg(
        long = "renew-deadline",
        env = "CATTLE_ELECTION_RENEW_DEADLINE",
        default_value = "25s"
    )]
    pub renew_deadline: String,
    /// Leader election: pause between acquire and renew attempts.
    #[arg(
        long = "retry-period",
        env = "CATTLE_ELECTION_RETRY_PERIOD",
        default_value = "10s"
    )]
    pub retry_period: String,
}

/// A non-zero Go duration, the flag named in the error.
pub fn go_duration(flag: &str, v: &str) -> anyhow::Result<Duration> {
    fleet_api::duration::parse_go_duration(v)
        .ok()
        .filter(|d| !d.is_zero())
        .with_context(|| format!("{flag} {v:?}: expected a Go duration such as 15s"))
}

impl ElectionArgs {
    /// The parsed timings, refused unless lease duration > renew deadline > retry period.
    pub fn timings(&self) -> anyhow::Result<fleet_kube::lease::LeaseTimings> {
        let timings = fleet_kube::lease::LeaseTimings {
            lease_duration: go_duration("--lease-duration", &self.lease_duration)?,
            renew_deadline: go_duration("--renew-deadline", &self.renew_deadline)?,
            retry_period: go_duration("--retry-period", &self.retry_period)?,
        };
        anyhow::ensure!(
            timings.lease_duration > timings.renew_deadline
                && timings.renew_deadline > timings.retry_period,
            "leader election needs --lease-duration > --renew-deadline > --retry-period"
        );
        Ok(timings)
    }
}

/// Creates the namespace that holds the Lease when it is missing (upstream's charts create it),
/// so the first candidate does not wait a retry period for someone else to.
pub async fn ensure_namespace(client: &kube::Client, namespace: &str) -> anyhow::Result<()> {
    let nss: kube::Api<k8s_openapi::api::core::v1::Namespace> = kube::Api::all(client.clone());
    let ns = k8s_openapi::api::core::v1::Namespace {
        metadata: kube::api::ObjectMeta {
            name: Some(namespace.to_string()),
            ..Default::default()
        },
        ..Default::default()
    };
    // A read first: a restart with everything in place writes nothing.
    if nss
        .get_opt(namespace)
        .await
        .with_context(|| format!("reading namespace {namespace}"))?
        .is_some()
    {
        return Ok(());
    }
    fleet_controller::bootstrap::create_absent(&nss, &ns)
        .await
        .with_context(|| format!("creating namespace {namespace}"))
}
