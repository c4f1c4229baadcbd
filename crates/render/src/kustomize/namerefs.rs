//! Name-reference fixing: after prefixes, suffixes and hashes renamed resources, every
//! field that refers to one of them by name (ConfigMap volumes, envFrom, secretKeyRef,
//! serviceAccountName, RoleBinding roleRef/subjects, ...) is updated to the new name.

use super::KustomizeError;
use super::fieldspec::{self, CreateKind, FieldSpec};
use super::resource::{ResId, ResMap};
use serde_json::Value;

/// A kind that can be referred to, and the fields (in other kinds) that refer to it.
struct BackRef {
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    referrers: Vec<FieldSpec>,
}

impl BackRef {
    fn selects(&self, id: &ResId) -> bool {
        (self.group.is_empty() || self.group == id.group)
            && (self.version.is_empty() || self.version == id.version)
            && (self.kind.is_empty() || self.kind == id.kind)
    }
}

/// Where pod specs live, per workload kind (group left open, as kustomize does).
const POD_SPECS: [(&str, &str, &str); 8] = [
    ("v1", "Pod", "spec"),
    ("", "PodTemplate", "template/spec"),
    ("", "Deployment", "spec/template/spec"),
    ("", "ReplicaSet", "spec/template/spec"),
    ("", "DaemonSet", "spec/template/spec"),
    ("", "StatefulSet", "spec/template/spec"),
    ("", "Job", "spec/template/spec"),
    ("", "CronJob", "spec/jobTemplate/spec/template/spec"),
];

/// Workloads whose pod spec may name a service account, claim or priority class.
const POD_OWNERS: [(&str, &str); 7] = [
    ("Pod", "spec"),
    ("StatefulSet", "spec/template/spec"),
    ("Deployment", "spec/template/spec"),
    ("ReplicationController", "spec/template/spec"),
    ("CronJob", "spec/jobTemplate/spec/template/spec"),
    ("Job", "spec/template/spec"),
    ("DaemonSet", "spec/template/spec"),
];

fn pod_refs(suffixes: &[&str]) -> Vec<FieldSpec> {
    let mut v = Vec::new();
    for (version, kind, prefix) in POD_SPECS {
        for s in suffixes {
            v.push(FieldSpec::gvk(
                "",
                version,
                kind,
                &format!("{prefix}/{s}"),
                false,
            ));
        }
    }
    v
}

fn owner_refs(suffix: &str) -> Vec<FieldSpec> {
    POD_OWNERS
        .iter()
        .map(|(kind, prefix)| FieldSpec::gk("", kind, &format!("{prefix}/{suffix}"), false))
        .collect()
}

