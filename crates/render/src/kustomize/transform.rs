//! The built-in transformers of a kustomization, run in kustomize's fixed order.

use super::fieldspec::{self, CreateKind, FieldSpec};
use super::kfile::{ImageSpec, Kustomization};
use super::resource::{ResId, ResMap};
use super::{FileSource, KustomizeError, patches};
use serde_json::{Map, Value};

/// Runs patches, namespace, prefix/suffix, labels, annotations, JSON patches, replicas and
/// images over `acc`, in that order (kustomize's `configureBuiltinTransformers`).
pub fn run(fs: &dyn FileSource, k: &Kustomization, acc: &mut ResMap) -> Result<(), KustomizeError> {
    patches::strategic_merge(fs, k, acc)?;
    patches::patches(fs, k, acc)?;
    if let Some(ns) = &k.namespace {
        namespace(k, acc, ns)?;
    }
    if !k.name_prefix.is_empty() {
        for r in &mut acc.list {
            if skip_rename(&r.org_id()) {
                continue;
            }
            r.prefixes.push(k.name_prefix.clone());
            r.store_previous_id();
            let n = format!("{}{}", k.name_prefix, r.name());
            r.set_name(&n);
        }
    }
    if !k.name_suffix.is_empty() {
        for r in &mut acc.list {
            if skip_rename(&r.org_id()) {
                continue;
            }
            r.suffixes.push(k.name_suffix.clone());
            r.store_previous_id();
            let n = format!("{}{}", r.name(), k.name_suffix);
            r.set_name(&n);
        }
    }
    for l in &k.labels {
        let mut specs = l.fields.clone();
        if l.include_selectors {
            specs.extend(common_label_specs());
        } else {
            specs.push(FieldSpec::any("metadata/labels", true));
        }
        set_map_entries(k, acc, &l.pairs, &specs, "labels")?;
    }
    if !k.common_labels.is_empty() {
        set_map_entries(
            k,
            acc,
            &k.common_labels,
            &common_label_specs(),
            "commonLabels",
        )?;
    }
    if !k.common_annotations.is_empty() {
        set_map_entries(
            k,
            acc,
            &k.common_annotations,
            &common_annotation_specs(),
            "commonAnnotations",
        )?;
    }
    patches::json6902(fs, k, acc)?;
    for (name, count, line) in &k.replicas {
        replicas(k, acc, name, *count, *line)?;
    }
    for im in &k.images {
        for r in &mut acc.list {
            set_images(&mut r.obj, im);
        }
    }
    Ok(())
}

fn skip_rename(id: &ResId) -> bool {
    id.kind == "CustomResourceDefinition"
        || id.kind == "Namespace"
        || (id.kind == "APIService" && id.group == "apiregistration.k8s.io")
}

fn namespace(k: &Kustomization, acc: &mut ResMap, ns: &str) -> Result<(), KustomizeError> {
    let set = |v: &mut Value| -> Result<(), String> {
        *v = Value::String(ns.to_string());
        Ok(())
    };
    for r in &mut acc.list {
        r.store_previous_id();
        let id = r.id();
        if !id.is_cluster_scoped() {
            r.set_namespace(ns);
        }
        if (id.kind == "RoleBinding" || id.kind == "ClusterRoleBinding")
            && let Some(Value::Array(subjects)) = r.obj.get_mut("subjects")
        {
            for s in subjects {
                if s.get("name").and_then(Value::as_str) == Some("default")
                    && let Value::Object(m) = s
                {
                    m.insert("namespace".into(), Value::String(ns.to_string()));
                }
            }
        }
        let specs = [
            FieldSpec::gvk("", "", "Namespace", "metadata/name", true),
            FieldSpec::gk(
                "apiregistration.k8s.io",
                "APIService",
                "spec/service/namespace",
                true,
            ),
            FieldSpec::gk(
                "apiextensions.k8s.io",
                "CustomResourceDefinition",
                "spec/conversion/webhook/clientConfig/service/namespace",
                false,
            ),
        ];
        for spec in specs.iter().filter(|s| s.selects(&id)) {
            fieldspec::apply(
                &mut r.obj,
                &spec.path,
                spec.create,
                CreateKind::Scalar,
                &mut { set },
            )
            .map_err(|e| KustomizeError::in_file(&k.file, e).field("namespace"))?;
        }
    }
    // A namespace change must not make two resources collide.
    acc.check_unique().map_err(|e| {
        KustomizeError::in_file(
            &k.file,
            format!("namespace transformation produces ID conflict: {}", e.msg),
        )
        .field("namespace")
    })?;
    Ok(())
}

