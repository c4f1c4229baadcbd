//! `fleet install`: prints installation manifests, ready for `kubectl apply -f -`.
//!
//! - `crds`: the CustomResourceDefinitions of every Fleet kind;
//! - `controller`: CRDs, the system namespace, the controller's ServiceAccount, RBAC, config and
//!   Deployment running `fleet controller` (no connection needed);
//! - `agent-token`: creates a ClusterRegistrationToken through the kubeconfig, waits for its values
//!   and prints what registers a cluster: the `fleet-agent-bootstrap` Secret plus the agent's
//!   namespace, ServiceAccount, RBAC and Deployment running `fleet agent`;
//! - `agent-config`: the `fleet-agent` ConfigMap (labels, clientID) with its namespace, applied to a
//!   cluster before its token so it registers with those labels.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use base64::Engine;
use clap::{Args, Subcommand};
use fleet_api::ClusterRegistrationToken;
use fleet_controller::registration::names::SECRET_TYPE_REGISTRATION_VALUES;
use fleet_controller::registration::{RegistrationValues, parse_go_duration};
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use serde_json::{Value, json};

/// The image the manifests name: the one the repository's Dockerfile builds.
pub const DEFAULT_IMAGE: &str = concat!("fleet:", env!("CARGO_PKG_VERSION"));
/// The manager's and the agent's system namespace.
pub const DEFAULT_SYSTEM_NAMESPACE: &str = "cattle-fleet-system";

/// Arguments of `fleet install`.
#[derive(Args)]
pub struct InstallArgs {
    /// Kubeconfig of the manager (agent-token); default: $KUBECONFIG, ~/.kube/config, in-cluster.
    #[arg(short = 'k', long, global = true, value_name = "FILE")]
    kubeconfig: Option<PathBuf>,
    /// Workspace (namespace) the registration token, and so the clusters, live in.
    #[arg(
        short = 'n',
        long,
        global = true,
        env = "NAMESPACE",
        default_value = "fleet-default"
    )]
    namespace: String,
    #[command(subcommand)]
    what: InstallWhat,
}

#[derive(Subcommand)]
enum InstallWhat {
    /// Print the fleet.cattle.io CRDs (status subresources, printer columns) as YAML.
    Crds,
    /// Print the manager's manifests: CRDs, namespace, service account, RBAC, Deployment.
    Controller(ControllerArgs),
    /// Create a registration token and print the manifest that registers a cluster with it.
    AgentToken(AgentTokenArgs),
    /// Print the agent ConfigMap that sets the labels (and clientID) a cluster registers with.
    AgentConfig(AgentConfigArgs),
}

#[derive(Args)]
struct ControllerArgs {
    /// Print only the CRDs.
    #[arg(long)]
    crds_only: bool,
    /// Image of the `fleet controller` Deployment.
    #[arg(long, value_name = "IMAGE", default_value = DEFAULT_IMAGE)]
    controller_image: String,
    /// Image agents run (written to the controller's config).
    #[arg(long, value_name = "IMAGE", default_value = DEFAULT_IMAGE)]
    agent_image: String,
    /// The manager's system namespace.
    #[arg(long, value_name = "NS", default_value = DEFAULT_SYSTEM_NAMESPACE)]
    system_namespace: String,
}

#[derive(Args)]
struct AgentTokenArgs {
    /// ClusterGroup the token is for (recorded as the token's `fleet.cattle.io/cluster-group`
    /// label; group membership itself follows the cluster's labels, see agent-config).
    #[arg(short = 'g', long, default_value = "default")]
    group: String,
    /// How long the token can register clusters (Go duration); 0 means forever.
    #[arg(short = 't', long, default_value = "1440m")]
    ttl: String,
    /// The manager's API URL agents dial (default: the kubeconfig's server).
    #[arg(long, value_name = "URL")]
    server_url: Option<String>,
    /// PEM CA of the manager's API (default: the kubeconfig's CA).
    #[arg(short = 'c', long, value_name = "FILE")]
    ca_file: Option<PathBuf>,
    /// Give agents no CA: they trust the system store.
    #[arg(long, conflicts_with = "ca_file")]
    no_ca: bool,
    /// The agent's system namespace in the downstream cluster.
    #[arg(long, value_name = "NS", default_value = DEFAULT_SYSTEM_NAMESPACE)]
    system_namespace: String,
    /// Image of the `fleet agent` Deployment.
    #[arg(long, value_name = "IMAGE", default_value = DEFAULT_IMAGE)]
    agent_image: String,
}

#[derive(Args)]
struct AgentConfigArgs {
    /// A label the cluster registers with (repeatable).
    #[arg(short = 'l', long = "label", value_name = "KEY=VALUE")]
    labels: Vec<String>,
    /// The cluster's identity (default: the uid of its kube-system namespace).
    #[arg(long, value_name = "ID")]
    client_id: Option<String>,
    /// The agent's system namespace in the downstream cluster.
    #[arg(long, value_name = "NS", default_value = DEFAULT_SYSTEM_NAMESPACE)]
    system_namespace: String,
}

