//! RBAC authorization overhead (harness = false): `cargo bench -p fleet-apiserver --bench rbac`.
//!
//! Builds the bootstrap policy plus 10,000 RoleBindings (and 1,000 Roles) across 1,000 namespaces
//! (one Role and ten RoleBindings per namespace: agent service accounts, users and groups), and
//! registration's 10,000 Roles and RoleBindings of one token account limited to one Secret each,
//! then
//! prints the median nanoseconds per `authorize()` call for an allowed and a denied request, and
//! for a SelfSubjectRulesReview-style `rules_for`. Environment: RBAC_BENCH_RUNS (default 15),
//! RBAC_BENCH_ITERS (calls per run, default 20000).
//!
//! Then end to end through the server's router (authorization middleware included, in-memory
//! store): the same 10,000 RoleBindings created through the API, and the median latency of one
//! GET of a ConfigMap for a caller without identity (no authorization at all), the admin
//! (`system:masters` bypass), a group member allowed by a RoleBinding, and a refused service
//! account (403). RBAC_BENCH_HTTP_ITERS (requests per run, default 2000).

use std::hint::black_box;
use std::time::Instant;

use axum::Router;
use axum::body::Body;
use axum::http::Request;
use fleet_apiserver::auth::UserInfo;
use fleet_apiserver::rbac::{Attributes, Authorizer, bootstrap_objects};
use fleet_apiserver::{ApiServer, ApiServerConfig};
use http_body_util::BodyExt;
use serde_json::json;
use tower::ServiceExt;

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
    // Registration's shape: one shared token account holds a Role and RoleBinding per cluster,
    // each granting `get` on that cluster's credential Secret only.
    for n in 0..10_000 {
        let name = format!("request-{n}-creds");
        let role = json!({"kind": "Role", "apiVersion": "rbac.authorization.k8s.io/v1",
            "metadata": {"namespace": "cattle-fleet-clusters-system", "name": name},
            "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"],
                       "resourceNames": [format!("c-{n}")]}]});
        let rb = json!({"kind": "RoleBinding", "apiVersion": "rbac.authorization.k8s.io/v1",
            "metadata": {"namespace": "cattle-fleet-clusters-system", "name": name},
            "roleRef": {"kind": "Role", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": "import-token", "namespace": "fleet-default"}]});
        for o in [role, rb] {
            if let Err(e) = a.apply(&o) {
                eprintln!("registration binding: {e}");
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
    let token = UserInfo::authenticated(
        "system:serviceaccount:fleet-default:import-token",
        &[
            "system:serviceaccounts",
            "system:serviceaccounts:fleet-default",
        ],
    );
    let poll = Attributes::resource("get", "", "secrets")
        .namespace("cattle-fleet-clusters-system")
        .name("c-4711");
    let poll_other = Attributes::resource("get", "", "secrets")
        .namespace("cattle-fleet-clusters-system")
        .name("c-unknown");
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
            "allowed (registration poll, 1 of 10,000 named bindings)",
            &token,
            &poll,
            true,
        ),
        (
            "denied (registration poll, a name no binding grants)",
            &token,
            &poll_other,
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
        let fast = median_ns(runs, iters, || a.allows(user, attrs));
        println!(
            "rbac authorize {what}: median {m:.0} ns/request ({:.2} µs); allows {fast:.0} ns",
            m / 1e3
        );
    }
    let m = median_ns(runs, (iters / 10).max(1), || {
        !a.rules_for(&agent, "cluster-517").rules.is_empty()
    });
    println!("rbac rules_for (SelfSubjectRulesReview): median {m:.0} ns/call");

    let http_iters = env_usize("RBAC_BENCH_HTTP_ITERS", 2000).max(1);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(end_to_end(runs, http_iters));
}

async fn send(r: &Router, user: Option<&UserInfo>, method: &str, uri: &str, body: String) -> u16 {
    let mut req = Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", "application/json")
        .body(Body::from(body))
        .expect("request");
    if let Some(u) = user {
        req.extensions_mut().insert(u.clone());
    }
    let resp = r.clone().oneshot(req).await.expect("infallible");
    let code = resp.status().as_u16();
    let _ = resp.into_body().collect().await;
    code
}

/// The objects of `build()`, created through the API as the admin.
async fn populate(r: &Router, admin: &UserInfo) {
    let rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces";
    for n in 0..1000 {
        let ns = format!("cluster-{n}");
        let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
        expect(
            send(
                r,
                Some(admin),
                "POST",
                "/api/v1/namespaces",
                body.to_string(),
            )
            .await,
            201,
        );
        let role = json!({"kind": "Role", "apiVersion": "rbac.authorization.k8s.io/v1",
        "metadata": {"namespace": ns, "name": "agent"},
        "rules": [
            {"apiGroups": ["fleet.cattle.io"], "resources": ["bundledeployments"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": ["fleet.cattle.io"], "resources": ["bundledeployments/status"], "verbs": ["update", "patch"]},
        ]});
        expect(
            send(
                r,
                Some(admin),
                "POST",
                &format!("{rbac}/{ns}/roles"),
                role.to_string(),
            )
            .await,
            201,
        );
        for b in 0..10 {
            let subject = match b % 3 {
                0 => {
                    json!({"kind": "ServiceAccount", "name": format!("agent-{b}"), "namespace": ns})
                }
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
                "roleRef": {"kind": rk, "name": rn, "apiGroup": "rbac.authorization.k8s.io"}, "subjects": [subject]});
            expect(
                send(
                    r,
                    Some(admin),
                    "POST",
                    &format!("{rbac}/{ns}/rolebindings"),
                    rb.to_string(),
                )
                .await,
                201,
            );
        }
    }
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"k": "v"}});
    expect(
        send(
            r,
            Some(admin),
            "POST",
            "/api/v1/namespaces/cluster-967/configmaps",
            cm.to_string(),
        )
        .await,
        201,
    );
}

fn expect(got: u16, want: u16) {
    if got != want {
        eprintln!("rbac bench: HTTP {got}, want {want}");
        std::process::exit(1);
    }
}

async fn end_to_end(runs: usize, iters: usize) {
    let srv = ApiServer::new(ApiServerConfig::in_memory())
        .await
        .expect("server");
    let r = srv.router();
    let admin = UserInfo::authenticated("admin", &["system:masters"]);
    let t = Instant::now();
    populate(&r, &admin).await;
    let want = srv.authz().read().binding_count();
    println!(
        "rbac e2e: created 1,000 namespaces, 1,000 Roles and 10,000 RoleBindings through the API in {:.1} s; policy holds {want} bindings",
        t.elapsed().as_secs_f64()
    );
    let grouped = UserInfo::authenticated("someone", &["team-17"]);
    let agent = UserInfo::authenticated(
        "system:serviceaccount:cluster-517:agent-3",
        &[
            "system:serviceaccounts",
            "system:serviceaccounts:cluster-517",
        ],
    );
    let uri = "/api/v1/namespaces/cluster-967/configmaps/cm";
    let mut medians = Vec::new();
    for (what, user, code) in [
        ("no identity (authorization skipped)", None, 200),
        ("admin (system:masters bypass)", Some(&admin), 200),
        (
            "group member allowed by RoleBinding to aggregated view",
            Some(&grouped),
            200,
        ),
        ("service account refused (403)", Some(&agent), 403),
    ] {
        expect(send(&r, user, "GET", uri, String::new()).await, code);
        let mut samples = Vec::with_capacity(runs);
        for _ in 0..runs {
            let start = Instant::now();
            for _ in 0..iters {
                black_box(send(&r, user, "GET", uri, String::new()).await);
            }
            samples.push(start.elapsed().as_nanos() as f64 / iters as f64);
        }
        samples.sort_by(f64::total_cmp);
        let m = samples[samples.len() / 2];
        medians.push(m);
        println!(
            "rbac e2e GET configmap, {what}: median {:.2} µs/request",
            m / 1e3
        );
    }
    if let [none, admin_m, allowed, denied] = medians[..] {
        println!(
            "rbac e2e overhead vs admin with 10,000 RoleBindings: allowed {:+.2} µs, refused {:+.2} µs (admin vs no identity {:+.2} µs)",
            (allowed - admin_m) / 1e3,
            (denied - admin_m) / 1e3,
            (admin_m - none) / 1e3
        );
    }
}
