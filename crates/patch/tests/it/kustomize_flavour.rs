//! `strategic::apply_kustomize`: the results real kustomize v4.5.4 printed for these inputs (see
//! kustomize_oracle.rs for the live comparison), checked without needing the binary.

use fleet_patch::strategic;
use serde_json::json;

#[test]
fn kustomize_orders_patch_items_first_and_removes_deleted_maps() {
    let schema = strategic::schema_for("apps/v1", "Deployment").expect("schema");
    let original = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "annotations": {"x": "1"}, "finalizers": ["a", "b", "c"]},
        "spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
                 "template": {"spec": {"containers": [
                    {"name": "a", "image": "x"},
                    {"name": "b", "image": "1", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]},
                    {"name": "c"}]}}}
    });
    let patch = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "annotations": {"$patch": "delete"}, "finalizers": ["d"]},
        "spec": {"strategy": {"type": "Recreate", "rollingUpdate": null},
                 "template": {"spec": {"containers": [
                    {"name": "b", "image": "2", "env": [{"name": "A", "$patch": "delete"}, {"name": "C", "value": "3"}]},
                    {"name": "z", "image": "new"}]}}}
    });
    let got = strategic::apply_kustomize(&original, &patch, schema).expect("apply");
    assert_eq!(
        got,
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "finalizers": ["d", "a", "b", "c"]},
            "spec": {"strategy": {"type": "Recreate"},
                     "template": {"spec": {"containers": [
                        {"name": "b", "image": "2", "env": [{"name": "C", "value": "3"}, {"name": "B", "value": "2"}]},
                        {"name": "z", "image": "new"},
                        {"name": "a", "image": "x"},
                        {"name": "c"}]}}}
        })
    );
    // kube-apiserver semantics differ: existing items keep their place, the deleted map stays empty.
    let api = strategic::apply(&original, &patch, schema).expect("apply");
    assert_eq!(api["metadata"]["annotations"], json!({}));
    assert_eq!(
        api["spec"]["template"]["spec"]["containers"],
        json!([{"name": "a", "image": "x"},
               {"name": "b", "image": "2", "env": [{"name": "C", "value": "3"}, {"name": "B", "value": "2"}]},
               {"name": "z", "image": "new"},
               {"name": "c"}])
    );
}

#[test]
fn kustomize_keeps_port_when_patch_omits_protocol() {
    let schema = strategic::schema_for("v1", "Service").expect("schema");
    let original = json!({"spec": {"ports": [{"port": 80, "protocol": "TCP", "targetPort": 8080},
                                              {"port": 81, "targetPort": 8081}]}});
    let patch = json!({"spec": {"ports": [{"port": 80, "targetPort": 9090}, {"port": 81, "targetPort": 9091}]}});
    let got = strategic::apply_kustomize(&original, &patch, schema).expect("apply");
    assert_eq!(
        got,
        json!({"spec": {"ports": [{"port": 80, "protocol": "TCP", "targetPort": 8080},
                                  {"port": 81, "targetPort": 9091}]}})
    );
}
