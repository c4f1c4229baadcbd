//! A whole server started from code: credentials, store, authentication, TLS and the accept loop
//! in one call, [`Server::start`], which `fleet server`, `fleet dev`, the benchmarks and the
//! tests share. Several servers can run in one process (each has its own store, keys and port).
//!
//! With a data directory, everything persists there (`store.db`, `pki/`, the service-account
//! key, the admin `kubeconfig`), and a restart on the same directory keeps data and
//! credentials. Without one, the store is in memory, the credentials are generated for this run
//! only, and the kubeconfig is written into a temporary directory that lives as long as the
//! handle.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use axum::Router;
use tokio_util::sync::CancellationToken;

use crate::app::{ApiServer, ApiServerConfig};
use crate::http::serve::{self, ServeOptions};
use crate::security::auth::{Authenticator, UserInfo};
use crate::security::pki::{self, Pki, PkiError};
use crate::storage::store::{DEFAULT_HISTORY, RETENTION, StoreConfig, StoreSync};

/// The SQLite file inside the data directory.
pub const STORE_FILE: &str = "store.db";
/// The admin kubeconfig inside the data directory.
pub const KUBECONFIG_FILE: &str = "kubeconfig";

/// What to start.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Where the store, the CA, the keys and the admin kubeconfig live (created when missing);
    /// `None`: an in-memory store and credentials for this run only.
    pub data_dir: Option<PathBuf>,
    /// `HOST:PORT` to listen on; port 0 picks a free port ([`ServerHandle::url`] shows it).
    pub listen: String,
    /// Whether commits fsync (file stores); [`StoreSync::Full`] unless asked otherwise.
    pub store_sync: StoreSync,
    /// How long superseded revisions stay in the store for paginated lists at a past revision.
    pub store_retention: Duration,
    /// How many of the latest events (of all resources) are kept in memory for watches to resume
    /// from, as kube-apiserver's watch cache; one of a namespace resuming from before them is
    /// replayed from the log while [`ServerConfig::store_retention`] keeps it, else answered 410.
    pub store_history: usize,
    /// How long shutdown waits for in-flight requests (watches are ended at once).
    pub drain_timeout: Duration,
    /// Set workload status as a healthy cluster would, kwok-style (see [`crate::controllers::simulator`]).
    pub simulate_workloads: bool,
}

impl Default for ServerConfig {
    fn default() -> ServerConfig {
        ServerConfig {
            data_dir: None,
            listen: "127.0.0.1:0".to_string(),
            store_sync: StoreSync::default(),
            store_retention: RETENTION,
            store_history: DEFAULT_HISTORY,
            drain_timeout: ServeOptions::default().drain_timeout,
            simulate_workloads: false,
        }
    }
}

impl ServerConfig {
    /// An in-memory server on a free loopback port.
    pub fn in_memory() -> ServerConfig {
        ServerConfig::default()
    }

    /// A server persisted in `dir`, on a free loopback port.
    pub fn with_data_dir(dir: impl Into<PathBuf>) -> ServerConfig {
        ServerConfig {
            data_dir: Some(dir.into()),
            ..ServerConfig::default()
        }
    }
}

