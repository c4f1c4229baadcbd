//! Git webhook receiver (upstream `pkg/webhook`), served at `/` on the controller's listener: a
//! GitHub push (`X-GitHub-Event`, signed with `X-Hub-Signature-256` or the older
//! `X-Hub-Signature`) or a GitLab push (`X-Gitlab-Event`, `X-Gitlab-Token`) makes every GitRepo on
//! that repository and branch poll at once, whatever its `pollingInterval`.
//!
//! Secrets as upstream: the GitRepo's `webhookSecret` (a Secret in its namespace) when set, else
//! the Secret `gitjob-webhook` in the system namespace; key `github` or `gitlab`. A request that
//! fails verification gets 401 and changes nothing; with no secret configured the push is accepted
//! (upstream logs a deprecation warning). Matching GitRepos get `status.webhookCommit` and
//! `status.lastWebhookTime`, and `spec.pollingInterval: 1h` when they set none.

use std::sync::Arc;

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use fleet_api::GitRepo;
use hmac::{Hmac, Mac};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::reflector::ObjectRef;
use serde_json::{Value, json};

use crate::context::Context;

/// Upstream's global webhook Secret (in the system namespace).
pub const WEBHOOK_SECRET_NAME: &str = "gitjob-webhook";

/// The Git hosting service a request came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Provider {
    /// GitHub (and GitHub Enterprise).
    GitHub,
    /// GitLab.
    GitLab,
}

impl Provider {
    /// The key of the provider's secret in a webhook Secret.
    pub fn secret_key(self) -> &'static str {
        match self {
            Provider::GitHub => "github",
            Provider::GitLab => "gitlab",
        }
    }
}

/// A push, reduced to what matching needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Push {
    /// Branch name (`refs/heads/` stripped).
    pub branch: String,
    /// The commit the branch now points at.
    pub commit: String,
    /// Every URL the payload gives for the repository.
    pub urls: Vec<String>,
}

/// What the request asks for.
#[derive(Debug, PartialEq, Eq)]
pub enum Event {
    /// A branch push.
    Push(Push),
    /// Anything else the provider sends (ping, tag push, issues, ...): acknowledged, ignored.
    Other(String),
}

fn header<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

