//! GET of one object and LIST with selectors, pagination and resourceVersion semantics. Lists
//! are assembled from the stored JSON bytes without re-encoding the items.

use axum::response::Response;
use base64::Engine;
use bytes::{BufMut, Bytes, BytesMut};
use serde_json::{Value, json};

use super::json_response;
use crate::http::request::Query;
use crate::http::table::IncludeObject;
use crate::state::ApiServer;
use crate::storage::errors::{ApiError, ApiResult};
use crate::storage::registry::{ResourceInfo, split_key};
use crate::storage::selectors::{FieldSelector, LabelSelector, field_value, kind_fields};
use crate::storage::store::{Obj, Rev, StoreError};

/// Rewrites the stored `apiVersion` when a CRD object is read through another served version
/// (CRD "None" conversion); built-ins and same-version reads pass the bytes through untouched.
pub fn convert(info: &ResourceInfo, json: &Bytes) -> Bytes {
    if info.builtin {
        return json.clone();
    }
    let want = info.api_version();
    let needle = format!("\"apiVersion\":\"{want}\"");
    if memfind(json, needle.as_bytes()) {
        return json.clone();
    }
    match serde_json::from_slice::<Value>(json) {
        Ok(mut v) => {
            if let Some(m) = v.as_object_mut() {
                m.insert("apiVersion".into(), json!(want));
            }
            Bytes::from(serde_json::to_vec(&v).unwrap_or_default())
        }
        Err(_) => json.clone(),
    }
}

