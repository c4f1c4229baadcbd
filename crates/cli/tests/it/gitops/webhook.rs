//! Webhooks on the `fleet controller` listener: a GitHub push (HMAC `X-Hub-Signature-256`) and a
//! GitLab push (`X-Gitlab-Token`), then Gogs, Bitbucket Cloud, Bitbucket Server and Azure DevOps
//! pushes, secrets from the Secret `gitjob-webhook` in the system namespace, bring a new commit in
//! although polling is at 1 h; a wrong secret gets 401 and changes nothing.

use std::time::{Duration, Instant};

use fleet_testkit::{FleetController, GitDaemon, GitRepo, Kubectl, eventually, fleet_bin};
use hmac::{Hmac, Mac};

use super::T;
use super::ha::{bundle_commit, server};

/// POSTs a JSON `body` to the listener at `addr` with `headers`: (status code, body).
fn post(addr: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    let mut h = vec![("Content-Type", "application/json")];
    h.extend_from_slice(headers);
    fleet_testkit::controller::http(addr, "POST", "/", &h, body)
}

fn sign(secret: &str, body: &str) -> String {
    let mut m = Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).expect("hmac key");
    m.update(body.as_bytes());
    let hex: String = m
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256={hex}")
}

type Headers = Vec<(&'static str, String)>;

fn header_refs(h: &Headers) -> Vec<(&'static str, &str)> {
    h.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// A push of `commit` to `branch` of `url` from each of the other providers: (name, body,
/// headers with the right secret, headers with a wrong one). Secrets as in `gitjob-webhook`.
fn other_provider_pushes(
    url: &str,
    branch: &str,
    commit: &str,
) -> Vec<(&'static str, String, Headers, Headers)> {
    use base64::Engine;
    let basic = |user_pass: &str| {
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(user_pass)
        )
    };
    let gogs = serde_json::json!({
        "ref": format!("refs/heads/{branch}"), "after": commit,
        "repository": {"html_url": url, "clone_url": url},
    })
    .to_string();
    let bitbucket = serde_json::json!({
        "repository": {"links": {"html": {"href": url}}},
        "push": {"changes": [{"new": {"type": "branch", "name": branch, "target": {"hash": commit}}}]},
    })
    .to_string();
    let bitbucket_server = serde_json::json!({
        "eventKey": "repo:refs_changed",
        "repository": {"links": {"clone": [{"name": "http", "href": url}]}},
        "changes": [{"refId": format!("refs/heads/{branch}"), "toHash": commit}],
    })
    .to_string();
    let azure = serde_json::json!({
        "eventType": "git.push",
        "resource": {
            "refUpdates": [{"name": format!("refs/heads/{branch}"), "newObjectId": commit}],
            "repository": {"remoteUrl": url},
        },
    })
    .to_string();
    let hex =
        |secret: &str, body: &str| sign(secret, body).trim_start_matches("sha256=").to_string();
    vec![
        (
            "gogs",
            gogs.clone(),
            vec![
                ("X-Gogs-Event", "push".into()),
                ("X-Gogs-Signature", hex("gogs-secret", &gogs)),
            ],
            vec![
                ("X-Gogs-Event", "push".into()),
                ("X-Gogs-Signature", hex("wrong", &gogs)),
            ],
        ),
        (
            "bitbucket",
            bitbucket,
            vec![
                ("X-Hook-UUID", "bb-uuid".into()),
                ("X-Event-Key", "repo:push".into()),
            ],
            vec![
                ("X-Hook-UUID", "other-uuid".into()),
                ("X-Event-Key", "repo:push".into()),
            ],
        ),
        (
            "bitbucket-server",
            bitbucket_server.clone(),
            vec![
                ("X-Event-Key", "repo:refs_changed".into()),
                ("X-Hub-Signature", sign("bbs-secret", &bitbucket_server)),
            ],
            vec![
                ("X-Event-Key", "repo:refs_changed".into()),
                ("X-Hub-Signature", sign("wrong", &bitbucket_server)),
            ],
        ),
        (
            "azure-devops",
            azure,
            vec![
                ("X-Vss-ActivityId", "a1".into()),
                ("Authorization", basic("az-user:az-pass")),
            ],
            vec![
                ("X-Vss-ActivityId", "a1".into()),
                ("Authorization", basic("az-user:wrong")),
            ],
        ),
    ]
}

fn github_push(url: &str, branch: &str, commit: &str) -> String {
    serde_json::json!({
        "ref": format!("refs/heads/{branch}"),
        "before": "0000000000000000000000000000000000000000",
        "after": commit,
        "repository": {"name": "app", "html_url": url, "clone_url": url},
    })
    .to_string()
}

fn gitlab_push(url: &str, branch: &str, commit: &str) -> String {
    serde_json::json!({
        "object_kind": "push",
        "ref": format!("refs/heads/{branch}"),
        "after": commit,
        "checkout_sha": commit,
        "project": {"git_http_url": url, "web_url": url},
    })
    .to_string()
}

fn webhook_commit(k: &Kubectl, name: &str) -> String {
    k.get_json(&["gitrepo", name, "-n", "fleet-default"])
        .and_then(|v| v["status"]["webhookCommit"].as_str().map(str::to_string))
        .unwrap_or_default()
}

fn at_commit(k: &Kubectl, bundle: &str, want: &str) -> Result<(), String> {
    match bundle_commit(k, bundle)? {
        c if c == want => Ok(()),
        c => Err(format!("{bundle} at {c}, want {want}")),
    }
}

#[test]
fn webhooks_bring_commits_in_with_polling_at_one_hour() {
    if !super::tools_present() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let (srv, k) = server(&tmp.path().join("server"));
    let repos = tmp.path().join("repos");
    let repo = GitRepo::init(&repos.join("app"));
    let cm = |v: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  v: \"{v}\"\n")
    };
    repo.write("a/cm.yaml", &cm("1"));
    let c1 = repo.commit("first");
    fleet_testkit::git::git(&repo.dir, &["branch", "other"]);
    let daemon = GitDaemon::start(&repos);
    let url = daemon.repo_url("app");

    let ctl = FleetController::start(
        fleet_bin!(),
        &srv.kubeconfig,
        &["--default-polling-interval", "1h"],
    );
    ctl.wait_ready(T);
    k.apply(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: gitjob-webhook\n  namespace: cattle-fleet-system\nstringData:\n  github: gh-secret\n  gitlab: gl-token\n  gogs: gogs-secret\n  bitbucket: bb-uuid\n  bitbucket-server: bbs-secret\n  azure-username: az-user\n  azure-password: az-pass\n",
    );
    k.apply("apiVersion: fleet.cattle.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: c1\n  namespace: fleet-default\nspec: {}\n");
    // gr polls hourly; gr2 sets no interval (the webhook gives it 1h); other watches another branch.
    for (name, extra) in [
        ("gr", "  pollingInterval: 1h\n  branch: main\n"),
        ("gr2", "  branch: main\n"),
        ("other", "  pollingInterval: 1h\n  branch: other\n"),
    ] {
        k.apply(&format!(
            "apiVersion: fleet.cattle.io/v1alpha1\nkind: GitRepo\nmetadata:\n  name: {name}\n  namespace: fleet-default\nspec:\n  repo: {url}\n{extra}  paths: [a]\n"
        ));
    }
    eventually("gr-a, gr2-a and other-a at the first commit", T, || {
        at_commit(&k, "gr-a", &c1)?;
        at_commit(&k, "gr2-a", &c1)?;
        at_commit(&k, "other-a", &c1)
    });

    // GitHub: a wrong signature is refused and changes nothing.
    repo.write("a/cm.yaml", &cm("2"));
    let c2 = repo.commit("second");
    let body = github_push(&url, "main", &c2);
    let polls = ctl.metric("fleet_controller_git_polls_total");
    let (code, msg) = post(
        &ctl.addr,
        &[
            ("X-GitHub-Event", "push"),
            ("X-Hub-Signature-256", &sign("wrong", &body)),
        ],
        &body,
    );
    assert_eq!(code, 401, "{msg}");
    let (code, msg) = post(&ctl.addr, &[("X-GitHub-Event", "push")], &body);
    assert_eq!(
        code, 401,
        "an unsigned delivery must be refused when a secret is set: {msg}"
    );
    assert_eq!(ctl.metric("fleet_controller_git_polls_total"), polls);
    assert_eq!(webhook_commit(&k, "gr"), "");
    at_commit(&k, "gr-a", &c1).expect("gr-a unchanged after refused webhooks");
    let gr2 = k
        .get_json(&["gitrepo", "gr2", "-n", "fleet-default"])
        .expect("gitrepo gr2");
    assert!(gr2["spec"]["pollingInterval"].is_null(), "{gr2}");

    // The right signature: the commit comes in long before the next poll.
    let t = Instant::now();
    let (code, msg) = post(
        &ctl.addr,
        &[
            ("X-GitHub-Event", "push"),
            ("X-Hub-Signature-256", &sign("gh-secret", &body)),
        ],
        &body,
    );
    assert_eq!(code, 200, "{msg}");
    eventually("gr-a and gr2-a at the second commit", T, || {
        at_commit(&k, "gr-a", &c2)?;
        at_commit(&k, "gr2-a", &c2)
    });
    println!(
        "github webhook → bundles at the new commit: {:?}",
        t.elapsed()
    );
    assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());
    assert_eq!(webhook_commit(&k, "gr"), c2);
    let gr2 = k
        .get_json(&["gitrepo", "gr2", "-n", "fleet-default"])
        .expect("gitrepo gr2");
    assert_eq!(gr2["spec"]["pollingInterval"], "1h", "{gr2}");
    assert!(gr2["status"]["lastWebhookTime"].is_string(), "{gr2}");
    // The branch `other` was not pushed: its GitRepo was not touched.
    assert_eq!(webhook_commit(&k, "other"), "");

    // GitLab: a wrong token → 401, nothing changes; the right one brings the commit in.
    repo.write("a/cm.yaml", &cm("3"));
    let c3 = repo.commit("third");
    let body = gitlab_push(&url, "main", &c3);
    let polls = ctl.metric("fleet_controller_git_polls_total");
    let (code, msg) = post(
        &ctl.addr,
        &[("X-Gitlab-Event", "Push Hook"), ("X-Gitlab-Token", "nope")],
        &body,
    );
    assert_eq!(code, 401, "{msg}");
    assert_eq!(ctl.metric("fleet_controller_git_polls_total"), polls);
    assert_eq!(webhook_commit(&k, "gr"), c2);
    let (code, msg) = post(
        &ctl.addr,
        &[
            ("X-Gitlab-Event", "Push Hook"),
            ("X-Gitlab-Token", "gl-token"),
        ],
        &body,
    );
    assert_eq!(code, 200, "{msg}");
    eventually("gr-a at the third commit", T, || at_commit(&k, "gr-a", &c3));
    assert_eq!(webhook_commit(&k, "gr"), c3);

    // Gogs, Bitbucket Cloud, Bitbucket Server, Azure DevOps: the same, each with its own proof.
    for i in 0..4 {
        repo.write("a/cm.yaml", &cm(&format!("{}", i + 4)));
        let c = repo.commit(&format!("commit {}", i + 4));
        let pushes = other_provider_pushes(&url, "main", &c);
        let (provider, body, good, bad) = &pushes[i];
        let (code, msg) = post(&ctl.addr, &header_refs(bad), body);
        assert_eq!(code, 401, "{provider} with a wrong secret: {msg}");
        let (code, msg) = post(&ctl.addr, &header_refs(good), body);
        assert_eq!(code, 200, "{provider}: {msg}");
        eventually(&format!("{provider}: gr-a at {c}"), T, || {
            at_commit(&k, "gr-a", &c)
        });
        assert_eq!(webhook_commit(&k, "gr"), c, "{provider}");
    }
    // The GitRepo on branch `other` still deploys the first commit: polls are hourly.
    at_commit(&k, "other-a", &c1).expect("other-a untouched");
}