/// The provider named by the request's headers.
pub fn provider(h: &HeaderMap) -> Option<Provider> {
    if h.contains_key("x-github-event") {
        Some(Provider::GitHub)
    } else if h.contains_key("x-gitlab-event") {
        Some(Provider::GitLab)
    } else {
        None
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// `sha256=<hex HMAC-SHA256 of body>`, as GitHub signs deliveries.
pub fn github_signature_256(secret: &[u8], body: &[u8]) -> String {
    let mut m = Hmac::<sha2::Sha256>::new_from_slice(secret).expect("HMAC takes any key length");
    m.update(body);
    format!("sha256={}", hex(&m.finalize().into_bytes()))
}

/// Whether the request carries proof of `secret` (constant-time comparisons).
pub fn verify(p: Provider, h: &HeaderMap, body: &[u8], secret: &[u8]) -> bool {
    match p {
        Provider::GitHub => {
            if let Some(sig) = header(h, "x-hub-signature-256") {
                let Some(mac) = sig.strip_prefix("sha256=").and_then(unhex) else {
                    return false;
                };
                let mut m = Hmac::<sha2::Sha256>::new_from_slice(secret)
                    .expect("HMAC takes any key length");
                m.update(body);
                m.verify_slice(&mac).is_ok()
            } else if let Some(sig) = header(h, "x-hub-signature") {
                let Some(mac) = sig.strip_prefix("sha1=").and_then(unhex) else {
                    return false;
                };
                let mut m =
                    Hmac::<sha1::Sha1>::new_from_slice(secret).expect("HMAC takes any key length");
                m.update(body);
                m.verify_slice(&mac).is_ok()
            } else {
                false
            }
        }
        Provider::GitLab => {
            let token = header(h, "x-gitlab-token").unwrap_or("").as_bytes();
            token.len() == secret.len()
                && token
                    .iter()
                    .zip(secret)
                    .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                    == 0
        }
    }
}

fn strs(v: &Value, keys: &[&str]) -> Vec<String> {
    keys.iter()
        .filter_map(|k| v.get(*k).and_then(Value::as_str))
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// A push payload that is not the provider's JSON (answered with a 400).
#[derive(Debug, thiserror::Error)]
#[error("parsing the {event} payload: {source}")]
pub struct PayloadError {
    /// The provider's event name (`push`, `Push Hook`).
    pub event: String,
    /// What the JSON parser found.
    pub source: serde_json::Error,
}

/// Parses a provider's payload.
pub fn parse(p: Provider, h: &HeaderMap, body: &[u8]) -> Result<Event, PayloadError> {
    let kind = match p {
        Provider::GitHub => header(h, "x-github-event").unwrap_or(""),
        Provider::GitLab => header(h, "x-gitlab-event").unwrap_or(""),
    };
    let push = match p {
        Provider::GitHub => kind == "push",
        Provider::GitLab => kind == "Push Hook",
    };
    if !push {
        return Ok(Event::Other(kind.to_string()));
    }
    let v: Value = serde_json::from_slice(body).map_err(|source| PayloadError {
        event: kind.to_string(),
        source,
    })?;
    let r#ref = v.get("ref").and_then(Value::as_str).unwrap_or("");
    let Some(branch) = r#ref.strip_prefix("refs/heads/") else {
        return Ok(Event::Other(format!("{kind} of {ref}")));
    };
    let (commit, urls) = match p {
        Provider::GitHub => {
            let repo = v.get("repository").cloned().unwrap_or(Value::Null);
            (
                strs(&v, &["after"]),
                strs(
                    &repo,
                    &["html_url", "clone_url", "ssh_url", "git_url", "url"],
                ),
            )
        }
        Provider::GitLab => {
            let mut urls = Vec::new();
            if let Some(p) = v.get("project") {
                urls.extend(strs(
                    p,
                    &["web_url", "git_http_url", "git_ssh_url", "http_url"],
                ));
            }
            if let Some(r) = v.get("repository") {
                urls.extend(strs(r, &["url", "homepage", "git_http_url", "git_ssh_url"]));
            }
            (strs(&v, &["checkout_sha", "after"]), urls)
        }
    };
    Ok(Event::Push(Push {
        branch: branch.to_string(),
        commit: commit.into_iter().next().unwrap_or_default(),
        urls,
    }))
}

/// `host/path` of a repository URL, lower-cased host, without scheme, user, port, trailing `/`
/// or `.git`: `https://github.com/o/r.git`, `git@github.com:o/r` and `ssh://git@github.com:22/o/r`
/// all give `github.com/o/r` (upstream matches GitRepos by a regex over the same variants).
pub fn normalize_url(url: &str) -> String {
    let u = url.trim();
    let (rest, scp) = match u.split_once("://") {
        Some((_, r)) => (r, false),
        None => (u, true),
    };
    let (authority, path) = if scp {
        match rest.split_once(':') {
            Some((a, p)) => (a, p),
            None => rest.split_once('/').unwrap_or((rest, "")),
        }
    } else {
        rest.split_once('/').unwrap_or((rest, ""))
    };
    let host = authority.rsplit('@').next().unwrap_or(authority);
    let host = match host.rsplit_once(':') {
        Some((h, port)) if port.chars().all(|c| c.is_ascii_digit()) => h,
        _ => host,
    };
    let path = path.trim_matches('/');
    let path = path.strip_suffix(".git").unwrap_or(path);
    format!("{}/{}", host.to_ascii_lowercase(), path)
}

/// Whether a push concerns GitRepo `g`: same repository, no pinned `revision`, and the same
/// branch (upstream's default branch `master` when none is set).
pub fn matches(g: &GitRepo, push: &Push) -> bool {
    if !g.spec.revision.is_empty() {
        return false;
    }
    let repo = normalize_url(&g.spec.repo);
    if !push.urls.iter().any(|u| normalize_url(u) == repo) {
        return false;
    }
    let branch = if g.spec.branch.is_empty() {
        "master"
    } else {
        g.spec.branch.as_str()
    };
    branch == push.branch
}

async fn secret_value(
    ctx: &Context,
    ns: &str,
    name: &str,
    key: &str,
) -> Result<Option<Vec<u8>>, (StatusCode, String)> {
    let api: Api<Secret> = Api::namespaced(ctx.client.clone(), ns);
    let s = api.get_opt(name).await.map_err(|e| {
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("reading secret {ns}/{name}: {e}"),
        )
    })?;
    Ok(s.and_then(|s| s.data)
        .and_then(|d| d.get(key).map(|v| v.0.clone())))
}

/// Handles one delivery: (status code, message).
pub async fn handle(ctx: Arc<Context>, h: HeaderMap, body: Bytes) -> (StatusCode, String) {
    let Some(p) = provider(&h) else {
        return (
            StatusCode::BAD_REQUEST,
            "unknown webhook provider (no X-GitHub-Event or X-Gitlab-Event header)".into(),
        );
    };
    ctx.metrics
        .webhooks
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let global = match secret_value(
        &ctx,
        &ctx.opts.system_namespace,
        WEBHOOK_SECRET_NAME,
        p.secret_key(),
    )
    .await
    {
        Ok(s) => s,
        Err(e) => return e,
    };
    if let Some(secret) = &global
        && !verify(p, &h, &body, secret)
    {
        return (
            StatusCode::UNAUTHORIZED,
            "webhook secret verification failed".into(),
        );
    }
    let push = match parse(p, &h, &body) {
        Ok(Event::Push(push)) => push,
        Ok(Event::Other(kind)) => return (StatusCode::OK, format!("ignored event {kind:?}")),
        Err(e) => return (StatusCode::BAD_REQUEST, e.to_string()),
    };
    let targets: Vec<Arc<GitRepo>> = ctx
        .stores
        .gitrepos
        .state()
        .into_iter()
        .filter(|g| g.metadata.deletion_timestamp.is_none() && matches(g, &push))
        .collect();
    // Verify every GitRepo's own secret before changing anything: a failure changes nothing.
    for g in &targets {
        let ns = g.metadata.namespace.clone().unwrap_or_default();
        let name = g.metadata.name.clone().unwrap_or_default();
        if !g.spec.webhook_secret.is_empty() {
            // The GitRepo's own secret replaces the global one for it.
            match secret_value(&ctx, &ns, &g.spec.webhook_secret, p.secret_key()).await {
                Ok(Some(s)) if verify(p, &h, &body, &s) => {}
                Ok(Some(_)) => {
                    return (
                        StatusCode::UNAUTHORIZED,
                        format!("webhook secret verification failed for gitrepo {ns}/{name}"),
                    );
                }
                Ok(None) => {
                    return (
                        StatusCode::UNAUTHORIZED,
                        format!(
                            "gitrepo {ns}/{name}: webhook secret {ns}/{} has no key {:?}",
                            g.spec.webhook_secret,
                            p.secret_key()
                        ),
                    );
                }
                Err(e) => return e,
            }
        } else if global.is_none() {
            tracing::warn!(
                "webhook for gitrepo {ns}/{name} accepted without a secret (deprecated: set secret {}/{WEBHOOK_SECRET_NAME})",
                ctx.opts.system_namespace
            );
        }
    }
    let mut updated = 0;
    for g in targets {
        let ns = g.metadata.namespace.clone().unwrap_or_default();
        let name = g.metadata.name.clone().unwrap_or_default();
        let api: Api<GitRepo> = Api::namespaced(ctx.client.clone(), &ns);
        if g.spec.polling_interval.as_deref().unwrap_or("").is_empty() {
            ctx.metrics.write();
            if let Err(e) = api
                .patch(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"spec": {"pollingInterval": "1h"}})),
                )
                .await
            {
                return (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("setting pollingInterval of gitrepo {ns}/{name}: {e}"),
                );
            }
        }
        ctx.metrics.write();
        if let Err(e) = api
            .patch_status(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {
                    "webhookCommit": push.commit,
                    "lastWebhookTime": jiff::Timestamp::now().round(jiff::Unit::Second).unwrap_or_else(|_| jiff::Timestamp::now()).to_string(),
                }})),
            )
            .await
        {
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("updating status of gitrepo {ns}/{name}: {e}"),
            );
        }
        crate::gitrepo::poll_now(&ctx, &g, &push.commit);
        let _ = ctx.triggers.gitrepo.send(ObjectRef::from(g.as_ref()));
        updated += 1;
    }
    (
        StatusCode::OK,
        format!(
            "push of {} to {}: {updated} gitrepo(s) polling",
            push.commit, push.branch
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_normalize_alike() {
        for u in [
            "https://github.com/o/r.git",
            "https://GitHub.com/o/r/",
            "git@github.com:o/r.git",
            "ssh://git@github.com:22/o/r",
            "git://github.com/o/r.git",
        ] {
            assert_eq!(normalize_url(u), "github.com/o/r", "{u}");
        }
        assert_ne!(
            normalize_url("https://github.com/o/r2"),
            normalize_url("https://github.com/o/r")
        );
    }

    #[test]
    fn github_signatures_verify() {
        let body = br#"{"ref":"refs/heads/main"}"#;
        let mut h = HeaderMap::new();
        h.insert("x-github-event", "push".parse().expect("header"));
        let sig = github_signature_256(b"s", body);
        h.insert("x-hub-signature-256", sig.parse().expect("header"));
        assert!(verify(Provider::GitHub, &h, body, b"s"));
        assert!(!verify(Provider::GitHub, &h, body, b"t"));
        assert!(!verify(Provider::GitHub, &h, b"other", b"s"));
        h.remove("x-hub-signature-256");
        assert!(!verify(Provider::GitHub, &h, body, b"s"));
    }

    #[test]
    fn gitlab_push_parses() {
        let mut h = HeaderMap::new();
        h.insert("x-gitlab-event", "Push Hook".parse().expect("header"));
        h.insert("x-gitlab-token", "tok".parse().expect("header"));
        let body = br#"{"object_kind":"push","ref":"refs/heads/dev","checkout_sha":"abc","project":{"git_http_url":"https://gl.example/g/p.git"}}"#;
        assert!(verify(Provider::GitLab, &h, body, b"tok"));
        assert!(!verify(Provider::GitLab, &h, body, b"toK"));
        let Event::Push(p) = parse(Provider::GitLab, &h, body).expect("parse") else {
            panic!("a push");
        };
        assert_eq!(p.branch, "dev");
        assert_eq!(p.commit, "abc");
        assert_eq!(p.urls, ["https://gl.example/g/p.git"]);
    }
}
