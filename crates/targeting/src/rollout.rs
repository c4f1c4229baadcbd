//! Rollout: partitions (auto or manual), `maxUnavailable`, `maxUnavailablePartitions`, `maxNew`,
//! and staging → promotion of deployment IDs, as upstream's `UpdatePartitions`.

use fleet_api::RolloutStrategy;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::Error;
use crate::matcher::{ClusterMatcher, ClusterView};

/// Default `maxNew`: BundleDeployments created per reconcile.
pub const DEFAULT_MAX_NEW: i64 = 50;
/// Default `autoPartitionThreshold`.
pub const DEFAULT_AUTO_PARTITION_THRESHOLD: i64 = 200;

/// Upstream `limit(count, vals...)`: first non-nil value (default `100%`); ints clamp to
/// [0, count]; percentages floor(count·p/100) with results ≤ 0 → 1 and > count → count.
pub fn limit(count: i64, vals: &[Option<&IntOrString>]) -> Result<i64, Error> {
    if count <= 0 {
        return Ok(1);
    }
    let hundred = IntOrString::String("100%".into());
    let v = vals.iter().flatten().next().copied().unwrap_or(&hundred);
    match v {
        IntOrString::Int(i) => Ok((*i as i64).clamp(0, count)),
        IntOrString::String(s) => {
            let p = s
                .strip_suffix('%')
                .and_then(|x| x.trim().parse::<i64>().ok())
                .ok_or_else(|| Error::MaxUnavailable(s.clone()))?;
            if p <= 0 {
                return Ok(1);
            }
            let r = (count as f64 * p as f64 / 100.0).floor() as i64;
            Ok(r.clamp(1, count))
        }
    }
}

/// A partition's name, member targets (indexes into the sorted target list) and limit.
#[derive(Clone, Debug, PartialEq)]
pub struct PartitionPlan {
    /// `All`, `Partition <from> - <to>`, or the manual partition's name.
    pub name: String,
    /// Members, as indexes into the target list.
    pub targets: Vec<usize>,
    /// How many members may be unavailable.
    pub max_unavailable: i64,
}

/// Splits targets (sorted by cluster name) into partitions.
pub fn partitions(
    rollout: &RolloutStrategy,
    targets: &[ClusterView<'_>],
) -> Result<Vec<PartitionPlan>, Error> {
    let n = targets.len() as i64;
    if !rollout.partitions.is_empty() {
        let mut out = Vec::new();
        for p in &rollout.partitions {
            let m = ClusterMatcher::new(
                &p.cluster_name,
                &p.cluster_group,
                p.cluster_group_selector.as_ref(),
                p.cluster_selector.as_ref(),
            )?;
            let members: Vec<usize> = targets
                .iter()
                .enumerate()
                .filter(|(_, c)| m.matches(c))
                .map(|(i, _)| i)
                .collect();
            let max = limit(
                members.len() as i64,
                &[p.max_unavailable.as_ref(), rollout.max_unavailable.as_ref()],
            )?;
            out.push(PartitionPlan {
                name: p.name.clone(),
                targets: members,
                max_unavailable: max,
            });
        }
        return Ok(out);
    }
    let all = || -> Result<Vec<PartitionPlan>, Error> {
        Ok(vec![PartitionPlan {
            name: "All".into(),
            targets: (0..targets.len()).collect(),
            max_unavailable: limit(n, &[rollout.max_unavailable.as_ref()])?,
        }])
    };
    if matches!(rollout.auto_partition_size, Some(IntOrString::Int(i)) if i <= 0) {
        return all();
    }
    let threshold = rollout
        .auto_partition_threshold
        .unwrap_or(DEFAULT_AUTO_PARTITION_THRESHOLD);
    if threshold <= 0 || n < threshold {
        return all();
    }
    let default_size = IntOrString::String("25%".into());
    let size = limit(
        n,
        &[rollout.auto_partition_size.as_ref(), Some(&default_size)],
    )?
    .max(1) as usize;
    let mut out = Vec::new();
    let mut off = 0usize;
    while off < targets.len() {
        let end = (off + size).min(targets.len());
        let members: Vec<usize> = (off..end).collect();
        let max = limit(members.len() as i64, &[rollout.max_unavailable.as_ref()])?;
        out.push(PartitionPlan {
            name: format!("Partition {} - {}", off, end),
            targets: members,
            max_unavailable: max,
        });
        off = end;
    }
    Ok(out)
}

/// `maxUnavailablePartitions` (default 0).
pub fn max_unavailable_partitions(rollout: &RolloutStrategy, count: usize) -> Result<i64, Error> {
    let zero = IntOrString::Int(0);
    limit(
        count as i64,
        &[rollout.max_unavailable_partitions.as_ref(), Some(&zero)],
    )
}

/// What rollout needs to know about one target's BundleDeployment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RolloutTarget {
    /// Deployment ID targeting computed now.
    pub desired_id: String,
    /// Whether the bundle or cluster is paused.
    pub paused: bool,
    /// The BD, if it exists: (deploymentID, stagedDeploymentID, appliedDeploymentID, ready).
    pub deployment: Option<DeploymentIds>,
}

