//! Table of strategic-merge-patch cases: (original, patch, expected, kind), each naming the documented
//! Kubernetes behaviour it pins down. Sources: the Kubernetes task "Update API Objects in Place Using
//! kubectl patch", the design docs "strategic-merge-patch.md" and "preserve-order-in-strategic-merge-patch.md"
//! (sig-api-machinery), and the patch strategies/merge keys in the API reference (generated table).

use crate::common::cases::{Expect, cases};
use fleet_patch::strategic::{self, Schema};

fn schema(kind: Option<(&str, &str)>) -> Schema {
    match kind {
        None => Schema::none(),
        Some((v, k)) => strategic::schema_for(v, k)
            .unwrap_or_else(|| panic!("test setup: no schema for {v} {k}")),
    }
}

#[test]
fn strategic_merge_case_table() {
    let cases = cases();
    assert!(cases.len() >= 60, "only {} cases", cases.len());
    let mut failures = Vec::new();
    for c in &cases {
        let got = strategic::apply(&c.original, &c.patch, schema(c.kind));
        match (&c.expect, got) {
            (Expect::Doc(want), Ok(got)) if *want == got => {}
            (Expect::Doc(want), Ok(got)) => {
                failures.push(format!("{}: want {}\n     got  {}", c.name, want, got))
            }
            (Expect::Doc(_), Err(e)) => failures.push(format!("{}: unexpected error {e}", c.name)),
            (Expect::Err(text), Err(e)) if e.to_string().contains(text) => {}
            (Expect::Err(text), Err(e)) => {
                failures.push(format!("{}: error {e:?} lacks {text:?}", c.name))
            }
            (Expect::Err(text), Ok(got)) => {
                failures.push(format!("{}: want error {text:?}, got {got}", c.name))
            }
        }
    }
    // Order matters for lists: compare serialized forms of list order too (Value equality already
    // checks list order; object key order is irrelevant to Kubernetes).
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    println!("{} strategic merge cases passed", cases.len());
}

#[test]
fn schema_lookup() {
    assert!(strategic::schema_for("apps/v1", "Deployment").is_some());
    assert!(strategic::schema_for("v1", "Pod").is_some());
    assert!(strategic::schema_for("batch/v1", "CronJob").is_some());
    assert!(strategic::schema_for("fleet.cattle.io/v1alpha1", "Bundle").is_none());
    assert!(strategic::schema_for("apps/v1", "Pod").is_none());
    let s = strategic::schema_for("apps/v1", "Deployment").map(|s| s.type_name());
    assert_eq!(s, Some(Some("io.k8s.api.apps.v1.Deployment")));
    assert!(!Schema::none().is_typed());
}

/// Writes the typed cases as JSON lines to `$DUMP_CASES` (for exploring other tools' behaviour by hand).
#[test]
#[ignore]
fn dump_cases() {
    let Ok(path) = std::env::var("DUMP_CASES") else {
        return;
    };
    let mut out = String::new();
    for c in cases() {
        let (Some((v, k)), Expect::Doc(want)) = (c.kind, &c.expect) else {
            continue;
        };
        let line = serde_json::json!({"name": c.name, "apiVersion": v, "kind": k,
            "original": c.original, "patch": c.patch, "expected": want});
        out.push_str(&line.to_string());
        out.push('\n');
    }
    std::fs::write(path, out).expect("write dump");
}
