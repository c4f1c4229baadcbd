//! Real kubectl against a kubeconfig, with its own cache directory so parallel tests never share
//! discovery caches.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// kubectl bound to one kubeconfig.
#[derive(Clone, Debug)]
pub struct Kubectl {
    /// The kubectl binary.
    pub bin: PathBuf,
    /// The kubeconfig every call uses.
    pub kubeconfig: PathBuf,
    /// `--cache-dir`, private to this instance.
    pub cache: PathBuf,
}

impl Kubectl {
    /// kubectl for `kubeconfig`, caching discovery next to it. `None` when kubectl is missing
    /// outside CI (the caller skips).
    pub fn new(kubeconfig: &Path) -> Option<Kubectl> {
        Some(Kubectl::with_bin(&crate::tools::kubectl()?, kubeconfig))
    }

    /// kubectl `bin` (already found) for `kubeconfig`, caching discovery next to it.
    pub fn with_bin(bin: &Path, kubeconfig: &Path) -> Kubectl {
        let cache = kubeconfig.parent().unwrap_or(Path::new(".")).join(format!(
            ".kubectl-cache-{}",
            kubeconfig
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default()
        ));
        Kubectl {
            bin: bin.to_path_buf(),
            kubeconfig: kubeconfig.to_path_buf(),
            cache,
        }
    }

    /// The kubectl command with this instance's kubeconfig and cache, for callers that spawn it
    /// themselves (a `get -w` read line by line).
    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(&self.bin);
        c.arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(&self.cache)
            .args(args);
        c
    }

    /// Runs kubectl and returns its output whatever the exit status.
    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("running kubectl {args:?}: {e}"))
    }

    /// Runs kubectl with `stdin` as standard input.
    pub fn run_stdin(&self, args: &[&str], stdin: &str) -> Output {
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("running kubectl {args:?}: {e}"));
        if let Some(mut i) = child.stdin.take() {
            i.write_all(stdin.as_bytes())
                .expect("writing kubectl stdin");
        }
        child.wait_with_output().expect("waiting for kubectl")
    }

    /// Runs kubectl, panics with both streams unless it succeeds, returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        checked(args, self.run(args))
    }

    /// `kubectl apply -f -` of `yaml`, panicking unless it succeeds.
    pub fn apply(&self, yaml: &str) -> String {
        let args = ["apply", "-f", "-"];
        checked(&args, self.run_stdin(&args, yaml))
    }

    /// Runs kubectl with `stdin` as standard input, panics with both streams unless it succeeds,
    /// returns stdout.
    pub fn ok_stdin(&self, args: &[&str], stdin: &str) -> String {
        checked(args, self.run_stdin(args, stdin))
    }

    /// `kubectl ARGS -o json`, parsed, panicking unless kubectl succeeds with JSON.
    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        let mut all = args.to_vec();
        all.extend_from_slice(&["-o", "json"]);
        let out = self.ok(&all);
        serde_json::from_str(&out)
            .unwrap_or_else(|e| panic!("kubectl {all:?} printed no JSON ({e}): {out}"))
    }

    /// Runs kubectl expecting it to fail; returns its stderr (panics when it succeeds).
    pub fn fails(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            !out.status.success(),
            "kubectl {args:?} unexpectedly succeeded: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    /// `kubectl get ... -o json`, parsed; `None` when kubectl fails (e.g. NotFound).
    pub fn get_json(&self, args: &[&str]) -> Option<serde_json::Value> {
        let mut all = vec!["get"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["-o", "json"]);
        let out = self.run(&all);
        if !out.status.success() {
            return None;
        }
        serde_json::from_slice(&out.stdout).ok()
    }
}

fn checked(args: &[&str], out: Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "kubectl {args:?} failed ({}):\nstdout: {stdout}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}
