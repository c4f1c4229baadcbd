//! Two-way diff and kubectl-apply style three-way patches, checked by applying them to the live object.

use fleet_patch::strategic::{self, Schema};
use serde_json::{Value, json};

fn deploy_schema() -> Schema {
    strategic::schema_for("apps/v1", "Deployment").expect("Deployment schema")
}

fn deployment(containers: Value) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": containers}}
        }
    })
}

/// The live object as kube-apiserver would hold it after creating `config`: defaults filled in and a
/// label plus annotation set by another actor.
fn live_from(config: &Value) -> Value {
    let mut live = config.clone();
    live["metadata"]["uid"] = json!("1234");
    live["metadata"]["labels"]["team"] = json!("payments");
    live["metadata"]["annotations"] = json!({"deployment.kubernetes.io/revision": "1"});
    live["spec"]["strategy"] = json!({"type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}});
    live["spec"]["template"]["spec"]["restartPolicy"] = json!("Always");
    if let Some(cs) = live["spec"]["template"]["spec"]["containers"].as_array_mut() {
        for c in cs {
            c["imagePullPolicy"] = json!("IfNotPresent");
            if let Some(ps) = c.get_mut("ports").and_then(Value::as_array_mut) {
                for p in ps {
                    p["protocol"] = json!("TCP");
                }
            }
        }
    }
    live["status"] =
        json!({"replicas": 2, "conditions": [{"type": "Available", "status": "True"}]});
    live
}

/// The kubectl apply scenario of the integration test: a container added, an env var removed and a port
/// changed. Documented semantics: containers merged by name, ports by containerPort, removed fields gone,
/// fields set by others kept.
#[test]
fn kubectl_apply_add_container_remove_env_change_port() {
    let v1 = deployment(json!([{"name": "web", "image": "nginx:1.25",
        "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
        "ports": [{"containerPort": 80}]}]));
    let live = live_from(&v1);
    let v2 = deployment(json!([
        {"name": "web", "image": "nginx:1.25", "env": [{"name": "A", "value": "1"}],
         "ports": [{"containerPort": 8080}]},
        {"name": "sidecar", "image": "busybox", "args": ["sleep", "3600"]}]));
    let patch = strategic::three_way(Some(&v1), &v2, &live, deploy_schema()).expect("three-way");
    let result = strategic::apply(&live, &patch, deploy_schema()).expect("apply");

    let containers = &result["spec"]["template"]["spec"]["containers"];
    assert_eq!(
        containers,
        &json!([
            {"name": "web", "image": "nginx:1.25", "imagePullPolicy": "IfNotPresent",
             "env": [{"name": "A", "value": "1"}], "ports": [{"containerPort": 8080}]},
            {"name": "sidecar", "image": "busybox", "args": ["sleep", "3600"]}
        ]),
        "patch was {patch}"
    );
    // Fields set by others survive.
    assert_eq!(
        result["metadata"]["labels"],
        json!({"app": "web", "team": "payments"})
    );
    assert_eq!(result["metadata"]["uid"], json!("1234"));
    assert_eq!(result["spec"]["strategy"], live["spec"]["strategy"]);
    assert_eq!(result["status"], live["status"]);
    assert_eq!(
        result["spec"]["template"]["spec"]["restartPolicy"],
        json!("Always")
    );
}

/// Re-applying an unchanged configuration sends an empty patch even though the live object carries
/// defaults (kubectl apply reports "unchanged").
#[test]
fn kubectl_apply_unchanged_is_empty_patch() {
    let v1 = deployment(json!([{"name": "web", "image": "nginx",
        "env": [{"name": "A", "value": "1"}], "ports": [{"containerPort": 80}]}]));
    let live = live_from(&v1);
    let patch = strategic::three_way(Some(&v1), &v1, &live, deploy_schema()).expect("three-way");
    assert_eq!(patch, json!({}));
}

/// A field removed from the configuration is deleted; one never in the configuration (set by others) is
/// not, and a field changed by others but still in the configuration is reset to the configuration.
#[test]
fn three_way_deletes_only_what_last_applied_had() {
    let mut v1 = deployment(json!([{"name": "web", "image": "nginx"}]));
    v1["metadata"]["labels"]["tier"] = json!("frontend");
    let mut live = live_from(&v1);
    live["spec"]["replicas"] = json!(5);
    let v2 = deployment(json!([{"name": "web", "image": "nginx"}]));
    let patch = strategic::three_way(Some(&v1), &v2, &live, deploy_schema()).expect("three-way");
    assert_eq!(
        patch,
        json!({"metadata": {"labels": {"tier": null}}, "spec": {"replicas": 2}})
    );
    let result = strategic::apply(&live, &patch, deploy_schema()).expect("apply");
    assert_eq!(
        result["metadata"]["labels"],
        json!({"app": "web", "team": "payments"})
    );
    assert_eq!(result["spec"]["replicas"], json!(2));
}

/// Without a last-applied configuration nothing is deleted (kubectl apply on an object created by
/// `kubectl create`).
#[test]
fn three_way_without_original_never_deletes() {
    let v1 = deployment(
        json!([{"name": "web", "image": "nginx", "env": [{"name": "A", "value": "1"}]}]),
    );
    let live = live_from(&v1);
    let v2 = deployment(json!([{"name": "web", "image": "nginx:2"}]));
    let patch = strategic::three_way(None, &v2, &live, deploy_schema()).expect("three-way");
    let result = strategic::apply(&live, &patch, deploy_schema()).expect("apply");
    let web = &result["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(web["image"], json!("nginx:2"));
    assert_eq!(web["env"], json!([{"name": "A", "value": "1"}]));
}

/// Switching the deployment strategy to Recreate clears the defaulted rollingUpdate through the
/// `$retainKeys` directive (DeploymentStrategy's retainKeys patch strategy).
#[test]
fn three_way_strategy_switch_uses_retain_keys() {
    let v1 = deployment(json!([{"name": "web", "image": "nginx"}]));
    let live = live_from(&v1);
    let mut v2 = v1.clone();
    v2["spec"]["strategy"] = json!({"type": "Recreate"});
    let patch = strategic::three_way(Some(&v1), &v2, &live, deploy_schema()).expect("three-way");
    assert_eq!(
        patch["spec"]["strategy"],
        json!({"type": "Recreate", "$retainKeys": ["type"]})
    );
    let result = strategic::apply(&live, &patch, deploy_schema()).expect("apply");
    assert_eq!(result["spec"]["strategy"], json!({"type": "Recreate"}));
}

/// Documented two-way diff output: changed container fields carry the merge key, removed items become
/// `$patch: delete`, and `$setElementOrder` records the new order.
#[test]
fn two_way_diff_shape() {
    let schema = strategic::schema_for("v1", "Pod").expect("Pod schema");
    let a = json!({"spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "1"}]},
                   "metadata": {"finalizers": ["x", "y"]}});
    let b = json!({"spec": {"containers": [{"name": "a", "image": "2"}]},
                   "metadata": {"finalizers": ["y", "z"]}});
    let patch = strategic::diff(&a, &b, schema).expect("diff");
    assert_eq!(
        patch,
        json!({
            "spec": {
                "containers": [{"name": "a", "image": "2"}, {"name": "b", "$patch": "delete"}],
                "$setElementOrder/containers": [{"name": "a"}]
            },
            "metadata": {
                "finalizers": ["z"],
                "$deleteFromPrimitiveList/finalizers": ["x"],
                "$setElementOrder/finalizers": ["y", "z"]
            }
        })
    );
    assert_eq!(strategic::apply(&a, &patch, schema).expect("apply"), b);
}

/// Identical documents diff to an empty patch.
#[test]
fn two_way_diff_identical_is_empty() {
    let d =
        deployment(json!([{"name": "web", "image": "nginx", "ports": [{"containerPort": 80}]}]));
    assert_eq!(
        strategic::diff(&d, &d, deploy_schema()).expect("diff"),
        json!({})
    );
}

/// Volumes carry `merge,retainKeys`: a changed volume source is diffed with `$retainKeys`.
#[test]
fn two_way_diff_volume_source_switch() {
    let schema = strategic::schema_for("v1", "Pod").expect("Pod schema");
    let a = json!({"spec": {"volumes": [{"name": "v", "emptyDir": {}}]}});
    let b = json!({"spec": {"volumes": [{"name": "v", "configMap": {"name": "cm"}}]}});
    let patch = strategic::diff(&a, &b, schema).expect("diff");
    assert_eq!(
        patch,
        json!({"spec": {"volumes": [{"name": "v", "configMap": {"name": "cm"}, "emptyDir": null,
            "$retainKeys": ["configMap", "name"]}],
            "$setElementOrder/volumes": [{"name": "v"}]}})
    );
    assert_eq!(strategic::apply(&a, &patch, schema).expect("apply"), b);
}

/// Custom resources: the JSON merge patch three-way path keeps fields others set and deletes only what
/// the last-applied configuration had.
#[test]
fn merge_patch_three_way_for_custom_resources() {
    let v1 = json!({"apiVersion": "x.io/v1", "kind": "Thing", "metadata": {"name": "t"},
                    "spec": {"a": 1, "b": 2, "list": [1, 2]}});
    let mut live = v1.clone();
    live["spec"]["c"] = json!(3);
    live["status"] = json!({"ok": true});
    let v2 = json!({"apiVersion": "x.io/v1", "kind": "Thing", "metadata": {"name": "t"},
                    "spec": {"a": 10, "list": [3]}});
    let patch = fleet_patch::merge::three_way(Some(&v1), &v2, &live).expect("three-way");
    assert_eq!(patch, json!({"spec": {"a": 10, "b": null, "list": [3]}}));
    let result = fleet_patch::merge::apply(&live, &patch).expect("apply");
    assert_eq!(
        result,
        json!({"apiVersion": "x.io/v1", "kind": "Thing", "metadata": {"name": "t"},
               "spec": {"a": 10, "list": [3], "c": 3}, "status": {"ok": true}})
    );
}

/// RFC 7386 examples: null removes, objects merge, arrays replace.
#[test]
fn merge_patch_rfc7386() {
    let doc = json!({"title": "Goodbye!", "author": {"givenName": "John", "familyName": "Doe"},
                     "tags": ["example", "sample"], "content": "This will be unchanged"});
    let patch = json!({"title": "Hello!", "phoneNumber": "+01-123-456-7890",
                       "author": {"familyName": null}, "tags": ["example"]});
    let want = json!({"title": "Hello!", "author": {"givenName": "John"}, "tags": ["example"],
                      "content": "This will be unchanged", "phoneNumber": "+01-123-456-7890"});
    assert_eq!(
        fleet_patch::merge::apply(&doc, &patch).expect("apply"),
        want
    );
    let d = fleet_patch::merge::diff(&doc, &want).expect("diff");
    assert_eq!(
        fleet_patch::merge::apply(&doc, &d).expect("apply diff"),
        want
    );
}

/// RFC 6902: operations apply atomically; a failing `test` names the operation and path.
#[test]
fn json_patch_apply_and_errors() {
    let doc = json!({"spec": {"replicas": 1, "list": ["a"]}});
    let ok = json!([
        {"op": "replace", "path": "/spec/replicas", "value": 3},
        {"op": "add", "path": "/spec/list/-", "value": "b"}
    ]);
    assert_eq!(
        fleet_patch::json::apply(&doc, &ok).expect("apply"),
        json!({"spec": {"replicas": 3, "list": ["a", "b"]}})
    );
    let bad = json!([
        {"op": "add", "path": "/spec/x", "value": 1},
        {"op": "test", "path": "/spec/replicas", "value": 2}
    ]);
    let err = fleet_patch::json::apply(&doc, &bad).expect_err("test op fails");
    let msg = err.to_string();
    assert!(
        msg.contains("operation 1") && msg.contains("/spec/replicas"),
        "{msg}"
    );
    let not_patch = json!({"op": "add"});
    assert!(fleet_patch::json::apply(&doc, &not_patch).is_err());
    let d = fleet_patch::json::diff(&doc, &json!({"spec": {"replicas": 4}}));
    assert_eq!(
        fleet_patch::json::apply(&doc, &d).expect("apply diff"),
        json!({"spec": {"replicas": 4}})
    );
}
