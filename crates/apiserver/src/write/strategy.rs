//! Behaviour specific to a few built-in kinds (what kube-apiserver's per-kind "strategies" do):
//! Namespace phases and finalizers, Secret `stringData`, CRD validation/status/serving, and the
//! name rules that differ between kinds.

use base64::Engine;
use serde_json::{Map, Value, json};

use crate::state::ApiServer;
use crate::storage::errors::{ApiError, ApiResult, Cause};
use crate::storage::objects::meta_mut;
use crate::storage::registry::ResourceInfo;
use crate::storage::store::Obj;
use crate::storage::validation;

/// Finalizer kube-apiserver puts on CRDs so their instances are deleted before the CRD.
pub const CRD_CLEANUP: &str = "customresourcecleanup.apiextensions.k8s.io";

fn is(info: &ResourceInfo, group: &str, kind: &str) -> bool {
    info.builtin && info.group == group && info.kind == kind
}

/// The `metadata.name` rule of a kind.
pub fn name_rule(info: &ResourceInfo) -> fn(&str) -> Result<(), validation::ValidationError> {
    if !info.builtin {
        return validation::dns1123_subdomain;
    }
    match (info.group.as_str(), info.kind.as_str()) {
        ("", "Namespace") | ("", "Service") => validation::dns1123_label,
        ("rbac.authorization.k8s.io", _) => validation::path_segment_name,
        _ => validation::dns1123_subdomain,
    }
}

fn string_data_to_data(obj: &mut Value) {
    let Some(m) = obj.as_object_mut() else { return };
    let Some(Value::Object(sd)) = m.remove("stringData") else {
        return;
    };
    let data = m.entry("data").or_insert_with(|| Value::Object(Map::new()));
    if !data.is_object() {
        *data = Value::Object(Map::new());
    }
    if let Value::Object(d) = data {
        for (k, v) in sd {
            let s = match v {
                Value::String(s) => s,
                other => other.to_string(),
            };
            d.insert(
                k,
                json!(base64::engine::general_purpose::STANDARD.encode(s)),
            );
        }
    }
}

/// Defaults and rewrites applied on create.
pub fn prepare_create(info: &ResourceInfo, obj: &mut Value) -> ApiResult<()> {
    if is(info, "", "Namespace") {
        let name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if let Some(m) = obj.as_object_mut() {
            m.insert("status".into(), json!({"phase": "Active"}));
            let spec = m.entry("spec").or_insert_with(|| json!({}));
            if spec.get("finalizers").is_none()
                && let Some(s) = spec.as_object_mut()
            {
                s.insert("finalizers".into(), json!(["kubernetes"]));
            }
        }
        set_ns_label(obj, &name);
    } else if is(info, "", "Secret") {
        string_data_to_data(obj);
        if let Some(m) = obj.as_object_mut() {
            m.entry("type").or_insert_with(|| json!("Opaque"));
        }
    } else if is(info, "apiextensions.k8s.io", "CustomResourceDefinition") {
        check_crd(obj)?;
        crate::storage::crd::set_status(obj);
        let m = meta_mut(obj);
        let fins = m.entry("finalizers").or_insert_with(|| json!([]));
        if let Some(a) = fins.as_array_mut()
            && !a.iter().any(|f| f == CRD_CLEANUP)
        {
            a.push(json!(CRD_CLEANUP));
        }
    }
    Ok(())
}

fn set_ns_label(obj: &mut Value, name: &str) {
    if name.is_empty() {
        return;
    }
    let m = meta_mut(obj);
    let labels = m.entry("labels").or_insert_with(|| json!({}));
    if !labels.is_object() {
        *labels = json!({});
    }
    if let Some(l) = labels.as_object_mut() {
        l.insert("kubernetes.io/metadata.name".into(), json!(name));
    }
}

fn check_crd(obj: &Value) -> ApiResult<()> {
    crate::storage::crd::infos_from_crd(obj)
        .map(|_| ())
        .map_err(|causes| {
            let name = obj
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("");
            ApiError::invalid(
                "apiextensions.k8s.io",
                "CustomResourceDefinition",
                name,
                causes,
            )
        })
}

