//! `helm.valuesFrom`: Helm values kept in the downstream cluster, in ConfigMaps and Secrets, so
//! that a cluster's own secrets never travel through git or the manager. Read at each deploy and
//! merged over the bundle's values in order (per entry the ConfigMap, then the Secret: later
//! wins, nested maps merge), as upstream's agent does.

use fleet_api::types::{BundleDeploymentOptions, KeySelector};
use fleet_render::helm::values::{Values, merge_maps, parse_values_yaml};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};

/// The key read when an entry names none.
pub const DEFAULT_KEY: &str = "values.yaml";

/// Why the values of a `valuesFrom` entry could not be read. Each names the object and key, so
/// the BundleDeployment's status says which one to fix.
#[derive(Debug, thiserror::Error)]
pub enum ValuesFromError {
    /// The ConfigMap or Secret does not exist (yet): retried, it may be created later.
    #[error("{kind} {namespace}/{name} not found, can't use it in valuesFrom")]
    NotFound {
        /// `configmap` or `secret`.
        kind: &'static str,
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
    /// The object exists but has no such key.
    #[error("key {key} is missing from {kind} {namespace}/{name}, can't use it in valuesFrom")]
    MissingKey {
        /// `configmap` or `secret`.
        kind: &'static str,
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// The key looked for.
        key: String,
    },
    /// The key's content is not a YAML mapping.
    #[error("{0}")]
    Parse(#[from] fleet_render::helm::values::ValuesError),
    /// The downstream API could not be read.
    #[error(
        "reading {kind} {namespace}/{name} for valuesFrom: {}",
        crate::objects::api_message(source)
    )]
    Read {
        /// `configmap` or `secret`.
        kind: &'static str,
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// What the API said.
        source: Box<kube::Error>,
    },
}

/// The options with every `valuesFrom` entry merged into `helm.values`. `release_namespace` is
/// the namespace of entries that name none. Options without `valuesFrom` come back unchanged,
/// with no request made.
pub async fn resolve(
    client: &kube::Client,
    opts: &BundleDeploymentOptions,
    release_namespace: &str,
) -> Result<BundleDeploymentOptions, ValuesFromError> {
    let Some(helm) = opts.helm.as_ref().filter(|h| !h.values_from.is_empty()) else {
        return Ok(opts.clone());
    };
    let mut values: Values = helm.values.clone().unwrap_or_default();
    for entry in &helm.values_from {
        if let Some(sel) = &entry.config_map_key_ref {
            let text = read(
                client,
                "configmap",
                sel,
                release_namespace,
                |cm: ConfigMap, key| cm.data.and_then(|mut d| d.remove(key)),
            )
            .await?;
            values = merge_maps(values, parse(&text, "configmap", sel, release_namespace)?);
        }
        // The Secret after the ConfigMap, as upstream (compatible with its first releases).
        if let Some(sel) = &entry.secret_key_ref {
            let text = read(
                client,
                "secret",
                sel,
                release_namespace,
                |s: Secret, key| {
                    s.data
                        .and_then(|mut d| d.remove(key))
                        .map(|b| String::from_utf8_lossy(&b.0).into_owned())
                },
            )
            .await?;
            values = merge_maps(values, parse(&text, "secret", sel, release_namespace)?);
        }
    }
    let mut out = opts.clone();
    if let Some(h) = out.helm.as_mut() {
        h.values = Some(values);
    }
    Ok(out)
}

fn namespace_of<'a>(sel: &'a KeySelector, release_namespace: &'a str) -> &'a str {
    if sel.namespace.is_empty() {
        release_namespace
    } else {
        &sel.namespace
    }
}

fn key_of(sel: &KeySelector) -> &str {
    if sel.key.is_empty() {
        DEFAULT_KEY
    } else {
        &sel.key
    }
}

/// Reads one key of a ConfigMap or Secret.
async fn read<K>(
    client: &kube::Client,
    kind: &'static str,
    sel: &KeySelector,
    release_namespace: &str,
    value_of: impl FnOnce(K, &str) -> Option<String>,
) -> Result<String, ValuesFromError>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned,
    K::DynamicType: Default,
{
    let namespace = namespace_of(sel, release_namespace).to_string();
    let key = key_of(sel);
    let api: kube::Api<K> = kube::Api::namespaced(client.clone(), &namespace);
    let obj = api
        .get_opt(&sel.name)
        .await
        .map_err(|source| ValuesFromError::Read {
            kind,
            namespace: namespace.clone(),
            name: sel.name.clone(),
            source: Box::new(source),
        })?
        .ok_or_else(|| ValuesFromError::NotFound {
            kind,
            namespace: namespace.clone(),
            name: sel.name.clone(),
        })?;
    value_of(obj, key).ok_or_else(|| ValuesFromError::MissingKey {
        kind,
        namespace,
        name: sel.name.clone(),
        key: key.to_string(),
    })
}

