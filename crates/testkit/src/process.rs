//! `fleet` child processes: a server that announces `ready <url>`, and any other long-running
//! subcommand (controller, agent, dev) whose output is kept for failure messages. Every process is
//! killed when its handle drops, so a failing test leaves nothing running.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Lines a child wrote, shared with the threads that drain its pipes.
pub type Lines = Arc<Mutex<Vec<String>>>;

/// A running `fleet` subcommand.
pub struct FleetProcess {
    /// The child process.
    pub child: Child,
    /// What it wrote to stderr (also echoed to the test's stderr with a prefix).
    pub stderr: Lines,
    /// What it wrote to stdout.
    pub stdout: Lines,
    /// The prefix used when echoing its output.
    pub name: String,
}

impl FleetProcess {
    /// Spawns `bin args...` with piped output, echoing each line as `[name] line`.
    pub fn spawn(bin: &Path, name: &str, args: &[&str], envs: &[(&str, &str)]) -> FleetProcess {
        let mut cmd = Command::new(bin);
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in envs {
            cmd.env(k, v);
        }
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("spawning {} {args:?}: {e}", bin.display()));
        let stdout = drain(child.stdout.take(), name);
        let stderr = drain(child.stderr.take(), name);
        FleetProcess {
            child,
            stderr,
            stdout,
            name: name.to_string(),
        }
    }

    /// Waits until some stdout line satisfies `pred` and returns it, or panics after `timeout`
    /// (or when the process exits first) with its stderr.
    pub fn wait_for_stdout(&mut self, timeout: Duration, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(l) = self
                .stdout
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .find(|l| pred(l))
            {
                return l.clone();
            }
            if let Ok(Some(st)) = self.child.try_wait() {
                panic!(
                    "{} exited ({st}) before the expected output; stderr:\n{}",
                    self.name,
                    self.stderr_text()
                );
            }
            if Instant::now() > deadline {
                panic!(
                    "{} did not print the expected line within {timeout:?}; stderr:\n{}",
                    self.name,
                    self.stderr_text()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// All stderr so far, one string.
    pub fn stderr_text(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .join("\n")
    }

    /// Sends SIGTERM and waits (with a deadline) for the exit status.
    pub fn terminate(&mut self) -> ExitStatus {
        signal(&self.child, "TERM");
        wait_timeout(&mut self.child, Duration::from_secs(30))
            .unwrap_or_else(|| panic!("{} did not exit after SIGTERM", self.name))
    }

    /// SIGKILL: no chance to flush anything.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Waits for the process to exit by itself (with a deadline).
    pub fn wait(&mut self, timeout: Duration) -> ExitStatus {
        wait_timeout(&mut self.child, timeout)
            .unwrap_or_else(|| panic!("{} did not exit within {timeout:?}", self.name))
    }
}

impl Drop for FleetProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn drain(pipe: Option<impl std::io::Read + Send + 'static>, name: &str) -> Lines {
    let lines: Lines = Arc::new(Mutex::new(Vec::new()));
    let Some(pipe) = pipe else { return lines };
    let sink = lines.clone();
    let name = name.to_string();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            eprintln!("[{name}] {line}");
            sink.lock().unwrap_or_else(|e| e.into_inner()).push(line);
        }
    });
    lines
}

/// A running `fleet server` child with its data directory.
pub struct FleetServer {
    /// The process.
    pub process: FleetProcess,
    /// `https://127.0.0.1:PORT` from the ready line.
    pub url: String,
    /// The data directory (store, CA, kubeconfig).
    pub dir: PathBuf,
    /// The admin kubeconfig the server wrote.
    pub kubeconfig: PathBuf,
}

impl FleetServer {
    /// `fleet server --data-dir DIR --listen 127.0.0.1:0 [extra...]`, waiting for `ready <url>`.
    pub fn start(bin: &Path, dir: &Path, extra: &[&str]) -> FleetServer {
        FleetServer::start_on(bin, dir, "127.0.0.1:0", extra)
    }

    /// Like [`FleetServer::start`] with an explicit listen address (a restart reuses the port so
    /// clients can resume).
    pub fn start_on(bin: &Path, dir: &Path, listen: &str, extra: &[&str]) -> FleetServer {
        let dir_s = dir.to_string_lossy().into_owned();
        let mut args = vec!["server", "--data-dir", dir_s.as_str(), "--listen", listen];
        args.extend_from_slice(extra);
        let name = format!(
            "fleet server {}",
            dir.file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default()
        );
        let mut process = FleetProcess::spawn(bin, &name, &args, &[]);
        let line = process.wait_for_stdout(Duration::from_secs(60), |l| l.starts_with("ready "));
        let url = line.trim_start_matches("ready ").to_string();
        assert!(
            url.starts_with("https://") && !url.ends_with(":0"),
            "the ready line must show the real address: {line}"
        );
        FleetServer {
            process,
            url,
            dir: dir.to_path_buf(),
            kubeconfig: dir.join("kubeconfig"),
        }
    }

    /// The port from the ready line.
    pub fn port(&self) -> u16 {
        self.url
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in {}", self.url))
    }

    /// A kube-rs client from the written admin kubeconfig.
    pub async fn client(&self) -> kube::Client {
        fleet_kube::client(Some(&self.kubeconfig))
            .await
            .unwrap_or_else(|e| panic!("client for {}: {e}", self.url))
    }

    /// kubectl bound to the admin kubeconfig (`None` when kubectl is missing outside CI).
    pub fn kubectl(&self) -> Option<crate::Kubectl> {
        crate::Kubectl::new(&self.kubeconfig)
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
pub fn wait_timeout(child: &mut Child, timeout: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Ok(Some(s)) = child.try_wait() {
            return Some(s);
        }
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
