//! The agent's apply flow: create with the last-applied annotation, then apply a changed configuration
//! with `apply::patch_for`; kubectl's bookkeeping (annotation, patch flavour) is reproduced.

use fleet_patch::apply::{self, LAST_APPLIED_ANNOTATION, PatchKind};
use serde_json::{Value, json};

fn config_v1() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "web", "namespace": "default"},
           "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
                        {"name": "web", "image": "nginx:1", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                         "ports": [{"containerPort": 80}]}]}}}})
}

#[test]
fn annotation_is_kubectl_format() {
    let created = apply::with_last_applied(&config_v1()).expect("annotate");
    let text = created["metadata"]["annotations"][LAST_APPLIED_ANNOTATION]
        .as_str()
        .expect("annotation string");
    assert!(
        text.ends_with('\n'),
        "kubectl's encoder ends with a newline"
    );
    assert!(
        text.starts_with(r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":{},"name":"web","namespace":"default"},"spec":{"replicas":1,"#),
        "{text}"
    );
    let parsed = apply::last_applied(&created)
        .expect("parse")
        .expect("present");
    let mut want = config_v1();
    want["metadata"]["annotations"] = json!({});
    assert_eq!(parsed, want);
    // Re-annotating replaces the old annotation instead of nesting it.
    let again = apply::with_last_applied(&created).expect("annotate again");
    assert_eq!(again, created);
}

#[test]
fn apply_flow_built_in_kind() {
    let mut live = apply::with_last_applied(&config_v1()).expect("annotate");
    live["metadata"]["uid"] = json!("u-1");
    live["metadata"]["labels"] = json!({"owner": "someone-else"});
    live["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] = json!("IfNotPresent");
    live["spec"]["template"]["spec"]["containers"][0]["ports"][0]["protocol"] = json!("TCP");

    let mut v2 = config_v1();
    v2["spec"]["template"]["spec"]["containers"] = json!([
        {"name": "web", "image": "nginx:1", "env": [{"name": "A", "value": "1"}], "ports": [{"containerPort": 8080}]},
        {"name": "sidecar", "image": "busybox"}]);
    let (kind, patch) = apply::patch_for(&live, &v2).expect("patch");
    assert_eq!(kind, PatchKind::Strategic);
    assert_eq!(
        kind.content_type(),
        "application/strategic-merge-patch+json"
    );
    let result = apply::apply_patch(&live, kind, &patch).expect("apply");
    assert_eq!(
        result["spec"]["template"]["spec"]["containers"],
        json!([{"name": "web", "image": "nginx:1", "imagePullPolicy": "IfNotPresent",
                "env": [{"name": "A", "value": "1"}], "ports": [{"containerPort": 8080}]},
               {"name": "sidecar", "image": "busybox"}])
    );
    assert_eq!(
        result["metadata"]["labels"],
        json!({"owner": "someone-else"})
    );
    assert_eq!(result["metadata"]["uid"], json!("u-1"));
    let mut want_annotation = v2.clone();
    want_annotation["metadata"]["annotations"] = json!({});
    assert_eq!(
        apply::last_applied(&result).expect("parse"),
        Some(want_annotation)
    );
    // Applying the same configuration again is a no-op.
    let (_, again) = apply::patch_for(&result, &v2).expect("patch");
    assert_eq!(again, json!({}));
}

#[test]
fn apply_flow_custom_resource_uses_merge_patch() {
    let v1 = json!({"apiVersion": "fleet.cattle.io/v1alpha1", "kind": "GitRepo",
                    "metadata": {"name": "r", "namespace": "fleet-local"},
                    "spec": {"repo": "https://x", "paths": ["a", "b"], "branch": "main"}});
    let mut live = apply::with_last_applied(&v1).expect("annotate");
    live["status"] = json!({"ready": true});
    let v2 = json!({"apiVersion": "fleet.cattle.io/v1alpha1", "kind": "GitRepo",
                    "metadata": {"name": "r", "namespace": "fleet-local"},
                    "spec": {"repo": "https://x", "paths": ["c"]}});
    let (kind, patch) = apply::patch_for(&live, &v2).expect("patch");
    assert_eq!(kind, PatchKind::Merge);
    let result = apply::apply_patch(&live, kind, &patch).expect("apply");
    assert_eq!(result["spec"], json!({"repo": "https://x", "paths": ["c"]}));
    assert_eq!(result["status"], json!({"ready": true}));
}

#[test]
fn broken_annotation_is_a_clear_error() {
    let mut live = config_v1();
    live["metadata"]["annotations"] = json!({LAST_APPLIED_ANNOTATION: "{not json"});
    let err = apply::patch_for(&live, &config_v1()).expect_err("broken annotation");
    assert!(
        err.to_string()
            .contains("/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration"),
        "{err}"
    );
}
