//! RBAC authorization overhead (harness = false): `cargo bench -p fleet-apiserver --bench rbac`.
//!
//! Builds the bootstrap policy plus 10,000 RoleBindings (and 1,000 Roles) across 1,000 namespaces
//! (one Role and ten RoleBindings per namespace: agent service accounts, users and groups), then
//! prints the median nanoseconds per `authorize()` call for an allowed and a denied request, and
//! for a SelfSubjectRulesReview-style `rules_for`. Environment: RBAC_BENCH_RUNS (default 15),
//! RBAC_BENCH_ITERS (calls per run, default 20000).

use std::hint::black_box;
use std::time::Instant;

use fleet_apiserver::auth::UserInfo;
use fleet_apiserver::rbac::{Attributes, Authorizer, bootstrap_objects};
use serde_json::json;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn build() -> Authorizer {
    let mut a = Authorizer::new();
    for o in bootstrap_objects() {
        if let Err(e) = a.apply(&o) {
            eprintln!("bootstrap: {e}");
            std::process::exit(1);
        }
    }
    for n in 0..1000 {
        let ns = format!("cluster-{n}");
        let role = json!({"kind": "Role", "apiVersion": "rbac.authorization.k8s.io/v1",
        "metadata": {"namespace": ns, "name": "agent"},
        "rules": [
            {"apiGroups": ["fleet.cattle.io"], "resources": ["bundledeployments"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": ["fleet.cattle.io"], "resources": ["bundledeployments/status"], "verbs": ["update", "patch"]},
            {"apiGroups": ["fleet.cattle.io"], "resources": ["contents"], "verbs": ["get"], "resourceNames": ["s-abc"]},
        ]});
        let _ = a.apply(&role);
        for b in 0..10 {
            let subject = match b % 3 {
                0 => json!({"kind": "ServiceAccount", "name": format!("agent-{b}")}),
                1 => json!({"kind": "User", "name": format!("user-{n}-{b}")}),
                _ => json!({"kind": "Group", "name": format!("team-{}", n % 50)}),
            };
            let (rk, rn) = if b == 8 {
                ("ClusterRole", "view")
            } else {
                ("Role", "agent")
            };
            let rb = json!({"kind": "RoleBinding", "apiVersion": "rbac.authorization.k8s.io/v1",
                "metadata": {"namespace": ns, "name": format!("rb-{b}")},
                "roleRef": {"kind": rk, "name": rn}, "subjects": [subject]});
            if let Err(e) = a.apply(&rb) {
                eprintln!("binding: {e}");
                std::process::exit(1);
            }
        }
    }
    a
}

fn median_ns(runs: usize, iters: usize, mut f: impl FnMut() -> bool) -> f64 {
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = Instant::now();
        for _ in 0..iters {
            black_box(f());
        }
        samples.push(start.elapsed().as_nanos() as f64 / iters as f64);
    }
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn main() {
    let runs = env_usize("RBAC_BENCH_RUNS", 15).max(1);
    let iters = env_usize("RBAC_BENCH_ITERS", 20_000).max(1);
    let t = Instant::now();
    let a = build();
    println!(
        "rbac: built policy with {} bindings in {:.1} ms",
        a.binding_count(),
        t.elapsed().as_secs_f64() * 1e3
    );

    let agent = UserInfo::authenticated(
        "system:serviceaccount:cluster-517:agent-3",
        &[
            "system:serviceaccounts",
            "system:serviceaccounts:cluster-517",
        ],
    );
    let allowed = Attributes::resource("patch", "fleet.cattle.io", "bundledeployments")
        .subresource("status")
        .namespace("cluster-517")
        .name("bd-1");
    let denied_other_ns = Attributes::resource("get", "fleet.cattle.io", "bundledeployments")
        .namespace("cluster-518")
        .name("bd-1");
    let denied_secret = Attributes::resource("get", "", "secrets")
        .namespace("cluster-517")
        .name("x");
    let grouped = UserInfo::authenticated("someone", &["team-17"]);
    let view = Attributes::resource("list", "apps", "deployments").namespace("cluster-967");
    for (what, user, attrs, want) in [
        (
            "allowed (SA, bundledeployments/status)",
            &agent,
            &allowed,
            true,
        ),
        (
            "denied (SA, other namespace)",
            &agent,
            &denied_other_ns,
            false,
        ),
        (
            "denied (SA, secrets in own namespace)",
            &agent,
            &denied_secret,
            false,
        ),
        (
            "allowed (group via RoleBinding to aggregated view)",
            &grouped,
            &view,
            true,
        ),
    ] {
        if a.authorize(user, attrs).allowed != want {
            eprintln!("rbac bench: unexpected decision for {what}");
            std::process::exit(1);
        }
        let m = median_ns(runs, iters, || a.authorize(user, attrs).allowed);
        println!(
            "rbac authorize {what}: median {m:.0} ns/request ({:.2} µs)",
            m / 1e3
        );
    }
    let m = median_ns(runs, (iters / 10).max(1), || {
        !a.rules_for(&agent, "cluster-517").rules.is_empty()
    });
    println!("rbac rules_for (SelfSubjectRulesReview): median {m:.0} ns/call");
}
