//! GitRepo reconciler (upstream gitjob + polling + status reconcilers, without a Job): polls the
//! repository with `ls-remote` (interval with ±10% jitter, capped backoff on errors), fetches a
//! new commit once into the shared [`crate::git::FetchCache`], builds the Bundles in-process with
//! `fleet_bundle` exactly as `fleet apply` would, writes the ones that differ, prunes stale ones
//! (only when every path built), and aggregates the GitRepo's status from its Bundles and BDs.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fleet_api::keys::*;
use fleet_api::{Bundle, GitRepo, GitRepoStatus, GitTarget};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use serde_json::json;

use crate::bundle::{ReconcileError, kerr};
use crate::context::{Context, QueueConfig, run_queue};
use crate::git::{Credentials, GitError};
use crate::{conditions, secs};

/// Longest wait between retries of a failing repository.
pub const MAX_BACKOFF: Duration = Duration::from_secs(300);

/// What the controller remembers about one GitRepo between reconciles.
#[derive(Clone, Debug, Default)]
pub struct PollState {
    next_poll: Option<Instant>,
    polled_generation: i64,
    commit: String,
    poll_error: Option<GitError>,
    failures: u32,
    /// (commit, generation, forceSyncGeneration) whose Bundles were written.
    applied: Option<(String, i64, i64)>,
    /// Fetch error of the last attempt.
    fetch_error: Option<String>,
    /// Per-path build errors of the last build.
    build_errors: Vec<String>,
    /// Commit announced by a webhook and when: polled every 2 s until seen, for up to 30 s.
    webhook: Option<(String, Instant)>,
    /// Why the namespace's GitRepoRestrictions refuse the GitRepo (`Accepted=False`).
    refused: Option<String>,
    /// Fingerprint of the Helm credential Secrets, read at each poll, and the one the last build
    /// used: a changed Secret rebuilds the Bundles (upstream reruns its job on a Secret change).
    helm_secrets: u64,
    built_helm_secrets: u64,
    /// When the status was last computed and how long that took: a pass that builds nothing
    /// and whose poll (if any) changed nothing is paced by it ([`crate::context::Pacer`]),
    /// since the summary reads every BD of the GitRepo (a fifth of the manager at 100,000 BDs
    /// when it ran on every trigger; a seventh when it still ran after every 1 s poll).
    summarized: Option<(Instant, Duration)>,
    /// The slot a deferred summary booked from the shared [`crate::context::Pacer`].
    summary_booked: Option<Instant>,
}

impl PollState {
    /// What of this state the status shows besides the summary (commit, poll error, refusal):
    /// a pass that changes none of it and builds nothing only refreshes the summary, and that
    /// is paced.
    fn shown(&self) -> (String, Option<(String, bool)>, Option<String>) {
        (
            self.commit.clone(),
            self.poll_error
                .as_ref()
                .map(|e| (e.message.clone(), e.auth)),
            self.refused.clone(),
        )
    }
}

/// How long a webhook's commit is waited for (upstream: 30 s of 2 s requeues).
const WEBHOOK_WAIT: Duration = Duration::from_secs(30);

/// Makes GitRepo `g` poll on its next reconcile and keep polling (2 s) until `commit` shows up
/// or 30 s pass (the webhook may arrive before the server serves the commit).
pub(crate) fn poll_now(ctx: &Context, g: &GitRepo, commit: &str) {
    let uid = g.metadata.uid.clone().unwrap_or_default();
    if let Ok(mut m) = ctx.polls.lock() {
        let st = m.entry(uid).or_default();
        st.next_poll = None;
        st.webhook = (!commit.is_empty()).then(|| (commit.to_string(), Instant::now()));
    }
}

/// A stream of the keys sent on `rx` (a trigger channel).
pub fn channel_stream<T: Send + 'static>(
    rx: tokio::sync::mpsc::UnboundedReceiver<T>,
) -> impl futures::Stream<Item = T> + Send + 'static {
    futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|x| (x, rx)) })
}

