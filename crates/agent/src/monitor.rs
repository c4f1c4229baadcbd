//! Monitor (upstream `updatestatus.go`): compares the objects of the current release with what
//! is live downstream and turns that into BundleDeployment status: `ready`, `nonModified`,
//! `nonReadyStatus`, `modifiedStatus`, `resources`, `resourceCounts` and the conditions, each
//! condition's timestamps kept unless it changes, so an unchanged cluster gives an unchanged
//! status (and no write).

use std::sync::Arc;

use fleet_api::{
    BundleDeploymentOptions, BundleDeploymentResource, BundleDeploymentStatus, Condition,
    ModifiedStatus, NonReadyStatus, ResourceCounts,
};
use fleet_patch::json::ReadPointer as _;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::Value;

use crate::deploy::owner_of;
use crate::drift::{LiveCache, Seen};
use crate::objects::{Downstream, ObjRef};

/// Lists in status are truncated to this many entries (`incompleteState` says so).
pub const MAX_LISTED: usize = 10;

/// What the monitor found.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Observed {
    /// Objects not ready.
    pub non_ready: Vec<NonReadyStatus>,
    /// Objects missing or different from desired.
    pub modified: Vec<ModifiedStatus>,
    /// Objects that exist.
    pub resources: Vec<BundleDeploymentResource>,
    /// Counts per state.
    pub counts: ResourceCounts,
}

/// Observes the release's objects downstream (`objects` as applied, from the release record).
/// Live objects come from the first of `caches` that knows them (see [`LiveCache::lookup`]),
/// else from a GET; pass none right after writing downstream when nothing newer is known.
/// `previous` are the objects of the release before (upstream reports an object as `delete`
/// only if the previous release had it): those still live, still this release's and no longer
/// desired are listed as extra.
pub async fn observe(
    ds: &Downstream,
    caches: &[&LiveCache],
    objects: &[Value],
    previous: &[Value],
    release: (&str, &str),
    opts: &BundleDeploymentOptions,
) -> Result<Observed, kube::Error> {
    let ignore = opts
        .ignore
        .as_ref()
        .map(|i| i.conditions.clone())
        .unwrap_or_default();
    let patches = opts
        .diff
        .as_ref()
        .map(|d| d.compare_patches.clone())
        .unwrap_or_default();
    let mut ob = Observed::default();
    for desired in objects {
        let Some(r) = ObjRef::of(desired) else {
            continue;
        };
        ob.counts.desired_ready += 1;
        let modified = |missing: bool, exist: bool, patch: String| ModifiedStatus {
            kind: r.kind.clone(),
            api_version: r.api_version.clone(),
            namespace: r.namespace.clone(),
            name: r.name.clone(),
            missing,
            exist,
            delete: false,
            patch,
        };
        let live = match seen(caches, &r) {
            Seen::Present(v) => Some(v),
            Seen::Absent | Seen::Unknown => ds.get(&r).await?.map(Arc::new),
        };
        let Some(live) = live else {
            ob.counts.missing += 1;
            ob.modified.push(modified(true, false, String::new()));
            continue;
        };
        let created_at = live
            .at("/metadata/creationTimestamp")
            .and_then(|t| serde_json::from_value::<Time>(t.clone()).ok());
        ob.resources.push(BundleDeploymentResource {
            kind: r.kind.clone(),
            api_version: r.api_version.clone(),
            namespace: r.namespace.clone(),
            name: r.name.clone(),
            created_at,
        });
        let (owner, owner_ns) = owner_of(&live);
        if (owner.as_str(), owner_ns.as_str()) != (release.0, release.1) {
            ob.counts.missing += 1;
            ob.modified.push(modified(true, true, String::new()));
            continue;
        }
        let ignore_ptrs = crate::diff::ignored_pointers(&patches, &r);
        if let Some(p) = crate::diff::drift(desired, &live, &ignore_ptrs) {
            ob.counts.modified += 1;
            ob.modified.push(modified(false, false, p.to_string()));
            continue;
        }
        if let Some(summary) = crate::readiness::not_ready(&live, &ignore) {
            ob.counts.not_ready += 1;
            ob.non_ready.push(NonReadyStatus {
                uid: live
                    .at("/metadata/uid")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                kind: r.kind.clone(),
                api_version: r.api_version.clone(),
                namespace: r.namespace.clone(),
                name: r.name.clone(),
                summary,
            });
            continue;
        }
        ob.counts.ready += 1;
    }
    for old in previous {
        let Some(r) = ObjRef::of(old) else {
            continue;
        };
        if objects.iter().any(|o| ObjRef::of(o).as_ref() == Some(&r)) {
            continue;
        }
        let live = match seen(caches, &r) {
            Seen::Present(v) => Some(v),
            Seen::Absent => None,
            Seen::Unknown => ds.get(&r).await?.map(Arc::new),
        };
        let Some(live) = live else {
            continue;
        };
        let (owner, owner_ns) = owner_of(&live);
        if (owner.as_str(), owner_ns.as_str()) != (release.0, release.1) {
            continue;
        }
        ob.counts.orphaned += 1;
        ob.modified.push(ModifiedStatus {
            kind: r.kind.clone(),
            api_version: r.api_version.clone(),
            namespace: r.namespace.clone(),
            name: r.name.clone(),
            delete: true,
            ..Default::default()
        });
    }
    Ok(ob)
}

