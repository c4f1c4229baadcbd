//! Naming functions. Names are part of the wire contract (bundle names, cluster namespaces, Content
//! names, deployment IDs), so they must be bit-for-bit those upstream computes.

use md5::{Digest as _, Md5};
use sha2::Sha256;

/// Helm limits release names to 53 characters; bundle names are release names.
pub const MAX_HELM_RELEASE_NAME_LEN: usize = 53;

/// First `len` hex digits of md5(s): the short, stable suffix upstream uses to keep names unique.
pub fn md5_hex(s: &str, len: usize) -> String {
    let h = hex::encode(Md5::digest(s.as_bytes()));
    h[..len.min(h.len())].to_string()
}

/// Hex sha256 of `data`.
pub fn sha256_hex(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

/// Resource-name prefix under which `fleet apply` stores a remote Helm chart inside a Bundle:
/// `.chart/<sha256hex(chart:repo:version)>`. The bundle reader writes it and the renderer looks
/// for it, so both take it from here.
pub fn chart_prefix(helm: &crate::types::HelmOptions) -> String {
    let key = format!("{}:{}:{}", helm.chart, helm.repo, helm.version);
    format!(".chart/{}", sha256_hex(key.as_bytes()))
}

/// Cuts `s` (byte length, as Go does) to `count`, keeping it unique with an md5 suffix.
pub fn limit(s: &str, count: usize) -> String {
    if s.len() <= count {
        return s.to_string();
    }
    const HEX_LEN: usize = 5;
    let b = s.as_bytes();
    if count <= HEX_LEN + 1 {
        return byte_prefix(s, count).to_string();
    }
    let keep = count - HEX_LEN - 1;
    let sep = if b[keep - 1] == b'-' { "" } else { "-" };
    format!("{}{}{}", byte_prefix(s, keep), sep, md5_hex(s, HEX_LEN))
}

/// The longest prefix of `s` of at most `n` bytes that ends on a character boundary (Go slices
/// bytes; names are ASCII in practice, and this keeps non-ASCII input from panicking).
fn byte_prefix(s: &str, n: usize) -> &str {
    let mut n = n.min(s.len());
    while !s.is_char_boundary(n) {
        n -= 1;
    }
    &s[..n]
}

fn is_dns_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// Turns a path-like string (`gitrepo/path/to/dir`) into a valid, ≤53-char Helm release name;
/// used for bundle names so that every bundle can also be a Helm release.
pub fn helm_release_name(input: &str) -> String {
    let mut s = input.replace('/', "-");
    let disallowed = |c: char| !(c.is_ascii_alphanumeric() || c == '-');
    let need_hex = s != s.to_lowercase() || s.chars().any(disallowed);
    if need_hex {
        s = format!("{}-{}", s, md5_hex(&s, 8));
    }
    let lower = s.to_lowercase();
    // Replace runs of disallowed characters, then collapse dashes.
    let mut out = String::with_capacity(lower.len());
    for c in lower.chars() {
        let c = if disallowed(c) { '-' } else { c };
        if c == '-' && out.ends_with('-') {
            continue;
        }
        out.push(c);
    }
    let out = out.trim_matches('-');
    if is_dns_label(out) {
        return limit(out, MAX_HELM_RELEASE_NAME_LEN);
    }
    md5_hex(input, 24)
}

/// Joins names with `-`, shortening to < 64 characters with a sha256 suffix; used for every
/// generated Kubernetes object name.
pub fn safe_concat_name(parts: &[&str]) -> String {
    let full = parts.join("-");
    if full.len() < 64 {
        return full;
    }
    let digest = sha256_hex(full.as_bytes());
    let b = full.as_bytes();
    let c = b[56];
    if c.is_ascii_lowercase() || c.is_ascii_digit() {
        format!("{}-{}", byte_prefix(&full, 57), &digest[..5])
    } else {
        format!("{}-{}", byte_prefix(&full, 56), &digest[..6])
    }
}

/// Short stable hash of a key (first 100 bytes), used in cluster namespace and ConfigMap names.
pub fn key_hash(s: &str) -> String {
    let b = s.as_bytes();
    let b = &b[..b.len().min(100)];
    sha256_hex(b)[..12].to_string()
}

/// The namespace holding a cluster's BundleDeployments: `cluster-<ns>-<name>-<keyhash>`.
pub fn cluster_namespace(cluster_namespace: &str, cluster_name: &str) -> String {
    let kh = key_hash(&format!("{cluster_namespace}::{cluster_name}"));
    safe_concat_name(&["cluster", cluster_namespace, cluster_name, &kh])
}

/// Content name / manifest ID for a bundle's resources: `("s-" + sha256(json + "\n"))[:63]`.
/// `resources_json` is the Go-style JSON of `{"resources": [...]}` without the trailing newline.
pub fn manifest_id(resources_json: &str) -> String {
    let mut data = Vec::with_capacity(resources_json.len() + 1);
    data.extend_from_slice(resources_json.as_bytes());
    data.push(b'\n');
    let id = format!("s-{}", sha256_hex(&data));
    id[..63.min(id.len())].to_string()
}

/// Deployment ID: `manifestID:sha256(json(options))`, where options exclude `diff` and `correctDrift`
/// so that diff-only changes do not redeploy. `options_json` must be Go-ordered JSON.
pub fn deployment_id(manifest_id: &str, options_json: &str) -> String {
    format!("{}:{}", manifest_id, sha256_hex(options_json.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const S50: &str = "12345678901234567890123456789012345678901234567890";

    #[test]
    fn limit_table() {
        for (arg, n, want) in [
            ("1234567", 5, "12345"),
            ("1234567", 6, "123456"),
            ("1234567", 7, "1234567"),
            ("1234567", 8, "1234567"),
            ("12345678", 8, "12345678"),
            ("12345678", 7, "1-25d55"),
            ("123456789", 8, "12-25f9e"),
            ("1-3456789", 8, "1-9b657"),
        ] {
            assert_eq!(limit(arg, n), want, "limit({arg}, {n})");
        }
    }

    #[test]
    fn helm_release_name_table() {
        let s53 = format!("{S50}123");
        let s63 = format!("{S50}1234567890123");
        let cases = [
            (
                format!("{s53}a"),
                "12345678901234567890123456789012345678901234567-fdba4",
            ),
            (
                format!("{s63}a"),
                "12345678901234567890123456789012345678901234567-eb12d",
            ),
            (
                "long-name-test-shortpath-with@char".into(),
                "long-name-test-shortpath-with-char-031bab5e",
            ),
            (
                "long-name-test-shortpath-with+char".into(),
                "long-name-test-shortpath-with-char-21c88393",
            ),
            (
                "long-name-test-0.App_ ".into(),
                "long-name-test-0-app-5bf6b3fb",
            ),
            (
                "long-name-test--App_-_12.factor".into(),
                "long-name-test-app-12-factor-0efbac37",
            ),
            (
                "bundle.name.example.com".into(),
                "bundle-name-example-com-645ef821",
            ),
            (
                format!("{}-1234567", &s53[..46]),
                "1234567890123456789012345678901234567890123456-d0bce",
            ),
            ("test".into(), "test"),
            ("test/simple".into(), "test-simple"),
        ];
        for (arg, want) in cases {
            assert_eq!(helm_release_name(&arg), want, "helm_release_name({arg})");
        }
        // Only the md5 suffix survives cleaning.
        assert_eq!(helm_release_name("___"), md5_hex("___", 8));
        // Nothing usable left: md5 of the input.
        assert_eq!(helm_release_name(""), md5_hex("", 24));
    }

    #[test]
    fn safe_concat_table() {
        let a32 = "a".repeat(32);
        let a64 = "a".repeat(64);
        assert_eq!(safe_concat_name(&[""]), "");
        assert_eq!(
            safe_concat_name(&["first", "second", "third"]),
            "first-second-third"
        );
        assert_eq!(
            safe_concat_name(&[&a64]),
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-ffe05"
        );
        assert_eq!(
            safe_concat_name(&[&a32, &a32]),
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-aaaaaaaaaaaaaaaaaaaaaaaa-da5ed"
        );
        let x = format!("{}-aaaaaaa", "a".repeat(56));
        assert_eq!(
            safe_concat_name(&[&x]),
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-768c62"
        );
        let y = format!("{}--aaaaaaa", "a".repeat(55));
        assert_eq!(
            safe_concat_name(&[&y]),
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa--9e8cfe"
        );
        // Never panics on multi-byte input.
        let _ = safe_concat_name(&[&"é".repeat(40)]);
    }

    #[test]
    fn cluster_namespace_example() {
        assert_eq!(
            cluster_namespace("fleet-local", "local"),
            "cluster-fleet-local-local-1a3d67d0a899"
        );
    }

    #[test]
    fn manifest_id_shape() {
        let id = manifest_id(r#"{"resources":[]}"#);
        assert_eq!(id.len(), 63);
        assert!(id.starts_with("s-"));
        assert_eq!(&id[2..], &sha256_hex(b"{\"resources\":[]}\n")[..61]);
    }

    proptest::proptest! {
        #[test]
        fn names_never_panic_and_are_valid(s in "\\PC{0,120}") {
            let n = helm_release_name(&s);
            proptest::prop_assert!(n.len() <= 53);
            let c = safe_concat_name(&[&s, "x"]);
            proptest::prop_assert!(c.len() <= 64);
            let _ = key_hash(&s);
            let _ = limit(&s, 10);
        }
    }
}
