//! The TLS accept loop and authentication, driven by real HTTPS clients (HTTP/1.1 and h2) against a
//! small router that echoes the identity it sees: client certificates from our CA, the admin bearer
//! token, no credentials, bad credentials, a foreign CA, and graceful shutdown.

use crate::support::serve_app::serve_app;
use fleet_testkit::tls;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::routing::get;
use axum::{Extension, Router};
use bytes::Bytes;
use fleet_apiserver::auth::UserInfo;
use fleet_apiserver::pki::{self, Pki};
use fleet_apiserver::serve::ServeOptions;
use http_body_util::{BodyExt, Empty};
use hyper::{Request, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::ServerName;

struct Running {
    addr: SocketAddr,
    pki: Pki,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

fn app() -> Router {
    Router::new()
        .route(
            "/whoami",
            get(|Extension(u): Extension<UserInfo>| async move {
                format!("{} {}", u.name, u.groups.join(","))
            }),
        )
        .route("/healthz", get(|| async { "ok" }))
        .route("/version", get(|| async { "{}" }))
        .route(
            "/stream",
            get(|| async {
                // A watch-like body that never ends on its own.
                let s = futures::stream::unfold(0u64, |i| async move {
                    if i > 0 {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                    Some((
                        Ok::<_, std::io::Error>(Bytes::from(format!("{{\"n\":{i}}}\n"))),
                        i + 1,
                    ))
                });
                axum::body::Body::from_stream(s)
            }),
        )
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_millis(500)).await;
                "done"
            }),
        )
}

async fn start(dir: &std::path::Path) -> Running {
    let pki = Pki::load_or_create(dir, &["127.0.0.1".into()]).unwrap();
    let served = serve_app(
        &pki,
        app(),
        ServeOptions {
            drain_timeout: Duration::from_secs(5),
            ..ServeOptions::default()
        },
    )
    .await;
    Running {
        addr: served.addr,
        pki,
        stop: Some(served.stop),
        task: served.task,
    }
}

/// One request over a fresh connection; returns status and body. `alpn` picks HTTP/1.1 or h2.
async fn fetch(
    addr: SocketAddr,
    cfg: rustls::ClientConfig,
    path: &str,
    token: Option<&str>,
) -> Result<(StatusCode, String), String> {
    let h2 = cfg.alpn_protocols.first().is_some_and(|p| p == b"h2");
    let tcp = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| e.to_string())?;
    let tls = tokio_rustls::TlsConnector::from(Arc::new(cfg))
        .connect(ServerName::try_from("127.0.0.1").unwrap(), tcp)
        .await
        .map_err(|e| e.to_string())?;
    let negotiated = tls.get_ref().1.alpn_protocol().map(|p| p.to_vec());
    let mut req = Request::builder().uri(format!("https://127.0.0.1:{}{path}", addr.port()));
    if !h2 {
        req = req.header("host", "127.0.0.1");
    }
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    let req = req.body(Empty::<Bytes>::new()).unwrap();
    let resp = if h2 {
        assert_eq!(negotiated.as_deref(), Some(&b"h2"[..]));
        let (mut send, conn) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls))
                .await
                .map_err(|e| e.to_string())?;
        tokio::spawn(conn);
        send.send_request(req).await.map_err(|e| e.to_string())?
    } else {
        let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .map_err(|e| e.to_string())?;
        tokio::spawn(conn);
        send.send_request(req).await.map_err(|e| e.to_string())?
    };
    let status = resp.status();
    let body = resp
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

#[tokio::test]
async fn identities_over_http1_and_h2() {
    let dir = tempfile::tempdir().unwrap();
    let srv = start(dir.path()).await;
    let ca = srv.pki.ca_cert_pem().to_string();
    for alpn in [&b"http/1.1"[..], &b"h2"[..]] {
        // Admin client certificate: CN=admin, O=system:masters.
        let (s, body) = fetch(
            srv.addr,
            tls::client_config_for(&ca, Some(srv.pki.admin()), alpn),
            "/whoami",
            None,
        )
        .await
        .unwrap();
        assert_eq!(s, StatusCode::OK);
        assert_eq!(body, "admin system:masters,system:authenticated");

        // Another user from the same CA.
        let bob = srv.pki.issue_client_cert("bob", &["devs"]).unwrap();
        let (s, body) = fetch(
            srv.addr,
            tls::client_config_for(&ca, Some(&bob), alpn),
            "/whoami",
            None,
        )
        .await
        .unwrap();
        assert_eq!(
            (s, body.as_str()),
            (StatusCode::OK, "bob devs,system:authenticated")
        );

        // The admin bearer token, no certificate.
        let token = srv.pki.admin_token().to_string();
        let (s, body) = fetch(
            srv.addr,
            tls::client_config_for(&ca, None, alpn),
            "/whoami",
            Some(&token),
        )
        .await
        .unwrap();
        assert_eq!(
            (s, body.as_str()),
            (StatusCode::OK, "admin system:masters,system:authenticated")
        );

        // No credentials: 401 Status on API paths, public health and version paths answer.
        let (s, body) = fetch(
            srv.addr,
            tls::client_config_for(&ca, None, alpn),
            "/whoami",
            None,
        )
        .await
        .unwrap();
        assert_eq!(s, StatusCode::UNAUTHORIZED);
        let status: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(status["kind"], "Status");
        assert_eq!(status["reason"], "Unauthorized");
        assert_eq!(status["code"], 401);
        for p in ["/healthz", "/version"] {
            let (s, _) = fetch(srv.addr, tls::client_config_for(&ca, None, alpn), p, None)
                .await
                .unwrap();
            assert_eq!(s, StatusCode::OK, "{p}");
        }

        // A wrong token is rejected everywhere, even on public paths, and even with a valid cert.
        for p in ["/whoami", "/healthz"] {
            let (s, _) = fetch(
                srv.addr,
                tls::client_config_for(&ca, Some(srv.pki.admin()), alpn),
                p,
                Some("nope"),
            )
            .await
            .unwrap();
            assert_eq!(s, StatusCode::UNAUTHORIZED, "{p}");
        }
    }
}

