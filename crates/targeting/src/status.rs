//! BundleDeployment state machine, summaries, the Ready condition message and display strings
//! (upstream `summary.go`, bundle/cluster/clustergroup status).

use fleet_api::state::BundleState;
use fleet_api::{
    BundleDeployment, BundleDeploymentSpec, BundleDeploymentStatus, BundleSummary, Condition,
    ModifiedStatus, NonReadyResource, NonReadyStatus,
};

/// What a deployment's state and message are computed from: the IDs of its spec and the parts
/// of the agent's status the summaries read. A cache may hold only these instead of whole
/// BundleDeployments (a manager holds one per bundle and cluster).
pub trait DeploymentFacts {
    /// `spec.deploymentID`.
    fn deployment_id(&self) -> &str;
    /// `spec.stagedDeploymentID`.
    fn staged_deployment_id(&self) -> &str;
    /// `status.appliedDeploymentID` (empty without a status).
    fn applied_deployment_id(&self) -> &str;
    /// `status.ready`.
    fn ready(&self) -> bool;
    /// `status.nonModified`.
    fn non_modified(&self) -> bool;
    /// Whether a `Deployed` condition has status `False`.
    fn deployed_false(&self) -> bool;
    /// Message of the first condition of this type (empty if none).
    fn condition_message(&self, type_: &str) -> &str;
}

/// A spec with a status, held apart: the facts of a BundleDeployment whose status is not
/// (or not yet) in the object, as the agent's next status write.
pub struct SpecStatus<'a>(
    pub &'a BundleDeploymentSpec,
    pub Option<&'a BundleDeploymentStatus>,
);

impl<'a> SpecStatus<'a> {
    /// `status.appliedDeploymentID`, borrowed from the status, not from `self`.
    fn applied(&self) -> &'a str {
        self.1.map_or("", |s| s.applied_deployment_id.as_str())
    }

    /// The message of the first condition of `type_`, borrowed from the status.
    fn message(&self, type_: &str) -> &'a str {
        self.1.map_or("", |s| cond_message(type_, &s.conditions))
    }
}

impl DeploymentFacts for SpecStatus<'_> {
    fn deployment_id(&self) -> &str {
        &self.0.deployment_id
    }
    fn staged_deployment_id(&self) -> &str {
        &self.0.staged_deployment_id
    }
    fn applied_deployment_id(&self) -> &str {
        self.applied()
    }
    fn ready(&self) -> bool {
        self.1.is_some_and(|s| s.ready)
    }
    fn non_modified(&self) -> bool {
        self.1.is_some_and(|s| s.non_modified)
    }
    fn deployed_false(&self) -> bool {
        self.1.is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| c.type_ == "Deployed" && c.status == "False")
        })
    }
    fn condition_message(&self, type_: &str) -> &str {
        self.message(type_)
    }
}

/// A BundleDeployment's facts are those of its spec and status.
fn facts(bd: &BundleDeployment) -> SpecStatus<'_> {
    SpecStatus(&bd.spec, bd.status.as_ref())
}

impl DeploymentFacts for BundleDeployment {
    fn deployment_id(&self) -> &str {
        &self.spec.deployment_id
    }
    fn staged_deployment_id(&self) -> &str {
        &self.spec.staged_deployment_id
    }
    fn applied_deployment_id(&self) -> &str {
        facts(self).applied()
    }
    fn ready(&self) -> bool {
        facts(self).ready()
    }
    fn non_modified(&self) -> bool {
        facts(self).non_modified()
    }
    fn deployed_false(&self) -> bool {
        facts(self).deployed_false()
    }
    fn condition_message(&self, type_: &str) -> &str {
        facts(self).message(type_)
    }
}

/// Upstream `GetDeploymentState`, first rule wins.
pub fn deployment_state(bd: &BundleDeployment) -> BundleState {
    state_of(bd)
}