fn back_refs() -> Vec<BackRef> {
    let rbac = "rbac.authorization.k8s.io";
    let mut out = Vec::new();
    for kind in [
        "Deployment",
        "ReplicationController",
        "ReplicaSet",
        "StatefulSet",
    ] {
        out.push(BackRef {
            group: "",
            version: "",
            kind,
            referrers: vec![FieldSpec::gk(
                "",
                "HorizontalPodAutoscaler",
                "spec/scaleTargetRef/name",
                false,
            )],
        });
    }
    let mut cm = pod_refs(&[
        "volumes/configMap/name",
        "containers/env/valueFrom/configMapKeyRef/name",
        "initContainers/env/valueFrom/configMapKeyRef/name",
        "containers/envFrom/configMapRef/name",
        "initContainers/envFrom/configMapRef/name",
        "volumes/projected/sources/configMap/name",
    ]);
    cm.push(FieldSpec::gk(
        "",
        "Node",
        "spec/configSource/configMap",
        false,
    ));
    cm.push(FieldSpec::gk("", "Role", "rules/resourceNames", false));
    cm.push(FieldSpec::gk(
        "",
        "ClusterRole",
        "rules/resourceNames",
        false,
    ));
    cm.push(FieldSpec::gk(
        "",
        "Ingress",
        "metadata/annotations/nginx.ingress.kubernetes.io\\/fastcgi-params-configmap",
        false,
    ));
    out.push(BackRef {
        group: "",
        version: "v1",
        kind: "ConfigMap",
        referrers: cm,
    });
    let mut sec = pod_refs(&[
        "volumes/secret/secretName",
        "containers/env/valueFrom/secretKeyRef/name",
        "initContainers/env/valueFrom/secretKeyRef/name",
        "containers/envFrom/secretRef/name",
        "initContainers/envFrom/secretRef/name",
        "imagePullSecrets/name",
        "volumes/projected/sources/secret/name",
    ]);
    for p in [
        "spec/tls/secretName",
        "metadata/annotations/ingress.kubernetes.io\\/auth-secret",
        "metadata/annotations/nginx.ingress.kubernetes.io\\/auth-secret",
        "metadata/annotations/nginx.ingress.kubernetes.io\\/auth-tls-secret",
    ] {
        sec.push(FieldSpec::gk("", "Ingress", p, false));
    }
    sec.push(FieldSpec::gk(
        "",
        "ServiceAccount",
        "imagePullSecrets/name",
        false,
    ));
    for p in [
        "parameters/secretName",
        "parameters/adminSecretName",
        "parameters/userSecretName",
        "parameters/secretRef",
    ] {
        sec.push(FieldSpec::gk("", "StorageClass", p, false));
    }
    sec.push(FieldSpec::gk("", "Role", "rules/resourceNames", false));
    sec.push(FieldSpec::gk(
        "",
        "ClusterRole",
        "rules/resourceNames",
        false,
    ));
    sec.push(FieldSpec::gvk(
        "serving.knative.dev",
        "v1",
        "Service",
        "spec/template/spec/containers/env/valueFrom/secretKeyRef/name",
        false,
    ));
    sec.push(FieldSpec::gk(
        "",
        "PersistentVolume",
        "spec/azureFile/secretName",
        false,
    ));
    out.push(BackRef {
        group: "",
        version: "v1",
        kind: "Secret",
        referrers: sec,
    });
    let mut svc = vec![FieldSpec::gk(
        "apps",
        "StatefulSet",
        "spec/serviceName",
        false,
    )];
    for p in [
        "spec/rules/http/paths/backend/serviceName",
        "spec/backend/serviceName",
        "spec/rules/http/paths/backend/service/name",
        "spec/defaultBackend/service/name",
    ] {
        svc.push(FieldSpec::gk("", "Ingress", p, false));
    }
    svc.push(FieldSpec::gk(
        "apiregistration.k8s.io",
        "APIService",
        "spec/service/name",
        false,
    ));
    for kind in [
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
    ] {
        svc.push(FieldSpec::gk(
            "admissionregistration.k8s.io",
            kind,
            "webhooks/clientConfig/service",
            false,
        ));
    }
    out.push(BackRef {
        group: "",
        version: "v1",
        kind: "Service",
        referrers: svc,
    });
    out.push(BackRef {
        group: rbac,
        version: "",
        kind: "Role",
        referrers: vec![FieldSpec::gk(rbac, "RoleBinding", "roleRef/name", false)],
    });
    out.push(BackRef {
        group: rbac,
        version: "",
        kind: "ClusterRole",
        referrers: vec![
            FieldSpec::gk(rbac, "RoleBinding", "roleRef/name", false),
            FieldSpec::gk(rbac, "ClusterRoleBinding", "roleRef/name", false),
        ],
    });
    let mut sa = vec![
        FieldSpec::gk(rbac, "RoleBinding", "subjects", false),
        FieldSpec::gk(rbac, "ClusterRoleBinding", "subjects", false),
    ];
    sa.extend(owner_refs("serviceAccountName"));
    out.push(BackRef {
        group: "",
        version: "v1",
        kind: "ServiceAccount",
        referrers: sa,
    });
    out.push(BackRef {
        group: "",
        version: "v1",
        kind: "PersistentVolumeClaim",
        referrers: owner_refs("volumes/persistentVolumeClaim/claimName"),
    });
    out.push(BackRef {
        group: "",
        version: "v1",
        kind: "PersistentVolume",
        referrers: vec![
            FieldSpec::gk("", "PersistentVolumeClaim", "spec/volumeName", false),
            FieldSpec::gk("", "ClusterRole", "rules/resourceNames", false),
        ],
    });
    out.push(BackRef {
        group: "storage.k8s.io",
        version: "v1",
        kind: "StorageClass",
        referrers: vec![
            FieldSpec::gk("", "PersistentVolume", "spec/storageClassName", false),
            FieldSpec::gk("", "PersistentVolumeClaim", "spec/storageClassName", false),
            FieldSpec::gk(
                "",
                "StatefulSet",
                "spec/volumeClaimTemplates/spec/storageClassName",
                false,
            ),
        ],
    });
    out.push(BackRef {
        group: "scheduling.k8s.io",
        version: "v1",
        kind: "PriorityClass",
        referrers: owner_refs("priorityClassName"),
    });
    // kustomize 4.5.4 also lists IngressClass, but under the group "networking.k8s.io/v1",
    // which no resource has, so such references are never rewritten; we match that.
    out
}

