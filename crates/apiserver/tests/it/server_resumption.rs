//! TLS 1.3 session resumption: the server issues session tickets, a returning client resumes
//! (no certificate exchange), and the resumed connection still carries the client certificate's
//! identity (CN -> user, O -> groups).

use crate::support::serve_app::serve_app;
use fleet_testkit::tls;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::routing::get;
use axum::{Extension, Router};
use bytes::Bytes;
use fleet_apiserver::auth::UserInfo;
use fleet_apiserver::pki::Pki;
use fleet_apiserver::serve::ServeOptions;
use http_body_util::{BodyExt, Empty};
use hyper::Request;
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;

async fn start(pki: &Pki) -> (SocketAddr, tokio::sync::oneshot::Sender<()>) {
    let app = Router::new().route(
        "/whoami",
        get(|Extension(u): Extension<UserInfo>| async move {
            format!("{} {}", u.name, u.groups.join(","))
        }),
    );
    let served = serve_app(pki, app, ServeOptions::default()).await;
    (served.addr, served.stop)
}

/// (handshake kind, body of GET /whoami) over a fresh connection.
async fn whoami(
    addr: SocketAddr,
    cfg: Arc<rustls::ClientConfig>,
) -> (Option<rustls::HandshakeKind>, String) {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let tls = tokio_rustls::TlsConnector::from(cfg)
        .connect(ServerName::try_from("127.0.0.1").unwrap(), tcp)
        .await
        .unwrap();
    let kind = tls.get_ref().1.handshake_kind();
    let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(conn);
    let req = Request::builder()
        .uri("/whoami")
        .header("host", "127.0.0.1")
        .body(Empty::<Bytes>::new())
        .unwrap();
    let resp = send.send_request(req).await.unwrap();
    assert_eq!(resp.status(), 200);
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (kind, String::from_utf8_lossy(&body).into_owned())
}

#[tokio::test(flavor = "multi_thread")]
async fn returning_clients_resume_and_keep_their_identity() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::load_or_create(dir.path(), &["127.0.0.1".into()]).unwrap();
    let (addr, _stop) = start(&pki).await;
    // More clients than the stateful session cache rustls would keep (256): tickets scale.
    let users: Vec<Arc<rustls::ClientConfig>> = (0..300)
        .map(|i| {
            let ck = pki
                .issue_client_cert(&format!("user-{i}"), &[&format!("group-{i}")])
                .unwrap();
            tls::client_config(&pki, Some(&ck))
        })
        .collect();
    for (i, cfg) in users.iter().enumerate() {
        let (kind, who) = whoami(addr, cfg.clone()).await;
        assert_eq!(
            kind,
            Some(rustls::HandshakeKind::Full),
            "first connection of user-{i}"
        );
        assert_eq!(who, format!("user-{i} group-{i},system:authenticated"));
    }
    for (i, cfg) in users.iter().enumerate() {
        let (kind, who) = whoami(addr, cfg.clone()).await;
        assert_eq!(
            kind,
            Some(rustls::HandshakeKind::Resumed),
            "user-{i} did not resume"
        );
        assert_eq!(who, format!("user-{i} group-{i},system:authenticated"));
    }
}
