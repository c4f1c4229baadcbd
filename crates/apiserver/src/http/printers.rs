//! Table columns of the built-in kinds, as kube-apiserver prints them, so that `kubectl get pods`
//! shows READY / STATUS / RESTARTS and `kubectl get deploy -o wide` shows CONTAINERS / IMAGES /
//! SELECTOR. kubectl renders whatever columns the server sends; without these every built-in would
//! show only NAME and AGE.
//!
//! Each printer is a column list and a function from the stored object to its cells (NAME first).
//! Cells read the object defensively: a field that is missing or of the wrong type prints as the
//! Kubernetes placeholder (`<none>`, `0`), never a panic.

use serde_json::{Value, json};

use crate::http::table::{age, human_duration};

/// One column: header, OpenAPI cell type, and priority (0 = always, 1 = only with `-o wide`).
pub struct Column {
    /// Header as kubectl prints it (upper-cased by kubectl).
    pub name: &'static str,
    /// `string` or `integer` (kubectl formats both; dates are pre-formatted strings).
    pub kind: &'static str,
    /// 0 for the default view, 1 for `-o wide`.
    pub priority: u8,
    /// Short description (kubectl shows it nowhere, clients may).
    pub description: &'static str,
}

/// A built-in kind's columns and the function filling one row's cells.
pub struct Printer {
    /// Columns, NAME first.
    pub columns: &'static [Column],
    /// Cells of one object, one per column, in column order.
    pub cells: fn(&Value) -> Vec<Value>,
}

const fn col(name: &'static str, kind: &'static str, priority: u8) -> Column {
    Column {
        name,
        kind,
        priority,
        description: "",
    }
}

const NAME: Column = Column {
    name: "Name",
    kind: "string",
    priority: 0,
    description: "Name must be unique within a namespace.",
};
const AGE: Column = Column {
    name: "Age",
    kind: "string",
    priority: 0,
    description: "CreationTimestamp is a timestamp representing the server time when this object was created.",
};

/// The printer for a built-in resource, by API group and plural; `None` falls back to NAME/AGE.
pub fn builtin(group: &str, plural: &str) -> Option<&'static Printer> {
    Some(match (group, plural) {
        ("", "pods") => &PODS,
        ("", "services") => &SERVICES,
        ("", "configmaps") => &CONFIGMAPS,
        ("", "secrets") => &SECRETS,
        ("", "namespaces") => &NAMESPACES,
        ("", "serviceaccounts") => &SERVICEACCOUNTS,
        ("", "nodes") => &NODES,
        ("", "endpoints") => &ENDPOINTS,
        ("", "persistentvolumeclaims") => &PVCS,
        ("apps", "deployments") => &DEPLOYMENTS,
        ("apps", "replicasets") => &REPLICASETS,
        ("apps", "statefulsets") => &STATEFULSETS,
        ("apps", "daemonsets") => &DAEMONSETS,
        ("batch", "jobs") => &JOBS,
        ("batch", "cronjobs") => &CRONJOBS,
        ("networking.k8s.io", "ingresses") => &INGRESSES,
        ("networking.k8s.io", "networkpolicies") => &NETWORKPOLICIES,
        ("rbac.authorization.k8s.io", "roles" | "clusterroles") => &ROLES,
        ("rbac.authorization.k8s.io", "rolebindings" | "clusterrolebindings") => &BINDINGS,
        ("apiextensions.k8s.io", "customresourcedefinitions") => &CRDS,
        ("coordination.k8s.io", "leases") => &LEASES,
        ("policy", "poddisruptionbudgets") => &PDBS,
        ("storage.k8s.io", "storageclasses") => &STORAGECLASSES,
        _ => return None,
    })
}

// ---- helpers -------------------------------------------------------------------------------

fn s<'a>(o: &'a Value, ptr: &str) -> &'a str {
    o.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

fn i(o: &Value, ptr: &str) -> i64 {
    o.pointer(ptr).and_then(Value::as_i64).unwrap_or(0)
}

fn arr<'a>(o: &'a Value, ptr: &str) -> &'a [Value] {
    o.pointer(ptr)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn len_of(o: &Value, ptr: &str) -> i64 {
    match o.pointer(ptr) {
        Some(Value::Object(m)) => m.len() as i64,
        Some(Value::Array(a)) => a.len() as i64,
        _ => 0,
    }
}

fn or_none(v: String) -> Value {
    if v.is_empty() {
        json!("<none>")
    } else {
        json!(v)
    }
}

fn name(o: &Value) -> Value {
    json!(s(o, "/metadata/name"))
}

fn created_age(o: &Value) -> Value {
    json!(age(o
        .pointer("/metadata/creationTimestamp")
        .and_then(Value::as_str)))
}

/// `"2024-01-02T03:04:05Z"`: the "CREATED AT" cell of roles and CRDs.
fn created_at(o: &Value) -> Value {
    json!(s(o, "/metadata/creationTimestamp"))
}

