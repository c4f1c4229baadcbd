//! The one place a `kube::Client` is configured.
//!
//! The manager controllers, the agent, the CLI and the online half of the bundle reader all talk to
//! a Kubernetes API through kube-rs. They get their client here, so the TLS provider, timeouts and
//! the choice between a kubeconfig file, in-cluster configuration and an in-process router (no socket,
//! used by `fleet server`'s own controllers and by tests) are decided once.

pub mod apply;
pub mod lease;

use std::path::{Path, PathBuf};
use std::sync::Once;

use bytes::Bytes;
use kube::config::{KubeConfigOptions, Kubeconfig};

/// Why a client could not be built.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The kubeconfig file could not be read or parsed.
    #[error("kubeconfig {path}: {source}")]
    Kubeconfig {
        /// The file named by the caller.
        path: PathBuf,
        /// What kube-rs reported.
        source: kube::config::KubeconfigError,
    },
    /// Neither a kubeconfig nor in-cluster configuration was usable.
    #[error("no Kubernetes configuration: {0}")]
    Infer(#[from] kube::config::InferConfigError),
    /// The configuration was read but a client could not be made from it.
    #[error("building the Kubernetes client: {0}")]
    Client(#[from] kube::Error),
    /// A user to impersonate that cannot be sent as a header.
    #[error("cannot impersonate {user:?}: {source}")]
    Impersonate {
        /// The user asked for.
        user: String,
        /// Why the header was refused.
        source: http::header::InvalidHeaderValue,
    },
    /// The configuration's `tls-server-name` is not a valid DNS name or IP address.
    #[error("tls-server-name {name:?}: {message}")]
    TlsServerName {
        /// The name configured.
        name: String,
        /// Why rustls refused it.
        message: String,
    },
}

static PROVIDER: Once = Once::new();

/// Installs aws-lc-rs as the process's rustls provider (idempotent). kube-rs, the bundle reader's
/// chart downloads and the API server share one provider; installing it twice is harmless.
pub fn install_crypto_provider() {
    PROVIDER.call_once(|| {
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    });
}

/// Reads a kubeconfig file into a client configuration (current context unless `context` is given).
pub async fn config_from_kubeconfig(
    path: &Path,
    context: Option<&str>,
) -> Result<kube::Config, Error> {
    install_crypto_provider();
    let kc = Kubeconfig::read_from(path).map_err(|source| Error::Kubeconfig {
        path: path.to_path_buf(),
        source,
    })?;
    config_from_parsed(kc, path, context).await
}

/// Parses kubeconfig YAML (as held in the agent's `fleet-agent` Secret) into a client configuration.
pub async fn config_from_kubeconfig_yaml(yaml: &str) -> Result<kube::Config, Error> {
    install_crypto_provider();
    let path = PathBuf::from("<kubeconfig>");
    let kc = Kubeconfig::from_yaml(yaml).map_err(|source| Error::Kubeconfig {
        path: path.clone(),
        source,
    })?;
    config_from_parsed(kc, &path, None).await
}

async fn config_from_parsed(
    kc: Kubeconfig,
    path: &Path,
    context: Option<&str>,
) -> Result<kube::Config, Error> {
    let opts = KubeConfigOptions {
        context: context.map(str::to_string),
        ..Default::default()
    };
    kube::Config::from_custom_kubeconfig(kc, &opts)
        .await
        .map_err(|source| Error::Kubeconfig {
            path: path.to_path_buf(),
            source,
        })
}

/// A client from a kubeconfig file when one is named, else from the environment the way kubectl
/// and kube-rs infer it (`$KUBECONFIG`, `~/.kube/config`, then in-cluster service-account files).
pub async fn client(kubeconfig: Option<&Path>) -> Result<kube::Client, Error> {
    install_crypto_provider();
    let cfg = match kubeconfig {
        Some(p) => config_from_kubeconfig(p, None).await?,
        None => kube::Config::infer().await?,
    };
    client_from_config(cfg)
}

/// A client from an already-built configuration (after the caller adjusted it, e.g. the agent
/// switching namespace).
///
/// Unlike kube-rs's default stack, which speaks only HTTP/1.1, it offers HTTP/2 by ALPN, as
/// client-go does: an agent's watches and requests then share one connection to the manager
/// instead of one per request in flight. At 10,000 agents HTTP/1.1 needed more descriptors than
/// a manager's 20,000-file limit, and refused connections sent agents into backoff. A
/// configuration through a proxy keeps kube-rs's own stack, which knows how to tunnel.
pub fn client_from_config(cfg: kube::Config) -> Result<kube::Client, Error> {
    install_crypto_provider();
    if cfg.proxy_url.is_some() {
        return Ok(kube::Client::try_from(cfg)?);
    }
    multiplexed(cfg)
}

/// How long an HTTP/2 connection may go without receiving anything before the client pings it
/// (client-go's `ReadIdleTimeout`): a connection through a NAT that dropped it is found and
/// replaced instead of holding the agent's requests until they time out.
pub const KEEP_ALIVE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(30);

/// How long a ping may go unanswered before the connection is closed (client-go's `PingTimeout`).
pub const KEEP_ALIVE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(15);

/// The runtime the connections of clients made by [`client_from_config`] run on, when one was
/// set ([`run_connections_on`]); otherwise the runtime of whoever makes the connection.
static CONNECTIONS: std::sync::OnceLock<tokio::runtime::Handle> = std::sync::OnceLock::new();

/// Runs the connection tasks (HTTP/2 framing, TLS records, keep-alive pings) of every client
/// [`client_from_config`] makes from now on on `rt`; false when one was already set.
///
/// Why: a process that runs thousands of agents (`fleet bench scale`) keeps its runtime's
/// queue full, and a connection task waiting its turn for longer than the keep-alive timeout
/// reads its pong too late: hyper checks the ping's deadline before reading the frames that
/// answer it, so the connection is dropped as dead, its requests fail, and thousands of
/// reconnections at once made it worse (10,000 agents, an update round never converged). One
/// agent per process never waits that long; a runtime of its own gives the connections of many
/// the same promptness.
pub fn run_connections_on(rt: tokio::runtime::Handle) -> bool {
    CONNECTIONS.set(rt).is_ok()
}

/// Spawns connection tasks on [`CONNECTIONS`] when set, else on the current runtime.
#[derive(Clone, Copy)]
struct ConnectionExecutor;

impl<F> hyper::rt::Executor<F> for ConnectionExecutor
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, fut: F) {
        match CONNECTIONS.get() {
            Some(rt) => drop(rt.spawn(fut)),
            None => drop(tokio::spawn(fut)),
        }
    }
}

