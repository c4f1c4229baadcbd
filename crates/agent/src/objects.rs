//! Downstream objects by reference: resolving apiVersion/kind to a resource (discovery, cached),
//! server-side apply under the agent's one field manager, reads and deletes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use kube::Api;
use kube::Resource;
use kube::api::{ApiResource, DeleteParams, DynamicObject, GetParams, Patch, PatchParams};
use serde_json::Value;

/// The field manager of every downstream write the agent makes.
pub const FIELD_MANAGER: &str = "fleet-agent";

/// What the API server said, without kube-rs's debug rendering of the whole Status: the
/// message a user sees in a BundleDeployment's conditions.
pub fn api_message(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) if !s.message.is_empty() => s.message.clone(),
        other => other.to_string(),
    }
}

/// Identity of one object: apiVersion, kind, namespace ("" when cluster-scoped) and name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjRef {
    /// `group/version` or `v1`.
    pub api_version: String,
    /// The kind.
    pub kind: String,
    /// Namespace, empty for cluster-scoped objects.
    pub namespace: String,
    /// Name.
    pub name: String,
}

impl ObjRef {
    /// The reference of an object's JSON (None without apiVersion, kind or name).
    pub fn of(o: &Value) -> Option<ObjRef> {
        // Field by field rather than `Value::pointer`, which allocates for every path segment
        // (this runs for every object of every check).
        let s = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
        let meta = o.get("metadata");
        Some(ObjRef {
            api_version: s(o.get("apiVersion"))?,
            kind: s(o.get("kind"))?,
            namespace: s(meta.and_then(|m| m.get("namespace"))).unwrap_or_default(),
            name: s(meta.and_then(|m| m.get("name")))?,
        })
    }

    /// `group` of the apiVersion ("" for the core group).
    pub fn group(&self) -> &str {
        self.api_version.rsplit_once('/').map_or("", |(g, _)| g)
    }
}

impl std::fmt::Display for ObjRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.namespace.is_empty() {
            write!(f, "{} {}", self.kind, self.name)
        } else {
            write!(f, "{} {}/{}", self.kind, self.namespace, self.name)
        }
    }
}

/// An object as the agent reads it from the downstream: JSON with `metadata.managedFields`
/// skipped unread. No caller looks at managed fields, and they are often the largest part of
/// an answer (decoding them was most of the cost of reading an apply's answer).
#[derive(Debug, Clone, Default)]
pub struct Live(pub serde_json::Map<String, Value>);

impl<'de> serde::Deserialize<'de> for Live {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Live, D::Error> {
        /// `metadata` without `managedFields`.
        struct Meta;
        impl<'de> serde::de::Visitor<'de> for Meta {
            type Value = serde_json::Map<String, Value>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("object metadata")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<Self::Value, A::Error> {
                let mut m = serde_json::Map::new();
                while let Some(k) = a.next_key::<String>()? {
                    if k == "managedFields" {
                        a.next_value::<serde::de::IgnoredAny>()?;
                    } else {
                        m.insert(k, a.next_value()?);
                    }
                }
                Ok(m)
            }
        }
        struct MetaSeed;
        impl<'de> serde::de::DeserializeSeed<'de> for MetaSeed {
            type Value = serde_json::Map<String, Value>;
            fn deserialize<D: serde::Deserializer<'de>>(
                self,
                d: D,
            ) -> Result<Self::Value, D::Error> {
                d.deserialize_map(Meta)
            }
        }
        struct Object;
        impl<'de> serde::de::Visitor<'de> for Object {
            type Value = Live;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a Kubernetes object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut a: A) -> Result<Live, A::Error> {
                let mut object = serde_json::Map::new();
                while let Some(k) = a.next_key::<String>()? {
                    let v = if k == "metadata" {
                        Value::Object(a.next_value_seed(MetaSeed)?)
                    } else {
                        a.next_value()?
                    };
                    object.insert(k, v);
                }
                Ok(Live(object))
            }
        }
        d.deserialize_map(Object)
    }
}

/// A resolved kind: its REST resource and whether it is namespaced.
#[derive(Debug, Clone)]
pub struct Kind {
    /// The resource for kube-rs's dynamic API.
    pub resource: ApiResource,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
}