/// `fleet server --controller-listen` serves the same listener as `fleet controller --listen`:
/// readiness, and a push webhook (no secret configured: accepted, as upstream) that records the
/// pushed commit on the GitRepo of that repository and branch.
#[test]
fn fleet_server_controller_listen_serves_webhooks() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let addr = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        l.local_addr().expect("addr").to_string()
    };
    let srv = fleet_testkit::FleetServer::start(
        fleet_bin!(),
        &tmp.path().join("server"),
        &["--controller-listen", &addr],
    );
    eventually("controllers ready", T, || {
        match std::net::TcpStream::connect(&addr) {
            Ok(_) => {}
            Err(e) => return Err(e.to_string()),
        }
        match fleet_testkit::controller::http(&addr, "GET", "/readyz", &[], "") {
            (200, _) => Ok(()),
            (c, b) => Err(format!("{c} {b}")),
        }
    });
    let Some(k) = srv.kubectl() else {
        assert!(!fleet_testkit::in_ci(), "kubectl is required under CI");
        println!("skipping the GitRepo part: kubectl missing");
        return;
    };
    let url = "https://git.example.invalid/team/app";
    k.apply(&format!(
        "apiVersion: fleet.cattle.io/v1alpha1\nkind: GitRepo\nmetadata:\n  name: app\n  namespace: fleet-default\nspec:\n  repo: {url}\n  branch: main\n  pollingInterval: 1h\n"
    ));
    let commit = "0123456789abcdef0123456789abcdef01234567";
    let (code, msg) = post(
        &addr,
        &[("X-GitHub-Event", "push")],
        &github_push(url, "main", commit),
    );
    assert_eq!(code, 200, "{msg}");
    eventually("webhookCommit recorded", T, || {
        match webhook_commit(&k, "app") {
            c if c == commit => Ok(()),
            c => Err(format!("webhookCommit {c:?}")),
        }
    });
}
