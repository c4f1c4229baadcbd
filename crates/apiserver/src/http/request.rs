//! Request decoding: the resource path, the query parameters and the body. Everything here runs
//! on untrusted input, so it returns `ApiError`s (400/404/413/415) and never panics.

use axum::body::Body;
use axum::http::HeaderMap;
use bytes::Bytes;
use serde_json::Value;

use crate::storage::errors::{ApiError, ApiResult};

/// Largest accepted request body (kube-apiserver's limit is 3 MiB).
pub const MAX_BODY: usize = 3 * 1024 * 1024;

/// Coordinates parsed from `/api/v1/...` or `/apis/G/V/...`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourcePath {
    /// API group (`""` for core).
    pub group: String,
    /// API version.
    pub version: String,
    /// Namespace from `/namespaces/{ns}/...`, if any.
    pub namespace: Option<String>,
    /// Resource plural.
    pub plural: String,
    /// Object name, if the path names one.
    pub name: Option<String>,
    /// Subresource (`status`, `scale`, `finalize`).
    pub sub: Option<String>,
}

/// What a path addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// `/api/v1` or `/apis/G/V`: group-version discovery.
    GroupVersion { group: String, version: String },
    /// `/apis/G`: one group's discovery.
    Group(String),
    /// A resource, collection or subresource.
    Resource(ResourcePath),
}

