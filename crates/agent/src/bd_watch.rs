//! The agent's watch on its namespace's BundleDeployments, read on a task of its own, as
//! client-go's informers read theirs, whatever the deploy loop is doing.
//!
//! Why: the deploy loop reconciles everything queued before it takes its next event, and with
//! the watch read inline the watch went unread for as long as that took. The manager kept
//! sending (bookmarks, then the last bookmark a watch ends with on its timeout), the connection
//! buffered it, and the watcher read it minutes later and resumed from the revision it carried:
//! by then older than the manager keeps (`410 too old resource version`), a relist per agent.
//! 10,000 agents in one starved process relisted 1,213 to 12,556 times in one update round.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use fleet_api::BundleDeployment;
use futures::{StreamExt, TryStreamExt};
use kube::Api;
use kube::runtime::watcher;
use tokio::sync::Notify;

use crate::backoff::Backoff;
use fleet_api::WatchedBd;

/// What the watch hands the deploy loop: an event, or an error for it to log. A
/// BundleDeployment is 2 KB inline: behind an `Arc` it is never copied as it moves through the
/// queue into the loop's map, and the loop's checks share it instead of cloning it.
pub type BdEvent = Result<watcher::Event<Arc<BundleDeployment>>, watcher::Error>;

/// Lists after the first, of every followed watch in this process.
static RELISTS: AtomicU64 = AtomicU64::new(0);

/// How many times the BundleDeployment watches of this process (every agent's in it) listed
/// again after their first list: each is a watch that could not resume (its revision gone from
/// the manager's history, or the manager restarted), and at scale a storm of them is how a fleet
/// stops converging. `fleet bench scale` prints it for each round.
pub fn relists() -> u64 {
    RELISTS.load(Ordering::Relaxed)
}

/// Tells a watch's lists after its first from the first.
#[derive(Default)]
struct Lists {
    listed: bool,
}

impl Lists {
    /// Whether `ev` starts a list that is not the watch's first.
    fn relist(&mut self, ev: &BdEvent) -> bool {
        if !matches!(ev, Ok(watcher::Event::Init)) {
            return false;
        }
        std::mem::replace(&mut self.listed, true)
    }
}

/// The events of a followed watch, waiting for the deploy loop (see [`follow`]); the watch
/// stops when this is dropped.
pub struct BdEvents {
    inbox: Arc<Inbox>,
    task: tokio::task::JoinHandle<()>,
}

#[derive(Default)]
struct Inbox {
    queue: Mutex<Queue>,
    /// One waiter (the loop): a notification sent while it is busy is kept for its next wait.
    ready: Notify,
}

#[derive(Default)]
struct Queue {
    events: VecDeque<BdEvent>,
    /// The watch ended (it does not, but for a panic in the watcher).
    ended: bool,
}

