//! Escalation prevention and validation for writes of RBAC objects (kube-apiserver's RBAC
//! storage strategy): the write path calls it after metadata validation.

use serde_json::Value;

use crate::security::policy::{current_user, forbidden_status};
use crate::security::rbac::{self, Kind};
use crate::state::ApiServer;
use crate::storage::errors::{ApiError, ApiResult, Cause};
use crate::storage::registry::ResourceInfo;

/// Escalation prevention and validation for writes of Roles, ClusterRoles, RoleBindings and
/// ClusterRoleBindings, called by the write path after metadata validation: malformed rules or
/// subjects are 422; granting (or binding a role with) permissions the writer does not hold is
/// 403 unless the writer may `escalate`/`bind`, as kube-apiserver's RBAC storage decides.
pub(crate) fn check_rbac_write(srv: &ApiServer, info: &ResourceInfo, obj: &Value) -> ApiResult<()> {
    if !info.builtin || info.group != rbac::GROUP {
        return Ok(());
    }
    let Some(kind) = Kind::parse(&info.kind) else {
        return Ok(());
    };
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    if let Err(e) = rbac::validate(obj) {
        let cause = if e.message == "Required value" {
            Cause::required(e.field)
        } else {
            Cause::invalid(e.field, e.message)
        };
        return Err(ApiError::invalid(
            &info.group,
            &info.kind,
            name,
            vec![cause],
        ));
    }
    let Some(user) = current_user() else {
        return Ok(());
    };
    let policy = srv.inner.authz.read();
    let decision = match kind {
        Kind::Role | Kind::ClusterRole => policy.check_role_write(&user, obj),
        Kind::RoleBinding | Kind::ClusterRoleBinding => policy.check_binding_write(&user, obj),
    };
    match decision {
        Ok(d) if d.allowed => Ok(()),
        Ok(d) => Err(forbidden_status(&info.group, &info.plural, name, &d.reason)),
        Err(e) => Err(ApiError::invalid(
            &info.group,
            &info.kind,
            name,
            vec![Cause::invalid(e.field, e.message)],
        )),
    }
}