/// `k=v,k2=v2` (sorted, as Go's labels.FormatLabels) or `<none>`.
fn format_labels(m: Option<&Value>) -> String {
    let Some(Value::Object(m)) = m else {
        return String::new();
    };
    let mut pairs: Vec<String> = m
        .iter()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
        .collect();
    pairs.sort();
    pairs.join(",")
}

/// metav1.FormatLabelSelector: `a=b,c in (d,e),!f`; an empty selector prints `<none>`.
fn format_selector(sel: Option<&Value>) -> String {
    let Some(sel) = sel else {
        return String::new();
    };
    let mut parts = Vec::new();
    if let Some(Value::Object(m)) = sel.get("matchLabels") {
        let mut kv: Vec<String> = m
            .iter()
            .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
            .collect();
        kv.sort();
        parts.extend(kv);
    }
    for e in sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = e.get("key").and_then(Value::as_str).unwrap_or("");
        let values: Vec<&str> = e
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        match e.get("operator").and_then(Value::as_str).unwrap_or("") {
            "In" => parts.push(format!("{key} in ({})", values.join(","))),
            "NotIn" => parts.push(format!("{key} notin ({})", values.join(","))),
            "Exists" => parts.push(key.to_string()),
            "DoesNotExist" => parts.push(format!("!{key}")),
            op => parts.push(format!("{key} {op} ({})", values.join(","))),
        }
    }
    parts.join(",")
}

/// Container names and images of a pod template spec (the wide CONTAINERS / IMAGES cells).
fn containers_images(spec: Option<&Value>) -> (Value, Value) {
    let cs = spec
        .and_then(|s| s.get("containers"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let names: Vec<&str> = cs
        .iter()
        .map(|c| c.get("name").and_then(Value::as_str).unwrap_or(""))
        .collect();
    let images: Vec<&str> = cs
        .iter()
        .map(|c| c.get("image").and_then(Value::as_str).unwrap_or(""))
        .collect();
    (json!(names.join(",")), json!(images.join(",")))
}

/// `spec.replicas`, which kube-apiserver defaults to 1.
fn replicas(o: &Value) -> i64 {
    o.pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1)
}

fn since(ts: &str) -> Option<i64> {
    ts.parse::<jiff::Timestamp>()
        .ok()
        .map(|t| jiff::Timestamp::now().as_second() - t.as_second())
}

fn bool_ptr(v: Option<&Value>) -> &'static str {
    match v.and_then(Value::as_bool) {
        Some(true) => "True",
        Some(false) => "False",
        None => "<unset>",
    }
}

// ---- core/v1 -------------------------------------------------------------------------------

static PODS: Printer = Printer {
    columns: &[
        NAME,
        col("Ready", "string", 0),
        col("Status", "string", 0),
        col("Restarts", "string", 0),
        AGE,
        col("IP", "string", 1),
        col("Node", "string", 1),
        col("Nominated Node", "string", 1),
        col("Readiness Gates", "string", 1),
    ],
    cells: pod_cells,
};

/// The pod's STATUS cell: the phase, refined by container states, as kubectl users know it
/// (`ContainerCreating`, `CrashLoopBackOff`, `Completed`, `Init:0/1`, `Terminating`).
fn pod_reason(o: &Value) -> String {
    let mut reason = s(o, "/status/phase").to_string();
    if !s(o, "/status/reason").is_empty() {
        reason = s(o, "/status/reason").to_string();
    }
    let init_total = arr(o, "/spec/initContainers").len();
    let mut initializing = false;
    for (n, c) in arr(o, "/status/initContainerStatuses").iter().enumerate() {
        let term = c.pointer("/state/terminated");
        let waiting_reason = c
            .pointer("/state/waiting/reason")
            .and_then(Value::as_str)
            .unwrap_or("");
        if let Some(t) = term {
            if t.get("exitCode").and_then(Value::as_i64) == Some(0) {
                continue;
            }
            reason = match t.get("reason").and_then(Value::as_str) {
                Some(r) if !r.is_empty() => format!("Init:{r}"),
                _ => match t.get("signal").and_then(Value::as_i64) {
                    Some(sig) if sig != 0 => format!("Init:Signal:{sig}"),
                    _ => format!(
                        "Init:ExitCode:{}",
                        t.get("exitCode").and_then(Value::as_i64).unwrap_or(0)
                    ),
                },
            };
        } else if !waiting_reason.is_empty() && waiting_reason != "PodInitializing" {
            reason = format!("Init:{waiting_reason}");
        } else {
            reason = format!("Init:{n}/{init_total}");
        }
        initializing = true;
        break;
    }
    if !initializing {
        let mut has_running = false;
        for c in arr(o, "/status/containerStatuses").iter().rev() {
            let waiting = c
                .pointer("/state/waiting/reason")
                .and_then(Value::as_str)
                .unwrap_or("");
            if !waiting.is_empty() {
                reason = waiting.to_string();
            } else if let Some(t) = c.pointer("/state/terminated") {
                reason = match t.get("reason").and_then(Value::as_str) {
                    Some(r) if !r.is_empty() => r.to_string(),
                    _ => match t.get("signal").and_then(Value::as_i64) {
                        Some(sig) if sig != 0 => format!("Signal:{sig}"),
                        _ => format!(
                            "ExitCode:{}",
                            t.get("exitCode").and_then(Value::as_i64).unwrap_or(0)
                        ),
                    },
                };
            } else if c.get("ready").and_then(Value::as_bool) == Some(true)
                && c.pointer("/state/running").is_some()
            {
                has_running = true;
            }
        }
        if reason == "Completed" && has_running {
            let ready = arr(o, "/status/conditions").iter().any(|c| {
                c.get("type").and_then(Value::as_str) == Some("Ready")
                    && c.get("status").and_then(Value::as_str) == Some("True")
            });
            reason = if ready { "Running" } else { "NotReady" }.to_string();
        }
    }
    if o.pointer("/metadata/deletionTimestamp").is_some() {
        reason = if s(o, "/status/reason") == "NodeLost" {
            "Unknown".into()
        } else {
            "Terminating".into()
        };
    }
    reason
}

