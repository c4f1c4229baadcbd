//! Server-side apply of arbitrary manifests (what `kubectl apply --server-side -f` does), for
//! commands that hand a generated manifest to a cluster without shelling out to kubectl.

use std::collections::HashMap;

use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use kube::discovery::{ApiCapabilities, ApiResource, Scope};

/// Why a manifest could not be applied; names the document at fault.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// The YAML stream did not parse.
    #[error("document {index}: {message}")]
    Parse {
        /// 1-based position in the stream.
        index: usize,
        /// What the parser said.
        message: String,
    },
    /// A document lacks apiVersion, kind or metadata.name.
    #[error("document {index}: missing {field}")]
    Missing {
        /// 1-based position in the stream.
        index: usize,
        /// The absent field.
        field: &'static str,
    },
    /// The API server refused or discovery failed.
    #[error("{kind} {name}: {source}")]
    Api {
        /// Kind of the object.
        kind: String,
        /// Name (and namespace) of the object.
        name: String,
        /// What the server said.
        source: kube::Error,
    },
}

/// Applies every document of a YAML stream in order with server-side apply (forced, as the field
/// manager owns these objects). Namespaced objects without a namespace go to `default_namespace`.
/// Returns `kind/name` of each applied object.
pub async fn apply_yaml(
    client: &kube::Client,
    yaml: &str,
    field_manager: &str,
    default_namespace: &str,
) -> Result<Vec<String>, ApplyError> {
    let docs: Vec<serde_json::Value> =
        serde_saphyr::from_multiple(yaml).map_err(|e| ApplyError::Parse {
            index: 0,
            message: e.to_string(),
        })?;
    let mut kinds: HashMap<GroupVersionKind, (ApiResource, ApiCapabilities)> = HashMap::new();
    let mut applied = Vec::new();
    for (i, doc) in docs.into_iter().enumerate() {
        let index = i + 1;
        if doc.is_null() {
            continue;
        }
        let obj: DynamicObject = serde_json::from_value(doc).map_err(|e| ApplyError::Parse {
            index,
            message: e.to_string(),
        })?;
        let types = obj.types.clone().ok_or(ApplyError::Missing {
            index,
            field: "apiVersion/kind",
        })?;
        let name = obj.metadata.name.clone().ok_or(ApplyError::Missing {
            index,
            field: "metadata.name",
        })?;
        let gvk = GroupVersionKind::try_from(&types).map_err(|e| ApplyError::Parse {
            index,
            message: e.to_string(),
        })?;
        let api_err = |source| ApplyError::Api {
            kind: types.kind.clone(),
            name: name.clone(),
            source,
        };
        if !kinds.contains_key(&gvk) {
            let found = kube::discovery::pinned_kind(client, &gvk)
                .await
                .map_err(api_err)?;
            kinds.insert(gvk.clone(), found);
        }
        let Some((ar, caps)) = kinds.get(&gvk) else {
            continue;
        };
        let api: Api<DynamicObject> = match caps.scope {
            Scope::Cluster => Api::all_with(client.clone(), ar),
            Scope::Namespaced => Api::namespaced_with(
                client.clone(),
                obj.metadata
                    .namespace
                    .as_deref()
                    .unwrap_or(default_namespace),
                ar,
            ),
        };
        let pp = PatchParams::apply(field_manager).force();
        api.patch(&name, &pp, &Patch::Apply(&obj))
            .await
            .map_err(api_err)?;
        applied.push(format!("{}/{}", types.kind, name));
    }
    Ok(applied)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleet_apiserver::{ApiServer, ApiServerConfig};
    use k8s_openapi::api::core::v1::ConfigMap;

    async fn client() -> (ApiServer, kube::Client) {
        let srv = ApiServer::new(ApiServerConfig::in_memory())
            .await
            .expect("in-memory server");
        let c = crate::in_process(srv.router(), "default");
        (srv, c)
    }

    #[tokio::test]
    async fn applies_each_document_and_again_idempotently() {
        let (_srv, c) = client().await;
        let yaml = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n---\n\
                    apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: a\ndata:\n  k: v\n---\n\
                    apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm2\ndata:\n  k: w\n";
        let done = apply_yaml(&c, yaml, "test", "default")
            .await
            .expect("apply");
        assert_eq!(done, ["Namespace/a", "ConfigMap/cm", "ConfigMap/cm2"]);
        let again = apply_yaml(&c, yaml, "test", "default")
            .await
            .expect("re-apply");
        assert_eq!(again.len(), 3);
        let cm = Api::<ConfigMap>::namespaced(c.clone(), "a")
            .get("cm")
            .await
            .expect("cm");
        assert_eq!(
            cm.data.unwrap_or_default().get("k").map(String::as_str),
            Some("v")
        );
        Api::<ConfigMap>::namespaced(c, "default")
            .get("cm2")
            .await
            .expect("defaulted namespace");
    }

    #[tokio::test]
    async fn bad_documents_are_named() {
        let (_srv, c) = client().await;
        let err = apply_yaml(
            &c,
            "kind: ConfigMap\nmetadata:\n  name: x\n",
            "t",
            "default",
        )
        .await
        .expect_err("no apiVersion");
        assert!(err.to_string().starts_with("document 1:"), "{err}");
        let err = apply_yaml(
            &c,
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ok\n---\napiVersion: example.com/v1\nkind: Nope\nmetadata:\n  name: x\n",
            "t",
            "default",
        )
        .await
        .expect_err("unknown kind");
        assert!(err.to_string().starts_with("Nope x:"), "{err}");
        let err = apply_yaml(&c, "a: [", "t", "default")
            .await
            .expect_err("bad yaml");
        assert!(matches!(err, ApplyError::Parse { .. }), "{err}");
    }
}
