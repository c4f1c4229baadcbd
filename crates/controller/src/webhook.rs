//! Git webhook receiver (upstream `pkg/webhook`), served at `/` on the controller's listener: a
//! branch push from any provider upstream knows makes every GitRepo on that repository and branch
//! poll at once, whatever its `pollingInterval`. Providers are told apart by header, in upstream's
//! order, and each proves the secret its own way:
//!
//! | provider | header | push event | proof of the secret |
//! |---|---|---|---|
//! | Gogs | `X-Gogs-Event` | `push` | `X-Gogs-Signature`: hex HMAC-SHA256 of the body |
//! | GitHub | `X-GitHub-Event` | `push` | `X-Hub-Signature-256` (`sha256=` HMAC) or `X-Hub-Signature` (`sha1=`) |
//! | GitLab | `X-Gitlab-Event` | `Push Hook` | `X-Gitlab-Token` equal to the secret |
//! | Bitbucket Cloud | `X-Hook-UUID` | `X-Event-Key: repo:push` | `X-Hook-UUID` equal to the secret |
//! | Bitbucket Server | `X-Event-Key` | `repo:refs_changed` | `X-Hub-Signature`: `sha256=` HMAC |
//! | Azure DevOps | `X-Vss-ActivityId` or `X-Vss-SubscriptionId` | `"eventType": "git.push"` | HTTP basic auth |
//!
//! Secrets as upstream: the GitRepo's `webhookSecret` (a Secret in its namespace) when set, else
//! the Secret `gitjob-webhook` in the system namespace; keys `github`, `gitlab`, `gogs`,
//! `bitbucket`, `bitbucket-server`, and `azure-username` with `azure-password`. A request that
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
    /// Gogs (and Gitea, which sends the same headers).
    Gogs,
    /// GitHub (and GitHub Enterprise).
    GitHub,
    /// GitLab.
    GitLab,
    /// Bitbucket Cloud.
    Bitbucket,
    /// Bitbucket Server (Data Center).
    BitbucketServer,
    /// Azure DevOps (service hooks).
    AzureDevOps,
}