fn pod_cells(o: &Value) -> Vec<Value> {
    let total = arr(o, "/spec/containers").len();
    let statuses = arr(o, "/status/containerStatuses");
    let ready = statuses
        .iter()
        .filter(|c| c.get("ready").and_then(Value::as_bool) == Some(true))
        .count();
    let restarts: i64 = statuses
        .iter()
        .chain(arr(o, "/status/initContainerStatuses"))
        .map(|c| c.get("restartCount").and_then(Value::as_i64).unwrap_or(0))
        .sum();
    let last_restart = statuses
        .iter()
        .filter_map(|c| {
            c.pointer("/lastState/terminated/finishedAt")
                .and_then(Value::as_str)
        })
        .filter_map(since)
        .min();
    let restarts = match last_restart {
        Some(secs) if restarts > 0 => format!("{restarts} ({} ago)", human_duration(secs)),
        _ => restarts.to_string(),
    };
    let gates = arr(o, "/spec/readinessGates");
    let gates = if gates.is_empty() {
        "<none>".to_string()
    } else {
        let met = gates
            .iter()
            .filter(|g| {
                let t = g.get("conditionType").and_then(Value::as_str);
                arr(o, "/status/conditions").iter().any(|c| {
                    c.get("type").and_then(Value::as_str) == t
                        && c.get("status").and_then(Value::as_str) == Some("True")
                })
            })
            .count();
        format!("{met}/{}", gates.len())
    };
    vec![
        name(o),
        json!(format!("{ready}/{total}")),
        json!(pod_reason(o)),
        json!(restarts),
        created_age(o),
        or_none(s(o, "/status/podIP").into()),
        or_none(s(o, "/spec/nodeName").into()),
        or_none(s(o, "/status/nominatedNodeName").into()),
        json!(gates),
    ]
}

static SERVICES: Printer = Printer {
    columns: &[
        NAME,
        col("Type", "string", 0),
        col("Cluster-IP", "string", 0),
        col("External-IP", "string", 0),
        col("Port(s)", "string", 0),
        AGE,
        col("Selector", "string", 1),
    ],
    cells: service_cells,
};

fn service_cells(o: &Value) -> Vec<Value> {
    let ty = match s(o, "/spec/type") {
        "" => "ClusterIP",
        t => t,
    };
    let external_ips: Vec<&str> = arr(o, "/spec/externalIPs")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let external = match ty {
        "ExternalName" => s(o, "/spec/externalName").to_string(),
        "LoadBalancer" => {
            let mut ips: Vec<&str> = arr(o, "/status/loadBalancer/ingress")
                .iter()
                .filter_map(|i| {
                    i.get("ip")
                        .and_then(Value::as_str)
                        .or_else(|| i.get("hostname").and_then(Value::as_str))
                })
                .collect();
            ips.extend(external_ips.iter());
            if ips.is_empty() {
                "<pending>".into()
            } else {
                ips.join(",")
            }
        }
        _ => external_ips.join(","),
    };
    let ports: Vec<String> = arr(o, "/spec/ports")
        .iter()
        .map(|p| {
            let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
            let proto = p.get("protocol").and_then(Value::as_str).unwrap_or("TCP");
            match p.get("nodePort").and_then(Value::as_i64) {
                Some(np) if np != 0 => format!("{port}:{np}/{proto}"),
                _ => format!("{port}/{proto}"),
            }
        })
        .collect();
    vec![
        name(o),
        json!(ty),
        or_none(s(o, "/spec/clusterIP").into()),
        or_none(external),
        or_none(ports.join(",")),
        created_age(o),
        or_none(format_labels(o.pointer("/spec/selector"))),
    ]
}

