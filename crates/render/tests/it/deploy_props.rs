//! Property tests of the agent-side render pipeline: a bundle's content comes from a user's
//! repository, so any mix of files and contents must render or fail with an error, never
//! panic; and a valid raw-YAML bundle always comes back whole, labelled and in file order.

use fleet_api::{BundleDeploymentOptions, BundleResource};
use fleet_render::deploy::{Release, render_bundle};
use proptest::prelude::*;
use serde_json::json;

/// File names that steer every style: chart, chart-less templates, kustomize, overlays.
fn name() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "a.yaml",
        "b.json",
        "sub/c.yml",
        "templates/t.yaml",
        "templates/_helpers.tpl",
        "Chart.yaml",
        "values.yaml",
        "kustomization.yaml",
        "overlays/o/a_patch.yaml",
        "overlays/o/a.yaml",
        "fleet.yaml",
    ])
    .prop_map(str::to_string)
}

/// YAML-ish text: structure characters, template actions, and a few words.
fn content() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            "apiVersion: v1\n",
            "kind: ConfigMap\n",
            "kind: List\nitems:\n- kind: Secret\n",
            "metadata:\n  name: x\n",
            "name: ",
            "resources:\n- a.yaml\n",
            "data:\n  k: v\n",
            "{{ .Values.x }}",
            "{{ if .Values.y }}",
            "{{ end }}",
            "{{ include \"n\" . }}",
            "---\n",
            "- ",
            "[",
            "]",
            "{",
            ": ",
            "&a ",
            "*a\n",
            "'",
            "\"",
            "\t",
            "\n",
            "  ",
            "x",
            "é",
        ]),
        0..24,
    )
    .prop_map(|parts| parts.concat())
}

fn options() -> impl Strategy<Value = BundleDeploymentOptions> {
    (any::<bool>(), any::<bool>(), any::<bool>()).prop_map(|(ns, overlay, kdir)| {
        let mut v = json!({"helm": {"values": {"x": "1", "y": true}}});
        if ns {
            v["namespace"] = json!("n");
        }
        if overlay {
            v["yaml"] = json!({"overlays": ["o"]});
        }
        if kdir {
            v["kustomize"] = json!({"dir": "sub"});
        }
        serde_json::from_value(v).unwrap_or_default()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn arbitrary_bundles_never_panic(
        files in prop::collection::btree_map(name(), content(), 0..6),
        opts in options(),
    ) {
        let res: Vec<BundleResource> = files
            .into_iter()
            .map(|(name, content)| BundleResource { name, content, ..Default::default() })
            .collect();
        if let Err(e) = render_bundle(&res, &Release::template("p", "m"), &opts) {
            prop_assert!(!e.to_string().is_empty());
        }
    }

    #[test]
    fn raw_yaml_bundles_come_back_whole_and_labelled(
        cms in prop::collection::btree_map("[a-z][a-z0-9]{0,8}", "[a-zA-Z0-9 ]{0,12}", 1..8),
    ) {
        let res: Vec<BundleResource> = cms
            .iter()
            .map(|(n, v)| BundleResource {
                name: format!("{n}.yaml"),
                content: format!(
                    // Quoted: a bare `y` is a YAML 1.1 boolean to Kubernetes' decoder.
                    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {n:?}\ndata:\n  v: {v:?}\n"
                ),
                ..Default::default()
            })
            .collect();
        let objs = render_bundle(
            &res,
            &Release::template("p", "m"),
            &BundleDeploymentOptions::default(),
        )
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(objs.len(), cms.len());
        for (o, (n, v)) in objs.iter().zip(&cms) {
            prop_assert_eq!(&o["metadata"]["name"], &json!(n));
            prop_assert_eq!(&o["data"]["v"], &json!(v));
            prop_assert_eq!(
                &o["metadata"]["annotations"]["objectset.rio.cattle.io/id"],
                &json!("-p")
            );
        }
    }
}