/// The kinds of a group version's discovery document (`/api/v1`, `/apis/G/V`), subresources
/// left out. Why not kube-rs's discovery: it decodes every field of every resource (verbs,
/// short names, categories, subresources) into owned strings and builds capabilities from
/// them, where an agent needs each kind's resource name and scope; each agent reads two such
/// documents when it starts, and at ten bundles a cluster that was about 2% of its allocations.
fn listed_kinds(
    text: &str,
    group: &str,
    version: &str,
) -> Result<HashMap<String, Arc<Kind>>, serde_json::Error> {
    use std::borrow::Cow;
    #[derive(serde::Deserialize)]
    struct ResourceList<'a> {
        #[serde(borrow, default)]
        resources: Vec<Listed<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct Listed<'a> {
        #[serde(borrow)]
        name: Cow<'a, str>,
        #[serde(borrow)]
        kind: Cow<'a, str>,
        #[serde(default)]
        namespaced: bool,
        #[serde(borrow, default)]
        group: Option<Cow<'a, str>>,
        #[serde(borrow, default)]
        version: Option<Cow<'a, str>>,
    }
    let list: ResourceList<'_> = serde_json::from_str(text)?;
    let mut out = HashMap::with_capacity(list.resources.len());
    for r in list.resources {
        if r.name.contains('/') {
            continue;
        }
        // A resource may name its own group and version (as kube-rs reads them too).
        let g = r.group.as_deref().unwrap_or(group);
        let v = r.version.as_deref().unwrap_or(version);
        let resource = ApiResource {
            group: g.to_string(),
            version: v.to_string(),
            api_version: if g.is_empty() {
                v.to_string()
            } else {
                format!("{g}/{v}")
            },
            kind: r.kind.clone().into_owned(),
            plural: r.name.into_owned(),
        };
        out.insert(
            r.kind.into_owned(),
            Arc::new(Kind {
                resource,
                namespaced: r.namespaced,
            }),
        );
    }
    Ok(out)
}

/// Resolved kinds by apiVersion, then kind.
type KindsByVersion = HashMap<String, HashMap<String, Arc<Kind>>>;

/// The downstream cluster as the agent uses it: a client plus a cache of resolved kinds.
#[derive(Clone)]
pub struct Downstream {
    /// Client for the downstream cluster.
    pub client: kube::Client,
    /// Every kind of each group-version looked up so far, by apiVersion then kind (shared:
    /// every request resolves its kind, and a copy of one is five strings).
    kinds: Arc<Mutex<KindsByVersion>>,
}

impl Downstream {
    /// Wraps a downstream client.
    pub fn new(client: kube::Client) -> Downstream {
        Downstream {
            client,
            kinds: Arc::default(),
        }
    }

    /// The same cluster with every request made as `user` (kinds resolved so far are shared).
    pub fn impersonating(&self, user: &str) -> Result<Downstream, fleet_kube::Error> {
        Ok(Downstream {
            client: fleet_kube::impersonating(&self.client, user)?,
            kinds: self.kinds.clone(),
        })
    }

    /// Resolves apiVersion/kind through discovery. One document lists every kind of a
    /// group-version, so each is read once, and again only for a kind it did not list
    /// (failures are not cached: a kind whose CRD was just created resolves once it is served).
    pub async fn kind(&self, api_version: &str, kind: &str) -> Result<Arc<Kind>, kube::Error> {
        let cached =
            |kinds: &KindsByVersion| kinds.get(api_version).and_then(|m| m.get(kind)).cloned();
        if let Some(k) = cached(&self.kinds.lock().unwrap_or_else(|e| e.into_inner())) {
            return Ok(k);
        }
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let path = if group.is_empty() {
            format!("/api/{version}")
        } else {
            format!("/apis/{group}/{version}")
        };
        let req = http::Request::get(path)
            .body(Vec::new())
            .map_err(|e| kube::Error::BuildRequest(kube::core::request::Error::BuildRequest(e)))?;
        let text = self.client.request_text(req).await?;
        let listed = listed_kinds(&text, group, version).map_err(kube::Error::SerdeError)?;
        let mut kinds = self.kinds.lock().unwrap_or_else(|e| e.into_inner());
        kinds.insert(api_version.to_string(), listed);
        cached(&kinds).ok_or_else(|| {
            kube::Error::Discovery(kube::error::DiscoveryError::MissingKind(format!(
                "{api_version} {kind}"
            )))
        })
    }

    /// The dynamic API for one object.
    pub async fn api(&self, r: &ObjRef) -> Result<Api<DynamicObject>, kube::Error> {
        let k = self.kind(&r.api_version, &r.kind).await?;
        Ok(if k.namespaced {
            Api::namespaced_with(self.client.clone(), &r.namespace, &k.resource)
        } else {
            Api::all_with(self.client.clone(), &k.resource)
        })
    }

    /// Requests about one object, answered as plain JSON: the agent reads objects as
    /// `Value`s, and a typed answer would be decoded and then encoded again into one.
    async fn request(&self, r: &ObjRef) -> Result<kube::core::Request, kube::Error> {
        let k = self.kind(&r.api_version, &r.kind).await?;
        let ns = k.namespaced.then_some(r.namespace.as_str());
        Ok(kube::core::Request::new(DynamicObject::url_path(
            &k.resource,
            ns,
        )))
    }