static CONFIGMAPS: Printer = Printer {
    columns: &[NAME, col("Data", "integer", 0), AGE],
    cells: |o| {
        vec![
            name(o),
            json!(len_of(o, "/data") + len_of(o, "/binaryData")),
            created_age(o),
        ]
    },
};

static SECRETS: Printer = Printer {
    columns: &[
        NAME,
        col("Type", "string", 0),
        col("Data", "integer", 0),
        AGE,
    ],
    cells: |o| {
        vec![
            name(o),
            json!(s(o, "/type")),
            json!(len_of(o, "/data")),
            created_age(o),
        ]
    },
};

static NAMESPACES: Printer = Printer {
    columns: &[NAME, col("Status", "string", 0), AGE],
    cells: |o| vec![name(o), json!(s(o, "/status/phase")), created_age(o)],
};

static SERVICEACCOUNTS: Printer = Printer {
    columns: &[NAME, col("Secrets", "integer", 0), AGE],
    cells: |o| vec![name(o), json!(len_of(o, "/secrets")), created_age(o)],
};

static NODES: Printer = Printer {
    columns: &[
        NAME,
        col("Status", "string", 0),
        col("Roles", "string", 0),
        AGE,
        col("Version", "string", 0),
        col("Internal-IP", "string", 1),
        col("External-IP", "string", 1),
        col("OS-Image", "string", 1),
        col("Kernel-Version", "string", 1),
        col("Container-Runtime", "string", 1),
    ],
    cells: node_cells,
};

fn node_cells(o: &Value) -> Vec<Value> {
    let mut status: Vec<&str> = Vec::new();
    match arr(o, "/status/conditions")
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))
        .and_then(|c| c.get("status").and_then(Value::as_str))
    {
        Some("True") => status.push("Ready"),
        Some("False") => status.push("NotReady"),
        _ => status.push("Unknown"),
    }
    if o.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
        status.push("SchedulingDisabled");
    }
    let mut roles: Vec<&str> = o
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| {
            if let Some(r) = k.strip_prefix("node-role.kubernetes.io/") {
                Some(r)
            } else if k == "kubernetes.io/role" {
                v.as_str()
            } else {
                None
            }
        })
        .filter(|r| !r.is_empty())
        .collect();
    roles.sort_unstable();
    roles.dedup();
    let addr = |ty: &str| -> String {
        arr(o, "/status/addresses")
            .iter()
            .find(|a| a.get("type").and_then(Value::as_str) == Some(ty))
            .and_then(|a| a.get("address").and_then(Value::as_str))
            .unwrap_or("")
            .to_string()
    };
    vec![
        name(o),
        json!(status.join(",")),
        or_none(roles.join(",")),
        created_age(o),
        json!(s(o, "/status/nodeInfo/kubeletVersion")),
        or_none(addr("InternalIP")),
        or_none(addr("ExternalIP")),
        or_none(s(o, "/status/nodeInfo/osImage").into()),
        or_none(s(o, "/status/nodeInfo/kernelVersion").into()),
        or_none(s(o, "/status/nodeInfo/containerRuntimeVersion").into()),
    ]
}

static ENDPOINTS: Printer = Printer {
    columns: &[NAME, col("Endpoints", "string", 0), AGE],
    cells: |o| {
        let mut eps = Vec::new();
        for subset in arr(o, "/subsets") {
            let ports: Vec<i64> = subset
                .get("ports")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|p| p.get("port").and_then(Value::as_i64))
                .collect();
            for a in subset
                .get("addresses")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let ip = a.get("ip").and_then(Value::as_str).unwrap_or("");
                if ports.is_empty() {
                    eps.push(ip.to_string());
                }
                for p in &ports {
                    eps.push(format!("{ip}:{p}"));
                }
            }
        }
        let cell = if eps.len() > 3 {
            format!("{} + {} more...", eps[..3].join(","), eps.len() - 3)
        } else {
            eps.join(",")
        };
        vec![name(o), or_none(cell), created_age(o)]
    },
};

static PVCS: Printer = Printer {
    columns: &[
        NAME,
        col("Status", "string", 0),
        col("Volume", "string", 0),
        col("Capacity", "string", 0),
        col("Access Modes", "string", 0),
        col("StorageClass", "string", 0),
        col("VolumeAttributesClass", "string", 0),
        AGE,
        col("VolumeMode", "string", 1),
    ],
    cells: |o| {
        let phase = if o.pointer("/metadata/deletionTimestamp").is_some() {
            "Terminating"
        } else {
            s(o, "/status/phase")
        };
        let modes: Vec<&str> = arr(o, "/status/accessModes")
            .iter()
            .filter_map(Value::as_str)
            .map(|m| match m {
                "ReadWriteOnce" => "RWO",
                "ReadOnlyMany" => "ROX",
                "ReadWriteMany" => "RWX",
                "ReadWriteOncePod" => "RWOP",
                other => other,
            })
            .collect();
        vec![
            name(o),
            json!(phase),
            json!(s(o, "/spec/volumeName")),
            json!(s(o, "/status/capacity/storage")),
            json!(modes.join(",")),
            json!(s(o, "/spec/storageClassName")),
            or_none(s(o, "/spec/volumeAttributesClassName").into()),
            created_age(o),
            or_none(s(o, "/spec/volumeMode").into()),
        ]
    },
};