fn decode_segment(s: &str) -> ApiResult<String> {
    // Almost every segment has nothing to decode: skip building a query string for it.
    if !s.is_empty() && !s.contains('%') {
        return Ok(s.to_string());
    }
    let d: String = form_urlencoded::parse(format!("x={}", s.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default();
    if d.is_empty() || d.contains('/') {
        return Err(ApiError::bad_request(format!("invalid path segment {s:?}")));
    }
    Ok(d)
}

/// Parses a request path. `None` means the path is not an API path at all.
pub fn parse_path(path: &str) -> ApiResult<Option<Target>> {
    let segs: Vec<&str> = path.trim_end_matches('/').split('/').skip(1).collect();
    let (group, version, rest): (String, String, &[&str]) = match segs.as_slice() {
        ["api", v, rest @ ..] => (String::new(), v.to_string(), rest),
        ["apis", g] => return Ok(Some(Target::Group(g.to_string()))),
        ["apis", g, v, rest @ ..] => (g.to_string(), v.to_string(), rest),
        _ => return Ok(None),
    };
    let rest: Vec<String> = rest
        .iter()
        .map(|s| decode_segment(s))
        .collect::<ApiResult<_>>()?;
    let rp =
        |namespace: Option<String>, plural: &str, name: Option<&String>, sub: Option<&String>| {
            Target::Resource(ResourcePath {
                group: group.clone(),
                version: version.clone(),
                namespace,
                plural: plural.to_string(),
                name: name.cloned(),
                sub: sub.cloned(),
            })
        };
    let t = match rest.as_slice() {
        [] => Target::GroupVersion {
            group: group.clone(),
            version: version.clone(),
        },
        // `namespaces/{name}/status|finalize` is the namespace object's subresource.
        [ns, name, sub] if ns == "namespaces" && (sub == "status" || sub == "finalize") => {
            rp(None, "namespaces", Some(name), Some(sub))
        }
        [ns, nsname, plural] if ns == "namespaces" => rp(Some(nsname.clone()), plural, None, None),
        [ns, nsname, plural, name] if ns == "namespaces" => {
            rp(Some(nsname.clone()), plural, Some(name), None)
        }
        [ns, nsname, plural, name, sub] if ns == "namespaces" => {
            rp(Some(nsname.clone()), plural, Some(name), Some(sub))
        }
        [plural] => rp(None, plural, None, None),
        [plural, name] => rp(None, plural, Some(name), None),
        [plural, name, sub] => rp(None, plural, Some(name), Some(sub)),
        _ => return Err(ApiError::path_not_found(path)),
    };
    Ok(Some(t))
}

/// The query parameters the REST layer understands. Unknown parameters are ignored, as
/// kube-apiserver does.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Query {
    pub label_selector: Option<String>,
    pub field_selector: Option<String>,
    pub watch: bool,
    pub resource_version: Option<String>,
    pub resource_version_match: Option<String>,
    pub limit: Option<usize>,
    pub continue_token: Option<String>,
    pub timeout_seconds: Option<u64>,
    pub allow_watch_bookmarks: bool,
    pub send_initial_events: Option<bool>,
    pub dry_run: bool,
    pub field_manager: Option<String>,
    pub force: bool,
    pub propagation_policy: Option<String>,
    pub orphan_dependents: Option<bool>,
    pub grace_period_seconds: Option<i64>,
}

fn parse_bool(name: &str, v: &str) -> ApiResult<bool> {
    match v {
        "true" | "1" | "True" | "TRUE" | "" => Ok(true),
        "false" | "0" | "False" | "FALSE" => Ok(false),
        _ => Err(ApiError::bad_request(format!(
            "invalid value {v:?} for query parameter {name}: expected a boolean"
        ))),
    }
}

impl Query {
    /// Parses a raw query string (`a=b&c=d`).
    pub fn parse(raw: Option<&str>) -> ApiResult<Query> {
        let mut q = Query::default();
        let Some(raw) = raw else { return Ok(q) };
        for (k, v) in form_urlencoded::parse(raw.as_bytes()) {
            let v = v.into_owned();
            match k.as_ref() {
                "labelSelector" => q.label_selector = Some(v),
                "fieldSelector" => q.field_selector = Some(v),
                "watch" => q.watch = parse_bool("watch", &v)?,
                "resourceVersion" => q.resource_version = Some(v).filter(|s| !s.is_empty()),
                "resourceVersionMatch" => {
                    q.resource_version_match = Some(v).filter(|s| !s.is_empty())
                }
                "limit" => {
                    let n: i64 = v
                        .parse()
                        .map_err(|_| ApiError::bad_request(format!("invalid limit {v:?}")))?;
                    q.limit = (n > 0).then_some(n as usize);
                }
                "continue" => q.continue_token = Some(v).filter(|s| !s.is_empty()),
                "timeoutSeconds" => {
                    let n: i64 = v.parse().map_err(|_| {
                        ApiError::bad_request(format!("invalid timeoutSeconds {v:?}"))
                    })?;
                    q.timeout_seconds = (n > 0).then_some(n as u64);
                }
                "allowWatchBookmarks" => {
                    q.allow_watch_bookmarks = parse_bool("allowWatchBookmarks", &v)?
                }
                "sendInitialEvents" => {
                    q.send_initial_events = Some(parse_bool("sendInitialEvents", &v)?)
                }
                "dryRun" => {
                    if v != "All" && !v.is_empty() {
                        return Err(ApiError::bad_request(format!(
                            "unsupported dryRun value {v:?}: only \"All\" is supported"
                        )));
                    }
                    q.dry_run = v == "All";
                }
                "fieldManager" => q.field_manager = Some(v),
                "force" => q.force = parse_bool("force", &v)?,
                "propagationPolicy" => q.propagation_policy = Some(v),
                "orphanDependents" => {
                    q.orphan_dependents = Some(parse_bool("orphanDependents", &v)?)
                }
                "gracePeriodSeconds" => {
                    q.grace_period_seconds = Some(v.parse().map_err(|_| {
                        ApiError::bad_request(format!("invalid gracePeriodSeconds {v:?}"))
                    })?)
                }
                _ => {}
            }
        }
        Ok(q)
    }
}

/// The media type of the request body, lowercased, without parameters.
pub fn content_type(headers: &HeaderMap) -> String {
    headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|s| {
            s.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .unwrap_or_default()
}

/// Reads the body, refusing more than [`MAX_BODY`] bytes with 413.
pub async fn read_body(body: Body) -> ApiResult<Bytes> {
    use http_body_util::BodyExt;
    let limited = http_body_util::Limited::new(body, MAX_BODY);
    match limited.collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(e) => {
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some()
            {
                Err(ApiError::too_large(MAX_BODY))
            } else {
                Err(ApiError::bad_request(format!(
                    "error reading request body: {e}"
                )))
            }
        }
    }
}

message_error! {
    /// A request body that is not YAML (or not UTF-8), answered with a 400 naming the problem.
    BodyError
}

/// Parses YAML with Kubernetes (Go YAML 1.1) number semantics into JSON.
pub fn parse_yaml(bytes: &[u8]) -> Result<Value, BodyError> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("body is not UTF-8: {e}"))?;
    let opts = serde_saphyr::options! { legacy_octal_numbers: true };
    Ok(serde_saphyr::from_str_with_options::<Value>(text, opts).map_err(|e| e.to_string())?)
}

