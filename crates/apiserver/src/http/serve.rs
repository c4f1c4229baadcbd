//! The HTTPS accept loop: TLS (rustls, aws-lc-rs), HTTP/1.1 and h2 on one port, client
//! certificates turned into identities, and graceful shutdown.
//!
//! Why a hand-written loop instead of `axum::serve` or `axum-server`: those hide the TLS session,
//! and kubectl's x509 authentication needs the peer certificate of each connection.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::{Extension, Router};
use hyper::server::conn::http2;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use crate::http::limits::{self, Linger, LingerFlag};
use crate::security::auth::{self, Authenticator, PeerIdentity};

/// Tunables of the accept loop.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// How long a client may take to finish the TLS handshake before it is dropped, so idle
    /// sockets cannot pile up.
    pub handshake_timeout: Duration,
    /// After shutdown starts, how long in-flight requests may take to finish before their
    /// connections are closed (long-running watches are closed at once, see [`serve`]).
    pub drain_timeout: Duration,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            handshake_timeout: Duration::from_secs(10),
            drain_timeout: Duration::from_secs(10),
        }
    }
}

/// Wraps `app` with authentication: every request gets a [`auth::UserInfo`] extension, and
/// requests without valid credentials get 401 (except the public health/version paths).
pub fn with_authentication(app: Router, authenticator: Authenticator) -> Router {
    crate::http::wrap(
        app,
        axum::middleware::from_fn_with_state(authenticator, auth::authenticate),
    )
}

/// Serves `app` over TLS on `listener` until `shutdown` resolves, then stops accepting, tells
/// every connection to finish (HTTP/1.1 closes after the current response, h2 sends GOAWAY),
/// waits up to `drain_timeout` for in-flight requests and returns.
///
/// Watches never finish on their own, so when `shutdown` fires every open watch response is ended
/// cleanly (its chunked body completes, as when `timeoutSeconds` expires) and clients re-watch
/// elsewhere or later; whatever is still open after `drain_timeout` is dropped.
pub async fn serve<F>(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    app: Router,
    shutdown: F,
    opts: ServeOptions,
) -> std::io::Result<()>
where
    F: Future<Output = ()> + Send,
{
    let acceptor = TlsAcceptor::from(tls);
    let graceful = GracefulShutdown::new();
    let closing = CancellationToken::new();
    let app = crate::http::wrap(
        end_watches_on(app, closing.clone()),
        tower::ServiceBuilder::new()
            .layer(axum::middleware::map_response(date_not_indexed))
            .layer(axum::middleware::from_fn(limits::refuse_oversized)),
    );
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(Duration::from_secs(30));
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(1000);
    let builders = Arc::new(Builders {
        auto: builder,
        h2: h2_builder(),
    });

    tokio::pin!(shutdown);
    loop {
        let (tcp, remote) = tokio::select! {
            biased;
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of descriptors or a connection reset before accept: keep serving the
                    // connections we have and try again shortly.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = tcp.set_nodelay(true);
        let acceptor = acceptor.clone();
        let app = app.clone();
        let builders = builders.clone();
        let watcher = graceful.watcher();
        let handshake_timeout = opts.handshake_timeout;
        tokio::spawn(async move {
            serve_connection(
                tcp,
                remote,
                acceptor,
                app,
                builders,
                watcher,
                handshake_timeout,
            )
            .await
        });
    }
    drop(listener);
    // End every open watch so their connections can drain.
    closing.cancel();

    tracing::info!(
        connections = graceful.count(),
        "shutting down: draining connections"
    );
    if tokio::time::timeout(opts.drain_timeout, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("drain timeout elapsed; closing the remaining connections");
    }
    Ok(())
}

/// How connections are served: HTTP/2 when TLS negotiated it (ALPN `h2`, what kubectl, client-go
/// and kube-rs ask for), otherwise whatever the client's first bytes say.
struct Builders {
    auto: auto::Builder<TokioExecutor>,
    h2: http2::Builder<TokioExecutor>,
}

/// HTTP/2 as the server speaks it, with one setting hyper-util's protocol-detecting builder does
/// not offer: no dynamic HPACK table for the headers clients send.
///
/// Why: the values in a connection's table share the decoder's buffers, so an agent's first
/// indexed header (its user agent) kept h2's 4 KiB decoding buffer alive for as long as the
/// connection lived: at 3,000 agents h2's per-connection allocations went from 85.0 to 73.5 MB
/// without the table (heap profile at the end of `fleet bench scale`'s first round). Without it
/// a request's path and user agent travel as literals, some 100 bytes more per request.
fn h2_builder() -> http2::Builder<TokioExecutor> {
    let mut b = http2::Builder::new(TokioExecutor::new());
    b.timer(TokioTimer::new())
        .max_concurrent_streams(1000)
        .header_table_size(0);
    b
}

async fn serve_connection(
    tcp: tokio::net::TcpStream,
    remote: SocketAddr,
    acceptor: TlsAcceptor,
    app: Router,
    builders: Arc<Builders>,
    watcher: hyper_util::server::graceful::Watcher,
    handshake_timeout: Duration,
) {
    let stream = match tokio::time::timeout(handshake_timeout, acceptor.accept(tcp)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            tracing::debug!(%remote, error = %e, "TLS handshake failed");
            return;
        }
        Err(_) => {
            tracing::debug!(%remote, "TLS handshake timed out");
            return;
        }
    };
    // rustls has already verified any presented certificate against our CA.
    let identity = stream
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|chain| chain.first())
        .and_then(auth::identity_from_cert);
    let linger = LingerFlag::default();
    let svc = tower::ServiceBuilder::new()
        .layer(Extension(PeerIdentity(identity)))
        .layer(Extension(linger.clone()))
        .layer(Extension(RemoteAddr(remote)))
        .service(app);
    let h2 = stream.get_ref().1.alpn_protocol() == Some(b"h2");
    let io = TokioIo::new(Linger::new(stream, linger));
    let svc = TowerToHyperService::new(svc);
    let ended = if h2 {
        watcher
            .watch(builders.h2.serve_connection(io, svc))
            .await
            .map_err(|e| e.to_string())
    } else {
        let conn = builders.auto.serve_connection_with_upgrades(io, svc);
        watcher
            .watch(conn.into_owned())
            .await
            .map_err(|e| e.to_string())
    };
    if let Err(e) = ended {
        tracing::debug!(%remote, error = %e, "connection ended with an error");
    }
}