/// Runs `fleet install ...`.
pub fn run(args: InstallArgs) -> anyhow::Result<()> {
    let text = match args.what {
        InstallWhat::Crds => crds_yaml()?,
        InstallWhat::Controller(c) => controller_yaml(&c)?,
        InstallWhat::AgentConfig(c) => agent_config_yaml(&c)?,
        InstallWhat::AgentToken(t) => {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .context("starting the async runtime")?;
            rt.block_on(agent_token_yaml(
                args.kubeconfig.as_deref(),
                &args.namespace,
                &t,
            ))?
        }
    };
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

fn yaml_stream(docs: &[Value]) -> anyhow::Result<String> {
    Ok(fleet_bundle::export::to_yaml_stream(docs)?)
}

fn crd_values() -> anyhow::Result<Vec<Value>> {
    fleet_api::crds::all()
        .iter()
        .map(|c| serde_json::to_value(c).map_err(anyhow::Error::from))
        .collect()
}

/// All CRDs as one multi-document YAML stream.
pub fn crds_yaml() -> anyhow::Result<String> {
    yaml_stream(&crd_values()?)
}

fn namespace(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
}

/// A ServiceAccount with cluster-wide rights on everything (the manager and the downstream agent
/// are cluster administrators of the cluster they run in, as upstream's charts make them).
fn admin_account(name: &str, ns: &str) -> Vec<Value> {
    vec![
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
               "metadata": {"name": name, "namespace": ns}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": format!("{name}-{ns}")},
        "rules": [
            {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
            {"nonResourceURLs": ["*"], "verbs": ["*"]}
        ]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": format!("{name}-{ns}")},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                           "name": format!("{name}-{ns}")},
               "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": ns}]}),
    ]
}

fn deployment(name: &str, ns: &str, image: &str, args: &[&str]) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns, "labels": {"app": name}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "serviceAccountName": name,
                    "containers": [{
                        "name": name,
                        "image": image,
                        "imagePullPolicy": "IfNotPresent",
                        "command": ["fleet"],
                        "args": args,
                        "env": [{"name": "NAMESPACE",
                                 "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}],
                        "securityContext": {"runAsNonRoot": true, "runAsUser": 1000,
                                            "allowPrivilegeEscalation": false}
                    }]
                }
            }
        }
    })
}

fn controller_yaml(a: &ControllerArgs) -> anyhow::Result<String> {
    let mut docs = crd_values()?;
    if !a.crds_only {
        let ns = &a.system_namespace;
        docs.push(namespace(ns));
        docs.extend(admin_account("fleet-controller", ns));
        let config = json!({"agentImage": a.agent_image, "systemNamespace": ns});
        docs.push(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "fleet-controller", "namespace": ns},
            "data": {"config": serde_json::to_string(&config)?}
        }));
        docs.push(deployment(
            "fleet-controller",
            ns,
            &a.controller_image,
            &["controller"],
        ));
    }
    yaml_stream(&docs)
}

/// Parses `KEY=VALUE`.
fn parse_label(s: &str) -> anyhow::Result<(String, String)> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => bail!("--label {s:?}: expected KEY=VALUE"),
    }
}

fn agent_config_yaml(a: &AgentConfigArgs) -> anyhow::Result<String> {
    let labels = a
        .labels
        .iter()
        .map(|l| parse_label(l))
        .collect::<anyhow::Result<BTreeMap<_, _>>>()?;
    let mut config = json!({"labels": labels});
    if let Some(id) = &a.client_id {
        config["clientID"] = id.clone().into();
    }
    yaml_stream(&[
        namespace(&a.system_namespace),
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "fleet-agent", "namespace": a.system_namespace},
            "data": {"config": serde_json::to_string(&config)?}
        }),
    ])
}

/// Server URL and PEM CA of the kubeconfig's current context.
fn kubeconfig_server(path: Option<&Path>) -> anyhow::Result<(String, String)> {
    let kc = match path {
        Some(p) => kube::config::Kubeconfig::read_from(p)
            .with_context(|| format!("kubeconfig {}", p.display()))?,
        None => kube::config::Kubeconfig::read().context("kubeconfig")?,
    };
    let ctx_name = kc.current_context.clone().unwrap_or_default();
    let cluster_name = kc
        .contexts
        .iter()
        .find(|c| c.name == ctx_name)
        .and_then(|c| c.context.as_ref())
        .map(|c| c.cluster.clone())
        .with_context(|| format!("kubeconfig: current context {ctx_name:?} not found"))?;
    let cluster = kc
        .clusters
        .iter()
        .find(|c| c.name == cluster_name)
        .and_then(|c| c.cluster.as_ref())
        .with_context(|| format!("kubeconfig: cluster {cluster_name:?} not found"))?;
    let url = cluster.server.clone().unwrap_or_default();
    let ca = if let Some(data) = &cluster.certificate_authority_data {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .context("kubeconfig: certificate-authority-data is not base64")?;
        String::from_utf8(bytes).context("kubeconfig: certificate-authority-data is not PEM")?
    } else if let Some(file) = &cluster.certificate_authority {
        std::fs::read_to_string(file).with_context(|| format!("kubeconfig: CA file {file}"))?
    } else {
        String::new()
    };
    Ok((url, ca))
}

