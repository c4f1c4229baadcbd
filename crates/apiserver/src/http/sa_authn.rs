//! Bearer-token authentication of service-account JWTs against live objects.
//!
//! Why a separate layer over [`crate::security::satoken`]: that module is pure (signing, claim
//! checks); everything here needs the store, because a token is only as good as the
//! ServiceAccount (and Secret or Pod) it names: deleting or recreating any of them revokes it at
//! once.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use base64::Engine;
use parking_lot::Mutex;

use crate::security::auth::{TokenVerifier, UserInfo};
use crate::security::satoken::{SigningKey, Verified, VerifyOptions};
use crate::security::service_accounts::{SA_NAME_ANNOTATION, ServiceAccountConfig};
use crate::state::{ApiServer, Head};
use crate::storage::store::Rev;

/// How long a signature check and a liveness record are kept. Neither goes stale while kept (a
/// cached signature's expiry is checked on every use; a liveness record holds only while the
/// objects it read are at the same revisions), so the TTL bounds memory only: tokens no longer
/// presented are forgotten. At 60 s, each of 10,000 agents had its signature checked and its
/// Secret and ServiceAccount parsed again every minute (2% of the manager's CPU in a rollout).
const CACHE_TTL: Duration = Duration::from_secs(600);

/// A token's cache key: its SHA-256, so an entry costs 32 bytes instead of a JWT's kilobyte
/// and no other token can collide with it.
type TokenKey = [u8; 32];

fn token_key(token: &str) -> TokenKey {
    use sha2::Digest;
    sha2::Sha256::digest(token.as_bytes()).into()
}

/// What a liveness check read: the store keys with the revisions it read them at, their
/// resources, and a store revision no later than those reads.
struct SeenObjects {
    objects: Box<[(String, Rev)]>,
    /// None when a key names no resource (never for the keys the check reads): then only the
    /// objects themselves tell.
    resources: Option<Box<[Box<str>]>>,
    /// While none of `resources` is written after this revision, none of `objects` changed.
    checked_at: AtomicI64,
}

type Seen = Arc<SeenObjects>;

/// Entries by token, each forgotten `CACHE_TTL` after it was stored.
///
/// Why not a fixed bound: a manager serves one token per agent, and a cache of 4,096 that was
/// cleared when full verified every signature again for each request beyond 4,096 agents.
/// Expired entries are swept when the map has doubled since the last sweep.
struct TtlCache<V> {
    map: HashMap<TokenKey, (V, Instant)>,
    sweep_at: usize,
}

impl<V: Clone> TtlCache<V> {
    fn new() -> TtlCache<V> {
        TtlCache {
            map: HashMap::new(),
            sweep_at: 1024,
        }
    }

    fn get(&self, key: &TokenKey) -> Option<V> {
        self.map
            .get(key)
            .filter(|(_, at)| at.elapsed() < CACHE_TTL)
            .map(|(v, _)| v.clone())
    }

    fn insert(&mut self, key: TokenKey, v: V) {
        if self.map.len() >= self.sweep_at {
            self.map.retain(|_, (_, at)| at.elapsed() < CACHE_TTL);
            self.sweep_at = (self.map.len() * 2).max(1024);
        }
        self.map.insert(key, (v, Instant::now()));
    }
}

/// Authenticates service-account bearer tokens for [`crate::security::auth::Authenticator`].
///
/// Signature checks are cached briefly (by token); the live-object checks (ServiceAccount uid,
/// Secret, Pod) run against the store on every request, so a deletion revokes immediately.
pub struct ServiceAccountAuthenticator {
    srv: ApiServer,
    cache: Mutex<TtlCache<Arc<Verified>>>,
    /// Per token, the objects its last successful liveness check read and their revisions:
    /// while none of them has changed, the check would read the same JSON and pass again.
    /// Why: every request of an agent made that check, parsing its Secret and ServiceAccount.
    live: Mutex<TtlCache<Seen>>,
}

impl std::fmt::Debug for ServiceAccountAuthenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceAccountAuthenticator")
            .finish_non_exhaustive()
    }
}

fn now_seconds() -> i64 {
    jiff::Timestamp::now().as_second()
}

impl ServiceAccountAuthenticator {
    /// An authenticator for `srv`'s tokens.
    pub fn new(srv: ApiServer) -> ServiceAccountAuthenticator {
        ServiceAccountAuthenticator {
            srv,
            cache: Mutex::new(TtlCache::new()),
            live: Mutex::new(TtlCache::new()),
        }
    }

    fn verified(
        &self,
        token: &str,
        key: &TokenKey,
        audiences: &[String],
    ) -> Result<Arc<Verified>, String> {
        let sa = &self.srv.inner.sa;
        let now = now_seconds();
        let default_auds = audiences == sa.cfg.api_audiences.as_slice();
        if default_auds && let Some(v) = self.cache.lock().get(key) {
            if v.claims.exp.is_some_and(|exp| now >= exp) {
                return Err("token has expired".into());
            }
            return Ok(v);
        }
        let v = sa
            .key
            .verify(
                token,
                &VerifyOptions {
                    issuer: sa.cfg.issuer.clone(),
                    audiences: audiences.to_vec(),
                    accept_legacy: true,
                    now,
                },
            )
            .map_err(|e| e.to_string())?;
        let v = Arc::new(v);
        if default_auds {
            self.cache.lock().insert(*key, v.clone());
        }
        Ok(v)
    }