fn parse(
    text: &str,
    kind: &str,
    sel: &KeySelector,
    release_namespace: &str,
) -> Result<Values, ValuesFromError> {
    let source = format!(
        "{kind} {}/{} key {}",
        namespace_of(sel, release_namespace),
        sel.name,
        key_of(sel)
    );
    Ok(parse_values_yaml(text, &source)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleet_api::types::{HelmOptions, ValuesFrom};
    use serde_json::json;

    /// A router serving one ConfigMap and one Secret in `ns`, as the downstream would.
    fn downstream() -> kube::Client {
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD
            .encode("db:\n  password: s3cret\nreplicas: 3\n");
        let app = axum::Router::new()
            .route(
                "/api/v1/namespaces/ns/configmaps/vals",
                axum::routing::get(|| async {
                    axum::Json(json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "vals", "namespace": "ns"},
                        "data": {"values.yaml": "db:\n  host: db.local\n  password: none\nreplicas: 2\n",
                                 "broken": "- a list\n"}}))
                }),
            )
            .route(
                "/api/v1/namespaces/other/secrets/creds",
                axum::routing::get(move || async move {
                    axum::Json(json!({"apiVersion": "v1", "kind": "Secret",
                        "metadata": {"name": "creds", "namespace": "other"},
                        "data": {"v": b64}}))
                }),
            )
            .fallback(|| async {
                (
                    axum::http::StatusCode::NOT_FOUND,
                    axum::Json(json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                        "reason": "NotFound", "code": 404, "message": "not found"})),
                )
            });
        fleet_kube::in_process(app, "default")
    }

    fn opts(entries: Vec<ValuesFrom>) -> BundleDeploymentOptions {
        BundleDeploymentOptions {
            helm: Some(HelmOptions {
                values: json!({"db": {"port": 5432}, "replicas": 1, "name": "app"})
                    .as_object()
                    .cloned(),
                values_from: entries,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn sel(name: &str, namespace: &str, key: &str) -> KeySelector {
        KeySelector {
            name: name.into(),
            namespace: namespace.into(),
            key: key.into(),
        }
    }

    #[tokio::test]
    async fn configmap_then_secret_merge_over_the_bundle_values() {
        let o = opts(vec![ValuesFrom {
            config_map_key_ref: Some(sel("vals", "", "")),
            secret_key_ref: Some(sel("creds", "other", "v")),
        }]);
        let got = resolve(&downstream(), &o, "ns").await.expect("resolved");
        let values = got.helm.unwrap().values.unwrap();
        assert_eq!(
            serde_json::Value::Object(values),
            json!({"db": {"port": 5432, "host": "db.local", "password": "s3cret"},
                   "replicas": 3.0, "name": "app"})
        );
    }

    #[tokio::test]
    async fn without_values_from_nothing_is_read() {
        let o = opts(vec![]);
        // A client that fails every request proves no request is made.
        let none = fleet_kube::in_process(
            axum::Router::new().fallback(|| async { axum::http::StatusCode::IM_A_TEAPOT }),
            "default",
        );
        assert_eq!(resolve(&none, &o, "ns").await.expect("unchanged"), o);
    }

    #[tokio::test]
    async fn errors_name_the_object_and_key() {
        let cases = [
            (
                ValuesFrom {
                    config_map_key_ref: Some(sel("nope", "", "")),
                    secret_key_ref: None,
                },
                "configmap ns/nope not found, can't use it in valuesFrom",
            ),
            (
                ValuesFrom {
                    config_map_key_ref: Some(sel("vals", "", "other.yaml")),
                    secret_key_ref: None,
                },
                "key other.yaml is missing from configmap ns/vals, can't use it in valuesFrom",
            ),
            (
                ValuesFrom {
                    config_map_key_ref: None,
                    secret_key_ref: Some(sel("creds", "", "v")),
                },
                "secret ns/creds not found, can't use it in valuesFrom",
            ),
            (
                ValuesFrom {
                    config_map_key_ref: Some(sel("vals", "", "broken")),
                    secret_key_ref: None,
                },
                "configmap ns/vals key broken: error unmarshaling JSON",
            ),
        ];
        for (entry, want) in cases {
            let err = resolve(&downstream(), &opts(vec![entry]), "ns")
                .await
                .expect_err("must fail");
            assert!(
                err.to_string().contains(want),
                "{err} does not contain {want}"
            );
        }
    }
}
