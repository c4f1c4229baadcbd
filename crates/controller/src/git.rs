//! Git access with gix (pure Rust): `ls-remote` of a branch or tag and a shallow clone of one commit,
//! over file://, git:// and http(s) with basic-auth credentials. gix's network calls block, so
//! callers run these in `spawn_blocking`.
//!
//! [`FetchCache`] guarantees one fetch per (repository, commit) however many GitRepos share it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Basic-auth credentials from a GitRepo's `clientSecretName` (`kubernetes.io/basic-auth`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Credentials {
    /// `username` key of the Secret.
    pub username: String,
    /// `password` key of the Secret.
    pub password: String,
}

/// Why a git operation failed; `auth` tells an authentication failure from others.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct GitError {
    /// What gix reported, prefixed with the operation.
    pub message: String,
    /// The server refused our credentials (or asked for some we do not have).
    pub auth: bool,
}

fn err(op: &str, e: impl std::fmt::Display + std::fmt::Debug) -> GitError {
    // The Debug form carries the cause chain ("Caused by: ..."), which names the real reason.
    let message = format!("{op}: {e:?}");
    let lower = message.to_lowercase();
    let auth = lower.contains("401")
        || lower.contains("403")
        || lower.contains("auth")
        || lower.contains("credential");
    GitError { message, auth }
}

/// A credentials callback that answers with the GitRepo's Secret, or refuses when there is none
/// (never falls back to the host's git configuration or a prompt).
fn helper(
    creds: Option<Credentials>,
) -> impl FnMut(
    gix::credentials::helper::Action,
) -> gix::Result<Option<gix::credentials::protocol::Outcome>> {
    move |action| match action {
        gix::credentials::helper::Action::Get(ctx) => match &creds {
            Some(c) => Ok(Some(gix::credentials::protocol::Outcome {
                identity: gix::sec::identity::Account {
                    username: c.username.clone(),
                    password: c.password.clone(),
                    oauth_refresh_token: None,
                },
                next: ctx.into(),
            })),
            None => Ok(None),
        },
        _ => Ok(None),
    }
}

/// The full ref name a GitRepo follows: `revision` (a tag or branch name) or `branch` (default master).
pub fn wanted_ref(branch: &str, revision: &str) -> Vec<String> {
    if !revision.is_empty() {
        if revision.starts_with("refs/") {
            return vec![revision.to_string()];
        }
        return vec![
            format!("refs/tags/{revision}"),
            format!("refs/heads/{revision}"),
        ];
    }
    let b = if branch.is_empty() { "master" } else { branch };
    vec![format!("refs/heads/{b}")]
}

/// `git ls-remote`: the commit `refs` (first found) points to on the remote. `scratch` is an
/// empty bare repository gix needs for configuration.
pub fn ls_remote(
    scratch: &Path,
    url: &str,
    refs: &[String],
    creds: Option<Credentials>,
) -> Result<String, GitError> {
    let repo = match gix::open(scratch) {
        Ok(r) => r,
        Err(_) => gix::init_bare(scratch).map_err(|e| err("initialising scratch repository", e))?,
    };
    let remote = repo
        .remote_at(url)
        .map_err(|e| err("invalid repository URL", e))?
        .with_refspecs(
            [
                "+refs/heads/*:refs/remotes/origin/*",
                "+refs/tags/*:refs/tags/*",
            ],
            gix::remote::Direction::Fetch,
        )
        .map_err(|e| err("refspec", e))?;
    let conn = remote
        .connect(gix::remote::Direction::Fetch)
        .map_err(|e| err("connecting", e))?
        .with_credentials(helper(creds));
    let (map, _) = conn
        .ref_map(
            gix::progress::Discard,
            gix::remote::ref_map::Options::default(),
        )
        .map_err(|e| err("listing remote refs", e))?;
    for want in refs {
        for r in &map.remote_refs {
            let (name, target, peeled) = r.unpack();
            if name == want.as_str()
                && let Some(id) = peeled.or(target)
            {
                return Ok(id.to_string());
            }
        }
    }
    Err(GitError {
        message: format!("no {} on the remote {url}", refs.join(" or ")),
        auth: false,
    })
}

/// Shallow (depth 1) clone of `reference` into `dest` with a checkout; returns the HEAD commit.
pub fn shallow_clone(
    url: &str,
    reference: &str,
    dest: &Path,
    creds: Option<Credentials>,
) -> Result<String, GitError> {
    let interrupt = AtomicBool::new(false);
    let short = reference
        .strip_prefix("refs/heads/")
        .or_else(|| reference.strip_prefix("refs/tags/"))
        .unwrap_or(reference)
        .to_string();
    let mut prep = gix::prepare_clone(url, dest)
        .map_err(|e| err("preparing clone", e))?
        .with_shallow(gix::remote::fetch::Shallow::DepthAtRemote(
            std::num::NonZeroU32::MIN,
        ))
        .with_ref_name(Some(short.as_str()))
        .map_err(|e| err("reference", e))?;
    let c = creds.clone();
    prep = prep.configure_connection(move |conn| {
        conn.set_credentials(helper(c.clone()));
        Ok(())
    });
    let (mut checkout, _) = prep
        .fetch_then_checkout(gix::progress::Discard, &interrupt)
        .map_err(|e| err("fetching", e))?;
    let (repo, _) = checkout
        .main_worktree(gix::progress::Discard, &interrupt)
        .map_err(|e| err("checking out", e))?;
    let head = repo
        .head_id()
        .map_err(|e| err("reading HEAD", e))?
        .detach()
        .to_string();
    Ok(head)
}