impl Provider {
    /// The keys of the provider's secret in a webhook Secret, in the order [`verify`] takes them.
    pub fn secret_keys(self) -> &'static [&'static str] {
        match self {
            Provider::Gogs => &["gogs"],
            Provider::GitHub => &["github"],
            Provider::GitLab => &["gitlab"],
            Provider::Bitbucket => &["bitbucket"],
            Provider::BitbucketServer => &["bitbucket-server"],
            Provider::AzureDevOps => &["azure-username", "azure-password"],
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

/// The provider named by the request's headers, checked in upstream's order (Gogs first: it
/// also sends GitHub's headers).
pub fn provider(h: &HeaderMap) -> Option<Provider> {
    let has = |name: &str| header(h, name).is_some_and(|v| !v.is_empty());
    if has("x-gogs-event") {
        Some(Provider::Gogs)
    } else if has("x-github-event") {
        Some(Provider::GitHub)
    } else if has("x-gitlab-event") {
        Some(Provider::GitLab)
    } else if has("x-hook-uuid") {
        Some(Provider::Bitbucket)
    } else if has("x-event-key") {
        Some(Provider::BitbucketServer)
    } else if has("x-vss-activityid") || has("x-vss-subscriptionid") {
        Some(Provider::AzureDevOps)
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

fn hmac_matches<M: Mac + hmac::digest::KeyInit>(secret: &[u8], body: &[u8], mac: &[u8]) -> bool {
    let Ok(mut m) = <M as hmac::digest::KeyInit>::new_from_slice(secret) else {
        return false;
    };
    m.update(body);
    m.verify_slice(mac).is_ok()
}

/// `a == b` in time that does not depend on where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Whether the request carries proof of the secret: `secret` holds the values of
/// [`Provider::secret_keys`], in that order. Comparisons are constant-time.
pub fn verify(p: Provider, h: &HeaderMap, body: &[u8], secret: &[Vec<u8>]) -> bool {
    let Some(key) = secret.first() else {
        return false;
    };
    let signed = |name: &str, prefix: &str| {
        header(h, name)
            .and_then(|sig| sig.strip_prefix(prefix))
            .and_then(unhex)
    };
    match p {
        Provider::GitHub => {
            if header(h, "x-hub-signature-256").is_some() {
                signed("x-hub-signature-256", "sha256=")
                    .is_some_and(|mac| hmac_matches::<Hmac<sha2::Sha256>>(key, body, &mac))
            } else {
                signed("x-hub-signature", "sha1=")
                    .is_some_and(|mac| hmac_matches::<Hmac<sha1::Sha1>>(key, body, &mac))
            }
        }
        Provider::Gogs => signed("x-gogs-signature", "")
            .is_some_and(|mac| hmac_matches::<Hmac<sha2::Sha256>>(key, body, &mac)),
        Provider::BitbucketServer => signed("x-hub-signature", "sha256=")
            .is_some_and(|mac| hmac_matches::<Hmac<sha2::Sha256>>(key, body, &mac)),
        Provider::GitLab => same(header(h, "x-gitlab-token").unwrap_or("").as_bytes(), key),
        Provider::Bitbucket => same(header(h, "x-hook-uuid").unwrap_or("").as_bytes(), key),
        Provider::AzureDevOps => {
            use base64::Engine;
            let Some(password) = secret.get(1) else {
                return false;
            };
            let given = header(h, "authorization")
                .and_then(|a| a.strip_prefix("Basic "))
                .and_then(|b| {
                    base64::engine::general_purpose::STANDARD
                        .decode(b.trim())
                        .ok()
                })
                .unwrap_or_default();
            let mut want = key.clone();
            want.push(b':');
            want.extend_from_slice(password);
            same(&given, &want)
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

/// `refs/heads/<branch>` → the branch, or `None` for any other ref (tags).
fn branch_of(r#ref: &str) -> Option<&str> {
    r#ref.strip_prefix("refs/heads/")
}

/// `https://ORG.visualstudio.com/P/_git/R` → `https://dev.azure.com/ORG/P/_git/R`: Azure DevOps
/// gives either form for one repository (upstream rewrites the same way).
fn azure_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let host = authority.rsplit('@').next().unwrap_or(authority);
    match host.strip_suffix(".visualstudio.com") {
        Some(org) if !org.contains('.') => format!("{scheme}://dev.azure.com/{org}/{path}"),
        _ => url.to_string(),
    }
}

/// Parses a provider's payload.
pub fn parse(p: Provider, h: &HeaderMap, body: &[u8]) -> Result<Event, PayloadError> {
    let json = |event: &str| -> Result<Value, PayloadError> {
        serde_json::from_slice(body).map_err(|source| PayloadError {
            event: event.to_string(),
            source,
        })
    };
    let other = |kind: &str| Ok(Event::Other(kind.to_string()));
    let (branch, commit, urls) = match p {
        Provider::GitHub | Provider::Gogs => {
            let name = if p == Provider::GitHub {
                "x-github-event"
            } else {
                "x-gogs-event"
            };
            let kind = header(h, name).unwrap_or("");
            if kind != "push" {
                return other(kind);
            }
            let v = json(kind)?;
            let repo = v.get("repository").cloned().unwrap_or(Value::Null);
            let urls = strs(
                &repo,
                &["html_url", "clone_url", "ssh_url", "git_url", "url"],
            );
            let r#ref = v.get("ref").and_then(Value::as_str).unwrap_or("");
            let Some(branch) = branch_of(r#ref) else {
                return other(&format!("{kind} of {ref}"));
            };
            (branch.to_string(), strs(&v, &["after"]), urls)
        }
        Provider::GitLab => {
            let kind = header(h, "x-gitlab-event").unwrap_or("");
            if kind != "Push Hook" {
                return other(kind);
            }
            let v = json(kind)?;
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
            let r#ref = v.get("ref").and_then(Value::as_str).unwrap_or("");
            let Some(branch) = branch_of(r#ref) else {
                return other(&format!("{kind} of {ref}"));
            };
            let commit = strs(&v, &["checkout_sha", "after"]);
            (branch.to_string(), commit, urls)
        }
        Provider::Bitbucket => {
            let kind = header(h, "x-event-key").unwrap_or("");
            if kind != "repo:push" {
                return other(kind);
            }
            let v = json(kind)?;
            let urls = strs(&v["repository"]["links"]["html"], &["href"]);
            // Upstream reads the first change only.
            let new = &v["push"]["changes"][0]["new"];
            if new["type"].as_str() != Some("branch") {
                return other(&format!("{kind} of a {}", new["type"]));
            }
            let branch = new["name"].as_str().unwrap_or("").to_string();
            (branch, strs(&new["target"], &["hash"]), urls)
        }
        Provider::BitbucketServer => {
            let kind = header(h, "x-event-key").unwrap_or("");
            if kind != "repo:refs_changed" {
                return other(kind);
            }
            let v = json(kind)?;
            let urls = v["repository"]["links"]["clone"]
                .as_array()
                .map(|links| {
                    links
                        .iter()
                        .filter(|l| matches!(l["name"].as_str(), Some("http" | "ssh")))
                        .flat_map(|l| strs(l, &["href"]))
                        .collect()
                })
                .unwrap_or_default();
            let change = &v["changes"][0];
            let r#ref = change["refId"].as_str().unwrap_or("");
            let Some(branch) = branch_of(r#ref) else {
                return other(&format!("{kind} of {ref}"));
            };
            (branch.to_string(), strs(change, &["toHash"]), urls)
        }
        Provider::AzureDevOps => {
            let v = json("git.push")?;
            let kind = v["eventType"].as_str().unwrap_or("");
            if kind != "git.push" {
                return other(kind);
            }
            let res = &v["resource"];
            let urls = strs(&res["repository"], &["remoteUrl"])
                .iter()
                .map(|u| azure_url(u))
                .collect();
            let update = &res["refUpdates"][0];
            let r#ref = update["name"].as_str().unwrap_or("");
            let Some(branch) = branch_of(r#ref) else {
                return other(&format!("{kind} of {ref}"));
            };
            (branch.to_string(), strs(update, &["newObjectId"]), urls)
        }
    };
    Ok(Event::Push(Push {
        branch,
        commit: commit.into_iter().next().unwrap_or_default(),
        urls,
    }))
}

/// `host/path` of a repository URL, lower-cased host, without scheme, user, port, trailing `/`
/// or `.git`: `https://github.com/o/r.git`, `git@github.com:o/r` and `ssh://git@github.com:22/o/r`
/// all give `github.com/o/r` (upstream matches GitRepos by a regex over the same variants), and
/// Azure DevOps' https and ssh forms give `dev.azure.com/org/project/repo`.
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
    let host = host.to_ascii_lowercase();
    // Azure DevOps: `git@ssh.dev.azure.com:v3/O/P/R` and `https://dev.azure.com/O/P/_git/R` are
    // one repository (upstream's regex allows `ssh.`, `v3/` and `_git/` the same way).
    let host = host.strip_prefix("ssh.").unwrap_or(&host);
    let path = path.trim_matches('/');
    let path = path.strip_suffix(".git").unwrap_or(path);
    let path = match path.split_once('/') {
        Some((v, rest))
            if v.len() == 2 && v.starts_with('v') && v[1..].chars().all(|c| c.is_ascii_digit()) =>
        {
            rest
        }
        _ => path,
    };
    format!("{host}/{}", path.replacen("/_git/", "/", 1))
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

/// The values of `keys` in Secret `ns/name`: `None` when the Secret or one of the keys is absent.
async fn secret_value(
    ctx: &Context,
    ns: &str,
    name: &str,
    keys: &[&str],
) -> Result<Option<Vec<Vec<u8>>>, (StatusCode, String)> {
    let api: Api<Secret> = Api::namespaced(ctx.client.clone(), ns);
    let s = api.get_opt(name).await.map_err(|e| {
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("reading secret {ns}/{name}: {e}"),
        )
    })?;
    Ok(s.and_then(|s| s.data).and_then(|d| {
        keys.iter()
            .map(|k| d.get(*k).map(|v| v.0.clone()))
            .collect()
    }))
}

/// Handles one delivery: (status code, message).
pub async fn handle(ctx: Arc<Context>, h: HeaderMap, body: Bytes) -> (StatusCode, String) {
    let Some(p) = provider(&h) else {
        return (
            StatusCode::BAD_REQUEST,
            "unknown webhook provider (none of the headers X-Gogs-Event, X-GitHub-Event, X-Gitlab-Event, X-Hook-UUID, X-Event-Key, X-Vss-ActivityId)".into(),
        );
    };
    ctx.metrics
        .webhooks
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let global = match secret_value(
        &ctx,
        &ctx.opts.system_namespace,
        WEBHOOK_SECRET_NAME,
        p.secret_keys(),
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
            match secret_value(&ctx, &ns, &g.spec.webhook_secret, p.secret_keys()).await {
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
                            "gitrepo {ns}/{name}: webhook secret {ns}/{} lacks a key of {:?}",
                            g.spec.webhook_secret,
                            p.secret_keys()
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
        assert!(verify(Provider::GitHub, &h, body, &[b"s".to_vec()]));
        assert!(!verify(Provider::GitHub, &h, body, &[b"t".to_vec()]));
        assert!(!verify(Provider::GitHub, &h, b"other", &[b"s".to_vec()]));
        h.remove("x-hub-signature-256");
        assert!(!verify(Provider::GitHub, &h, body, &[b"s".to_vec()]));
    }

    #[test]
    fn gitlab_push_parses() {
        let mut h = HeaderMap::new();
        h.insert("x-gitlab-event", "Push Hook".parse().expect("header"));
        h.insert("x-gitlab-token", "tok".parse().expect("header"));
        let body = br#"{"object_kind":"push","ref":"refs/heads/dev","checkout_sha":"abc","project":{"git_http_url":"https://gl.example/g/p.git"}}"#;
        assert!(verify(Provider::GitLab, &h, body, &[b"tok".to_vec()]));
        assert!(!verify(Provider::GitLab, &h, body, &[b"toK".to_vec()]));
        let Event::Push(p) = parse(Provider::GitLab, &h, body).expect("parse") else {
            panic!("a push");
        };
        assert_eq!(p.branch, "dev");
        assert_eq!(p.commit, "abc");
        assert_eq!(p.urls, ["https://gl.example/g/p.git"]);
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().expect("header value"));
        }
        h
    }

    fn hmac_hex(secret: &[u8], body: &[u8]) -> String {
        github_signature_256(secret, body)
            .trim_start_matches("sha256=")
            .to_string()
    }

    fn push_of(p: Provider, h: &HeaderMap, body: &[u8]) -> Push {
        match parse(p, h, body).expect("parse") {
            Event::Push(push) => push,
            other => panic!("not a push: {other:?}"),
        }
    }

    #[test]
    fn gogs_push_verifies_and_parses() {
        let body = br#"{"ref":"refs/heads/main","after":"c1","repository":{"html_url":"https://gogs.example/o/r","ssh_url":"git@gogs.example:o/r.git"}}"#;
        // Gogs sends GitHub-style headers too: Gogs wins.
        let h = headers(&[
            ("x-gogs-event", "push"),
            ("x-github-event", "push"),
            ("x-gogs-signature", &hmac_hex(b"s", body)),
        ]);
        assert_eq!(provider(&h), Some(Provider::Gogs));
        assert!(verify(Provider::Gogs, &h, body, &[b"s".to_vec()]));
        assert!(!verify(Provider::Gogs, &h, body, &[b"x".to_vec()]));
        assert!(!verify(Provider::Gogs, &h, b"{}", &[b"s".to_vec()]));
        let p = push_of(Provider::Gogs, &h, body);
        assert_eq!((p.branch.as_str(), p.commit.as_str()), ("main", "c1"));
        assert_eq!(normalize_url(&p.urls[1]), "gogs.example/o/r");
    }

    #[test]
    fn bitbucket_cloud_push_verifies_and_parses() {
        let body = br#"{"repository":{"links":{"html":{"href":"https://bitbucket.org/o/r"}}},"push":{"changes":[{"new":{"type":"branch","name":"dev","target":{"hash":"c2"}}}]}}"#;
        let h = headers(&[("x-hook-uuid", "uuid-1"), ("x-event-key", "repo:push")]);
        assert_eq!(provider(&h), Some(Provider::Bitbucket));
        assert!(verify(Provider::Bitbucket, &h, body, &[b"uuid-1".to_vec()]));
        assert!(!verify(
            Provider::Bitbucket,
            &h,
            body,
            &[b"uuid-2".to_vec()]
        ));
        let p = push_of(Provider::Bitbucket, &h, body);
        assert_eq!((p.branch.as_str(), p.commit.as_str()), ("dev", "c2"));
        assert_eq!(p.urls, ["https://bitbucket.org/o/r"]);
        let tag = br#"{"push":{"changes":[{"new":{"type":"tag","name":"v1"}}]}}"#;
        assert!(matches!(
            parse(Provider::Bitbucket, &h, tag),
            Ok(Event::Other(_))
        ));
    }

    #[test]
    fn bitbucket_server_push_verifies_and_parses() {
        let body = br#"{"eventKey":"repo:refs_changed","repository":{"links":{"clone":[{"href":"ssh://git@bb.example:7999/p/r.git","name":"ssh"},{"href":"https://bb.example/scm/p/r.git","name":"http"}]}},"changes":[{"refId":"refs/heads/main","toHash":"c3"}]}"#;
        let h = headers(&[
            ("x-event-key", "repo:refs_changed"),
            ("x-hub-signature", &github_signature_256(b"s", body)),
        ]);
        assert_eq!(provider(&h), Some(Provider::BitbucketServer));
        assert!(verify(
            Provider::BitbucketServer,
            &h,
            body,
            &[b"s".to_vec()]
        ));
        assert!(!verify(
            Provider::BitbucketServer,
            &h,
            body,
            &[b"t".to_vec()]
        ));
        let p = push_of(Provider::BitbucketServer, &h, body);
        assert_eq!((p.branch.as_str(), p.commit.as_str()), ("main", "c3"));
        assert_eq!(p.urls.len(), 2);
        let ping = headers(&[("x-event-key", "diagnostics:ping")]);
        assert!(matches!(
            parse(Provider::BitbucketServer, &ping, b"{}"),
            Ok(Event::Other(_))
        ));
    }

    #[test]
    fn azure_devops_push_verifies_and_parses() {
        use base64::Engine;
        let body = br#"{"eventType":"git.push","resource":{"refUpdates":[{"name":"refs/heads/main","newObjectId":"c4"}],"repository":{"remoteUrl":"https://org.visualstudio.com/proj/_git/repo"}}}"#;
        let auth = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode("user:pass")
        );
        let h = headers(&[("x-vss-activityid", "a1"), ("authorization", &auth)]);
        assert_eq!(provider(&h), Some(Provider::AzureDevOps));
        let creds = [b"user".to_vec(), b"pass".to_vec()];
        assert!(verify(Provider::AzureDevOps, &h, body, &creds));
        assert!(!verify(
            Provider::AzureDevOps,
            &h,
            body,
            &[b"user".to_vec(), b"nope".to_vec()]
        ));
        assert!(!verify(Provider::AzureDevOps, &h, body, &creds[..1]));
        let p = push_of(Provider::AzureDevOps, &h, body);
        assert_eq!((p.branch.as_str(), p.commit.as_str()), ("main", "c4"));
        // The payload's old-style URL, the https and the ssh clone URLs are one repository.
        let want = normalize_url(&p.urls[0]);
        assert_eq!(want, "dev.azure.com/org/proj/repo");
        for u in [
            "https://org@dev.azure.com/org/proj/_git/repo",
            "git@ssh.dev.azure.com:v3/org/proj/repo",
        ] {
            assert_eq!(normalize_url(u), want, "{u}");
        }
    }

    #[test]
    fn malformed_payloads_are_errors_not_panics() {
        for p in [
            Provider::Gogs,
            Provider::GitHub,
            Provider::GitLab,
            Provider::Bitbucket,
            Provider::BitbucketServer,
            Provider::AzureDevOps,
        ] {
            let h = headers(&[
                ("x-gogs-event", "push"),
                ("x-github-event", "push"),
                ("x-gitlab-event", "Push Hook"),
                ("x-event-key", "repo:push"),
            ]);
            for body in [&b"{"[..], b"[]", b"null", b"{\"ref\":7}", b"\xff"] {
                let _ = parse(p, &h, body);
                let _ = verify(p, &h, body, &[]);
            }
        }
    }
}