/// A connector whose connections are made (TCP, TLS handshake) on [`CONNECTIONS`] when set, so
/// that their sockets belong to that runtime's reactor as well.
#[derive(Clone)]
struct ConnectOnConnections<C>(C);

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl<C> tower::Service<http::Uri> for ConnectOnConnections<C>
where
    C: tower::Service<http::Uri>,
    C::Future: Send + 'static,
    C::Response: Send + 'static,
    C::Error: Into<BoxError> + Send + 'static,
{
    type Response = C::Response;
    type Error = BoxError;
    type Future =
        std::pin::Pin<Box<dyn std::future::Future<Output = Result<C::Response, BoxError>> + Send>>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), BoxError>> {
        self.0.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, uri: http::Uri) -> Self::Future {
        let connect = self.0.call(uri);
        match CONNECTIONS.get() {
            Some(rt) => {
                let made = rt.spawn(connect);
                Box::pin(async move {
                    match made.await {
                        Ok(r) => r.map_err(Into::into),
                        Err(e) => Err(Box::new(e) as BoxError),
                    }
                })
            }
            None => Box::pin(async move { connect.await.map_err(Into::into) }),
        }
    }
}

/// TLS sessions a client keeps for resumption (one server, a few tickets).
const SESSION_CACHE: usize = 4;

