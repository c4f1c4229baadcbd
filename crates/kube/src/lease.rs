//! Leader election on a `coordination.k8s.io/v1` Lease, as client-go's `leaderelection` package
//! does it (and so upstream Fleet's controllers and agent through controller-runtime): a candidate
//! takes the Lease when it is free or when its holder has not renewed it for `lease_duration`
//! (measured on the candidate's own clock from when it last saw the record change, so clock skew
//! between replicas does not matter); the holder renews every `retry_period` and gives up when it
//! could not renew for `renew_deadline`. Writes are optimistic (`resourceVersion`), so two
//! candidates never both win.
//!
//! The manager controllers (`fleet controller`) and the agent share this elector.

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, ObjectMeta, PostParams};

/// Durations of the election (upstream: `CATTLE_ELECTION_LEASE_DURATION`,
/// `CATTLE_ELECTION_RENEW_DEADLINE`, `CATTLE_ELECTION_RETRY_PERIOD`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseTimings {
    /// How long a non-renewed Lease keeps other candidates out.
    pub lease_duration: Duration,
    /// How long the holder keeps retrying a failing renewal before it stops leading.
    pub renew_deadline: Duration,
    /// Pause between acquire or renew attempts.
    pub retry_period: Duration,
}

impl Default for LeaseTimings {
    /// Upstream Fleet chart values (`leaderElection` in `charts/fleet/values.yaml`).
    fn default() -> Self {
        LeaseTimings {
            lease_duration: Duration::from_secs(30),
            renew_deadline: Duration::from_secs(25),
            retry_period: Duration::from_secs(10),
        }
    }
}

/// One candidate for one Lease.
pub struct LeaderElector {
    api: Api<Lease>,
    name: String,
    identity: String,
    timings: LeaseTimings,
    /// The record last read and when (local clock) it last changed.
    observed: Option<(LeaseSpec, Instant)>,
}

/// Why leadership ended.
#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    /// The Lease could not be renewed within the renew deadline.
    #[error("lease {0}: not renewed within the renew deadline; leadership lost")]
    Lost(String),
    /// Another candidate holds the Lease now.
    #[error("lease {name}: taken over by {holder}")]
    TakenOver {
        /// The Lease.
        name: String,
        /// Its new holder.
        holder: String,
    },
}

/// A unique identity for this process: `hostname_pid_random`, like controller-runtime's
/// `hostname_uuid`.
pub fn default_identity() -> String {
    use std::hash::{BuildHasher, Hasher};
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|h| h.trim().to_string())
        })
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "fleet".into());
    let r = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    format!("{host}_{}_{:08x}", std::process::id(), r as u32)
}

fn now() -> MicroTime {
    MicroTime(k8s_openapi::jiff::Timestamp::now())
}

fn secs(d: Duration) -> i32 {
    i32::try_from(d.as_secs().max(1)).unwrap_or(i32::MAX)
}

impl LeaderElector {
    /// A candidate for Lease `namespace/name` under `identity`.
    pub fn new(
        client: kube::Client,
        namespace: &str,
        name: &str,
        identity: &str,
        timings: LeaseTimings,
    ) -> LeaderElector {
        LeaderElector {
            api: Api::namespaced(client, namespace),
            name: name.to_string(),
            identity: identity.to_string(),
            timings,
            observed: None,
        }
    }

    /// This candidate's identity (the Lease's `holderIdentity` while it leads).
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// Waits until this candidate holds the Lease (retrying every retry period; API errors are
    /// logged and retried like client-go does).
    pub async fn acquire(&mut self) {
        loop {
            match self.try_acquire_or_renew().await {
                Ok(true) => {
                    tracing::info!(lease = %self.name, identity = %self.identity, "acquired lease");
                    return;
                }
                Ok(false) => {}
                Err(e) => tracing::warn!(lease = %self.name, "acquiring lease: {e}"),
            }
            tokio::time::sleep(self.timings.retry_period).await;
        }
    }

    /// Renews the held Lease every retry period; returns when leadership is lost (renewal failing
    /// for the renew deadline, or another holder seen). Never returns while leading.
    pub async fn hold(&mut self) -> LeaseError {
        let mut last_renew = Instant::now();
        loop {
            tokio::time::sleep(self.timings.retry_period).await;
            match self.try_acquire_or_renew().await {
                Ok(true) => last_renew = Instant::now(),
                Ok(false) => {
                    let holder = self
                        .observed
                        .as_ref()
                        .and_then(|(s, _)| s.holder_identity.clone())
                        .unwrap_or_default();
                    if !holder.is_empty() && holder != self.identity {
                        return LeaseError::TakenOver {
                            name: self.name.clone(),
                            holder,
                        };
                    }
                }
                Err(e) => tracing::warn!(lease = %self.name, "renewing lease: {e}"),
            }
            if last_renew.elapsed() >= self.timings.renew_deadline {
                return LeaseError::Lost(self.name.clone());
            }
        }
    }