// ---- apps/v1, batch/v1 ---------------------------------------------------------------------

const CONTAINERS: Column = col("Containers", "string", 1);
const IMAGES: Column = col("Images", "string", 1);
const SELECTOR: Column = col("Selector", "string", 1);

static DEPLOYMENTS: Printer = Printer {
    columns: &[
        NAME,
        col("Ready", "string", 0),
        col("Up-to-date", "integer", 0),
        col("Available", "integer", 0),
        AGE,
        CONTAINERS,
        IMAGES,
        SELECTOR,
    ],
    cells: |o| {
        let (c, im) = containers_images(o.pointer("/spec/template/spec"));
        vec![
            name(o),
            json!(format!("{}/{}", i(o, "/status/readyReplicas"), replicas(o))),
            json!(i(o, "/status/updatedReplicas")),
            json!(i(o, "/status/availableReplicas")),
            created_age(o),
            c,
            im,
            or_none(format_selector(o.pointer("/spec/selector"))),
        ]
    },
};

static REPLICASETS: Printer = Printer {
    columns: &[
        NAME,
        col("Desired", "integer", 0),
        col("Current", "integer", 0),
        col("Ready", "integer", 0),
        AGE,
        CONTAINERS,
        IMAGES,
        SELECTOR,
    ],
    cells: |o| {
        let (c, im) = containers_images(o.pointer("/spec/template/spec"));
        vec![
            name(o),
            json!(replicas(o)),
            json!(i(o, "/status/replicas")),
            json!(i(o, "/status/readyReplicas")),
            created_age(o),
            c,
            im,
            or_none(format_selector(o.pointer("/spec/selector"))),
        ]
    },
};

static STATEFULSETS: Printer = Printer {
    columns: &[NAME, col("Ready", "string", 0), AGE, CONTAINERS, IMAGES],
    cells: |o| {
        let (c, im) = containers_images(o.pointer("/spec/template/spec"));
        vec![
            name(o),
            json!(format!("{}/{}", i(o, "/status/readyReplicas"), replicas(o))),
            created_age(o),
            c,
            im,
        ]
    },
};

static DAEMONSETS: Printer = Printer {
    columns: &[
        NAME,
        col("Desired", "integer", 0),
        col("Current", "integer", 0),
        col("Ready", "integer", 0),
        col("Up-to-date", "integer", 0),
        col("Available", "integer", 0),
        col("Node Selector", "string", 0),
        AGE,
        CONTAINERS,
        IMAGES,
        SELECTOR,
    ],
    cells: |o| {
        let (c, im) = containers_images(o.pointer("/spec/template/spec"));
        vec![
            name(o),
            json!(i(o, "/status/desiredNumberScheduled")),
            json!(i(o, "/status/currentNumberScheduled")),
            json!(i(o, "/status/numberReady")),
            json!(i(o, "/status/updatedNumberScheduled")),
            json!(i(o, "/status/numberAvailable")),
            or_none(format_labels(o.pointer("/spec/template/spec/nodeSelector"))),
            created_age(o),
            c,
            im,
            or_none(format_selector(o.pointer("/spec/selector"))),
        ]
    },
};

static JOBS: Printer = Printer {
    columns: &[
        NAME,
        col("Status", "string", 0),
        col("Completions", "string", 0),
        col("Duration", "string", 0),
        AGE,
        CONTAINERS,
        IMAGES,
        SELECTOR,
    ],
    cells: job_cells,
};