/// Runs the GitRepo controller.
pub async fn controller(ctx: Arc<Context>) {
    let parts = ctx.take_queue(|s| s.gitrepos.take(), |r| r.gitrepo.take());
    let cfg = QueueConfig {
        kind: "gitrepo",
        debounce: Duration::ZERO,
        trigger_debounce: Duration::from_millis(100),
        concurrency: 8,
        // Its own status writes do not queue a GitRepo again (polling has its own timer and
        // BundleDeployment changes their trigger); of its status it reads only whether a
        // commit was ever recorded.
        skip_status_only: Some(|g: &GitRepo| {
            u64::from(g.status.as_ref().is_some_and(|s| !s.commit.is_empty()))
        }),
    };
    run_queue(
        ctx.clone(),
        parts,
        ctx.stores.gitrepos.clone(),
        cfg,
        reconcile,
    )
    .await;
}

/// `pollingInterval` (Go duration such as `15s`, `1m`, `1h30m`) or the default.
pub fn polling_interval(g: &GitRepo, default: Duration) -> Duration {
    g.spec
        .polling_interval
        .as_deref()
        .and_then(|s| fleet_api::duration::parse_go_duration(s).ok())
        .filter(|d| !d.is_zero())
        .unwrap_or(default)
}

/// ±10% jitter.
fn jitter(d: Duration) -> Duration {
    let r = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    let f = 0.9 + (r % 1000) as f64 / 1000.0 * 0.2;
    d.mul_f64(f)
}

fn backoff(failures: u32) -> Duration {
    let d = Duration::from_secs(5).saturating_mul(1u32 << failures.min(10));
    d.min(MAX_BACKOFF)
}

async fn credentials(ctx: &Context, g: &GitRepo) -> Result<Option<Credentials>, String> {
    let name = &g.spec.client_secret_name;
    if name.is_empty() {
        return Ok(None);
    }
    let ns = g.metadata.namespace.clone().unwrap_or_default();
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &ns);
    let s = secrets
        .get_opt(name)
        .await
        .map_err(|e| format!("reading secret {ns}/{name}: {e}"))?
        .ok_or_else(|| format!("secret {ns}/{name} not found"))?;
    let data = s.data.unwrap_or_default();
    let get = |k: &str| {
        data.get(k)
            .map(|v| String::from_utf8_lossy(&v.0).into_owned())
            .unwrap_or_default()
    };
    Ok(Some(Credentials {
        username: get("username"),
        password: get("password"),
    }))
}

fn state_of(ctx: &Context, uid: &str) -> PollState {
    ctx.polls
        .lock()
        .map(|m| m.get(uid).cloned().unwrap_or_default())
        .unwrap_or_default()
}

fn save_state(ctx: &Context, uid: &str, st: PollState) {
    if let Ok(mut m) = ctx.polls.lock() {
        m.insert(uid.to_string(), st);
    }
}