fn multiplexed(cfg: kube::Config) -> Result<kube::Client, Error> {
    use kube::client::ConfigExt;
    let mut http = hyper_util::client::legacy::connect::HttpConnector::new();
    http.enforce_http(false);
    let mut tls_config = cfg.rustls_client_config()?;
    // A client talks to one server: rustls' default cache of 256 servers' sessions, allocated
    // up front, was 17 KiB of every agent's memory.
    tls_config.resumption = rustls::client::Resumption::in_memory_sessions(SESSION_CACHE);
    let mut tls = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls_config)
        .https_or_http();
    if let Some(name) = &cfg.tls_server_name {
        let name = rustls::pki_types::ServerName::try_from(name.clone()).map_err(|e| {
            Error::TlsServerName {
                name: name.clone(),
                message: e.to_string(),
            }
        })?;
        tls = tls.with_server_name_resolver(hyper_rustls::FixedServerNameResolver::new(name));
    }
    let mut connector = hyper_timeout::TimeoutConnector::new(
        tls.enable_http1().enable_http2().wrap_connector(http),
    );
    connector.set_connect_timeout(cfg.connect_timeout);
    connector.set_read_timeout(cfg.read_timeout);
    connector.set_write_timeout(cfg.write_timeout);
    let client: hyper_util::client::legacy::Client<_, kube::client::Body> =
        hyper_util::client::legacy::Client::builder(ConnectionExecutor)
            .timer(hyper_util::rt::TokioTimer::new())
            .pool_timer(hyper_util::rt::TokioTimer::new())
            // The pool forgets a connection no request has checked out for its idle timeout
            // (90 s by default), even while a watch streams on it: the next request dialed a
            // second connection, and every watch restart (290 s) a new one. At 10,000 agents that
            // doubled the manager's connections (near its 20,000-descriptor limit) and memory.
            // A connection is kept until it closes; pings find the ones that died silently.
            .pool_idle_timeout(None)
            .http2_keep_alive_interval(KEEP_ALIVE_INTERVAL)
            .http2_keep_alive_timeout(KEEP_ALIVE_TIMEOUT)
            .http2_keep_alive_while_idle(true)
            .build(ConnectOnConnections(connector));
    let service = tower::ServiceBuilder::new()
        .layer(cfg.base_uri_layer())
        .option_layer(cfg.default_retry.then(|| {
            tower::retry::RetryLayer::new(kube::client::retry::RetryPolicy::server_retry())
        }))
        .option_layer(cfg.auth_layer()?)
        .layer(cfg.extra_headers_layer()?)
        .map_err(|e| -> Box<dyn std::error::Error + Send + Sync> { Box::new(e) })
        .service(client);
    Ok(kube::Client::new(service, cfg.default_namespace))
}

/// A client that calls an in-process HTTP service (the embedded API server's router) directly: no
/// socket, no TLS, no authentication. `fleet server` runs its own controllers and local agent this
/// way, and tests use it to drive the server without a port.
pub fn in_process<S, B>(service: S, default_namespace: &str) -> kube::Client
where
    S: tower::Service<http::Request<kube::client::Body>, Response = http::Response<B>>
        + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    kube::Client::new(service, default_namespace.to_string())
}