/// [`deployment_state`] of whatever holds a deployment's facts.
pub fn state_of(d: &impl DeploymentFacts) -> BundleState {
    if d.applied_deployment_id() != d.deployment_id() {
        return if d.deployed_false() {
            BundleState::ErrApplied
        } else {
            BundleState::WaitApplied
        };
    }
    if !d.ready() {
        return BundleState::NotReady;
    }
    if d.deployment_id() != d.staged_deployment_id() {
        return BundleState::OutOfSync;
    }
    if !d.non_modified() {
        return BundleState::Modified;
    }
    BundleState::Ready
}

fn cond_message<'a>(t: &str, conds: &'a [Condition]) -> &'a str {
    conds
        .iter()
        .find(|c| c.type_ == t)
        .map_or("", |c| c.message.as_str())
}

/// Message shown for a deployment: Deployed, else Installed (if applied), else Monitored.
pub fn deployment_message(bd: &BundleDeployment) -> String {
    message_of(bd)
}

/// [`deployment_message`] of whatever holds a deployment's facts.
pub fn message_of(d: &impl DeploymentFacts) -> String {
    let mut m = d.condition_message("Deployed");
    if m.is_empty() && d.applied_deployment_id() == d.deployment_id() {
        m = d.condition_message("Installed");
    }
    if m.is_empty() {
        m = d.condition_message("Monitored");
    }
    m.to_string()
}

/// How many non-ready entries a summary lists (upstream's limit).
const LISTED: usize = 10;

/// Whether [`increment`] would list a deployment in `state` by name and message: callers build
/// those only then (a summary over 100,000 BDs would otherwise format a name and a message for
/// each).
pub fn lists(s: &BundleSummary, state: BundleState) -> bool {
    state != BundleState::Ready && s.non_ready_resources.len() < LISTED
}

/// Counts one deployment (or a pending target) into a summary; keeps ≤ 10 non-ready entries.
pub fn increment(
    s: &mut BundleSummary,
    name: &str,
    state: BundleState,
    message: &str,
    modified: &[ModifiedStatus],
    non_ready: &[NonReadyStatus],
) {
    match state {
        BundleState::Modified => s.modified += 1,
        BundleState::Pending => s.pending += 1,
        BundleState::WaitApplied => s.wait_applied += 1,
        BundleState::ErrApplied => s.err_applied += 1,
        BundleState::NotReady => s.not_ready += 1,
        BundleState::OutOfSync => s.out_of_sync += 1,
        BundleState::Ready => s.ready += 1,
    }
    if !name.is_empty() && lists(s, state) {
        s.non_ready_resources.push(NonReadyResource {
            name: name.into(),
            bundle_state: state.as_str().into(),
            message: message.into(),
            modified_status: modified.to_vec(),
            non_ready_status: non_ready.to_vec(),
        });
    }
}

/// Adds `r` into `l` (cluster group sums, GitRepo sums).
pub fn add(l: &mut BundleSummary, r: &BundleSummary) {
    l.not_ready += r.not_ready;
    l.wait_applied += r.wait_applied;
    l.err_applied += r.err_applied;
    l.out_of_sync += r.out_of_sync;
    l.modified += r.modified;
    l.ready += r.ready;
    l.pending += r.pending;
    l.desired_ready += r.desired_ready;
    if l.non_ready_resources.len() < 10 {
        l.non_ready_resources
            .extend(r.non_ready_resources.iter().cloned());
    }
}

/// Highest-ranked state among non-ready entries (None when all ready).
pub fn summary_state(s: &BundleSummary) -> Option<BundleState> {
    s.non_ready_resources
        .iter()
        .filter_map(|r| BundleState::parse(&r.bundle_state))
        .max_by_key(|st| st.rank())
}

fn object_name(api_version: &str, kind: &str, namespace: &str, name: &str) -> String {
    let kind = kind.to_lowercase();
    let group = api_version.split('/').next().unwrap_or("");
    let obj = if namespace.is_empty() {
        name.to_string()
    } else {
        format!("{namespace}/{name}")
    };
    if api_version.is_empty() {
        format!("{kind} {obj}")
    } else {
        format!("{kind}.{group} {obj}")
    }
}