async fn reconcile(g: Arc<GitRepo>, ctx: Arc<Context>) -> Result<Action, ReconcileError> {
    ctx.metrics
        .gitrepo_reconciles
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let ns = g.metadata.namespace.clone().unwrap_or_default();
    let name = g.metadata.name.clone().unwrap_or_default();
    let uid = g.metadata.uid.clone().unwrap_or_default();
    let api: Api<GitRepo> = Api::namespaced(ctx.client.clone(), &ns);
    let fins: Vec<String> = g.metadata.finalizers.clone().unwrap_or_default();
    let has_finalizer = fins.iter().any(|f| f == GITREPO_FINALIZER);
    if g.metadata.deletion_timestamp.is_some() {
        if !has_finalizer {
            return Ok(Action::await_change());
        }
        let left = bundles_of(&ctx, &ns, &name);
        if !left.is_empty() {
            let bapi: Api<Bundle> = Api::namespaced(ctx.client.clone(), &ns);
            for b in left
                .iter()
                .filter(|b| b.metadata.deletion_timestamp.is_none())
            {
                let bn = b.metadata.name.clone().unwrap_or_default();
                ctx.metrics.write();
                match bapi.delete(&bn, &DeleteParams::default()).await {
                    Ok(_) => {}
                    Err(kube::Error::Api(e)) if e.code == 404 => {}
                    Err(e) => return Err(kerr(format!("deleting bundle {ns}/{bn}"))(e)),
                }
            }
            return Ok(Action::requeue(secs(2)));
        }
        let keep: Vec<&String> = fins.iter().filter(|f| *f != GITREPO_FINALIZER).collect();
        ctx.metrics.write();
        api.patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": keep, "resourceVersion": g.metadata.resource_version}})),
        )
        .await
        .map_err(kerr(format!("removing finalizer of gitrepo {ns}/{name}")))?;
        if let Ok(mut m) = ctx.polls.lock() {
            m.remove(&uid);
        }
        return Ok(Action::await_change());
    }
    if !has_finalizer {
        let mut f = fins.clone();
        f.push(GITREPO_FINALIZER.into());
        ctx.metrics.write();
        api.patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": f, "resourceVersion": g.metadata.resource_version}})),
        )
        .await
        .map_err(kerr(format!("adding finalizer to gitrepo {ns}/{name}")))?;
        return Ok(Action::await_change());
    }

    let mut st = state_of(&ctx, &uid);
    let shown_before = st.shown();
    // GitRepoRestrictions: refused → no polling, the reason in `Accepted`; defaults → the spec.
    let restrictions = ctx.stores.restrictions.state();
    let here: Vec<&fleet_api::GitRepoRestriction> = restrictions
        .iter()
        .filter(|r| r.metadata.namespace.as_deref() == Some(ns.as_str()))
        .map(|r| r.as_ref())
        .collect();
    match crate::restrictions::authorize(&g, &here) {
        Err(msg) => {
            tracing::warn!("gitrepo {ns}/{name}: {msg}");
            st.refused = Some(msg);
            let status = compute_status(&ctx, &g, &st);
            save_state(&ctx, &uid, st);
            write_status(&ctx, &api, &g, status).await?;
            return Ok(Action::await_change());
        }
        Ok(r)
            if r.service_account != g.spec.service_account
                || r.client_secret_name != g.spec.client_secret_name =>
        {
            ctx.metrics.write();
            api.patch(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {
                    "serviceAccount": r.service_account,
                    "clientSecretName": r.client_secret_name,
                }})),
            )
            .await
            .map_err(kerr(format!(
                "setting restriction defaults of gitrepo {ns}/{name}"
            )))?;
            return Ok(Action::await_change());
        }
        Ok(_) => st.refused = None,
    }

    let generation = g.metadata.generation.unwrap_or(0);
    let now = Instant::now();
    let interval = polling_interval(&g, ctx.opts.default_polling_interval);
    let refs = crate::git::wanted_ref(&g.spec.branch, &g.spec.revision);
    let due = st.next_poll.is_none_or(|t| t <= now) || st.polled_generation != generation;
    let may_poll = !g.spec.disable_polling || st.commit.is_empty() || st.webhook.is_some();
    let mut creds = None;
    let polled = due && may_poll;
    if polled {
        st.helm_secrets = helm_secrets_fingerprint(&ctx, &g).await;
        match credentials(&ctx, &g).await {
            Ok(c) => {
                creds = c;
                ctx.metrics
                    .polls
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let scratch = ctx.fetch.scratch();
                let (url, r, c) = (g.spec.repo.clone(), refs.clone(), creds.clone());
                let res = tokio::task::spawn_blocking(move || {
                    crate::git::ls_remote(&scratch, &url, &r, c)
                })
                .await
                .unwrap_or_else(|e| {
                    Err(GitError {
                        message: e.to_string(),
                        auth: false,
                    })
                });
                match res {
                    Ok(commit) => {
                        st.commit = commit;
                        st.poll_error = None;
                        st.failures = 0;
                        st.next_poll = Some(now + jitter(interval));
                    }
                    Err(e) => {
                        st.poll_error = Some(e);
                        st.next_poll = Some(now + backoff(st.failures));
                        st.failures += 1;
                    }
                }
            }
            Err(msg) => {
                st.poll_error = Some(GitError {
                    message: msg,
                    auth: true,
                });
                st.next_poll = Some(now + backoff(st.failures));
                st.failures += 1;
            }
        }
        st.polled_generation = generation;
        if let Some((want, since)) = &st.webhook {
            if *want == st.commit || since.elapsed() >= WEBHOOK_WAIT {
                st.webhook = None;
            } else if st.poll_error.is_none() {
                st.next_poll = Some(now + Duration::from_secs(2));
            }
        }
    }

    let want = (st.commit.clone(), generation, g.spec.force_sync_generation);
    let stale = st.applied.as_ref() != Some(&want) || st.built_helm_secrets != st.helm_secrets;
    let build = !st.commit.is_empty() && stale && st.poll_error.is_none();
    // A poll that finds the same commit and the same error (every second, the bench's
    // interval) leaves the summary paced.
    if st.shown() == shown_before
        && !build
        && g.status.is_some()
        && let Some(last) = st.summarized
        && let Some(wait) = ctx.pacer.wait(last, &mut st.summary_booked, now)
    {
        let until_poll = st
            .next_poll
            .map_or(wait, |t| t.saturating_duration_since(now));
        save_state(&ctx, &uid, st);
        return Ok(Action::requeue(
            wait.min(until_poll).max(Duration::from_millis(100)),
        ));
    }
    if build {
        if creds.is_none() {
            creds = credentials(&ctx, &g).await.ok().flatten();
        }
        let reference = refs.first().cloned().unwrap_or_default();
        match ctx
            .fetch
            .checkout(&g.spec.repo, &reference, &st.commit, creds)
            .await
        {
            Ok(dir) => {
                st.fetch_error = None;
                st.build_errors = build_and_apply(&ctx, &g, &dir, &st.commit).await?;
                st.applied = Some(want);
                st.built_helm_secrets = st.helm_secrets;
            }
            Err(e) => {
                st.fetch_error = Some(e.message.clone());
                st.next_poll = Some(now + backoff(st.failures));
                st.failures += 1;
            }
        }
    }
    let next = st.next_poll;
    let awaiting_webhook = st.webhook.is_some();
    let started = Instant::now();
    let status = compute_status(&ctx, &g, &st);
    st.summarized = Some((started, started.elapsed()));
    st.summary_booked = None;
    save_state(&ctx, &uid, st);
    write_status(&ctx, &api, &g, status).await?;
    if g.spec.disable_polling
        && !awaiting_webhook
        && next.is_some()
        && g.status.as_ref().is_some_and(|s| !s.commit.is_empty())
    {
        return Ok(Action::await_change());
    }
    Ok(match next {
        Some(t) => Action::requeue(
            t.saturating_duration_since(Instant::now())
                .max(Duration::from_millis(100)),
        ),
        None => Action::await_change(),
    })
}