/// What the first cache that knows `r` says of it.
fn seen(caches: &[&LiveCache], r: &ObjRef) -> Seen {
    for c in caches {
        match c.lookup(r) {
            Seen::Unknown => continue,
            known => return known,
        }
    }
    Seen::Unknown
}

/// Sets a condition, keeping its timestamps when nothing about it changed (wrangler's rules:
/// `lastUpdateTime` on any change, `lastTransitionTime` when the status flips).
pub fn set_condition(conds: &mut Vec<Condition>, type_: &str, ok: bool, message: &str) {
    let status = if ok { "True" } else { "False" };
    let now = jiff::Timestamp::now()
        .round(jiff::Unit::Second)
        .unwrap_or_else(|_| jiff::Timestamp::now())
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    match conds.iter_mut().find(|c| c.type_ == type_) {
        Some(c) => {
            if c.status == status && c.message == message {
                return;
            }
            if c.status != status {
                c.last_transition_time = now.clone();
            }
            c.status = status.into();
            c.message = message.into();
            c.reason = if ok { String::new() } else { "Error".into() };
            c.last_update_time = now;
        }
        None => conds.push(Condition {
            type_: type_.into(),
            status: status.into(),
            last_update_time: now.clone(),
            last_transition_time: now,
            reason: if ok { String::new() } else { "Error".into() },
            message: message.into(),
        }),
    }
}

/// Folds an observation into a status (upstream's Monitor and `readyError`).
pub fn apply_observation(st: &mut BundleDeploymentStatus, ob: &Observed) {
    st.ready = ob.non_ready.is_empty() && ob.counts.missing == 0;
    st.non_modified = ob.modified.is_empty();
    st.incomplete_state = ob.non_ready.len() > MAX_LISTED || ob.modified.len() > MAX_LISTED;
    st.non_ready_status = ob.non_ready.iter().take(MAX_LISTED).cloned().collect();
    st.modified_status = ob.modified.iter().take(MAX_LISTED).cloned().collect();
    st.resources = ob.resources.clone();
    st.resource_counts = ob.counts.clone();
    let msg = if !st.ready {
        st.non_ready_status
            .first()
            .map(fleet_targeting::status::non_ready_string)
            .or_else(|| {
                st.modified_status
                    .first()
                    .map(fleet_targeting::status::modified_string)
            })
            .unwrap_or_else(|| "not ready".into())
    } else if !st.non_modified {
        st.modified_status
            .first()
            .map(fleet_targeting::status::modified_string)
            .unwrap_or_else(|| "out of sync".into())
    } else {
        String::new()
    };
    set_condition(&mut st.conditions, "Monitored", true, "");
    set_condition(&mut st.conditions, "Ready", msg.is_empty(), &msg);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_keep_timestamps_when_unchanged() {
        let mut c = Vec::new();
        set_condition(&mut c, "Ready", false, "x");
        c[0].last_update_time = "old".into();
        let before = c.clone();
        set_condition(&mut c, "Ready", false, "x");
        assert_eq!(c, before);
        set_condition(&mut c, "Ready", true, "");
        assert_ne!(c[0].last_update_time, "old");
        assert_eq!(c[0].status, "True");
    }

    #[test]
    fn modified_objects_make_ready_false_with_upstream_wording() {
        let mut st = BundleDeploymentStatus::default();
        let ob = Observed {
            modified: vec![ModifiedStatus {
                kind: "ConfigMap".into(),
                api_version: "v1".into(),
                namespace: "n".into(),
                name: "c".into(),
                patch: r#"{"data":{"k":"v"}}"#.into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        apply_observation(&mut st, &ob);
        assert!(st.ready && !st.non_modified);
        let ready = st.conditions.iter().find(|c| c.type_ == "Ready").unwrap();
        assert_eq!(
            ready.message,
            r#"configmap.v1 n/c modified {"data":{"k":"v"}}"#
        );
    }
}
