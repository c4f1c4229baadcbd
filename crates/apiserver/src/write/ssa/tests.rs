//! Apply and update semantics on whole objects.

use serde_json::{Value, json};

use super::*;

fn info(kind: &str) -> ResourceInfo {
    crate::storage::builtin::builtin_resources()
        .into_iter()
        .find(|r| r.kind == kind)
        .expect("built in")
}

fn deploy(replicas: i64, labels: Value, containers: Value) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "ns", "labels": labels},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "x"}},
            "template": {"metadata": {"labels": {"app": "x"}},
                "spec": {"containers": containers}}}
    })
}

fn fields_of<'a>(obj: &'a Value, manager: &str) -> &'a Value {
    obj["metadata"]["managedFields"]
        .as_array()
        .and_then(|a| a.iter().find(|e| e["manager"] == manager))
        .map(|e| &e["fieldsV1"])
        .unwrap_or(&Value::Null)
}

#[test]
fn first_apply_creates_an_apply_entry_with_kubernetes_fields() {
    let i = info("Deployment");
    let cfg = deploy(2, json!({"a": "1"}), json!([{"name": "c", "image": "i"}]));
    let out = apply(&i, None, &cfg, "d", "mgr", false, None).expect("apply");
    let mf = &out["metadata"]["managedFields"][0];
    assert_eq!(mf["manager"], "mgr");
    assert_eq!(mf["operation"], "Apply");
    assert_eq!(mf["apiVersion"], "apps/v1");
    assert_eq!(mf["fieldsType"], "FieldsV1");
    assert!(mf.get("subresource").is_none());
    let f = &mf["fieldsV1"];
    assert_eq!(f["f:metadata"], json!({"f:labels": {"f:a": {}}}));
    assert_eq!(f["f:spec"]["f:replicas"], json!({}));
    assert_eq!(
        f["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"c\"}"],
        json!({".": {}, "f:image": {}, "f:name": {}})
    );
    assert!(f.get("f:apiVersion").is_none() && f.get("f:kind").is_none());
}

#[test]
fn dropped_fields_are_removed_unless_co_owned() {
    let i = info("Deployment");
    let c2 = json!([{"name": "c", "image": "i", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]},
        {"name": "side", "image": "s"}]);
    let first = deploy(2, json!({"a": "1", "b": "2"}), c2);
    let live = apply(&i, None, &first, "d", "mgr", false, None).expect("apply");
    let second = deploy(
        2,
        json!({"a": "1"}),
        json!([{"name": "c", "image": "i", "env": [{"name": "A", "value": "1"}]}]),
    );
    let out = apply(&i, Some(&live), &second, "d", "mgr", false, None).expect("apply");
    assert_eq!(out["metadata"]["labels"], json!({"a": "1"}));
    assert_eq!(
        out["spec"]["template"]["spec"]["containers"],
        json!([{"name": "c", "image": "i", "env": [{"name": "A", "value": "1"}]}])
    );
    // Co-owned by another applier (same value): survives the first manager dropping it.
    let other = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "labels": {"a": "1"}}});
    let out = apply(&i, Some(&out), &other, "d", "other", false, None).expect("co-own");
    let third = deploy(2, json!({}), json!([{"name": "c", "image": "i"}]));
    let out = apply(&i, Some(&out), &third, "d", "mgr", false, None).expect("apply");
    assert_eq!(out["metadata"]["labels"], json!({"a": "1"}));
    assert_eq!(
        out["spec"]["template"]["spec"]["containers"],
        json!([{"name": "c", "image": "i"}])
    );
}

