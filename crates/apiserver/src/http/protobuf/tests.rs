//! Bodies are encoded with `k8s-pb` (prost types generated independently from the same .proto
//! files), so the decoder is checked against another implementation, not against itself.

use super::*;
use k8s_pb::api::core::v1 as core;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use prost::Message as _;
use serde_json::json;

fn envelope(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.into()),
            kind: Some(kind.into()),
        }),
        raw: Some(raw),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut out = b"k8s\0".to_vec();
    out.extend(unknown.encode_to_vec());
    out
}

/// ObjectMeta the way Go writes it: non-pointer fields are always on the wire, even when empty.
fn go_meta(name: &str) -> meta::ObjectMeta {
    meta::ObjectMeta {
        name: Some(name.into()),
        generate_name: Some(String::new()),
        namespace: Some("default".into()),
        self_link: Some(String::new()),
        uid: Some(String::new()),
        resource_version: Some(String::new()),
        generation: Some(0),
        creation_timestamp: Some(meta::Time {
            seconds: Some(0),
            nanos: Some(0),
        }),
        labels: [("app".to_string(), "web".to_string())].into(),
        ..Default::default()
    }
}

#[test]
fn configmap_like_kubectl_create_configmap() {
    let cm = core::ConfigMap {
        metadata: Some(go_meta("cm1")),
        immutable: None,
        data: [("a".to_string(), "b".to_string())].into(),
        binary_data: [("bin".to_string(), vec![0u8, 1, 2])].into(),
    };
    let got = decode(&envelope("v1", "ConfigMap", cm.encode_to_vec())).expect("decodes");
    assert_eq!(
        got,
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cm1", "namespace": "default", "labels": {"app": "web"}},
            "data": {"a": "b"},
            "binaryData": {"bin": "AAEC"}
        })
    );
}

