//! Target matching: which bundle target (and customisation) applies to a cluster. AND of the
//! non-empty criteria (clusterName incl. display-name label, clusterGroup, clusterGroupSelector,
//! clusterSelector); no criterion never matches; restrictions gate plain targets.

use fleet_api::keys::CLUSTER_DISPLAY_NAME_LABEL;
use fleet_api::{Bundle, BundleTarget, GitTarget};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use crate::Error;
use crate::selector::{Labels, Selector};

/// A cluster as targeting sees it: name, labels and the groups it belongs to.
#[derive(Clone, Debug)]
pub struct ClusterView<'a> {
    /// Cluster name.
    pub name: &'a str,
    /// Cluster labels.
    pub labels: &'a Labels,
    /// (group name, group labels) of every ClusterGroup whose selector matches the cluster.
    pub groups: Vec<(&'a str, &'a Labels)>,
}

/// Compiled criteria of one target, restriction or partition.
#[derive(Clone, Debug, Default)]
pub struct ClusterMatcher {
    /// Required cluster name (or display name).
    pub cluster_name: Option<String>,
    /// Required group name.
    pub cluster_group: Option<String>,
    /// Selector on the group's labels.
    pub group_selector: Option<Selector>,
    /// Selector on the cluster's labels.
    pub cluster_selector: Option<Selector>,
}

impl ClusterMatcher {
    /// Compiles the four criteria.
    pub fn new(
        cluster_name: &str,
        cluster_group: &str,
        group_selector: Option<&LabelSelector>,
        cluster_selector: Option<&LabelSelector>,
    ) -> Result<ClusterMatcher, Error> {
        Ok(ClusterMatcher {
            cluster_name: (!cluster_name.is_empty()).then(|| cluster_name.to_string()),
            cluster_group: (!cluster_group.is_empty()).then(|| cluster_group.to_string()),
            group_selector: group_selector.map(Selector::compile).transpose()?,
            cluster_selector: cluster_selector.map(Selector::compile).transpose()?,
        })
    }

    /// From a GitRepo-style target / restriction.
    pub fn from_git(t: &GitTarget) -> Result<ClusterMatcher, Error> {
        Self::new(
            &t.cluster_name,
            &t.cluster_group,
            t.cluster_group_selector.as_ref(),
            t.cluster_selector.as_ref(),
        )
    }

    /// From a bundle target.
    pub fn from_target(t: &BundleTarget) -> Result<ClusterMatcher, Error> {
        Self::new(
            &t.cluster_name,
            &t.cluster_group,
            t.cluster_group_selector.as_ref(),
            t.cluster_selector.as_ref(),
        )
    }

    fn has_criteria(&self) -> bool {
        self.cluster_name.is_some()
            || self.cluster_group.is_some()
            || self.group_selector.is_some()
            || self.cluster_selector.is_some()
    }

    /// Upstream's `Match(clusterName, clusterGroup, groupLabels, clusterLabels)` for one group.
    pub fn match_one(&self, name: &str, labels: &Labels, group: Option<(&str, &Labels)>) -> bool {
        if !self.has_criteria() {
            return false;
        }
        if let Some(n) = &self.cluster_name
            && n != name
            && labels.get(CLUSTER_DISPLAY_NAME_LABEL) != Some(n)
        {
            return false;
        }
        if let Some(g) = &self.cluster_group
            && group.map(|(gn, _)| gn) != Some(g.as_str())
        {
            return false;
        }
        if let Some(s) = &self.group_selector {
            let empty = Labels::new();
            if !s.matches(group.map(|(_, l)| l).unwrap_or(&empty)) {
                return false;
            }
        }
        if let Some(s) = &self.cluster_selector
            && !s.matches(labels)
        {
            return false;
        }
        true
    }

    /// Matches if the criteria hold for the cluster with no group or with any one of its groups.
    pub fn matches(&self, c: &ClusterView<'_>) -> bool {
        if c.groups.is_empty() {
            return self.match_one(c.name, c.labels, None);
        }
        c.groups
            .iter()
            .any(|(g, l)| self.match_one(c.name, c.labels, Some((g, l))))
    }
}

/// All matchers of a bundle, compiled once.
#[derive(Clone, Debug)]
pub struct BundleMatch {
    /// Per target: matcher and whether it is a customisation.
    pub targets: Vec<(ClusterMatcher, bool)>,
    /// Target restrictions.
    pub restrictions: Vec<ClusterMatcher>,
}

impl BundleMatch {
    /// Compiles a bundle's targets. With restrictions present, the first
    /// `len(targets) - len(restrictions)` targets are customisations.
    pub fn new(bundle: &Bundle) -> Result<BundleMatch, Error> {
        let spec = &bundle.spec;
        let nr = spec.target_restrictions.len();
        let ncust = spec.targets.len().saturating_sub(nr);
        let mut targets = Vec::with_capacity(spec.targets.len());
        for (i, t) in spec.targets.iter().enumerate() {
            let m = ClusterMatcher::from_target(t).map_err(|e| Error::Target {
                name: t.name.clone(),
                source: Box::new(e),
            })?;
            targets.push((m, nr > 0 && i < ncust));
        }
        let restrictions = spec
            .target_restrictions
            .iter()
            .map(|r| {
                ClusterMatcher::from_git(r).map_err(|e| Error::Restriction {
                    name: r.name.clone(),
                    source: Box::new(e),
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(BundleMatch {
            targets,
            restrictions,
        })
    }

    fn restricted(&self, name: &str, labels: &Labels, group: Option<(&str, &Labels)>) -> bool {
        !self.restrictions.is_empty()
            && !self
                .restrictions
                .iter()
                .any(|r| r.match_one(name, labels, group))
    }

    /// Index of the deployment target: the first non-customisation target that matches (with the
    /// same group satisfying a restriction, if any).
    pub fn target(&self, c: &ClusterView<'_>) -> Option<usize> {
        let ok = |m: &ClusterMatcher, g: Option<(&str, &Labels)>| {
            !self.restricted(c.name, c.labels, g) && m.match_one(c.name, c.labels, g)
        };
        self.targets.iter().position(|(m, is_cust)| {
            !is_cust
                && if c.groups.is_empty() {
                    ok(m, None)
                } else {
                    c.groups.iter().any(|(g, l)| ok(m, Some((g, l))))
                }
        })
    }

    /// First matching customisation (FirstMatch).
    pub fn first_customization(&self, c: &ClusterView<'_>) -> Option<usize> {
        self.targets
            .iter()
            .position(|(m, is_cust)| *is_cust && m.matches(c))
    }

    /// Every matching customisation, in order (AllMatches).
    pub fn all_customizations(&self, c: &ClusterView<'_>) -> Vec<usize> {
        self.targets
            .iter()
            .enumerate()
            .filter(|(_, (m, is_cust))| *is_cust && m.matches(c))
            .map(|(i, _)| i)
            .collect()
    }
}