/// Gives a response its `Date` header (hyper adds one only when it is missing), marked so that
/// h2 sends it as a never-indexed literal.
///
/// h2 adds every new header value to the connection's HPACK table, and a Date is new every
/// second: the table of each long-lived agent connection filled with ~60 dates (7.7 KB of
/// memory per connection, 77 MB at 10,000 agents, for a header that is never sent twice). Out of
/// the table it costs about 20 bytes more per HTTP/2 response; HTTP/1.1 ignores the mark.
pub async fn date_not_indexed(mut res: axum::response::Response) -> axum::response::Response {
    if !res.headers().contains_key(axum::http::header::DATE) {
        let mut date = http_date_now();
        date.set_sensitive(true);
        res.headers_mut().insert(axum::http::header::DATE, date);
    }
    res
}

/// The current time as an HTTP date, formatted once a second per thread (as hyper does).
fn http_date_now() -> axum::http::HeaderValue {
    use std::cell::RefCell;
    use std::time::{SystemTime, UNIX_EPOCH};
    thread_local! {
        static CACHED: RefCell<Option<(u64, axum::http::HeaderValue)>> = const { RefCell::new(None) };
    }
    let now = SystemTime::now();
    let secs = now
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    CACHED.with(|c| {
        let mut c = c.borrow_mut();
        match &*c {
            Some((at, v)) if *at == secs => v.clone(),
            _ => {
                let v = axum::http::HeaderValue::from_str(&httpdate::fmt_http_date(now))
                    .unwrap_or_else(|_| axum::http::HeaderValue::from_static(""));
                *c = Some((secs, v.clone()));
                v
            }
        }
    })
}