#[test]
fn changing_anothers_field_conflicts_unless_forced() {
    let i = info("Deployment");
    let live = apply(
        &i,
        None,
        &deploy(2, json!({}), json!([{"name": "c", "image": "i"}])),
        "d",
        "mgr",
        false,
        None,
    )
    .expect("apply");
    let change = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d"}, "spec": {"replicas": 5}});
    let err = apply(&i, Some(&live), &change, "d", "other", false, None).expect_err("conflict");
    assert_eq!(err.code, 409);
    assert_eq!(err.reason, "Conflict");
    assert_eq!(
        err.message,
        "Apply failed with 1 conflict: conflict with \"mgr\": .spec.replicas"
    );
    let causes = &err.details.as_ref().expect("details").causes;
    assert_eq!(causes.len(), 1);
    assert_eq!(causes[0].reason, "FieldManagerConflict");
    assert_eq!(causes[0].field, ".spec.replicas");
    assert_eq!(causes[0].message, "conflict with \"mgr\"");
    // The same value is no conflict: both own it.
    let same = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d"}, "spec": {"replicas": 2}});
    let co = apply(&i, Some(&live), &same, "d", "other", false, None).expect("co-own");
    assert_eq!(fields_of(&co, "other")["f:spec"]["f:replicas"], json!({}));
    assert_eq!(fields_of(&co, "mgr")["f:spec"]["f:replicas"], json!({}));
    // Forced: ownership moves.
    let forced = apply(&i, Some(&live), &change, "d", "other", true, None).expect("forced");
    assert_eq!(forced["spec"]["replicas"], 5);
    assert!(
        fields_of(&forced, "mgr")["f:spec"]
            .get("f:replicas")
            .is_none()
    );
    assert_eq!(
        fields_of(&forced, "other")["f:spec"]["f:replicas"],
        json!({})
    );
}

#[test]
fn update_conflicts_name_the_api_version_and_several_fields_group_by_manager() {
    let i = info("Deployment");
    let created = track_update(
        &i,
        None,
        deploy(1, json!({"a": "1"}), json!([{"name": "c", "image": "i"}])),
        "kubectl-create",
        None,
    );
    let mf = &created["metadata"]["managedFields"][0];
    assert_eq!(mf["operation"], "Update");
    assert_eq!(mf["manager"], "kubectl-create");
    let change = deploy(3, json!({"a": "2"}), json!([{"name": "c", "image": "i"}]));
    let err = apply(&i, Some(&created), &change, "d", "mgr", false, None).expect_err("conflict");
    assert_eq!(
        err.message,
        "Apply failed with 2 conflicts: conflicts with \"kubectl-create\" using apps/v1:\n- .metadata.labels.a\n- .spec.replicas"
    );
}

#[test]
fn updates_take_ownership_and_removed_fields_leave_every_manager() {
    let i = info("Deployment");
    let live = apply(
        &i,
        None,
        &deploy(2, json!({"a": "1"}), json!([{"name": "c", "image": "i"}])),
        "mgr",
        "mgr",
        false,
        None,
    );
    // name mismatch: the URL says "mgr"
    assert_eq!(live.expect_err("name").code, 400);
    let live = apply(
        &i,
        None,
        &deploy(2, json!({"a": "1"}), json!([{"name": "c", "image": "i"}])),
        "d",
        "mgr",
        false,
        None,
    )
    .expect("apply");
    let mut edited = live.clone();
    edited["spec"]["replicas"] = json!(7);
    if let Some(m) = edited["metadata"].as_object_mut() {
        m.remove("labels");
    }
    let out = track_update(&i, Some(&live), edited, "kubectl-edit", None);
    assert_eq!(
        fields_of(&out, "kubectl-edit"),
        &json!({"f:spec": {"f:replicas": {}}})
    );
    let mine = fields_of(&out, "mgr");
    assert!(mine["f:spec"].get("f:replicas").is_none());
    assert!(mine.get("f:metadata").is_none(), "{mine}");
    // Clearing with [{}].
    let mut cleared = out.clone();
    cleared["metadata"]["managedFields"] = json!([{}]);
    let out = track_update(&i, Some(&out), cleared, "x", None);
    assert!(out["metadata"].get("managedFields").is_none());
}

