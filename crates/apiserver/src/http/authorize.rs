//! Authorization wired into request handling: the middleware that turns every authenticated
//! request into [`Attributes`] (as kube-apiserver's `RequestInfoFactory` does), applies
//! impersonation, and refuses it with a 403 `Status` worded as kube-apiserver words it.

use axum::Extension;
use axum::extract::Request;
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::security::auth::UserInfo;
use crate::security::policy::CURRENT_USER;
use crate::security::policy::forbidden;
use crate::security::rbac::{self, Attributes, Decision};
use crate::state::ApiServer;

/// URL prefix of RBAC writes: only these requests need the caller's identity inside the write
/// path (for escalation checks), so only these pay for carrying it there.
const RBAC_URL_PREFIX: &str = "/apis/rbac.authorization.k8s.io/";

fn decode_segment(s: &str) -> String {
    if !s.contains('%') {
        return s.to_string();
    }
    form_urlencoded::parse(format!("x={}", s.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

/// Whether the query asks for a watch, decided exactly as the REST layer's `Query::parse` does
/// (the last `watch` parameter wins; an empty value means true), so the verb authorized is the
/// operation performed.
fn query_watch(query: Option<&str>) -> bool {
    let Some(q) = query else { return false };
    if !q.contains("watch") {
        return false;
    }
    let mut watch = false;
    for (k, v) in form_urlencoded::parse(q.as_bytes()) {
        if k == "watch" {
            watch = matches!(v.as_ref(), "true" | "1" | "True" | "TRUE" | "");
        }
    }
    watch
}

/// `metadata.name=X` from a field selector, which kube-apiserver uses as the object name of a
/// list or watch (so `resourceNames` rules can allow `kubectl get x NAME -w`).
fn field_selector_name(query: Option<&str>) -> Option<String> {
    let q = query?;
    if !q.contains("fieldSelector") {
        return None;
    }
    let mut name = None;
    for (k, v) in form_urlencoded::parse(q.as_bytes()) {
        if k != "fieldSelector" {
            continue;
        }
        name = None;
        let mut terms = v.split(',');
        if let (Some(term), None) = (terms.next(), terms.next()) {
            let value = term
                .strip_prefix("metadata.name==")
                .or_else(|| term.strip_prefix("metadata.name="));
            if let Some(value) = value
                && !value.is_empty()
                && crate::storage::validation::path_segment_name(value).is_ok()
            {
                name = Some(value.to_string());
            }
        }
    }
    name
}

/// What a request wants to do, derived as kube-apiserver's `RequestInfoFactory` does:
/// `/api/v1/...` and `/apis/G/V/...` paths with a resource are resource requests (verb from the
/// method, `list`/`watch` for collection reads, `deletecollection` for collection deletes, the
/// namespace from `namespaces/NS/...`, then resource/name/subresource); everything else,
/// including `/api`, `/apis/G` and `/apis/G/V`, is a non-resource request for the path with the
/// lower-cased method as the verb.
pub fn request_attributes(method: &Method, path: &str, query: Option<&str>) -> Attributes {
    let non_resource = || Attributes::non_resource(&method.as_str().to_ascii_lowercase(), path);
    let trimmed = path.trim_matches('/');
    let mut parts: Vec<&str> = trimmed.split('/').collect();
    if parts.len() < 3 {
        return non_resource();
    }
    let group = match parts[0] {
        "api" => {
            parts.drain(..1);
            ""
        }
        "apis" => {
            if parts.len() < 4 {
                return non_resource();
            }
            let g = parts[1];
            parts.drain(..2);
            g
        }
        _ => return non_resource(),
    };
    // parts: version, then the rest.
    parts.drain(..1);
    let mut attrs = Attributes {
        api_group: group.to_string(),
        ..Default::default()
    };
    let mut verb = match *method {
        Method::POST => "create",
        Method::GET | Method::HEAD => "get",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE => "delete",
        _ => "",
    };
    if matches!(parts.first(), Some(&"watch") | Some(&"proxy")) {
        if parts.len() < 2 {
            return non_resource();
        }
        verb = if parts[0] == "watch" {
            "watch"
        } else {
            "proxy"
        };
        parts.drain(..1);
    }
    if parts.first() == Some(&"namespaces")
        && let Some(ns) = parts.get(1)
    {
        attrs.namespace = decode_segment(ns);
        if parts
            .get(2)
            .is_some_and(|p| !matches!(*p, "status" | "finalize"))
        {
            parts.drain(..2);
        }
    }
    if let Some(r) = parts.first() {
        attrs.resource = decode_segment(r);
    }
    if let Some(n) = parts.get(1) {
        attrs.name = decode_segment(n);
    }
    if verb != "proxy"
        && let Some(s) = parts.get(2)
    {
        attrs.subresource = decode_segment(s);
    }
    if attrs.name.is_empty() && verb == "get" {
        verb = if query_watch(query) { "watch" } else { "list" };
    }
    if attrs.name.is_empty()
        && matches!(verb, "list" | "watch")
        && let Some(n) = field_selector_name(query)
    {
        attrs.name = n;
    }
    if attrs.name.is_empty() && verb == "delete" {
        verb = "deletecollection";
    }
    attrs.verb = verb.to_string();
    attrs
}

/// Decides one request for `user` against the live policy.
pub fn decide(srv: &ApiServer, user: &UserInfo, attrs: &Attributes) -> Decision {
    srv.inner.authz.read().authorize(user, attrs)
}

/// axum middleware (installed by [`ApiServer::router`] inside authentication): applies
/// impersonation headers, authorizes the request, and answers 403 when RBAC does not allow it.
///
/// A request without a [`UserInfo`] did not come through authentication at all: it is an
/// in-process caller of the bare router (tests, embedding code), which is trusted, exactly as
/// the router was before authorization existed. The served HTTPS port always authenticates
/// first, so every request there carries a user.
pub async fn authorize(
    Extension(srv): Extension<ApiServer>,
    mut req: Request,
    next: Next,
) -> Response {
    let Some(authenticated) = req.extensions().get::<UserInfo>() else {
        return next.run(req).await;
    };
    let user = match crate::http::impersonate::impersonate(&srv, authenticated, req.headers()) {
        Ok(None) => None,
        Ok(Some(u)) => Some(u),
        Err(e) => return e.into_response(),
    };
    if let Some(u) = user {
        crate::http::impersonate::strip_headers(req.headers_mut());
        req.extensions_mut().insert(u);
    }
    let Some(user) = req.extensions().get::<UserInfo>() else {
        return next.run(req).await;
    };
    if !user.in_group(rbac::MASTERS_GROUP) {
        let attrs = request_attributes(req.method(), req.uri().path(), req.uri().query());
        if !srv.inner.authz.read().allows(user, &attrs) {
            tracing::debug!(user = %user.name, verb = %attrs.verb, resource = %attrs.resource, path = %attrs.path, "forbidden");
            return forbidden(&attrs, &user.name, "").into_response();
        }
    }
    if req.uri().path().starts_with(RBAC_URL_PREFIX) {
        let user = user.clone();
        return CURRENT_USER.scope(user, next.run(req)).await;
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(method: Method, path: &str, query: Option<&str>) -> Attributes {
        request_attributes(&method, path, query)
    }

    #[test]
    fn resource_verbs() {
        let ns = "/api/v1/namespaces/a/pods";
        assert_eq!(
            a(Method::GET, ns, None),
            Attributes::resource("list", "", "pods").namespace("a")
        );
        assert_eq!(
            a(Method::GET, ns, Some("watch=true")),
            Attributes::resource("watch", "", "pods").namespace("a")
        );
        assert_eq!(a(Method::GET, ns, Some("watch=1")).verb, "watch");
        assert_eq!(a(Method::GET, ns, Some("watch")).verb, "watch");
        assert_eq!(a(Method::GET, ns, Some("watch=false")).verb, "list");
        assert_eq!(a(Method::GET, ns, Some("watch=1&watch=0")).verb, "list");
        assert_eq!(
            a(Method::GET, &format!("{ns}/p"), None),
            Attributes::resource("get", "", "pods")
                .namespace("a")
                .name("p")
        );
        assert_eq!(a(Method::HEAD, &format!("{ns}/p"), None).verb, "get");
        assert_eq!(a(Method::POST, ns, None).verb, "create");
        assert_eq!(a(Method::PUT, &format!("{ns}/p"), None).verb, "update");
        assert_eq!(a(Method::PATCH, &format!("{ns}/p"), None).verb, "patch");
        assert_eq!(a(Method::DELETE, &format!("{ns}/p"), None).verb, "delete");
        assert_eq!(a(Method::DELETE, ns, None).verb, "deletecollection");
        assert_eq!(
            a(
                Method::PUT,
                "/apis/fleet.cattle.io/v1alpha1/namespaces/a/bundledeployments/x/status",
                None
            ),
            Attributes::resource("update", "fleet.cattle.io", "bundledeployments")
                .namespace("a")
                .name("x")
                .subresource("status")
        );
        assert_eq!(
            a(
                Method::GET,
                "/apis/rbac.authorization.k8s.io/v1/clusterroles",
                None
            ),
            Attributes::resource("list", "rbac.authorization.k8s.io", "clusterroles")
        );
        assert_eq!(
            a(Method::GET, "/api/v1/watch/namespaces/a/pods", None),
            Attributes::resource("watch", "", "pods").namespace("a")
        );
        assert_eq!(
            a(
                Method::POST,
                "/api/v1/namespaces/a/serviceaccounts/sa/token",
                None
            ),
            Attributes::resource("create", "", "serviceaccounts")
                .namespace("a")
                .name("sa")
                .subresource("token")
        );
    }

    #[test]
    fn namespaces_and_their_subresources() {
        assert_eq!(
            a(Method::GET, "/api/v1/namespaces/a", None),
            Attributes::resource("get", "", "namespaces")
                .namespace("a")
                .name("a")
        );
        assert_eq!(
            a(Method::PUT, "/api/v1/namespaces/a/finalize", None),
            Attributes::resource("update", "", "namespaces")
                .namespace("a")
                .name("a")
                .subresource("finalize")
        );
        assert_eq!(
            a(Method::GET, "/api/v1/namespaces", None),
            Attributes::resource("list", "", "namespaces")
        );
    }

    #[test]
    fn field_selector_names_the_object() {
        let q = Some("fieldSelector=metadata.name%3Dweb&watch=true");
        assert_eq!(
            a(Method::GET, "/api/v1/namespaces/a/pods", q),
            Attributes::resource("watch", "", "pods")
                .namespace("a")
                .name("web")
        );
        let q = Some("fieldSelector=metadata.name%3Dweb%2Cspec.x%3Dy");
        assert_eq!(a(Method::GET, "/api/v1/pods", q).name, "");
    }

    #[test]
    fn non_resource_paths() {
        for (m, p, verb) in [
            (Method::GET, "/api", "get"),
            (Method::GET, "/api/v1", "get"),
            (Method::GET, "/apis", "get"),
            (Method::GET, "/apis/apps", "get"),
            (Method::GET, "/apis/apps/v1", "get"),
            (Method::GET, "/healthz", "get"),
            (Method::GET, "/openapi/v2", "get"),
            (Method::POST, "/foo/bar/baz", "post"),
            (Method::GET, "/version/", "get"),
        ] {
            assert_eq!(a(m, p, None), Attributes::non_resource(verb, p), "{p}");
        }
    }

    #[test]
    fn forbidden_wording() {
        let attrs = Attributes::resource("list", "", "pods").namespace("a");
        let s = forbidden(&attrs, "bob", "").to_status();
        assert_eq!(
            s["message"],
            "pods is forbidden: User \"bob\" cannot list resource \"pods\" in API group \"\" in the namespace \"a\""
        );
        assert_eq!(s["code"], 403);
        assert_eq!(s["reason"], "Forbidden");
        assert_eq!(s["details"], serde_json::json!({"kind": "pods"}));
        let attrs = Attributes::resource("update", "fleet.cattle.io", "bundledeployments")
            .namespace("a")
            .name("x");
        let s = forbidden(&attrs, "sa", "").to_status();
        assert_eq!(
            s["message"],
            "bundledeployments.fleet.cattle.io \"x\" is forbidden: User \"sa\" cannot update resource \"bundledeployments\" in API group \"fleet.cattle.io\" in the namespace \"a\""
        );
        assert_eq!(
            s["details"],
            serde_json::json!({"kind": "bundledeployments", "group": "fleet.cattle.io", "name": "x"})
        );
        let s = forbidden(&Attributes::non_resource("get", "/foo"), "bob", "").to_status();
        assert_eq!(
            s["message"],
            "forbidden: User \"bob\" cannot get path \"/foo\""
        );
    }

    proptest::proptest! {
        #[test]
        fn attributes_never_panic(p in "(/[a-z0-9%.+-]{0,8}){0,9}", q in ".{0,40}") {
            let _ = request_attributes(&Method::GET, &p, Some(&q));
            let _ = request_attributes(&Method::DELETE, &p, None);
        }
    }
}