/// Writes `status` where it differs from the cached one.
async fn write_status(
    ctx: &Context,
    api: &Api<GitRepo>,
    g: &GitRepo,
    status: GitRepoStatus,
) -> Result<(), ReconcileError> {
    if g.status.as_ref() == Some(&status) {
        return Ok(());
    }
    let name = g.metadata.name.clone().unwrap_or_default();
    let mut obj = g.clone();
    obj.status = Some(status);
    ctx.metrics.write();
    api.replace_status(&name, &PostParams::default(), &obj)
        .await
        .map_err(kerr(format!(
            "updating status of gitrepo {}/{name}",
            g.metadata.namespace.as_deref().unwrap_or("")
        )))?;
    Ok(())
}

fn bundles_of(ctx: &Context, ns: &str, repo: &str) -> Vec<Arc<Bundle>> {
    let mut out: Vec<Arc<Bundle>> = ctx
        .stores
        .bundles
        .state()
        .into_iter()
        .filter(|b| {
            b.metadata.namespace.as_deref() == Some(ns)
                && b.metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(REPO_LABEL))
                    .map(String::as_str)
                    == Some(repo)
        })
        .collect();
    // By name: the status lists the first non-ready ones, and the cache's order is arbitrary
    // (a restarted manager would otherwise rewrite an unchanged status in another order).
    out.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    out
}