/// Display string of a modified resource (`... missing`, `... extra`, `... modified {patch}`).
pub fn modified_string(m: &ModifiedStatus) -> String {
    let n = object_name(&m.api_version, &m.kind, &m.namespace, &m.name);
    if m.missing {
        if m.exist {
            format!("{n} is not owned by us")
        } else {
            format!("{n} missing")
        }
    } else if m.delete {
        format!("{n} extra")
    } else {
        format!("{n} modified {}", m.patch)
    }
}

/// Display string of a non-ready resource.
pub fn non_ready_string(n: &NonReadyStatus) -> String {
    let s = &n.summary;
    let state = if !s.transitioning && !s.error {
        s.state.clone()
    } else {
        let mut msg = if s.transitioning {
            "[progressing".to_string()
        } else {
            String::new()
        };
        if s.error {
            msg = if msg.is_empty() {
                "error]".into()
            } else {
                format!("{msg},error]")
            };
        } else {
            msg.push(']');
        }
        if !s.message.is_empty() {
            msg = format!("{msg} {}", s.message.join(", "));
        }
        msg
    };
    format!(
        "{} {}",
        object_name(&n.api_version, &n.kind, &n.namespace, &n.name),
        state
    )
}

/// The Ready condition message: sorted `State(count) [Kind name: msg]` entries plus up to four
/// modified/non-ready strings each, joined by `; `. Empty when everything is ready.
pub fn ready_message(s: &BundleSummary, kind: &str) -> String {
    let mut msgs = Vec::new();
    for (st, count) in [
        (BundleState::OutOfSync, s.out_of_sync),
        (BundleState::NotReady, s.not_ready),
        (BundleState::WaitApplied, s.wait_applied),
        (BundleState::ErrApplied, s.err_applied),
        (BundleState::Pending, s.pending),
        (BundleState::Modified, s.modified),
    ] {
        if count <= 0 {
            continue;
        }
        if let Some(v) = s
            .non_ready_resources
            .iter()
            .find(|v| v.bundle_state == st.as_str())
        {
            if v.message.is_empty() {
                msgs.push(format!("{st}({count}) [{kind} {}]", v.name));
            } else {
                msgs.push(format!("{st}({count}) [{kind} {}: {}]", v.name, v.message));
            }
            msgs.extend(v.modified_status.iter().take(4).map(modified_string));
            msgs.extend(v.non_ready_status.iter().take(4).map(non_ready_string));
        }
    }
    msgs.sort();
    msgs.join("; ")
}

/// `display.readyClusters` of a Bundle / readyBundles of a Cluster: `ready/desiredReady`.
pub fn ready_ratio(s: &BundleSummary) -> String {
    format!("{}/{}", s.ready, s.desired_ready)
}

/// Cluster `display.state`: worst state, or `WaitCheckIn` when the agent never checked in.
pub fn cluster_display_state(s: &BundleSummary, agent_seen: bool) -> String {
    if !agent_seen {
        return "WaitCheckIn".into();
    }
    summary_state(s)
        .map(|st| st.as_str().to_string())
        .unwrap_or_default()
}

