//! Request-body limits enforced at the connection edge, before authentication.
//!
//! Two problems are solved here:
//! - A declared `Content-Length` above [`MAX_BODY`] is refused with a 413 Status at once, before
//!   any byte of the body is read (and before authentication), so nobody can make the server
//!   read megabytes it will throw away.
//! - A response sent while the request body is still arriving (a 413 for a chunked body past the
//!   limit, a 401, a 404 on a POST...) must not be lost: closing a socket that has unread input
//!   makes the kernel send RST, and the client's kernel then discards our answer before the client
//!   reads it. Such connections get a *lingering close* (as Go's net/http and nginx do): after the
//!   response, the write side is shut down and the input is read and discarded for a bounded time
//!   and byte count, so the client sees the Status and then EOF instead of "connection reset".

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::http::{HeaderValue, Version, header};
use axum::response::{IntoResponse, Response};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::http::request::MAX_BODY;
use crate::storage::errors::ApiError;

/// The longest a lingering close waits for the client to stop sending.
pub const LINGER_TIME: Duration = Duration::from_secs(2);
/// The most a lingering close reads (and discards) before giving up on the client.
pub const LINGER_BYTES: u64 = 8 * 1024 * 1024;

/// Set on a connection when a response went out while its request body may still be unread:
/// the connection then lingers on close instead of resetting. One per connection, shared with
/// the requests through an extension.
#[derive(Clone, Debug, Default)]
pub struct LingerFlag(Arc<AtomicBool>);

impl LingerFlag {
    /// Asks for a lingering close of this connection.
    pub fn set(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
    /// Whether a lingering close was asked for.
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// Whether the request carries a body (declared length above zero, or chunked).
fn has_body(req: &axum::extract::Request) -> bool {
    let h = req.headers();
    h.contains_key(header::TRANSFER_ENCODING)
        || h.get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim() != "0")
}

/// The declared body length, when present and numeric.
fn declared_len(req: &axum::extract::Request) -> Option<u64> {
    req.headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
}

/// The outermost middleware: 413 for a declared length over the limit without reading the body;
/// otherwise runs the request and, if it failed while a body was sent, marks the connection for a
/// lingering close (and closes HTTP/1.1 connections after a 413, whose body is left unread).
pub async fn refuse_oversized(
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let flag = req.extensions().get::<LingerFlag>().cloned();
    let http1 = req.version() <= Version::HTTP_11;
    if declared_len(&req).is_some_and(|l| l > MAX_BODY as u64) {
        if let Some(f) = &flag {
            f.set();
        }
        let mut resp = ApiError::too_large(MAX_BODY).into_response();
        if http1 {
            resp.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        return resp;
    }
    let body = has_body(&req);
    let mut resp = next.run(req).await;
    let status = resp.status();
    if body && (status.is_client_error() || status.is_server_error()) {
        if let Some(f) = &flag {
            f.set();
        }
        if http1 && status == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
            resp.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
    }
    resp
}

enum LingerState {
    Open,
    Draining(Pin<Box<tokio::time::Sleep>>),
    Done,
}

/// A stream whose shutdown, when its [`LingerFlag`] is set, shuts the write side and then drains
/// the input for at most [`LINGER_TIME`] / [`LINGER_BYTES`]; otherwise a plain pass-through.
pub struct Linger<S> {
    inner: S,
    flag: LingerFlag,
    state: LingerState,
    drained: u64,
}

impl<S> Linger<S> {
    /// Wraps `inner`; `flag` decides at close time whether to linger.
    pub fn new(inner: S, flag: LingerFlag) -> Linger<S> {
        Linger {
            inner,
            flag,
            state: LingerState::Open,
            drained: 0,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Linger<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for Linger<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            match &mut this.state {
                LingerState::Open => {
                    let res = ready!(Pin::new(&mut this.inner).poll_shutdown(cx));
                    if res.is_err() || !this.flag.is_set() {
                        this.state = LingerState::Done;
                        return Poll::Ready(res);
                    }
                    this.state = LingerState::Draining(Box::pin(tokio::time::sleep(LINGER_TIME)));
                }
                LingerState::Draining(deadline) => {
                    if deadline.as_mut().poll(cx).is_ready() {
                        this.state = LingerState::Done;
                        continue;
                    }
                    let mut scratch = [0u8; 16 * 1024];
                    let mut rb = ReadBuf::new(&mut scratch);
                    match Pin::new(&mut this.inner).poll_read(cx, &mut rb) {
                        Poll::Ready(Ok(())) if !rb.filled().is_empty() => {
                            this.drained += rb.filled().len() as u64;
                            if this.drained >= LINGER_BYTES {
                                this.state = LingerState::Done;
                            }
                        }
                        // EOF or an error: the client is gone, nothing left to protect.
                        Poll::Ready(_) => this.state = LingerState::Done,
                        Poll::Pending => return Poll::Pending,
                    }
                }
                LingerState::Done => return Poll::Ready(Ok(())),
            }
        }
    }
}
