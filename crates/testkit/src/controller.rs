//! A `fleet controller` child process bound to a server's kubeconfig, with its metrics listener
//! on a free loopback port, and a scraper for its Prometheus counters.

use std::io::{Read, Write};
use std::path::Path;
use std::time::Duration;

use crate::process::FleetProcess;

/// A running `fleet controller`.
pub struct FleetController {
    /// The process.
    pub process: FleetProcess,
    /// `127.0.0.1:PORT` of `/metrics`, `/healthz`, `/readyz`.
    pub addr: String,
    /// Its git cache (`--cache-dir`, unless `extra` names one), removed after the process is
    /// stopped: tests kill controllers, and a killed one leaves the temporary directory it would
    /// have made itself behind.
    _cache: Option<tempfile::TempDir>,
}

impl FleetController {
    /// `fleet controller -k KUBECONFIG --listen 127.0.0.1:0 --cache-dir DIR [extra...]`, waiting
    /// for `listening`.
    pub fn start(bin: &Path, kubeconfig: &Path, extra: &[&str]) -> FleetController {
        let kc = kubeconfig.to_string_lossy().into_owned();
        let named = extra
            .iter()
            .any(|a| *a == "--cache-dir" || a.starts_with("--cache-dir="));
        let cache = (!named).then(|| {
            tempfile::Builder::new()
                .prefix("fleet-controller-cache-")
                .tempdir()
                .expect("a temporary directory for the controller's git cache")
        });
        let cache_dir = cache
            .as_ref()
            .map(|d| d.path().to_string_lossy().into_owned());
        let mut args = vec!["controller", "-k", kc.as_str(), "--listen", "127.0.0.1:0"];
        if let Some(d) = &cache_dir {
            args.extend(["--cache-dir", d.as_str()]);
        }
        args.extend_from_slice(extra);
        let mut process = FleetProcess::spawn(bin, "fleet controller", &args, &[]);
        let line =
            process.wait_for_stdout(Duration::from_secs(60), |l| l.starts_with("listening "));
        FleetController {
            process,
            addr: line.trim_start_matches("listening ").to_string(),
            _cache: cache,
        }
    }

    /// GET `path` on the listener: (status code, body).
    pub fn get(&self, path: &str) -> (u16, String) {
        http(&self.addr, "GET", path, &[], "")
    }

    /// Waits (with a deadline) until `/readyz` answers 200: caches synced, controllers running.
    pub fn wait_ready(&self, timeout: std::time::Duration) {
        crate::eventually("controller ready", timeout, || match self.get("/readyz") {
            (200, _) => Ok(()),
            (code, body) => Err(format!("{code} {body}")),
        });
    }

    /// The value of one metric line (`name` or `name{labels}`), 0 when absent.
    pub fn metric(&self, name: &str) -> u64 {
        let (_, body) = self.get("/metrics");
        body.lines()
            .filter(|l| !l.starts_with('#'))
            .find_map(|l| {
                let (k, v) = l.rsplit_once(' ')?;
                (k == name).then(|| v.trim().parse().ok()).flatten()
            })
            .unwrap_or(0)
    }

    /// Waits until `fleet_controller_api_writes_total` stays the same for `quiet` (the
    /// controller settled), up to `timeout`; returns the count.
    pub fn settled_writes(&self, quiet: Duration, timeout: Duration) -> u64 {
        let deadline = std::time::Instant::now() + timeout;
        let mut last = self.metric("fleet_controller_api_writes_total");
        let mut since = std::time::Instant::now();
        loop {
            std::thread::sleep(Duration::from_millis(100));
            let now = self.metric("fleet_controller_api_writes_total");
            if now != last {
                last = now;
                since = std::time::Instant::now();
            } else if since.elapsed() >= quiet {
                return now;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the controller kept writing for {timeout:?}"
            );
        }
    }
}

/// One plain HTTP/1.1 request to `addr` (a controller listener): (status code, body). Enough for
/// `/metrics`, `/readyz` and webhook deliveries; no client crate needed.
pub fn http(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let mut s =
        std::net::TcpStream::connect(addr).unwrap_or_else(|e| panic!("connecting to {addr}: {e}"));
    let _ = s.set_read_timeout(Some(Duration::from_secs(30)));
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).expect("writing request");
    let mut out = String::new();
    s.read_to_string(&mut out).expect("reading response");
    let code = out
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = out
        .split_once("\r\n\r\n")
        .map(|x| x.1)
        .unwrap_or("")
        .to_string();
    (code, body)
}
