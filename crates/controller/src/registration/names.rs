//! Names and keys of the registration objects. They are part of the wire contract with upstream
//! agents and tooling, so each is computed exactly as upstream Fleet computes it.

use fleet_api::names::{key_hash, safe_concat_name, sha256_hex};

/// The manager's system namespace unless configured otherwise.
pub const DEFAULT_SYSTEM_NAMESPACE: &str = "cattle-fleet-system";
/// Type of the Secret `<token>` holding a token's agent values.
pub const SECRET_TYPE_REGISTRATION_VALUES: &str = "fleet.cattle.io/cluster-registration-values";
/// Type of the `c-…` Secret that hands an agent its credential.
pub const SECRET_TYPE_AGENT_CREDENTIAL: &str = "fleet.cattle.io/agent-credential";
/// Cluster label an agent adds to name the pod that registered.
pub const CREATED_BY_AGENT_POD_LABEL: &str = "fleet.cattle.io/created-by-agent-pod";
/// ClusterRole bound in each cluster namespace: read BundleDeployments, write their status.
pub const BUNDLE_DEPLOYMENT_CLUSTER_ROLE: &str = "fleet-bundle-deployment";
/// ClusterRole bound for every agent: get Contents by name.
pub const CONTENT_CLUSTER_ROLE: &str = "fleet-content";

/// The namespace holding `c-…` credential Secrets: `-system` becomes `-clusters-system`, else
/// `-clusters-system` is appended (`cattle-fleet-system` → `cattle-fleet-clusters-system`).
pub fn system_registration_namespace(system_namespace: &str) -> String {
    if system_namespace.contains("-system") {
        system_namespace.replace("-system", "-clusters-system")
    } else {
        format!("{system_namespace}-clusters-system")
    }
}

/// The ServiceAccount a registration token's bootstrap token belongs to.
pub fn token_service_account(token_name: &str, token_uid: &str) -> String {
    safe_concat_name(&[token_name, token_uid])
}

/// The ServiceAccount (in the cluster namespace) whose token a registered agent uses.
pub fn request_service_account(request_name: &str, request_uid: &str) -> String {
    safe_concat_name(&[request_name, request_uid])
}

/// The Cluster created for a new client ID: `cluster-<12 hex>`.
pub fn cluster_name_for_client(client_id: &str) -> String {
    safe_concat_name(&["cluster", &key_hash(client_id)])
}

/// The Secret in the system registration namespace that hands the agent its credential:
/// `("c-" + sha256hex(clientID ‖ clientRandom))[:63]`.
pub fn credential_secret_name(client_id: &str, client_random: &str) -> String {
    let mut s = format!(
        "c-{}",
        sha256_hex(format!("{client_id}{client_random}").as_bytes())
    );
    s.truncate(63);
    s
}

/// The token-Secret name for a ServiceAccount (filled by the token controller); kept under 64
/// characters like every generated name.
pub fn token_secret_name(service_account: &str) -> String {
    safe_concat_name(&[service_account, "token"])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_registration_namespace_rule() {
        assert_eq!(
            system_registration_namespace("cattle-fleet-system"),
            "cattle-fleet-clusters-system"
        );
        assert_eq!(
            system_registration_namespace("fleet"),
            "fleet-clusters-system"
        );
    }

    #[test]
    fn cluster_name_is_cluster_dash_keyhash() {
        let n = cluster_name_for_client("abc");
        assert_eq!(n, format!("cluster-{}", key_hash("abc")));
        assert_eq!(n.len(), "cluster-".len() + 12);
    }

    #[test]
    fn credential_secret_name_is_63_chars_of_c_dash_sha256() {
        let n = credential_secret_name("id", "rand");
        assert_eq!(n.len(), 63);
        assert!(n.starts_with("c-"));
        assert_eq!(&n[2..], &sha256_hex(b"idrand")[..61]);
    }

    #[test]
    fn service_account_names_are_safe_concat() {
        let uid = "0123456789abcdef0123456789abcdef0123";
        let sa = request_service_account("request-abcde", uid);
        assert_eq!(sa, format!("request-abcde-{uid}"));
        let long = token_service_account(&"t".repeat(60), uid);
        assert!(long.len() < 64, "{long}");
        let tok = token_secret_name(&token_service_account("import-token-imported", uid));
        assert!(tok.len() < 64, "{tok}");
    }
}