/// The targets file upstream writes for the job: the GitRepo targets (default: the `default`
/// group) as both `targets` and `targetRestrictions`.
pub fn targets_file_json(g: &GitRepo) -> serde_json::Value {
    let targets: Vec<GitTarget> = if g.spec.targets.is_empty() {
        vec![GitTarget {
            name: DEFAULT_TARGET.into(),
            cluster_group: DEFAULT_TARGET.into(),
            ..Default::default()
        }]
    } else {
        g.spec.targets.clone()
    };
    json!({"targets": targets, "targetRestrictions": targets})
}

/// The `fleet apply` options the upstream job would pass for this GitRepo.
pub fn apply_options(
    g: &GitRepo,
    commit: &str,
    targets_file: &std::path::Path,
) -> fleet_bundle::ApplyOptions {
    let mut labels: BTreeMap<String, String> = g.metadata.labels.clone().unwrap_or_default();
    labels.insert(
        REPO_LABEL.into(),
        g.metadata.name.clone().unwrap_or_default(),
    );
    labels.insert(COMMIT_LABEL.into(), commit.into());
    fleet_bundle::ApplyOptions {
        namespace: g.metadata.namespace.clone().unwrap_or_default(),
        targets_file: Some(targets_file.to_path_buf()),
        labels,
        service_account: g.spec.service_account.clone(),
        target_namespace: g.spec.target_namespace.clone(),
        paused: g.spec.paused,
        sync_generation: g.spec.force_sync_generation,
        keep_resources: g.spec.keep_resources,
        delete_namespace: g.spec.delete_namespace,
        correct_drift: g.spec.correct_drift.clone().unwrap_or_default(),
        helm_repo_url_regex: g.spec.helm_repo_url_regex.clone(),
        ..Default::default()
    }
}

/// Go's `strconv.ParseBool`, false when unparsable (as upstream treats these security flags).
fn go_bool(v: Option<&[u8]>) -> bool {
    matches!(v, Some(b"1" | b"t" | b"T" | b"true" | b"TRUE" | b"True"))
}

/// A hash of the data of the GitRepo's Helm credential Secrets (0 when it names none; a missing
/// or unreadable Secret hashes differently from any content).
async fn helm_secrets_fingerprint(ctx: &Context, g: &GitRepo) -> u64 {
    use std::hash::{Hash, Hasher};
    let names = [&g.spec.helm_secret_name_for_paths, &g.spec.helm_secret_name];
    if names.iter().all(|n| n.is_empty()) {
        return 0;
    }
    let ns = g.metadata.namespace.clone().unwrap_or_default();
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &ns);
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for name in names.into_iter().filter(|n| !n.is_empty()) {
        name.hash(&mut h);
        match secrets.get_opt(name).await {
            Ok(Some(s)) => {
                for (k, v) in s.data.unwrap_or_default() {
                    (k, v.0).hash(&mut h);
                }
            }
            Ok(None) => "absent".hash(&mut h),
            Err(_) => "unreadable".hash(&mut h),
        }
    }
    h.finish() | 1
}