fn job_cells(o: &Value) -> Vec<Value> {
    let cond = |ty: &str| {
        arr(o, "/status/conditions").iter().any(|c| {
            c.get("type").and_then(Value::as_str) == Some(ty)
                && c.get("status").and_then(Value::as_str) == Some("True")
        })
    };
    let status = if cond("Complete") {
        "Complete"
    } else if cond("Failed") {
        "Failed"
    } else if o.pointer("/metadata/deletionTimestamp").is_some() {
        "Terminating"
    } else if cond("SuccessCriteriaMet") {
        "SuccessCriteriaMet"
    } else if cond("FailureTarget") {
        "FailureTarget"
    } else if cond("Suspended") {
        "Suspended"
    } else {
        "Running"
    };
    let succeeded = i(o, "/status/succeeded");
    let completions = match o.pointer("/spec/completions").and_then(Value::as_i64) {
        Some(c) => format!("{succeeded}/{c}"),
        None => match o.pointer("/spec/parallelism").and_then(Value::as_i64) {
            Some(p) if p > 1 => format!("{succeeded}/1 of {p}"),
            _ => format!("{succeeded}/1"),
        },
    };
    let start = o
        .pointer("/status/startTime")
        .and_then(Value::as_str)
        .and_then(|t| t.parse::<jiff::Timestamp>().ok());
    let end = o
        .pointer("/status/completionTime")
        .and_then(Value::as_str)
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .unwrap_or_else(jiff::Timestamp::now);
    let duration = match start {
        Some(st) => human_duration(end.as_second() - st.as_second()),
        None => String::new(),
    };
    let (c, im) = containers_images(o.pointer("/spec/template/spec"));
    vec![
        name(o),
        json!(status),
        json!(completions),
        json!(duration),
        created_age(o),
        c,
        im,
        or_none(format_selector(o.pointer("/spec/selector"))),
    ]
}

static CRONJOBS: Printer = Printer {
    columns: &[
        NAME,
        col("Schedule", "string", 0),
        col("Timezone", "string", 0),
        col("Suspend", "boolean", 0),
        col("Active", "integer", 0),
        col("Last Schedule", "string", 0),
        AGE,
        CONTAINERS,
        IMAGES,
        SELECTOR,
    ],
    cells: |o| {
        let last = match o
            .pointer("/status/lastScheduleTime")
            .and_then(Value::as_str)
            .and_then(since)
        {
            Some(secs) => human_duration(secs),
            None => "<none>".into(),
        };
        let (c, im) = containers_images(o.pointer("/spec/jobTemplate/spec/template/spec"));
        vec![
            name(o),
            json!(s(o, "/spec/schedule")),
            or_none(s(o, "/spec/timeZone").into()),
            json!(bool_ptr(o.pointer("/spec/suspend"))),
            json!(len_of(o, "/status/active")),
            json!(last),
            created_age(o),
            c,
            im,
            or_none(format_selector(
                o.pointer("/spec/jobTemplate/spec/selector"),
            )),
        ]
    },
};

// ---- networking, rbac, others --------------------------------------------------------------

static INGRESSES: Printer = Printer {
    columns: &[
        NAME,
        col("Class", "string", 0),
        col("Hosts", "string", 0),
        col("Address", "string", 0),
        col("Ports", "string", 0),
        AGE,
    ],
    cells: |o| {
        let hosts: Vec<&str> = arr(o, "/spec/rules")
            .iter()
            .map(|r| match r.get("host").and_then(Value::as_str) {
                Some(h) if !h.is_empty() => h,
                _ => "*",
            })
            .collect();
        let hosts = if hosts.len() > 4 {
            format!("{} + {} more...", hosts[..4].join(","), hosts.len() - 4)
        } else {
            hosts.join(",")
        };
        let addrs: Vec<&str> = arr(o, "/status/loadBalancer/ingress")
            .iter()
            .filter_map(|i| {
                i.get("ip")
                    .and_then(Value::as_str)
                    .or_else(|| i.get("hostname").and_then(Value::as_str))
            })
            .collect();
        let ports = if arr(o, "/spec/tls").is_empty() {
            "80"
        } else {
            "80, 443"
        };
        vec![
            name(o),
            or_none(s(o, "/spec/ingressClassName").into()),
            json!(hosts),
            json!(addrs.join(",")),
            json!(ports),
            created_age(o),
        ]
    },
};

static NETWORKPOLICIES: Printer = Printer {
    columns: &[NAME, col("Pod-Selector", "string", 0), AGE],
    cells: |o| {
        vec![
            name(o),
            or_none(format_selector(o.pointer("/spec/podSelector"))),
            created_age(o),
        ]
    },
};

static ROLES: Printer = Printer {
    columns: &[NAME, col("Created At", "string", 0)],
    cells: |o| vec![name(o), created_at(o)],
};

static BINDINGS: Printer = Printer {
    columns: &[
        NAME,
        col("Role", "string", 0),
        AGE,
        col("Users", "string", 1),
        col("Groups", "string", 1),
        col("ServiceAccounts", "string", 1),
    ],
    cells: |o| {
        let (mut users, mut groups, mut sas) = (Vec::new(), Vec::new(), Vec::new());
        for subj in arr(o, "/subjects") {
            let n = subj.get("name").and_then(Value::as_str).unwrap_or("");
            match subj.get("kind").and_then(Value::as_str) {
                Some("User") => users.push(n.to_string()),
                Some("Group") => groups.push(n.to_string()),
                Some("ServiceAccount") => sas.push(format!(
                    "{}:{n}",
                    subj.get("namespace").and_then(Value::as_str).unwrap_or("")
                )),
                _ => {}
            }
        }
        vec![
            name(o),
            json!(format!(
                "{}/{}",
                s(o, "/roleRef/kind"),
                s(o, "/roleRef/name")
            )),
            created_age(o),
            json!(users.join(", ")),
            json!(groups.join(", ")),
            json!(sas.join(", ")),
        ]
    },
};

