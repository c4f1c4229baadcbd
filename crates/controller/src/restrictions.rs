//! GitRepoRestriction (upstream `gitops/reconciler/restrictions.go`): what GitRepos of a
//! namespace may use. Every restriction of the namespace counts (ordered by name): the first
//! non-empty defaults win and the allow-lists add up. A GitRepo that breaks them is not polled
//! and gets `Accepted=False` with upstream's message; one without a service account or client
//! secret gets the defaults written into its spec.

use fleet_api::{GitRepo, GitRepoRestriction};

/// What a GitRepo resolves to once the restrictions' defaults are applied.
#[derive(Debug, PartialEq, Eq)]
pub struct Resolved {
    /// `spec.serviceAccount`, or the restrictions' default.
    pub service_account: String,
    /// `spec.clientSecretName`, or the restrictions' default.
    pub client_secret_name: String,
}

/// Go's `%v` of a string slice: `[a b]`.
fn go_list(v: &[String]) -> String {
    format!("[{}]", v.join(" "))
}

fn allowed(value: &str, set: &[String]) -> Result<(), String> {
    if value.is_empty() || set.is_empty() || set.iter().any(|s| s == value) {
        return Ok(());
    }
    Err(format!("{value} not in allowed set {}", go_list(set)))
}

/// A pattern matches verbatim, or as an unanchored regular expression (as upstream, for
/// compatibility with its older versions).
fn allowed_by_regex(value: &str, patterns: &[String]) -> Result<(), String> {
    if value.is_empty() || patterns.is_empty() {
        return Ok(());
    }
    for p in patterns {
        if p == value {
            return Ok(());
        }
        let re = regex::Regex::new(p)
            .map_err(|e| format!("GitRepoRestriction failed to compile regex '{p}': {e}"))?;
        if re.is_match(value) {
            return Ok(());
        }
    }
    Err(format!("{value} not in allowed set {}", go_list(patterns)))
}