#[test]
fn status_writes_record_the_subresource_and_only_status() {
    let i = info("Deployment");
    let live = track_update(
        &i,
        None,
        deploy(1, json!({}), json!([{"name": "c", "image": "i"}])),
        "creator",
        None,
    );
    let mut new = live.clone();
    new["status"] = json!({"replicas": 1});
    new["spec"]["replicas"] = json!(9);
    let out = track_update(&i, Some(&live), new, "ctrl", Some("status"));
    let e = out["metadata"]["managedFields"]
        .as_array()
        .and_then(|a| a.iter().find(|e| e["manager"] == "ctrl"))
        .expect("entry")
        .clone();
    assert_eq!(e["subresource"], "status");
    assert_eq!(e["fieldsV1"], json!({"f:status": {"f:replicas": {}}}));
}

#[test]
fn malformed_configurations_are_4xx() {
    let i = info("Deployment");
    let cases = [
        (json!("string"), 400),
        (json!([1, 2]), 400),
        (
            json!({"kind": "Deployment", "metadata": {"name": "d"}}),
            400,
        ),
        (
            json!({"apiVersion": "v1", "kind": "Deployment", "metadata": {"name": "d"}}),
            400,
        ),
        (
            json!({"apiVersion": "apps/v1", "metadata": {"name": "d"}}),
            400,
        ),
        (
            json!({"apiVersion": "apps/v1", "kind": "Pod", "metadata": {"name": "d"}}),
            400,
        ),
        (json!({"apiVersion": "apps/v1", "kind": "Deployment"}), 422),
        (
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": "x"}),
            400,
        ),
        (
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": 3}}),
            400,
        ),
        (
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "managedFields": []}}),
            400,
        ),
        (
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"template": {"spec": {"containers": ["x"]}}}}),
            422,
        ),
        (
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"template": {"spec": {"containers": [{"image": "no-name"}]}}}}),
            422,
        ),
        (
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"template": {"spec": {"containers": [{"name": "a"}, {"name": "a"}]}}}}),
            422,
        ),
    ];
    for (cfg, code) in cases {
        let err = apply(&i, None, &cfg, "d", "m", false, None).expect_err("refused");
        assert_eq!(err.code, code, "{cfg}: {}", err.message);
    }
}

#[test]
fn an_existing_object_may_be_applied_without_a_name() {
    let i = info("Deployment");
    let live = apply(
        &i,
        None,
        &deploy(1, json!({}), json!([{"name": "c", "image": "i"}])),
        "d",
        "mgr",
        false,
        None,
    )
    .expect("create");
    let status = json!({"apiVersion": "apps/v1", "kind": "Deployment", "status": {"replicas": 1}});
    let out = apply(&i, Some(&live), &status, "d", "ctl", true, Some("status")).expect("apply");
    assert_eq!(out["metadata"]["name"], "d");
    assert_eq!(out["status"]["replicas"], 1);
    assert_eq!(
        fields_of(&out, "ctl"),
        &json!({"f:status": {"f:replicas": {}}})
    );
}

#[test]
fn old_update_managers_are_merged_into_ancient_changes() {
    let i = info("ConfigMap");
    let mut obj =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {}});
    for n in 0..14 {
        let mut new = obj.clone();
        new["data"][format!("k{n}")] = json!("v");
        obj = track_update(&i, Some(&obj), new, &format!("writer-{n:02}"), None);
        // Distinct, increasing timestamps.
        if let Some(a) = obj["metadata"]["managedFields"].as_array_mut() {
            for e in a.iter_mut() {
                if e["manager"] == format!("writer-{n:02}") {
                    e["time"] = json!(format!("2026-01-01T00:00:{n:02}Z"));
                }
            }
        }
    }
    let entries = obj["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(entries.len(), 10, "{entries:?}");
    let bucket = entries
        .iter()
        .find(|e| e["manager"] == "ancient-changes")
        .expect("bucket");
    for n in 0..5 {
        assert_eq!(bucket["fieldsV1"]["f:data"][format!("f:k{n}")], json!({}));
    }
    assert!(entries.iter().any(|e| e["manager"] == "writer-13"));
    assert!(!entries.iter().any(|e| e["manager"] == "writer-04"));
}