/// Helm repository credentials for the build, as upstream's job hands them to `fleet apply`:
/// `helmSecretNameForPaths` (key `secrets-path.yaml`, per bundle path) or else `helmSecretName`
/// (keys `username`, `password`, `cacerts`, `insecureSkipVerify`, `basicHTTP`); the GitRepo's
/// `insecureSkipTLSVerify` applies to chart fetches too.
async fn helm_credentials(
    ctx: &Context,
    g: &GitRepo,
    opts: &mut fleet_bundle::ApplyOptions,
) -> Result<(), String> {
    let ns = g.metadata.namespace.clone().unwrap_or_default();
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &ns);
    let read = |field: &'static str, name: String| {
        let secrets = secrets.clone();
        let ns = ns.clone();
        async move {
            secrets
                .get_opt(&name)
                .await
                .map_err(|e| format!("failed to look up {field}, error: {e}"))?
                .map(|s| s.data.unwrap_or_default())
                .ok_or_else(|| {
                    format!("failed to look up {field}, error: secret {ns}/{name} not found")
                })
        }
    };
    if !g.spec.helm_secret_name_for_paths.is_empty() {
        let name = g.spec.helm_secret_name_for_paths.clone();
        let data = read("helmSecretNameForPaths", name.clone()).await?;
        let text = data
            .get("secrets-path.yaml")
            .map(|v| String::from_utf8_lossy(&v.0).into_owned())
            .ok_or_else(|| format!("secret {ns}/{name} has no key secrets-path.yaml"))?;
        let file = std::path::Path::new("secrets-path.yaml");
        opts.auth_by_path = fleet_bundle::Auth::by_path(file, &text)
            .map_err(|e| format!("secret {ns}/{name}: {e}"))?;
    } else if !g.spec.helm_secret_name.is_empty() {
        let data = read("helmSecretName", g.spec.helm_secret_name.clone()).await?;
        let get = |k: &str| data.get(k).map(|v| v.0.clone()).unwrap_or_default();
        opts.auth.username = String::from_utf8_lossy(&get("username")).into_owned();
        opts.auth.password = String::from_utf8_lossy(&get("password")).into_owned();
        opts.auth.ca_bundle = get("cacerts");
        opts.auth.insecure_skip_verify = go_bool(data.get("insecureSkipVerify").map(|v| &v.0[..]));
        opts.auth.basic_http = go_bool(data.get("basicHTTP").map(|v| &v.0[..]));
    }
    opts.auth.insecure_skip_verify |= g.spec.insecure_skip_tls_verify;
    Ok(())
}

