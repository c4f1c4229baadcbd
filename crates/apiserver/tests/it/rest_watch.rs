//! Watch protocol: line framing, resourceVersion semantics, bookmarks, streaming lists, 410,
//! selectors, timeouts; plus kube-runtime's watcher + reflector.

use crate::rest_common as common;

use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use common::*;
use futures::StreamExt;
use http_body_util::BodyExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use serde_json::{Value, json};
use tower::ServiceExt;

fn cm(name: &str, label: &str) -> ConfigMap {
    serde_json::from_value(
        json!({"metadata": {"name": name, "labels": {"tier": label}}, "data": {"a": "1"}}),
    )
    .unwrap()
}

/// Opens a watch and returns a receiver of parsed lines.
async fn open_watch(
    r: &axum::Router,
    uri: &str,
) -> (u16, tokio::sync::mpsc::UnboundedReceiver<Value>) {
    let req = Request::builder().uri(uri).body(Body::empty()).unwrap();
    let resp = r.clone().oneshot(req).await.unwrap();
    let code = resp.status().as_u16();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let mut body = resp.into_body();
    tokio::spawn(async move {
        let mut buf = Vec::new();
        while let Some(Ok(frame)) = body.frame().await {
            if let Ok(data) = frame.into_data() {
                buf.extend_from_slice(&data);
                while let Some(pos) = buf.iter().position(|b| *b == b'\n') {
                    let line: Vec<u8> = buf.drain(..=pos).collect();
                    let v: Value =
                        serde_json::from_slice(&line).expect("each line is one JSON event");
                    if tx.send(v).is_err() {
                        return;
                    }
                }
            }
        }
    });
    (code, rx)
}

/// Whether a watch of namespace `ns`'s configmaps from revision `from` is told 410 Expired (as
/// its status or its first event).
async fn expired(r: &axum::Router, ns: &str, from: &str) -> bool {
    let (code, mut rx) = open_watch(
        r,
        &format!(
            "/api/v1/namespaces/{ns}/configmaps?watch=true&timeoutSeconds=1&resourceVersion={from}"
        ),
    )
    .await;
    let first = tokio::time::timeout(Duration::from_secs(4), rx.recv())
        .await
        .expect("an event or the end of the stream");
    code == 410 || first.is_some_and(|e| e["object"]["code"] == 410)
}

async fn next(rx: &mut tokio::sync::mpsc::UnboundedReceiver<Value>) -> Value {
    tokio::time::timeout(Duration::from_secs(5), rx.recv())
        .await
        .expect("event in time")
        .expect("stream open")
}

#[tokio::test]
async fn watch_events_and_resource_versions() {
    let srv = server().await;
    let r = srv.router();
    let api: Api<ConfigMap> = Api::namespaced(client(&srv), "default");
    let a = api
        .create(&PostParams::default(), &cm("a", "front"))
        .await
        .unwrap();
    let rv_a: i64 = a.metadata.resource_version.unwrap().parse().unwrap();

    // Unset RV: synthetic ADDED for existing objects, then live events.
    let (code, mut rx) = open_watch(&r, "/api/v1/namespaces/default/configmaps?watch=true").await;
    assert_eq!(code, 200);
    let e = next(&mut rx).await;
    assert_eq!(
        (e["type"].as_str(), e["object"]["metadata"]["name"].as_str()),
        (Some("ADDED"), Some("a"))
    );
    api.create(&PostParams::default(), &cm("b", "back"))
        .await
        .unwrap();
    let e = next(&mut rx).await;
    assert_eq!(
        (e["type"].as_str(), e["object"]["metadata"]["name"].as_str()),
        (Some("ADDED"), Some("b"))
    );
    api.delete("b", &Default::default()).await.unwrap();
    let e = next(&mut rx).await;
    assert_eq!(e["type"], "DELETED");

    // Exact RV: only events after it (b's ADDED and DELETED).
    let (_, mut rx) = open_watch(
        &r,
        &format!("/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={rv_a}"),
    )
    .await;
    assert_eq!(next(&mut rx).await["type"], "ADDED");
    assert_eq!(next(&mut rx).await["type"], "DELETED");

    // Label selector transitions: leaving the selector is DELETED, entering is ADDED.
    let (_, mut rx) = open_watch(&r, &format!("/api/v1/namespaces/default/configmaps?watch=true&labelSelector=tier%3Dfront&resourceVersion={}", srv_rev(&api).await)).await;
    api.patch(
        "a",
        &Default::default(),
        &kube::api::Patch::Merge(json!({"metadata": {"labels": {"tier": "back"}}})),
    )
    .await
    .unwrap();
    assert_eq!(next(&mut rx).await["type"], "DELETED");
    api.patch(
        "a",
        &Default::default(),
        &kube::api::Patch::Merge(json!({"metadata": {"labels": {"tier": "front"}}})),
    )
    .await
    .unwrap();
    assert_eq!(next(&mut rx).await["type"], "ADDED");

    // Field selector watch as `kubectl delete --wait` uses it.
    let (_, mut rx) = open_watch(&r, &format!("/api/v1/namespaces/default/configmaps?watch=true&fieldSelector=metadata.name%3Da&allowWatchBookmarks=true&resourceVersion={}", srv_rev(&api).await)).await;
    api.delete("a", &Default::default()).await.unwrap();
    let e = next(&mut rx).await;
    assert_eq!(
        (e["type"].as_str(), e["object"]["metadata"]["name"].as_str()),
        (Some("DELETED"), Some("a"))
    );
}

