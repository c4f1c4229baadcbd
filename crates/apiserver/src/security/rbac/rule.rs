//! `PolicyRule`: parsing, validation, request matching and the "covers" comparison used by
//! escalation prevention. The matching functions follow kube-apiserver's `rbac/v1` helpers so a
//! Role written for a real cluster grants exactly the same requests here.

use serde::{Deserialize, Serialize};

use super::Attributes;

/// The wildcard that matches any verb, API group, resource or non-resource URL.
pub const ALL: &str = "*";

message_error! {
    /// A PolicyRule kube-apiserver would refuse (e.g. `nonResourceURLs` in a namespaced Role), with its message.
    RuleError
}

/// One rule of a Role or ClusterRole, with the upstream JSON field names.
///
/// Why a dedicated type rather than `k8s-openapi`'s: the authorizer keeps thousands of these hot
/// in memory and needs the matching logic on them, and the crate must not depend on the API
/// version features the binary picks.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyRule {
    /// Verbs (`get`, `list`, ..., `*`).
    #[serde(default)]
    pub verbs: Vec<String>,
    /// API groups (`""` is the core group, `*` any).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub api_groups: Vec<String>,
    /// Resources, optionally with a subresource (`pods/log`, `*/status`, `*`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<String>,
    /// Object names the rule is restricted to; empty means all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_names: Vec<String>,
    /// Non-resource URL paths (`/healthz`, `/api/*`); only in ClusterRoles.
    #[serde(
        default,
        rename = "nonResourceURLs",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub non_resource_urls: Vec<String>,
}

fn has(set: &[String], item: &str) -> bool {
    set.iter().any(|s| s == item)
}