/// Decodes an object body (create/update) as JSON or YAML depending on the content type. The
/// result is always a JSON object.
pub fn decode_object(bytes: &[u8], media_type: &str) -> ApiResult<Value> {
    let v = match media_type {
        "" | "application/json" | "*/*" => serde_json::from_slice::<Value>(bytes)
            .map_err(|e| ApiError::bad_request(format!("error decoding JSON body: {e}")))?,
        "application/yaml" | "application/x-yaml" | "text/yaml" => parse_yaml(bytes)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML body: {e}")))?,
        crate::http::protobuf::CONTENT_TYPE => crate::http::protobuf::decode(bytes)
            .map_err(|e| ApiError::bad_request(format!("error decoding protobuf body: {e}")))?,
        other => return Err(ApiError::unsupported_media_type(other)),
    };
    if !v.is_object() {
        return Err(ApiError::bad_request(
            "the request body must be a JSON/YAML object",
        ));
    }
    Ok(v)
}

/// Decodes a body that may be JSON or YAML (server-side apply accepts both).
pub fn decode_json_or_yaml(bytes: &[u8]) -> ApiResult<Value> {
    // Typed clients send DeleteOptions as protobuf; its magic prefix is never valid JSON or YAML.
    if bytes.starts_with(b"k8s\0") {
        return crate::http::protobuf::decode(bytes)
            .map_err(|e| ApiError::bad_request(format!("error decoding protobuf body: {e}")));
    }
    match serde_json::from_slice::<Value>(bytes) {
        Ok(v) => Ok(v),
        Err(_) => parse_yaml(bytes)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML body: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn paths() {
        let t = parse_path("/api/v1/namespaces/default/configmaps/x")
            .unwrap()
            .unwrap();
        assert_eq!(
            t,
            Target::Resource(ResourcePath {
                group: "".into(),
                version: "v1".into(),
                namespace: Some("default".into()),
                plural: "configmaps".into(),
                name: Some("x".into()),
                sub: None
            })
        );
        let t = parse_path("/api/v1/namespaces/foo/status")
            .unwrap()
            .unwrap();
        assert!(
            matches!(t, Target::Resource(ResourcePath { ref plural, ref sub, .. }) if plural == "namespaces" && sub.as_deref() == Some("status"))
        );
        let t = parse_path("/apis/apps/v1/deployments").unwrap().unwrap();
        assert!(matches!(
            t,
            Target::Resource(ResourcePath {
                namespace: None,
                ..
            })
        ));
        assert_eq!(
            parse_path("/apis/apps/v1").unwrap(),
            Some(Target::GroupVersion {
                group: "apps".into(),
                version: "v1".into()
            })
        );
        assert_eq!(parse_path("/healthz").unwrap(), None);
        assert!(parse_path("/api/v1/a/b/c/d/e/f/g").is_err());
    }

    #[test]
    fn queries() {
        let q = Query::parse(Some(
            "labelSelector=a%3Db&watch=true&limit=5&resourceVersion=10&dryRun=All",
        ))
        .unwrap();
        assert_eq!(q.label_selector.as_deref(), Some("a=b"));
        assert!(q.watch && q.dry_run);
        assert_eq!(q.limit, Some(5));
        assert!(Query::parse(Some("limit=abc")).is_err());
        assert!(Query::parse(Some("watch=maybe")).is_err());
    }

    #[test]
    fn bodies() {
        assert!(decode_object(b"{\"a\":1}", "application/json").is_ok());
        assert_eq!(
            decode_object(b"{bad", "application/json").unwrap_err().code,
            400
        );
        assert_eq!(
            decode_object(b"[1]", "application/json").unwrap_err().code,
            400
        );
        let v = decode_object(b"a: 0644\nb: yes\n", "application/yaml").unwrap();
        assert_eq!(v["a"], 420);
        assert_eq!(decode_object(b"x", "text/plain").unwrap_err().code, 415);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn path_parse_never_panics(s in "(/[a-z0-9%.+-]{0,8}){0,9}") {
            let _ = parse_path(&s);
        }
        #[test]
        fn query_parse_never_panics(s in ".{0,80}") {
            let _ = Query::parse(Some(&s));
        }
        #[test]
        fn body_decode_never_panics(b in proptest::collection::vec(any::<u8>(), 0..200), yaml in any::<bool>()) {
            let _ = decode_object(&b, if yaml { "application/yaml" } else { "application/json" });
            let _ = decode_json_or_yaml(&b);
        }
        #[test]
        fn yaml_text_never_panics(s in "[a-z:\\- \\n{}\\[\\]\"'0-9#&*!|>]{0,120}") {
            let _ = decode_object(s.as_bytes(), "application/yaml");
        }
    }
}
