//! The strategic-merge case table shared by the table test and the kubectl oracle test.
// Table of strategic-merge-patch cases: (original, patch, expected, kind), each naming the documented
// Kubernetes behaviour it pins down. Sources: the Kubernetes task "Update API Objects in Place Using
// kubectl patch", the design docs "strategic-merge-patch.md" and "preserve-order-in-strategic-merge-patch.md"
// (sig-api-machinery), and the patch strategies/merge keys in the API reference (generated table).

use serde_json::{Value, json};

/// What a case expects: a result document, or an error whose message contains the given text.
pub enum Expect {
    Doc(Value),
    Err(&'static str),
}

pub struct Case {
    pub name: &'static str,
    /// (apiVersion, kind) whose generated schema is used; None = no schema (custom resource).
    pub kind: Option<(&'static str, &'static str)>,
    pub original: Value,
    pub patch: Value,
    pub expect: Expect,
}

fn ok(v: Value) -> Expect {
    Expect::Doc(v)
}

const POD: Option<(&str, &str)> = Some(("v1", "Pod"));
const DEPLOY: Option<(&str, &str)> = Some(("apps/v1", "Deployment"));

fn pod(spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec})
}

fn ctrs(c: Value) -> Value {
    pod(json!({ "containers": c }))
}

