//! The RBAC objects of registration, exactly upstream's (least privilege): what a bootstrap token
//! may do (create ClusterRegistrations in its workspace) and what a registered agent may do (read
//! its own namespace's BundleDeployments and the Contents they name, write their status and its own
//! Cluster's status, and read its `c-…` credential once).

use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use kube::api::ObjectMeta;

use super::names::{BUNDLE_DEPLOYMENT_CLUSTER_ROLE, CONTENT_CLUSTER_ROLE};

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

fn rule(groups: &[&str], resources: &[&str], verbs: &[&str], names: &[&str]) -> PolicyRule {
    let v = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    PolicyRule {
        api_groups: Some(v(groups)),
        resources: Some(v(resources)),
        verbs: v(verbs),
        resource_names: (!names.is_empty()).then(|| v(names)),
        non_resource_urls: None,
    }
}

fn meta(name: &str, namespace: Option<&str>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        namespace: namespace.map(str::to_string),
        ..Default::default()
    }
}

/// A ServiceAccount as an RBAC subject.
pub fn service_account_subject(name: &str, namespace: &str) -> Subject {
    Subject {
        kind: "ServiceAccount".into(),
        name: name.into(),
        namespace: Some(namespace.into()),
        api_group: None,
    }
}

fn role_ref(kind: &str, name: &str) -> RoleRef {
    RoleRef {
        api_group: RBAC_GROUP.into(),
        kind: kind.into(),
        name: name.into(),
    }
}

/// `fleet-bundle-deployment`, bound only inside a cluster namespace.
pub fn bundle_deployment_cluster_role() -> ClusterRole {
    ClusterRole {
        metadata: meta(BUNDLE_DEPLOYMENT_CLUSTER_ROLE, None),
        rules: Some(vec![
            rule(
                &["fleet.cattle.io"],
                &["bundledeployments"],
                &["get", "list", "watch"],
                &[],
            ),
            rule(
                &["fleet.cattle.io"],
                &["bundledeployments/status"],
                &["update", "patch"],
                &[],
            ),
            rule(&[""], &["secrets", "configmaps"], &["get"], &[]),
        ]),
        aggregation_rule: None,
    }
}

/// `fleet-content`: Contents by name only (no list: names are content hashes).
pub fn content_cluster_role() -> ClusterRole {
    ClusterRole {
        metadata: meta(CONTENT_CLUSTER_ROLE, None),
        rules: Some(vec![rule(
            &["fleet.cattle.io"],
            &["contents"],
            &["get"],
            &[],
        )]),
        aggregation_rule: None,
    }
}

/// `<sa>-role` in the workspace: the bootstrap token may only create ClusterRegistrations.
pub fn token_role(service_account: &str, workspace: &str) -> Role {
    Role {
        metadata: meta(&format!("{service_account}-role"), Some(workspace)),
        rules: Some(vec![rule(
            &["fleet.cattle.io"],
            &["clusterregistrations"],
            &["create"],
            &[],
        )]),
    }
}

/// `<sa>-to-role`: binds the token's ServiceAccount to [`token_role`].
pub fn token_role_binding(service_account: &str, workspace: &str) -> RoleBinding {
    RoleBinding {
        metadata: meta(&format!("{service_account}-to-role"), Some(workspace)),
        role_ref: role_ref("Role", &format!("{service_account}-role")),
        subjects: Some(vec![service_account_subject(service_account, workspace)]),
    }
}

/// What one granted registration is: who asked, which cluster it became, and whose token
/// fetches the credential.
#[derive(Clone, Debug)]
pub struct Grant {
    /// The ClusterRegistration's name (names the grant's Roles and bindings).
    pub request: String,
    /// The workspace (the ClusterRegistration's and the Cluster's namespace).
    pub workspace: String,
    /// The Cluster's name.
    pub cluster: String,
    /// The cluster namespace (BundleDeployments live there, and the agent's ServiceAccount).
    pub cluster_namespace: String,
    /// The agent's ServiceAccount in the cluster namespace.
    pub service_account: String,
    /// The system registration namespace (holds the credential Secret).
    pub system_registration_namespace: String,
    /// The `c-…` credential Secret.
    pub credential_secret: String,
    /// The bootstrap token's ServiceAccount (in the workspace), which may read the credential.
    pub token_service_account: String,
}