/// Builds every path of the checkout into Bundles and writes them; returns per-path errors
/// (`path P: file: reason`). Stale bundles are pruned only when every path built.
async fn build_and_apply(
    ctx: &Arc<Context>,
    g: &GitRepo,
    dir: &std::path::Path,
    commit: &str,
) -> Result<Vec<String>, ReconcileError> {
    let ns = g.metadata.namespace.clone().unwrap_or_default();
    let name = g.metadata.name.clone().unwrap_or_default();
    let tf = tempfile::NamedTempFile::new().map_err(|e| ReconcileError::Other(e.to_string()))?;
    std::fs::write(tf.path(), targets_file_json(g).to_string())
        .map_err(|e| ReconcileError::Other(e.to_string()))?;
    let mut opts = apply_options(g, commit, tf.path());
    if let Err(e) = helm_credentials(ctx, g, &mut opts).await {
        return Ok(vec![e]);
    }
    let paths = if g.spec.paths.is_empty() {
        vec![".".to_string()]
    } else {
        g.spec.paths.clone()
    };
    ctx.metrics
        .builds
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let (d, n) = (dir.to_path_buf(), name.clone());
    let built = tokio::task::spawn_blocking(move || {
        let mut ok = Vec::new();
        let mut errs = Vec::new();
        for p in &paths {
            match fleet_bundle::create_bundles(&d, &n, std::slice::from_ref(p), &opts) {
                Ok(b) => ok.extend(b),
                Err(e) => errs.push(format!("path {p}: {e}")),
            }
        }
        (ok, errs)
    })
    .await
    .map_err(|e| ReconcileError::Other(e.to_string()))?;
    drop(tf);
    let (bundles, errors) = built;
    let bapi: Api<Bundle> = Api::namespaced(ctx.client.clone(), &ns);
    let mut produced = HashSet::new();
    for bb in bundles {
        let mut b = bb.bundle;
        let bn = b.metadata.name.clone().unwrap_or_default();
        produced.insert(bn.clone());
        let (hash, data) =
            fleet_bundle::values::extract_values(&b).map_err(ReconcileError::Other)?;
        if !hash.is_empty() {
            fleet_bundle::values::clear_values(&mut b);
        }
        b.spec.values_hash = hash.clone();
        let cached = ctx.stores.bundles.get(&ObjectRef::new(&bn).within(&ns));
        if cached
            .as_ref()
            .is_some_and(|c| c.metadata.deletion_timestamp.is_some())
        {
            return Err(ReconcileError::Other(format!(
                "the bundle {bn:?} is being deleted, cannot create during a delete operation"
            )));
        }
        if !data.is_empty() && cached.as_ref().map(|c| &c.spec.values_hash) != Some(&hash) {
            crate::bundle::apply_values_secret(
                ctx,
                &ns,
                &bn,
                b.metadata.labels.clone(),
                SECRET_TYPE_BUNDLE_VALUES,
                data,
            )
            .await
            .map_err(kerr(format!("writing values secret {ns}/{bn}")))?;
        }
        match cached {
            Some(c) => {
                if c.spec == b.spec
                    && c.metadata.labels == b.metadata.labels
                    && c.metadata.annotations == b.metadata.annotations
                {
                    continue;
                }
                let mut obj = (*c).clone();
                obj.spec = b.spec;
                obj.metadata.labels = b.metadata.labels;
                obj.metadata.annotations = b.metadata.annotations;
                obj.status = None;
                ctx.metrics.write();
                bapi.replace(&bn, &PostParams::default(), &obj)
                    .await
                    .map_err(kerr(format!("updating bundle {ns}/{bn}")))?;
            }
            None => {
                b.metadata.namespace = Some(ns.clone());
                ctx.metrics.write();
                match bapi.create(&PostParams::default(), &b).await {
                    Ok(_) => {}
                    Err(kube::Error::Api(e)) if e.code == 409 => {
                        return Err(ReconcileError::Other(format!(
                            "bundle {ns}/{bn} appeared meanwhile; retrying"
                        )));
                    }
                    Err(e) => return Err(kerr(format!("creating bundle {ns}/{bn}"))(e)),
                }
            }
        }
    }
    if errors.is_empty() {
        for old in bundles_of(ctx, &ns, &name) {
            let on = old.metadata.name.clone().unwrap_or_default();
            if produced.contains(&on) || old.metadata.deletion_timestamp.is_some() {
                continue;
            }
            ctx.metrics.write();
            match bapi.delete(&on, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(e)) if e.code == 404 => {}
                Err(e) => return Err(kerr(format!("deleting stale bundle {ns}/{on}"))(e)),
            }
        }
    }
    Ok(errors)
}