    /// Gives the Lease up (empty holder, 1 s duration) so a follower need not wait out the lease
    /// duration, as client-go's `ReleaseOnCancel`. Best effort.
    pub async fn release(&mut self) {
        let Ok(Some(mut lease)) = self.api.get_opt(&self.name).await else {
            return;
        };
        let spec = lease.spec.get_or_insert_with(Default::default);
        if spec.holder_identity.as_deref() != Some(self.identity.as_str()) {
            return;
        }
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        spec.renew_time = Some(now());
        if let Err(e) = self
            .api
            .replace(&self.name, &PostParams::default(), &lease)
            .await
        {
            tracing::warn!(lease = %self.name, "releasing lease: {e}");
        }
    }

    /// One attempt (client-go `tryAcquireOrRenew`): true when this candidate holds the Lease
    /// afterwards.
    pub async fn try_acquire_or_renew(&mut self) -> Result<bool, kube::Error> {
        let mine = LeaseSpec {
            holder_identity: Some(self.identity.clone()),
            lease_duration_seconds: Some(secs(self.timings.lease_duration)),
            acquire_time: Some(now()),
            renew_time: Some(now()),
            lease_transitions: Some(0),
            ..Default::default()
        };
        let Some(mut lease) = self.api.get_opt(&self.name).await? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.name.clone()),
                    ..Default::default()
                },
                spec: Some(mine.clone()),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(_) => {
                    self.observed = Some((mine, Instant::now()));
                    Ok(true)
                }
                Err(kube::Error::Api(e)) if e.code == 409 => Ok(false),
                Err(e) => Err(e),
            };
        };
        let current = lease.spec.clone().unwrap_or_default();
        let changed = self.observed.as_ref().is_none_or(|(o, _)| *o != current);
        if changed {
            self.observed = Some((current.clone(), Instant::now()));
        }
        let holder = current.holder_identity.clone().unwrap_or_default();
        let held_by_me = holder == self.identity;
        // As client-go: the candidate's own lease duration counts, not the record's.
        let duration = self.timings.lease_duration;
        let observed_at = self
            .observed
            .as_ref()
            .map(|(_, t)| *t)
            .unwrap_or_else(Instant::now);
        if !holder.is_empty() && !held_by_me && observed_at.elapsed() < duration {
            return Ok(false);
        }
        let mut spec = mine;
        if held_by_me {
            spec.acquire_time = current.acquire_time.clone();
            spec.lease_transitions = current.lease_transitions;
        } else {
            spec.lease_transitions = Some(current.lease_transitions.unwrap_or(0) + 1);
        }
        lease.spec = Some(spec.clone());
        match self
            .api
            .replace(&self.name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => {
                self.observed = Some((spec, Instant::now()));
                Ok(true)
            }
            Err(kube::Error::Api(e)) if e.code == 409 => Ok(false),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use fleet_apiserver::{ApiServer, ApiServerConfig};

    #[test]
    fn identities_differ() {
        assert_ne!(default_identity(), default_identity());
    }

    fn fast() -> LeaseTimings {
        LeaseTimings {
            lease_duration: Duration::from_millis(1500),
            renew_deadline: Duration::from_millis(1000),
            retry_period: Duration::from_millis(100),
        }
    }

    #[tokio::test]
    async fn one_leader_then_takeover_after_the_lease_duration() {
        let srv = ApiServer::new(ApiServerConfig::in_memory())
            .await
            .expect("in-memory server");
        let c = crate::in_process(srv.router(), "default");
        let mut a = LeaderElector::new(c.clone(), "default", "l", "a", fast());
        let mut b = LeaderElector::new(c.clone(), "default", "l", "b", fast());
        a.acquire().await;
        assert!(!b.try_acquire_or_renew().await.expect("b tries"));
        assert!(a.try_acquire_or_renew().await.expect("a renews"));
        // a stops renewing (dies): b gets the lease once b has seen it unchanged for the duration.
        let t = Instant::now();
        b.acquire().await;
        let waited = t.elapsed();
        assert!(waited >= Duration::from_millis(1400), "{waited:?}");
        assert!(waited < Duration::from_secs(5), "{waited:?}");
        let lease = Api::<Lease>::namespaced(c.clone(), "default")
            .get("l")
            .await
            .expect("lease");
        let spec = lease.spec.expect("spec");
        assert_eq!(spec.holder_identity.as_deref(), Some("b"));
        assert_eq!(spec.lease_transitions, Some(1));
        assert_eq!(spec.lease_duration_seconds, Some(1));
        // a notices on its next renewal that it lost.
        assert!(matches!(a.hold().await, LeaseError::TakenOver { holder, .. } if holder == "b"));
        // b releases: a takes over at once.
        b.release().await;
        let t = Instant::now();
        a.acquire().await;
        assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    }
}