#[tokio::test]
async fn foreign_client_certificates_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let srv = start(dir.path()).await;
    let other = Pki::ephemeral(&[]).unwrap();
    let cfg = tls::client_config_for(srv.pki.ca_cert_pem(), Some(other.admin()), b"http/1.1");
    let r = fetch(srv.addr, cfg, "/whoami", None).await;
    assert!(
        r.is_err(),
        "a certificate from another CA must fail the handshake: {r:?}"
    );
    // The server keeps serving.
    let cfg = tls::client_config_for(srv.pki.ca_cert_pem(), Some(srv.pki.admin()), b"http/1.1");
    assert_eq!(
        fetch(srv.addr, cfg, "/whoami", None).await.unwrap().0,
        StatusCode::OK
    );
    // A client that does not trust our CA refuses the server.
    let cfg = tls::client_config_for(other.ca_cert_pem(), None, b"http/1.1");
    assert!(fetch(srv.addr, cfg, "/healthz", None).await.is_err());
}

#[tokio::test]
async fn garbage_and_idle_connections_do_not_stop_the_server() {
    use tokio::io::AsyncWriteExt;
    let dir = tempfile::tempdir().unwrap();
    let srv = start(dir.path()).await;
    // Plain HTTP on the TLS port, random bytes, and a connection that never speaks.
    let mut plain = tokio::net::TcpStream::connect(srv.addr).await.unwrap();
    plain
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut junk = tokio::net::TcpStream::connect(srv.addr).await.unwrap();
    junk.write_all(&[0x16, 0x03, 0x01, 0xff, 0xff, 0, 1, 2, 3])
        .await
        .unwrap();
    let _idle = tokio::net::TcpStream::connect(srv.addr).await.unwrap();
    let cfg = tls::client_config_for(srv.pki.ca_cert_pem(), Some(srv.pki.admin()), b"h2");
    assert_eq!(
        fetch(srv.addr, cfg, "/whoami", None).await.unwrap().0,
        StatusCode::OK
    );
}

#[tokio::test]
async fn shutdown_finishes_in_flight_requests_and_stops_accepting() {
    let dir = tempfile::tempdir().unwrap();
    let mut srv = start(dir.path()).await;
    let cfg = tls::client_config_for(srv.pki.ca_cert_pem(), Some(srv.pki.admin()), b"http/1.1");
    let addr = srv.addr;
    let in_flight = tokio::spawn(fetch(addr, cfg.clone(), "/slow", None));
    tokio::time::sleep(Duration::from_millis(150)).await;
    let _ = srv.stop.take().unwrap().send(());
    let (s, body) = in_flight.await.unwrap().unwrap();
    assert_eq!((s, body.as_str()), (StatusCode::OK, "done"));
    tokio::time::timeout(Duration::from_secs(5), &mut srv.task)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(
        fetch(addr, cfg, "/whoami", None).await.is_err(),
        "no longer accepting"
    );
}

#[tokio::test]
async fn credentials_persist_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let first = start(dir.path()).await;
    let admin = first.pki.admin().clone();
    let ca = first.pki.ca_cert_pem().to_string();
    drop(first);
    let second = start(dir.path()).await;
    // A client configured from the first start's kubeconfig still works.
    let cfg = tls::client_config_for(&ca, Some(&admin), b"http/1.1");
    let (s, body) = fetch(second.addr, cfg, "/whoami", None).await.unwrap();
    assert_eq!(s, StatusCode::OK);
    assert!(body.starts_with("admin "));
    let kc = second.pki.admin_kubeconfig(&pki::server_url(second.addr));
    assert!(kc.contains(&format!("server: https://127.0.0.1:{}", second.addr.port())));
}

#[tokio::test]
async fn shutdown_ends_open_watches_promptly() {
    let dir = tempfile::tempdir().unwrap();
    let mut srv = start(dir.path()).await;
    let cfg = tls::client_config_for(srv.pki.ca_cert_pem(), Some(srv.pki.admin()), b"http/1.1");
    let tcp = tokio::net::TcpStream::connect(srv.addr).await.unwrap();
    let tls = tokio_rustls::TlsConnector::from(Arc::new(cfg))
        .connect(ServerName::try_from("127.0.0.1").unwrap(), tcp)
        .await
        .unwrap();
    let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(conn);
    let req = Request::builder()
        .uri("/stream?watch=true")
        .header("host", "127.0.0.1")
        .body(Empty::<Bytes>::new())
        .unwrap();
    let mut body = send.send_request(req).await.unwrap().into_body();
    let first = tokio::time::timeout(Duration::from_secs(5), body.frame())
        .await
        .expect("first watch chunk")
        .unwrap()
        .unwrap();
    assert!(first.is_data());
    let t = std::time::Instant::now();
    let _ = srv.stop.take().unwrap().send(());
    // The body ends cleanly (no error) and the server returns well before the drain timeout.
    let drained = tokio::time::timeout(Duration::from_secs(3), async {
        while let Some(frame) = body.frame().await {
            frame.expect("clean end of the watch body");
        }
    });
    drained.await.expect("watch body ends on shutdown");
    tokio::time::timeout(Duration::from_secs(3), &mut srv.task)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
}
