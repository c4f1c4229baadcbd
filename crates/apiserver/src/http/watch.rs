//! Watch: a chunked HTTP response with one compact JSON `WatchEvent` per line, flushed per event.
//! Events come from the store's in-memory watch cache; the object JSON inside every event is the
//! store's shared serialization, framed by a copy, never re-encoded (except when a CRD object is
//! read through another served version). A watcher that falls behind is cut off by the store and
//! its stream ends, so writers are never blocked; clients re-watch (and relist on 410).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::{BufMut, Bytes, BytesMut};
use serde_json::json;
use tokio::time::Instant;

use crate::http::read::{Selectors, convert};
use crate::http::request::Query;
use crate::http::table::IncludeObject;
use crate::state::ApiServer;
use crate::storage::errors::{ApiError, ApiResult};
use crate::storage::registry::ResourceInfo;
use crate::storage::store::{EventKind, Obj, Rev, StoreError, Watch};

/// Frames one watch event line: `{"type":T,"object":OBJ}\n`.
pub fn frame(kind: &str, object: &[u8]) -> Bytes {
    let mut b = BytesMut::with_capacity(object.len() + 32);
    b.put_slice(b"{\"type\":\"");
    b.put_slice(kind.as_bytes());
    b.put_slice(b"\",\"object\":");
    b.put_slice(object);
    b.put_slice(b"}\n");
    b.freeze()
}

fn bookmark(info: &ResourceInfo, rv: Rev, initial_end: bool) -> Bytes {
    let mut meta = json!({"resourceVersion": rv.to_string()});
    if initial_end {
        meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    let obj = json!({"kind": info.kind, "apiVersion": info.api_version(), "metadata": meta});
    frame("BOOKMARK", &serde_json::to_vec(&obj).unwrap_or_default())
}

fn error_frame(e: &ApiError) -> Bytes {
    frame("ERROR", &e.status_json())
}

fn stream_response(body: Body) -> Response {
    let mut r = (StatusCode::OK, body).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, private"),
    );
    r
}

struct State {
    info: Arc<ResourceInfo>,
    sel: Selectors,
    /// Whether the selector can match an object before a change and not after (or the
    /// reverse): only then is an event's previous value read, and asked of a replay.
    needs_prev: bool,
    /// Objects still to send as synthetic ADDED events (their JSON is unpacked one by one as
    /// they are sent, not all up front).
    initial: VecDeque<Obj>,
    initial_end: Option<Rev>,
    watch: Option<Watch>,
    deadline: Instant,
    /// With `allowWatchBookmarks`: the interval, and when the next bookmark is due (an interval
    /// after the last line sent, however many events the selector filtered out meanwhile).
    bookmarks: Option<(Duration, Instant)>,
    /// Table output (kubectl's human-readable get -w): each event's object becomes a Table.
    table: Option<IncludeObject>,
    /// Whether column definitions were already sent (only the first Table carries them).
    columns_sent: bool,
}

impl State {
    fn event(&mut self, kind: &str, json: &Bytes) -> Bytes {
        let obj = convert(&self.info, json);
        match self.table {
            None => frame(kind, &obj),
            Some(inc) => {
                let v: serde_json::Value = serde_json::from_slice(&obj).unwrap_or_default();
                let rv = v
                    .pointer("/metadata/resourceVersion")
                    .cloned()
                    .unwrap_or_default();
                let t = crate::http::table::table(
                    &self.info,
                    json!({"resourceVersion": rv}),
                    &[v],
                    inc,
                    !self.columns_sent,
                );
                self.columns_sent = true;
                frame(kind, &serde_json::to_vec(&t).unwrap_or_default())
            }
        }
    }
}

impl State {
    /// A line went out: the next bookmark is due an interval from now.
    fn sent_line(&mut self) {
        if let Some((every, at)) = &mut self.bookmarks {
            *at = Instant::now() + *every;
        }
    }

