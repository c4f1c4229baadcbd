//! The live RBAC policy of one server (a watch-fed copy of every Role and binding, see
//! [`crate::controllers::rbac_policy`]), the user a request runs as, and the 403 `Status`
//! kube-apiserver answers a refused request with.
//!
//! Why a watch-fed copy instead of reading roles from the store per request: a decision must cost
//! a few hash lookups in the subject index ([`Authorizer`]), not a list of bindings.

use std::sync::atomic::{AtomicI64, Ordering};

use parking_lot::RwLock;

use crate::security::auth::UserInfo;
use crate::security::rbac::{Attributes, Authorizer};
use crate::storage::errors::{ApiError, Details};
use crate::storage::store::Rev;

/// The live RBAC policy of one server and the store revision it reflects.
#[derive(Default)]
pub struct Policy {
    pub(crate) authorizer: RwLock<Authorizer>,
    pub(crate) rev: AtomicI64,
}

impl Policy {
    /// Read access to the current policy (held only for the length of one decision).
    pub fn read(&self) -> parking_lot::RwLockReadGuard<'_, Authorizer> {
        self.authorizer.read()
    }

    /// The store revision the policy has caught up with (for tests and diagnostics).
    pub fn revision(&self) -> Rev {
        self.rev.load(Ordering::Acquire)
    }
}

tokio::task_local! {
    /// The (possibly impersonated) user of the request being handled, for checks deep in the
    /// write path that the handler signatures do not carry (escalation prevention). Unset for
    /// background controllers and in-process callers, which are trusted.
    pub(crate) static CURRENT_USER: UserInfo;
}

/// The user of the request this task is handling, if it came through the authorization layer.
pub fn current_user() -> Option<UserInfo> {
    CURRENT_USER.try_with(UserInfo::clone).ok()
}

/// The 403 kube-apiserver answers a refused request with: `<resource>[.<group>] ["<name>"] is
/// forbidden: User "u" cannot <verb> resource "<r>" in API group "<g>" ...` (or `forbidden: User
/// "u" cannot get path "/x"`), `details` naming the group, resource and object.
pub fn forbidden(attrs: &Attributes, user: &str, reason: &str) -> ApiError {
    let mut why = attrs.forbidden_message(user);
    if !reason.is_empty() {
        why.push_str(": ");
        why.push_str(reason);
    }
    forbidden_status(&attrs.api_group, &attrs.resource, &attrs.name, &why)
}

/// kube-apiserver's `NewForbidden(groupResource, name, err)`: the message prefix and `details`.
pub fn forbidden_status(group: &str, resource: &str, name: &str, why: &str) -> ApiError {
    let message = if resource.is_empty() {
        format!("forbidden: {why}")
    } else {
        let qualified = if group.is_empty() {
            resource.to_string()
        } else {
            format!("{resource}.{group}")
        };
        if name.is_empty() {
            format!("{qualified} is forbidden: {why}")
        } else {
            format!("{qualified} {name:?} is forbidden: {why}")
        }
    };
    let mut e = ApiError::forbidden(message);
    let some = |s: &str| (!s.is_empty()).then(|| s.to_string());
    e.details = Some(Box::new(Details {
        name: some(name),
        group: some(group),
        kind: some(resource),
        causes: Vec::new(),
    }));
    e
}
