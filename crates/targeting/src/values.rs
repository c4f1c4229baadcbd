//! Per-cluster Helm values pre-processing (upstream `preprocessHelmValues`): string values
//! `global.fleet.clusterLabels.<label>` become the cluster's label value, then (unless
//! `helm.disablePreProcess`) the values are rendered as a Go template with `${ }` delimiters and
//! the cluster as context, and each `helm.templateValues` entry is rendered and merged on top.
//!
//! The rendering goes through YAML exactly as upstream does (sigs.k8s.io/yaml): the values map is
//! serialized to YAML, the template runs over that text, and the result is parsed back. So a
//! string that renders to `3` or `true` becomes a number or boolean, a value that renders to
//! nothing becomes `null`, and numbers come back as JSON numbers (float64 in Go).

use std::collections::BTreeMap;

use fleet_api::keys::{FLEET_LABEL_PREFIX, MANAGEMENT_LABEL_PREFIX};
use fleet_api::{BundleDeploymentOptions, Cluster};
use gotmpl::{MissingKey, Templates, Value};

use crate::Error;

/// Prefix that marks a value to be replaced by a cluster label.
pub const CLUSTER_LABEL_PREFIX: &str = "global.fleet.clusterLabels.";
const MAX_DEPTH: usize = 50;

/// Functions upstream removes from sprig for values templating (host access, recursion), plus
/// Helm's own functions, which upstream's plain sprig function map never had.
const REMOVED_FUNCS: &[&str] = &[
    "env",
    "expandenv",
    "include",
    "tpl",
    "getHostByName",
    "required",
    "toYaml",
    "fromYaml",
    "fromYamlArray",
    "fromJsonArray",
    "toToml",
    "lookup",
];

/// Wrangler's `CleanAnnotationsForExport` rule: keys under `kubectl.kubernetes.io/` or
/// containing `cattle.io/` are not exported to templates.
fn exported(k: &str) -> bool {
    !k.starts_with("kubectl.kubernetes.io/") && !k.contains("cattle.io/")
}

/// Whether a label key is visible to values processing: exported labels plus Fleet's and
/// Rancher management's own (`fleet.cattle.io/`, `management.cattle.io/`).
pub fn usable_label(k: &str) -> bool {
    exported(k) || k.starts_with(FLEET_LABEL_PREFIX) || k.starts_with(MANAGEMENT_LABEL_PREFIX)
}