#[test]
fn deployment_keeps_pointer_zeroes_and_inlines_embedded_structs() {
    use k8s_pb::api::apps::v1 as apps;
    use k8s_pb::apimachinery::pkg::api::resource::Quantity;
    use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
    let container = core::Container {
        name: Some("nginx".into()),
        image: Some("nginx:1.25".into()),
        ports: vec![core::ContainerPort {
            container_port: Some(80),
            protocol: Some("TCP".into()),
            ..Default::default()
        }],
        resources: Some(core::ResourceRequirements {
            limits: [(
                "memory".to_string(),
                Quantity {
                    string: Some("128Mi".into()),
                },
            )]
            .into(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let d = apps::Deployment {
        metadata: Some(go_meta("web")),
        spec: Some(apps::DeploymentSpec {
            replicas: Some(0),
            selector: Some(meta::LabelSelector {
                match_labels: [("app".to_string(), "web".to_string())].into(),
                ..Default::default()
            }),
            template: Some(core::PodTemplateSpec {
                metadata: Some(meta::ObjectMeta {
                    labels: [("app".to_string(), "web".to_string())].into(),
                    ..Default::default()
                }),
                spec: Some(core::PodSpec {
                    containers: vec![container],
                    volumes: vec![core::Volume {
                        name: Some("cfg".into()),
                        volume_source: Some(core::VolumeSource {
                            config_map: Some(core::ConfigMapVolumeSource {
                                local_object_reference: Some(core::LocalObjectReference {
                                    name: Some("cm1".into()),
                                }),
                                ..Default::default()
                            }),
                            ..Default::default()
                        }),
                    }],
                    ..Default::default()
                }),
            }),
            strategy: Some(apps::DeploymentStrategy {
                r#type: Some("RollingUpdate".into()),
                rolling_update: Some(apps::RollingUpdateDeployment {
                    max_surge: Some(IntOrString {
                        r#type: Some(1),
                        int_val: Some(0),
                        str_val: Some("25%".into()),
                    }),
                    max_unavailable: Some(IntOrString {
                        r#type: Some(0),
                        int_val: Some(1),
                        str_val: Some(String::new()),
                    }),
                }),
            }),
            ..Default::default()
        }),
        status: None,
    };
    let got = decode(&envelope("apps/v1", "Deployment", d.encode_to_vec())).expect("decodes");
    assert_eq!(
        got["spec"]["replicas"],
        json!(0),
        "pointer field keeps its zero"
    );
    assert_eq!(
        got["spec"]["template"]["spec"]["volumes"],
        json!([{"name": "cfg", "configMap": {"name": "cm1"}}]),
        "VolumeSource and LocalObjectReference are inlined"
    );
    assert_eq!(
        got["spec"]["strategy"]["rollingUpdate"],
        json!({"maxSurge": "25%", "maxUnavailable": 1})
    );
    let c = &got["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        c["ports"],
        json!([{"containerPort": 80, "protocol": "TCP"}])
    );
    assert_eq!(c["resources"]["limits"]["memory"], json!("128Mi"));
    assert!(
        got["metadata"].get("creationTimestamp").is_none(),
        "zero Time left out"
    );
}

#[test]
fn access_review_with_extra_values_and_times() {
    use k8s_pb::api::authorization::v1 as authz;
    let sar = authz::SubjectAccessReview {
        metadata: Some(meta::ObjectMeta::default()),
        spec: Some(authz::SubjectAccessReviewSpec {
            resource_attributes: Some(authz::ResourceAttributes {
                namespace: Some("ns1".into()),
                verb: Some("get".into()),
                resource: Some("secrets".into()),
                ..Default::default()
            }),
            user: Some("alice".into()),
            groups: vec!["dev".into()],
            extra: [(
                "scopes".to_string(),
                authz::ExtraValue {
                    items: vec!["a".into(), "b".into()],
                },
            )]
            .into(),
            ..Default::default()
        }),
        status: None,
    };
    let raw = sar.encode_to_vec();
    let got = decode(&envelope(
        "authorization.k8s.io/v1",
        "SubjectAccessReview",
        raw,
    ))
    .expect("decodes");
    assert_eq!(
        got["spec"]["extra"],
        json!({"scopes": ["a", "b"]}),
        "ExtraValue is a bare array"
    );
    assert_eq!(got["spec"]["groups"], json!(["dev"]));
    assert_eq!(got["spec"]["resourceAttributes"]["verb"], json!("get"));

    let ev = k8s_pb::api::events::v1::Event {
        metadata: Some(go_meta("e1")),
        event_time: Some(meta::MicroTime {
            seconds: Some(1_700_000_000),
            nanos: Some(123_456_789),
        }),
        deprecated_first_timestamp: Some(meta::Time {
            seconds: Some(1_700_000_000),
            nanos: Some(0),
        }),
        ..Default::default()
    };
    let got = decode(&envelope("events.k8s.io/v1", "Event", ev.encode_to_vec())).expect("decodes");
    assert_eq!(got["eventTime"], json!("2023-11-14T22:13:20.123456Z"));
    assert_eq!(
        got["deprecatedFirstTimestamp"],
        json!("2023-11-14T22:13:20Z")
    );
}

#[test]
fn delete_options_fall_back_to_meta_v1() {
    let opts = meta::DeleteOptions {
        propagation_policy: Some("Foreground".into()),
        ..Default::default()
    };
    let got = decode(&envelope("v1", "DeleteOptions", opts.encode_to_vec())).expect("decodes");
    assert_eq!(got["propagationPolicy"], json!("Foreground"));
}

#[test]
fn bad_bodies_are_errors_not_panics() {
    assert!(matches!(
        decode(b"{\"kind\":\"ConfigMap\"}"),
        Err(ProtoError::Magic)
    ));
    assert!(matches!(
        decode(&envelope("v1", "NoSuchKind", vec![])),
        Err(ProtoError::UnknownKind { .. })
    ));
    let mut truncated = envelope(
        "v1",
        "ConfigMap",
        core::ConfigMap::default().encode_to_vec(),
    );
    truncated.extend([0x12, 0x40, 0x01]); // field 2 claims 64 bytes, has 1
    assert!(matches!(decode(&truncated), Err(ProtoError::Malformed(..))));
    // Wrong wire type for a known field: metadata (field 1) as a varint.
    assert!(decode(&envelope("v1", "ConfigMap", vec![0x08, 0x01])).is_err());
    // Kubernetes 1.33 has no recursive message, but the guard still bounds the recursion.
    let cm = find("k8s.io.api.core.v1.ConfigMap").expect("ConfigMap in schema");
    assert!(matches!(
        message(cm, &[], 0, MAX_DEPTH + 1),
        Err(ProtoError::TooDeep)
    ));
}

#[test]
fn go_durations() {
    for (ns, want) in [
        (0i64, "0s"),
        (1, "1ns"),
        (1_500, "1.5µs"),
        (500_000_000, "500ms"),
        (1_500_000_000, "1.5s"),
        (90_000_000_000, "1m30s"),
        (3_600_000_000_000, "1h0m0s"),
        (-2_000_000_000, "-2s"),
    ] {
        assert_eq!(go_duration(ns), want, "{ns}ns");
    }
}

mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        /// Arbitrary bytes after the magic never panic the decoder.
        #[test]
        fn arbitrary_bodies_never_panic(raw in proptest::collection::vec(any::<u8>(), 0..512),
                                        kind in prop::sample::select(vec!["ConfigMap", "Deployment", "Pod", "Secret"])) {
            let api = if kind == "Deployment" { "apps/v1" } else { "v1" };
            let _ = decode(&envelope(api, kind, raw.clone()));
            let mut direct = b"k8s\0".to_vec();
            direct.extend(raw);
            let _ = decode(&direct);
        }
    }
}