/// A client that sends every request of `client` as `user` (the `Impersonate-User` header, as
/// `kubectl --as`). The agent deploys a bundle with `serviceAccount` as that service account, so
/// the downstream's RBAC for it bounds what the bundle can do; the API server checks that the
/// agent may impersonate. Works over any client, in-process ones included.
pub fn impersonating(client: &kube::Client, user: &str) -> Result<kube::Client, Error> {
    let value = http::HeaderValue::from_str(user).map_err(|source| Error::Impersonate {
        user: user.to_string(),
        source,
    })?;
    let inner = client.clone();
    let service = tower::service_fn(move |mut req: http::Request<kube::client::Body>| {
        let inner = inner.clone();
        let value = value.clone();
        async move {
            req.headers_mut().insert("impersonate-user", value);
            inner.send(req).await
        }
    });
    Ok(kube::Client::new(
        service,
        client.default_namespace().to_string(),
    ))
}

/// The API server URL and its CA (PEM, empty when the configuration trusts the system store), as
/// handed to agents that must reach the same server: registration tokens carry both.
pub fn server_url_and_ca(cfg: &kube::Config) -> (String, String) {
    use base64::Engine;
    let url = cfg
        .cluster_url
        .to_string()
        .trim_end_matches('/')
        .to_string();
    let mut pem = String::new();
    for der in cfg.root_cert.iter().flatten() {
        let b64 = base64::engine::general_purpose::STANDARD.encode(der);
        pem.push_str("-----BEGIN CERTIFICATE-----\n");
        for chunk in b64.as_bytes().chunks(64) {
            pem.push_str(&String::from_utf8_lossy(chunk));
            pem.push('\n');
        }
        pem.push_str("-----END CERTIFICATE-----\n");
    }
    (url, pem)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

    /// A client from a kubeconfig speaks HTTP/2 to a server that offers it (the embedded API
    /// server does, as kube-apiserver), so a watch and requests alongside it share a connection.
    #[tokio::test]
    async fn clients_negotiate_http2_and_share_one_connection() {
        use fleet_apiserver::{Server, ServerConfig};
        let srv = Server::start(ServerConfig::in_memory())
            .await
            .expect("server starts");
        let c = client(Some(srv.kubeconfig_path())).await.expect("client");
        version_over_http2(&c).await;

        let api: kube::Api<ConfigMap> = kube::Api::namespaced(c.clone(), "default");
        let mut watch = std::pin::pin!(
            api.watch(&kube::api::WatchParams::default().timeout(30), "0")
                .await
                .expect("watch")
        );
        for i in 0..20 {
            let cm: ConfigMap = serde_json::from_value(serde_json::json!({
                "metadata": {"name": format!("cm-{i}")}
            }))
            .expect("configmap");
            api.create(&Default::default(), &cm).await.expect("create");
        }
        let mut seen = 0;
        while seen < 20 {
            use futures::StreamExt;
            match tokio::time::timeout(std::time::Duration::from_secs(10), watch.next()).await {
                Ok(Some(Ok(_))) => seen += 1,
                other => panic!("watch ended after {seen} events: {other:?}"),
            }
        }
        assert_eq!(
            connections_to(srv.addr().port()),
            1,
            "connections from the client to the server"
        );
    }

    /// `GET /version` through `c`, which must have gone over HTTP/2.
    async fn version_over_http2(c: &kube::Client) {
        let req = http::Request::get("/version")
            .body(kube::client::Body::empty())
            .expect("request");
        let res = c.send(req).await.expect("GET /version");
        assert_eq!(res.version(), http::Version::HTTP_2);
    }

    /// Established connections to `port` on this machine (their client side, from
    /// `/proc/net/tcp`).
    fn connections_to(port: u16) -> usize {
        let tcp = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
        tcp.lines()
            .skip(1)
            .filter(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                // Client side of a connection to the server's port, state ESTABLISHED (01).
                f.len() > 3 && f[2].ends_with(&format!(":{port:04X}")) && f[3] == "01"
            })
            .count()
    }

    /// An agent's only request for minutes may be its watch: a request after that quiet spell
    /// goes over the watch's connection instead of dialing a second one (hyper-util's pool
    /// forgets a connection after 90 s without a checkout unless told otherwise).
    #[tokio::test]
    async fn a_quiet_client_keeps_its_one_connection() {
        use fleet_apiserver::{Server, ServerConfig};
        let srv = Server::start(ServerConfig::in_memory())
            .await
            .expect("server starts");
        let c = client(Some(srv.kubeconfig_path())).await.expect("client");
        version_over_http2(&c).await;
        let api: kube::Api<ConfigMap> = kube::Api::namespaced(c.clone(), "default");
        let _watch = api
            .watch(&kube::api::WatchParams::default().timeout(3600), "0")
            .await
            .expect("watch");
        assert_eq!(
            connections_to(srv.addr().port()),
            1,
            "before the quiet spell"
        );

        // Five quiet minutes on the clock the pool reads (tokio's), in no time.
        tokio::time::pause();
        tokio::time::advance(std::time::Duration::from_secs(300)).await;
        tokio::time::resume();

        version_over_http2(&c).await;
        assert_eq!(
            connections_to(srv.addr().port()),
            1,
            "after the quiet spell: the request reused the watch's connection"
        );
    }

    #[tokio::test]
    async fn in_process_client_reaches_a_router() {
        let app = axum::Router::new().route(
            "/api/v1/namespaces/default/configmaps/x",
            axum::routing::get(|| async { axum::Json(serde_json_value()) }),
        );
        let client = in_process(app, "default");
        let api: kube::Api<ConfigMap> = kube::Api::default_namespaced(client);
        let cm = api.get("x").await.expect("get through the router");
        assert_eq!(cm.metadata.name.as_deref(), Some("x"));
    }

    #[tokio::test]
    async fn an_impersonating_client_sends_the_user_header() {
        let app = axum::Router::new().route(
            "/api/v1/namespaces/default/configmaps/x",
            axum::routing::get(|headers: http::HeaderMap| async move {
                let mut cm = serde_json_value();
                cm.data = Some(
                    [(
                        "as".to_string(),
                        headers
                            .get("impersonate-user")
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or("")
                            .to_string(),
                    )]
                    .into(),
                );
                axum::Json(cm)
            }),
        );
        let plain = in_process(app, "default");
        let client = impersonating(&plain, "system:serviceaccount:ns:sa").expect("header");
        let api: kube::Api<ConfigMap> = kube::Api::default_namespaced(client);
        let cm = api.get("x").await.expect("get through the router");
        assert_eq!(cm.data.unwrap()["as"], "system:serviceaccount:ns:sa");
        let api: kube::Api<ConfigMap> = kube::Api::default_namespaced(plain);
        let cm = api.get("x").await.expect("get through the router");
        assert_eq!(
            cm.data.unwrap()["as"],
            "",
            "the original client is unchanged"
        );
        assert!(impersonating(&api.into_client(), "bad\nname").is_err());
    }

    fn serde_json_value() -> k8s_openapi::api::core::v1::ConfigMap {
        ConfigMap {
            metadata: kube::api::ObjectMeta {
                name: Some("x".into()),
                namespace: Some("default".into()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn a_missing_kubeconfig_names_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("nope");
        let Err(err) = client(Some(&p)).await else {
            panic!("a missing kubeconfig must be an error");
        };
        assert!(err.to_string().contains("nope"), "{err}");
    }

    #[tokio::test]
    async fn a_kubeconfig_file_gives_a_client_for_its_server() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("kubeconfig");
        std::fs::write(
            &p,
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\n\
             users:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\n    namespace: ns1\n\
             current-context: x\n",
        )
        .expect("write");
        let cfg = config_from_kubeconfig(&p, None).await.expect("config");
        assert_eq!(cfg.cluster_url.to_string(), "https://127.0.0.1:1/");
        assert_eq!(
            server_url_and_ca(&cfg),
            ("https://127.0.0.1:1".to_string(), String::new())
        );
        assert_eq!(cfg.default_namespace, "ns1");
        client(Some(&p)).await.expect("client");
    }
}