async fn srv_rev(api: &Api<ConfigMap>) -> String {
    api.list(&Default::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap()
}

#[tokio::test]
async fn streaming_list_bookmark_gone_and_timeout() {
    let srv = server().await;
    let r = srv.router();
    let api: Api<ConfigMap> = Api::namespaced(client(&srv), "default");
    for n in ["x", "y"] {
        api.create(&PostParams::default(), &cm(n, "t"))
            .await
            .unwrap();
    }
    let (_, mut rx) = open_watch(
        &r,
        "/api/v1/namespaces/default/configmaps?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
    )
    .await;
    assert_eq!(next(&mut rx).await["type"], "ADDED");
    assert_eq!(next(&mut rx).await["type"], "ADDED");
    let b = next(&mut rx).await;
    assert_eq!(b["type"], "BOOKMARK");
    assert_eq!(
        b["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    assert!(
        b["object"]["metadata"]["resourceVersion"]
            .as_str()
            .is_some()
    );

    // timeoutSeconds closes the stream.
    let (_, mut rx) = open_watch(
        &r,
        "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1&resourceVersion=999999",
    )
    .await;
    let _ = &mut rx;
    // RV in the future: 504-style error, or a stream that ends; both acceptable to clients.
    let (_, mut rx2) = open_watch(
        &r,
        &format!(
            "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1&resourceVersion={}",
            srv_rev(&api).await
        ),
    )
    .await;
    let end = tokio::time::timeout(Duration::from_secs(4), rx2.recv())
        .await
        .expect("closed by timeout");
    assert!(end.is_none(), "no events, then the stream ends");

    // A compacted RV gets 410 Expired in an ERROR event (here: more than the history's 16
    // events after it, too many to replay from the log).
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = fleet_apiserver::store::StoreConfig::file(dir.path().join("db"));
    cfg.history = 16;
    let srv2 = fleet_apiserver::ApiServer::new(fleet_apiserver::ApiServerConfig::with_store(cfg))
        .await
        .unwrap();
    let api2: Api<ConfigMap> = Api::namespaced(client(&srv2), "default");
    for i in 0..60 {
        api2.create(&PostParams::default(), &cm(&format!("c{i}"), "t"))
            .await
            .unwrap();
    }
    let (code, mut rx) = open_watch(
        &srv2.router(),
        "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=2",
    )
    .await;
    if code == 200 {
        let e = next(&mut rx).await;
        assert_eq!(e["type"], "ERROR");
        assert_eq!(e["object"]["code"], 410);
    } else {
        assert_eq!(code, 410);
    }
    srv2.shutdown();
}

/// A watch that asked for bookmarks ends its timeout with one at the newest revision it has
/// delivered (as kube-apiserver does shortly before the deadline), so its watcher resumes from
/// now: resuming from its last event would, on a busy store, find the history moved on (410 and
/// a relist of everything the watcher follows). One without bookmarks just ends.
#[tokio::test]
async fn a_watch_ending_on_its_timeout_sends_a_last_bookmark() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = fleet_apiserver::store::StoreConfig::file(dir.path().join("db"));
    cfg.history = 16;
    // Periodic bookmarks far off: the one seen is the timeout's.
    let mut acfg = fleet_apiserver::ApiServerConfig::with_store(cfg);
    acfg.bookmark_interval = Duration::from_secs(3600);
    let srv = fleet_apiserver::ApiServer::new(acfg).await.unwrap();
    let r = srv.router();
    let api: Api<ConfigMap> = Api::namespaced(client(&srv), "default");
    let start = srv_rev(&api).await;
    let path = |bookmarks: bool| {
        format!(
            "/api/v1/namespaces/quiet/configmaps?watch=true&timeoutSeconds=2&allowWatchBookmarks={bookmarks}&resourceVersion={start}"
        )
    };
    let (code, mut with) = open_watch(&r, &path(true)).await;
    assert_eq!(code, 200);
    let (code, mut without) = open_watch(&r, &path(false)).await;
    assert_eq!(code, 200);
    // Writes elsewhere: more than the history holds.
    let mut last = String::new();
    for i in 0..40 {
        last = api
            .create(&PostParams::default(), &cm(&format!("busy-{i}"), "busy"))
            .await
            .unwrap()
            .metadata
            .resource_version
            .unwrap();
    }
    let b = tokio::time::timeout(Duration::from_secs(6), with.recv())
        .await
        .expect("a line before the timeout's end")
        .expect("a bookmark, not the end");
    assert_eq!(b["type"], "BOOKMARK", "{b}");
    let rv: i64 = b["object"]["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(rv, last.parse::<i64>().unwrap(), "the newest revision: {b}");
    let end = tokio::time::timeout(Duration::from_secs(2), with.recv())
        .await
        .expect("the stream ends after its bookmark");
    assert!(end.is_none(), "nothing after the last bookmark: {end:?}");
    let end = tokio::time::timeout(Duration::from_secs(6), without.recv())
        .await
        .expect("the stream ends");
    assert!(end.is_none(), "no bookmark unless asked for: {end:?}");
    // Once the log is compacted up to it, the bookmark's revision still resumes; the start
    // no longer does.
    srv.compact(rv).await.unwrap();
    for (from, gone) in [(start.clone(), true), (rv.to_string(), false)] {
        assert_eq!(expired(&r, "quiet", &from).await, gone, "watch from {from}");
    }
    srv.shutdown();
}

/// A watch of a quiet resource gets bookmarks at the store's newest revision, not at its own
/// last event's: resuming from one works even after the history moved on (writes elsewhere), where
/// the old revision would get 410 and a relist. Selector-filtered events do not hold bookmarks off.
#[tokio::test]
async fn bookmarks_of_a_quiet_watch_carry_the_newest_revision() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = fleet_apiserver::store::StoreConfig::file(dir.path().join("db"));
    cfg.history = 16;
    let mut acfg = fleet_apiserver::ApiServerConfig::with_store(cfg);
    acfg.bookmark_interval = Duration::from_millis(300);
    let srv = fleet_apiserver::ApiServer::new(acfg).await.unwrap();
    let r = srv.router();
    let api: Api<ConfigMap> = Api::namespaced(client(&srv), "default");
    let start = srv_rev(&api).await;
    // Watch configmaps labelled tier=quiet: the writes below are all filtered out.
    let (code, mut rx) = open_watch(
        &r,
        &format!(
            "/api/v1/namespaces/default/configmaps?watch=true&allowWatchBookmarks=true&labelSelector=tier%3Dquiet&resourceVersion={start}"
        ),
    )
    .await;
    assert_eq!(code, 200);
    // Configmaps the selector filters out, then writes to another resource only.
    for i in 0..30 {
        api.create(&PostParams::default(), &cm(&format!("busy-{i}"), "busy"))
            .await
            .unwrap();
    }
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(client(&srv), "default");
    let mut last = String::new();
    for i in 0..40 {
        let s: k8s_openapi::api::core::v1::Secret =
            serde_json::from_value(json!({"metadata": {"name": format!("s-{i}")}})).unwrap();
        last = secrets
            .create(&PostParams::default(), &s)
            .await
            .unwrap()
            .metadata
            .resource_version
            .unwrap();
    }
    let last: i64 = last.parse().unwrap();
    // Bookmarks come while filtered events keep arriving, and soon carry the newest revision.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let mut seen: i64 = 0;
    while seen < last {
        assert!(
            std::time::Instant::now() < deadline,
            "no bookmark reached revision {last} (last seen {seen})"
        );
        let b = next(&mut rx).await;
        assert_eq!(b["type"], "BOOKMARK", "only bookmarks: {b}");
        let rv: i64 = b["object"]["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!(rv >= seen, "bookmarks never go back: {rv} after {seen}");
        seen = rv;
    }
    // Compacted up to the bookmark's revision, the log no longer holds `start`; the bookmark's
    // revision resumes cleanly.
    srv.compact(seen).await.unwrap();
    for (from, gone) in [(start.clone(), true), (seen.to_string(), false)] {
        assert_eq!(
            expired(&r, "default", &from).await,
            gone,
            "watch from {from}"
        );
    }
    // A matching object is still delivered after the bookmarks.
    let quiet = api
        .create(&PostParams::default(), &cm("quiet-1", "quiet"))
        .await
        .unwrap();
    loop {
        let e = next(&mut rx).await;
        if e["type"] == "BOOKMARK" {
            continue;
        }
        assert_eq!(e["type"], "ADDED");
        assert_eq!(
            e["object"]["metadata"]["resourceVersion"],
            json!(quiet.metadata.resource_version)
        );
        break;
    }
    srv.shutdown();
}

#[tokio::test]
async fn kube_watcher_and_reflector() {
    let srv = server().await;
    let api: Api<ConfigMap> = Api::namespaced(client(&srv), "default");
    api.create(&PostParams::default(), &cm("one", "t"))
        .await
        .unwrap();
    let (reader, writer) = reflector::store::<ConfigMap>();
    let stream = watcher(api.clone(), watcher::Config::default())
        .reflect(writer)
        .applied_objects();
    let handle = tokio::spawn(async move {
        let mut s = std::pin::pin!(stream);
        while let Some(item) = s.next().await {
            if item.is_err() {
                break;
            }
        }
    });
    reader.wait_until_ready().await.unwrap();
    assert_eq!(reader.state().len(), 1);
    api.create(&PostParams::default(), &cm("two", "t"))
        .await
        .unwrap();
    assert!(
        eventually(|| {
            let n = reader.state().len();
            async move { n == 2 }
        })
        .await
    );
    api.delete("one", &Default::default()).await.unwrap();
    assert!(
        eventually(|| {
            let n = reader.state().len();
            async move { n == 1 }
        })
        .await
    );

    // Streaming-list mode (sendInitialEvents) works too.
    let (reader2, writer2) = reflector::store::<ConfigMap>();
    let stream2 = watcher(api.clone(), watcher::Config::default().streaming_lists())
        .reflect(writer2)
        .applied_objects();
    let h2 = tokio::spawn(async move {
        let mut s = std::pin::pin!(stream2);
        while let Some(item) = s.next().await {
            if item.is_err() {
                break;
            }
        }
    });
    reader2.wait_until_ready().await.unwrap();
    assert_eq!(reader2.state().len(), 1);
    handle.abort();
    h2.abort();
}

/// A watcher of a namespace whose events the (whole store's) history has dropped resumes from
/// the log instead of getting 410 and relisting: at 10,000 agents the history is a few seconds
/// of writes, and an agent renewing its watch a little late was told to relist every time.
#[tokio::test]
async fn a_watch_resumes_from_the_log_after_the_history_moved_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = fleet_apiserver::store::StoreConfig::file(dir.path().join("db"));
    cfg.history = 16;
    let srv = fleet_apiserver::ApiServer::new(fleet_apiserver::ApiServerConfig::with_store(cfg))
        .await
        .unwrap();
    let r = srv.router();
    let quiet: Api<ConfigMap> = Api::namespaced(client(&srv), "kube-public");
    let busy: Api<ConfigMap> = Api::namespaced(client(&srv), "default");
    let from = quiet
        .create(&PostParams::default(), &cm("q", "a"))
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut changed = cm("q", "b");
    changed.metadata.resource_version = Some(from.clone());
    let changed = quiet
        .replace("q", &PostParams::default(), &changed)
        .await
        .unwrap();
    for i in 0..40 {
        busy.create(&PostParams::default(), &cm(&format!("busy-{i}"), "busy"))
            .await
            .unwrap();
    }
    let (code, mut rx) = open_watch(
        &r,
        &format!(
            "/api/v1/namespaces/kube-public/configmaps?watch=true&timeoutSeconds=2&resourceVersion={from}"
        ),
    )
    .await;
    assert_eq!(code, 200);
    let e = next(&mut rx).await;
    assert_eq!(e["type"], "MODIFIED", "{e}");
    assert_eq!(
        e["object"]["metadata"]["resourceVersion"],
        json!(changed.metadata.resource_version)
    );
    assert_eq!(e["object"]["metadata"]["labels"]["tier"], "b");
    // A label selector the change left sees the object go (it needs the previous value).
    let (code, mut rx) = open_watch(
        &r,
        &format!(
            "/api/v1/namespaces/kube-public/configmaps?watch=true&timeoutSeconds=2&labelSelector=tier%3Da&resourceVersion={from}"
        ),
    )
    .await;
    assert_eq!(code, 200);
    let e = next(&mut rx).await;
    assert_eq!(e["type"], "DELETED", "{e}");
    srv.shutdown();
}