async fn agent_token_yaml(
    kubeconfig: Option<&Path>,
    workspace: &str,
    a: &AgentTokenArgs,
) -> anyhow::Result<String> {
    let ttl = parse_go_duration(&a.ttl).map_err(|e| anyhow::anyhow!("--ttl: {e}"))?;
    let (kc_url, kc_ca) = kubeconfig_server(kubeconfig)?;
    let url = a.server_url.clone().unwrap_or(kc_url);
    if url.is_empty() {
        bail!("no server URL: the kubeconfig names none; pass --server-url");
    }
    let ca = if a.no_ca {
        String::new()
    } else if let Some(f) = &a.ca_file {
        std::fs::read_to_string(f).with_context(|| format!("--ca-file {}", f.display()))?
    } else {
        kc_ca
    };

    let client = fleet_kube::client(kubeconfig).await?;
    let tokens: Api<ClusterRegistrationToken> = Api::namespaced(client.clone(), workspace);
    let mut token = ClusterRegistrationToken::new("", Default::default());
    token.metadata = ObjectMeta {
        generate_name: Some("agent-token-".into()),
        namespace: Some(workspace.into()),
        labels: Some(BTreeMap::from([(
            "fleet.cattle.io/cluster-group".to_string(),
            a.group.clone(),
        )])),
        ..Default::default()
    };
    if !ttl.is_zero() {
        token.spec.ttl = Some(a.ttl.clone());
    }
    let token = tokens
        .create(&PostParams::default(), &token)
        .await
        .with_context(|| format!("creating a ClusterRegistrationToken in {workspace}"))?;
    let name = token.metadata.name.clone().unwrap_or_default();

    // The manager's registration controller writes the values Secret `<token>`.
    let secrets: Api<Secret> = Api::namespaced(client, workspace);
    let deadline = Instant::now() + Duration::from_secs(60);
    let values = loop {
        if let Some(s) = secrets.get_opt(&name).await?
            && s.type_.as_deref() == Some(SECRET_TYPE_REGISTRATION_VALUES)
            && let Some(v) = s.data.as_ref().and_then(|d| d.get("values"))
        {
            break RegistrationValues::from_yaml(&String::from_utf8_lossy(&v.0))
                .map_err(|e| anyhow::anyhow!("Secret {workspace}/{name}: {e}"))?;
        }
        if Instant::now() > deadline {
            bail!(
                "ClusterRegistrationToken {workspace}/{name} got no values Secret within 60s: is the fleet controller running?"
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    agent_manifest(&values, &url, &ca, a)
}

/// The manifest that registers a cluster: namespace, bootstrap Secret, agent account, RBAC and
/// Deployment.
fn agent_manifest(
    values: &RegistrationValues,
    url: &str,
    ca: &str,
    a: &AgentTokenArgs,
) -> anyhow::Result<String> {
    let ns = &a.system_namespace;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let mut docs = vec![namespace(ns)];
    docs.push(json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "fleet-agent-bootstrap", "namespace": ns},
        "type": "Opaque",
        "data": {
            "apiServerURL": b64(url),
            "apiServerCA": b64(ca),
            "clusterNamespace": b64(&values.cluster_namespace),
            "systemRegistrationNamespace": b64(&values.system_registration_namespace),
            "token": b64(&values.token),
            "tokenName": b64(&values.token_name),
        }
    }));
    docs.extend(admin_account("fleet-agent", ns));
    docs.push(deployment(
        "fleet-agent",
        ns,
        &a.agent_image,
        &["agent", "--system-namespace", ns],
    ));
    yaml_stream(&docs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crds_yaml_round_trips() {
        let text = crds_yaml().unwrap();
        let docs: Vec<serde_json::Value> = serde_saphyr::from_multiple(&text).unwrap();
        assert_eq!(docs.len(), 14);
        for d in &docs {
            assert_eq!(d["kind"], "CustomResourceDefinition");
            assert_eq!(d["spec"]["group"], "fleet.cattle.io");
        }
        let bundle = docs
            .iter()
            .find(|d| d["metadata"]["name"] == "bundles.fleet.cattle.io")
            .unwrap();
        assert!(bundle["spec"]["versions"][0]["subresources"]["status"].is_object());
        assert_eq!(
            bundle["spec"]["versions"][0]["additionalPrinterColumns"][0]["name"],
            "BundleDeployments-Ready"
        );
    }

    #[test]
    fn labels_must_be_key_value() {
        assert_eq!(
            parse_label("env=prod").unwrap(),
            ("env".to_string(), "prod".to_string())
        );
        assert_eq!(parse_label("a=").unwrap().1, "");
        assert!(parse_label("env").is_err());
        assert!(parse_label("=x").is_err());
    }
}
