//! Online `fleet apply`: writes the built Bundles to a cluster (Kubernetes API through a kube
//! client), so the CLI and the gitjob controller share one implementation: stale bundles of the
//! repo are pruned (their overlapping resources recorded in `spec.overwrites`), each bundle is
//! created or updated with its values moved into the values Secret (`valuesHash`), and
//! ImageScans are upserted.

use crate::read::BuiltBundle;

/// Why an online apply failed.
#[derive(Debug, thiserror::Error)]
pub enum OnlineError {
    /// A Kubernetes API call failed; `context` says which.
    #[error("{context}: {source}")]
    Api {
        /// The operation, e.g. `creating bundle r-a`.
        context: String,
        /// The client error.
        #[source]
        source: kube::Error,
    },
    /// Upstream refuses the write (bundle being deleted, HelmOp bundle of the same name).
    #[error("{0}")]
    Refused(String),
    /// The bundle's values could not be serialized for the values Secret.
    #[error("{0}")]
    Values(String),
}

fn ctx(context: impl Into<String>) -> impl FnOnce(kube::Error) -> OnlineError {
    let context = context.into();
    move |source| OnlineError::Api { context, source }
}

/// Kind, name and namespace of the first object in a resource (for `spec.overwrites`).
fn resource_identity(r: &fleet_api::BundleResource) -> Option<fleet_api::OverwrittenResource> {
    let data = crate::read::decode_resource(r).ok()?;
    let text = String::from_utf8(data).ok()?;
    let docs: Vec<serde_json::Value> = serde_saphyr::from_multiple(&text).ok()?;
    let d = docs.into_iter().find(|d| d.get("kind").is_some())?;
    Some(fleet_api::OverwrittenResource {
        kind: d["kind"].as_str()?.to_string(),
        name: d
            .pointer("/metadata/name")
            .and_then(|v| v.as_str())
            .unwrap_or("")
            .to_string(),
        namespace: d
            .pointer("/metadata/namespace")
            .and_then(|v| v.as_str())
            .unwrap_or("")
            .to_string(),
    })
}