/// Why a server did not start; each names what it was working on.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The listen address is not `HOST:PORT`.
    #[error("listen address {listen:?}: {reason}")]
    BadListen {
        /// The address as given.
        listen: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Binding the listen address failed (in use, not a local address, no permission).
    #[error("listen address {listen:?}: cannot listen: {source}")]
    Listen {
        /// The address as given.
        listen: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// Creating or loading the CA, certificates or the kubeconfig failed (names the file).
    #[error("credentials: {0}")]
    Pki(#[from] PkiError),
    /// Opening the store or bootstrapping the API server failed.
    #[error("opening the API server in {place}: {source}")]
    Api {
        /// The data directory, or "memory".
        place: String,
        /// The underlying error.
        source: crate::state::Error,
    },
    /// Creating the temporary directory of an in-memory server failed.
    #[error("creating a temporary directory: {0}")]
    TempDir(std::io::Error),
}

/// Starts servers; see [`Server::start`].
pub struct Server;

impl Server {
    /// Opens the store (or an in-memory one), prepares credentials, binds the listen address,
    /// writes the admin kubeconfig and starts serving HTTPS in the background. Returns once
    /// the server accepts connections.
    pub async fn start(cfg: ServerConfig) -> Result<ServerHandle, StartError> {
        let host = listen_host(&cfg.listen)?;
        let hosts = std::slice::from_ref(&host);
        let (pki, store, temp) = match &cfg.data_dir {
            Some(dir) => (
                Pki::load_or_create(dir, hosts)?,
                StoreConfig::file(dir.join(STORE_FILE)),
                None,
            ),
            None => (
                Pki::ephemeral(hosts)?,
                StoreConfig::in_memory(),
                Some(tempfile::tempdir().map_err(StartError::TempDir)?),
            ),
        };
        let store = StoreConfig {
            sync: cfg.store_sync,
            retention: cfg.store_retention,
            history: cfg.store_history,
            ..store
        };
        let mut api_cfg = ApiServerConfig::with_store(store);
        api_cfg.service_accounts.key_dir = cfg.data_dir.clone();
        api_cfg.service_accounts.ca_pem = Some(pki.ca_cert_pem().to_string());
        api_cfg.simulate_workloads = cfg.simulate_workloads;
        let place = cfg
            .data_dir
            .as_ref()
            .map_or_else(|| "memory".to_string(), |d| d.display().to_string());
        let api = ApiServer::new(api_cfg)
            .await
            .map_err(|source| StartError::Api { place, source })?;
        match Self::serve(cfg, pki, api.clone(), temp).await {
            Ok(handle) => Ok(handle),
            Err(e) => {
                // Nothing serves this store: close it now rather than when the last task ends.
                let _ = tokio::task::spawn_blocking(move || api.shutdown()).await;
                Err(e)
            }
        }
    }

    async fn serve(
        cfg: ServerConfig,
        pki: Pki,
        api: ApiServer,
        temp: Option<tempfile::TempDir>,
    ) -> Result<ServerHandle, StartError> {
        let listener = tokio::net::TcpListener::bind(&cfg.listen)
            .await
            .map_err(|source| StartError::Listen {
                listen: cfg.listen.clone(),
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| StartError::Listen {
            listen: cfg.listen.clone(),
            source,
        })?;
        let url = pki::server_url(addr);
        let kubeconfig = pki.admin_kubeconfig(&url);
        let kubeconfig_dir = match (&cfg.data_dir, &temp) {
            (Some(dir), _) => dir.clone(),
            (None, Some(t)) => t.path().to_path_buf(),
            (None, None) => std::env::temp_dir(),
        };
        let kubeconfig_path = kubeconfig_dir.join(KUBECONFIG_FILE);
        pki::write_private(&kubeconfig_path, kubeconfig.as_bytes())?;

        let admin = UserInfo::authenticated(pki::ADMIN_USER, &[pki::ADMIN_GROUP]);
        let authenticator = Authenticator::new(vec![(pki.admin_token().to_string(), admin)])
            .with_verifier(api.service_account_authenticator());
        let app = serve::with_authentication(api.router(), authenticator);
        let stop = CancellationToken::new();
        let stopped = stop.clone();
        let task = tokio::spawn(serve::serve(
            listener,
            pki.server_tls_config()?,
            app,
            async move { stopped.cancelled().await },
            ServeOptions {
                drain_timeout: cfg.drain_timeout,
                ..ServeOptions::default()
            },
        ));
        tracing::info!(%url, kubeconfig = %kubeconfig_path.display(), "serving");
        Ok(ServerHandle {
            url,
            addr,
            kubeconfig,
            kubeconfig_path,
            data_dir: cfg.data_dir,
            pki,
            api,
            stop,
            task: Some(task),
            _temp: temp,
        })
    }
}

/// A running server. Dropping it stops serving and closes the store too (without waiting for
/// connections to drain); [`ServerHandle::shutdown`] does it gracefully.
pub struct ServerHandle {
    url: String,
    addr: SocketAddr,
    kubeconfig: String,
    kubeconfig_path: PathBuf,
    data_dir: Option<PathBuf>,
    pki: Pki,
    api: ApiServer,
    stop: CancellationToken,
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
    /// Holds the kubeconfig of an in-memory server; removed when the handle goes.
    _temp: Option<tempfile::TempDir>,
}

impl std::fmt::Debug for ServerHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerHandle")
            .field("url", &self.url)
            .field("data_dir", &self.data_dir)
            .finish_non_exhaustive()
    }
}

impl ServerHandle {
    /// `https://HOST:PORT`, with the real port when 0 was asked for.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The admin kubeconfig file (in the data directory, or in a temporary directory this
    /// handle owns for an in-memory server).
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig_path
    }

    /// The admin kubeconfig's YAML (client-certificate user, the CA, this server's URL).
    pub fn kubeconfig(&self) -> &str {
        &self.kubeconfig
    }

    /// The CA certificate (PEM) clients trust.
    pub fn ca_pem(&self) -> &str {
        self.pki.ca_cert_pem()
    }

    /// The admin bearer token (`system:masters`).
    pub fn admin_token(&self) -> &str {
        self.pki.admin_token()
    }

    /// The CA, to issue client certificates for other users.
    pub fn pki(&self) -> &Pki {
        &self.pki
    }

    /// The data directory, `None` for an in-memory server.
    pub fn data_dir(&self) -> Option<&Path> {
        self.data_dir.as_deref()
    }

    /// The API server itself (for in-process callers and background work).
    pub fn api(&self) -> &ApiServer {
        &self.api
    }

    /// The bare router, for in-process clients: no TLS and no authentication, so requests carry
    /// no user and are not authorized (what the controllers of the same process use).
    pub fn router(&self) -> Router {
        self.api.router()
    }

    /// Stops accepting connections, ends open watches, waits up to the drain timeout for
    /// in-flight requests, then stops background work and closes the store (its writer
    /// finishes what is queued and checkpoints).
    pub async fn shutdown(mut self) -> std::io::Result<()> {
        self.stop.cancel();
        let served = match self.task.take() {
            Some(task) => task.await.unwrap_or_else(|e| Err(std::io::Error::other(e))),
            None => Ok(()),
        };
        let api = self.api.clone();
        tokio::task::spawn_blocking(move || api.shutdown())
            .await
            .map_err(std::io::Error::other)?;
        served
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        if self.task.is_some() {
            self.stop.cancel();
            // Closing the store blocks only until the writer thread has finished its queue.
            self.api.shutdown();
        }
    }
}

/// The host part of `HOST:PORT` (brackets removed), for the serving certificate's names.
pub fn listen_host(listen: &str) -> Result<String, StartError> {
    let bad = |reason: String| StartError::BadListen {
        listen: listen.to_string(),
        reason,
    };
    let (host, port) = listen
        .rsplit_once(':')
        .ok_or_else(|| bad("expected HOST:PORT".into()))?;
    if port.parse::<u16>().is_err() {
        return Err(bad(format!("port {port:?} is not a number in 0..=65535")));
    }
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return Err(bad(
            "missing host (use 0.0.0.0:PORT for every interface)".into()
        ));
    }
    Ok(host.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_host_parsing() {
        assert_eq!(listen_host("127.0.0.1:0").unwrap(), "127.0.0.1");
        assert_eq!(listen_host("[::1]:6443").unwrap(), "::1");
        assert_eq!(listen_host("example.test:1").unwrap(), "example.test");
        assert!(listen_host("6443").is_err());
        assert!(listen_host(":6443").is_err());
        assert!(listen_host("h:99999").is_err());
    }
}
