//! Service-account token tests: key persistence, legacy and bound roundtrips, expiry, audience,
//! wrong key, tampering, and revocation by deleting or recreating the ServiceAccount/Secret.

use fleet_apiserver::satoken::{
    ObjectKind, ServiceAccountRef, SigningKey, TokenError, VerifyOptions,
};
use serde_json::json;

const ISSUER: &str = "https://127.0.0.1:6443";
const NOW: i64 = 1_800_000_000;

fn sa() -> ServiceAccountRef {
    ServiceAccountRef {
        namespace: "cluster-ns".into(),
        name: "agent".into(),
        uid: "sa-uid-1".into(),
    }
}

fn opts(now: i64) -> VerifyOptions {
    VerifyOptions {
        issuer: ISSUER.into(),
        audiences: vec![ISSUER.into()],
        accept_legacy: true,
        now,
    }
}

fn key() -> (tempfile::TempDir, SigningKey) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let k = SigningKey::load_or_create(dir.path()).unwrap_or_else(|e| panic!("key: {e}"));
    (dir, k)
}

fn live(kind: ObjectKind, ns: &str, name: &str) -> Option<String> {
    match (kind, ns, name) {
        (ObjectKind::ServiceAccount, "cluster-ns", "agent") => Some("sa-uid-1".into()),
        (ObjectKind::Secret, "cluster-ns", "agent-token") => Some("secret-uid-1".into()),
        _ => None,
    }
}

fn issue(k: &SigningKey, spec: serde_json::Value) -> String {
    let st = k
        .token_request_status(ISSUER, &sa(), &spec, NOW)
        .unwrap_or_else(|e| panic!("issue: {e}"));
    st["token"].as_str().unwrap_or_default().to_string()
}

#[test]
fn key_persists_across_restarts() {
    let (dir, k) = key();
    let t = issue(&k, json!({}));
    let again = SigningKey::load_or_create(dir.path()).unwrap_or_else(|e| panic!("reload: {e}"));
    assert_eq!(k.public_key_pem(), again.public_key_pem());
    assert!(again.verify(&t, &opts(NOW)).is_ok());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join(fleet_apiserver::satoken::KEY_FILE))
            .map(|m| m.permissions().mode())
            .unwrap_or(0);
        assert_eq!(mode & 0o777, 0o600);
    }
}

#[test]
fn corrupt_key_file_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    std::fs::write(
        dir.path().join(fleet_apiserver::satoken::KEY_FILE),
        "garbage",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let e = SigningKey::load_or_create(dir.path())
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.contains("sa-signing-key.pem"), "{e}");
}

#[test]
fn bound_token_roundtrip_user_and_groups() {
    let (_d, k) = key();
    let t = issue(
        &k,
        json!({"audiences": [ISSUER], "expirationSeconds": 3600}),
    );
    let v = k
        .verify(&t, &opts(NOW + 10))
        .unwrap_or_else(|e| panic!("verify: {e}"));
    assert_eq!(v.claims.exp, Some(NOW + 3600));
    assert_eq!(v.claims.sub, "system:serviceaccount:cluster-ns:agent");
    assert!(v.claims.jti.is_some());
    let u = v
        .check_objects(live)
        .unwrap_or_else(|e| panic!("check: {e}"));
    assert_eq!(u.name, "system:serviceaccount:cluster-ns:agent");
    for g in [
        "system:serviceaccounts",
        "system:serviceaccounts:cluster-ns",
        "system:authenticated",
    ] {
        assert!(u.in_group(g), "missing {g}: {:?}", u.groups);
    }
}

#[test]
fn token_request_status_fields_and_defaults() {
    let (_d, k) = key();
    let st = k
        .token_request_status(ISSUER, &sa(), &json!({}), 0)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(st["expirationTimestamp"], "1970-01-01T01:00:00Z");
    let v = k
        .verify(st["token"].as_str().unwrap_or(""), &opts(1))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(v.claims.aud, Some(vec![ISSUER.to_string()]));
    let e = k
        .token_request_status(ISSUER, &sa(), &json!({"expirationSeconds": 599}), NOW)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        e.contains("spec.expirationSeconds") && e.contains("10 minutes"),
        "{e}"
    );
    let e = k
        .token_request_status(
            ISSUER,
            &sa(),
            &json!({"boundObjectRef": {"kind": "ConfigMap", "name": "x"}}),
            NOW,
        )
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.contains("spec.boundObjectRef.kind"), "{e}");
}

#[test]
fn expired_token_is_rejected() {
    let (_d, k) = key();
    let t = issue(&k, json!({"expirationSeconds": 600}));
    assert!(k.verify(&t, &opts(NOW + 599)).is_ok());
    let e = k
        .verify(&t, &opts(NOW + 600))
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.contains("expired"), "{e}");
}

