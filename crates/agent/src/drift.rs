//! Drift watches: one watch per kind the agent deployed (not one per object), selecting objects
//! that carry the objectset label render adds. An event on an object some BundleDeployment owns
//! queues that BundleDeployment for a status check (and drift correction when enabled).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use kube::Api;
use kube::api::DynamicObject;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher;
use tokio::sync::mpsc::UnboundedSender;

use crate::objects::{Downstream, ObjRef};

/// Which BundleDeployment owns each deployed object.
pub type Owners = Arc<Mutex<HashMap<ObjRef, String>>>;

/// The running per-kind watches.
pub struct DriftWatches {
    ds: Downstream,
    owners: Owners,
    tx: UnboundedSender<String>,
    started: HashSet<(String, String)>,
}

impl DriftWatches {
    /// No watches yet; events are sent on `tx` as BundleDeployment names.
    pub fn new(ds: Downstream, owners: Owners, tx: UnboundedSender<String>) -> DriftWatches {
        DriftWatches {
            ds,
            owners,
            tx,
            started: HashSet::new(),
        }
    }

    /// Records that `bd` owns `objs` and makes sure their kinds are watched.
    pub async fn track(&mut self, bd: &str, objs: &[ObjRef]) {
        {
            let mut o = self.owners.lock().unwrap_or_else(|e| e.into_inner());
            o.retain(|_, b| b != bd);
            for r in objs {
                o.insert(r.clone(), bd.to_string());
            }
        }
        for r in objs {
            let key = (r.api_version.clone(), r.kind.clone());
            if self.started.contains(&key) {
                continue;
            }
            let Ok(kind) = self.ds.kind(&r.api_version, &r.kind).await else {
                continue;
            };
            self.started.insert(key);
            let api: Api<DynamicObject> = Api::all_with(self.ds.client.clone(), &kind.resource);
            let cfg = watcher::Config::default().labels(fleet_api::keys::OBJECTSET_HASH_LABEL);
            let owners = self.owners.clone();
            let tx = self.tx.clone();
            let (api_version, kind_name) = (r.api_version.clone(), r.kind.clone());
            tokio::spawn(async move {
                let mut s = watcher(api, cfg).default_backoff().boxed();
                let mut initial = true;
                while let Some(ev) = s.next().await {
                    let obj = match ev {
                        Ok(watcher::Event::Apply(o)) | Ok(watcher::Event::Delete(o)) => o,
                        Ok(watcher::Event::InitDone) => {
                            initial = false;
                            continue;
                        }
                        Ok(watcher::Event::InitApply(o)) if !initial => o,
                        Ok(_) => continue,
                        Err(e) => {
                            tracing::debug!("drift watch {api_version} {kind_name}: {e}");
                            continue;
                        }
                    };
                    let r = ObjRef {
                        api_version: api_version.clone(),
                        kind: kind_name.clone(),
                        namespace: obj.metadata.namespace.clone().unwrap_or_default(),
                        name: obj.metadata.name.clone().unwrap_or_default(),
                    };
                    let owner = owners
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .get(&r)
                        .cloned();
                    if let Some(bd) = owner
                        && tx.send(bd).is_err()
                    {
                        return;
                    }
                }
            });
        }
    }

    /// Forgets a BundleDeployment's objects (uninstalled).
    pub fn forget(&mut self, bd: &str) {
        self.owners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|_, b| b != bd);
    }
}
