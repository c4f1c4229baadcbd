//! Git fixtures: a repository tests write and commit to, and a real `git daemon` serving a
//! directory of repositories over `git://` on loopback.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::process::{FleetProcess, wait_timeout};

fn git_bin() -> PathBuf {
    crate::tools::git().unwrap_or_else(|| PathBuf::from("git"))
}

/// Runs git in `dir`, panicking with its output unless it succeeds; returns trimmed stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(git_bin())
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "Fleet Test")
        .env("GIT_AUTHOR_EMAIL", "test@fleet.invalid")
        .env("GIT_COMMITTER_NAME", "Fleet Test")
        .env("GIT_COMMITTER_EMAIL", "test@fleet.invalid")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("running git {args:?}: {e}"));
    assert!(
        out.status.success(),
        "git {args:?} in {} failed: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A non-bare repository on branch `main` that tests write files into and commit.
pub struct GitRepo {
    /// Its working directory.
    pub dir: PathBuf,
}

impl GitRepo {
    /// `git init` at `dir` (created when missing) with branch `main`.
    pub fn init(dir: &Path) -> GitRepo {
        std::fs::create_dir_all(dir).expect("creating the repository directory");
        git(dir, &["init", "-q", "-b", "main"]);
        // git daemon serves only repositories that opt in (or all with --export-all).
        std::fs::write(dir.join(".git/git-daemon-export-ok"), "").expect("export-ok");
        GitRepo {
            dir: dir.to_path_buf(),
        }
    }

    /// Writes `content` at `rel` (creating directories).
    pub fn write(&self, rel: &str, content: &str) -> &GitRepo {
        let p = self.dir.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).expect("creating directories");
        }
        std::fs::write(&p, content).unwrap_or_else(|e| panic!("writing {}: {e}", p.display()));
        self
    }

    /// Removes `rel` (a file or a directory).
    pub fn remove(&self, rel: &str) -> &GitRepo {
        let p = self.dir.join(rel);
        if p.is_dir() {
            std::fs::remove_dir_all(&p).expect("removing directory");
        } else {
            std::fs::remove_file(&p).expect("removing file");
        }
        self
    }

    /// Stages everything and commits; returns the new commit's full hash.
    pub fn commit(&self, message: &str) -> String {
        git(&self.dir, &["add", "-A"]);
        git(&self.dir, &["commit", "-q", "--allow-empty", "-m", message]);
        self.head()
    }

    /// The full hash of HEAD.
    pub fn head(&self) -> String {
        git(&self.dir, &["rev-parse", "HEAD"])
    }
}

/// A real `git daemon` serving every repository below `base` at `git://127.0.0.1:PORT/<dir>`.
pub struct GitDaemon {
    process: FleetProcess,
    /// `git://127.0.0.1:PORT`.
    pub url: String,
}

impl GitDaemon {
    /// Starts the daemon on a free loopback port and waits until it accepts connections.
    pub fn start(base: &Path) -> GitDaemon {
        let port = free_port();
        let base_s = base.to_string_lossy().into_owned();
        let args = [
            "daemon".to_string(),
            "--reuseaddr".into(),
            "--export-all".into(),
            "--listen=127.0.0.1".into(),
            format!("--port={port}"),
            format!("--base-path={base_s}"),
            base_s.clone(),
        ];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut process = FleetProcess::spawn(&git_bin(), "git daemon", &args, &[]);
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Some(st) = wait_timeout(&mut process.child, Duration::from_millis(0)) {
                panic!("git daemon exited ({st}): {}", process.stderr_text());
            }
            assert!(
                Instant::now() < deadline,
                "git daemon did not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        GitDaemon {
            process,
            url: format!("git://127.0.0.1:{port}"),
        }
    }

    /// The URL of the repository at `base/<name>`.
    pub fn repo_url(&self, name: &str) -> String {
        format!("{}/{name}", self.url)
    }

    /// Stops the daemon.
    pub fn stop(&mut self) {
        self.process.kill();
    }
}

/// A loopback port that was free a moment ago (for tools that cannot report the port they chose).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("binding a free loopback port")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_daemon_serves_a_committed_repository() {
        if crate::tools::git().is_none() {
            return;
        }
        let tmp = tempfile::tempdir().expect("tempdir");
        let repo = GitRepo::init(&tmp.path().join("r"));
        repo.write("a/cm.yaml", "kind: ConfigMap\n");
        let head = repo.commit("first");
        let daemon = GitDaemon::start(tmp.path());
        let out = git(
            tmp.path(),
            &["ls-remote", &daemon.repo_url("r"), "refs/heads/main"],
        );
        assert!(out.starts_with(&head), "{out}");
    }
}