/// Snapshot of a candidate referral.
#[derive(Clone)]
struct Cand {
    cur: ResId,
    org_ns: String,
    prev: Vec<ResId>,
    prefixes: Vec<String>,
    suffixes: Vec<String>,
}

/// Rewrites name references in every resource (kustomize's `FixBackReferences`).
pub fn fix_back_references(acc: &mut ResMap) -> Result<(), KustomizeError> {
    let refs = back_refs();
    let cands: Vec<Cand> = acc
        .list
        .iter()
        .map(|r| Cand {
            cur: r.id(),
            org_ns: r.org_id().effective_namespace().to_string(),
            prev: r.prev_ids.clone(),
            prefixes: r.prefixes.clone(),
            suffixes: r.suffixes.clone(),
        })
        .collect();
    for r in acc.list.iter_mut() {
        let org = r.org_id();
        let referrer = Referrer {
            cur: r.id(),
            prefixes: r.prefixes.clone(),
            suffixes: r.suffixes.clone(),
            role_ref: role_ref_gvk(&r.obj),
        };
        let pool: Vec<&Cand> = candidates_for(&referrer.cur, &r.obj, &cands);
        for br in &refs {
            for spec in br.referrers.iter().filter(|s| s.selects(&org)) {
                let source = r.source.clone();
                fieldspec::apply(
                    &mut r.obj,
                    &spec.path,
                    false,
                    CreateKind::Scalar,
                    &mut |v| set_ref(v, br, spec, &referrer, &pool),
                )
                .map_err(|e| {
                    KustomizeError::in_file(
                        &source,
                        format!(
                            "updating name reference in '{}' field of '{}':{e}",
                            spec.path,
                            referrer.cur.display()
                        ),
                    )
                })?;
            }
        }
    }
    Ok(())
}

struct Referrer {
    cur: ResId,
    prefixes: Vec<String>,
    suffixes: Vec<String>,
    role_ref: Option<(String, String)>,
}

fn role_ref_gvk(obj: &Value) -> Option<(String, String)> {
    let rr = obj.get("roleRef")?;
    let g = rr.get("apiGroup")?.as_str()?.to_string();
    let k = rr.get("kind")?.as_str()?.to_string();
    Some((g, k))
}

/// kustomize's `SubsetThatCouldBeReferencedByResource`.
fn candidates_for<'a>(referrer: &ResId, obj: &Value, cands: &'a [Cand]) -> Vec<&'a Cand> {
    if referrer.is_cluster_scoped() {
        return cands.iter().collect();
    }
    let mut rb_namespaces: Vec<String> = Vec::new();
    if referrer.kind == "RoleBinding"
        && let Some(Value::Array(subjects)) = obj.get("subjects")
    {
        for s in subjects {
            if s.get("kind").and_then(Value::as_str) == Some("ServiceAccount")
                && let Some(ns) = s.get("namespace").and_then(Value::as_str)
            {
                rb_namespaces.push(ns.to_string());
            }
        }
    }
    cands
        .iter()
        .filter(|c| {
            c.cur.is_cluster_scoped()
                || c.cur.effective_namespace() == referrer.effective_namespace()
                || rb_namespaces.contains(&c.cur.namespace)
        })
        .collect()
}

