//! A test router served the way `fleet server` serves the API (the real accept loop, TLS from the
//! test CA, the admin-token authenticator) on 127.0.0.1:0, for tests of the HTTPS edge itself.

use std::net::SocketAddr;

use axum::Router;
use fleet_apiserver::auth::{Authenticator, UserInfo};
use fleet_apiserver::pki::{self, Pki};
use fleet_apiserver::serve::{self, ServeOptions};

/// The running accept loop.
pub struct Served {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Sending (or dropping) this starts the graceful shutdown.
    pub stop: tokio::sync::oneshot::Sender<()>,
    /// The accept loop; ends when shutdown finishes.
    pub task: tokio::task::JoinHandle<std::io::Result<()>>,
}

/// Serves `app` with `pki`'s server certificate behind the admin-token authenticator.
pub async fn serve_app(pki: &Pki, app: Router, opts: ServeOptions) -> Served {
    let admin = UserInfo::authenticated(pki::ADMIN_USER, &[pki::ADMIN_GROUP]);
    let auth = Authenticator::new(vec![(pki.admin_token().to_string(), admin)]);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("bound address");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(serve::serve(
        listener,
        pki.server_tls_config().expect("server TLS config"),
        serve::with_authentication(app, auth),
        async move {
            let _ = stopped.await;
        },
        opts,
    ));
    Served { addr, stop, task }
}
