//! SIGKILL `fleet server` in the middle of a stream of concurrent writes, restart it on the same
//! data directory and port: every acknowledged write is present, resourceVersions keep increasing,
//! and a watcher either resumes from its last resourceVersion or gets 410 Gone and relists.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::{Server, raw};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, ListParams, PostParams};
use kube::runtime::{WatchStreamExt, reflector, watcher};

const WRITERS: usize = 8;

fn cm(name: &str, value: u64) -> ConfigMap {
    let mut c = ConfigMap::default();
    c.metadata.name = Some(name.into());
    c.metadata.labels = Some([("suite".to_string(), "durability".to_string())].into());
    c.data = Some([("value".to_string(), value.to_string())].into());
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn acknowledged_writes_survive_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    let port = srv.port();
    let client = srv.client().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");

    // A reflector that lives across the crash: it must end up with the post-restart state.
    let (reader, writer) = reflector::store::<ConfigMap>();
    let watch_stream = reflector(
        writer,
        watcher(
            api.clone(),
            watcher::Config::default().labels("suite=durability"),
        ),
    )
    .default_backoff()
    .applied_objects()
    .boxed();
    let last_seen_rv = Arc::new(Mutex::new(0u64));
    let seen = last_seen_rv.clone();
    let watch_task = tokio::spawn(async move {
        let mut s = watch_stream;
        while let Some(ev) = s.next().await {
            if let Ok(o) = ev {
                let rv: u64 = o
                    .resource_version()
                    .unwrap_or_default()
                    .parse()
                    .unwrap_or(0);
                let mut g = seen.lock().unwrap();
                *g = (*g).max(rv);
            }
        }
    });
    tokio::time::timeout(Duration::from_secs(30), reader.wait_until_ready())
        .await
        .unwrap()
        .unwrap();

    // Writers: each creates objects and keeps updating its own counter object; every
    // acknowledged write is recorded with the resourceVersion the server returned.
    let acked_creates: Arc<Mutex<Vec<(String, u64)>>> = Arc::default();
    let acked_counters: Arc<Mutex<BTreeMap<String, u64>>> = Arc::default();
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let api = api.clone();
        let creates = acked_creates.clone();
        let counters = acked_counters.clone();
        tasks.push(tokio::spawn(async move {
            let counter = format!("counter-{w}");
            if api
                .create(&PostParams::default(), &cm(&counter, 0))
                .await
                .is_err()
            {
                return;
            }
            counters.lock().unwrap().insert(counter.clone(), 0);
            for i in 1u64.. {
                let name = format!("w{w}-{i}");
                match api.create(&PostParams::default(), &cm(&name, i)).await {
                    Ok(o) => creates
                        .lock()
                        .unwrap()
                        .push((name, o.resource_version().unwrap().parse().unwrap())),
                    Err(_) => return,
                }
                // Unconditional update of the counter (no resourceVersion precondition).
                let mut c = cm(&counter, i);
                c.metadata.resource_version = None;
                match api.replace(&counter, &PostParams::default(), &c).await {
                    Ok(_) => {
                        counters.lock().unwrap().insert(counter.clone(), i);
                    }
                    Err(_) => return,
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    srv.kill();
    for t in tasks {
        let _ = tokio::time::timeout(Duration::from_secs(60), t).await;
    }
    let creates = acked_creates.lock().unwrap().clone();
    let counters = acked_counters.lock().unwrap().clone();
    let max_acked_rv = creates.iter().map(|c| c.1).max().unwrap_or(0);
    assert!(
        creates.len() > 20,
        "too few writes before the kill to prove anything: {}",
        creates.len()
    );
    let watcher_rv_at_crash = *last_seen_rv.lock().unwrap();
    println!(
        "killed after {} acknowledged creates (max rv {max_acked_rv}); watcher had seen rv {watcher_rv_at_crash}",
        creates.len()
    );

    // Restart on the same directory and port.
    let srv = Server::start_with(dir.path(), &format!("127.0.0.1:{port}"));
    let client = srv.client().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let list = api
        .list(&ListParams::default().labels("suite=durability"))
        .await
        .unwrap();
    let present: BTreeMap<String, ConfigMap> =
        list.items.into_iter().map(|o| (o.name_any(), o)).collect();
    for (name, rv) in &creates {
        let o = present
            .get(name)
            .unwrap_or_else(|| panic!("acknowledged create {name} (rv {rv}) lost"));
        let got: u64 = o.resource_version().unwrap().parse().unwrap();
        assert!(
            got >= *rv,
            "{name}: resourceVersion went back from {rv} to {got}"
        );
    }
    for (name, value) in &counters {
        let o = present
            .get(name)
            .unwrap_or_else(|| panic!("counter {name} lost"));
        let got: u64 = o.data.as_ref().unwrap()["value"].parse().unwrap();
        assert!(
            got >= *value,
            "{name}: acknowledged value {value}, found {got}"
        );
    }
    let list_rv: u64 = list.metadata.resource_version.unwrap().parse().unwrap();
    assert!(
        list_rv >= max_acked_rv,
        "list rv {list_rv} < acknowledged {max_acked_rv}"
    );

    // New writes continue above every revision handed out before the crash.
    let after = api
        .create(&PostParams::default(), &cm("after-restart", 1))
        .await
        .unwrap();
    let after_rv: u64 = after.resource_version().unwrap().parse().unwrap();
    assert!(
        after_rv > max_acked_rv && after_rv > list_rv,
        "rv {after_rv} not above {max_acked_rv}/{list_rv}"
    );

    // A raw watch from the watcher's last resourceVersion either resumes or answers 410.
    if watcher_rv_at_crash > 0 {
        let path = format!(
            "/api/v1/namespaces/default/configmaps?watch=true&labelSelector=suite%3Ddurability&resourceVersion={watcher_rv_at_crash}&timeoutSeconds=1"
        );
        let (code, body) = raw(&client, "GET", &path, "application/json", vec![]).await;
        let text = body
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| body.to_string());
        match code {
            410 => println!("old resourceVersion: 410 Gone, client must relist"),
            200 if text.contains("\"code\":410") => {
                println!("old resourceVersion: ERROR 410 event")
            }
            200 => {
                assert!(
                    text.contains("after-restart"),
                    "resumed watch lacks the post-restart write: {text:.500}"
                );
                println!("old resourceVersion: watch resumed");
            }
            other => panic!("watch from rv {watcher_rv_at_crash}: unexpected {other}: {text:.500}"),
        }
    }

    // The long-lived reflector reconnected (resume or 410 + relist) and converged.
    let expected = present.len() + 1;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let state = reader.state();
        if state.len() == expected && state.iter().any(|o| o.name_any() == "after-restart") {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "reflector did not converge after restart: {} of {expected} objects",
            state.len()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    watch_task.abort();
    drop(srv);
}
