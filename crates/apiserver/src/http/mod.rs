//! HTTP routing: fixed endpoints (health, version, discovery, OpenAPI) plus one dispatcher for
//! every `/api/...` and `/apis/...` resource path, which picks the verb from the method, the
//! path shape and the query.

pub(crate) mod authn_reviews;
pub(crate) mod authorize;
pub(crate) mod discovery;
pub(crate) mod field_manager;
pub(crate) mod impersonate;
pub(crate) mod issuer_discovery;
pub(crate) mod limits;
pub(crate) mod openapi;
pub(crate) mod patch;
pub(crate) mod printers;
pub(crate) mod protobuf;
pub(crate) mod read;
pub(crate) mod request;
pub(crate) mod reviews;
pub(crate) mod sa_authn;
pub mod serve;
pub(crate) mod table;
pub(crate) mod token_request;
pub(crate) mod watch;
pub(crate) mod write;

use axum::Extension;
use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;

use crate::http::request::{Query, ResourcePath, Target, parse_path};
use crate::state::ApiServer;
use crate::storage::errors::{ApiError, ApiResult};

/// A JSON response with the given status.
pub fn json_response(code: u16, body: Bytes) -> Response {
    let mut r = (StatusCode::from_u16(code).unwrap_or(StatusCode::OK), body).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// `app` behind `layer`, as a router of one route. Why not `app.layer(layer)`: that boxes
/// the layer around the route it wraps, and a request clones, at each boxed layer it passes,
/// every box nested below it: a stack of k layers allocated k²/2 boxes per request (about 20
/// in the manager). Across a router boundary the clone stops at the inner router (a
/// reference count), so wrapping costs one box per layer.
pub fn wrap<L>(app: Router, layer: L) -> Router
where
    L: tower::Layer<Router>,
    L::Service: tower::Service<Request, Response = Response, Error = std::convert::Infallible>
        + Clone
        + Send
        + Sync
        + 'static,
    <L::Service as tower::Service<Request>>::Future: Send + 'static,
{
    Router::new().fallback_service(layer.layer(app))
}

/// Every route with the authorization layer over it, built once per process and shared by
/// every server's router; the [`ApiServer`] a request is for travels in its extensions (put
/// there by [`ApiServer::router`]).
///
/// Why shared: the route table (a matchit tree, a boxed handler per method and the layer
/// wrapped around each) was built per server, a fifth of an idle in-memory server's heap.
pub(crate) fn shared_router() -> Router {
    static ROUTER: std::sync::OnceLock<Router> = std::sync::OnceLock::new();
    ROUTER
        .get_or_init(|| {
            wrap(
                crate::http::discovery::routes()
                    .merge(crate::http::issuer_discovery::routes())
                    .fallback(dispatch)
                    .method_not_allowed_fallback(method_not_allowed),
                axum::middleware::from_fn(crate::http::authorize::authorize),
            )
        })
        .clone()
}

async fn method_not_allowed(req: Request) -> Response {
    ApiError::method_not_allowed(format!(
        "the server does not allow this method on the requested resource ({} {})",
        req.method(),
        req.uri().path()
    ))
    .into_response()
}

async fn dispatch(Extension(srv): Extension<ApiServer>, req: Request) -> Response {
    match dispatch_inner(srv, req).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

async fn dispatch_inner(srv: ApiServer, req: Request) -> ApiResult<Response> {
    let path = req.uri().path().to_string();
    let target = match parse_path(&path)? {
        Some(t) => t,
        None => return Err(ApiError::path_not_found(&path)),
    };
    let query = Query::parse(req.uri().query())?;
    match target {
        Target::GroupVersion { group, version } => {
            crate::http::discovery::group_version(&srv, &group, &version)
        }
        Target::Group(group) => crate::http::discovery::group(&srv, &group),
        Target::Resource(rp) if crate::http::authn_reviews::handles(&rp) => {
            crate::http::authn_reviews::serve(&srv, rp, req).await
        }
        Target::Resource(rp) => resource(srv, rp, query, req).await,
    }
}

async fn resource(srv: ApiServer, rp: ResourcePath, q: Query, req: Request) -> ApiResult<Response> {
    let Some(info) = srv.registry().lookup(&rp.group, &rp.version, &rp.plural) else {
        return Err(ApiError::path_not_found(req.uri().path()));
    };
    if rp.namespace.is_some() && !info.namespaced {
        return Err(ApiError::path_not_found(req.uri().path()));
    }
    match rp.sub.as_deref() {
        None => {}
        Some("status") if info.status => {}
        Some("scale") if info.scale.is_some() => {}
        Some("finalize") if info.builtin && info.kind == "Namespace" => {}
        Some("token") if info.builtin && info.kind == "ServiceAccount" => {
            return match (req.method(), rp.namespace.as_deref(), rp.name.as_deref()) {
                (&Method::POST, Some(ns), Some(name)) => {
                    let (ns, name, headers) =
                        (ns.to_string(), name.to_string(), req.headers().clone());
                    crate::http::token_request::create(&srv, &ns, &name, &headers, req.into_body())
                        .await
                }
                (m, _, _) => Err(ApiError::method_not_allowed(format!(
                    "the server does not allow this method on the requested resource ({m} serviceaccounts/token)"
                ))),
            };
        }
        Some(_) => return Err(ApiError::path_not_found(req.uri().path())),
    }
    let ns = rp.namespace.as_deref();
    if crate::storage::review_kinds::is_review(&info) {
        let user = req
            .extensions()
            .get::<crate::security::auth::UserInfo>()
            .cloned();
        let (parts, body) = req.into_parts();
        return crate::http::reviews::handle(
            &srv,
            &info,
            ns,
            &parts.method,
            user.as_ref(),
            &parts.headers,
            body,
        )
        .await;
    }
    let table = crate::http::table::wants_table(req.headers())
        .then(|| crate::http::table::IncludeObject::parse(req.uri().query()));
    let (parts, body) = req.into_parts();
    let (method, headers): (Method, axum::http::HeaderMap) = (parts.method, parts.headers);
    let body: Body = body;
    match (&method, rp.name.as_deref()) {
        (&Method::GET, Some(name)) => read::get(&srv, &info, ns, name, rp.sub.as_deref(), table),
        (&Method::GET, None) if q.watch => {
            crate::http::watch::watch(&srv, info, rp.namespace.clone(), &q, table).await
        }
        (&Method::GET, None) => read::list(&srv, &info, ns, &q, table),
        (&Method::POST, None) => write::create(&srv, &info, ns, &q, &headers, body).await,
        (&Method::PUT, Some(name)) => {
            write::update(&srv, &info, ns, name, rp.sub.as_deref(), &q, &headers, body).await
        }
        (&Method::PATCH, Some(name)) => {
            crate::http::patch::patch(&srv, &info, ns, name, rp.sub.as_deref(), &q, &headers, body)
                .await
        }
        (&Method::DELETE, Some(name)) if rp.sub.is_none() => {
            write::delete(&srv, &info, ns, name, &q, body).await
        }
        (&Method::DELETE, None) => write::delete_collection(&srv, &info, ns, &q, body).await,
        (m, _) => Err(ApiError::method_not_allowed(format!(
            "the server does not allow this method on the requested resource ({m} {})",
            info.group_resource()
        ))),
    }
}