fn set_map_entries(
    k: &Kustomization,
    acc: &mut ResMap,
    pairs: &[(String, String)],
    specs: &[FieldSpec],
    field: &str,
) -> Result<(), KustomizeError> {
    for r in &mut acc.list {
        let id = r.id();
        for spec in specs.iter().filter(|s| s.selects(&id)) {
            fieldspec::apply(
                &mut r.obj,
                &spec.path,
                spec.create,
                CreateKind::Map,
                &mut |v| match v {
                    Value::Object(m) => {
                        for (key, val) in pairs {
                            m.insert(key.clone(), Value::String(val.clone()));
                        }
                        Ok(())
                    }
                    Value::Null => {
                        let mut m = Map::new();
                        for (key, val) in pairs {
                            m.insert(key.clone(), Value::String(val.clone()));
                        }
                        *v = Value::Object(m);
                        Ok(())
                    }
                    _ => Err(format!(
                        "{}: expected a mapping at `{}` in {}",
                        r.source.display(),
                        spec.path,
                        id.display()
                    )),
                },
            )
            .map_err(|e| KustomizeError::in_file(&k.file, e).field(field))?;
        }
    }
    Ok(())
}

fn replicas(
    k: &Kustomization,
    acc: &mut ResMap,
    name: &str,
    count: i64,
    line: usize,
) -> Result<(), KustomizeError> {
    let specs = [
        FieldSpec::gvk("", "", "Deployment", "spec/replicas", true),
        FieldSpec::gvk("", "", "ReplicationController", "spec/replicas", true),
        FieldSpec::gvk("", "", "ReplicaSet", "spec/replicas", true),
        FieldSpec::gvk("", "", "StatefulSet", "spec/replicas", true),
    ];
    let mut found = false;
    for r in &mut acc.list {
        let cur = r.id();
        let matches_name = cur.name == name || r.prev_ids.iter().any(|p| p.name == name);
        if !matches_name {
            continue;
        }
        for spec in specs.iter().filter(|s| s.selects(&cur)) {
            found = true;
            fieldspec::apply(&mut r.obj, &spec.path, true, CreateKind::Scalar, &mut |v| {
                *v = Value::from(count);
                Ok(())
            })
            .map_err(|e| KustomizeError::at(&k.file, line, Some("replicas"), e))?;
        }
    }
    if !found {
        return Err(KustomizeError::at(
            &k.file,
            line,
            Some("replicas"),
            format!(
                "resource with name {name} does not match a config with the following GVK [Deployment ReplicationController ReplicaSet StatefulSet]"
            ),
        ));
    }
    Ok(())
}

/// kustomize's legacy image filter: every `image` of every element of any `containers`
/// or `initContainers` list, anywhere in the object.
fn set_images(v: &mut Value, im: &ImageSpec) {
    match v {
        Value::Object(m) => {
            for (key, child) in m.iter_mut() {
                set_images(child, im);
                if (key == "containers" || key == "initContainers")
                    && let Value::Array(items) = child
                {
                    for it in items {
                        if let Some(Value::String(s)) = it.get_mut("image")
                            && let Some(n) = update_image(s, im)
                        {
                            *s = n;
                        }
                    }
                }
            }
        }
        Value::Array(items) => {
            for it in items {
                set_images(it, im);
            }
        }
        _ => {}
    }
}

