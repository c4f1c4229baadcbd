//! Bundle + options → Kubernetes objects: Helm charts, kustomize, raw-YAML overlays.
/// Defines an error type carrying a message that must print exactly as the tool it mirrors
/// prints it (Helm, kube-apiserver): typed at the API, verbatim in `Display`.
macro_rules! message_error {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
        #[error("{0}")]
        pub struct $name(pub String);

        impl From<String> for $name {
            fn from(message: String) -> Self {
                $name(message)
            }
        }

        impl From<&str> for $name {
            fn from(message: &str) -> Self {
                $name(message.to_string())
            }
        }
    };
}

pub mod deploy;
pub mod helm;
pub mod kustomize;
pub mod rawyaml;
