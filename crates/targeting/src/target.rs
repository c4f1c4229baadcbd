//! Targeting of bundles at clusters: candidate clusters come from a label/name/group index (no
//! bundle × cluster scan), the matcher decides, options are merged and BundleDeployments built.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use fleet_api::keys::*;
use fleet_api::{
    Bundle, BundleDeployment, BundleDeploymentOptions, BundleDeploymentSpec, BundleResource,
    Cluster,
};
use kube::core::ObjectMeta;
use serde::Serialize;

use crate::Error;
use crate::fleet::{Fleet, name_of as name, ns_of as ns};
use crate::matcher::BundleMatch;
use crate::options::{deployment_id, merge};

/// One (bundle, cluster) pair that gets a BundleDeployment.
#[derive(Clone, Debug)]
pub struct Target {
    /// The cluster as it was when targeted (stays valid while the [`Fleet`] changes).
    pub cluster: Arc<Cluster>,
    /// Name of the matched bundle target.
    pub target_name: String,
    /// Effective options (shared between clusters that get identical options).
    pub options: Arc<BundleDeploymentOptions>,
    /// `manifestID:optionsHash`.
    pub deployment_id: String,
    /// The cluster's index in the [`Fleet`] it was targeted from, so the rollout's pass over the
    /// same `Fleet` finds its view without looking its name up again
    /// ([`Fleet::target_view`]).
    pub cluster_id: usize,
}

/// Statistics of one targeting pass.
#[derive(Clone, Copy, Debug, Default)]
pub struct Stats {
    /// Clusters the matcher examined.
    pub evaluated: usize,
}

#[derive(Serialize)]
struct Manifest<'a> {
    resources: &'a [BundleResource],
}

/// The Content name / manifest ID of a bundle's resources.
pub fn manifest_id(bundle: &Bundle) -> String {
    let json = fleet_api::fleetyaml::go_json_ordered(&Manifest {
        resources: &bundle.spec.resources,
    })
    .unwrap_or_default();
    fleet_api::names::manifest_id(&json)
}

