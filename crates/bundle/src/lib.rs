//! A directory → Bundles, as upstream `fleet apply` does it offline.

pub mod chart;
pub mod error;
pub mod export;
pub mod gomatch;
pub mod online;
pub mod options;
pub mod paths;
pub mod read;
pub mod values;
pub mod walk;
pub mod yaml;

pub use error::BundleError;
pub use options::{ApplyOptions, Auth};
pub use read::{BuiltBundle, create_bundles};

/// Parses a fleet.yaml, naming file, line and key on errors.
pub fn fleet_yaml(
    file: &std::path::Path,
    text: &str,
) -> Result<fleet_api::fleetyaml::FleetYaml, BundleError> {
    yaml::from_str_with_schema(file, text, fleet_yaml_schema())
}

/// The inlined OpenAPI schema of fleet.yaml, computed once.
pub fn fleet_yaml_schema() -> serde_json::Value {
    static SCHEMA: std::sync::OnceLock<serde_json::Value> = std::sync::OnceLock::new();
    SCHEMA
        .get_or_init(|| {
            let mut settings = schemars::generate::SchemaSettings::openapi3();
            settings.inline_subschemas = true;
            let schema = settings
                .into_generator()
                .into_root_schema_for::<fleet_api::fleetyaml::FleetYaml>();
            serde_json::to_value(schema).unwrap_or_default()
        })
        .clone()
}
