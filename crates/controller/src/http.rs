//! The controller's HTTP listener: Prometheus `/metrics` (write and reconcile counters, git
//! polls, fetches and builds), the health endpoints `/healthz` and `/readyz`, and the git
//! webhook receiver at `/` (POST, see [`crate::webhook`]).

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::Router;
use axum::http::StatusCode;
use axum::routing::{get, post};

use crate::context::Context;

/// Routes of the listener.
pub fn router(ctx: Arc<Context>) -> Router {
    let m = ctx.clone();
    let r = ctx.clone();
    let w = ctx.clone();
    Router::new()
        .route(
            "/",
            post(move |h: axum::http::HeaderMap, body: axum::body::Bytes| {
                crate::webhook::handle(w.clone(), h, body)
            }),
        )
        .route("/metrics", get(move || futures::future::ready(metrics(&m))))
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/readyz",
            get(move || {
                let ready = r.is_ready();
                async move {
                    if ready {
                        (StatusCode::OK, "ok")
                    } else {
                        (StatusCode::SERVICE_UNAVAILABLE, "caches not synced")
                    }
                }
            }),
        )
}

/// The metrics in Prometheus text format.
pub fn metrics(ctx: &Context) -> String {
    let m = &ctx.metrics;
    let mut out = String::new();
    let mut counter = |name: &str, help: &str, v: u64| {
        let _ = writeln!(
            out,
            "# HELP {name} {help}\n# TYPE {name} counter\n{name} {v}"
        );
    };
    counter(
        "fleet_controller_api_writes_total",
        "Create, update, patch and delete requests sent to the Kubernetes API.",
        m.writes.load(Ordering::Relaxed),
    );
    counter(
        "fleet_controller_git_polls_total",
        "ls-remote calls.",
        m.polls.load(Ordering::Relaxed),
    );
    counter(
        "fleet_controller_git_fetches_total",
        "Shallow clones (one per repository and commit).",
        ctx.fetch.fetches(),
    );
    counter(
        "fleet_controller_webhooks_total",
        "Git webhook deliveries received.",
        m.webhooks.load(Ordering::Relaxed),
    );
    counter(
        "fleet_controller_bundle_builds_total",
        "Checkouts read into Bundles.",
        m.builds.load(Ordering::Relaxed),
    );
    let _ = writeln!(
        out,
        "# HELP fleet_controller_leader Whether this replica leads (1) or stands by (0).\n# TYPE fleet_controller_leader gauge\nfleet_controller_leader {}",
        u8::from(ctx.is_leading())
    );
    let _ = writeln!(
        out,
        "# HELP fleet_controller_reconciles_total Reconciles per kind.\n# TYPE fleet_controller_reconciles_total counter"
    );
    for (kind, v) in [
        ("gitrepo", &m.gitrepo_reconciles),
        ("bundle", &m.bundle_reconciles),
        ("cluster", &m.cluster_reconciles),
        ("clustergroup", &m.clustergroup_reconciles),
    ] {
        let _ = writeln!(
            out,
            "fleet_controller_reconciles_total{{kind=\"{kind}\"}} {}",
            v.load(Ordering::Relaxed)
        );
    }
    let s = &ctx.stores;
    let _ = writeln!(
        out,
        "# HELP fleet_controller_cached_objects Objects in the reflector caches.\n# TYPE fleet_controller_cached_objects gauge"
    );
    for (kind, n) in [
        ("gitrepo", s.gitrepos.len()),
        ("bundle", s.bundles.len()),
        ("bundledeployment", s.bds.len()),
        ("cluster", s.clusters.len()),
        ("clustergroup", s.groups.len()),
    ] {
        let _ = writeln!(
            out,
            "fleet_controller_cached_objects{{kind=\"{kind}\"}} {n}"
        );
    }
    out
}
