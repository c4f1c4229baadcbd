//! YAML emission byte-compatible with what `kustomize build` prints.
//!
//! kustomize v4 turns every resource into JSON, re-reads that JSON with go-yaml v2 and
//! marshals it again (`sigs.k8s.io/yaml.JSONToYAML`), the same path as Helm's `toYaml`: the
//! emitter is [`gotmpl::goyaml`] with go-yaml v2's own resolver (its default options); the
//! string folding of the re-read is applied to built resources in [`super::build_with`].

use serde_json::Value;

pub use gotmpl::goyaml::{
    GoTimestamp, go_key_cmp, is_go_timestamp, number_text, parse_go_timestamp, to_yaml,
    v2_resolves_non_string,
};

/// Serialises documents joined by `---\n`, as `kustomize build` prints a resource list.
pub fn to_yaml_stream<'a>(values: impl IntoIterator<Item = &'a Value>) -> String {
    let mut out = String::new();
    for (i, v) in values.into_iter().enumerate() {
        if i > 0 {
            out.push_str("---\n");
        }
        out.push_str(&to_yaml(v));
    }
    out
}
