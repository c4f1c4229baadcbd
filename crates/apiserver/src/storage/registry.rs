//! The table of served resources (built-in kinds plus CRD versions), looked up on every request and
//! rendered by discovery. CRD entries come and go at runtime, so the table sits behind a lock that
//! is only held for map lookups.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use crate::storage::crd::schema::Structural;

/// Where a custom resource keeps its replica counts, for the `scale` subresource.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScalePaths {
    /// JSON path (dotted, without leading `.`) of the desired replicas, e.g. `spec.replicas`.
    pub spec_replicas: String,
    /// JSON path of the observed replicas, e.g. `status.replicas`.
    pub status_replicas: String,
    /// JSON path of the label selector string, when the resource exposes one.
    pub label_selector: Option<String>,
}

/// Everything the REST layer needs to know about one served (group, version, resource).
#[derive(Clone, Debug)]
pub struct ResourceInfo {
    /// API group; empty for the legacy core group.
    pub group: String,
    /// API version, e.g. `v1`.
    pub version: String,
    /// Kind, e.g. `Deployment`.
    pub kind: String,
    /// List kind, e.g. `DeploymentList`.
    pub list_kind: String,
    /// URL path segment, e.g. `deployments`.
    pub plural: String,
    /// Lowercase singular name, used by kubectl (`kubectl get deployment`).
    pub singular: String,
    /// Whether objects live inside namespaces.
    pub namespaced: bool,
    /// Whether `/status` is served: status is then ignored on the main resource.
    pub status: bool,
    /// The `/scale` subresource, when served.
    pub scale: Option<ScalePaths>,
    /// Short names shown in discovery (`po`, `deploy`).
    pub short_names: Vec<String>,
    /// Categories shown in discovery (`all`).
    pub categories: Vec<String>,
    /// Built-in (compiled in) or defined by a CRD.
    pub builtin: bool,
    /// The structural schema of a CRD version (pruning, defaulting, validation).
    pub schema: Option<Arc<Structural>>,
    /// CRD `additionalPrinterColumns` (name, type, jsonPath), kept for Table output.
    pub printer_columns: Vec<PrinterColumn>,
}

/// One `additionalPrinterColumns` entry of a CRD version.
#[derive(Clone, Debug)]
pub struct PrinterColumn {
    /// Column header.
    pub name: String,
    /// OpenAPI type of the cell (`string`, `integer`, `date`, ...).
    pub kind: String,
    /// Simple JSONPath, e.g. `.spec.replicas`.
    pub json_path: String,
}

impl ResourceInfo {
    /// `apiVersion` string of this resource (`v1` or `group/version`).
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
    /// Group segment of storage keys (`core` for the legacy group).
    pub fn key_group(&self) -> &str {
        if self.group.is_empty() {
            "core"
        } else {
            &self.group
        }
    }
    /// Key prefix selecting all objects of the resource, or those of one namespace.
    pub fn prefix(&self, namespace: Option<&str>) -> String {
        match namespace {
            Some(ns) if self.namespaced => format!("/{}/{}/{ns}/", self.key_group(), self.plural),
            _ => format!("/{}/{}/", self.key_group(), self.plural),
        }
    }
    /// Storage key of one object.
    pub fn key(&self, namespace: Option<&str>, name: &str) -> String {
        let ns = if self.namespaced {
            namespace.unwrap_or("")
        } else {
            ""
        };
        format!("/{}/{}/{ns}/{name}", self.key_group(), self.plural)
    }
    /// Group-qualified resource name for messages (`deployments.apps`).
    pub fn group_resource(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }
}

/// Splits a storage key into (namespace, name); namespace is empty for cluster-scoped objects.
pub fn split_key(key: &str) -> (&str, &str) {
    let mut it = key.rsplitn(3, '/');
    let name = it.next().unwrap_or("");
    let ns = it.next().unwrap_or("");
    (ns, name)
}

/// The live resource table.
#[derive(Default)]
pub struct Registry {
    inner: RwLock<Inner>,
}

/// (group, version, plural) -> info.
type ByPath = BTreeMap<(String, String, String), Arc<ResourceInfo>>;
/// Group -> versions in preference order.
type Groups = BTreeMap<String, Vec<String>>;

#[derive(Default, Clone)]
struct Inner {
    /// Shared by every server of the process until a CRD changes this one's (copy on write):
    /// the built-in table is tens of KiB, and a process may run thousands of in-memory servers.
    by_path: Arc<ByPath>,
    /// Shared like `by_path`.
    groups: Arc<Groups>,
    /// CRD name -> the (group, version, plural) entries it registered.
    crds: BTreeMap<String, Vec<(String, String, String)>>,
}

impl Inner {
    fn insert(&mut self, crd: Option<&str>, info: ResourceInfo, preferred: bool) {
        let k = (
            info.group.clone(),
            info.version.clone(),
            info.plural.clone(),
        );
        let versions = Arc::make_mut(&mut self.groups)
            .entry(info.group.clone())
            .or_default();
        if !versions.contains(&info.version) {
            if preferred {
                versions.insert(0, info.version.clone())
            } else {
                versions.push(info.version.clone())
            }
        }
        if let Some(c) = crd {
            self.crds.entry(c.to_string()).or_default().push(k.clone());
        }
        Arc::make_mut(&mut self.by_path).insert(k, Arc::new(info));
    }
}

