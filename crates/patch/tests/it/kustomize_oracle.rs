//! Oracle test: real `kustomize build` (v4.5.4, kyaml) applying each typed case as a
//! `patchesStrategicMerge` patch must produce what our `strategic::apply_kustomize` produces.
//!
//! kustomize is found via `$FLEET_KUSTOMIZE_BIN`, else `$FLEET_TOOLS_DIR/bin` (default
//! ~/.cache/fleet-tools/bin), else PATH. Missing kustomize skips with a message, except under `CI=true`.

use std::path::PathBuf;
use std::process::Command;

use crate::common::cases::{Expect, cases};
use fleet_patch::strategic;
use serde_json::{Value, json};

/// Gives an object what kustomize needs to identify it (apiVersion, kind, metadata.name).
fn complete(v: &Value, api_version: &str, kind: &str, name: &str) -> Value {
    let mut o = v.clone();
    if let Some(m) = o.as_object_mut() {
        m.insert("apiVersion".into(), json!(api_version));
        m.insert("kind".into(), json!(kind));
        let meta = m.entry("metadata").or_insert_with(|| json!({}));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert("name".into(), json!(name));
        }
    }
    o
}

/// Runs one `kustomize build` over all (original, patch) pairs (each object named uniquely) and returns
/// the built objects by name.
fn kustomize_build(
    bin: &PathBuf,
    pairs: &[(Value, Value)],
) -> Result<std::collections::HashMap<String, Value>, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut kustomization = String::from("resources:\n");
    let mut patches = String::from("patchesStrategicMerge:\n");
    for (i, (o, p)) in pairs.iter().enumerate() {
        std::fs::write(dir.path().join(format!("o{i}.yaml")), o.to_string())
            .map_err(|e| e.to_string())?;
        std::fs::write(dir.path().join(format!("p{i}.yaml")), p.to_string())
            .map_err(|e| e.to_string())?;
        kustomization.push_str(&format!("- o{i}.yaml\n"));
        patches.push_str(&format!("- p{i}.yaml\n"));
    }
    kustomization.push_str(&patches);
    std::fs::write(dir.path().join("kustomization.yaml"), kustomization)
        .map_err(|e| e.to_string())?;
    let out = Command::new(bin)
        .arg("build")
        .arg(dir.path())
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let docs: Vec<Value> =
        serde_saphyr::from_str_multiple(&text).map_err(|e| format!("kustomize output: {e}"))?;
    Ok(docs
        .into_iter()
        .filter_map(|d| {
            let name = d["metadata"]["name"].as_str()?.to_string();
            Some((name, d))
        })
        .collect())
}

/// Cases where kustomize v4.5.4 differs from Kubernetes' documented semantics and we keep the latter,
/// with the reason.
const KUSTOMIZE_QUIRKS: &[(&str, &str)] = &[
    (
        "null_deletes_field",
        "kustomize sets a null label to \"\" instead of deleting it",
    ),
    (
        "nulls_in_new_map_dropped",
        "kustomize sets a null annotation to \"\"",
    ),
    (
        "type_change_replaces",
        "kustomize keeps the map when the patch gives a string",
    ),
    (
        "containers_type_change_replaces",
        "kustomize fails: wrong node kind",
    ),
    (
        "ports_merge_by_container_port",
        "kyaml matches ports by containerPort+protocol and drops the patch's change when the patch omits the protocol",
    ),
    (
        "ports_change_number",
        "kyaml does not know $setElementOrder (copied into the output)",
    ),
    (
        "containers_add_with_set_element_order",
        "kyaml does not know $setElementOrder",
    ),
    (
        "env_insert_with_order",
        "kyaml does not know $setElementOrder",
    ),
    (
        "finalizers_set_element_order",
        "kyaml does not know $setElementOrder",
    ),
    (
        "set_element_order_reorders",
        "kyaml does not know $setElementOrder",
    ),
    (
        "set_element_order_keeps_server_only_items",
        "kyaml does not know $setElementOrder",
    ),
    (
        "finalizers_add_delete_order",
        "kyaml does not know $deleteFromPrimitiveList/$setElementOrder",
    ),
    (
        "finalizers_delete_from_primitive_list",
        "kyaml does not know $deleteFromPrimitiveList",
    ),
    (
        "volumes_retain_keys_switch_source",
        "kyaml does not know $retainKeys",
    ),
    (
        "deployment_strategy_retain_keys",
        "kyaml does not know $retainKeys",
    ),
    (
        "top_level_patch_replace",
        "kustomize ignores a top-level $patch: replace",
    ),
    (
        "pdb_selector_replace_strategy",
        "kyaml merges fields whose patch strategy is replace",
    ),
];

#[test]
fn case_table_matches_kustomize() {
    let Some(bin) = fleet_testkit::tools::kustomize() else {
        return;
    };
    let mut names = Vec::new();
    let mut pairs = Vec::new();
    let mut ours = Vec::new();
    for c in cases() {
        let (Some((v, k)), Expect::Doc(_)) = (c.kind, &c.expect) else {
            continue;
        };
        if KUSTOMIZE_QUIRKS.iter().any(|(n, _)| *n == c.name) {
            continue;
        }
        let name = format!("case-{}", pairs.len());
        let original = complete(&c.original, v, k, &name);
        let patch = complete(&c.patch, v, k, &name);
        let schema = strategic::schema_for(v, k).expect("schema");
        ours.push(strategic::apply_kustomize(&original, &patch, schema));
        names.push((c.name, name));
        pairs.push((original, patch));
    }
    let built = kustomize_build(&bin, &pairs).expect("kustomize build");
    let checked = pairs.len();
    let mut failures = Vec::new();
    for ((case, name), ours) in names.iter().zip(ours) {
        match (ours, built.get(name)) {
            (Ok(o), Some(t)) if o == *t => {}
            (o, t) => failures.push(format!(
                "{case}:\n  ours      {:?}\n  kustomize {:?}",
                o.map(|v| v.to_string()),
                t.map(|v| v.to_string())
            )),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} cases differ from kustomize:\n{}",
        failures.len(),
        failures.join("\n")
    );
    println!("{checked} typed cases agree with {}", bin.display());
}