impl Inbox {
    fn queue(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl BdEvents {
    /// The next event, oldest first; `None` once the watch has ended and every event was
    /// taken. Cancel-safe: an event is only taken by the call that returns it.
    pub async fn recv(&mut self) -> Option<BdEvent> {
        loop {
            {
                let mut q = self.inbox.queue();
                if let Some(ev) = q.events.pop_front() {
                    if q.events.is_empty() {
                        // Let go of the slots a list's burst grew: an agent at rest holds
                        // no queue.
                        q.events = VecDeque::new();
                    }
                    return Some(ev);
                }
                if q.ended {
                    return None;
                }
            }
            self.inbox.ready.notified().await;
        }
    }
}

impl Drop for BdEvents {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Follows the BundleDeployments of `api` (watches renewed every `timeout_secs`) on a task of its
/// own until the returned [`BdEvents`] is dropped. Events wait in memory, not in the
/// connection, so the watcher resumes from a recent revision however long the loop is busy;
/// a BundleDeployment changed again while its last change still waits is held once (see
/// [`coalesce`]), so a busy agent holds at most one decoded copy of each.
///
/// The backoff is ours, not the watcher's: a connection error waits (800 ms doubling to 30 s,
/// as client-go's reflector), but an answer from the manager (a relist after "too old resource
/// version", which a restarted manager gives) resumes at once: the manager is back.
pub fn follow(api: Api<WatchedBd>, timeout_secs: u32) -> BdEvents {
    let inbox = Arc::new(Inbox::default());
    let task = tokio::spawn({
        let inbox = inbox.clone();
        async move {
            let mut events = watcher(api, watcher::Config::default().timeout(timeout_secs))
                .map_ok(|ev| match ev {
                    watcher::Event::Apply(w) => watcher::Event::Apply(Arc::new(w.0)),
                    watcher::Event::InitApply(w) => watcher::Event::InitApply(Arc::new(w.0)),
                    watcher::Event::Delete(w) => watcher::Event::Delete(Arc::new(w.0)),
                    watcher::Event::Init => watcher::Event::Init,
                    watcher::Event::InitDone => watcher::Event::InitDone,
                })
                .boxed();
            let mut backoff = Backoff::new(Duration::from_millis(800), Duration::from_secs(30));
            let mut lists = Lists::default();
            while let Some(ev) = events.next().await {
                if lists.relist(&ev) {
                    RELISTS.fetch_add(1, Ordering::Relaxed);
                }
                let pause = match &ev {
                    Ok(_) => None,
                    Err(watcher::Error::WatchError(st)) if st.code == 410 => None,
                    Err(_) => Some(backoff.next_delay()),
                };
                if pause.is_none() {
                    backoff.reset();
                }
                coalesce(&mut inbox.queue().events, ev);
                inbox.ready.notify_one();
                if let Some(d) = pause {
                    tokio::time::sleep(d).await;
                }
            }
            inbox.queue().ended = true;
            inbox.ready.notify_one();
        }
    });
    BdEvents { inbox, task }
}

/// Queues `ev`; a change of a BundleDeployment whose earlier change still waits (with no
/// deletion of it, and no relist, since) replaces that one in its place instead. The loop acts
/// on a BundleDeployment's latest version alone (its status, the generation to deploy), so
/// nothing is lost, and a loop busy for minutes does not hold every version decoded (each
/// status write of its own comes back as one: +0.06 MiB per agent at 10,000 agents when every
/// event was kept).
fn coalesce(queue: &mut VecDeque<BdEvent>, ev: BdEvent) {
    if let Ok(watcher::Event::Apply(bd)) = &ev {
        for waiting in queue.iter_mut().rev() {
            match waiting {
                Ok(watcher::Event::Apply(old)) if old.metadata.name == bd.metadata.name => {
                    *waiting = ev;
                    return;
                }
                Ok(watcher::Event::Delete(old)) if old.metadata.name == bd.metadata.name => {
                    break;
                }
                Ok(watcher::Event::Init | watcher::Event::InitDone) => break,
                _ => {}
            }
        }
    }
    queue.push_back(ev);
}

#[cfg(test)]
mod tests {
    use std::borrow::Borrow;
    use std::collections::VecDeque;
    use std::time::Instant;

    use fleet_apiserver::{ServerConfig, StoreSync};
    use fleet_testkit::{eventually_async, inproc};
    use futures::Stream;
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube::api::{Patch, PatchParams, PostParams};
    use kube::{Client, Resource};
    use serde_json::json;

    use super::*;

    const NS: &str = "cluster-ns";
    /// The watches' timeout: each ends after a second with a bookmark to resume from.
    const TIMEOUT_SECS: u32 = 1;
    /// The manager keeps superseded revisions this long (kube-apiserver: about 5 minutes).
    const KEPT: Duration = Duration::from_millis(1500);
    /// How long neither the late watch nor the followed one's channel is read.
    const BUSY: Duration = Duration::from_secs(4);
    /// Events the manager's watch ring holds: a resume from a revision still in it needs no
    /// log, compacted or not.
    const HISTORY: usize = 64;

    fn create<K: Resource + serde::de::DeserializeOwned>(v: serde_json::Value) -> K {
        serde_json::from_value(v).expect("a valid object")
    }

    /// What an event says, short: `init`, `initdone`, `apply a=<label>`, `error 410`, ...
    fn describe<B: Borrow<BundleDeployment>>(
        ev: &Result<watcher::Event<B>, watcher::Error>,
    ) -> String {
        let applied = |bd: &BundleDeployment| {
            let label = bd.metadata.labels.as_ref().and_then(|l| l.get("round"));
            format!(
                "{} {}={}",
                bd.metadata.name.as_deref().unwrap_or_default(),
                "round",
                label.map_or("-", String::as_str)
            )
        };
        match ev {
            Ok(watcher::Event::Init) => "init".into(),
            Ok(watcher::Event::InitApply(bd)) => format!("initapply {}", applied(bd.borrow())),
            Ok(watcher::Event::InitDone) => "initdone".into(),
            Ok(watcher::Event::Apply(bd)) => format!("apply {}", applied(bd.borrow())),
            Ok(watcher::Event::Delete(bd)) => format!("delete {}", applied(bd.borrow())),
            Err(watcher::Error::WatchError(st)) => format!("error {}", st.code),
            Err(e) => format!("error {e}"),
        }
    }

    /// Reads `events` until one is described as `want` (see [`describe`]); returns what it read.
    async fn until<B: Borrow<BundleDeployment>>(
        events: &mut (impl Stream<Item = Result<watcher::Event<B>, watcher::Error>> + Unpin),
        want: &str,
    ) -> Vec<String> {
        let mut seen = Vec::new();
        let read = async {
            while let Some(ev) = events.next().await {
                let d = describe(&ev);
                let done = d == want;
                seen.push(d);
                if done {
                    return;
                }
            }
        };
        if tokio::time::timeout(Duration::from_secs(20), read)
            .await
            .is_err()
        {
            panic!("{want:?} not seen; read {seen:?}");
        }
        seen
    }

    async fn set_round(bds: &Api<BundleDeployment>, round: &str) {
        let patch = json!({"metadata": {"labels": {"round": round}}});
        bds.patch("a", &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .expect("labelling the BundleDeployment");
    }

    async fn bd_kind(client: &Client) {
        let crd = fleet_api::crds::all()
            .into_iter()
            .find(|c| c.spec.names.plural == "bundledeployments")
            .expect("the BundleDeployment CRD");
        Api::<CustomResourceDefinition>::all(client.clone())
            .create(&PostParams::default(), &crd)
            .await
            .expect("creating the CRD");
    }

    fn bd(name: &str, round: &str) -> Arc<BundleDeployment> {
        Arc::new(create(json!({
            "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "BundleDeployment",
            "metadata": {"name": name, "namespace": NS, "labels": {"round": round}},
            "spec": {"deploymentID": "s-1:1"},
        })))
    }

    fn queued(events: &[BdEvent]) -> Vec<String> {
        events.iter().map(describe).collect()
    }

    /// What the loop gets when `events` arrive while it is busy.
    fn coalesced(events: Vec<BdEvent>) -> Vec<String> {
        let mut q = VecDeque::new();
        for ev in events {
            coalesce(&mut q, ev);
        }
        queued(q.make_contiguous())
    }

    #[test]
    fn a_waiting_change_is_replaced_by_a_later_one_in_its_place() {
        let apply = |n: &str, r: &str| Ok(watcher::Event::Apply(bd(n, r)));
        assert_eq!(
            coalesced(vec![
                apply("a", "1"),
                apply("b", "1"),
                apply("a", "2"),
                apply("b", "2")
            ]),
            ["apply a round=2", "apply b round=2"]
        );
        // Errors and other BundleDeployments' deletions are no barrier.
        let gone = Ok(watcher::Event::Delete(bd("b", "1")));
        let error = Err(watcher::Error::WatchError(Box::new(kube::core::Status {
            code: 500,
            ..Default::default()
        })));
        assert_eq!(
            coalesced(vec![apply("a", "1"), gone, error, apply("a", "2")]),
            ["apply a round=2", "delete b round=1", "error 500"]
        );
    }

    #[test]
    fn only_the_lists_after_a_watchs_first_are_relists() {
        let mut lists = Lists::default();
        let events = [
            Ok(watcher::Event::Init),
            Ok(watcher::Event::InitApply(bd("a", "1"))),
            Ok(watcher::Event::InitDone),
            Ok(watcher::Event::Apply(bd("a", "2"))),
            Err(watcher::Error::WatchError(Box::new(kube::core::Status {
                code: 410,
                ..Default::default()
            }))),
            Ok(watcher::Event::Init),
            Ok(watcher::Event::InitDone),
            Ok(watcher::Event::Init),
        ];
        let relists: Vec<bool> = events.iter().map(|ev| lists.relist(ev)).collect();
        assert_eq!(
            relists,
            [false, false, false, false, false, true, false, true]
        );
    }

    #[test]
    fn deletions_and_relists_keep_what_came_before_them() {
        let apply = |n: &str, r: &str| Ok(watcher::Event::Apply(bd(n, r)));
        let events = vec![
            apply("a", "1"),
            Ok(watcher::Event::Delete(bd("a", "1"))),
            apply("a", "2"),
            apply("a", "3"),
        ];
        assert_eq!(
            coalesced(events),
            ["apply a round=1", "delete a round=1", "apply a round=3"]
        );
        let events = vec![
            apply("a", "1"),
            Ok(watcher::Event::Init),
            Ok(watcher::Event::InitApply(bd("a", "2"))),
            Ok(watcher::Event::InitDone),
            apply("a", "3"),
            apply("a", "4"),
        ];
        assert_eq!(
            coalesced(events),
            [
                "apply a round=1",
                "init",
                "initapply a round=2",
                "initdone",
                "apply a round=4"
            ]
        );
    }

    /// A watch read only after a long deploy resumes from the bookmark its watch ended with,
    /// which the manager has compacted by then: 410 and a relist. The same watch followed by
    /// [`follow`] resumes at once, from a revision still kept, and relists nothing.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_followed_watch_outlives_a_busy_loop_without_relisting() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let (srv, client) = inproc::start_with(ServerConfig {
            store_sync: StoreSync::Normal,
            // Soon outrun by the writes below: older revisions are replayed from the log, which
            // keeps them for KEPT.
            store_history: HISTORY,
            ..ServerConfig::with_data_dir(dir.path())
        })
        .await;
        bd_kind(&client).await;
        let pp = PostParams::default();
        for ns in [NS, "other"] {
            Api::<Namespace>::all(client.clone())
                .create(&pp, &create(json!({"metadata": {"name": ns}})))
                .await
                .expect("creating a namespace");
        }
        let bds: Api<BundleDeployment> = Api::namespaced(client.clone(), NS);
        let a = bd("a", "0");
        eventually_async(
            "BundleDeployments served",
            Duration::from_secs(10),
            || async {
                bds.create(&pp, &a)
                    .await
                    .map(drop)
                    .map_err(|e| e.to_string())
            },
        )
        .await;

        // This is the one test of the crate that follows a watch: nobody else counts here.
        let relists_before = relists();
        let mut followed = futures::stream::unfold(
            follow(Api::namespaced(client.clone(), NS), TIMEOUT_SECS),
            |mut events| async move { events.recv().await.map(|ev| (ev, events)) },
        )
        .boxed();
        let mut late = watcher(
            bds.clone(),
            watcher::Config::default().timeout(TIMEOUT_SECS),
        )
        .boxed();
        // Both have listed, then watch: a change made after their lists reaches both.
        until(&mut followed, "initdone").await;
        until(&mut late, "initdone").await;
        set_round(&bds, "1").await;
        until(&mut followed, "apply a round=1").await;
        until(&mut late, "apply a round=1").await;

        // Busy: nothing reads either; other namespaces are written and the manager compacts what
        // is older than KEPT. Each watch ends meanwhile, on its timeout. The writes go on until
        // the ring has turned over several times too: on a loaded machine, 4 s of writes could
        // leave the late watch's bookmark in the ring, from which it resumes without a 410.
        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "other");
        let mut written: VecDeque<(Instant, i64)> = VecDeque::new();
        let start = Instant::now();
        let mut i = 0;
        while start.elapsed() < BUSY || i < 4 * HISTORY {
            let cm: ConfigMap = create(json!({"metadata": {"name": format!("cm-{i}")}}));
            let cm = cms.create(&pp, &cm).await.expect("writing elsewhere");
            let rev = cm
                .metadata
                .resource_version
                .and_then(|v| v.parse().ok())
                .expect("a numeric resourceVersion");
            written.push_back((Instant::now(), rev));
            let mut upto = None;
            while let Some(&(at, rev)) = written.front()
                && at.elapsed() >= KEPT
            {
                upto = Some(rev);
                written.pop_front();
            }
            if let Some(rev) = upto {
                srv.api().compact(rev).await.expect("compacting");
            }
            i += 1;
        }

        set_round(&bds, "2").await;
        let late_seen = until(&mut late, "initapply a round=2").await;
        assert_eq!(
            late_seen,
            ["error 410", "init", "initapply a round=2"],
            "the watch read late should have resumed from a compacted revision and relisted"
        );
        let followed_seen = until(&mut followed, "apply a round=2").await;
        assert_eq!(
            followed_seen,
            ["apply a round=2"],
            "the followed watch should have resumed without an error or a relist"
        );
        assert_eq!(
            relists(),
            relists_before,
            "neither the followed watch's first list nor anything after it is a relist"
        );
    }
}
