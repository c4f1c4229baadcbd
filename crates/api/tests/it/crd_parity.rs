//! Our CRDs must accept every object upstream's CRDs accept: every property path of upstream's
//! schemas has to exist in ours, and the subresources and printer columns must match.

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde_json::Value;

fn shared_crds() -> Option<String> {
    let p =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/fleet-api/crds.yaml");
    match std::fs::read_to_string(&p) {
        Ok(s) => Some(s),
        Err(e) => {
            if std::env::var("CI").as_deref() == Ok("true") {
                panic!("{} is required under CI=true: {e}", p.display());
            }
            println!("skipping: {} not readable ({e})", p.display());
            None
        }
    }
}

/// Collects `required` lists by path.
fn required(schema: &Value, prefix: &str, out: &mut Vec<(String, Vec<String>)>) {
    if let Some(r) = schema.get("required").and_then(Value::as_array) {
        let mut names: Vec<String> = r
            .iter()
            .filter_map(|x| x.as_str().map(String::from))
            .collect();
        names.sort();
        out.push((prefix.to_string(), names));
    }
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (k, v) in props {
            required(v, &format!("{prefix}.{k}"), out);
        }
    }
    if let Some(items) = schema.get("items") {
        required(items, &format!("{prefix}[]"), out);
    }
}

/// Collects property paths; stops below nodes that keep unknown fields (anything goes there).
fn paths(schema: &Value, prefix: &str, out: &mut BTreeSet<String>, open: &mut BTreeSet<String>) {
    if schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
        open.insert(prefix.to_string());
    }
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (k, v) in props {
            let p = format!("{prefix}.{k}");
            out.insert(p.clone());
            paths(v, &p, out, open);
        }
    }
    if let Some(items) = schema.get("items") {
        paths(items, &format!("{prefix}[]"), out, open);
    }
    if let Some(ap) = schema.get("additionalProperties").filter(|v| v.is_object()) {
        paths(ap, &format!("{prefix}{{}}"), out, open);
    }
}

fn version_of(crd: &Value) -> &Value {
    &crd["spec"]["versions"][0]
}

#[test]
fn every_upstream_property_path_exists_in_ours() {
    let Some(text) = shared_crds() else { return };
    let upstream: Vec<Value> =
        serde_saphyr::from_multiple(&text).expect("upstream crds.yaml parses");
    let ours: Vec<Value> = fleet_api::crds::all()
        .into_iter()
        .map(|c| serde_json::to_value(c).unwrap())
        .collect();
    let mut missing = Vec::new();
    let mut checked = 0;
    for up in upstream.iter().filter(|d| !d.is_null()) {
        let name = up["metadata"]["name"].as_str().unwrap().to_string();
        let Some(our) = ours
            .iter()
            .find(|o| o["metadata"]["name"] == up["metadata"]["name"])
        else {
            missing.push(format!("CRD {name}"));
            continue;
        };
        assert_eq!(our["spec"]["scope"], up["spec"]["scope"], "{name} scope");
        assert_eq!(
            our["spec"]["names"]["kind"], up["spec"]["names"]["kind"],
            "{name} kind"
        );
        assert_eq!(
            our["spec"]["names"]["plural"], up["spec"]["names"]["plural"],
            "{name} plural"
        );
        let (uv, ov) = (version_of(up), version_of(our));
        assert_eq!(ov["name"], uv["name"], "{name} version");
        assert_eq!(
            ov["subresources"].get("status").is_some(),
            uv["subresources"].get("status").is_some(),
            "{name} status subresource"
        );
        let cols = |v: &Value| -> Vec<(String, String)> {
            v["additionalPrinterColumns"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|c| {
                            (
                                c["name"].as_str().unwrap_or("").into(),
                                c["jsonPath"].as_str().unwrap_or("").into(),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        let (uc, oc) = (cols(uv), cols(ov));
        for c in &uc {
            assert!(
                oc.contains(c),
                "{name}: printer column {c:?} missing; ours {oc:?}"
            );
        }
        let (mut up_paths, mut our_paths) = (BTreeSet::new(), BTreeSet::new());
        let (mut up_open, mut our_open) = (BTreeSet::new(), BTreeSet::new());
        paths(
            &uv["schema"]["openAPIV3Schema"],
            "",
            &mut up_paths,
            &mut up_open,
        );
        paths(
            &ov["schema"]["openAPIV3Schema"],
            "",
            &mut our_paths,
            &mut our_open,
        );
        // The API server always accepts apiVersion, kind and metadata; kube's generator leaves
        // them implicit.
        for implicit in [".apiVersion", ".kind", ".metadata"] {
            our_paths.insert(implicit.to_string());
        }
        for p in &up_paths {
            checked += 1;
            let covered = our_paths.contains(p)
                || our_open
                    .iter()
                    .any(|o| p.starts_with(&format!("{o}.")) || p.starts_with(&format!("{o}[")));
            if !covered {
                missing.push(format!("{name}: {p}"));
            }
        }
        // A field we require that upstream does not would reject objects upstream accepts.
        let (mut up_req, mut our_req) = (Vec::new(), Vec::new());
        required(&uv["schema"]["openAPIV3Schema"], "", &mut up_req);
        required(&ov["schema"]["openAPIV3Schema"], "", &mut our_req);
        for (path, names) in &our_req {
            let theirs = up_req
                .iter()
                .find(|(p, _)| p == path)
                .map(|(_, n)| n.clone())
                .unwrap_or_default();
            for n in names {
                if !theirs.contains(n) {
                    missing.push(format!("{name}: {path}.{n} is required by us only"));
                }
            }
        }
        for o in &up_open {
            assert!(
                our_open.contains(o) || !up_paths.iter().any(|p| p == o) || o.is_empty(),
                "{name}: {o} must keep unknown fields"
            );
        }
    }
    assert!(checked > 1000, "walked only {checked} paths");
    assert!(
        missing.is_empty(),
        "{} paths missing:\n{}",
        missing.len(),
        missing.join("\n")
    );
}
