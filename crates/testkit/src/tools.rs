//! Finding the oracle tools tests compare against. Outside CI a missing tool makes the test skip
//! with a message; under `CI=true` it is a failure, never a silent skip.

use std::path::PathBuf;

/// Whether tests must fail instead of skipping when a tool or shared data is missing.
pub fn in_ci() -> bool {
    std::env::var("CI").map(|v| v == "true").unwrap_or(false)
}

/// Where `scripts/install-test-tools` puts the tools: `$FLEET_TOOLS_DIR/bin`, default
/// `~/.cache/fleet-tools/bin`.
pub fn tools_bin_dir() -> PathBuf {
    std::env::var("FLEET_TOOLS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/fleet-tools")
        })
        .join("bin")
}

/// Skips a test (prints why) or, under `CI=true`, fails it: for a missing oracle or data set
/// the caller found some other way.
pub fn skip(why: &str) {
    if in_ci() {
        panic!("CI=true but {why}");
    }
    eprintln!("SKIP: {why}");
}

/// Finds a tool: `$ENV_VAR`, then the tools directory, then PATH. Missing: `None` after printing
/// why (the test skips), or a panic under `CI=true`.
pub fn find_tool(env_var: &str, name: &str) -> Option<PathBuf> {
    if let Ok(p) = std::env::var(env_var)
        && !p.is_empty()
    {
        return Some(PathBuf::from(p));
    }
    let candidate = tools_bin_dir().join(name);
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

/// Real kubectl (`$KUBECTL`).
pub fn kubectl() -> Option<PathBuf> {
    find_tool("KUBECTL", "kubectl")
}

/// Real helm v3.6.2 (`$FLEET_HELM_BIN`).
pub fn helm() -> Option<PathBuf> {
    find_tool("FLEET_HELM_BIN", "helm")
}

/// Real kustomize v4.5.4 (`$FLEET_KUSTOMIZE_BIN`).
pub fn kustomize() -> Option<PathBuf> {
    find_tool("FLEET_KUSTOMIZE_BIN", "kustomize")
}

/// Real openssl (`$OPENSSL`), to check generated certificates and keys.
pub fn openssl() -> Option<PathBuf> {
    find_tool("OPENSSL", "openssl")
}

/// Real git (`$GIT`).
pub fn git() -> Option<PathBuf> {
    find_tool("GIT", "git")
}

/// A python with the `kubernetes` client package (`$PYTHON`, default `python3`), for the tests
/// that check the official Python client against the server. Missing: `None` after printing
/// why, or a panic under `CI=true`.
pub fn python_kubernetes() -> Option<PathBuf> {
    let py = PathBuf::from(std::env::var("PYTHON").unwrap_or_else(|_| "python3".into()));
    let ok = std::process::Command::new(&py)
        .args(["-c", "import kubernetes"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if ok {
        return Some(py);
    }
    if in_ci() {
        panic!("python3 with the `kubernetes` module is required under CI=true");
    }
    eprintln!(
        "SKIP: python3 with the `kubernetes` module not found (run scripts/install-test-tools)"
    );
    None
}

/// `shared/data` beside the repository (public charts and examples, read at test time and never
/// copied into the project). Absent: `None` after printing why, or a panic under `CI=true`.
pub fn shared_data() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data");
    if p.is_dir() {
        return Some(p);
    }
    if in_ci() {
        panic!("{} is required under CI=true", p.display());
    }
    println!("skipping: {} is absent", p.display());
    None
}