static CRDS: Printer = Printer {
    columns: &[NAME, col("Created At", "string", 0)],
    cells: |o| vec![name(o), created_at(o)],
};

static LEASES: Printer = Printer {
    columns: &[NAME, col("Holder", "string", 0), AGE],
    cells: |o| vec![name(o), json!(s(o, "/spec/holderIdentity")), created_age(o)],
};

static PDBS: Printer = Printer {
    columns: &[
        NAME,
        col("Min Available", "string", 0),
        col("Max Unavailable", "string", 0),
        col("Allowed Disruptions", "integer", 0),
        AGE,
    ],
    cells: |o| {
        let int_or_str = |ptr: &str| match o.pointer(ptr) {
            Some(Value::String(v)) => v.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => "N/A".into(),
        };
        vec![
            name(o),
            json!(int_or_str("/spec/minAvailable")),
            json!(int_or_str("/spec/maxUnavailable")),
            json!(i(o, "/status/disruptionsAllowed")),
            created_age(o),
        ]
    },
};

static STORAGECLASSES: Printer = Printer {
    columns: &[
        NAME,
        col("Provisioner", "string", 0),
        col("ReclaimPolicy", "string", 0),
        col("VolumeBindingMode", "string", 0),
        col("AllowVolumeExpansion", "string", 0),
        AGE,
    ],
    cells: |o| {
        let default = [
            "storageclass.kubernetes.io/is-default-class",
            "storageclass.beta.kubernetes.io/is-default-class",
        ]
        .iter()
        .any(|k| {
            o.pointer("/metadata/annotations")
                .and_then(|a| a.get(*k))
                .and_then(Value::as_str)
                == Some("true")
        });
        let n = s(o, "/metadata/name");
        let n = if default {
            format!("{n} (default)")
        } else {
            n.to_string()
        };
        let dflt = |v: &str, d: &'static str| {
            if v.is_empty() {
                d.to_string()
            } else {
                v.to_string()
            }
        };
        vec![
            json!(n),
            json!(s(o, "/provisioner")),
            json!(dflt(s(o, "/reclaimPolicy"), "Delete")),
            json!(dflt(s(o, "/volumeBindingMode"), "Immediate")),
            json!(
                match o.pointer("/allowVolumeExpansion").and_then(Value::as_bool) {
                    Some(true) => "true",
                    _ => "false",
                }
            ),
            created_age(o),
        ]
    },
};