#[test]
fn wrong_audience_is_rejected() {
    let (_d, k) = key();
    let t = issue(&k, json!({"audiences": ["vault"]}));
    let e = k
        .verify(&t, &opts(NOW))
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.contains("audience"), "{e}");
    let mut o = opts(NOW);
    o.audiences.push("vault".into());
    assert!(k.verify(&t, &o).is_ok());
}

#[test]
fn wrong_issuer_is_rejected() {
    let (_d, k) = key();
    let t = issue(&k, json!({}));
    let mut o = opts(NOW);
    o.issuer = "https://elsewhere".into();
    o.audiences.push(ISSUER.into());
    assert!(matches!(k.verify(&t, &o), Err(TokenError::Invalid(_))));
}

#[test]
fn wrong_key_is_rejected() {
    let (_d1, k1) = key();
    let (_d2, k2) = key();
    let t = issue(&k1, json!({}));
    assert!(k2.verify(&t, &opts(NOW)).is_err());
    let legacy = k1
        .sign_legacy(&sa(), "agent-token")
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(k2.verify(&legacy, &opts(NOW)).is_err());
}

#[test]
fn tampered_token_is_rejected() {
    use base64::Engine;
    let (_d, k) = key();
    let t = issue(&k, json!({}));
    let parts: Vec<&str> = t.split('.').collect();
    assert_eq!(parts.len(), 3);
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let payload = b64.decode(parts[1]).unwrap_or_default();
    let mut claims: serde_json::Value = serde_json::from_slice(&payload).unwrap_or_default();
    claims["sub"] = json!("system:serviceaccount:kube-system:admin");
    claims["kubernetes.io"]["namespace"] = json!("kube-system");
    claims["kubernetes.io"]["serviceaccount"]["name"] = json!("admin");
    let forged = format!(
        "{}.{}.{}",
        parts[0],
        b64.encode(serde_json::to_vec(&claims).unwrap_or_default()),
        parts[2]
    );
    assert!(k.verify(&forged, &opts(NOW)).is_err());
    let mut sig = parts[2].to_string();
    let last = if sig.ends_with('A') { 'B' } else { 'A' };
    sig.pop();
    sig.push(last);
    assert!(
        k.verify(&format!("{}.{}.{}", parts[0], parts[1], sig), &opts(NOW))
            .is_err()
    );
    for junk in ["", "a.b", "a.b.c", "....", "eyJhbGciOiJub25lIn0.e30."] {
        assert!(k.verify(junk, &opts(NOW)).is_err(), "{junk:?}");
    }
}

#[test]
fn legacy_secret_token_roundtrip_and_revocation() {
    let (_d, k) = key();
    let t = k
        .sign_legacy(&sa(), "agent-token")
        .unwrap_or_else(|e| panic!("{e}"));
    let v = k
        .verify(&t, &opts(NOW + 10_000_000))
        .unwrap_or_else(|e| panic!("verify: {e}"));
    assert_eq!(v.claims.iss, "kubernetes/serviceaccount");
    assert_eq!(v.claims.legacy_secret_name.as_deref(), Some("agent-token"));
    assert!(v.check_objects(live).is_ok());
    // Secret deleted.
    let no_secret = |kind: ObjectKind, ns: &str, name: &str| {
        if kind == ObjectKind::Secret {
            None
        } else {
            live(kind, ns, name)
        }
    };
    assert!(v.check_objects(no_secret).is_err());
    // ServiceAccount recreated (new uid).
    let recreated = |kind: ObjectKind, ns: &str, name: &str| {
        if kind == ObjectKind::ServiceAccount {
            Some("sa-uid-2".into())
        } else {
            live(kind, ns, name)
        }
    };
    assert!(v.check_objects(recreated).is_err());
    let mut o = opts(NOW);
    o.accept_legacy = false;
    assert!(k.verify(&t, &o).is_err());
}

#[test]
fn bound_secret_token_is_revoked_by_secret_recreation() {
    let (_d, k) = key();
    let t = issue(
        &k,
        json!({"boundObjectRef": {"kind": "Secret", "apiVersion": "v1", "name": "agent-token", "uid": "secret-uid-1"}}),
    );
    let v = k.verify(&t, &opts(NOW)).unwrap_or_else(|e| panic!("{e}"));
    assert!(v.check_objects(live).is_ok());
    let recreated = |kind: ObjectKind, ns: &str, name: &str| {
        if kind == ObjectKind::Secret {
            Some("secret-uid-2".into())
        } else {
            live(kind, ns, name)
        }
    };
    let e = v
        .check_objects(recreated)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.contains("recreated"), "{e}");
    let gone = |_: ObjectKind, _: &str, _: &str| None;
    assert!(v.check_objects(gone).is_err());
}
