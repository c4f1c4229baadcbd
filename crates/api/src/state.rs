//! Bundle deployment states and their rank: the worst-ranked state is what summaries display.

use std::fmt;

/// State of one bundle deployment, as shown in summaries and `display.state`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BundleState {
    /// Deployed, ready and up to date.
    Ready,
    /// Deployed but some resources are not ready.
    NotReady,
    /// A new deployment is waiting for the agent to apply it.
    WaitApplied,
    /// The agent failed to apply the deployment.
    ErrApplied,
    /// A staged change has not been rolled out yet.
    OutOfSync,
    /// The target has no BundleDeployment yet.
    Pending,
    /// Live resources differ from desired state.
    Modified,
}

impl BundleState {
    /// Every state, in rank order (best first).
    pub const ALL: [BundleState; 7] = [
        BundleState::Ready,
        BundleState::NotReady,
        BundleState::Pending,
        BundleState::OutOfSync,
        BundleState::Modified,
        BundleState::WaitApplied,
        BundleState::ErrApplied,
    ];

    /// Upstream's StateRank: higher is worse; summaries show the highest.
    pub fn rank(self) -> u8 {
        match self {
            BundleState::ErrApplied => 7,
            BundleState::WaitApplied => 6,
            BundleState::Modified => 5,
            BundleState::OutOfSync => 4,
            BundleState::Pending => 3,
            BundleState::NotReady => 2,
            BundleState::Ready => 1,
        }
    }

    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            BundleState::Ready => "Ready",
            BundleState::NotReady => "NotReady",
            BundleState::WaitApplied => "WaitApplied",
            BundleState::ErrApplied => "ErrApplied",
            BundleState::OutOfSync => "OutOfSync",
            BundleState::Pending => "Pending",
            BundleState::Modified => "Modified",
        }
    }

    /// Parses the wire spelling; `None` for anything else.
    pub fn parse(s: &str) -> Option<BundleState> {
        BundleState::ALL.into_iter().find(|st| st.as_str() == s)
    }
}

impl fmt::Display for BundleState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_table() {
        let mut v = BundleState::ALL.to_vec();
        v.sort_by_key(|s| std::cmp::Reverse(s.rank()));
        let names: Vec<_> = v.iter().map(|s| s.as_str()).collect();
        assert_eq!(
            names,
            [
                "ErrApplied",
                "WaitApplied",
                "Modified",
                "OutOfSync",
                "Pending",
                "NotReady",
                "Ready"
            ]
        );
        for s in BundleState::ALL {
            assert_eq!(BundleState::parse(s.as_str()), Some(s));
        }
        assert_eq!(BundleState::parse("ready"), None);
    }
}