/// Computes the targets of `bundle`, sorted by cluster name.
pub fn targets(
    bundle: &Bundle,
    fleet: &Fleet,
    manifest_id: &str,
    stats: &mut Stats,
) -> Result<Vec<Target>, Error> {
    let bm = BundleMatch::new(bundle)?;
    let mut seen = vec![false; fleet.id_bound()];
    let mut cands = Vec::new();
    for n in fleet.namespaces_for(bundle) {
        for (m, is_cust) in &bm.targets {
            if !is_cust {
                fleet.candidates(m, &n, &mut seen, &mut cands);
            }
        }
    }
    // Sorted by cluster name (then namespace) before evaluation: targets come out in that order
    // and the first failing cluster is always the same one.
    let mut cands: Vec<(u64, usize, &Arc<Cluster>)> = cands
        .into_iter()
        .filter_map(|i| fleet.ranked(i).map(|(r, c)| (r, i, c)))
        .collect();
    cands.sort_unstable_by_key(|(r, _, _)| *r);
    let spec = &bundle.spec;
    let all_matches = spec.target_customization_mode == "AllMatches";
    // Options per (target, customisations) are the same for every cluster unless values depend on
    // the cluster: cache them with their deployment ID (and the variant with upstream's empty
    // helm block for labelled clusters).
    struct Entry {
        opts: Arc<BundleDeploymentOptions>,
        id: Option<String>,
        quirk: Option<(Arc<BundleDeploymentOptions>, String)>,
    }
    let mut cache: HashMap<(usize, Vec<usize>), Entry> = HashMap::new();
    let mut out = Vec::new();
    for (_, ci, cluster) in cands {
        stats.evaluated += 1;
        let Some(view) = fleet.view_of(ci) else {
            continue;
        };
        let Some(ti) = bm.target(&view) else { continue };
        let t = &spec.targets[ti];
        if t.do_not_deploy {
            continue;
        }
        let custs: Vec<usize> = if all_matches {
            bm.all_customizations(&view)
        } else {
            bm.first_customization(&view).into_iter().collect()
        };
        if custs.iter().any(|c| spec.targets[*c].do_not_deploy) {
            continue;
        }
        let entry = cache.entry((ti, custs.clone())).or_insert_with(|| {
            let target_opts = if all_matches {
                custs.iter().fold(t.options.clone(), |acc, c| {
                    merge(&acc, &spec.targets[*c].options)
                })
            } else {
                custs
                    .first()
                    .map(|c| spec.targets[*c].options.clone())
                    .unwrap_or_else(|| t.options.clone())
            };
            let opts = merge(&spec.options, &target_opts);
            let id = (!crate::values::depends_on_cluster(&opts))
                .then(|| deployment_id(manifest_id, &opts));
            Entry {
                opts: Arc::new(opts),
                id,
                quirk: None,
            }
        });
        let labels = view.labels;
        let (options, id) = match &entry.id {
            Some(id) => {
                let labelled = labels.keys().any(|k| crate::values::usable_label(k));
                if labelled {
                    // Upstream normalises options for labelled clusters (helm block and values
                    // map always present); computed once per cache entry.
                    let q = entry.quirk.get_or_insert_with(|| {
                        let mut o = (*entry.opts).clone();
                        if crate::values::normalize_for_labelled(&mut o) {
                            let qid = deployment_id(manifest_id, &o);
                            (Arc::new(o), qid)
                        } else {
                            (entry.opts.clone(), id.clone())
                        }
                    });
                    (q.0.clone(), q.1.clone())
                } else {
                    (entry.opts.clone(), id.clone())
                }
            }
            None => {
                let mut o = (*entry.opts).clone();
                crate::values::preprocess(&mut o, cluster).map_err(|e| Error::Cluster {
                    bundle: format!("{}/{}", ns(&bundle.metadata), name(&bundle.metadata)),
                    cluster: format!("{}/{}", ns(&cluster.metadata), view.name),
                    source: Box::new(e),
                })?;
                let id = deployment_id(manifest_id, &o);
                (Arc::new(o), id)
            }
        };
        out.push(Target {
            cluster: cluster.clone(),
            target_name: t.name.clone(),
            options,
            deployment_id: id,
            cluster_id: ci,
        });
    }
    Ok(out)
}

/// The namespace of a cluster's BundleDeployments: its cluster namespace (from its status, else
/// the name upstream gives it), known without building a BundleDeployment.
pub fn bundle_deployment_namespace(cluster: &Cluster) -> std::borrow::Cow<'_, str> {
    match cluster.status.as_ref().map(|s| s.namespace.as_str()) {
        Some(n) if !n.is_empty() => std::borrow::Cow::Borrowed(n),
        _ => std::borrow::Cow::Owned(fleet_api::names::cluster_namespace(
            ns(&cluster.metadata),
            name(&cluster.metadata),
        )),
    }
}