pub fn cases() -> Vec<Case> {
    vec![
        // ---------------------------------------------------------------- maps and nulls
        // Documented: maps are merged recursively (fields absent from the patch are kept).
        Case {
            name: "map_merge_recursive",
            kind: POD,
            original: json!({"metadata": {"labels": {"a": "1"}}}),
            patch: json!({"metadata": {"labels": {"b": "2"}}}),
            expect: ok(json!({"metadata": {"labels": {"a": "1", "b": "2"}}})),
        },
        // Documented: a null value in the patch deletes the field.
        Case {
            name: "null_deletes_field",
            kind: POD,
            original: json!({"metadata": {"labels": {"a": "1", "b": "2"}}}),
            patch: json!({"metadata": {"labels": {"a": null}}}),
            expect: ok(json!({"metadata": {"labels": {"b": "2"}}})),
        },
        // Documented: deleting a field that does not exist is a no-op.
        Case {
            name: "null_for_missing_field_is_noop",
            kind: POD,
            original: json!({"spec": {"hostname": "h"}}),
            patch: json!({"spec": {"subdomain": null}}),
            expect: ok(json!({"spec": {"hostname": "h"}})),
        },
        // Documented: scalars are replaced.
        Case {
            name: "scalar_replaced",
            kind: DEPLOY,
            original: json!({"spec": {"replicas": 1, "paused": false}}),
            patch: json!({"spec": {"replicas": 3}}),
            expect: ok(json!({"spec": {"replicas": 3, "paused": false}})),
        },
        // Documented: a value of a different type replaces the original value.
        Case {
            name: "type_change_replaces",
            kind: Some(("v1", "ConfigMap")),
            original: json!({"metadata": {"annotations": {"a": "x"}}}),
            patch: json!({"metadata": {"annotations": "flat"}}),
            expect: ok(json!({"metadata": {"annotations": "flat"}})),
        },
        // Documented: nulls inside a newly added map are dropped (IgnoreUnmatchedNulls).
        Case {
            name: "nulls_in_new_map_dropped",
            kind: POD,
            original: json!({"metadata": {"name": "p"}}),
            patch: json!({"metadata": {"annotations": {"a": "1", "b": null}}}),
            expect: ok(json!({"metadata": {"name": "p", "annotations": {"a": "1"}}})),
        },
        // Documented: ConfigMap data is a plain map: merged key by key, null removes a key.
        Case {
            name: "configmap_data_merge_and_delete",
            kind: Some(("v1", "ConfigMap")),
            original: json!({"data": {"a": "1", "b": "2"}}),
            patch: json!({"data": {"b": null, "c": "3"}}),
            expect: ok(json!({"data": {"a": "1", "c": "3"}})),
        },
        // Documented: a patch on an empty original creates the fields.
        Case {
            name: "patch_into_empty_original",
            kind: DEPLOY,
            original: json!({}),
            patch: json!({"spec": {"replicas": 2}}),
            expect: ok(json!({"spec": {"replicas": 2}})),
        },
        // ---------------------------------------------------------------- containers (merge key: name)
        // Documented (kubectl patch task): containers merge by name; untouched fields survive.
        Case {
            name: "containers_merge_by_name",
            kind: POD,
            original: ctrs(
                json!([{"name": "app", "image": "nginx:1", "imagePullPolicy": "Always"}]),
            ),
            patch: json!({"spec": {"containers": [{"name": "app", "image": "nginx:2"}]}}),
            expect: ok(ctrs(
                json!([{"name": "app", "image": "nginx:2", "imagePullPolicy": "Always"}]),
            )),
        },
        // Documented (kubectl patch task, v1.11+): a new container from a patch without $setElementOrder
        // is placed before the existing ones (output lists patch-demo-ctr-2 first).
        Case {
            name: "containers_add_goes_first_without_order",
            kind: DEPLOY,
            original: json!({"spec": {"template": {"spec": {"containers": [{"name": "patch-demo-ctr", "image": "nginx"}]}}}}),
            patch: json!({"spec": {"template": {"spec": {"containers": [{"name": "patch-demo-ctr-2", "image": "redis"}]}}}}),
            expect: ok(json!({"spec": {"template": {"spec": {"containers": [
                {"name": "patch-demo-ctr-2", "image": "redis"},
                {"name": "patch-demo-ctr", "image": "nginx"}]}}}})),
        },
        // Documented (preserve-order proposal): $setElementOrder fixes the final order.
        Case {
            name: "containers_add_with_set_element_order",
            kind: POD,
            original: ctrs(json!([{"name": "a", "image": "x"}])),
            patch: json!({"spec": {"$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
                                   "containers": [{"name": "b", "image": "y"}]}}),
            expect: ok(ctrs(
                json!([{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]),
            )),
        },
        // Documented: `$patch: delete` with the merge key removes the list item.
        Case {
            name: "containers_delete_directive",
            kind: POD,
            original: ctrs(json!([{"name": "a", "image": "x"}, {"name": "b", "image": "y"}])),
            patch: json!({"spec": {"containers": [{"name": "b", "$patch": "delete"}]}}),
            expect: ok(ctrs(json!([{"name": "a", "image": "x"}]))),
        },
        // Documented: a `{"$patch": "replace"}` list element replaces the whole list with the patch's items.
        Case {
            name: "containers_replace_directive",
            kind: POD,
            original: ctrs(json!([{"name": "a", "image": "x"}, {"name": "b", "image": "y"}])),
            patch: json!({"spec": {"containers": [{"$patch": "replace"}, {"name": "c", "image": "z"}]}}),
            expect: ok(ctrs(json!([{"name": "c", "image": "z"}]))),
        },
        // Documented: null inside a matched item deletes that field of the item.
        Case {
            name: "container_field_null_deletes",
            kind: POD,
            original: ctrs(json!([{"name": "a", "image": "x", "command": ["sh"]}])),
            patch: json!({"spec": {"containers": [{"name": "a", "command": null}]}}),
            expect: ok(ctrs(json!([{"name": "a", "image": "x"}]))),
        },
        // Documented: unmatched live items are kept in place; the patched item keeps its position.
        Case {
            name: "containers_middle_item_updated_order_kept",
            kind: POD,
            original: ctrs(json!([{"name": "a"}, {"name": "b", "image": "1"}, {"name": "c"}])),
            patch: json!({"spec": {"containers": [{"name": "b", "image": "2"}]}}),
            expect: ok(ctrs(
                json!([{"name": "a"}, {"name": "b", "image": "2"}, {"name": "c"}]),
            )),
        },
        // Documented: initContainers share the containers' merge key (name).
        Case {
            name: "init_containers_merge_by_name",
            kind: POD,
            original: pod(json!({"initContainers": [{"name": "init", "image": "busybox"}]})),
            patch: json!({"spec": {"initContainers": [{"name": "init", "args": ["x"]}]}}),
            expect: ok(pod(
                json!({"initContainers": [{"name": "init", "image": "busybox", "args": ["x"]}]}),
            )),
        },
        // Documented: nulls inside a newly added list item are dropped.
        Case {
            name: "new_container_nulls_dropped",
            kind: POD,
            original: ctrs(json!([])),
            patch: json!({"spec": {"containers": [{"name": "b", "image": "x", "command": null}]}}),
            expect: ok(ctrs(json!([{"name": "b", "image": "x"}]))),
        },
        // Documented: a merge-list item without its merge key is an error.
        Case {
            name: "container_without_merge_key_errors",
            kind: POD,
            original: ctrs(json!([{"name": "a"}])),
            patch: json!({"spec": {"containers": [{"image": "x"}]}}),
            expect: Expect::Err(
                "/spec/containers/0: list item does not contain the merge key \"name\"",
            ),
        },
        // Documented: `$patch: delete` needs the merge key.
        Case {
            name: "delete_directive_without_merge_key_errors",
            kind: POD,
            original: ctrs(json!([{"name": "a"}])),
            patch: json!({"spec": {"containers": [{"$patch": "delete"}]}}),
            expect: Expect::Err("merge key \"name\""),
        },
        // Documented: unknown `$patch` values are rejected.
        Case {
            name: "unknown_list_directive_errors",
            kind: POD,
            original: ctrs(json!([{"name": "a"}])),
            patch: json!({"spec": {"containers": [{"name": "a", "$patch": "frobnicate"}]}}),
            expect: Expect::Err("unknown patch directive"),
        },
        // `$patch: merge` (the default) on a list element merges it like a plain element (upstream
        // rejects it with "merging lists cannot yet be specified"; kustomize patches use it).
        Case {
            name: "merge_directive_in_list_is_default",
            kind: POD,
            original: ctrs(json!([{"name": "a", "image": "x"}])),
            patch: json!({"spec": {"containers": [{"name": "a", "$patch": "merge", "args": ["y"]}]}}),
            expect: ok(ctrs(json!([{"name": "a", "image": "x", "args": ["y"]}]))),
        },
        // Documented: a list given where a list was is merged; given a map, the map replaces it.
        Case {
            name: "containers_type_change_replaces",
            kind: POD,
            original: ctrs(json!([{"name": "a"}])),
            patch: json!({"spec": {"containers": {"name": "a"}}}),
            expect: ok(pod(json!({"containers": {"name": "a"}}))),
        },
        // ---------------------------------------------------------------- ports
        // Documented: container ports merge by containerPort.
        Case {
            name: "ports_merge_by_container_port",
            kind: POD,
            original: ctrs(
                json!([{"name": "a", "ports": [{"containerPort": 80, "protocol": "TCP", "name": "http"}]}]),
            ),
            patch: json!({"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 80, "name": "web"}]}]}}),
            expect: ok(ctrs(
                json!([{"name": "a", "ports": [{"containerPort": 80, "protocol": "TCP", "name": "web"}]}]),
            )),
        },
        // Documented: a new port without $setElementOrder goes before the existing ones.
        Case {
            name: "ports_add_new_port",
            kind: POD,
            original: ctrs(json!([{"name": "a", "ports": [{"containerPort": 80}]}])),
            patch: json!({"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 443}]}]}}),
            expect: ok(ctrs(
                json!([{"name": "a", "ports": [{"containerPort": 443}, {"containerPort": 80}]}]),
            )),
        },
        // Documented list-map keys containerPort+protocol (kubernetes#108255): the same port over TCP and
        // UDP are two items; a patch naming the protocol updates only the matching one.
        Case {
            name: "ports_same_number_tcp_udp_update_one",
            kind: POD,
            original: ctrs(json!([{"name": "dns", "ports": [
                {"containerPort": 53, "protocol": "TCP", "name": "dns-tcp"},
                {"containerPort": 53, "protocol": "UDP", "name": "dns"}]}])),
            patch: json!({"spec": {"containers": [{"name": "dns", "ports": [
                {"containerPort": 53, "protocol": "UDP", "name": "dns-udp"}]}]}}),
            expect: ok(ctrs(json!([{"name": "dns", "ports": [
                {"containerPort": 53, "protocol": "TCP", "name": "dns-tcp"},
                {"containerPort": 53, "protocol": "UDP", "name": "dns-udp"}]}]))),
        },
        // Same keys (containerPort+protocol): deleting the UDP port keeps the TCP one.
        Case {
            name: "ports_same_number_delete_one_protocol",
            kind: POD,
            original: ctrs(json!([{"name": "dns", "ports": [
                {"containerPort": 53, "protocol": "TCP"}, {"containerPort": 53, "protocol": "UDP"}]}])),
            patch: json!({"spec": {"containers": [{"name": "dns", "ports": [
                {"containerPort": 53, "protocol": "UDP", "$patch": "delete"}]}]}}),
            expect: ok(ctrs(
                json!([{"name": "dns", "ports": [{"containerPort": 53, "protocol": "TCP"}]}]),
            )),
        },
        // Documented (what kubectl apply sends when a port changes): delete the old, add the new, order.
        Case {
            name: "ports_change_number",
            kind: POD,
            original: ctrs(
                json!([{"name": "a", "ports": [{"containerPort": 80, "protocol": "TCP"}]}]),
            ),
            patch: json!({"spec": {"containers": [{"name": "a",
                "$setElementOrder/ports": [{"containerPort": 8080}],
                "ports": [{"containerPort": 8080}, {"containerPort": 80, "$patch": "delete"}]}]}}),
            expect: ok(ctrs(
                json!([{"name": "a", "ports": [{"containerPort": 8080}]}]),
            )),
        },
        // Documented: Service ports merge by port.
        Case {
            name: "service_ports_merge_by_port",
            kind: Some(("v1", "Service")),
            original: json!({"spec": {"selector": {"app": "x"}, "ports": [
                {"port": 80, "targetPort": 8080, "protocol": "TCP"}, {"port": 443, "targetPort": 8443}]}}),
            patch: json!({"spec": {"ports": [{"port": 80, "targetPort": 9090}]}}),
            expect: ok(json!({"spec": {"selector": {"app": "x"}, "ports": [
                {"port": 80, "targetPort": 9090, "protocol": "TCP"}, {"port": 443, "targetPort": 8443}]}})),
        },
        // Documented: Service selector is a map: merged.
        Case {
            name: "service_selector_map_merge",
            kind: Some(("v1", "Service")),
            original: json!({"spec": {"selector": {"app": "x"}}}),
            patch: json!({"spec": {"selector": {"tier": "web"}}}),
            expect: ok(json!({"spec": {"selector": {"app": "x", "tier": "web"}}})),
        },
        // ---------------------------------------------------------------- env
        // Documented: env merges by name.
        Case {
            name: "env_merge_by_name",
            kind: POD,
            original: ctrs(
                json!([{"name": "a", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}]),
            ),
            patch: json!({"spec": {"containers": [{"name": "a", "env": [{"name": "B", "value": "3"}]}]}}),
            expect: ok(ctrs(
                json!([{"name": "a", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "3"}]}]),
            )),
        },
        // Documented: env var removed with `$patch: delete`.
        Case {
            name: "env_delete_directive",
            kind: POD,
            original: ctrs(
                json!([{"name": "a", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}]),
            ),
            patch: json!({"spec": {"containers": [{"name": "a", "env": [{"name": "A", "$patch": "delete"}]}]}}),
            expect: ok(ctrs(
                json!([{"name": "a", "env": [{"name": "B", "value": "2"}]}]),
            )),
        },
        // Documented: $setElementOrder places a new env var between existing ones.
        Case {
            name: "env_insert_with_order",
            kind: POD,
            original: ctrs(
                json!([{"name": "a", "env": [{"name": "A", "value": "1"}, {"name": "C", "value": "3"}]}]),
            ),
            patch: json!({"spec": {"containers": [{"name": "a",
                "$setElementOrder/env": [{"name": "A"}, {"name": "B"}, {"name": "C"}],
                "env": [{"name": "B", "value": "2"}]}]}}),
            expect: ok(ctrs(json!([{"name": "a", "env": [
                {"name": "A", "value": "1"}, {"name": "B", "value": "2"}, {"name": "C", "value": "3"}]}]))),
        },
        // Documented: inside a matched env var, null removes `value` while `valueFrom` is added.
        Case {
            name: "env_value_to_value_from",
            kind: POD,
            original: ctrs(json!([{"name": "a", "env": [{"name": "A", "value": "1"}]}])),
            patch: json!({"spec": {"containers": [{"name": "a", "env": [{"name": "A", "value": null,
                "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]}]}}),
            expect: ok(ctrs(json!([{"name": "a", "env": [{"name": "A",
                "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]}]))),
        },
        // Documented: envFrom has no merge strategy: replaced.
        Case {
            name: "env_from_replaced",
            kind: POD,
            original: ctrs(json!([{"name": "a", "envFrom": [{"configMapRef": {"name": "x"}}]}])),
            patch: json!({"spec": {"containers": [{"name": "a", "envFrom": [{"secretRef": {"name": "y"}}]}]}}),
            expect: ok(ctrs(
                json!([{"name": "a", "envFrom": [{"secretRef": {"name": "y"}}]}]),
            )),
        },
        // ---------------------------------------------------------------- volumes, volumeMounts
        // Documented: volumes merge by name.
        Case {
            name: "volumes_merge_by_name",
            kind: POD,
            original: pod(json!({"volumes": [{"name": "v1", "emptyDir": {}}]})),
            patch: json!({"spec": {"volumes": [{"name": "v1", "emptyDir": {"medium": "Memory"}}]}}),
            expect: ok(pod(
                json!({"volumes": [{"name": "v1", "emptyDir": {"medium": "Memory"}}]}),
            )),
        },
        // Documented (retainKeys strategy of volumes): `$retainKeys` clears the other volume source.
        Case {
            name: "volumes_retain_keys_switch_source",
            kind: POD,
            original: pod(json!({"volumes": [{"name": "v", "emptyDir": {}}]})),
            patch: json!({"spec": {"volumes": [{"name": "v", "configMap": {"name": "cm"},
                "$retainKeys": ["configMap", "name"]}]}}),
            expect: ok(pod(
                json!({"volumes": [{"name": "v", "configMap": {"name": "cm"}}]}),
            )),
        },
        // Documented: a field set by the patch but missing from $retainKeys is an error.
        Case {
            name: "retain_keys_missing_patched_field_errors",
            kind: POD,
            original: pod(json!({"volumes": [{"name": "v", "emptyDir": {}}]})),
            patch: json!({"spec": {"volumes": [{"name": "v", "configMap": {"name": "cm"}, "$retainKeys": ["name"]}]}}),
            expect: Expect::Err("$retainKeys"),
        },
        // Documented: $retainKeys must be a list.
        Case {
            name: "retain_keys_not_a_list_errors",
            kind: DEPLOY,
            original: json!({"spec": {"strategy": {"type": "Recreate"}}}),
            patch: json!({"spec": {"strategy": {"$retainKeys": "type"}}}),
            expect: Expect::Err("/spec/strategy/$retainKeys"),
        },
        // Documented (DeploymentStrategy has patchStrategy retainKeys): switching to Recreate drops
        // rollingUpdate.
        Case {
            name: "deployment_strategy_retain_keys",
            kind: DEPLOY,
            original: json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}}),
            patch: json!({"spec": {"strategy": {"type": "Recreate", "$retainKeys": ["type"]}}}),
            expect: ok(json!({"spec": {"strategy": {"type": "Recreate"}}})),
        },
        // Documented: volumeMounts merge by mountPath.
        Case {
            name: "volume_mounts_merge_by_mount_path",
            kind: POD,
            original: ctrs(
                json!([{"name": "a", "volumeMounts": [{"name": "v", "mountPath": "/data"}]}]),
            ),
            patch: json!({"spec": {"containers": [{"name": "a", "volumeMounts": [{"mountPath": "/data", "readOnly": true}]}]}}),
            expect: ok(ctrs(
                json!([{"name": "a", "volumeMounts": [{"name": "v", "mountPath": "/data", "readOnly": true}]}]),
            )),
        },
        // Documented: two mounts of one volume at different paths are distinct items (key is mountPath).
        Case {
            name: "volume_mounts_same_volume_two_paths",
            kind: POD,
            original: ctrs(json!([{"name": "a", "volumeMounts": [
                {"name": "v", "mountPath": "/a"}, {"name": "v", "mountPath": "/b"}]}])),
            patch: json!({"spec": {"containers": [{"name": "a", "volumeMounts": [
                {"mountPath": "/b", "subPath": "x"}]}]}}),
            expect: ok(ctrs(json!([{"name": "a", "volumeMounts": [
                {"name": "v", "mountPath": "/a"}, {"name": "v", "mountPath": "/b", "subPath": "x"}]}]))),
        },
        // Documented: removing a mount with `$patch: delete` by mountPath.
        Case {
            name: "volume_mounts_delete",
            kind: POD,
            original: ctrs(json!([{"name": "a", "volumeMounts": [
                {"name": "v", "mountPath": "/a"}, {"name": "w", "mountPath": "/b"}]}])),
            patch: json!({"spec": {"containers": [{"name": "a", "volumeMounts": [
                {"mountPath": "/a", "$patch": "delete"}]}]}}),
            expect: ok(ctrs(
                json!([{"name": "a", "volumeMounts": [{"name": "w", "mountPath": "/b"}]}]),
            )),
        },
        // ---------------------------------------------------------------- replaced lists
        // Documented (kubectl patch task): tolerations have no patch strategy, so the list is replaced.
        Case {
            name: "tolerations_replaced",
            kind: DEPLOY,
            original: json!({"spec": {"template": {"spec": {"tolerations": [
                {"effect": "NoSchedule", "key": "dedicated", "value": "test-team"}]}}}}),
            patch: json!({"spec": {"template": {"spec": {"tolerations": [
                {"effect": "NoSchedule", "key": "disktype", "value": "ssd"}]}}}}),
            expect: ok(json!({"spec": {"template": {"spec": {"tolerations": [
                {"effect": "NoSchedule", "key": "disktype", "value": "ssd"}]}}}})),
        },
        // Documented: args (primitive list without strategy) are replaced.
        Case {
            name: "args_replaced",
            kind: POD,
            original: ctrs(json!([{"name": "a", "args": ["x", "y"]}])),
            patch: json!({"spec": {"containers": [{"name": "a", "args": ["z"]}]}}),
            expect: ok(ctrs(json!([{"name": "a", "args": ["z"]}]))),
        },
        // Documented: command is replaced as a whole.
        Case {
            name: "command_replaced",
            kind: POD,
            original: ctrs(json!([{"name": "a", "command": ["sh", "-c", "x"]}])),
            patch: json!({"spec": {"containers": [{"name": "a", "command": ["bash"]}]}}),
            expect: ok(ctrs(json!([{"name": "a", "command": ["bash"]}]))),
        },
        // Documented: imagePullSecrets merge by name.
        Case {
            name: "image_pull_secrets_merge_by_name",
            kind: POD,
            original: pod(json!({"imagePullSecrets": [{"name": "a"}]})),
            patch: json!({"spec": {"imagePullSecrets": [{"name": "b"}]}}),
            expect: ok(pod(
                json!({"imagePullSecrets": [{"name": "b"}, {"name": "a"}]}),
            )),
        },
        // Documented: hostAliases merge by ip.
        Case {
            name: "host_aliases_merge_by_ip",
            kind: POD,
            original: pod(json!({"hostAliases": [{"ip": "10.0.0.1", "hostnames": ["a"]}]})),
            patch: json!({"spec": {"hostAliases": [{"ip": "10.0.0.1", "hostnames": ["b"]}]}}),
            expect: ok(pod(
                json!({"hostAliases": [{"ip": "10.0.0.1", "hostnames": ["b"]}]}),
            )),
        },
        // Documented: topologySpreadConstraints merge by topologyKey.
        Case {
            name: "topology_spread_merge_by_topology_key",
            kind: POD,
            original: pod(
                json!({"topologySpreadConstraints": [{"topologyKey": "zone", "maxSkew": 1}]}),
            ),
            patch: json!({"spec": {"topologySpreadConstraints": [{"topologyKey": "zone", "maxSkew": 2}]}}),
            expect: ok(pod(
                json!({"topologySpreadConstraints": [{"topologyKey": "zone", "maxSkew": 2}]}),
            )),
        },
        // Documented: Pod status conditions merge by type.
        Case {
            name: "pod_conditions_merge_by_type",
            kind: POD,
            original: json!({"status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "Initialized", "status": "True"}]}}),
            patch: json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
            expect: ok(
                json!({"status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "Initialized", "status": "True"}]}}),
            ),
        },
        // ---------------------------------------------------------------- finalizers, ownerReferences
        // Documented: a primitive list with merge strategy (finalizers) is a union; new values go first.
        Case {
            name: "finalizers_union",
            kind: DEPLOY,
            original: json!({"metadata": {"finalizers": ["a"]}}),
            patch: json!({"metadata": {"finalizers": ["b"]}}),
            expect: ok(json!({"metadata": {"finalizers": ["b", "a"]}})),
        },
        // Documented: union deduplicates; live order kept for shared values.
        Case {
            name: "finalizers_union_dedupe",
            kind: DEPLOY,
            original: json!({"metadata": {"finalizers": ["a", "b"]}}),
            patch: json!({"metadata": {"finalizers": ["b", "c"]}}),
            expect: ok(json!({"metadata": {"finalizers": ["a", "b", "c"]}})),
        },
        // Documented: $deleteFromPrimitiveList removes values from a merged primitive list.
        Case {
            name: "finalizers_delete_from_primitive_list",
            kind: DEPLOY,
            original: json!({"metadata": {"finalizers": ["a", "b", "c"]}}),
            patch: json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["b"]}}),
            expect: ok(json!({"metadata": {"finalizers": ["a", "c"]}})),
        },
        // Documented: $setElementOrder for primitive lists.
        Case {
            name: "finalizers_set_element_order",
            kind: DEPLOY,
            original: json!({"metadata": {"finalizers": ["a", "b"]}}),
            patch: json!({"metadata": {"finalizers": ["c"], "$setElementOrder/finalizers": ["a", "b", "c"]}}),
            expect: ok(json!({"metadata": {"finalizers": ["a", "b", "c"]}})),
        },
        // Documented: add one, delete one, with order (what kubectl diff emits).
        Case {
            name: "finalizers_add_delete_order",
            kind: Some(("v1", "ConfigMap")),
            original: json!({"metadata": {"finalizers": ["a", "b"]}}),
            patch: json!({"metadata": {"finalizers": ["c"], "$deleteFromPrimitiveList/finalizers": ["a"],
                "$setElementOrder/finalizers": ["b", "c"]}}),
            expect: ok(json!({"metadata": {"finalizers": ["b", "c"]}})),
        },
        // Documented: null removes the whole list.
        Case {
            name: "finalizers_null_removes",
            kind: DEPLOY,
            original: json!({"metadata": {"name": "d", "finalizers": ["a"]}}),
            patch: json!({"metadata": {"finalizers": null}}),
            expect: ok(json!({"metadata": {"name": "d"}})),
        },
        // Documented: ownerReferences merge by uid.
        Case {
            name: "owner_references_merge_by_uid",
            kind: Some(("v1", "Secret")),
            original: json!({"metadata": {"ownerReferences": [{"uid": "1", "kind": "A", "name": "a"}]}}),
            patch: json!({"metadata": {"ownerReferences": [{"uid": "1", "controller": true}]}}),
            expect: ok(
                json!({"metadata": {"ownerReferences": [{"uid": "1", "kind": "A", "name": "a", "controller": true}]}}),
            ),
        },
        // Documented: a merge list mixing objects and strings cannot be merged.
        Case {
            name: "mixed_list_errors",
            kind: DEPLOY,
            original: json!({"metadata": {"finalizers": ["a"]}}),
            patch: json!({"metadata": {"finalizers": [{"x": 1}]}}),
            expect: Expect::Err("/metadata/finalizers"),
        },
        // ---------------------------------------------------------------- $patch in maps
        // Documented: `$patch: replace` in a map replaces the map with the patch's content.
        Case {
            name: "map_patch_replace",
            kind: POD,
            original: json!({"metadata": {"labels": {"a": "1", "b": "2"}}}),
            patch: json!({"metadata": {"labels": {"$patch": "replace", "c": "3"}}}),
            expect: ok(json!({"metadata": {"labels": {"c": "3"}}})),
        },
        // Documented: `$patch: delete` in a map empties it.
        Case {
            name: "map_patch_delete",
            kind: POD,
            original: json!({"metadata": {"annotations": {"a": "1"}, "name": "p"}}),
            patch: json!({"metadata": {"annotations": {"$patch": "delete"}}}),
            expect: ok(json!({"metadata": {"annotations": {}, "name": "p"}})),
        },
        // Documented: `$patch: merge` is the default for maps.
        Case {
            name: "map_patch_merge_default",
            kind: POD,
            original: json!({"metadata": {"labels": {"a": "1"}}}),
            patch: json!({"metadata": {"labels": {"$patch": "merge", "b": "2"}}}),
            expect: ok(json!({"metadata": {"labels": {"a": "1", "b": "2"}}})),
        },
        // Documented: unknown `$patch` value in a map is an error naming the path.
        Case {
            name: "map_unknown_directive_errors",
            kind: POD,
            original: json!({"metadata": {"labels": {"a": "1"}}}),
            patch: json!({"metadata": {"labels": {"$patch": "nope"}}}),
            expect: Expect::Err("/metadata/labels: unknown patch directive"),
        },
        // Documented: `$patch: replace` at the top replaces the whole object.
        Case {
            name: "top_level_patch_replace",
            kind: Some(("v1", "ConfigMap")),
            original: json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1"},
                             "metadata": {"name": "c", "labels": {"x": "y"}}}),
            patch: json!({"$patch": "replace", "apiVersion": "v1", "kind": "ConfigMap",
                          "metadata": {"name": "c"}, "data": {"b": "2"}}),
            expect: ok(
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                              "data": {"b": "2"}}),
            ),
        },
        // Documented: `$patch: replace` inside a list item's map replaces only that map.
        Case {
            name: "container_resources_patch_replace",
            kind: POD,
            original: ctrs(
                json!([{"name": "a", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1"}}}]),
            ),
            patch: json!({"spec": {"containers": [{"name": "a", "resources": {"$patch": "replace", "limits": {"cpu": "2"}}}]}}),
            expect: ok(ctrs(
                json!([{"name": "a", "resources": {"limits": {"cpu": "2"}}}]),
            )),
        },
        // Documented: a field with patchStrategy replace (PodDisruptionBudget selector) is replaced whole.
        Case {
            name: "pdb_selector_replace_strategy",
            kind: Some(("policy/v1", "PodDisruptionBudget")),
            original: json!({"spec": {"selector": {"matchLabels": {"a": "1"}}, "minAvailable": 1}}),
            patch: json!({"spec": {"selector": {"matchLabels": {"b": "2"}}}}),
            expect: ok(
                json!({"spec": {"selector": {"matchLabels": {"b": "2"}}, "minAvailable": 1}}),
            ),
        },
        // ---------------------------------------------------------------- $setElementOrder
        // Documented: $setElementOrder alone reorders.
        Case {
            name: "set_element_order_reorders",
            kind: POD,
            original: ctrs(json!([{"name": "a"}, {"name": "b"}])),
            patch: json!({"spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}]}}),
            expect: ok(ctrs(json!([{"name": "b"}, {"name": "a"}]))),
        },
        // Documented: server-only items (not in the order list) keep their live relative position.
        Case {
            name: "set_element_order_keeps_server_only_items",
            kind: POD,
            original: ctrs(json!([{"name": "a"}, {"name": "sidecar"}, {"name": "b"}])),
            patch: json!({"spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}]}}),
            expect: ok(ctrs(
                json!([{"name": "sidecar"}, {"name": "b"}, {"name": "a"}]),
            )),
        },
        // Documented: $setElementOrder must be a list.
        Case {
            name: "set_element_order_not_list_errors",
            kind: POD,
            original: ctrs(json!([{"name": "a"}])),
            patch: json!({"spec": {"$setElementOrder/containers": "a"}}),
            expect: Expect::Err("/spec/$setElementOrder~1containers"),
        },
        // Documented: every patch item must appear in the $setElementOrder list.
        Case {
            name: "set_element_order_missing_item_errors",
            kind: POD,
            original: ctrs(json!([{"name": "a"}])),
            patch: json!({"spec": {"$setElementOrder/containers": [{"name": "a"}], "containers": [{"name": "b"}]}}),
            expect: Expect::Err("missing from the order list"),
        },
        // ---------------------------------------------------------------- no schema (custom resources)
        // Documented (kustomize on CRs): without schema, lists are replaced.
        Case {
            name: "untyped_lists_replaced",
            kind: None,
            original: json!({"spec": {"items": [{"name": "a", "v": 1}]}}),
            patch: json!({"spec": {"items": [{"name": "b"}]}}),
            expect: ok(json!({"spec": {"items": [{"name": "b"}]}})),
        },
        // Documented: without schema, maps still merge.
        Case {
            name: "untyped_maps_merged",
            kind: None,
            original: json!({"spec": {"a": {"x": 1}, "b": 2}}),
            patch: json!({"spec": {"a": {"y": 2}}}),
            expect: ok(json!({"spec": {"a": {"x": 1, "y": 2}, "b": 2}})),
        },
        // Documented: without schema, `$patch: delete` still applies.
        Case {
            name: "untyped_patch_delete",
            kind: None,
            original: json!({"spec": {"a": {"x": 1}}}),
            patch: json!({"spec": {"a": {"$patch": "delete"}}}),
            expect: ok(json!({"spec": {"a": {}}})),
        },
        // Documented: an unknown field of a built-in kind behaves like an untyped field (list replaced).
        Case {
            name: "unknown_field_of_builtin_untyped",
            kind: DEPLOY,
            original: json!({"spec": {"extra": [1, 2]}}),
            patch: json!({"spec": {"extra": [3]}}),
            expect: ok(json!({"spec": {"extra": [3]}})),
        },
        // Documented: a patch must be a JSON object.
        Case {
            name: "patch_not_object_errors",
            kind: POD,
            original: json!({}),
            patch: json!([1]),
            expect: Expect::Err("must be a JSON object"),
        },
        // Documented: $deleteFromPrimitiveList needs a list.
        Case {
            name: "delete_from_primitive_list_not_list_errors",
            kind: DEPLOY,
            original: json!({"metadata": {"finalizers": ["a"]}}),
            patch: json!({"metadata": {"$deleteFromPrimitiveList/finalizers": "a"}}),
            expect: Expect::Err("/metadata/$deleteFromPrimitiveList~1finalizers"),
        },
        // Documented: deep path — container ports inside a Deployment's pod template.
        Case {
            name: "deployment_template_container_env_and_port",
            kind: DEPLOY,
            original: json!({"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx",
                "env": [{"name": "A", "value": "1"}], "ports": [{"containerPort": 80, "protocol": "TCP"}]}]}}}}),
            patch: json!({"spec": {"template": {"spec": {"containers": [{"name": "web",
                "env": [{"name": "B", "value": "2"}], "ports": [{"containerPort": 80, "name": "http"}]}]}}}}),
            expect: ok(
                json!({"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx",
                "env": [{"name": "B", "value": "2"}, {"name": "A", "value": "1"}],
                "ports": [{"containerPort": 80, "protocol": "TCP", "name": "http"}]}]}}}}),
            ),
        },
        // Documented: StatefulSet template shares PodSpec metadata (volumes by name).
        Case {
            name: "statefulset_template_volumes",
            kind: Some(("apps/v1", "StatefulSet")),
            original: json!({"spec": {"template": {"spec": {"volumes": [{"name": "a", "emptyDir": {}}]}}}}),
            patch: json!({"spec": {"template": {"spec": {"volumes": [{"name": "a", "$patch": "delete"}]}}}}),
            expect: ok(json!({"spec": {"template": {"spec": {"volumes": []}}}})),
        },
    ]
}