/// Rewrites applied on update (after immutable metadata has been restored).
pub fn prepare_update(info: &ResourceInfo, old: &Value, new: &mut Value) -> ApiResult<()> {
    if is(info, "rbac.authorization.k8s.io", "RoleBinding")
        || is(info, "rbac.authorization.k8s.io", "ClusterRoleBinding")
    {
        check_role_ref_unchanged(info, old, new)?;
    }
    if is(info, "", "Namespace") {
        let name = new
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        set_ns_label(new, &name);
    } else if is(info, "", "Secret") {
        string_data_to_data(new);
    } else if is(info, "apiextensions.k8s.io", "CustomResourceDefinition") {
        check_crd(new)?;
        crate::storage::crd::set_status(new);
    }
    Ok(())
}

/// A binding's `roleRef` is immutable (kube-apiserver: a binding is deleted and recreated to
/// point at another role, so that whoever may bind the new role is checked afresh). 422 with
/// kube-apiserver's wording, which prints the Go value of the new roleRef.
fn check_role_ref_unchanged(info: &ResourceInfo, old: &Value, new: &Value) -> ApiResult<()> {
    let part = |v: &Value, f: &str| {
        v.get("roleRef")
            .and_then(|r| r.get(f))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let of = |v: &Value| [part(v, "apiGroup"), part(v, "kind"), part(v, "name")];
    let [group, kind, name] = of(new);
    if of(old) == [group.clone(), kind.clone(), name.clone()] {
        return Ok(());
    }
    let binding = new
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    Err(ApiError::invalid(
        &info.group,
        &info.kind,
        binding,
        vec![Cause::invalid(
            "roleRef",
            format!(
                "Invalid value: rbac.RoleRef{{APIGroup:{group:?}, Kind:{kind:?}, Name:{name:?}}}: cannot change roleRef"
            ),
        )],
    ))
}

/// Kind-specific validation beyond metadata and CRD schemas.
pub fn validate(info: &ResourceInfo, obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    if is(info, "", "ConfigMap") || is(info, "", "Secret") {
        for field in ["data", "binaryData"] {
            if let Some(v) = obj.get(field).filter(|v| !v.is_null()) {
                match v.as_object() {
                    Some(m) => {
                        for (k, val) in m {
                            if !val.is_string() {
                                causes.push(Cause::invalid(
                                    format!("{field}[{k}]"),
                                    "must be a string",
                                ));
                            }
                            let key_ok = !k.is_empty()
                                && k.len() <= 253
                                && k.chars().all(|c| {
                                    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')
                                });
                            if !key_ok {
                                causes.push(Cause::invalid(
                                    field.to_string(),
                                    format!("Invalid value: {k:?}: a valid config key must consist of alphanumeric characters, '-', '_' or '.'"),
                                ));
                            }
                        }
                    }
                    None => causes.push(Cause::invalid(
                        field.to_string(),
                        "must be a map of strings",
                    )),
                }
            }
        }
    }
    if is(info, "", "Secret")
        && obj.get("type").and_then(Value::as_str)
            == Some(crate::security::service_accounts::TOKEN_SECRET_TYPE)
        && obj
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(crate::security::service_accounts::SA_NAME_ANNOTATION))
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
    {
        // The token controller needs to know which ServiceAccount the token is for.
        causes.push(Cause::required(format!(
            "metadata.annotations[{}]",
            crate::security::service_accounts::SA_NAME_ANNOTATION
        )));
    }
    causes
}

/// Whether something other than `metadata.finalizers` keeps the object from being removed
/// (a namespace's `spec.finalizers`).
pub fn blocks_deletion(info: &ResourceInfo, obj: &Value) -> bool {
    is(info, "", "Namespace")
        && obj
            .pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
}

/// Changes made when an object is marked for deletion.
pub fn on_delete_marked(info: &ResourceInfo, obj: &mut Value) {
    if is(info, "", "Namespace")
        && let Some(m) = obj.as_object_mut()
    {
        let st = m.entry("status").or_insert_with(|| json!({}));
        if let Some(s) = st.as_object_mut() {
            s.insert("phase".into(), json!("Terminating"));
        }
    }
}

/// Side effects after a successful write: CRDs start or stop being served.
pub fn after_write(srv: &ApiServer, info: &ResourceInfo, obj: &Obj, deleted: bool) {
    if !is(info, "apiextensions.k8s.io", "CustomResourceDefinition") {
        return;
    }
    let Ok(v) = serde_json::from_slice::<Value>(&obj.json()) else {
        return;
    };
    let name = v
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    if deleted {
        srv.registry().remove_crd(name);
    } else if let Ok(infos) = crate::storage::crd::infos_from_crd(&v) {
        srv.registry().set_crd(name, infos);
    }
}