/// Checks GitRepo `g` against the `restrictions` of its namespace; `Err` is the message of its
/// `Accepted` condition.
pub fn authorize(g: &GitRepo, restrictions: &[&GitRepoRestriction]) -> Result<Resolved, String> {
    let mut resolved = Resolved {
        service_account: g.spec.service_account.clone(),
        client_secret_name: g.spec.client_secret_name.clone(),
    };
    if restrictions.is_empty() {
        return Ok(resolved);
    }
    let mut rs: Vec<&GitRepoRestriction> = restrictions.to_vec();
    rs.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let first = |f: fn(&GitRepoRestriction) -> &String| {
        rs.iter()
            .map(|r| f(r))
            .find(|v| !v.is_empty())
            .cloned()
            .unwrap_or_default()
    };
    let all = |f: fn(&GitRepoRestriction) -> &Vec<String>| -> Vec<String> {
        rs.iter().flat_map(|r| f(r).iter().cloned()).collect()
    };
    let default_sa = first(|r| &r.spec.default_service_account);
    let default_secret = first(|r| &r.spec.default_client_secret_name);
    let sas = all(|r| &r.spec.allowed_service_accounts);
    let secrets = all(|r| &r.spec.allowed_client_secret_names);
    let repos = all(|r| &r.spec.allowed_repo_patterns);
    let target_nss = all(|r| &r.spec.allowed_target_namespaces);
    let selector = rs
        .iter()
        .any(|r| r.spec.allowed_target_namespace_selector.is_some());
    let tns = &g.spec.target_namespace;
    if !target_nss.is_empty() && tns.is_empty() {
        return Err(
            "empty targetNamespace denied, because allowedTargetNamespaces restriction is present"
                .into(),
        );
    }
    if selector && tns.is_empty() {
        return Err("empty targetNamespace denied, because allowedTargetNamespaceSelector restriction is present".into());
    }
    if resolved.service_account.is_empty() {
        resolved.service_account = default_sa;
    }
    if resolved.client_secret_name.is_empty() {
        resolved.client_secret_name = default_secret;
    }
    allowed(tns, &target_nss).map_err(|e| format!("disallowed targetNamespace {tns}: {e}"))?;
    let sa = &resolved.service_account;
    allowed(sa, &sas).map_err(|e| format!("disallowed serviceAccount {sa}: {e}"))?;
    let repo = &g.spec.repo;
    allowed_by_regex(repo, &repos).map_err(|e| format!("disallowed repo {repo}: {e}"))?;
    let secret = &resolved.client_secret_name;
    allowed(secret, &secrets).map_err(|e| format!("disallowed clientSecretName {secret}: {e}"))?;
    Ok(resolved)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn restriction(name: &str, yaml: &str) -> GitRepoRestriction {
        let mut r: GitRepoRestriction = serde_saphyr::from_str(&format!(
            "apiVersion: fleet.cattle.io/v1alpha1\nkind: GitRepoRestriction\nmetadata:\n  name: {name}\n  namespace: ns\n{yaml}"
        ))
        .expect("restriction yaml");
        r.metadata.name = Some(name.into());
        r
    }

    fn gitrepo(spec: &str) -> GitRepo {
        serde_saphyr::from_str(&format!(
            "apiVersion: fleet.cattle.io/v1alpha1\nkind: GitRepo\nmetadata:\n  name: g\n  namespace: ns\nspec:\n{spec}"
        ))
        .expect("gitrepo yaml")
    }

    #[test]
    fn no_restriction_allows_anything() {
        let g = gitrepo("  repo: https://example.com/a\n  serviceAccount: sa\n");
        let r = authorize(&g, &[]).expect("allowed");
        assert_eq!(r.service_account, "sa");
    }

    #[test]
    fn defaults_fill_in_and_lists_add_up() {
        let a = restriction(
            "a",
            "allowedServiceAccounts: [one]\nallowedRepoPatterns: ['^https://good\\.example/']\n",
        );
        let b = restriction(
            "b",
            "defaultServiceAccount: two\nallowedServiceAccounts: [two]\ndefaultClientSecretName: creds\n",
        );
        let g = gitrepo("  repo: https://good.example/x\n");
        let r = authorize(&g, &[&b, &a]).expect("allowed");
        assert_eq!(
            r,
            Resolved {
                service_account: "two".into(),
                client_secret_name: "creds".into()
            }
        );
        let g = gitrepo("  repo: https://good.example/x\n  serviceAccount: three\n");
        assert_eq!(
            authorize(&g, &[&a, &b]).expect_err("denied"),
            "disallowed serviceAccount three: three not in allowed set [one two]"
        );
        let g = gitrepo("  repo: https://evil.example/x\n  serviceAccount: one\n");
        assert_eq!(
            authorize(&g, &[&a, &b]).expect_err("denied"),
            "disallowed repo https://evil.example/x: https://evil.example/x not in allowed set [^https://good\\.example/]"
        );
    }

    #[test]
    fn target_namespaces_and_bad_patterns() {
        let r = restriction("r", "allowedTargetNamespaces: [apps]\n");
        let g = gitrepo("  repo: r\n");
        assert_eq!(
            authorize(&g, &[&r]).expect_err("denied"),
            "empty targetNamespace denied, because allowedTargetNamespaces restriction is present"
        );
        let g = gitrepo("  repo: r\n  targetNamespace: other\n");
        assert_eq!(
            authorize(&g, &[&r]).expect_err("denied"),
            "disallowed targetNamespace other: other not in allowed set [apps]"
        );
        let g = gitrepo("  repo: r\n  targetNamespace: apps\n");
        assert!(authorize(&g, &[&r]).is_ok());
        let bad = restriction("bad", "allowedRepoPatterns: ['(']\n");
        let err = authorize(&g, &[&bad]).expect_err("bad regex");
        assert!(
            err.starts_with("disallowed repo r: GitRepoRestriction failed to compile regex '('"),
            "{err}"
        );
    }
}