/// The BundleDeployment the controller writes for a target (all options staged and current).
pub fn bundle_deployment(
    bundle: &Bundle,
    cluster: &Cluster,
    t: &Target,
    manifest_id: &str,
) -> BundleDeployment {
    let cns = ns(&cluster.metadata);
    let cname = name(&cluster.metadata);
    let namespace = bundle_deployment_namespace(cluster).into_owned();
    let mut labels: BTreeMap<String, String> = BTreeMap::new();
    for (k, v) in bundle.metadata.labels.iter().flatten() {
        let fleet_label = k.starts_with(FLEET_LABEL_PREFIX);
        if fleet_label || !(k.contains("cattle.io/") || k.starts_with("kubectl.kubernetes.io/")) {
            labels.insert(k.clone(), v.clone());
        }
    }
    labels.insert(BUNDLE_LABEL.into(), name(&bundle.metadata).into());
    labels.insert(BUNDLE_NAMESPACE_LABEL.into(), ns(&bundle.metadata).into());
    labels.insert(MANAGED_LABEL.into(), "true".into());
    labels.insert(CLUSTER_NAMESPACE_LABEL.into(), cns.into());
    labels.insert(CLUSTER_LABEL.into(), cname.into());
    labels.insert(CONTENT_NAME_LABEL.into(), manifest_id.into());
    let paused = bundle.spec.paused || cluster.spec.paused;
    let mut bd = BundleDeployment::new(
        name(&bundle.metadata),
        BundleDeploymentSpec {
            paused,
            staged_options: (*t.options).clone(),
            staged_deployment_id: t.deployment_id.clone(),
            options: (*t.options).clone(),
            deployment_id: t.deployment_id.clone(),
            depends_on: bundle.spec.depends_on.clone(),
            correct_drift: t.options.correct_drift.clone(),
            ..Default::default()
        },
    );
    bd.metadata = ObjectMeta {
        name: Some(name(&bundle.metadata).into()),
        namespace: Some(namespace),
        labels: Some(labels),
        ..Default::default()
    };
    bd
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleet_api::ClusterGroup;
    use serde_json::json;

    fn cluster(n: &str, labels: serde_json::Value) -> Cluster {
        serde_json::from_value(json!({"apiVersion": API_VERSION, "kind": "Cluster", "metadata": {"name": n, "namespace": "fleet-default", "labels": labels}, "spec": {}})).unwrap()
    }

    fn group(n: &str, sel: serde_json::Value, labels: serde_json::Value) -> ClusterGroup {
        serde_json::from_value(json!({"apiVersion": API_VERSION, "kind": "ClusterGroup", "metadata": {"name": n, "namespace": "fleet-default", "labels": labels}, "spec": {"selector": sel}})).unwrap()
    }

    fn bundle(spec: serde_json::Value) -> Bundle {
        serde_json::from_value(json!({"apiVersion": API_VERSION, "kind": "Bundle", "metadata": {"name": "b", "namespace": "fleet-default", "labels": {"fleet.cattle.io/repo-name": "r", "team.cattle.io/x": "drop", "app": "keep"}}, "spec": spec})).unwrap()
    }

    fn fleet() -> Fleet {
        Fleet::new(
            vec![
                cluster("dev1", json!({"env": "dev"})),
                cluster(
                    "prod1",
                    json!({"env": "prod", "management.cattle.io/cluster-display-name": "pretty"}),
                ),
                cluster("prod2", json!({"env": "prod", "region": "eu"})),
                cluster("none", json!({})),
            ],
            vec![
                group(
                    "prod",
                    json!({"matchLabels": {"env": "prod"}}),
                    json!({"tier": "gold"}),
                ),
                group("all", json!({}), json!({})),
                group("nil", serde_json::Value::Null, json!({})),
            ],
            vec![],
        )
    }

    fn matched(spec: serde_json::Value) -> Vec<(String, String)> {
        let f = fleet();
        let b = bundle(spec);
        let mut st = Stats::default();
        targets(&b, &f, "s-x", &mut st)
            .unwrap()
            .into_iter()
            .map(|t| (name(&t.cluster.metadata).to_string(), t.target_name))
            .collect()
    }

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn matcher_table() {
        assert_eq!(
            matched(json!({"targets": [{"name": "default", "clusterGroup": "default"}]})),
            pairs(&[])
        );
        assert_eq!(
            matched(json!({"targets": [{"name": "t", "clusterGroup": "prod"}]})),
            pairs(&[("prod1", "t"), ("prod2", "t")])
        );
        assert_eq!(
            matched(json!({"targets": [{"name": "t", "clusterName": "pretty"}]})),
            pairs(&[("prod1", "t")])
        );
        assert_eq!(
            matched(json!({"targets": [{"name": "t", "clusterSelector": {}}]})).len(),
            4
        );
        assert_eq!(
            matched(json!({"targets": [{"name": "t"}]})),
            pairs(&[]),
            "no criterion never matches"
        );
        assert_eq!(
            matched(
                json!({"targets": [{"name": "t", "clusterGroupSelector": {"matchLabels": {"tier": "gold"}}, "clusterSelector": {"matchLabels": {"region": "eu"}}}]})
            ),
            pairs(&[("prod2", "t")])
        );
        // First matching target wins.
        assert_eq!(
            matched(
                json!({"targets": [{"name": "a", "clusterName": "dev1"}, {"name": "b", "clusterSelector": {}}]})
            ),
            pairs(&[("dev1", "a"), ("none", "b"), ("prod1", "b"), ("prod2", "b")])
        );
        // doNotDeploy on the matched target: no deployment.
        assert_eq!(
            matched(
                json!({"targets": [{"name": "a", "clusterGroup": "prod", "doNotDeploy": true}, {"name": "b", "clusterSelector": {}}]})
            ),
            pairs(&[("dev1", "b"), ("none", "b")])
        );
        // Restrictions: first len(targets)-len(restrictions) targets are customisations.
        assert_eq!(
            matched(json!({
                "targets": [{"name": "dev", "clusterSelector": {"matchLabels": {"env": "dev"}}}, {"name": "gr", "clusterGroup": "all"}],
                "targetRestrictions": [{"name": "gr", "clusterGroup": "all"}]
            })),
            pairs(&[
                ("dev1", "gr"),
                ("none", "gr"),
                ("prod1", "gr"),
                ("prod2", "gr")
            ])
        );
        // A target outside the restrictions is not deployed.
        assert_eq!(
            matched(
                json!({"targets": [{"name": "x", "clusterName": "dev1"}], "targetRestrictions": [{"clusterName": "prod1"}]})
            ),
            pairs(&[])
        );
    }

    #[test]
    fn customizations_first_and_all_matches() {
        let f = fleet();
        let spec = json!({
            "helm": {"values": {"base": 1}},
            "targets": [
                {"name": "c1", "clusterSelector": {"matchLabels": {"env": "prod"}}, "helm": {"values": {"c1": 1}}},
                {"name": "c2", "clusterSelector": {"matchLabels": {"region": "eu"}}, "helm": {"values": {"c2": 1}}, "namespace": "eu"},
                {"name": "nodeploy", "clusterName": "dev1", "doNotDeploy": true},
                {"name": "all", "clusterGroup": "all"}
            ],
            "targetRestrictions": [{"name": "all", "clusterGroup": "all"}]
        });
        let b = bundle(spec.clone());
        let t = targets(&b, &f, "s-x", &mut Stats::default()).unwrap();
        let names: Vec<_> = t.iter().map(|t| name(&t.cluster.metadata)).collect();
        assert_eq!(names, ["none", "prod1", "prod2"]);
        let v = |i: usize| {
            serde_json::Value::Object(t[i].options.helm.clone().unwrap().values.unwrap())
        };
        assert_eq!(v(2), json!({"base": 1, "c1": 1}), "FirstMatch");
        let mut s2 = spec;
        s2["targetCustomizationMode"] = json!("AllMatches");
        let b = bundle(s2);
        let t = targets(&b, &f, "s-x", &mut Stats::default()).unwrap();
        let v = serde_json::Value::Object(t[2].options.helm.clone().unwrap().values.unwrap());
        assert_eq!(v, json!({"base": 1, "c1": 1, "c2": 1}), "AllMatches");
        assert_eq!(t[2].options.namespace, "eu");
        assert_ne!(t[1].deployment_id, t[2].deployment_id);
    }

    #[test]
    fn per_cluster_templated_values() {
        let f = fleet();
        let b = bundle(json!({
            "helm": {"values": {"env": "${ .ClusterLabels.env }", "name": "${ .ClusterName }"},
                     "templateValues": {"n": "${ len .ClusterLabels }"}},
            "targets": [{"name": "all", "clusterSelector": {"matchLabels": {"env": "prod"}}}]
        }));
        let t = targets(&b, &f, "s-x", &mut Stats::default()).unwrap();
        let v = |i: usize| {
            serde_json::Value::Object(t[i].options.helm.clone().unwrap().values.unwrap())
        };
        assert_eq!(v(0), json!({"env": "prod", "name": "prod1", "n": 2}));
        assert_eq!(v(1), json!({"env": "prod", "name": "prod2", "n": 2}));
        assert_eq!(
            t[0].options.helm.as_ref().unwrap().template_values.len(),
            1,
            "templateValues stay in the options, as upstream"
        );
        assert_ne!(t[0].deployment_id, t[1].deployment_id);

        // A helm block without values gets an empty values map on labelled clusters only.
        let b = bundle(json!({"helm": {"releaseName": "r"},
                              "targets": [{"name": "all", "clusterGroup": "all"}]}));
        let t = targets(&b, &f, "s-x", &mut Stats::default()).unwrap();
        let has_values: Vec<_> = t
            .iter()
            .map(|t| {
                (
                    name(&t.cluster.metadata).to_string(),
                    t.options.helm.as_ref().unwrap().values.is_some(),
                )
            })
            .collect();
        assert_eq!(
            has_values,
            [
                ("dev1".to_string(), true),
                ("none".to_string(), false),
                ("prod1".to_string(), true),
                ("prod2".to_string(), true)
            ]
        );

        let b = bundle(json!({
            "helm": {"values": {"r": "${ .ClusterLabels.region }"}},
            "targets": [{"name": "all", "clusterGroup": "prod"}]
        }));
        let err = targets(&b, &f, "s-x", &mut Stats::default())
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("bundle fleet-default/b: cluster fleet-default/prod1: failed to render helm values template: template: values:1:20: executing \"values\" at <.ClusterLabels.region>: map has no entry for key \"region\""),
            "{err}"
        );
    }

    #[test]
    fn bundle_deployment_shape() {
        let f = fleet();
        let b = bundle(json!({"targets": [{"name": "t", "clusterName": "dev1"}], "paused": true}));
        let t = targets(&b, &f, "s-abc", &mut Stats::default()).unwrap();
        let bd = bundle_deployment(&b, &t[0].cluster, &t[0], "s-abc");
        assert_eq!(
            bd.metadata.namespace.as_deref(),
            Some(fleet_api::names::cluster_namespace("fleet-default", "dev1").as_str())
        );
        let l = bd.metadata.labels.unwrap();
        assert_eq!(l["fleet.cattle.io/bundle-name"], "b");
        assert_eq!(l["fleet.cattle.io/content-name"], "s-abc");
        assert_eq!(l["fleet.cattle.io/repo-name"], "r");
        assert_eq!(l["app"], "keep");
        assert!(!l.contains_key("team.cattle.io/x"));
        assert!(bd.spec.paused);
        assert!(bd.spec.deployment_id.starts_with("s-abc:"));
    }

    proptest::proptest! {
        /// The indexed path decides exactly like a brute-force scan over every cluster.
        #[test]
        fn index_agrees_with_scan(
            labels in proptest::collection::vec(proptest::collection::btree_map("[ab]", "[xy]", 0..3), 1..12),
            sel in proptest::collection::btree_map("[ab]", "[xy]", 0..2),
            by_group in proptest::bool::ANY,
        ) {
            let clusters: Vec<Cluster> = labels.iter().enumerate().map(|(i, l)| cluster(&format!("c{i}"), serde_json::to_value(l).unwrap())).collect();
            let groups = vec![group("g", json!({"matchLabels": sel}), json!({}))];
            let f = Fleet::new(clusters, groups, vec![]);
            let t = if by_group { json!({"name": "t", "clusterGroup": "g"}) } else { json!({"name": "t", "clusterSelector": {"matchLabels": sel}}) };
            let b = bundle(json!({"targets": [t]}));
            let got: Vec<String> = targets(&b, &f, "s", &mut Stats::default()).unwrap().into_iter().map(|t| name(&t.cluster.metadata).to_string()).collect();
            let bm = BundleMatch::new(&b).unwrap();
            let mut want: Vec<String> = f.clusters().map(|c| name(&c.metadata)).filter(|n| bm.target(&f.view("fleet-default", n).unwrap()).is_some()).map(String::from).collect();
            want.sort();
            proptest::prop_assert_eq!(got, want);
        }
    }
}