/// Labels usable in values (`.ClusterLabels` and `global.fleet.clusterLabels.*`).
pub fn template_labels(labels: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    labels
        .iter()
        .filter(|(k, _)| usable_label(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Annotations usable in values (`.ClusterAnnotations`): no exception for Fleet's own keys.
pub fn template_annotations(annotations: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    annotations
        .iter()
        .filter(|(k, _)| exported(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Whether the options' values depend on the cluster (so a deployment ID cannot be shared).
pub fn depends_on_cluster(opts: &BundleDeploymentOptions) -> bool {
    let Some(h) = &opts.helm else { return false };
    if !h.template_values.is_empty() {
        return true;
    }
    h.values.as_ref().is_some_and(|v| {
        let s = serde_json::to_string(v).unwrap_or_default();
        s.contains(CLUSTER_LABEL_PREFIX) || (!h.disable_pre_process && s.contains("${"))
    })
}

/// Upstream's normalisation for a labelled cluster whose values need no processing: options
/// always carry a helm block, and a helm block always carries a (possibly empty) values map.
/// Returns false when nothing changed.
pub fn normalize_for_labelled(opts: &mut BundleDeploymentOptions) -> bool {
    match opts.helm.as_mut() {
        None => {
            opts.helm = Some(Default::default());
            true
        }
        Some(h) if h.values.is_none() => {
            h.values = Some(Default::default());
            true
        }
        Some(_) => false,
    }
}

/// Upstream `preprocessHelmValues` for one cluster. Errors carry upstream's texts
/// (`failed to parse helm values template: template: values:LINE: ...`).
pub fn preprocess(opts: &mut BundleDeploymentOptions, cluster: &Cluster) -> Result<(), Error> {
    preprocess_values(opts, cluster).map_err(Error::Values)
}

fn preprocess_values(opts: &mut BundleDeploymentOptions, cluster: &Cluster) -> Result<(), String> {
    let empty = BTreeMap::new();
    let labels = template_labels(cluster.metadata.labels.as_ref().unwrap_or(&empty));
    // Upstream quirk: clusters without usable labels get no processing at all.
    if labels.is_empty() {
        return Ok(());
    }
    let Some(h) = opts.helm.as_mut() else {
        opts.helm = Some(Default::default());
        return Ok(());
    };
    let values = h.values.get_or_insert_with(Default::default);
    if h.template_values.is_empty() && values.is_empty() {
        return Ok(());
    }
    substitute(values, &labels, 0)?;
    if h.disable_pre_process {
        return Ok(());
    }
    let ctx = context(cluster, &labels);
    let set = template_set();
    let rendered = render_values(&set, values, &ctx)?;
    let mut out = rendered.unwrap_or_default();
    for (k, text) in &h.template_values {
        let v = render_entry(&set, text, &ctx).map_err(|e| format!("templateValues {k}: {e}"))?;
        out.insert(k.clone(), v);
    }
    h.values = Some(out);
    Ok(())
}

/// The template context upstream gives values templates.
fn context(cluster: &Cluster, labels: &BTreeMap<String, String>) -> Value {
    let empty = BTreeMap::new();
    let strmap = |m: &BTreeMap<String, String>| {
        gotmpl::map_of(m.iter().map(|(k, v)| (k.clone(), Value::str(v))))
    };
    let annotations = template_annotations(cluster.metadata.annotations.as_ref().unwrap_or(&empty));
    let cluster_values = cluster
        .spec
        .template_values
        .clone()
        .map(|m| Value::from_json_float(serde_json::Value::Object(m)))
        .unwrap_or_else(|| gotmpl::map_of(std::iter::empty()));
    gotmpl::map_of([
        (
            "ClusterNamespace".to_string(),
            Value::str(cluster.metadata.namespace.as_deref().unwrap_or("")),
        ),
        (
            "ClusterName".to_string(),
            Value::str(cluster.metadata.name.as_deref().unwrap_or("")),
        ),
        ("ClusterLabels".to_string(), strmap(labels)),
        ("ClusterAnnotations".to_string(), strmap(&annotations)),
        ("ClusterValues".to_string(), cluster_values),
    ])
}

/// Sprig without the functions upstream removes, `${ }` delimiters, `missingkey=error`. Built
/// once: removing functions copies the function table, which would dominate per-cluster cost.
fn template_set() -> Templates {
    static SET: std::sync::OnceLock<Templates> = std::sync::OnceLock::new();
    SET.get_or_init(|| {
        let mut t = Templates::new();
        t.delims("${", "}").missing_key(MissingKey::Error);
        for f in REMOVED_FUNCS {
            t.remove_func(f);
        }
        t
    })
    .clone()
}

/// Parsed templates by source text: a bundle's values text is usually the same for every
/// cluster it targets, so it is parsed once per thread (the cache is small and reset when full).
const PARSE_CACHE_MAX: usize = 256;

fn execute(set: &Templates, text: &str, ctx: &Value) -> Result<String, String> {
    thread_local! {
        static PARSED: std::cell::RefCell<std::collections::HashMap<String, Templates>> =
            std::cell::RefCell::new(std::collections::HashMap::new());
    }
    let cached = PARSED.with(|c| c.borrow().get(text).cloned());
    let t = match cached {
        Some(t) => t,
        None => {
            let mut t = set.clone();
            t.parse("values", text)
                .map_err(|e| format!("failed to parse helm values template: {e}"))?;
            PARSED.with(|c| {
                let mut c = c.borrow_mut();
                if c.len() >= PARSE_CACHE_MAX {
                    c.clear();
                }
                c.insert(text.to_string(), t.clone());
            });
            t
        }
    };
    t.execute("values", ctx)
        .map_err(|e| format!("failed to render helm values template: {e}"))
}

/// Renders the whole values map; `None` when the result is empty (upstream's nil map).
fn render_values(
    set: &Templates,
    values: &serde_json::Map<String, serde_json::Value>,
    ctx: &Value,
) -> Result<Option<serde_json::Map<String, serde_json::Value>>, String> {
    let v = Value::from_json_float(serde_json::Value::Object(values.clone()));
    let text = gotmpl::yaml::to_yaml(&v);
    let out = execute(set, &text, ctx)?;
    let parsed = gotmpl::yaml::from_yaml(&out)
        .map_err(|e| format!("failed to interpret rendered template as helm values: {e}"))?;
    match parsed.to_json() {
        serde_json::Value::Object(m) => Ok(Some(m)),
        serde_json::Value::Null => Ok(None),
        other => Err(format!(
            "failed to interpret rendered template as helm values: json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            json_kind(&other)
        )),
    }
}

/// Renders one `templateValues` entry into any YAML value.
fn render_entry(set: &Templates, text: &str, ctx: &Value) -> Result<serde_json::Value, String> {
    let out = execute(set, text, ctx)?;
    gotmpl::yaml::from_yaml(&out)
        .map(|v| v.to_json())
        .map_err(|e| format!("failed to interpret rendered template as helm values: {out}, {e}"))
}

fn json_kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Array(_) => "array",
        serde_json::Value::String(_) => "string",
        serde_json::Value::Number(_) => "number",
        serde_json::Value::Bool(_) => "bool",
        _ => "object",
    }
}

fn substitute(
    m: &mut serde_json::Map<String, serde_json::Value>,
    labels: &BTreeMap<String, String>,
    depth: usize,
) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!(
            "maximum recursion depth of {MAX_DEPTH} exceeded for cluster label prefix processing, too many nested values"
        ));
    }
    for (_, v) in m.iter_mut() {
        match v {
            serde_json::Value::String(s) => {
                if let Some(label) = s.strip_prefix(CLUSTER_LABEL_PREFIX) {
                    *s = labels.get(label).cloned().unwrap_or_default();
                }
            }
            serde_json::Value::Object(o) => substitute(o, labels, depth + 1)?,
            serde_json::Value::Array(a) => {
                for item in a {
                    if let serde_json::Value::Object(o) = item {
                        substitute(o, labels, depth + 1)?;
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{Value as J, json};

    fn cluster(labels: J, annotations: J, template_values: Option<J>) -> Cluster {
        let mut spec = json!({});
        if let Some(tv) = template_values {
            spec["templateValues"] = tv;
        }
        serde_json::from_value(json!({
            "apiVersion": "fleet.cattle.io/v1alpha1",
            "kind": "Cluster",
            "metadata": {"name": "edge-1", "namespace": "fleet-default",
                         "labels": labels, "annotations": annotations},
            "spec": spec,
        }))
        .unwrap()
    }

    fn default_cluster() -> Cluster {
        cluster(
            json!({"env": "dev", "region": "eu-west", "replicas": "3", "flag": "true",
                   "kubectl.kubernetes.io/x": "hidden", "foo.cattle.io/y": "hidden",
                   "management.cattle.io/cluster-display-name": "Edge One"}),
            json!({"owner": "team-a", "blank": "", "fleet.cattle.io/z": "hidden"}),
            Some(json!({"tier": "gold", "size": 5, "zones": ["a", "b"],
                        "deep": {"er": {"est": "bottom"}}})),
        )
    }

    fn opts(helm: J) -> BundleDeploymentOptions {
        serde_json::from_value(json!({ "helm": helm })).unwrap()
    }

    fn run(helm: J, c: &Cluster) -> Result<J, String> {
        let mut o = opts(helm);
        preprocess(&mut o, c).map_err(|e| e.to_string())?;
        Ok(serde_json::to_value(o.helm.unwrap_or_default())
            .unwrap()
            .get("values")
            .cloned()
            .unwrap_or(J::Null))
    }

    /// Each case: helm options in, rendered `values` (or an error fragment) out.
    #[test]
    fn table() {
        let c = default_cluster();
        let cases: Vec<(&str, J, Result<J, &str>)> = vec![
            (
                "context fields",
                json!({"values": {
                    "name": "${ .ClusterName }", "ns": "${ .ClusterNamespace }",
                    "env": "${ .ClusterLabels.env }", "owner": "${ .ClusterAnnotations.owner }",
                    "tier": "${ .ClusterValues.tier }", "deep": "${ .ClusterValues.deep.er.est }",
                    "display": "${ index .ClusterLabels \"management.cattle.io/cluster-display-name\" }",
                    "path": "clusters/${ .ClusterName }/x",
                }}),
                Ok(
                    json!({"name": "edge-1", "ns": "fleet-default", "env": "dev", "owner": "team-a",
                          "tier": "gold", "deep": "bottom", "display": "Edge One",
                          "path": "clusters/edge-1/x"}),
                ),
            ),
            (
                "non-string scalars are re-typed by the YAML round trip",
                json!({"values": {"replicas": "${ .ClusterLabels.replicas }",
                                  "flag": "${ .ClusterLabels.flag }",
                                  "size": "${ .ClusterValues.size }",
                                  "quoted": "${ .ClusterLabels.replicas | quote }",
                                  "list": "${ list 1 2 3 | toJson }",
                                  "plain": 7, "yes": true, "f": 1.5, "s": "3"}}),
                Ok(
                    json!({"replicas": 3, "flag": true, "size": 5, "quoted": "3",
                          "list": [1, 2, 3], "plain": 7, "yes": true, "f": 1.5, "s": "3"}),
                ),
            ),
            (
                "a value that renders to nothing becomes null",
                json!({"values": {"blank": "${ .ClusterAnnotations.blank }",
                                  "cond": "${ if false }x${ end }"}}),
                Ok(json!({"blank": null, "cond": null})),
            ),
            (
                "functions, conditions and templated keys",
                json!({"values": {
                    "missing": "${ if hasKey .ClusterLabels \"nope\" }${ .ClusterLabels.nope }${ else }fallback${ end }",
                    "funcs": {"upper": "${ .ClusterValues.tier | upper }_x",
                              "join": "${ .ClusterValues.zones | join \",\" }"},
                    "items": [{"name": "${ .ClusterLabels.region }"}, {"k_${ .ClusterLabels.env }": "v"}],
                }}),
                Ok(json!({"missing": "fallback",
                          "funcs": {"upper": "GOLD_x", "join": "a,b"},
                          "items": [{"name": "eu-west"}, {"k_dev": "v"}]})),
            ),
            (
                "labels substituted first, then templates",
                json!({"values": {"r": "global.fleet.clusterLabels.region",
                                  "gone": "global.fleet.clusterLabels.nope",
                                  "hidden": "global.fleet.clusterLabels.kubectl.kubernetes.io/x"}}),
                Ok(json!({"r": "eu-west", "gone": "", "hidden": ""})),
            ),
            (
                "templateValues entries render to YAML (YAML 1.1: key `on` is true) and override values keys",
                json!({"values": {"keep": 1, "over": "old"},
                       "templateValues": {
                           "over": "${ .ClusterName }",
                           "zoneMap": "${- range $z := .ClusterValues.zones }\n${ $z }:\n  on: \"true\"\n${- end }",
                           "zoneList": "${- range $z := .ClusterValues.zones }\n- ${ $z }\n${- end }",
                           "empty": "${ if false }x${ end }"}}),
                Ok(json!({"keep": 1, "over": "edge-1",
                          "zoneMap": {"a": {"true": "true"}, "b": {"true": "true"}},
                          "zoneList": ["a", "b"], "empty": null})),
            ),
            (
                "disablePreProcess keeps templates but still substitutes labels",
                json!({"disablePreProcess": true,
                       "values": {"t": "${ .ClusterName }", "r": "global.fleet.clusterLabels.env"},
                       "templateValues": {"x": "${ .ClusterName }"}}),
                Ok(json!({"t": "${ .ClusterName }", "r": "dev"})),
            ),
            (
                "filtered labels are not in the context (`index` of a missing key is Go's nil)",
                json!({"values": {"x": "${ index .ClusterLabels \"foo.cattle.io/y\" }",
                                  "k": "${ index .ClusterLabels \"kubectl.kubernetes.io/x\" }"}}),
                Ok(json!({"x": "<no value>", "k": "<no value>"})),
            ),
            (
                "fleet annotations are filtered too",
                json!({"values": {"x": "${ .ClusterAnnotations.nope }"}}),
                Err(
                    r#"failed to render helm values template: template: values:1:25: executing "values" at <.ClusterAnnotations.nope>: map has no entry for key "nope""#,
                ),
            ),
            (
                "removed functions do not exist",
                json!({"values": {"home": "${ env \"HOME\" }"}}),
                Err(
                    r#"failed to parse helm values template: template: values:1: function "env" not defined"#,
                ),
            ),
            (
                "Helm-only functions do not exist",
                json!({"values": {"y": "${ toYaml .ClusterValues }"}}),
                Err(r#"function "toYaml" not defined"#),
            ),
            (
                "syntax errors",
                json!({"values": {"a": 1, "b": "${ if .ClusterName }"}}),
                Err("failed to parse helm values template: template: values:3: unexpected EOF"),
            ),
            (
                "rendered text that is not YAML",
                json!({"values": {"a": "${ \"[\" }"}}),
                Err("failed to interpret rendered template as helm values"),
            ),
            (
                "templateValues errors name the entry",
                json!({"templateValues": {"bad": "${ .Nope }"}}),
                Err(
                    r#"templateValues bad: failed to render helm values template: template: values:1:3: executing "values" at <.Nope>: map has no entry for key "Nope""#,
                ),
            ),
        ];
        for (what, helm, want) in cases {
            let got = run(helm, &c);
            match (want, got) {
                (Ok(w), Ok(g)) => assert_eq!(g, w, "{what}"),
                (Err(w), Err(g)) => assert!(g.contains(w), "{what}: {g}"),
                (w, g) => panic!("{what}: want {w:?}, got {g:?}"),
            }
        }
    }

    #[test]
    fn cluster_without_template_values_has_empty_map() {
        let c = cluster(json!({"a": "b"}), json!({}), None);
        assert_eq!(
            run(json!({"values": {"n": "${ len .ClusterValues }"}}), &c).unwrap(),
            json!({"n": 0})
        );
    }

    #[test]
    fn unlabelled_clusters_are_not_processed() {
        // Upstream returns before any processing when no usable label exists.
        let c = cluster(json!({"foo.cattle.io/x": "y"}), json!({}), None);
        let helm = json!({"values": {"t": "${ .Nope }"}, "templateValues": {"x": "1"}});
        let mut o = opts(helm.clone());
        preprocess(&mut o, &c).unwrap();
        assert_eq!(o, opts(helm));
        let mut none = BundleDeploymentOptions::default();
        preprocess(&mut none, &c).unwrap();
        assert!(none.helm.is_none());
    }

    #[test]
    fn labelled_cluster_gets_helm_block_and_values_map() {
        let c = default_cluster();
        let mut o = BundleDeploymentOptions::default();
        preprocess(&mut o, &c).unwrap();
        assert_eq!(serde_json::to_value(&o).unwrap(), json!({"helm": {}}));
        let mut o = opts(json!({"releaseName": "r"}));
        preprocess(&mut o, &c).unwrap();
        assert_eq!(
            serde_json::to_value(&o).unwrap(),
            json!({"helm": {"releaseName": "r", "values": {}}})
        );
        let mut o = opts(json!({"releaseName": "r"}));
        assert!(normalize_for_labelled(&mut o));
        assert!(!normalize_for_labelled(&mut o));
    }

    #[test]
    fn depth_limit() {
        let mut v = json!("global.fleet.clusterLabels.env");
        for _ in 0..60 {
            v = json!({ "n": v });
        }
        let err = run(json!({ "values": v }), &default_cluster()).unwrap_err();
        assert!(err.contains("maximum recursion depth of 50"), "{err}");
    }

    fn leaf() -> impl Strategy<Value = J> {
        prop_oneof![
            Just(J::Null),
            any::<bool>().prop_map(J::Bool),
            (-1_000_000i64..1_000_000).prop_map(|i| json!(i)),
            "[ -#%-~\n]{0,12}".prop_map(J::String),
        ]
    }

    fn tree() -> impl Strategy<Value = J> {
        leaf().prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(J::Array),
                prop::collection::btree_map("[a-z0-9_./-]{1,8}", inner, 0..4)
                    .prop_map(|m| J::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Values without `${` (no `$` at all here) come back unchanged from the YAML round trip.
        #[test]
        fn template_free_values_round_trip(
            m in prop::collection::btree_map("[a-z0-9_./-]{1,8}", tree(), 1..5)
        ) {
            let values = J::Object(m.into_iter().collect());
            let got = run(json!({ "values": values.clone() }), &default_cluster());
            prop_assert_eq!(got, Ok(values));
        }

        /// Arbitrary template text never panics: it renders or gives an error.
        #[test]
        fn arbitrary_templates_never_panic(
            a in "[ -~\n]{0,40}",
            b in "(\\$\\{-? ?|[ -~]{0,6}|\\}| -\\}|\\.Cluster[A-Za-z]{0,8}){0,8}",
        ) {
            let _ = run(json!({"values": {"a": a.clone(), "b": b.clone()},
                               "templateValues": {"c": b, "d": a}}), &default_cluster());
        }
    }
}
