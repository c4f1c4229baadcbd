//! Body-size limits at the HTTPS edge (the real accept loop, TLS, authentication and REST):
//! a declared Content-Length over 3 MiB gets a 413 Status before the body is read (even from an
//! unauthenticated client), a chunked body is cut off at 3 MiB with a 413 Status instead of a
//! connection reset, and the server keeps serving afterwards.

use fleet_testkit::tls;

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use fleet_apiserver::server::{Server, ServerConfig, ServerHandle};
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::Request;
use hyper::body::Frame;
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const CMS: &str = "/api/v1/namespaces/default/configmaps";

struct Running {
    addr: SocketAddr,
    token: String,
    tls: tokio_rustls::TlsConnector,
    _srv: ServerHandle,
}

async fn start() -> Running {
    let srv = Server::start(ServerConfig::in_memory()).await.unwrap();
    let cfg = tls::client_config(srv.pki(), None);
    Running {
        addr: srv.addr(),
        token: srv.admin_token().to_string(),
        tls: tokio_rustls::TlsConnector::from(cfg),
        _srv: srv,
    }
}

impl Running {
    async fn tls(&self) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
        let tcp = tokio::net::TcpStream::connect(self.addr).await.unwrap();
        self.tls
            .connect(ServerName::try_from("127.0.0.1").unwrap(), tcp)
            .await
            .unwrap()
    }

    /// One HTTP/1.1 request with `body` over a fresh connection; (status, body) or the
    /// transport error as text.
    async fn send<B>(&self, req: Request<B>) -> Result<(u16, serde_json::Value), String>
    where
        B: hyper::body::Body<Data = Bytes> + Send + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let (mut send, conn) =
            hyper::client::conn::http1::handshake(TokioIo::new(self.tls().await))
                .await
                .map_err(|e| e.to_string())?;
        tokio::spawn(conn);
        let resp = send.send_request(req).await.map_err(|e| format!("{e:?}"))?;
        let code = resp.status().as_u16();
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        Ok((code, serde_json::from_slice(&body).unwrap_or_default()))
    }

    fn post(&self, auth: bool) -> hyper::http::request::Builder {
        let b = Request::builder()
            .method("POST")
            .uri(CMS)
            .header("host", "127.0.0.1")
            .header("content-type", "application/json");
        if auth {
            b.header("authorization", format!("Bearer {}", self.token))
        } else {
            b
        }
    }
}

fn big_config_map(payload: usize) -> Vec<u8> {
    format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"big"}},"data":{{"x":"{}"}}}}"#,
        "y".repeat(payload)
    )
    .into_bytes()
}

fn assert_too_large(got: Result<(u16, serde_json::Value), String>, what: &str) {
    let (code, status) = got.unwrap_or_else(|e| panic!("{what}: transport error {e}"));
    assert_eq!(code, 413, "{what}: {status}");
    assert_eq!(status["kind"], "Status", "{what}: {status}");
    assert_eq!(
        status["reason"], "RequestEntityTooLarge",
        "{what}: {status}"
    );
    assert_eq!(status["code"], 413, "{what}: {status}");
}

/// An unauthenticated client declaring 64 MiB and sending nothing gets its 413 at once: the
/// server decides on the declared length and reads no body.
#[tokio::test(flavor = "multi_thread")]
async fn declared_oversize_is_refused_before_the_body_is_read() {
    let srv = start().await;
    let mut tls = srv.tls().await;
    let head = format!(
        "POST {CMS} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
         content-length: {}\r\n\r\n{{",
        64 * 1024 * 1024
    );
    tls.write_all(head.as_bytes()).await.unwrap();
    tls.flush().await.unwrap();
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), async {
        let mut buf = [0u8; 4096];
        loop {
            match tls.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => answer.extend_from_slice(&buf[..n]),
            }
            if answer.windows(4).any(|w| w == b"\r\n\r\n")
                && answer.ends_with(b"}")
                && answer.windows(21).any(|w| w == b"RequestEntityTooLarge")
            {
                break;
            }
        }
    })
    .await;
    let text = String::from_utf8_lossy(&answer);
    assert!(read.is_ok(), "no answer within 5 s; got {text:?}");
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    assert!(
        text.contains("\"reason\":\"RequestEntityTooLarge\""),
        "{text}"
    );
    assert!(
        text.to_ascii_lowercase().contains("connection: close"),
        "{text}"
    );
}

/// Real clients sending the whole oversized body (with a length, or chunked, authenticated or
/// not) read a 413 Status, not a reset; nothing is stored and the server keeps serving.
#[tokio::test(flavor = "multi_thread")]
async fn oversized_bodies_get_413_not_a_reset() {
    let srv = start().await;
    let body = big_config_map(5 * 1024 * 1024);

    for auth in [true, false] {
        let req = srv
            .post(auth)
            .body(Full::new(Bytes::from(body.clone())))
            .unwrap();
        assert_too_large(srv.send(req).await, &format!("content-length, auth={auth}"));
    }

    // Chunked: no Content-Length, 64 KiB frames; the handler stops at 3 MiB.
    let chunks: Vec<Result<Frame<Bytes>, std::io::Error>> = body
        .chunks(64 * 1024)
        .map(|c| Ok(Frame::data(Bytes::copy_from_slice(c))))
        .collect();
    let req = srv
        .post(true)
        .body(StreamBody::new(futures::stream::iter(chunks)))
        .unwrap();
    assert_too_large(srv.send(req).await, "chunked");

    // Still serving; nothing was stored.
    let ok = srv
        .post(true)
        .body(Full::new(Bytes::from_static(
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fine"}}"#,
        )))
        .unwrap();
    let (code, obj) = srv.send(ok).await.unwrap();
    assert_eq!(code, 201, "{obj}");
    let list = Request::builder()
        .uri(CMS)
        .header("host", "127.0.0.1")
        .header("authorization", format!("Bearer {}", srv.token))
        .body(Full::new(Bytes::new()))
        .unwrap();
    let (code, list) = srv.send(list).await.unwrap();
    assert_eq!(code, 200);
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["fine"]);
}