/// The Roles and bindings of one grant, in the order they are written.
#[derive(Clone, Debug)]
pub struct GrantRbac {
    /// `<request>` in the workspace: patch its own Cluster's status.
    pub cluster_status_role: Role,
    /// `<request>` in the workspace, binding the agent to `cluster_status_role`.
    pub cluster_status_binding: RoleBinding,
    /// `<request>` in the cluster namespace → `fleet-bundle-deployment`.
    pub bundle_deployment_binding: RoleBinding,
    /// `<request>-content` → `fleet-content`.
    pub content_binding: ClusterRoleBinding,
    /// `<request>-creds` in the system registration namespace: get exactly the credential Secret.
    pub creds_role: Role,
    /// `<request>-creds`, binding the bootstrap token's ServiceAccount to `creds_role`.
    pub creds_binding: RoleBinding,
}

impl Grant {
    /// The least-privilege RBAC of this grant (upstream's exact objects).
    pub fn rbac(&self) -> GrantRbac {
        let agent = service_account_subject(&self.service_account, &self.cluster_namespace);
        let creds = format!("{}-creds", self.request);
        GrantRbac {
            cluster_status_role: Role {
                metadata: meta(&self.request, Some(&self.workspace)),
                rules: Some(vec![rule(
                    &["fleet.cattle.io"],
                    &["clusters/status"],
                    &["patch"],
                    &[&self.cluster],
                )]),
            },
            cluster_status_binding: RoleBinding {
                metadata: meta(&self.request, Some(&self.workspace)),
                role_ref: role_ref("Role", &self.request),
                subjects: Some(vec![agent.clone()]),
            },
            bundle_deployment_binding: RoleBinding {
                metadata: meta(&self.request, Some(&self.cluster_namespace)),
                role_ref: role_ref("ClusterRole", BUNDLE_DEPLOYMENT_CLUSTER_ROLE),
                subjects: Some(vec![agent.clone()]),
            },
            content_binding: ClusterRoleBinding {
                metadata: meta(&format!("{}-content", self.request), None),
                role_ref: role_ref("ClusterRole", CONTENT_CLUSTER_ROLE),
                subjects: Some(vec![agent]),
            },
            creds_role: Role {
                metadata: meta(&creds, Some(&self.system_registration_namespace)),
                rules: Some(vec![rule(
                    &[""],
                    &["secrets"],
                    &["get"],
                    &[&self.credential_secret],
                )]),
            },
            creds_binding: RoleBinding {
                metadata: meta(&creds, Some(&self.system_registration_namespace)),
                role_ref: role_ref("Role", &creds),
                subjects: Some(vec![service_account_subject(
                    &self.token_service_account,
                    &self.workspace,
                )]),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grant_is_least_privilege() {
        let g = Grant {
            request: "request-x".into(),
            workspace: "fleet-default".into(),
            cluster: "cluster-1".into(),
            cluster_namespace: "cluster-fleet-default-cluster-1-abc".into(),
            service_account: "request-x-uid".into(),
            system_registration_namespace: "cattle-fleet-clusters-system".into(),
            credential_secret: "c-123".into(),
            token_service_account: "tok-uid".into(),
        };
        let r = g.rbac();
        let rules = r.cluster_status_role.rules.unwrap();
        assert_eq!(rules.len(), 1);
        assert_eq!(rules[0].verbs, vec!["patch"]);
        assert_eq!(
            rules[0].resources.as_deref(),
            Some(&["clusters/status".to_string()][..])
        );
        assert_eq!(
            rules[0].resource_names.as_deref(),
            Some(&["cluster-1".to_string()][..])
        );
        assert_eq!(
            r.content_binding.metadata.name.as_deref(),
            Some("request-x-content")
        );
        assert_eq!(
            r.bundle_deployment_binding.metadata.namespace.as_deref(),
            Some("cluster-fleet-default-cluster-1-abc")
        );
        let creds = r.creds_role.rules.unwrap();
        assert_eq!(creds[0].verbs, vec!["get"]);
        assert_eq!(
            creds[0].resource_names.as_deref(),
            Some(&["c-123".to_string()][..])
        );
        let subj = &r.creds_binding.subjects.unwrap()[0];
        assert_eq!(
            (subj.name.as_str(), subj.namespace.as_deref()),
            ("tok-uid", Some("fleet-default"))
        );
    }
}