impl Registry {
    /// A registry holding the built-in kinds (the table built once per process and shared).
    pub fn with_builtins() -> Registry {
        static BUILTINS: std::sync::OnceLock<Inner> = std::sync::OnceLock::new();
        let inner = BUILTINS.get_or_init(|| {
            let mut inner = Inner::default();
            for info in crate::storage::builtin::builtin_resources() {
                inner.insert(None, info, false);
            }
            for info in crate::storage::review_kinds::resources() {
                inner.insert(None, info, false);
            }
            inner
        });
        Registry {
            inner: RwLock::new(inner.clone()),
        }
    }

    fn insert(&self, crd: Option<&str>, info: ResourceInfo, preferred: bool) {
        let Ok(mut g) = self.inner.write() else {
            return;
        };
        g.insert(crd, info, preferred);
    }

    /// Looks up a served resource by its URL coordinates.
    pub fn lookup(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceInfo>> {
        let g = self.inner.read().ok()?;
        g.by_path
            .get(&(group.to_string(), version.to_string(), plural.to_string()))
            .cloned()
    }

    /// Finds the resource serving a kind in a group (any version), preferring `version`.
    pub fn by_kind(&self, group: &str, version: &str, kind: &str) -> Option<Arc<ResourceInfo>> {
        let g = self.inner.read().ok()?;
        let mut found = None;
        for ((gr, v, _), info) in g.by_path.iter() {
            if gr == group && info.kind == kind {
                if v == version {
                    return Some(info.clone());
                }
                found.get_or_insert_with(|| info.clone());
            }
        }
        found
    }

    /// All resources of one group/version, for `/apis/G/V` discovery.
    pub fn resources(&self, group: &str, version: &str) -> Vec<Arc<ResourceInfo>> {
        let Ok(g) = self.inner.read() else {
            return Vec::new();
        };
        g.by_path
            .iter()
            .filter(|((gr, v, _), _)| gr == group && v == version)
            .map(|(_, i)| i.clone())
            .collect()
    }

    /// Every resource (all groups and versions), e.g. for namespace cleanup.
    pub fn all(&self) -> Vec<Arc<ResourceInfo>> {
        let Ok(g) = self.inner.read() else {
            return Vec::new();
        };
        g.by_path.values().cloned().collect()
    }

    /// Groups with their served versions, preferred first (core group under `""`).
    pub fn groups(&self) -> Vec<(String, Vec<String>)> {
        let Ok(g) = self.inner.read() else {
            return Vec::new();
        };
        g.groups
            .iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// Registers (or re-registers) all served versions of a CRD; `storage_first` lists the
    /// preferred version first.
    pub fn set_crd(&self, crd_name: &str, infos: Vec<ResourceInfo>) {
        self.remove_crd(crd_name);
        for (i, info) in infos.into_iter().enumerate() {
            self.insert(Some(crd_name), info, i == 0);
        }
    }

    /// Stops serving a CRD's versions.
    pub fn remove_crd(&self, crd_name: &str) {
        let Ok(mut g) = self.inner.write() else {
            return;
        };
        let Some(keys) = g.crds.remove(crd_name) else {
            return;
        };
        let g = &mut *g;
        let by_path = Arc::make_mut(&mut g.by_path);
        let groups = Arc::make_mut(&mut g.groups);
        for k in keys {
            by_path.remove(&k);
            let still = by_path.keys().any(|(gr, v, _)| gr == &k.0 && v == &k.1);
            if !still && let Some(vs) = groups.get_mut(&k.0) {
                vs.retain(|v| v != &k.1);
            }
        }
        groups.retain(|_, v| !v.is_empty());
    }

    /// Whether a CRD currently serves `group/plural` (any version).
    pub fn crd_registered(&self, crd_name: &str) -> bool {
        self.inner
            .read()
            .map(|g| g.crds.contains_key(crd_name))
            .unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_keys() {
        assert_eq!(split_key("/apps/deployments/ns1/web"), ("ns1", "web"));
        assert_eq!(split_key("/core/namespaces//ns1"), ("", "ns1"));
    }

    #[test]
    fn builtins_present() {
        let r = Registry::with_builtins();
        let d = r.lookup("apps", "v1", "deployments").expect("deployments");
        assert!(d.namespaced && d.status && d.scale.is_some());
        let ns = r.lookup("", "v1", "namespaces").expect("namespaces");
        assert!(!ns.namespaced && ns.status && ns.scale.is_none());
        let cm = r.lookup("", "v1", "configmaps").expect("configmaps");
        assert!(!cm.status);
        assert!(cm.short_names.contains(&"cm".to_string()));
        assert!(
            r.lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
                .is_some()
        );
        assert!(
            r.lookup("autoscaling", "v2", "horizontalpodautoscalers")
                .is_some()
        );
    }
}