/// GitRepo status: commits, conditions, and the summary over its BundleDeployments.
fn compute_status(ctx: &Context, g: &GitRepo, st: &PollState) -> GitRepoStatus {
    let ns = g.metadata.namespace.clone().unwrap_or_default();
    let name = g.metadata.name.clone().unwrap_or_default();
    let mut s = g.status.clone().unwrap_or_default();
    s.polling_commit = st.commit.clone();
    if let Some((commit, generation, fsg)) = &st.applied {
        s.commit = commit.clone();
        s.observed_generation = *generation;
        s.update_generation = *fsg;
    }
    let conds = &mut s.base.conditions;
    match &st.poll_error {
        None => conditions::set(conds, "GitPolling", true, "", ""),
        Some(e) if e.auth => conditions::set(
            conds,
            "GitPolling",
            false,
            "Error",
            &format!("authentication failed for {}: {}", g.spec.repo, e.message),
        ),
        Some(e) => conditions::set(conds, "GitPolling", false, "Error", &e.message),
    }
    let stalled = st
        .fetch_error
        .clone()
        .or_else(|| (!st.build_errors.is_empty()).then(|| st.build_errors.join("; ")));
    match &stalled {
        Some(m) => conditions::set(conds, "Stalled", true, "Stalled", m),
        None => conditions::set(conds, "Stalled", false, "", ""),
    }
    match st.refused.as_ref().or(st.fetch_error.as_ref()) {
        Some(m) => conditions::set(conds, "Accepted", false, "Error", m),
        None => conditions::set(conds, "Accepted", true, "", ""),
    }

    // Summary over BDs of the GitRepo's bundles.
    let mut summary = fleet_api::BundleSummary::default();
    let mut clusters: HashMap<crate::bds::Str, bool> = HashMap::new();
    let mut bundle_error = None;
    let mut counts = fleet_api::ResourceCounts::default();
    let bundles = bundles_of(ctx, &ns, &name);
    for b in &bundles {
        if bundle_error.is_none()
            && let Some(c) = b
                .status
                .as_ref()
                .and_then(|s| conditions::get(&s.conditions, "Ready"))
                .filter(|c| c.status == "False")
        {
            bundle_error = Some(c.message.clone());
        }
        let bn = b.metadata.name.clone().unwrap_or_default();
        for ((bdns, bdname), bd) in ctx.stores.bds.of_bundle_with(&ns, &bn) {
            let f = bd.facts();
            let state = fleet_targeting::status::state_of(&f);
            summary.desired_ready += 1;
            let message = if fleet_targeting::status::lists(&summary, state) {
                fleet_targeting::status::message_of(&f)
            } else {
                String::new()
            };
            fleet_targeting::status::increment(
                &mut summary,
                &bdname,
                state,
                &message,
                f.status.map_or(&[], |s| &s.modified_status),
                f.status.map_or(&[], |s| &s.non_ready_status),
            );
            if let Some(st) = f.status {
                add_counts(&mut counts, &st.resource_counts);
            }
            // A cluster is one BundleDeployment namespace (its cluster namespace).
            let ready = state == fleet_api::state::BundleState::Ready;
            let e = clusters.entry(bdns).or_insert(true);
            *e = *e && ready;
        }
    }
    s.base.desired_ready_clusters = clusters.len() as i64;
    s.base.ready_clusters = clusters.values().filter(|r| **r).count() as i64;
    let worst = fleet_targeting::status::summary_state(&summary);
    s.base.display.ready_bundle_deployments =
        format!("{}/{}", summary.ready, summary.desired_ready);
    s.base.display.state = worst.map(|w| w.as_str().to_string()).unwrap_or_default();
    let worst_msg = worst
        .and_then(|w| {
            summary
                .non_ready_resources
                .iter()
                .find(|r| r.bundle_state == w.as_str())
                .map(|r| r.message.clone())
        })
        .unwrap_or_default();
    s.base.display.message = worst_msg.clone();
    s.base.display.error = !worst_msg.is_empty();
    s.base.resource_counts = counts;
    let ready_msg = if let Some(m) = &stalled {
        Some(m.clone())
    } else if let Some(e) = &st.poll_error {
        Some(e.message.clone())
    } else if let Some(m) = bundle_error {
        Some(m)
    } else {
        let m = fleet_targeting::status::ready_message(&summary, "Bundle");
        (!m.is_empty()).then_some(m)
    };
    s.base.summary = summary;
    let conds = &mut s.base.conditions;
    match ready_msg {
        Some(m) => conditions::set(conds, "Ready", false, "", &m),
        None => conditions::set(conds, "Ready", true, "", ""),
    }
    s
}

fn add_counts(l: &mut fleet_api::ResourceCounts, r: &fleet_api::ResourceCounts) {
    l.ready += r.ready;
    l.desired_ready += r.desired_ready;
    l.wait_applied += r.wait_applied;
    l.modified += r.modified;
    l.orphaned += r.orphaned;
    l.missing += r.missing;
    l.unknown += r.unknown;
    l.not_ready += r.not_ready;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_is_capped() {
        assert_eq!(backoff(0), Duration::from_secs(5));
        assert_eq!(backoff(1), Duration::from_secs(10));
        assert_eq!(backoff(30), MAX_BACKOFF);
    }
}