    /// The live object (without managedFields), or None when it does not exist.
    pub async fn get(&self, r: &ObjRef) -> Result<Option<Value>, kube::Error> {
        let mut req = self
            .request(r)
            .await?
            .get(&r.name, &GetParams::default())
            .map_err(kube::Error::BuildRequest)?;
        req.extensions_mut().insert("get");
        match self.client.request::<Live>(req).await {
            Ok(o) => Ok(Some(Value::Object(o.0))),
            Err(kube::Error::Api(s)) if s.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Server-side apply of `obj` under [`FIELD_MANAGER`] (force takes conflicting fields); the
    /// answer without managedFields.
    pub async fn apply(&self, r: &ObjRef, obj: &Value, force: bool) -> Result<Value, kube::Error> {
        let mut pp = PatchParams::apply(FIELD_MANAGER);
        pp.force = force;
        let mut req = self
            .request(r)
            .await?
            .patch(&r.name, &pp, &Patch::Apply(obj))
            .map_err(kube::Error::BuildRequest)?;
        req.extensions_mut().insert("patch");
        Ok(Value::Object(self.client.request::<Live>(req).await?.0))
    }

    /// Deletes an object (already gone is fine), letting the cluster collect its dependents.
    pub async fn delete(&self, r: &ObjRef) -> Result<(), kube::Error> {
        let api = self.api(r).await?;
        match api.delete(&r.name, &DeleteParams::background()).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discovery_lists_each_kind_with_its_resource_and_scope() {
        let doc = r#"{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"apps/v1","resources":[
            {"name":"deployments","singularName":"deployment","namespaced":true,"kind":"Deployment","verbs":["get"],"shortNames":["deploy"]},
            {"name":"deployments/scale","singularName":"","namespaced":true,"group":"autoscaling","version":"v1","kind":"Scale","verbs":["get"]},
            {"name":"deployments/status","singularName":"","namespaced":true,"kind":"Deployment","verbs":["get"]},
            {"name":"widgets","namespaced":false,"group":"example.com","version":"v2","kind":"Widget"},
            {"name":"esc\u0061ped","namespaced":true,"kind":"Esc\u0061ped"}]}"#;
        let kinds = listed_kinds(doc, "apps", "v1").unwrap();
        let mut names: Vec<&str> = kinds.keys().map(String::as_str).collect();
        names.sort();
        assert_eq!(
            names,
            ["Deployment", "Escaped", "Widget"],
            "subresources left out"
        );
        let d = &kinds["Deployment"];
        assert_eq!(
            (
                d.resource.api_version.as_str(),
                d.resource.plural.as_str(),
                d.namespaced
            ),
            ("apps/v1", "deployments", true)
        );
        let w = &kinds["Widget"];
        assert_eq!(
            (
                w.resource.api_version.as_str(),
                w.resource.group.as_str(),
                w.namespaced
            ),
            ("example.com/v2", "example.com", false)
        );
        assert_eq!(kinds["Escaped"].resource.plural, "escaped");
        let core = listed_kinds(
            r#"{"resources":[{"name":"configmaps","namespaced":true,"kind":"ConfigMap"}]}"#,
            "",
            "v1",
        )
        .unwrap();
        assert_eq!(core["ConfigMap"].resource.api_version, "v1");
        assert!(listed_kinds("{}", "", "v1").unwrap().is_empty());
        // An array lists nothing: the kind is then reported missing, as for an empty list.
        assert!(listed_kinds("[]", "", "v1").unwrap().is_empty());
        for bad in [
            "",
            r#"{"resources":[{"name":1}]}"#,
            r#"{"resources":[{"kind":"X"}]}"#,
            r#"{"resources":"#,
        ] {
            assert!(listed_kinds(bad, "", "v1").is_err(), "{bad}");
        }
    }

    #[test]
    fn a_live_object_is_decoded_whole_but_its_managed_fields() {
        let text = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","managedFields":[{"manager":"m","operation":"Apply","fieldsV1":{"f:data":{}}}],"namespace":"n","annotations":{"a":"b"}},"data":{"k":"v"}}"#;
        let live: Live = serde_json::from_str(text).unwrap();
        assert_eq!(
            serde_json::to_string(&Value::Object(live.0)).unwrap(),
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"n","annotations":{"a":"b"}},"data":{"k":"v"}}"#,
            "the order of fields is kept"
        );
        for bad in [
            r#"[1]"#,
            r#""x""#,
            r#"{"metadata":"x"}"#,
            r#"{"metadata":{"name":"a""#,
        ] {
            assert!(serde_json::from_str::<Live>(bad).is_err(), "{bad}");
        }
    }
}