    /// The live-object checks kube-apiserver's service-account validators make.
    /// [`Self::check_live`], skipped when the objects it last read for this token are at the
    /// revisions it read them at: known at once when their resources were not written since
    /// (a hash lookup each), else by reading the objects again.
    fn check_live_cached(&self, v: &Verified, token: &str, key: &TokenKey) -> Result<(), String> {
        let store = self.srv.store();
        if let Some(seen) = self.live.lock().get(key) {
            let mark = seen.checked_at.load(Ordering::Relaxed);
            if seen
                .resources
                .as_ref()
                .is_some_and(|r| store.unwritten_since(r, mark))
            {
                return Ok(());
            }
            // Read before the objects (here and below): a write after it is seen next time.
            let now = store.current_rev();
            if seen
                .objects
                .iter()
                .all(|(key, rev)| store.get(key).is_some_and(|o| o.rev == *rev))
            {
                seen.checked_at.store(now, Ordering::Relaxed);
                return Ok(());
            }
        }
        let now = store.current_rev();
        let mut objects = Vec::new();
        self.check_live(v, token, &mut objects)?;
        let resources: Option<Vec<Box<str>>> = objects
            .iter()
            .map(|(k, _)| crate::storage::store::resource_of(k).map(Box::from))
            .collect();
        let resources = resources.map(|mut r| {
            r.sort();
            r.dedup();
            r.into_boxed_slice()
        });
        let seen = SeenObjects {
            objects: objects.into(),
            resources,
            checked_at: AtomicI64::new(now),
        };
        self.live.lock().insert(*key, Arc::new(seen));
        Ok(())
    }

    /// Whether the objects the token names (its Secret, ServiceAccount, bound objects) exist as
    /// it says; `seen` gets the key and revision of every object read.
    fn check_live(
        &self,
        v: &Verified,
        token: &str,
        seen: &mut Vec<(String, Rev)>,
    ) -> Result<(), String> {
        let srv = &self.srv;
        let mut head = |plural: &str, ns: &str, name: &str| {
            let key = format!("/core/{plural}/{ns}/{name}");
            let obj = srv.store().get(&key)?;
            let parsed = serde_json::from_slice::<Head>(&obj.json()).ok()?;
            seen.push((key, obj.rev));
            Some(parsed)
        };
        let ns = v.namespace.as_str();
        if let Some((secret_name, None)) = &v.secret {
            // Legacy token: the Secret must exist, name the account and hold this very token.
            let s = head("secrets", ns, secret_name)
                .ok_or_else(|| format!("secret {ns}/{secret_name} not found"))?;
            if s.deleting() {
                return Err(format!("secret {ns}/{secret_name} is being deleted"));
            }
            if s.annotation(SA_NAME_ANNOTATION) != Some(v.service_account.as_str()) {
                return Err(format!(
                    "secret {ns}/{secret_name} does not reference service account {}",
                    v.service_account
                ));
            }
            let stored = s
                .data
                .as_ref()
                .and_then(|d| d.get("token"))
                .map(String::as_str)
                .unwrap_or("");
            let presented = base64::engine::general_purpose::STANDARD.encode(token);
            if stored != presented {
                return Err("token does not match the server's copy".into());
            }
        }
        let sa = head("serviceaccounts", ns, &v.service_account)
            .ok_or_else(|| format!("service account {ns}/{} not found", v.service_account))?;
        if sa.metadata.uid != v.service_account_uid {
            return Err(format!(
                "service account {ns}/{} has been recreated (uid mismatch)",
                v.service_account
            ));
        }
        if sa.deleting() {
            return Err(format!(
                "service account {ns}/{} is being deleted",
                v.service_account
            ));
        }
        if let Some(k) = &v.claims.kubernetes {
            for (plural, r) in [("secrets", &k.secret), ("pods", &k.pod)] {
                let Some(r) = r else { continue };
                let o = head(plural, ns, &r.name)
                    .ok_or_else(|| format!("bound object {plural} {ns}/{} not found", r.name))?;
                if o.metadata.uid != r.uid {
                    return Err(format!(
                        "bound object {plural} {ns}/{} has been recreated (uid mismatch)",
                        r.name
                    ));
                }
                if o.deleting() {
                    return Err(format!(
                        "bound object {plural} {ns}/{} is being deleted",
                        r.name
                    ));
                }
            }
            if let Some(r) = &k.node {
                let o = head("nodes", "", &r.name)
                    .ok_or_else(|| format!("bound node {} not found", r.name))?;
                if !r.uid.is_empty() && o.metadata.uid != r.uid {
                    return Err(format!("bound node {} has been recreated", r.name));
                }
            }
        }
        Ok(())
    }
}

impl TokenVerifier for ServiceAccountAuthenticator {
    fn verify_token(&self, token: &str, audiences: Option<&[String]>) -> Result<UserInfo, String> {
        let audiences = audiences.unwrap_or(&self.srv.inner.sa.cfg.api_audiences);
        let key = token_key(token);
        let v = self.verified(token, &key, audiences)?;
        self.check_live_cached(&v, token, &key)?;
        Ok(v.user())
    }
}

impl ApiServer {
    /// The bearer-token verifier for this server's service-account tokens, to hand to
    /// [`crate::security::auth::Authenticator::with_verifier`].
    pub fn service_account_authenticator(&self) -> Arc<dyn TokenVerifier> {
        Arc::new(ServiceAccountAuthenticator::new(self.clone()))
    }

    /// The key service-account tokens are signed with (tools and tests sign tokens with it).
    pub fn service_account_key(&self) -> &SigningKey {
        &self.inner.sa.key
    }

    /// The service-account settings in force (issuer, audiences).
    pub fn service_account_config(&self) -> &ServiceAccountConfig {
        &self.inner.sa.cfg
    }
}