/// Creates/updates every bundle with its values Secret, after pruning bundles of `repo` that
/// were not produced (recording their overlapping resources in `spec.overwrites`). Each
/// change is reported through `log` (`created (bundle): ns/name`, ...), as `fleet apply`
/// prints them.
pub async fn apply_bundles(
    client: kube::Client,
    repo: &str,
    namespace: &str,
    mut bundles: Vec<BuiltBundle>,
    log: &mut (dyn FnMut(String) + Send),
) -> Result<(), OnlineError> {
    use fleet_api::Bundle;
    use k8s_openapi::api::core::v1::Secret;
    use kube::api::{Api, DeleteParams, ListParams, PostParams};

    let api: Api<Bundle> = Api::namespaced(client.clone(), namespace);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let produced: std::collections::BTreeSet<String> = bundles
        .iter()
        .filter_map(|b| b.bundle.metadata.name.clone())
        .collect();
    let existing = api
        .list(&ListParams::default().labels(&format!("{}={repo}", fleet_api::keys::REPO_LABEL)))
        .await
        .map_err(ctx("listing bundles"))?;
    for old in existing.items {
        let Some(old_name) = old.metadata.name.clone() else {
            continue;
        };
        if produced.contains(&old_name) {
            continue;
        }
        for or in &old.spec.resources {
            for nb in bundles.iter_mut() {
                let matches: Vec<_> = nb
                    .bundle
                    .spec
                    .resources
                    .iter()
                    .filter(|r| r.name == or.name)
                    .cloned()
                    .collect();
                for nr in matches {
                    if let (Some(a), Some(b)) = (resource_identity(&nr), resource_identity(or))
                        && a == b
                    {
                        nb.bundle.spec.options.overwrites.push(a);
                    }
                }
            }
        }
        api.delete(&old_name, &DeleteParams::default())
            .await
            .map_err(ctx(format!("deleting stale bundle {old_name}")))?;
        log(format!("deleted (bundle): {namespace}/{old_name}"));
    }
    for b in bundles {
        let mut bundle = b.bundle;
        let name = bundle.metadata.name.clone().unwrap_or_default();
        let current = api
            .get_opt(&name)
            .await
            .map_err(ctx(format!("reading bundle {name}")))?;
        if let Some(c) = &current {
            if c.metadata.deletion_timestamp.is_some() {
                return Err(OnlineError::Refused(format!(
                    "the bundle {name:?} is being deleted, cannot create during a delete operation"
                )));
            }
            if c.spec.helm_op_options.is_some() {
                return Err(OnlineError::Refused(format!(
                    "a helmOps bundle with name {name:?} already exists"
                )));
            }
        }
        let (hash, data) = crate::values::extract_values(&bundle).map_err(OnlineError::Values)?;
        if !hash.is_empty() {
            crate::values::clear_values(&mut bundle);
        } else if secrets
            .get_opt(&name)
            .await
            .map_err(ctx(format!("reading values secret {name}")))?
            .is_some()
        {
            secrets
                .delete(&name, &DeleteParams::default())
                .await
                .map_err(ctx(format!("deleting values secret {name}")))?;
        }
        bundle.spec.values_hash = hash.clone();
        let saved = match current {
            Some(mut c) => {
                c.spec = bundle.spec;
                c.metadata.labels = bundle.metadata.labels;
                c.metadata.annotations = bundle.metadata.annotations;
                let r = api
                    .replace(&name, &PostParams::default(), &c)
                    .await
                    .map_err(ctx(format!("updating bundle {name}")))?;
                log(format!("updated (bundle): {namespace}/{name}"));
                r
            }
            None => {
                bundle.metadata.namespace = Some(namespace.to_string());
                let r = api
                    .create(&PostParams::default(), &bundle)
                    .await
                    .map_err(ctx(format!("creating bundle {name}")))?;
                log(format!("created (bundle): {namespace}/{name}"));
                r
            }
        };
        if !data.is_empty() {
            let owner = k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
                api_version: fleet_api::keys::API_VERSION.into(),
                kind: "Bundle".into(),
                name: name.clone(),
                uid: saved.metadata.uid.clone().unwrap_or_default(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            };
            let mut secret = Secret {
                metadata: kube::api::ObjectMeta {
                    name: Some(name.clone()),
                    namespace: Some(namespace.into()),
                    labels: saved.metadata.labels.clone(),
                    owner_references: Some(vec![owner]),
                    ..Default::default()
                },
                type_: Some(fleet_api::keys::SECRET_TYPE_BUNDLE_VALUES.into()),
                data: Some(
                    data.into_iter()
                        .map(|(k, v)| (k, k8s_openapi::ByteString(v)))
                        .collect(),
                ),
                ..Default::default()
            };
            match secrets
                .get_opt(&name)
                .await
                .map_err(ctx(format!("reading values secret {name}")))?
            {
                Some(old) => {
                    secret.metadata.resource_version = old.metadata.resource_version;
                    secrets
                        .replace(&name, &PostParams::default(), &secret)
                        .await
                        .map_err(ctx(format!("updating values secret {name}")))?;
                }
                None => {
                    secrets
                        .create(&PostParams::default(), &secret)
                        .await
                        .map_err(ctx(format!("creating values secret {name}")))?;
                }
            }
        }
        for mut scan in b.scans {
            let scans: Api<fleet_api::ImageScan> = Api::namespaced(client.clone(), namespace);
            let sname = scan.metadata.name.clone().unwrap_or_default();
            scan.spec.gitrepo_name = saved
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(fleet_api::keys::REPO_LABEL).cloned())
                .unwrap_or_default();
            scan.metadata.labels = saved.metadata.labels.clone();
            scan.metadata.annotations = saved.metadata.annotations.clone();
            match scans
                .get_opt(&sname)
                .await
                .map_err(ctx(format!("reading image scan {sname}")))?
            {
                Some(old) => {
                    scan.metadata.resource_version = old.metadata.resource_version;
                    scans
                        .replace(&sname, &PostParams::default(), &scan)
                        .await
                        .map_err(ctx(format!("updating image scan {sname}")))?;
                }
                None => {
                    scans
                        .create(&PostParams::default(), &scan)
                        .await
                        .map_err(ctx(format!("creating image scan {sname}")))?;
                }
            }
        }
    }
    Ok(())
}