/// Whether a request is a watch (`?watch=true|1` or a legacy `/watch/` path): its response body
/// streams until the client or the server ends it.
fn is_watch(uri: &axum::http::Uri) -> bool {
    let query_watch = uri.query().is_some_and(|q| {
        q.split('&')
            .any(|kv| matches!(kv, "watch=true" | "watch=1" | "watch=True"))
    });
    query_watch || uri.path().split('/').any(|seg| seg == "watch")
}

/// Wraps watch responses so their bodies end when `closing` is cancelled.
fn end_watches_on(app: Router, closing: CancellationToken) -> Router {
    crate::http::wrap(
        app,
        axum::middleware::from_fn(
            move |req: axum::extract::Request, next: axum::middleware::Next| {
                let closing = closing.clone();
                async move {
                    let watch = is_watch(req.uri());
                    let resp = next.run(req).await;
                    if !watch {
                        return resp;
                    }
                    resp.map(|inner| {
                        axum::body::Body::new(EndOnShutdown {
                            inner,
                            closing: Box::pin(closing.cancelled_owned()),
                        })
                    })
                }
            },
        ),
    )
}

/// A response body that ends (cleanly, no error) once shutdown begins.
struct EndOnShutdown {
    inner: axum::body::Body,
    closing: std::pin::Pin<Box<tokio_util::sync::WaitForCancellationFutureOwned>>,
}

impl hyper::body::Body for EndOnShutdown {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        if self.closing.as_mut().poll(cx).is_ready() {
            return std::task::Poll::Ready(None);
        }
        std::pin::Pin::new(&mut self.inner).poll_frame(cx)
    }
}

/// The client's address, in every request's extensions (for logs and audit).
#[derive(Clone, Copy, Debug)]
pub struct RemoteAddr(pub SocketAddr);

/// Resolves on the first SIGTERM or SIGINT (Ctrl-C), the signals a supervisor or a user sends to
/// stop the server cleanly.
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) {
            (Ok(mut term), Ok(mut int)) => {
                tokio::select! {
                    _ = term.recv() => {},
                    _ = int.recv() => {},
                }
            }
            _ => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watch_detection() {
        for u in [
            "/api/v1/pods?watch=true",
            "/api/v1/pods?limit=1&watch=1",
            "/api/v1/watch/pods",
        ] {
            assert!(is_watch(&u.parse().unwrap()), "{u}");
        }
        for u in [
            "/api/v1/pods",
            "/api/v1/pods?watch=false",
            "/api/v1/namespaces/watcher/pods",
        ] {
            assert!(!is_watch(&u.parse().unwrap()), "{u}");
        }
    }

    #[tokio::test]
    async fn responses_carry_a_date_kept_out_of_the_hpack_table() {
        use tower::ServiceExt;
        let app = Router::new()
            .route("/", axum::routing::get(|| async { "ok" }))
            .route(
                "/own",
                axum::routing::get(|| async {
                    (
                        [(axum::http::header::DATE, "Sun, 06 Nov 1994 08:49:37 GMT")],
                        "ok",
                    )
                }),
            )
            .layer(axum::middleware::map_response(date_not_indexed));
        let req = |p: &str| {
            axum::http::Request::get(p)
                .body(axum::body::Body::empty())
                .unwrap()
        };
        let res = app.clone().oneshot(req("/")).await.unwrap();
        let date = res
            .headers()
            .get(axum::http::header::DATE)
            .expect("a Date header");
        assert!(date.is_sensitive(), "sent as a never-indexed literal");
        let when = httpdate::parse_http_date(date.to_str().unwrap()).expect("an HTTP date");
        let off = std::time::SystemTime::now()
            .duration_since(when)
            .unwrap_or_default();
        assert!(off < Duration::from_secs(5), "{date:?} is now");
        // A handler's own Date is left as it is.
        let res = app.oneshot(req("/own")).await.unwrap();
        assert_eq!(
            res.headers()[axum::http::header::DATE],
            "Sun, 06 Nov 1994 08:49:37 GMT"
        );
    }
}
