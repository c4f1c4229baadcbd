//! Property test over whole requests: random methods, paths, queries, content types and bodies
//! never make the router answer 5xx or panic, and every error body is a Status object.

use crate::rest_common as common;

use common::*;
use proptest::prelude::*;

fn method() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        Just("GET"),
        Just("POST"),
        Just("PUT"),
        Just("PATCH"),
        Just("DELETE")
    ]
}

fn path() -> impl Strategy<Value = String> {
    let seg = prop_oneof![
        Just("api".to_string()),
        Just("apis".to_string()),
        Just("v1".to_string()),
        Just("apps".to_string()),
        Just("namespaces".to_string()),
        Just("default".to_string()),
        Just("configmaps".to_string()),
        Just("deployments".to_string()),
        Just("status".to_string()),
        Just("scale".to_string()),
        Just("customresourcedefinitions".to_string()),
        Just("apiextensions.k8s.io".to_string()),
        "[a-zA-Z0-9%._-]{0,12}",
    ];
    proptest::collection::vec(seg, 0..8).prop_map(|s| format!("/{}", s.join("/")))
}

fn query() -> impl Strategy<Value = String> {
    let kv = prop_oneof![
        "labelSelector=[a-z!=(), %]{0,16}",
        "fieldSelector=[a-z.=!,]{0,20}",
        "limit=[0-9a-z-]{0,4}",
        "continue=[A-Za-z0-9_-]{0,20}",
        "resourceVersion=[0-9a-z]{0,4}",
        "resourceVersionMatch=(Exact|NotOlderThan|x)",
        "dryRun=(All|x)",
        "propagationPolicy=(Orphan|Foreground|x)",
        "fieldManager=[a-z]{0,5}",
    ];
    proptest::collection::vec(kv, 0..4).prop_map(|v| v.join("&"))
}

fn content_type() -> impl Strategy<Value = Option<&'static str>> {
    prop_oneof![
        Just(None),
        Just(Some("application/json")),
        Just(Some("application/yaml")),
        Just(Some("application/merge-patch+json")),
        Just(Some("application/json-patch+json")),
        Just(Some("application/strategic-merge-patch+json")),
        Just(Some("application/apply-patch+yaml")),
        Just(Some("text/plain")),
    ]
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..64),
        Just(br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fz"},"data":{"a":"b"}}"#.to_vec()),
        Just(br#"{"metadata":{"name":"fz","labels":{"x":"y"}},"spec":{"replicas":"many"}}"#.to_vec()),
        Just(br#"[{"op":"remove","path":"/metadata"}]"#.to_vec()),
        Just(br#"{"metadata":{"finalizers":["a/b"],"ownerReferences":[{"uid":"nope"}]}}"#.to_vec()),
        Just(b"metadata:\n  name: fz\nspec: {a: [1, 2]}\n".to_vec()),
        Just(br#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"a.b.c"},"spec":{}}"#.to_vec()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]
    #[test]
    fn random_requests_never_5xx(reqs in proptest::collection::vec((method(), path(), query(), content_type(), body()), 1..6)) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let srv = server().await;
            let r = srv.router();
            for (m, p, q, ct, b) in reqs {
                // Never open an endless watch here.
                let q = q.replace("watch", "w");
                let uri = if q.is_empty() { p.clone() } else { format!("{p}?{q}") };
                let Ok(uri) = uri.parse::<axum::http::Uri>() else { continue };
                let (code, bytes) = raw(&r, m, &uri.to_string(), ct, b).await;
                assert!(code < 500, "{m} {uri} -> {code}: {}", String::from_utf8_lossy(&bytes));
                if code >= 400 && !uri.path().ends_with("z") {
                    let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
                    assert_eq!(v["kind"], "Status", "{m} {uri} -> {code}");
                }
            }
            let (code, _) = raw(&r, "GET", "/api/v1/namespaces/default/configmaps", None, vec![]).await;
            assert_eq!(code, 200);
            srv.shutdown();
        });
    }
}