/// Column definitions of a printer, as `Table.columnDefinitions`.
pub fn column_definitions(p: &Printer) -> Value {
    Value::Array(
        p.columns
            .iter()
            .map(|c| {
                json!({
                    "name": c.name,
                    "type": c.kind,
                    "format": if c.name == "Name" { "name" } else { "" },
                    "description": c.description,
                    "priority": c.priority,
                })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cells(group: &str, plural: &str, o: Value) -> Vec<Value> {
        let p = builtin(group, plural).expect("printer");
        let c = (p.cells)(&o);
        assert_eq!(c.len(), p.columns.len(), "{plural}: one cell per column");
        c
    }

    #[test]
    fn every_printer_survives_garbage() {
        let garbage = [
            json!(null),
            json!(42),
            json!({"metadata": 5, "spec": [], "status": "x"}),
            json!({"spec": {"containers": 7, "replicas": "x", "ports": [1, null]}, "status": {"containerStatuses": [null, 3]}}),
            json!({"subsets": [{"addresses": [{}], "ports": [{}]}], "subjects": [1, {"kind": "User"}]}),
        ];
        for (g, p) in [
            ("", "pods"),
            ("", "services"),
            ("", "configmaps"),
            ("", "secrets"),
            ("", "namespaces"),
            ("", "serviceaccounts"),
            ("", "nodes"),
            ("", "endpoints"),
            ("", "persistentvolumeclaims"),
            ("apps", "deployments"),
            ("apps", "replicasets"),
            ("apps", "statefulsets"),
            ("apps", "daemonsets"),
            ("batch", "jobs"),
            ("batch", "cronjobs"),
            ("networking.k8s.io", "ingresses"),
            ("networking.k8s.io", "networkpolicies"),
            ("rbac.authorization.k8s.io", "roles"),
            ("rbac.authorization.k8s.io", "clusterrolebindings"),
            ("apiextensions.k8s.io", "customresourcedefinitions"),
            ("coordination.k8s.io", "leases"),
            ("policy", "poddisruptionbudgets"),
            ("storage.k8s.io", "storageclasses"),
        ] {
            for o in &garbage {
                cells(g, p, o.clone());
            }
        }
    }

    #[test]
    fn pod_status_and_restarts() {
        let pod = json!({
            "metadata": {"name": "web-1"},
            "spec": {"containers": [{"name": "a"}, {"name": "b"}], "nodeName": "n1"},
            "status": {"phase": "Running", "podIP": "10.0.0.5", "containerStatuses": [
                {"name": "a", "ready": true, "restartCount": 2, "state": {"running": {}}},
                {"name": "b", "ready": false, "restartCount": 1, "state": {"waiting": {"reason": "CrashLoopBackOff"}}},
            ]},
        });
        let c = cells("", "pods", pod);
        assert_eq!(c[0], json!("web-1"));
        assert_eq!(c[1], json!("1/2"));
        assert_eq!(c[2], json!("CrashLoopBackOff"));
        assert_eq!(c[3], json!("3"));
        assert_eq!(c[5], json!("10.0.0.5"));
        assert_eq!(c[6], json!("n1"));
        assert_eq!(c[7], json!("<none>"));

        let init = json!({"spec": {"initContainers": [{"name": "i"}], "containers": [{"name": "a"}]},
            "status": {"phase": "Pending", "initContainerStatuses": [{"state": {"waiting": {"reason": "PodInitializing"}}}]}});
        assert_eq!(cells("", "pods", init)[2], json!("Init:0/1"));
        let term = json!({"metadata": {"deletionTimestamp": "2024-01-01T00:00:00Z"}, "status": {"phase": "Running"}});
        assert_eq!(cells("", "pods", term)[2], json!("Terminating"));
        let done = json!({"status": {"phase": "Succeeded", "containerStatuses": [{"state": {"terminated": {"reason": "Completed", "exitCode": 0}}}]}});
        assert_eq!(cells("", "pods", done)[2], json!("Completed"));
    }

    #[test]
    fn deployment_and_selectors() {
        let d = json!({
            "metadata": {"name": "web"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web", "tier": "fe"},
                "matchExpressions": [{"key": "env", "operator": "In", "values": ["a", "b"]}, {"key": "x", "operator": "DoesNotExist"}]},
                "template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:1"}, {"name": "side", "image": "busybox"}]}}},
            "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2},
        });
        let c = cells("apps", "deployments", d);
        assert_eq!(c[1], json!("2/3"));
        assert_eq!(c[2], json!(3));
        assert_eq!(c[3], json!(2));
        assert_eq!(c[5], json!("nginx,side"));
        assert_eq!(c[6], json!("nginx:1,busybox"));
        assert_eq!(c[7], json!("app=web,tier=fe,env in (a,b),!x"));
        // No replicas stored: kube-apiserver's default of 1.
        assert_eq!(cells("apps", "deployments", json!({}))[1], json!("0/1"));
    }

    #[test]
    fn service_ports_and_external() {
        let svc = json!({"spec": {"type": "NodePort", "clusterIP": "10.96.0.10",
            "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}],
            "selector": {"b": "2", "a": "1"}}});
        let c = cells("", "services", svc);
        assert_eq!(c[1], json!("NodePort"));
        assert_eq!(c[3], json!("<none>"));
        assert_eq!(c[4], json!("80:30080/TCP,53/UDP"));
        assert_eq!(c[6], json!("a=1,b=2"));
        let lb = json!({"spec": {"type": "LoadBalancer"}});
        assert_eq!(cells("", "services", lb)[3], json!("<pending>"));
        assert_eq!(cells("", "services", json!({}))[1], json!("ClusterIP"));
    }

    #[test]
    fn job_completions() {
        let j = json!({"spec": {"completions": 5}, "status": {"succeeded": 2, "conditions": [{"type": "Complete", "status": "False"}]}});
        let c = cells("batch", "jobs", j);
        assert_eq!(c[1], json!("Running"));
        assert_eq!(c[2], json!("2/5"));
        let j = json!({"spec": {"parallelism": 3}, "status": {"conditions": [{"type": "Complete", "status": "True"}],
            "startTime": "2024-01-01T00:00:00Z", "completionTime": "2024-01-01T00:01:30Z"}});
        let c = cells("batch", "jobs", j);
        assert_eq!(c[1], json!("Complete"));
        assert_eq!(c[2], json!("0/1 of 3"));
        assert_eq!(c[3], json!("90s"));
    }

    #[test]
    fn bindings_and_secrets() {
        let b = json!({"metadata": {"name": "rb"}, "roleRef": {"kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "User", "name": "alice"}, {"kind": "ServiceAccount", "name": "agent", "namespace": "a"}]});
        let c = cells("rbac.authorization.k8s.io", "rolebindings", b);
        assert_eq!(c[1], json!("ClusterRole/view"));
        assert_eq!(c[3], json!("alice"));
        assert_eq!(c[5], json!("a:agent"));
        let sec = json!({"type": "Opaque", "data": {"a": "", "b": ""}});
        assert_eq!(cells("", "secrets", sec)[1..3], [json!("Opaque"), json!(2)]);
    }
}
