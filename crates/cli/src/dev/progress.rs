//! What `fleet dev` shows while it runs: clusters registered, bundles, BundleDeployments by state
//! and the GitRepo's commit, read from the manager's API. A progress bar on a terminal, plain lines
//! (printed only when something changed) otherwise.

use std::collections::BTreeMap;
use std::io::IsTerminal;

use fleet_api::state::BundleState;
use fleet_api::{Bundle, BundleDeployment, Cluster, GitRepo};
use indicatif::{ProgressBar, ProgressStyle};
use kube::Api;
use kube::api::ListParams;

use super::{GITREPO, WORKSPACE};

/// One reading of the manager's state.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    /// Clusters in the workspace.
    pub clusters: usize,
    /// Clusters whose agent has checked in.
    pub clusters_seen: usize,
    /// Bundles of the GitRepo.
    pub bundles: usize,
    /// Bundles whose every target is Ready.
    pub bundles_ready: usize,
    /// BundleDeployments of the GitRepo, all clusters.
    pub bundle_deployments: usize,
    /// BundleDeployments by state.
    pub states: BTreeMap<&'static str, usize>,
    /// The commit the GitRepo deployed (empty before the first poll).
    pub commit: String,
    /// The GitRepo's Ready condition message when it is not Ready.
    pub gitrepo_message: String,
}

impl Snapshot {
    /// Lists clusters, the GitRepo, its Bundles and BundleDeployments.
    pub async fn take(client: &kube::Client) -> Result<Snapshot, kube::Error> {
        let repo_label = format!("fleet.cattle.io/repo-name={GITREPO}");
        let clusters: Vec<Cluster> = Api::namespaced(client.clone(), WORKSPACE)
            .list(&ListParams::default())
            .await?
            .items;
        let gitrepo: Option<GitRepo> = Api::namespaced(client.clone(), WORKSPACE)
            .get_opt(GITREPO)
            .await?;
        let bundles: Vec<Bundle> = Api::namespaced(client.clone(), WORKSPACE)
            .list(&ListParams::default().labels(&repo_label))
            .await?
            .items;
        let bds: Vec<BundleDeployment> = Api::all(client.clone())
            .list(&ListParams::default().labels(&format!(
                "{repo_label},fleet.cattle.io/bundle-namespace={WORKSPACE}"
            )))
            .await?
            .items;
        let mut s = Snapshot {
            clusters: clusters.len(),
            clusters_seen: clusters
                .iter()
                .filter(|c| {
                    c.status
                        .as_ref()
                        .and_then(|s| s.agent.last_seen.as_ref())
                        .is_some()
                })
                .count(),
            bundles: bundles.len(),
            bundle_deployments: bds.len(),
            ..Default::default()
        };
        s.bundles_ready = bundles
            .iter()
            .filter(|b| {
                b.status.as_ref().is_some_and(|st| {
                    st.summary.ready == st.summary.desired_ready
                        && st.observed_generation == b.metadata.generation.unwrap_or_default()
                })
            })
            .count();
        for bd in &bds {
            let st = fleet_targeting::status::deployment_state(bd);
            *s.states.entry(st.as_str()).or_default() += 1;
        }
        if let Some(g) = gitrepo.as_ref().and_then(|g| g.status.as_ref()) {
            s.commit = g.commit.clone();
            s.gitrepo_message = g
                .base
                .conditions
                .iter()
                .find(|c| c.type_ == "Ready" && c.status == "False")
                .map(|c| c.message.clone())
                .unwrap_or_default();
        }
        Ok(s)
    }

    /// Every cluster registered and seen, the commit deployed, and every BundleDeployment of every
    /// bundle Ready.
    pub fn all_ready(&self, clusters: usize) -> bool {
        self.clusters >= clusters
            && self.clusters_seen >= clusters
            && !self.commit.is_empty()
            && self.bundles > 0
            && self.bundles_ready == self.bundles
            && self.bundle_deployments > 0
            && self.ready() == self.bundle_deployments
    }

    /// BundleDeployments in state Ready.
    pub fn ready(&self) -> usize {
        self.states
            .get(BundleState::Ready.as_str())
            .copied()
            .unwrap_or(0)
    }

    /// The first 12 characters of the commit.
    pub fn commit_short(&self) -> &str {
        &self.commit[..self.commit.len().min(12)]
    }

    /// A one-line account of what is missing, for the error when `--exit-when-ready` gives up.
    pub fn why_not_ready(&self, clusters: usize) -> String {
        let mut why = Vec::new();
        if self.clusters < clusters || self.clusters_seen < clusters {
            why.push(format!(
                "{}/{} clusters registered, {} checked in",
                self.clusters, clusters, self.clusters_seen
            ));
        }
        if self.commit.is_empty() {
            why.push("the GitRepo has no commit yet".to_string());
        }
        if !self.gitrepo_message.is_empty() {
            why.push(format!("GitRepo: {}", self.gitrepo_message));
        }
        why.push(self.line());
        why.join("; ")
    }

    /// The status line.
    pub fn line(&self) -> String {
        let states: Vec<String> = self
            .states
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        format!(
            "clusters {}/{} seen · bundles {}/{} ready · bundledeployments {} ({}) · commit {}",
            self.clusters_seen,
            self.clusters,
            self.bundles_ready,
            self.bundles,
            self.bundle_deployments,
            if states.is_empty() {
                "none yet".to_string()
            } else {
                states.join(", ")
            },
            if self.commit.is_empty() {
                "-"
            } else {
                self.commit_short()
            }
        )
    }
}

/// The progress display.
pub struct Progress {
    bar: Option<ProgressBar>,
    last: Option<Snapshot>,
}

impl Progress {
    /// A bar on a terminal, plain lines otherwise.
    pub fn new(_clusters: usize) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let b = ProgressBar::new(0);
            b.set_style(
                ProgressStyle::with_template("{spinner} [{bar:30}] {pos}/{len} ready  {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            );
            b.enable_steady_tick(std::time::Duration::from_millis(120));
            b
        });
        Progress { bar, last: None }
    }

    /// Shows a snapshot (plain mode: only when it differs from the last one).
    pub fn show(&mut self, s: &Snapshot) {
        if self.last.as_ref() == Some(s) {
            return;
        }
        match &self.bar {
            Some(b) => {
                b.set_length(s.bundle_deployments as u64);
                b.set_position(s.ready() as u64);
                b.set_message(s.line());
            }
            None => eprintln!("fleet dev: {}", s.line()),
        }
        self.last = Some(s.clone());
    }

    /// A transient note (an error reading status).
    pub fn note(&self, msg: &str) {
        match &self.bar {
            Some(b) => b.set_message(msg.to_string()),
            None => tracing::debug!("{msg}"),
        }
    }

    /// Clears the bar before other output.
    pub fn finish(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
}