/// IDs and readiness of an existing BundleDeployment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeploymentIds {
    /// `spec.deploymentID`: what the agent is told to apply.
    pub deployment_id: String,
    /// `spec.stagedDeploymentID`: what rollout wants next.
    pub staged_id: String,
    /// `status.appliedDeploymentID`.
    pub applied_id: String,
    /// `status.ready`.
    pub ready: bool,
}

impl DeploymentIds {
    /// Unavailable ⇔ not applied yet or not ready.
    pub fn unavailable(&self) -> bool {
        self.applied_id != self.deployment_id || !self.ready
    }
}

/// Result of one rollout pass.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RolloutStatus {
    /// BDs created in this pass.
    pub newly_created: i64,
    /// Unavailable targets (bundle-wide).
    pub unavailable: i64,
    /// Limit of unavailable targets (bundle-wide).
    pub max_unavailable: i64,
    /// Partitions over their limit.
    pub unavailable_partitions: i64,
    /// Limit of such partitions.
    pub max_unavailable_partitions: i64,
    /// Per partition: (name, count, maxUnavailable, unavailable).
    pub partitions: Vec<(String, i64, i64, i64)>,
}

/// Upstream `UpdatePartitions`: creates missing BDs (up to `maxNew`), stages the desired IDs and
/// promotes staged → current within the unavailability budgets, partition by partition; stops
/// once more partitions than allowed are unavailable. Mutates `targets`.
pub fn update_partitions(
    rollout: &RolloutStrategy,
    views: &[ClusterView<'_>],
    targets: &mut [RolloutTarget],
) -> Result<RolloutStatus, Error> {
    let unavailable_now = |t: &RolloutTarget| {
        t.deployment
            .as_ref()
            .is_none_or(|d| d.unavailable() || d.deployment_id != t.desired_id)
    };
    let mut st = RolloutStatus {
        max_unavailable: limit(targets.len() as i64, &[rollout.max_unavailable.as_ref()])?,
        unavailable: targets
            .iter()
            .filter(|t| t.deployment.as_ref().is_some_and(|d| d.unavailable()))
            .count() as i64,
        ..Default::default()
    };
    let max_new = rollout.max_new.unwrap_or(DEFAULT_MAX_NEW);
    let plans = partitions(rollout, views)?;
    st.max_unavailable_partitions = max_unavailable_partitions(rollout, plans.len())?;
    let mut done = Vec::new();
    for p in &plans {
        let mut p_unavail = p
            .targets
            .iter()
            .filter(|i| {
                targets[**i]
                    .deployment
                    .as_ref()
                    .is_some_and(|d| d.unavailable())
            })
            .count() as i64;
        for &i in &p.targets {
            let t = &mut targets[i];
            if t.deployment.is_none() && st.newly_created < max_new {
                st.newly_created += 1;
                t.deployment = Some(DeploymentIds::default());
            }
            if let Some(d) = t.deployment.as_mut() {
                d.staged_id = t.desired_id.clone();
            }
        }
        for &i in &p.targets {
            let t = &mut targets[i];
            let paused = t.paused;
            let Some(d) = t.deployment.as_mut() else {
                continue;
            };
            if !paused
                && !d.staged_id.is_empty()
                && d.deployment_id != d.staged_id
                && (st.unavailable < st.max_unavailable || d.unavailable())
                && (p_unavail < p.max_unavailable || d.unavailable())
            {
                if !d.unavailable() {
                    st.unavailable += 1;
                    p_unavail += 1;
                }
                d.deployment_id = d.staged_id.clone();
            }
        }
        let unavailable = p
            .targets
            .iter()
            .filter(|i| unavailable_now(&targets[**i]))
            .count() as i64;
        done.push((
            p.name.clone(),
            p.targets.len() as i64,
            p.max_unavailable,
            unavailable,
        ));
        if unavailable > p.max_unavailable {
            st.unavailable_partitions += 1;
        }
        if st.unavailable_partitions > st.max_unavailable_partitions {
            break;
        }
    }
    st.partitions = done;
    Ok(st)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selector::Labels;

    fn i(v: i32) -> IntOrString {
        IntOrString::Int(v)
    }
    fn s(v: &str) -> IntOrString {
        IntOrString::String(v.into())
    }

    fn lim(count: i64, vals: &[Option<&IntOrString>]) -> Result<i64, String> {
        limit(count, vals).map_err(|e| e.to_string())
    }

    #[test]
    fn limit_table() {
        assert_eq!(lim(10, &[]), Ok(10));
        assert_eq!(lim(0, &[Some(&i(5))]), Ok(1));
        assert_eq!(lim(10, &[Some(&i(15))]), Ok(10));
        assert_eq!(lim(10, &[Some(&i(-1))]), Ok(0));
        assert_eq!(lim(10, &[None, Some(&i(3))]), Ok(3));
        assert_eq!(lim(10, &[Some(&s("25%"))]), Ok(2));
        assert_eq!(lim(3, &[Some(&s("10%"))]), Ok(1));
        assert_eq!(lim(10, &[Some(&s("0%"))]), Ok(1));
        assert_eq!(lim(10, &[Some(&s("150%"))]), Ok(10));
        assert_eq!(
            lim(10, &[Some(&s("ten"))]),
            Err("invalid maxUnavailable, must be int or percentage: ten".into())
        );
    }

    fn views(n: usize, labels: &[Labels]) -> Vec<ClusterView<'_>> {
        (0..n)
            .map(|k| ClusterView {
                name: "",
                labels: &labels[k],
                groups: vec![],
            })
            .collect()
    }

    #[test]
    fn auto_partitions() {
        let labels = vec![Labels::new(); 230];
        let r = RolloutStrategy::default();
        // Below the threshold: one partition.
        let p = partitions(&r, &views(199, &labels)).unwrap();
        assert_eq!(p.len(), 1);
        assert_eq!(
            (p[0].name.as_str(), p[0].targets.len(), p[0].max_unavailable),
            ("All", 199, 199)
        );
        // 200 targets → 4 partitions of 25% (50 each).
        let p = partitions(&r, &views(200, &labels)).unwrap();
        let names: Vec<_> = p.iter().map(|x| x.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "Partition 0 - 50",
                "Partition 50 - 100",
                "Partition 100 - 150",
                "Partition 150 - 200"
            ]
        );
        // 230 targets → chunks of 57 and a remainder.
        let p = partitions(&r, &views(230, &labels)).unwrap();
        let sizes: Vec<_> = p.iter().map(|x| x.targets.len()).collect();
        assert_eq!(sizes, [57, 57, 57, 57, 2]);
        assert_eq!(p[4].name, "Partition 228 - 230");
        // autoPartitionSize <= 0 disables partitioning.
        let r = RolloutStrategy {
            auto_partition_size: Some(i(0)),
            ..Default::default()
        };
        assert_eq!(partitions(&r, &views(230, &labels)).unwrap().len(), 1);
    }

    #[test]
    fn manual_partitions_leave_unmatched_out() {
        let mk = |e: &str| -> Labels { [("env".to_string(), e.to_string())].into_iter().collect() };
        let labels = vec![mk("dev"), mk("prod"), mk("other"), mk("prod")];
        let r: RolloutStrategy = serde_json::from_value(serde_json::json!({
            "maxUnavailable": "50%",
            "partitions": [
                {"name": "dev", "clusterSelector": {"matchLabels": {"env": "dev"}}, "maxUnavailable": 0},
                {"name": "prod", "clusterSelector": {"matchLabels": {"env": "prod"}}}
            ]
        }))
        .unwrap();
        let p = partitions(&r, &views(4, &labels)).unwrap();
        assert_eq!(
            p[0],
            PartitionPlan {
                name: "dev".into(),
                targets: vec![0],
                max_unavailable: 0
            }
        );
        assert_eq!(
            p[1],
            PartitionPlan {
                name: "prod".into(),
                targets: vec![1, 3],
                max_unavailable: 1
            }
        );
    }

    #[test]
    fn max_new_and_promotion() {
        let labels = vec![Labels::new(); 60];
        let v = views(60, &labels);
        let mut ts: Vec<RolloutTarget> = (0..60)
            .map(|_| RolloutTarget {
                desired_id: "s-1:a".into(),
                ..Default::default()
            })
            .collect();
        let st = update_partitions(&RolloutStrategy::default(), &v, &mut ts).unwrap();
        assert_eq!(st.newly_created, 50);
        assert_eq!(ts.iter().filter(|t| t.deployment.is_some()).count(), 50);
        // New BDs are unavailable (never applied), so they are promoted immediately.
        assert!(ts[0].deployment.as_ref().unwrap().deployment_id == "s-1:a");
        // All ready; a new ID rolls out within maxUnavailable=1.
        for t in ts.iter_mut() {
            if let Some(d) = t.deployment.as_mut() {
                d.applied_id = d.deployment_id.clone();
                d.ready = true;
            }
            t.desired_id = "s-1:b".into();
        }
        let r = RolloutStrategy {
            max_unavailable: Some(i(1)),
            max_unavailable_partitions: Some(i(5)),
            max_new: Some(0),
            ..Default::default()
        };
        let st = update_partitions(&r, &v, &mut ts).unwrap();
        let promoted = ts
            .iter()
            .filter(|t| {
                t.deployment
                    .as_ref()
                    .is_some_and(|d| d.deployment_id == "s-1:b")
            })
            .count();
        assert_eq!(promoted, 1);
        assert_eq!(st.unavailable, 1);
        // Paused targets are staged but never promoted.
        let mut p = vec![RolloutTarget {
            desired_id: "x".into(),
            paused: true,
            deployment: Some(DeploymentIds {
                deployment_id: "y".into(),
                staged_id: "y".into(),
                applied_id: "y".into(),
                ready: true,
            }),
        }];
        update_partitions(&RolloutStrategy::default(), &views(1, &labels), &mut p).unwrap();
        let d = p[0].deployment.as_ref().unwrap();
        assert_eq!((d.staged_id.as_str(), d.deployment_id.as_str()), ("x", "y"));
    }
}