fn memfind(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// GET one object (or its `status`/`scale` subresource).
pub fn get(
    srv: &ApiServer,
    info: &ResourceInfo,
    ns: Option<&str>,
    name: &str,
    sub: Option<&str>,
    table: Option<IncludeObject>,
) -> ApiResult<Response> {
    let key = info.key(ns, name);
    let Some(obj) = srv.store().get(&key) else {
        return Err(ApiError::not_found(&info.group, &info.plural, name));
    };
    if sub == Some("scale") {
        let v: Value =
            serde_json::from_slice(&obj.json()).map_err(|e| ApiError::internal(e.to_string()))?;
        let scale = crate::http::patch::scale_of(info, &v);
        return Ok(json_response(
            200,
            Bytes::from(serde_json::to_vec(&scale).unwrap_or_default()),
        ));
    }
    if let (Some(inc), None) = (table, sub) {
        let v: Value = serde_json::from_slice(&convert(info, &obj.json()))
            .map_err(|e| ApiError::internal(e.to_string()))?;
        let rv = obj.rev.to_string();
        let t = crate::http::table::table(info, json!({"resourceVersion": rv}), &[v], inc, true);
        return Ok(json_response(
            200,
            Bytes::from(serde_json::to_vec(&t).unwrap_or_default()),
        ));
    }
    Ok(json_response(200, convert(info, &obj.json())))
}

/// Parsed selectors of a list or watch request.
pub struct Selectors {
    /// Label selector.
    pub labels: LabelSelector,
    /// Field selector.
    pub fields: FieldSelector,
}

impl Selectors {
    /// Parses `labelSelector`/`fieldSelector`; errors are 400 BadRequest.
    pub fn parse(info: &ResourceInfo, q: &Query) -> ApiResult<Selectors> {
        let labels = LabelSelector::parse(q.label_selector.as_deref().unwrap_or(""))
            .map_err(|e| ApiError::bad_request(format!("unable to parse labelSelector: {e}")))?;
        let extra: &[&str] = if info.builtin {
            kind_fields(&info.group, &info.kind)
        } else {
            &[]
        };
        let fields = FieldSelector::parse(q.field_selector.as_deref().unwrap_or(""), extra)
            .map_err(|e| ApiError::bad_request(e.0))?;
        Ok(Selectors { labels, fields })
    }

    /// Whether a change to an object can change whether it matches (a label selector, or a field
    /// selector on more than its name and namespace). When not, a watch needs no previous values:
    /// a modified object matches after the change exactly when it did before.
    pub fn depends_on_content(&self) -> bool {
        !self.labels.reqs.is_empty() || !self.fields.only_meta()
    }

    /// Whether a stored object matches; parses the JSON only for non-metadata field selectors.
    pub fn matches(&self, key: &str, obj: &Obj) -> bool {
        if !self.labels.matches(&*obj.labels) {
            return false;
        }
        if self.fields.is_empty() {
            return true;
        }
        let (ns, name) = split_key(key);
        if self.fields.only_meta() {
            return self.fields.matches_with(ns, name, |_| String::new());
        }
        let parsed: Value = serde_json::from_slice(&obj.json()).unwrap_or(Value::Null);
        self.fields
            .matches_with(ns, name, |p| field_value(&parsed, p))
    }
}

#[derive(serde::Serialize, serde::Deserialize)]
struct ContinueToken {
    rv: Rev,
    start: String,
}

/// Encodes a continue token (opaque to clients): the list revision and the last key returned.
fn encode_continue(rv: Rev, last_key: &str) -> String {
    let t = ContinueToken {
        rv,
        start: last_key.to_string(),
    };
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(serde_json::to_vec(&t).unwrap_or_default())
}

fn decode_continue(s: &str) -> ApiResult<ContinueToken> {
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(s)
        .map_err(|_| ApiError::bad_request("invalid continue token"))?;
    serde_json::from_slice(&raw).map_err(|_| ApiError::bad_request("invalid continue token"))
}

/// The revision a list or watch starts at, per `resourceVersion`/`resourceVersionMatch`.
pub enum StartAt {
    /// Most recent (`""` or `"0"`, or NotOlderThan a revision we have passed).
    Latest,
    /// Exactly this revision.
    Exact(Rev),
}

/// Interprets resourceVersion parameters for a list.
pub fn list_start(srv: &ApiServer, q: &Query) -> ApiResult<StartAt> {
    let rv = q.resource_version.as_deref();
    match (q.resource_version_match.as_deref(), rv) {
        (None, None) | (None, Some("0")) => Ok(StartAt::Latest),
        (Some("NotOlderThan"), Some(r)) | (None, Some(r)) => {
            let r = crate::write::crud::parse_rv(r)?;
            if r > srv.store().current_rev() {
                return Err(ApiError::timeout(format!(
                    "Too large resource version: {r}, current: {}",
                    srv.store().current_rev()
                )));
            }
            Ok(StartAt::Latest)
        }
        (Some("Exact"), Some(r)) => Ok(StartAt::Exact(crate::write::crud::parse_rv(r)?)),
        (Some(m @ ("Exact" | "NotOlderThan")), None) => Err(ApiError::bad_request(format!(
            "resourceVersionMatch={m} requires resourceVersion to be set"
        ))),
        (Some(other), _) => Err(ApiError::bad_request(format!(
            "unsupported resourceVersionMatch {other:?}: supported values: \"Exact\", \"NotOlderThan\""
        ))),
    }
}

/// LIST, answered as `<Kind>List` JSON built from the stored bytes.
pub fn list(
    srv: &ApiServer,
    info: &ResourceInfo,
    ns: Option<&str>,
    q: &Query,
    table: Option<IncludeObject>,
) -> ApiResult<Response> {
    let sel = Selectors::parse(info, q)?;
    let prefix = info.prefix(ns);
    let (at, after) = match &q.continue_token {
        Some(tok) => {
            let t = decode_continue(tok)?;
            if !t.start.starts_with(&prefix) {
                return Err(ApiError::bad_request(
                    "continue token does not belong to this list",
                ));
            }
            (Some(t.rv), Some(t.start))
        }
        None => match list_start(srv, q)? {
            StartAt::Latest => (None, None),
            StartAt::Exact(r) => (Some(r), None),
        },
    };
    let filter = |k: &str, o: &Obj| sel.matches(k, o);
    let page = srv
        .store()
        .list(&prefix, at, after.as_deref(), q.limit, &filter)
        .map_err(|e| match e {
            StoreError::Compacted { .. } if q.continue_token.is_some() => ApiError::gone(
                "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
            ),
            e => ApiError::from_store(e, &info.group, &info.plural, ""),
        })?;
    let mut meta = json!({"resourceVersion": page.rev.to_string()});
    if page.more {
        if let Some((k, _)) = page.items.last() {
            meta["continue"] = json!(encode_continue(page.rev, k));
        }
        if let Some(r) = page.remaining {
            meta["remainingItemCount"] = json!(r);
        }
    }
    if let Some(inc) = table {
        let objs: Vec<Value> = page
            .items
            .iter()
            .filter_map(|(_, o)| serde_json::from_slice(&convert(info, &o.json())).ok())
            .collect();
        let t = crate::http::table::table(info, meta, &objs, inc, true);
        return Ok(json_response(
            200,
            Bytes::from(serde_json::to_vec(&t).unwrap_or_default()),
        ));
    }
    let mut out = BytesMut::with_capacity(
        128 + page
            .items
            .iter()
            .map(|(_, o)| o.json_len() + 1)
            .sum::<usize>(),
    );
    out.put_slice(
        format!(
            "{{\"kind\":{},\"apiVersion\":{},\"metadata\":{},\"items\":[",
            json!(info.list_kind),
            json!(info.api_version()),
            meta
        )
        .as_bytes(),
    );
    for (i, (_, o)) in page.items.iter().enumerate() {
        if i > 0 {
            out.put_u8(b',');
        }
        out.put_slice(&convert(info, &o.json()));
    }
    out.put_slice(b"]}");
    Ok(json_response(200, out.freeze()))
}
