//! The `authorization.k8s.io/v1` review resources as the registry serves them: virtual
//! (create-only, never stored), answered by [`crate::http::reviews`].

use crate::storage::registry::ResourceInfo;

/// The API group of the reviews.
pub const GROUP: &str = "authorization.k8s.io";
pub(crate) const VERSION: &str = "v1";

const KINDS: [(&str, &str, bool); 4] = [
    ("SelfSubjectAccessReview", "selfsubjectaccessreviews", false),
    ("SubjectAccessReview", "subjectaccessreviews", false),
    (
        "LocalSubjectAccessReview",
        "localsubjectaccessreviews",
        true,
    ),
    ("SelfSubjectRulesReview", "selfsubjectrulesreviews", false),
];

/// The review resources, for the registry (served, discoverable, never stored).
pub fn resources() -> Vec<ResourceInfo> {
    KINDS
        .iter()
        .map(|(kind, plural, namespaced)| ResourceInfo {
            group: GROUP.into(),
            version: VERSION.into(),
            kind: (*kind).into(),
            list_kind: format!("{kind}List"),
            plural: (*plural).into(),
            singular: kind.to_ascii_lowercase(),
            namespaced: *namespaced,
            status: false,
            scale: None,
            short_names: Vec::new(),
            categories: Vec::new(),
            builtin: true,
            schema: None,
            printer_columns: Vec::new(),
        })
        .collect()
}

/// Whether `info` is one of the review resources (create-only, answered here).
pub fn is_review(info: &ResourceInfo) -> bool {
    info.builtin && info.group == GROUP && KINDS.iter().any(|(kind, _, _)| info.kind == *kind)
}
