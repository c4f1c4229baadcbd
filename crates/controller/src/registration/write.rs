//! Create-or-update that writes only the difference: an object is created when missing, merge-
//! patched when a field we set differs, and left alone otherwise (no write at all).

use std::fmt::Debug;

use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The field manager of every registration write.
pub const FIELD_MANAGER: &str = "fleet-registration";

/// Makes `desired` exist with (at least) the fields it sets; returns the live object.
pub async fn ensure<K>(api: &Api<K>, desired: &K) -> Result<K, kube::Error>
where
    K: Resource + Serialize + DeserializeOwned + Clone + Debug,
{
    let name = desired.meta().name.clone().unwrap_or_default();
    let existing = match api.get_opt(&name).await? {
        Some(e) => e,
        None => {
            let pp = PostParams {
                field_manager: Some(FIELD_MANAGER.into()),
                ..Default::default()
            };
            match api.create(&pp, desired).await {
                Ok(created) => return Ok(created),
                Err(kube::Error::Api(e)) if e.code == 409 => api.get(&name).await?,
                Err(e) => return Err(e),
            }
        }
    };
    let want = wanted_fields(desired)?;
    let have = serde_json::to_value(&existing).map_err(kube::Error::SerdeError)?;
    if is_subset(&want, &have) {
        return Ok(existing);
    }
    api.patch(&name, &patch_params(), &Patch::Merge(&want))
        .await
}

/// Patch parameters naming our field manager.
pub fn patch_params() -> PatchParams {
    PatchParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..Default::default()
    }
}

/// The desired object minus metadata the server owns (only labels, annotations and owner
/// references of metadata are ours to set).
fn wanted_fields<K: Serialize>(desired: &K) -> Result<Value, kube::Error> {
    let mut v = serde_json::to_value(desired).map_err(kube::Error::SerdeError)?;
    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.retain(|k, _| matches!(k.as_str(), "labels" | "annotations" | "ownerReferences"));
    }
    if let Some(o) = v.as_object_mut() {
        o.remove("status");
    }
    Ok(v)
}

/// Whether every field of `want` has the same value in `have` (objects recursively; arrays and
/// scalars must be equal).
pub fn is_subset(want: &Value, have: &Value) -> bool {
    match (want, have) {
        (Value::Object(w), Value::Object(h)) => w
            .iter()
            .all(|(k, wv)| h.get(k).is_some_and(|hv| is_subset(wv, hv)) || wv.is_null()),
        _ => want == have,
    }
}

/// Deletes `name`, treating "already gone" as success.
pub async fn delete_if_present<K>(api: &Api<K>, name: &str) -> Result<(), kube::Error>
where
    K: Resource + DeserializeOwned + Clone + Debug,
{
    match api.delete(name, &Default::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn subset_ignores_extra_server_fields() {
        let want = json!({"metadata": {"labels": {"a": "b"}}, "data": {"k": "dg=="}});
        let have = json!({"metadata": {"labels": {"a": "b", "x": "y"}, "uid": "u"}, "data": {"k": "dg==", "token": "t"}});
        assert!(is_subset(&want, &have));
        assert!(!is_subset(&json!({"data": {"k": "other"}}), &have));
        assert!(!is_subset(
            &json!({"rules": [1]}),
            &json!({"rules": [1, 2]})
        ));
    }
}
