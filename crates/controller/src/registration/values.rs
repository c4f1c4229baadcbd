//! The `values` a registration token hands to an agent (the Secret `<token>` in the workspace,
//! key `values`): what `fleet install agent-token` and upstream's `helm install fleet-agent` turn
//! into the downstream `fleet-agent-bootstrap` Secret.

use serde::{Deserialize, Serialize};

/// Upstream's agent values, keys in Go's sorted map order.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct RegistrationValues {
    /// PEM CA of the manager's API server ("" when the system store is to be trusted).
    #[serde(rename = "apiServerCA", default)]
    pub api_server_ca: String,
    /// URL of the manager's API server.
    #[serde(rename = "apiServerURL", default)]
    pub api_server_url: String,
    /// The workspace the cluster registers into.
    #[serde(rename = "clusterNamespace", default)]
    pub cluster_namespace: String,
    /// Non-default manager settings.
    #[serde(rename = "internal", default, skip_serializing_if = "Option::is_none")]
    pub internal: Option<InternalValues>,
    /// Where the agent fetches its `c-…` credential.
    #[serde(rename = "systemRegistrationNamespace", default)]
    pub system_registration_namespace: String,
    /// The bootstrap token (the token ServiceAccount's token).
    #[serde(rename = "token", default)]
    pub token: String,
    /// The ClusterRegistrationToken's name (the label on the agent's ClusterRegistration).
    #[serde(rename = "tokenName", default)]
    pub token_name: String,
}

/// `internal.*` values: only set when the manager's system namespace is not the default.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct InternalValues {
    /// The manager's system namespace.
    #[serde(rename = "systemNamespace", default)]
    pub system_namespace: String,
}

/// Registration values that cannot be written or read back.
#[derive(Debug, thiserror::Error)]
pub enum ValuesError {
    /// Serialising to YAML failed.
    #[error("{0}")]
    Write(#[from] serde_saphyr::SerializeError),
    /// The Secret's `values` are not the registration values' YAML.
    #[error("registration values: {0}")]
    Read(#[from] serde_saphyr::Error),
}

impl RegistrationValues {
    /// YAML as stored in the Secret.
    pub fn to_yaml(&self) -> Result<String, ValuesError> {
        Ok(serde_saphyr::to_string(self)?)
    }

    /// Parses the Secret's `values`.
    pub fn from_yaml(text: &str) -> Result<RegistrationValues, ValuesError> {
        Ok(serde_saphyr::from_str(text)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_a_multiline_ca() {
        let v = RegistrationValues {
            api_server_ca: "-----BEGIN CERTIFICATE-----\nabc\n-----END CERTIFICATE-----\n".into(),
            api_server_url: "https://127.0.0.1:6443".into(),
            cluster_namespace: "fleet-default".into(),
            internal: None,
            system_registration_namespace: "cattle-fleet-clusters-system".into(),
            token: "eyJ.x.y".into(),
            token_name: "t1".into(),
        };
        let y = v.to_yaml().unwrap();
        assert!(
            y.find("apiServerCA").unwrap() < y.find("tokenName").unwrap(),
            "{y}"
        );
        assert_eq!(RegistrationValues::from_yaml(&y).unwrap(), v);
    }
}