impl PolicyRule {
    /// A resource rule; a convenience for tests, bootstrap policy and callers building rules.
    pub fn resource(verbs: &[&str], groups: &[&str], resources: &[&str]) -> PolicyRule {
        PolicyRule {
            verbs: verbs.iter().map(|s| s.to_string()).collect(),
            api_groups: groups.iter().map(|s| s.to_string()).collect(),
            resources: resources.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    /// A non-resource URL rule.
    pub fn non_resource(verbs: &[&str], urls: &[&str]) -> PolicyRule {
        PolicyRule {
            verbs: verbs.iter().map(|s| s.to_string()).collect(),
            non_resource_urls: urls.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    /// The same rule restricted to the given object names.
    pub fn with_names(mut self, names: &[&str]) -> PolicyRule {
        self.resource_names = names.iter().map(|s| s.to_string()).collect();
        self
    }

    /// kube-apiserver's `ValidatePolicyRule`: the reason a rule is invalid, if it is. `namespaced`
    /// is true for Role rules, which may not name non-resource URLs.
    pub fn validate(&self, namespaced: bool) -> Result<(), RuleError> {
        if self.verbs.is_empty() {
            return Err("verbs: Required value: verbs must contain at least one value".into());
        }
        if !self.non_resource_urls.is_empty() {
            if namespaced {
                return Err("nonResourceURLs: Invalid value: namespaced rules cannot apply to non-resource URLs".into());
            }
            if !self.api_groups.is_empty()
                || !self.resources.is_empty()
                || !self.resource_names.is_empty()
            {
                return Err("nonResourceURLs: Invalid value: rules cannot apply to both regular resources and non-resource URLs".into());
            }
            return Ok(());
        }
        if self.api_groups.is_empty() {
            return Err(
                "apiGroups: Required value: resource rules must supply at least one api group"
                    .into(),
            );
        }
        if self.resources.is_empty() {
            return Err(
                "resources: Required value: resource rules must supply at least one resource"
                    .into(),
            );
        }
        Ok(())
    }

    /// Whether this rule allows the request (upstream `RuleAllows`).
    pub fn allows(&self, a: &Attributes) -> bool {
        if !self.verb_matches(&a.verb) {
            return false;
        }
        if a.is_resource_request() {
            self.group_matches(&a.api_group)
                && self.resource_matches(&a.resource, &a.subresource)
                && self.name_matches(&a.name)
        } else {
            self.url_matches(&a.path)
        }
    }

    fn verb_matches(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == ALL || v == verb)
    }

    fn group_matches(&self, group: &str) -> bool {
        self.api_groups.iter().any(|g| g == ALL || g == group)
    }

    /// `resource` plus `subresource` against the rule's resources: `*`, the exact
    /// `resource/subresource`, or `*/subresource`.
    fn resource_matches(&self, resource: &str, subresource: &str) -> bool {
        self.resources.iter().any(|r| {
            if r == ALL {
                return true;
            }
            if subresource.is_empty() {
                return r == resource;
            }
            if let Some((res, sub)) = r.split_once('/') {
                (res == resource || res == ALL) && sub == subresource
            } else {
                false
            }
        })
    }

    fn name_matches(&self, name: &str) -> bool {
        self.resource_names.is_empty() || has(&self.resource_names, name)
    }

    fn url_matches(&self, path: &str) -> bool {
        self.non_resource_urls.iter().any(|u| {
            u == ALL || u == path || (u.ends_with('*') && path.starts_with(u.trim_end_matches('*')))
        })
    }

    /// Splits a rule into atomic rules of one verb and one group/resource/name (or one URL), as
    /// upstream `BreakdownRule` does, so coverage can be checked piece by piece.
    pub fn breakdown(&self) -> Vec<PolicyRule> {
        let mut out = Vec::new();
        for group in &self.api_groups {
            for resource in &self.resources {
                for verb in &self.verbs {
                    if self.resource_names.is_empty() {
                        out.push(PolicyRule {
                            verbs: vec![verb.clone()],
                            api_groups: vec![group.clone()],
                            resources: vec![resource.clone()],
                            ..Default::default()
                        });
                    } else {
                        for name in &self.resource_names {
                            out.push(PolicyRule {
                                verbs: vec![verb.clone()],
                                api_groups: vec![group.clone()],
                                resources: vec![resource.clone()],
                                resource_names: vec![name.clone()],
                                ..Default::default()
                            });
                        }
                    }
                }
            }
        }
        for url in &self.non_resource_urls {
            for verb in &self.verbs {
                out.push(PolicyRule {
                    verbs: vec![verb.clone()],
                    non_resource_urls: vec![url.clone()],
                    ..Default::default()
                });
            }
        }
        out
    }

    /// Whether this (owner) rule covers every request the `sub` rule could allow (upstream
    /// `ruleCovers`).
    pub fn covers(&self, sub: &PolicyRule) -> bool {
        let verbs = has(&self.verbs, ALL) || sub.verbs.iter().all(|v| has(&self.verbs, v));
        let groups =
            has(&self.api_groups, ALL) || sub.api_groups.iter().all(|g| has(&self.api_groups, g));
        let resources = has(&self.resources, ALL)
            || sub.resources.iter().all(|r| {
                has(&self.resources, r)
                    || r.split_once('/')
                        .is_some_and(|(_, s)| has(&self.resources, &format!("*/{s}")))
            });
        let urls = sub.non_resource_urls.iter().all(|u| {
            self.non_resource_urls
                .iter()
                .any(|o| o == u || (o.ends_with('*') && u.starts_with(o.trim_end_matches('*'))))
        });
        let names = if sub.resource_names.is_empty() {
            self.resource_names.is_empty()
        } else {
            self.resource_names.is_empty()
                || sub
                    .resource_names
                    .iter()
                    .all(|n| has(&self.resource_names, n))
        };
        verbs && groups && resources && urls && names
    }

    /// Upstream's compact rendering (`{APIGroups:[""], Resources:["pods"], Verbs:["get"]}`), used
    /// in escalation errors so users see exactly which permission they lack.
    pub fn compact(&self) -> String {
        fn list(v: &[String]) -> String {
            let items: Vec<String> = v.iter().map(|s| format!("{s:?}")).collect();
            format!("[{}]", items.join(" "))
        }
        let mut parts = Vec::new();
        if !self.api_groups.is_empty() {
            parts.push(format!("APIGroups:{}", list(&self.api_groups)));
        }
        if !self.resources.is_empty() {
            parts.push(format!("Resources:{}", list(&self.resources)));
        }
        if !self.resource_names.is_empty() {
            parts.push(format!("ResourceNames:{}", list(&self.resource_names)));
        }
        if !self.non_resource_urls.is_empty() {
            parts.push(format!("NonResourceURLs:{}", list(&self.non_resource_urls)));
        }
        parts.push(format!("Verbs:{}", list(&self.verbs)));
        format!("{{{}}}", parts.join(", "))
    }
}

/// Upstream `Covers`: the atomic pieces of `servant` that no rule of `owner` covers (empty when
/// the owner holds everything the servant grants).
pub fn uncovered(owner: &[PolicyRule], servant: &[PolicyRule]) -> Vec<PolicyRule> {
    servant
        .iter()
        .flat_map(PolicyRule::breakdown)
        .filter(|sub| !owner.iter().any(|o| o.covers(sub)))
        .collect()
}
