//! Many writers on one object through optimistic concurrency: for every resourceVersion that
//! writers read and tried to update from, exactly one update wins and every other gets 409
//! Conflict. Many concurrent creates of one name: exactly one 201, the rest 409 AlreadyExists.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::common::Server;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, PostParams};

/// (resourceVersion read, won?, resourceVersion the winner produced)
type Attempt = (u64, bool, Option<u64>);

const WRITERS: usize = 16;
const ROUNDS: usize = 25;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_winner_per_resource_version() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    let client = srv.client().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("contended".into());
    cm.data = Some(BTreeMap::new());
    api.create(&PostParams::default(), &cm).await.unwrap();

    // (rv read, won?, the rv the winner produced)
    let attempts: Arc<Mutex<Vec<Attempt>>> = Arc::default();
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let api = api.clone();
        let attempts = attempts.clone();
        tasks.push(tokio::spawn(async move {
            for round in 0..ROUNDS {
                let mut obj = api.get("contended").await.unwrap();
                let read: u64 = obj.resource_version().unwrap().parse().unwrap();
                obj.data
                    .get_or_insert_with(BTreeMap::new)
                    .insert(format!("w{w}"), round.to_string());
                match api.replace("contended", &PostParams::default(), &obj).await {
                    Ok(new) => {
                        let rv: u64 = new.resource_version().unwrap().parse().unwrap();
                        assert!(rv > read);
                        attempts.lock().unwrap().push((read, true, Some(rv)));
                    }
                    Err(kube::Error::Api(s)) if s.code == 409 => {
                        assert_eq!(s.reason, "Conflict", "{s:?}");
                        attempts.lock().unwrap().push((read, false, None));
                    }
                    Err(e) => panic!("writer {w}: unexpected error {e}"),
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }

    let attempts = attempts.lock().unwrap().clone();
    let mut by_rv: BTreeMap<u64, (usize, usize)> = BTreeMap::new();
    for (read, won, _) in &attempts {
        let e = by_rv.entry(*read).or_default();
        if *won { e.0 += 1 } else { e.1 += 1 }
    }
    let conflicts: usize = by_rv.values().map(|(_, l)| l).sum();
    for (rv, (wins, losses)) in &by_rv {
        assert_eq!(
            *wins, 1,
            "resourceVersion {rv}: {wins} winners, {losses} conflicts"
        );
    }
    // Winners chain: each winner's new RV is the next RV someone read (or the final one).
    let final_obj = api.get("contended").await.unwrap();
    let final_rv: u64 = final_obj.resource_version().unwrap().parse().unwrap();
    let produced: Vec<u64> = attempts.iter().filter_map(|a| a.2).collect();
    assert!(produced.contains(&final_rv));
    assert_eq!(produced.len(), by_rv.len());
    println!(
        "{} attempts: {} updates won (one per resourceVersion), {conflicts} got 409 Conflict",
        attempts.len(),
        produced.len()
    );
    assert!(
        conflicts > 0,
        "16 writers on one object should collide at least once"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_create_wins_per_name() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    let api: Api<ConfigMap> = Api::namespaced(srv.client().await, "default");
    for round in 0..10 {
        let name = format!("race-{round}");
        let mut tasks = Vec::new();
        for _ in 0..WRITERS {
            let api = api.clone();
            let name = name.clone();
            tasks.push(tokio::spawn(async move {
                let mut cm = ConfigMap::default();
                cm.metadata.name = Some(name);
                match api.create(&PostParams::default(), &cm).await {
                    Ok(_) => true,
                    Err(kube::Error::Api(s)) if s.code == 409 && s.reason == "AlreadyExists" => {
                        false
                    }
                    Err(e) => panic!("unexpected {e}"),
                }
            }));
        }
        let mut wins = 0;
        for t in tasks {
            wins += usize::from(t.await.unwrap());
        }
        assert_eq!(wins, 1, "{name}: exactly one create wins");
    }
}