    /// The next line to send, or `None` when the watch is over.
    async fn next(&mut self) -> Option<Bytes> {
        if let Some(o) = self.initial.pop_front() {
            return Some(self.event("ADDED", &o.json()));
        }
        if let Some(rv) = self.initial_end.take() {
            return Some(bookmark(&self.info, rv, true));
        }
        loop {
            let due = self.bookmarks.map(|(_, at)| at);
            let watch = self.watch.as_mut()?;
            let ev = tokio::select! {
                ev = watch.next() => ev,
                _ = tokio::time::sleep_until(self.deadline) => {
                    // As kube-apiserver's, a last bookmark before the watch ends on its timeout:
                    // the watcher resumes from now rather than from its last event, which on a
                    // busy store has often left the history (a 410 and a full relist each time).
                    let rev = watch.progress();
                    self.watch = None;
                    return self
                        .bookmarks
                        .is_some()
                        .then(|| bookmark(&self.info, rev, false));
                }
                () = async {
                    match due {
                        Some(at) => tokio::time::sleep_until(at).await,
                        None => std::future::pending().await,
                    }
                } => {
                    // As kube-apiserver's: the newest revision this watch has fully delivered,
                    // not its last event's, so a quiet resource's watcher resumes within the
                    // history.
                    let rev = watch.progress();
                    self.sent_line();
                    return Some(bookmark(&self.info, rev, false));
                }
            };
            let ev = ev?;
            let now_matches = self.sel.matches(&ev.key, &ev.obj);
            let kind = match ev.kind {
                EventKind::Added => now_matches.then_some("ADDED"),
                EventKind::Deleted => now_matches.then_some("DELETED"),
                EventKind::Modified => {
                    // A replay from the log holds no previous value when the selector cannot
                    // tell one from the other (see `Store::watch_nonblocking`).
                    let before = if self.needs_prev {
                        ev.prev
                            .as_ref()
                            .is_some_and(|p| self.sel.matches(&ev.key, p))
                    } else {
                        now_matches
                    };
                    match (before, now_matches) {
                        (true, true) => Some("MODIFIED"),
                        (false, true) => Some("ADDED"),
                        (true, false) => Some("DELETED"),
                        (false, false) => None,
                    }
                }
            };
            if let Some(k) = kind {
                self.sent_line();
                return Some(self.event(k, &ev.obj.json()));
            }
        }
    }
}

/// Starts a watch (GET with `watch=true`).
pub async fn watch(
    srv: &ApiServer,
    info: Arc<ResourceInfo>,
    ns: Option<String>,
    q: &Query,
    table: Option<IncludeObject>,
) -> ApiResult<Response> {
    let sel = Selectors::parse(&info, q)?;
    let prefix = info.prefix(ns.as_deref());
    let rv = q.resource_version.as_deref();
    let exact_start = match rv {
        None | Some("0") => None,
        Some(r) => Some(crate::write::crud::parse_rv(r)?),
    };
    if let Some(m) = q.resource_version_match.as_deref()
        && m != "NotOlderThan"
        && m != "Exact"
    {
        return Err(ApiError::bad_request(format!(
            "unsupported resourceVersionMatch {m:?}"
        )));
    }
    // Initial state: explicit sendInitialEvents, or legacy semantics of an unset/"0" RV.
    let send_initial = q.send_initial_events.unwrap_or(exact_start.is_none());
    let current = srv.store().current_rev();
    let mut initial = VecDeque::new();
    let start = if send_initial {
        if let Some(r) = exact_start
            && r > current
        {
            return Err(ApiError::timeout(format!(
                "Too large resource version: {r}, current: {current}"
            )));
        }
        let page = srv
            .store()
            .list(&prefix, None, None, None, &|k, o| sel.matches(k, o))
            .map_err(|e| ApiError::from_store(e, &info.group, &info.plural, ""))?;
        initial.extend(page.items.into_iter().map(|(_, o)| o));
        page.rev
    } else {
        match exact_start {
            Some(r) => r,
            None => current,
        }
    };
    let initial_end =
        (q.send_initial_events == Some(true) && q.allow_watch_bookmarks).then_some(start);
    let timeout = q
        .timeout_seconds
        .map(Duration::from_secs)
        .unwrap_or(srv.inner.cfg.default_watch_timeout);
    let deadline = Instant::now() + timeout;
    let needs_prev = sel.depends_on_content();
    let watch = match srv
        .store()
        .watch_nonblocking(&prefix, start, needs_prev)
        .await
    {
        Ok(w) => w,
        Err(StoreError::Compacted { requested, oldest }) => {
            let e = ApiError::gone(format!("too old resource version: {requested} ({oldest})"));
            let body = Body::from(error_frame(&e));
            return Ok(stream_response(body));
        }
        Err(e) => return Err(ApiError::from_store(e, &info.group, &info.plural, "")),
    };
    let state = State {
        info,
        sel,
        needs_prev,
        initial,
        initial_end,
        watch: Some(watch),
        deadline,
        bookmarks: q.allow_watch_bookmarks.then(|| {
            let every = srv.inner.cfg.bookmark_interval;
            (every, Instant::now() + every)
        }),
        table,
        columns_sent: false,
    };
    let stream = futures::stream::unfold(state, |mut st| async move {
        st.next().await.map(|b| (Ok::<Bytes, Infallible>(b), st))
    });
    Ok(stream_response(Body::from_stream(stream)))
}

#[cfg(test)]
mod tests {
    use super::frame;

    #[test]
    fn frames_are_single_lines() {
        let f = frame("ADDED", br#"{"a":1}"#);
        assert_eq!(&f[..], b"{\"type\":\"ADDED\",\"object\":{\"a\":1}}\n");
    }
}