/// A checkout being made or made (shared by concurrent callers for one key).
type Checkout = Arc<tokio::sync::OnceCell<Result<PathBuf, GitError>>>;

/// One checkout per (repository, commit), shared by every GitRepo that needs it.
#[derive(Default)]
pub struct FetchCache {
    root: PathBuf,
    entries: Mutex<HashMap<(String, String), Checkout>>,
    fetches: AtomicU64,
    seq: AtomicU64,
}

impl FetchCache {
    /// A cache keeping its checkouts under `root`. Checkouts left there by an earlier process
    /// are removed: nothing refers to them any more, and their names would collide with the
    /// new ones (a restarted manager could not fetch until it had skipped past them).
    pub fn new(root: PathBuf) -> FetchCache {
        if let Ok(entries) = std::fs::read_dir(&root) {
            for e in entries.flatten() {
                if e.file_name().to_string_lossy().starts_with("checkout-") {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
        FetchCache {
            root,
            ..Default::default()
        }
    }

    /// How many clones were made (a test hook and a metric).
    pub fn fetches(&self) -> u64 {
        self.fetches.load(Ordering::Relaxed)
    }

    /// Scratch bare repository used for `ls-remote`.
    pub fn scratch(&self) -> PathBuf {
        self.root.join("scratch.git")
    }

    /// The checkout of `commit` (reached through `reference`) of `url`, cloning it at most once;
    /// concurrent callers for the same key wait for the one clone.
    pub async fn checkout(
        &self,
        url: &str,
        reference: &str,
        commit: &str,
        creds: Option<Credentials>,
    ) -> Result<PathBuf, GitError> {
        let cell = {
            let mut m = self.entries.lock().unwrap_or_else(|p| p.into_inner());
            m.entry((url.to_string(), commit.to_string()))
                .or_default()
                .clone()
        };
        let res = cell
            .get_or_init(|| async {
                let n = self.seq.fetch_add(1, Ordering::Relaxed);
                let dest = self.root.join(format!("checkout-{n}"));
                // Whatever is there is not in the map, so nobody uses it.
                let _ = std::fs::remove_dir_all(&dest);
                let (u, r) = (url.to_string(), reference.to_string());
                let d = dest.clone();
                self.fetches.fetch_add(1, Ordering::Relaxed);
                let res = tokio::task::spawn_blocking(move || shallow_clone(&u, &r, &d, creds))
                    .await
                    .map_err(|e| err("clone task", e))
                    .and_then(|r| r);
                match res {
                    Ok(head) if head == commit || commit.is_empty() => Ok(dest),
                    Ok(head) => Err(GitError {
                        message: format!(
                            "fetched {head} for {reference}, expected {commit} (the branch moved)"
                        ),
                        auth: false,
                    }),
                    Err(e) => {
                        let _ = std::fs::remove_dir_all(&dest);
                        Err(e)
                    }
                }
            })
            .await
            .clone();
        if res.is_err() {
            // Failed fetches are not cached: the next attempt tries again.
            let mut m = self.entries.lock().unwrap_or_else(|p| p.into_inner());
            m.remove(&(url.to_string(), commit.to_string()));
        }
        res
    }

    /// Drops checkouts of `url` other than `keep` commits (old commits are no longer needed).
    pub fn retain(&self, keep: &std::collections::HashSet<(String, String)>) {
        let mut m = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        m.retain(|k, cell| {
            let keep_it = keep.contains(k);
            if !keep_it && let Some(Ok(p)) = cell.get() {
                let _ = std::fs::remove_dir_all(p);
            }
            keep_it
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(dir)
            .output()
            .expect("git runs");
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// A restarted manager finds the checkouts of the previous process in its cache directory;
    /// its first fetch must still succeed (it used to fail on `checkout-0` until retried).
    #[tokio::test]
    async fn a_new_cache_fetches_over_checkouts_left_by_an_earlier_process() {
        if std::process::Command::new("git")
            .arg("--version")
            .output()
            .is_err()
        {
            assert!(
                std::env::var("CI").is_err(),
                "git is required under CI=true"
            );
            return;
        }
        let tmp = tempfile::tempdir().expect("tempdir");
        let repo = tmp.path().join("repo");
        std::fs::create_dir_all(&repo).expect("repo dir");
        git(&repo, &["init", "-q", "-b", "main"]);
        std::fs::write(repo.join("a.yaml"), "a: 1\n").expect("write");
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-q", "-m", "one"]);
        let commit = git(&repo, &["rev-parse", "HEAD"]);

        let root = tmp.path().join("cache");
        for n in 0..3 {
            let old = root.join(format!("checkout-{n}"));
            std::fs::create_dir_all(&old).expect("old checkout");
            std::fs::write(old.join("stale"), "x").expect("stale file");
        }
        let cache = FetchCache::new(root.clone());
        assert!(!root.join("checkout-1").exists(), "leftovers are removed");
        let url = format!("file://{}", repo.display());
        let dir = cache
            .checkout(&url, "refs/heads/main", &commit, None)
            .await
            .expect("the first fetch after a restart succeeds");
        assert_eq!(
            std::fs::read_to_string(dir.join("a.yaml")).expect("checked out"),
            "a: 1\n"
        );
        assert_eq!(cache.fetches(), 1);
    }
}