fn set_ref(
    v: &mut Value,
    br: &BackRef,
    spec: &FieldSpec,
    referrer: &Referrer,
    pool: &[&Cand],
) -> Result<(), String> {
    match v {
        Value::Null => Ok(()),
        Value::String(s) => {
            if let Some(c) = select_referral(s, pool, br, spec, referrer)?
                && c.cur.name != *s
            {
                *s = c.cur.name.clone();
            }
            Ok(())
        }
        Value::Array(items) => {
            for it in items {
                set_ref(it, br, spec, referrer, pool)?;
            }
            Ok(())
        }
        Value::Object(m) => {
            let Some(Value::String(old)) = m.get("name").cloned() else {
                return Err(" path config error; no 'name' field in node".into());
            };
            let pool: Vec<&Cand> = match m.get("namespace").and_then(Value::as_str) {
                None => pool.to_vec(),
                Some(ns) => {
                    // Original namespace first, then current (both "effective": "" is
                    // "default", cluster-scoped resources have none).
                    let by_org: Vec<&Cand> = pool
                        .iter()
                        .copied()
                        .filter(|c| !c.cur.is_cluster_scoped() && c.org_ns == ns)
                        .collect();
                    if !by_org.is_empty() {
                        by_org
                    } else {
                        pool.iter()
                            .copied()
                            .filter(|c| {
                                !c.cur.is_cluster_scoped() && c.cur.effective_namespace() == ns
                            })
                            .collect()
                    }
                }
            };
            let Some(c) = select_referral(&old, &pool, br, spec, referrer)? else {
                return Ok(());
            };
            if c.cur.name == old && c.cur.namespace.is_empty() {
                return Ok(());
            }
            m.insert("name".into(), Value::String(c.cur.name.clone()));
            if !c.cur.namespace.is_empty() {
                m.insert("namespace".into(), Value::String(c.cur.namespace.clone()));
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// kustomize's `selectReferral`: narrow the candidates until one is left.
fn select_referral<'a>(
    old: &str,
    pool: &[&'a Cand],
    br: &BackRef,
    spec: &FieldSpec,
    referrer: &Referrer,
) -> Result<Option<&'a Cand>, String> {
    let mut c: Vec<&Cand> = pool
        .iter()
        .copied()
        .filter(|c| c.prev.iter().any(|p| p.name == old))
        .filter(|c| c.prev.iter().any(|p| br.selects(p)))
        .collect();
    if spec.path.ends_with("roleRef/name")
        && let Some((g, k)) = &referrer.role_ref
    {
        c.retain(|c| {
            c.prev
                .iter()
                .any(|p| (g.is_empty() || p.group == *g) && (k.is_empty() || p.kind == *k))
        });
    }
    if !referrer.cur.is_cluster_scoped() {
        c.retain(|c| {
            c.cur.is_cluster_scoped()
                || c.cur.kind == "ServiceAccount"
                || c.cur.effective_namespace() == referrer.cur.effective_namespace()
        });
    }
    if c.len() == 1 {
        return Ok(c.first().copied());
    }
    c.retain(|c| c.prefixes == referrer.prefixes && c.suffixes == referrer.suffixes);
    match c.len() {
        0 => Ok(None),
        1 => Ok(c.first().copied()),
        _ => {
            let first = c[0].cur.name.clone();
            if c.iter().all(|x| x.cur.name == first) {
                Ok(c.first().copied())
            } else {
                let ids: Vec<String> = c.iter().map(|x| x.cur.display()).collect();
                Err(format!(
                    " found multiple possible referrals: {}",
                    ids.join(", ")
                ))
            }
        }
    }
}
