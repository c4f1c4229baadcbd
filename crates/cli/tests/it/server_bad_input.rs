//! Bad requests get the Status kube-apiserver would send (code and reason), and the server keeps
//! serving: malformed JSON and YAML, kind/path and namespace/name mismatches, missing name,
//! invalid label value, oversized body, unknown resource, invalid selectors.

use crate::common::{Server, raw};

const CMS: &str = "/api/v1/namespaces/default/configmaps";

/// (what, method, path, content type, body, expected code, expected reason)
type Case = (
    &'static str,
    &'static str,
    String,
    &'static str,
    Vec<u8>,
    u16,
    &'static str,
);

#[tokio::test(flavor = "multi_thread")]
async fn bad_requests_get_proper_status_and_server_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    let client = srv.client().await;
    let json = "application/json";

    let cases: Vec<Case> = vec![
        ("malformed JSON", "POST", CMS.into(), json, br#"{"apiVersion": "v1", "kind": "#.to_vec(), 400, "BadRequest"),
        ("JSON that is not an object", "POST", CMS.into(), json, b"[1, 2]".to_vec(), 400, "BadRequest"),
        ("malformed YAML", "POST", CMS.into(), "application/yaml", b"metadata: {name: [x\n  - : :".to_vec(), 400, "BadRequest"),
        (
            "kind does not match the path",
            "POST",
            CMS.into(),
            json,
            br#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}}"#.to_vec(),
            400,
            "BadRequest",
        ),
        (
            "namespace does not match the path",
            "POST",
            CMS.into(),
            json,
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"n","namespace":"other"}}"#.to_vec(),
            400,
            "BadRequest",
        ),
        (
            "name does not match the path",
            "PUT",
            format!("{CMS}/one"),
            json,
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"two"}}"#.to_vec(),
            400,
            "BadRequest",
        ),
        (
            "missing name",
            "POST",
            CMS.into(),
            json,
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{}}"#.to_vec(),
            422,
            "Invalid",
        ),
        (
            "invalid label value",
            "POST",
            CMS.into(),
            json,
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"l","labels":{"a":"not a valid value!"}}}"#.to_vec(),
            422,
            "Invalid",
        ),
        (
            "invalid name",
            "POST",
            CMS.into(),
            json,
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Not_Valid"}}"#.to_vec(),
            422,
            "Invalid",
        ),
        ("unknown resource", "GET", "/api/v1/namespaces/default/frobnicators".into(), json, vec![], 404, "NotFound"),
        ("unknown group", "GET", "/apis/nope.example/v1/things".into(), json, vec![], 404, "NotFound"),
        ("invalid label selector", "GET", format!("{CMS}?labelSelector=a%20in%20(b"), json, vec![], 400, "BadRequest"),
        ("invalid field selector", "GET", format!("{CMS}?fieldSelector=metadata.nope%3Dx"), json, vec![], 400, "BadRequest"),
        ("unsupported patch type", "PATCH", format!("{CMS}/x"), "text/plain", b"{}".to_vec(), 415, "UnsupportedMediaType"),
    ];

    // Every case runs (and is reported) even when an earlier one fails.
    let mut failures = Vec::new();
    for (what, method, path, ct, body, code, reason) in cases {
        let (got, status) = raw(&client, method, &path, ct, body).await;
        let ok = got == code
            && status["kind"] == "Status"
            && status["code"] == code
            && status["reason"] == reason
            && status["message"].as_str().is_some_and(|m| !m.is_empty());
        if ok {
            println!("ok   {what}: {code} {reason}: {}", status["message"]);
        } else {
            println!("FAIL {what}: want {code} {reason}, got {got}: {status}");
            failures.push(format!("{what}: want {code} {reason}, got {got} {status}"));
        }
    }

    // Invalid label values name the field.
    let (_, status) = raw(
        &client,
        "POST",
        CMS,
        json,
        br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"l","labels":{"a":"not a valid value!"}}}"#.to_vec(),
    )
    .await;
    assert!(status.to_string().contains("metadata.labels"), "{status}");

    // An oversized body (kube-apiserver's limit is 3 MiB) is refused without being stored.
    let big = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"big"}},"data":{{"x":"{}"}}}}"#,
        "y".repeat(4 * 1024 * 1024)
    );
    let (got, status) = raw(&client, "POST", CMS, json, big.into_bytes()).await;
    assert_eq!(got, 413, "{status}");
    assert_eq!(status["reason"], "RequestEntityTooLarge", "{status}");

    // Still serving, and a correct request works.
    let (got, _) = raw(&client, "GET", "/readyz", json, vec![]).await;
    assert_eq!(got, 200);
    let (got, status) = raw(
        &client,
        "POST",
        CMS,
        json,
        br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fine"}}"#.to_vec(),
    )
    .await;
    assert_eq!(got, 201, "{status}");
    let (got, list) = raw(&client, "GET", CMS, json, vec![]).await;
    assert_eq!(got, 200);
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["fine"], "nothing from the bad requests was stored");
    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
