//! Per-kind readiness of a live object, in the manner of upstream's summarizers: what makes a
//! Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, Pod, PVC, LoadBalancer Service, CRD or
//! APIService ready, plus the generic rule that a `Ready=False` condition means not ready.
//! Conditions matching an `ignore.conditions` entry are not looked at.

use std::collections::BTreeMap;

use fleet_api::Summary;
use fleet_patch::json::ReadPointer as _;
use serde_json::Value;

fn i(o: &Value, p: &str) -> i64 {
    o.at(p).and_then(Value::as_i64).unwrap_or(0)
}

fn conditions<'a>(o: &'a Value, ignore: &[BTreeMap<String, String>]) -> Vec<&'a Value> {
    o.at("/status/conditions")
        .and_then(Value::as_array)
        .map(|cs| {
            cs.iter()
                .filter(|c| {
                    !ignore.iter().any(|m| {
                        !m.is_empty()
                            && m.iter()
                                .all(|(k, v)| c.get(k).and_then(Value::as_str) == Some(v))
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

fn cond<'a>(cs: &[&'a Value], t: &str) -> Option<&'a Value> {
    cs.iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(t))
        .copied()
}

fn cond_status(cs: &[&Value], t: &str) -> Option<String> {
    cond(cs, t).and_then(|c| c.get("status").and_then(Value::as_str).map(str::to_string))
}

fn cond_message(c: Option<&Value>) -> Vec<String> {
    c.and_then(|c| c.get("message").and_then(Value::as_str))
        .filter(|m| !m.is_empty())
        .map(|m| vec![m.to_string()])
        .unwrap_or_default()
}

fn progressing(msg: Vec<String>) -> Option<Summary> {
    Some(Summary {
        state: "in-progress".into(),
        transitioning: true,
        message: msg,
        ..Default::default()
    })
}

fn error(msg: Vec<String>) -> Option<Summary> {
    Some(Summary {
        state: "error".into(),
        error: true,
        message: msg,
        ..Default::default()
    })
}

/// The object's summary when it is not ready; None when it is ready.
pub fn not_ready(o: &Value, ignore: &[BTreeMap<String, String>]) -> Option<Summary> {
    let kind = o.get("kind").and_then(Value::as_str).unwrap_or("");
    let api_version = o.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let cs = conditions(o, ignore);
    let stale = i(o, "/metadata/generation") > i(o, "/status/observedGeneration")
        && o.at("/status/observedGeneration").is_some();
    let want = |p: &str| o.at(p).and_then(Value::as_i64).unwrap_or(1);
    match (api_version, kind) {
        ("apps/v1", "Deployment") => {
            if cond_status(&cs, "Progressing").as_deref() == Some("False") {
                return error(cond_message(cond(&cs, "Progressing")));
            }
            let replicas = want("/spec/replicas");
            if stale
                || i(o, "/status/updatedReplicas") < replicas
                || i(o, "/status/availableReplicas") < replicas
            {
                let mut m = cond_message(cond(&cs, "Available"));
                if m.is_empty() {
                    m.push(format!(
                        "Deployment does not have minimum availability ({}/{} available)",
                        i(o, "/status/availableReplicas"),
                        replicas
                    ));
                }
                return progressing(m);
            }
            None
        }
        ("apps/v1", "StatefulSet") => {
            let replicas = want("/spec/replicas");
            if stale
                || i(o, "/status/readyReplicas") < replicas
                || i(o, "/status/updatedReplicas") < replicas
            {
                return progressing(vec![format!(
                    "StatefulSet {}/{} ready",
                    i(o, "/status/readyReplicas"),
                    replicas
                )]);
            }
            None
        }
        ("apps/v1", "DaemonSet") => {
            let desired = i(o, "/status/desiredNumberScheduled");
            if stale
                || o.at("/status/desiredNumberScheduled").is_none()
                || i(o, "/status/numberReady") < desired
                || i(o, "/status/updatedNumberScheduled") < desired
            {
                return progressing(vec![format!(
                    "DaemonSet {}/{} ready",
                    i(o, "/status/numberReady"),
                    desired
                )]);
            }
            None
        }
        ("apps/v1", "ReplicaSet") => {
            let replicas = want("/spec/replicas");
            if stale || i(o, "/status/readyReplicas") < replicas {
                return progressing(vec![format!(
                    "ReplicaSet {}/{} ready",
                    i(o, "/status/readyReplicas"),
                    replicas
                )]);
            }
            None
        }
        ("batch/v1", "Job") => {
            if cond_status(&cs, "Failed").as_deref() == Some("True") {
                return error(cond_message(cond(&cs, "Failed")));
            }
            if cond_status(&cs, "Complete").as_deref() != Some("True") {
                return progressing(vec!["Job is not complete".into()]);
            }
            None
        }
        ("v1", "Pod") => {
            let phase = o.at("/status/phase").and_then(Value::as_str);
            match phase {
                Some("Succeeded") => None,
                Some("Failed") => error(vec![format!("Pod phase is Failed")]),
                _ if cond_status(&cs, "Ready").as_deref() == Some("True") => None,
                _ => progressing(cond_message(cond(&cs, "Ready"))),
            }
        }
        ("v1", "PersistentVolumeClaim") => {
            if o.at("/status/phase").and_then(Value::as_str) == Some("Bound") {
                None
            } else {
                Some(Summary {
                    state: "pending".into(),
                    transitioning: true,
                    ..Default::default()
                })
            }
        }
        ("v1", "Service") => {
            let lb = o.at("/spec/type").and_then(Value::as_str) == Some("LoadBalancer");
            let has_ingress = o
                .at("/status/loadBalancer/ingress")
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty());
            if lb && !has_ingress {
                return progressing(vec!["Service is waiting for a load balancer".into()]);
            }
            None
        }
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition") => {
            if cond_status(&cs, "Established").as_deref() != Some("True") {
                return progressing(cond_message(cond(&cs, "Established")));
            }
            None
        }
        ("apiregistration.k8s.io/v1", "APIService") => {
            if cond_status(&cs, "Available").as_deref() != Some("True") {
                return progressing(cond_message(cond(&cs, "Available")));
            }
            None
        }
        _ => {
            if cond_status(&cs, "Ready").as_deref() == Some("False") {
                return progressing(cond_message(cond(&cs, "Ready")));
            }
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn per_kind_rules() {
        let dep = |avail: i64| {
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"generation": 1},
                   "spec": {"replicas": 2},
                   "status": {"observedGeneration": 1, "updatedReplicas": 2, "availableReplicas": avail}})
        };
        assert!(not_ready(&dep(2), &[]).is_none());
        let s = not_ready(&dep(1), &[]).unwrap();
        assert!(s.transitioning && s.state == "in-progress", "{s:?}");
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}});
        assert!(not_ready(&cm, &[]).is_none());
        let lb = json!({"apiVersion": "v1", "kind": "Service", "spec": {"type": "LoadBalancer"}});
        assert!(not_ready(&lb, &[]).is_some());
        let pvc = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "status": {"phase": "Bound"}});
        assert!(not_ready(&pvc, &[]).is_none());
        let job = json!({"apiVersion": "batch/v1", "kind": "Job", "status": {"conditions": [{"type": "Failed", "status": "True", "message": "BackoffLimitExceeded"}]}});
        assert!(not_ready(&job, &[]).unwrap().error);
    }

    #[test]
    fn ignored_conditions_do_not_count() {
        let o = json!({"apiVersion": "example.com/v1", "kind": "Thing",
            "status": {"conditions": [{"type": "Ready", "status": "False", "message": "waiting"}]}});
        assert_eq!(
            not_ready(&o, &[]).unwrap().message,
            vec!["waiting".to_string()]
        );
        let ignore = vec![BTreeMap::from([
            ("type".to_string(), "Ready".to_string()),
            ("status".to_string(), "False".to_string()),
        ])];
        assert!(not_ready(&o, &ignore).is_none());
    }
}
