//! Oracle test: real `kubectl patch --local --type strategic` (Go's k8s.io/apimachinery strategicpatch
//! with kubectl's compiled-in types) must produce what our `strategic::apply` produces, for every typed
//! case of the table, and must accept the patches our `diff`/`three_way` compute.
//!
//! kubectl is found via `$KUBECTL`, else `$FLEET_TOOLS_DIR/bin` (default ~/.cache/fleet-tools/bin), else
//! PATH. Missing kubectl skips the test with a message, except under `CI=true` where it fails.

use std::path::PathBuf;
use std::process::Command;

use crate::common::cases::{Expect, cases};
use crate::common::objects::{ambiguous_pod, defaulted_live, deployment};
use fleet_patch::strategic;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};

/// Runs `kubectl patch --local` and returns the patched object, or kubectl's error text.
fn kubectl_patch(kubectl: &PathBuf, original: &Value, patch: &Value) -> Result<Value, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let file = dir.path().join("obj.json");
    std::fs::write(&file, original.to_string()).map_err(|e| e.to_string())?;
    let out = Command::new(kubectl)
        .args([
            "patch",
            "--local",
            "--type",
            "strategic",
            "-o",
            "json",
            "-f",
        ])
        .arg(&file)
        .arg("-p")
        .arg(patch.to_string())
        .env("KUBECONFIG", dir.path().join("none"))
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("kubectl output: {e}"))
}

/// Gives a case's original what kubectl needs to decode it (apiVersion, kind, metadata.name).
fn complete(original: &Value, api_version: &str, kind: &str) -> Value {
    let mut o = original.clone();
    if let Some(m) = o.as_object_mut() {
        m.insert("apiVersion".into(), json!(api_version));
        m.insert("kind".into(), json!(kind));
        let meta = m.entry("metadata").or_insert_with(|| json!({}));
        if let Some(meta) = meta.as_object_mut() {
            meta.entry("name").or_insert_with(|| json!("obj"));
        }
    }
    o
}

/// Cases where we deliberately differ from upstream, with the reason.
const DELIBERATE: &[(&str, &str)] = &[
    (
        "ports_same_number_tcp_udp_update_one",
        "upstream merges by containerPort only and corrupts the TCP item (kubernetes#108255); \
         we tell items apart by the list-map keys containerPort+protocol",
    ),
    (
        "ports_same_number_delete_one_protocol",
        "upstream deletes every item with containerPort 53 (kubernetes#108255)",
    ),
    (
        "new_container_nulls_dropped",
        "upstream leaves `command: null` in an appended item and drops it only when decoding into the \
         typed object; we drop it while merging so stores that keep JSON hold the same object",
    ),
    (
        "map_patch_merge_default",
        "upstream rejects `$patch: merge` (the default) in maps; we accept it as a no-op",
    ),
    (
        "merge_directive_in_list_is_default",
        "upstream rejects `$patch: merge` on list items; we merge the item as usual",
    ),
    (
        "unknown_field_of_builtin_untyped",
        "upstream fails on fields its compiled-in types lack; we treat them as untyped so newer \
         fields and kustomize patches work (validation is the API server's job)",
    ),
    (
        "delete_from_primitive_list_not_list_errors",
        "upstream silently ignores a malformed $deleteFromPrimitiveList; we report it",
    ),
];

#[test]
fn case_table_matches_kubectl() {
    let Some(kubectl) = fleet_testkit::tools::kubectl() else {
        return;
    };
    let mut checked = 0;
    let mut failures = Vec::new();
    for c in cases() {
        let Some((v, k)) = c.kind else { continue };
        if DELIBERATE.iter().any(|(n, _)| *n == c.name) {
            continue;
        }
        let schema = strategic::schema_for(v, k).expect("schema");
        let original = complete(&c.original, v, k);
        let ours = strategic::apply(&original, &c.patch, schema);
        let theirs = kubectl_patch(&kubectl, &original, &c.patch);
        checked += 1;
        match (&c.expect, ours, theirs) {
            (Expect::Doc(_), Ok(o), Ok(t)) if o == t => {}
            (Expect::Err(_), Err(_), Err(_)) => {}
            (_, o, t) => failures.push(format!(
                "{}:\n  ours    {:?}\n  kubectl {:?}",
                c.name,
                o.map(|v| v.to_string()),
                t
            )),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} cases differ from kubectl:\n{}",
        failures.len(),
        failures.join("\n")
    );
    println!("{checked} typed cases agree with {}", kubectl.display());
}

/// Patches computed by our diff and three-way are accepted by Go's strategicpatch and give the same
/// object our apply gives.
#[test]
fn computed_patches_apply_identically_in_kubectl() {
    let Some(kubectl) = fleet_testkit::tools::kubectl() else {
        return;
    };
    let schema = strategic::schema_for("apps/v1", "Deployment").expect("schema");
    let cases = std::env::var("ORACLE_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(24);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&(deployment(), deployment()), |(a, b)| {
        let two =
            strategic::diff(&a, &b, schema).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let theirs = kubectl_patch(&kubectl, &a, &two)
            .map_err(|e| TestCaseError::fail(format!("{e}; patch {two}")))?;
        prop_assert_eq!(&theirs, &b, "two-way patch {}", two);

        let mut live = defaulted_live(&a);
        live["metadata"]["uid"] = json!("u");
        let three = strategic::three_way(Some(&a), &b, &live, schema)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let ours = strategic::apply(&live, &three, schema)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let theirs = kubectl_patch(&kubectl, &live, &three)
            .map_err(|e| TestCaseError::fail(format!("{e}; patch {three}")))?;
        prop_assert_eq!(&theirs, &ours, "three-way patch {}", three);
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// Lists with repeated merge keys (sent whole with `$patch: replace` by our diff) apply the same in
/// kubectl.
#[test]
fn ambiguous_list_patches_apply_identically_in_kubectl() {
    let Some(kubectl) = fleet_testkit::tools::kubectl() else {
        return;
    };
    let schema = strategic::schema_for("v1", "Pod").expect("schema");
    let mut runner = TestRunner::new(Config {
        cases: 16,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&(ambiguous_pod(), ambiguous_pod()), |(a, b)| {
        let two =
            strategic::diff(&a, &b, schema).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let theirs = kubectl_patch(&kubectl, &a, &two)
            .map_err(|e| TestCaseError::fail(format!("{e}; patch {two}")))?;
        let ours =
            strategic::apply(&a, &two, schema).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&theirs, &ours, "two-way patch {}", two);
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}
