//! User impersonation (`kubectl --as`, `--as-group`, `--as-uid`): the `Impersonate-User`,
//! `Impersonate-Group`, `Impersonate-Uid` and `Impersonate-Extra-<key>` headers, each checked
//! against the caller's RBAC permissions with the `impersonate` verb as kube-apiserver does:
//! `users`/`groups`/`serviceaccounts` in the core group, `uids` and `userextras/<key>` in
//! `authentication.k8s.io`. Why it exists: administrators and tools test what someone else may do
//! (`kubectl auth can-i --as`) and act on their behalf without holding their credentials.

use axum::http::{HeaderMap, HeaderName};

use crate::security::auth::{ANONYMOUS_USER, AUTHENTICATED_GROUP, UNAUTHENTICATED_GROUP, UserInfo};
use crate::security::rbac::{Attributes, SERVICE_ACCOUNT_PREFIX};
use crate::state::ApiServer;
use crate::storage::errors::ApiError;

/// The header naming the user to act as.
pub const USER_HEADER: &str = "impersonate-user";
/// A group to act as (repeatable).
pub const GROUP_HEADER: &str = "impersonate-group";
/// The uid to act as.
pub const UID_HEADER: &str = "impersonate-uid";
/// Prefix of the headers carrying extra user information (`Impersonate-Extra-scopes: x`).
pub const EXTRA_PREFIX: &str = "impersonate-extra-";

const AUTHENTICATION_GROUP: &str = "authentication.k8s.io";

fn is_impersonation_header(name: &HeaderName) -> bool {
    let n = name.as_str();
    n == USER_HEADER || n == GROUP_HEADER || n == UID_HEADER || n.starts_with(EXTRA_PREFIX)
}

/// Removes every impersonation header, so nothing downstream mistakes them for the caller's.
pub fn strip_headers(headers: &mut HeaderMap) {
    let names: Vec<HeaderName> = headers
        .keys()
        .filter(|n| is_impersonation_header(n))
        .cloned()
        .collect();
    for n in names {
        headers.remove(n);
    }
}

fn header_str<'a>(v: &'a axum::http::HeaderValue, name: &str) -> Result<&'a str, ApiError> {
    v.to_str()
        .map_err(|_| ApiError::bad_request(format!("invalid {name} header: not ASCII")))
}

/// Percent-decodes an extra key as kube-apiserver does (header names cannot carry every
/// character a key may have).
fn unescape_key(key: &str) -> String {
    if !key.contains('%') {
        return key.to_string();
    }
    form_urlencoded::parse(format!("x={}", key.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

/// The impersonated user, when the request asks for one and `caller` may impersonate it:
/// `Ok(None)` without impersonation headers, 400 for headers without `Impersonate-User`, 403 (a
/// kube-apiserver-worded Status naming the refused user/group/uid/extra) when a check fails.
/// Impersonating a service account adds its groups when none are given; every impersonated
/// user except `system:anonymous` gets `system:authenticated` unless told otherwise.
pub fn impersonate(
    srv: &ApiServer,
    caller: &UserInfo,
    headers: &HeaderMap,
) -> Result<Option<UserInfo>, ApiError> {
    if !headers.keys().any(is_impersonation_header) {
        return Ok(None);
    }
    let user = match headers.get(USER_HEADER) {
        Some(v) => header_str(v, "Impersonate-User")?.to_string(),
        None => {
            return Err(ApiError::bad_request(
                "requested impersonation of groups, uid or extra without impersonating a user",
            ));
        }
    };
    if user.is_empty() {
        return Err(ApiError::bad_request("Impersonate-User must not be empty"));
    }
    let mut groups: Vec<String> = Vec::new();
    for v in headers.get_all(GROUP_HEADER) {
        groups.push(header_str(v, "Impersonate-Group")?.to_string());
    }
    let uid = match headers.get(UID_HEADER) {
        Some(v) => Some(header_str(v, "Impersonate-Uid")?.to_string()),
        None => None,
    };
    let mut extras: Vec<(String, String)> = Vec::new();
    for (name, v) in headers {
        if let Some(key) = name.as_str().strip_prefix(EXTRA_PREFIX) {
            extras.push((unescape_key(key), header_str(v, name.as_str())?.to_string()));
        }
    }

    let mut checks: Vec<Attributes> = Vec::with_capacity(1 + groups.len() + extras.len());
    let service_account = user
        .strip_prefix(SERVICE_ACCOUNT_PREFIX)
        .and_then(|rest| rest.split_once(':'))
        .filter(|(ns, name)| !ns.is_empty() && !name.is_empty() && !name.contains(':'));
    match service_account {
        Some((ns, name)) => checks.push(
            Attributes::resource("impersonate", "", "serviceaccounts")
                .namespace(ns)
                .name(name),
        ),
        None => checks.push(Attributes::resource("impersonate", "", "users").name(&user)),
    }
    for g in &groups {
        checks.push(Attributes::resource("impersonate", "", "groups").name(g));
    }
    if let Some(uid) = &uid {
        checks.push(Attributes::resource("impersonate", AUTHENTICATION_GROUP, "uids").name(uid));
    }
    for (k, v) in &extras {
        checks.push(
            Attributes::resource("impersonate", AUTHENTICATION_GROUP, "userextras")
                .subresource(k)
                .name(v),
        );
    }
    {
        let policy = srv.inner.authz.read();
        for attrs in &checks {
            if !policy.allows(caller, attrs) {
                return Err(crate::security::policy::forbidden(attrs, &caller.name, ""));
            }
        }
    }

    let groups_given = !groups.is_empty();
    if let Some((ns, _)) = service_account
        && !groups_given
    {
        groups.push("system:serviceaccounts".into());
        groups.push(format!("system:serviceaccounts:{ns}"));
    }
    if user == ANONYMOUS_USER {
        if !groups.iter().any(|g| g == UNAUTHENTICATED_GROUP) && !groups_given {
            groups.push(UNAUTHENTICATED_GROUP.into());
        }
    } else if !groups
        .iter()
        .any(|g| g == AUTHENTICATED_GROUP || g == UNAUTHENTICATED_GROUP)
    {
        groups.push(AUTHENTICATED_GROUP.into());
    }
    let mut extra: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for (k, v) in extras {
        extra.entry(k).or_default().push(v);
    }
    Ok(Some(UserInfo {
        name: user,
        groups,
        uid: uid.unwrap_or_default(),
        extra,
    }))
}