/// The new image reference for `value` if `im.name` matches it (kustomize treats the
/// name as a regular expression, followed by an optional tag and digest).
pub fn update_image(value: &str, im: &ImageSpec) -> Option<String> {
    let pattern = format!(
        "^{}(:[a-zA-Z0-9_.{{}}-]*)?(@sha256:[a-zA-Z0-9_.{{}}-]*)?$",
        im.name
    );
    let re = regex::Regex::new(&pattern).ok()?;
    if !re.is_match(value) {
        return None;
    }
    let (mut name, mut tag, mut digest) = split_image(value);
    if !im.new_name.is_empty() {
        name = im.new_name.clone();
    }
    if !im.new_tag.is_empty() && !im.digest.is_empty() {
        tag = im.new_tag.clone();
        digest = im.digest.clone();
    } else if !im.new_tag.is_empty() {
        tag = im.new_tag.clone();
        digest.clear();
    } else if !im.digest.is_empty() {
        tag.clear();
        digest = im.digest.clone();
    }
    let mut out = name;
    if !tag.is_empty() {
        out.push(':');
        out.push_str(&tag);
    }
    if !digest.is_empty() {
        out.push('@');
        out.push_str(&digest);
    }
    Some(out)
}

/// Splits `[host[:port]/]path[:tag][@digest]` into name, tag and digest.
fn split_image(image: &str) -> (String, String, String) {
    let slash = match image.find('/') {
        Some(i) if i > 0 => i,
        _ => 0,
    };
    let search = &image[slash..];
    let id = search.find('@');
    let ic = search.find(':');
    match (ic, id) {
        (None, None) => (image.to_string(), String::new(), String::new()),
        (ic, Some(d)) if ic.is_none_or(|c| d < c) => {
            let d = d + slash;
            (
                image[..d].to_string(),
                String::new(),
                image[d + 1..].to_string(),
            )
        }
        (Some(c), Some(d)) => {
            let (c, d) = (c + slash, d + slash);
            (
                image[..c].to_string(),
                image[c + 1..d].to_string(),
                image[d + 1..].to_string(),
            )
        }
        (Some(c), None) => {
            let c = c + slash;
            (
                image[..c].to_string(),
                image[c + 1..].to_string(),
                String::new(),
            )
        }
        (None, Some(_)) => (image.to_string(), String::new(), String::new()),
    }
}

