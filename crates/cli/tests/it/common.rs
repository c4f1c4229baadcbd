//! Helpers shared by the integration tests that run the real `fleet` binary: start `fleet server`
//! on a free port with a temporary data directory, find oracle tools, talk raw HTTP to the server.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use http_body_util::BodyExt;

/// A running `fleet server` child process.
pub struct Server {
    pub child: Child,
    pub url: String,
    pub dir: PathBuf,
    pub kubeconfig: PathBuf,
    /// Lines the server writes to stderr, for failure messages.
    pub stderr: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Server {
    /// Starts `fleet server --data-dir DIR --listen 127.0.0.1:0` and waits for `ready <url>`.
    pub fn start(dir: &Path) -> Server {
        Server::start_with(dir, "127.0.0.1:0")
    }

    /// Starts with an explicit listen address (restarts reuse the port so clients can resume).
    pub fn start_with(dir: &Path, listen: &str) -> Server {
        Server::start_with_flags(dir, listen, &[])
    }

    /// Starts with an explicit listen address and further flags (`--simulate-workloads`).
    pub fn start_with_flags(dir: &Path, listen: &str, flags: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_fleet"))
            .args(["server", "--data-dir"])
            .arg(dir)
            .args(["--listen", listen])
            .args(flags)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawning fleet server");
        let stdout = child.stdout.take().expect("stdout");
        let stderr_pipe = child.stderr.take().expect("stderr");
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = stderr.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr_pipe).lines().map_while(Result::ok) {
                eprintln!("[fleet server] {line}");
                sink.lock().unwrap().push(line);
            }
        });
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            let first = lines.next();
            let _ = tx.send(first);
            // Anything after the ready line is a contract violation; keep draining.
            for line in lines.map_while(Result::ok) {
                eprintln!("[fleet server stdout] {line}");
            }
        });
        let line = match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(Some(Ok(line))) => line,
            other => {
                let _ = child.kill();
                panic!(
                    "fleet server did not print a ready line: {other:?}; stderr: {:?}",
                    stderr.lock().unwrap()
                );
            }
        };
        let url = line
            .strip_prefix("ready ")
            .unwrap_or_else(|| panic!("unexpected first stdout line {line:?}"))
            .to_string();
        assert!(url.starts_with("https://127.0.0.1:"), "{url}");
        assert!(
            !url.ends_with(":0"),
            "the ready line must show the real port: {url}"
        );
        Server {
            child,
            url,
            dir: dir.to_path_buf(),
            kubeconfig: dir.join("kubeconfig"),
            stderr,
        }
    }

    /// The port the server listens on.
    pub fn port(&self) -> u16 {
        self.url
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("port in url")
    }

    /// Sends SIGTERM and waits for the exit status.
    pub fn terminate(mut self) -> std::process::ExitStatus {
        signal(&self.child, "TERM");
        wait_timeout(&mut self.child, Duration::from_secs(30))
            .expect("server did not exit after SIGTERM")
    }

    /// SIGKILL: no chance to flush anything.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// A kube-rs client from the written kubeconfig (client certificate auth).
    pub async fn client(&self) -> kube::Client {
        let kc = kube::config::Kubeconfig::read_from(&self.kubeconfig).expect("kubeconfig parses");
        let cfg =
            kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
                .await
                .expect("kubeconfig usable");
        kube::Client::try_from(cfg).expect("client")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends a signal by name to a child (via `kill`, no libc binding needed).
pub fn signal(child: &Child, sig: &str) {
    let _ = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(child.id().to_string())
        .status();
}

/// Waits for a child with a deadline.
pub fn wait_timeout(child: &mut Child, timeout: Duration) -> Option<std::process::ExitStatus> {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        if let Ok(Some(s)) = child.try_wait() {
            return Some(s);
        }
        if std::time::Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether tests must fail instead of skipping when a tool is missing.
pub fn in_ci() -> bool {
    std::env::var("CI").map(|v| v == "true").unwrap_or(false)
}

/// Finds an oracle tool: `$ENV_VAR`, then `$FLEET_TOOLS_DIR/bin` (default ~/.cache/fleet-tools/bin),
/// then PATH. Missing: `None` after printing why (tests skip), or a panic under CI=true.
pub fn find_tool(env_var: &str, name: &str) -> Option<PathBuf> {
    if let Ok(p) = std::env::var(env_var)
        && !p.is_empty()
    {
        return Some(PathBuf::from(p));
    }
    let tools = std::env::var("FLEET_TOOLS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/fleet-tools")
        });
    let candidate = tools.join("bin").join(name);
    if candidate.is_file() {
        return Some(candidate);
    }
    if let Some(paths) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&paths) {
            let c = dir.join(name);
            if c.is_file() {
                return Some(c);
            }
        }
    }
    if in_ci() {
        panic!("{name} not found (set {env_var}); required under CI=true");
    }
    eprintln!("SKIP: {name} not found (set {env_var} or run scripts/install-test-tools)");
    None
}

/// A raw HTTP exchange through a kube client (TLS and auth from the kubeconfig), for requests the
/// typed API cannot express (malformed bodies, odd content types).
pub async fn raw(
    client: &kube::Client,
    method: &str,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
) -> (u16, serde_json::Value) {
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", content_type)
        .header("accept", "application/json")
        .body(kube::client::Body::from(body))
        .unwrap();
    let resp = client.send(req).await.expect("request sent");
    let status = resp.status().as_u16();
    let bytes = resp
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let json = serde_json::from_slice(&bytes).unwrap_or_else(|_| {
        serde_json::Value::String(String::from_utf8_lossy(&bytes).into_owned())
    });
    (status, json)
}
