//! What this crate's tests add to `fleet-testkit`: the `fleet server` child of this crate's own
//! binary with the `fleet server` stdout contract checked, and raw HTTP through a kube client.

use std::ops::{Deref, DerefMut};
use std::path::Path;
use std::process::ExitStatus;

use fleet_testkit::FleetServer;
use http_body_util::BodyExt;

pub use fleet_testkit::process::wait_timeout;
pub use fleet_testkit::{find_tool, in_ci};

/// A running `fleet server` child process (killed on drop).
pub struct Server(FleetServer);

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
        let srv = FleetServer::start_on(fleet_testkit::fleet_bin!(), dir, listen, flags);
        // The contract: the ready line is the first line on stdout, with the real loopback port.
        let first = srv
            .process
            .stdout
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .first()
            .cloned();
        assert_eq!(
            first.as_deref(),
            Some(format!("ready {}", srv.url).as_str()),
            "the first stdout line must be the ready line"
        );
        assert!(srv.url.starts_with("https://127.0.0.1:"), "{}", srv.url);
        Server(srv)
    }

    /// Sends SIGTERM and waits for the exit status.
    pub fn terminate(mut self) -> ExitStatus {
        self.0.process.terminate()
    }

    /// SIGKILL: no chance to flush anything.
    pub fn kill(mut self) {
        self.0.process.kill()
    }
}

impl Deref for Server {
    type Target = FleetServer;
    fn deref(&self) -> &FleetServer {
        &self.0
    }
}

impl DerefMut for Server {
    fn deref_mut(&mut self) -> &mut FleetServer {
        &mut self.0
    }
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
