//! The OpenAPI v3 schemas of built-in kinds (generated from `k8s-openapi`'s types), grouped by
//! group-version: the registry lists them, the `/openapi/v3` handler serves them.

use k8s_openapi::Resource;
use k8s_openapi::schemars::generate::SchemaSettings;
use k8s_openapi::schemars::{JsonSchema, SchemaGenerator};
use serde_json::{Map, Value, json};

/// The schemas one built-in kind contributes to its group-version's document.
pub struct KindSchema {
    /// `api/v1` or `apis/GROUP/VERSION`.
    pub(crate) gv_path: String,
    /// The kind's own schema under its OpenAPI name, plus every schema it refers to.
    pub(crate) components: Map<String, Value>,
    /// The kind's `get` path.
    pub(crate) paths: Map<String, Value>,
}

/// The `get` path of one kind: what `kubectl explain` looks up to find the kind's schema.
pub(crate) fn get_path(
    group: &str,
    version: &str,
    kind: &str,
    plural: &str,
    namespaced: bool,
    schema_name: &str,
) -> (String, Value) {
    let gv = gv_path(group, version);
    let path = if namespaced {
        format!("/{gv}/namespaces/{{namespace}}/{plural}/{{name}}")
    } else {
        format!("/{gv}/{plural}/{{name}}")
    };
    let mut params = vec![
        json!({"name": "name", "in": "path", "required": true, "description": format!("name of the {kind}"), "schema": {"type": "string"}}),
    ];
    if namespaced {
        params.push(json!({"name": "namespace", "in": "path", "required": true, "description": "object name and auth scope, such as for teams and projects", "schema": {"type": "string"}}));
    }
    let op = json!({
        "description": format!("read the specified {kind}"),
        "operationId": format!("read{kind}"),
        "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{schema_name}")}}}}},
        "x-kubernetes-action": "get",
        "x-kubernetes-group-version-kind": {"group": group, "kind": kind, "version": version},
    });
    (path, json!({"get": op, "parameters": params}))
}

/// The URL segment of a group-version's document.
pub(crate) fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

pub(crate) fn gvk(group: &str, version: &str, kind: &str) -> Value {
    json!([{"group": group, "kind": kind, "version": version}])
}

/// Generates the schemas of one built-in kind (called for every built-in type by
/// `builtin::builtin_schemas`).
pub fn schema_of<T>() -> KindSchema
where
    T: Resource + JsonSchema,
    T::Scope: 'static,
{
    let root = SchemaGenerator::new(SchemaSettings::openapi3()).into_root_schema_for::<T>();
    let mut root = root.to_value();
    let mut components = root
        .as_object_mut()
        .and_then(|m| m.remove("components"))
        .and_then(|mut c| c.as_object_mut().and_then(|c| c.remove("schemas")))
        .and_then(|s| match s {
            Value::Object(m) => Some(m),
            _ => None,
        })
        .unwrap_or_default();
    let name = match root.as_object_mut() {
        Some(m) => {
            m.remove("$schema");
            m.insert(
                "x-kubernetes-group-version-kind".into(),
                gvk(T::GROUP, T::VERSION, T::KIND),
            );
            m.remove("title")
                .and_then(|t| t.as_str().map(str::to_string))
                .unwrap_or_else(|| format!("{}.{}.{}", T::GROUP, T::VERSION, T::KIND))
        }
        None => format!("{}.{}.{}", T::GROUP, T::VERSION, T::KIND),
    };
    let namespaced = std::any::TypeId::of::<T::Scope>()
        == std::any::TypeId::of::<k8s_openapi::NamespaceResourceScope>();
    let (path, item) = get_path(
        T::GROUP,
        T::VERSION,
        T::KIND,
        T::URL_PATH_SEGMENT,
        namespaced,
        &name,
    );
    components.insert(name, root);
    let mut paths = Map::new();
    paths.insert(path, item);
    KindSchema {
        gv_path: gv_path(T::GROUP, T::VERSION),
        components,
        paths,
    }
}