/// Where `commonLabels` (and `labels` with `includeSelectors`) go.
pub fn common_label_specs() -> Vec<FieldSpec> {
    let mut v = vec![
        FieldSpec::any("metadata/labels", true),
        FieldSpec::gvk("", "v1", "Service", "spec/selector", true),
        FieldSpec::gvk("", "v1", "ReplicationController", "spec/selector", true),
        FieldSpec::gvk(
            "",
            "v1",
            "ReplicationController",
            "spec/template/metadata/labels",
            true,
        ),
        FieldSpec::gk("", "Deployment", "spec/selector/matchLabels", true),
        FieldSpec::gk("", "Deployment", "spec/template/metadata/labels", true),
    ];
    let affinity = |kind: &str, v: &mut Vec<FieldSpec>| {
        for aff in ["podAffinity", "podAntiAffinity"] {
            v.push(FieldSpec::gk(
                "apps",
                kind,
                &format!("spec/template/spec/affinity/{aff}/preferredDuringSchedulingIgnoredDuringExecution/podAffinityTerm/labelSelector/matchLabels"),
                false,
            ));
            v.push(FieldSpec::gk(
                "apps",
                kind,
                &format!("spec/template/spec/affinity/{aff}/requiredDuringSchedulingIgnoredDuringExecution/labelSelector/matchLabels"),
                false,
            ));
        }
        v.push(FieldSpec::gk(
            "apps",
            kind,
            "spec/template/spec/topologySpreadConstraints/labelSelector/matchLabels",
            false,
        ));
    };
    affinity("Deployment", &mut v);
    for kind in ["ReplicaSet", "DaemonSet"] {
        v.push(FieldSpec::gk("", kind, "spec/selector/matchLabels", true));
        v.push(FieldSpec::gk(
            "",
            kind,
            "spec/template/metadata/labels",
            true,
        ));
    }
    v.push(FieldSpec::gk(
        "apps",
        "StatefulSet",
        "spec/selector/matchLabels",
        true,
    ));
    v.push(FieldSpec::gk(
        "apps",
        "StatefulSet",
        "spec/template/metadata/labels",
        true,
    ));
    affinity("StatefulSet", &mut v);
    v.push(FieldSpec::gk(
        "apps",
        "StatefulSet",
        "spec/volumeClaimTemplates[]/metadata/labels",
        true,
    ));
    v.push(FieldSpec::gk(
        "batch",
        "Job",
        "spec/selector/matchLabels",
        false,
    ));
    v.push(FieldSpec::gk(
        "batch",
        "Job",
        "spec/template/metadata/labels",
        true,
    ));
    v.push(FieldSpec::gk(
        "batch",
        "CronJob",
        "spec/jobTemplate/spec/selector/matchLabels",
        false,
    ));
    v.push(FieldSpec::gk(
        "batch",
        "CronJob",
        "spec/jobTemplate/metadata/labels",
        true,
    ));
    v.push(FieldSpec::gk(
        "batch",
        "CronJob",
        "spec/jobTemplate/spec/template/metadata/labels",
        true,
    ));
    v.push(FieldSpec::gk(
        "policy",
        "PodDisruptionBudget",
        "spec/selector/matchLabels",
        false,
    ));
    for p in [
        "spec/podSelector/matchLabels",
        "spec/ingress/from/podSelector/matchLabels",
        "spec/egress/to/podSelector/matchLabels",
    ] {
        v.push(FieldSpec::gk(
            "networking.k8s.io",
            "NetworkPolicy",
            p,
            false,
        ));
    }
    v
}

/// Where `commonAnnotations` go.
pub fn common_annotation_specs() -> Vec<FieldSpec> {
    let mut v = vec![
        FieldSpec::any("metadata/annotations", true),
        FieldSpec::gvk(
            "",
            "v1",
            "ReplicationController",
            "spec/template/metadata/annotations",
            true,
        ),
    ];
    for kind in ["Deployment", "ReplicaSet", "DaemonSet", "StatefulSet"] {
        v.push(FieldSpec::gk(
            "",
            kind,
            "spec/template/metadata/annotations",
            true,
        ));
    }
    v.push(FieldSpec::gk(
        "batch",
        "Job",
        "spec/template/metadata/annotations",
        true,
    ));
    v.push(FieldSpec::gk(
        "batch",
        "CronJob",
        "spec/jobTemplate/metadata/annotations",
        true,
    ));
    v.push(FieldSpec::gk(
        "batch",
        "CronJob",
        "spec/jobTemplate/spec/template/metadata/annotations",
        true,
    ));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn im(name: &str, new_name: &str, tag: &str, digest: &str) -> ImageSpec {
        ImageSpec {
            name: name.into(),
            new_name: new_name.into(),
            new_tag: tag.into(),
            digest: digest.into(),
        }
    }

    #[test]
    fn image_updates() {
        assert_eq!(
            update_image("nginx:1.0", &im("nginx", "", "1.2", "")).as_deref(),
            Some("nginx:1.2")
        );
        assert_eq!(
            update_image("nginx", &im("nginx", "reg.io/nginx", "", "sha256:ab")).as_deref(),
            Some("reg.io/nginx@sha256:ab")
        );
        assert_eq!(update_image("nginx2", &im("nginx", "", "1", "")), None);
        assert_eq!(
            split_image("localhost:5000/app:v1@sha256:x"),
            (
                "localhost:5000/app".to_string(),
                "v1".to_string(),
                "sha256:x".to_string()
            )
        );
    }
}