/// ClusterGroup `display.readyClusters`: `ready/total` plus the non-ready names, if any.
pub fn cluster_group_ready(ready: usize, total: usize, non_ready: &[String]) -> String {
    if non_ready.is_empty() {
        format!("{ready}/{total}")
    } else {
        format!("{ready}/{total} ({})", non_ready.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bd(v: serde_json::Value) -> BundleDeployment {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn state_table() {
        let cases = [
            (
                json!({"spec": {"deploymentID": "a", "stagedDeploymentID": "a"}, "status": {"appliedDeploymentID": "b", "conditions": [{"type": "Deployed", "status": "False"}]}}),
                "ErrApplied",
            ),
            (
                json!({"spec": {"deploymentID": "a", "stagedDeploymentID": "a"}, "status": {"appliedDeploymentID": "b"}}),
                "WaitApplied",
            ),
            (
                json!({"spec": {"deploymentID": "a", "stagedDeploymentID": "a"}, "status": {"appliedDeploymentID": "a", "ready": false}}),
                "NotReady",
            ),
            (
                json!({"spec": {"deploymentID": "a", "stagedDeploymentID": "b"}, "status": {"appliedDeploymentID": "a", "ready": true}}),
                "OutOfSync",
            ),
            (
                json!({"spec": {"deploymentID": "a", "stagedDeploymentID": "a"}, "status": {"appliedDeploymentID": "a", "ready": true, "nonModified": false}}),
                "Modified",
            ),
            (
                json!({"spec": {"deploymentID": "a", "stagedDeploymentID": "a"}, "status": {"appliedDeploymentID": "a", "ready": true, "nonModified": true}}),
                "Ready",
            ),
        ];
        for (mut v, want) in cases {
            v["apiVersion"] = json!("fleet.cattle.io/v1alpha1");
            v["kind"] = json!("BundleDeployment");
            v["metadata"] = json!({"name": "x"});
            let b = bd(v);
            assert_eq!(deployment_state(&b).as_str(), want);
            // The same spec with the same status held apart: the same state and message.
            let apart = SpecStatus(&b.spec, b.status.as_ref());
            assert_eq!(state_of(&apart).as_str(), want);
            assert_eq!(message_of(&apart), deployment_message(&b));
        }
    }

    #[test]
    fn summaries_and_messages() {
        let mut s = BundleSummary::default();
        for i in 0..12 {
            s.desired_ready += 1;
            increment(
                &mut s,
                &format!("ns/c{i}"),
                BundleState::NotReady,
                "",
                &[],
                &[],
            );
        }
        s.desired_ready += 1;
        increment(&mut s, "ns/ok", BundleState::Ready, "", &[], &[]);
        s.desired_ready += 1;
        let m = ModifiedStatus {
            kind: "Deployment".into(),
            api_version: "apps/v1".into(),
            namespace: "n".into(),
            name: "d".into(),
            patch: "{}".into(),
            ..Default::default()
        };
        increment(&mut s, "ns/x", BundleState::Modified, "boom", &[m], &[]);
        assert_eq!(s.non_ready_resources.len(), 10);
        assert_eq!((s.not_ready, s.ready, s.modified), (12, 1, 1));
        assert_eq!(ready_ratio(&s), "1/14");
        assert_eq!(summary_state(&s), Some(BundleState::NotReady));
        assert_eq!(ready_message(&s, "Cluster"), "NotReady(12) [Cluster ns/c0]");
        let mut s2 = BundleSummary::default();
        increment(
            &mut s2,
            "ns/x",
            BundleState::Modified,
            "boom",
            &[ModifiedStatus {
                kind: "Deployment".into(),
                api_version: "apps/v1".into(),
                namespace: "n".into(),
                name: "d".into(),
                missing: true,
                ..Default::default()
            }],
            &[],
        );
        increment(&mut s2, "ns/y", BundleState::ErrApplied, "", &[], &[]);
        assert_eq!(
            ready_message(&s2, "Bundle"),
            "ErrApplied(1) [Bundle ns/y]; Modified(1) [Bundle ns/x: boom]; deployment.apps n/d missing"
        );
        assert_eq!(summary_state(&s2), Some(BundleState::ErrApplied));
        assert_eq!(ready_message(&BundleSummary::default(), "Bundle"), "");
        assert_eq!(cluster_display_state(&s2, false), "WaitCheckIn");
        assert_eq!(cluster_display_state(&BundleSummary::default(), true), "");
        assert_eq!(
            cluster_group_ready(1, 3, &["a".into(), "b".into()]),
            "1/3 (a, b)"
        );
    }

    #[test]
    fn non_ready_strings() {
        let mut n = NonReadyStatus {
            kind: "Pod".into(),
            api_version: "v1".into(),
            namespace: "ns".into(),
            name: "p".into(),
            ..Default::default()
        };
        n.summary.state = "running".into();
        assert_eq!(non_ready_string(&n), "pod.v1 ns/p running");
        n.summary.transitioning = true;
        n.summary.error = true;
        n.summary.message = vec!["a".into(), "b".into()];
        assert_eq!(non_ready_string(&n), "pod.v1 ns/p [progressing,error] a, b");
    }
}
