//! YAML reading with Go/Kubernetes semantics (legacy octal numbers) and errors that carry the
//! file, line, column and key path.

use std::path::Path;

use serde::de::DeserializeOwned;

use crate::error::BundleError;

fn options() -> serde_saphyr::Options {
    serde_saphyr::options! { legacy_octal_numbers: true }
}

/// Parses one YAML document into `T`; an empty document yields `T::default()`.
pub fn from_str<T: DeserializeOwned + Default>(file: &Path, text: &str) -> Result<T, BundleError> {
    let mut track = serde_path_to_error::Track::new();
    let res = serde_saphyr::with_deserializer_from_str_with_options(text, options(), |de| {
        let de = serde_path_to_error::Deserializer::new(de, &mut track);
        <Option<T> as serde::Deserialize>::deserialize(de)
    });
    match res {
        Ok(v) => Ok(v.unwrap_or_default()),
        Err(e) => {
            let (line, column) = e
                .location()
                .map(|l| (l.line(), l.column()))
                .unwrap_or((0, 0));
            let key = track.path().to_string();
            let key = if key == "?" || key.is_empty() {
                "(document)".to_string()
            } else {
                key
            };
            Err(BundleError::Yaml {
                file: file.to_path_buf(),
                line,
                column,
                key,
                message: first_line(&e.to_string()),
            })
        }
    }
}

/// Parses every document of a multi-document YAML stream (empty documents dropped).
pub fn from_multiple<T: DeserializeOwned>(file: &Path, text: &str) -> Result<Vec<T>, BundleError> {
    serde_saphyr::from_multiple_with_options(text, options()).map_err(|e| {
        let (line, column) = e
            .location()
            .map(|l| (l.line(), l.column()))
            .unwrap_or((0, 0));
        BundleError::Yaml {
            file: file.to_path_buf(),
            line,
            column,
            key: "(document)".into(),
            message: first_line(&e.to_string()),
        }
    })
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleet_api::fleetyaml::FleetYaml;

    #[test]
    fn error_names_file_line_and_key() {
        let text = "defaultNamespace: x\nhelm:\n  timeoutSeconds: notanumber\n";
        let err = from_str::<FleetYaml>(Path::new("dir/fleet.yaml"), text).unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("dir/fleet.yaml:3:"), "{msg}");
        assert!(msg.contains("helm.timeoutSeconds"), "{msg}");
    }

    #[test]
    fn empty_and_comment_only_documents_are_default() {
        let y = from_str::<FleetYaml>(Path::new("f"), "").unwrap();
        assert_eq!(y, FleetYaml::default());
        let y = from_str::<FleetYaml>(Path::new("f"), "# just a comment\n").unwrap();
        assert_eq!(y, FleetYaml::default());
    }

    #[test]
    fn legacy_octal() {
        let v: serde_json::Value = from_str(Path::new("f"), "mode: 0644\n").unwrap();
        assert_eq!(v["mode"], 420);
    }

    proptest::proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,200}") {
            let _ = from_str::<FleetYaml>(Path::new("f"), &s);
        }
    }
}
