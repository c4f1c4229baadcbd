//! The certificate and key functions produce real, verifiable material (checked with openssl
//! when it is installed).

use std::process::Command;

use gotmpl::{Templates, Value};

fn render(text: &str) -> String {
    let mut t = Templates::new();
    t.parse("x", text).expect("parse");
    t.execute("x", &Value::Nil).expect("execute")
}

fn run(args: &[&str]) -> String {
    let o = Command::new("openssl")
        .args(args)
        .output()
        .expect("openssl runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.status.success(), "openssl {args:?} failed: {text}");
    text
}

#[test]
fn ca_and_signed_cert_verify() {
    let out = render(
        r#"{{- $ca := genCA "my-ca" 365 -}}
{{- $c := genSignedCert "svc.example" (list "10.0.0.1") (list "svc.example" "svc.local") 30 $ca -}}
{{- $s := genSelfSignedCert "self" nil (list "self.local") 10 -}}
{{ $ca.Cert }}@@{{ $ca.Key }}@@{{ $c.Cert }}@@{{ $c.Key }}@@{{ $s.Cert }}@@{{ $s.Key }}"#,
    );
    let parts: Vec<&str> = out.split("@@").collect();
    assert_eq!(parts.len(), 6);
    assert!(parts[0].starts_with("-----BEGIN CERTIFICATE-----\n"));
    assert!(parts[1].starts_with("-----BEGIN RSA PRIVATE KEY-----\n"));
    assert!(parts[3].starts_with("-----BEGIN RSA PRIVATE KEY-----\n"));
    if fleet_testkit::tools::openssl().is_none() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("gotmpl-crypto-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp");
    let names = ["ca.pem", "ca.key", "c.pem", "c.key", "s.pem", "s.key"];
    for (n, p) in names.iter().zip(&parts) {
        std::fs::write(dir.join(n), p).expect("write");
    }
    let p = |n: &str| dir.join(n).to_string_lossy().to_string();
    let v = run(&["verify", "-CAfile", &p("ca.pem"), &p("c.pem")]);
    assert!(v.contains(": OK"), "{v}");
    let text = run(&["x509", "-in", &p("c.pem"), "-noout", "-text"]);
    assert!(
        text.contains("CN = svc.example") || text.contains("CN=svc.example"),
        "{text}"
    );
    assert!(
        text.contains("DNS:svc.example") && text.contains("DNS:svc.local"),
        "{text}"
    );
    assert!(text.contains("IP Address:10.0.0.1"), "{text}");
    assert!(text.contains("TLS Web Server Authentication"), "{text}");
    let ca_text = run(&["x509", "-in", &p("ca.pem"), "-noout", "-text"]);
    assert!(ca_text.contains("CA:TRUE"), "{ca_text}");
    assert!(ca_text.contains("Certificate Sign"), "{ca_text}");
    for k in ["ca.key", "c.key", "s.key"] {
        run(&["rsa", "-in", &p(k), "-check", "-noout"]);
    }
    // the key really belongs to the certificate
    let cert_pub = run(&["x509", "-in", &p("c.pem"), "-noout", "-pubkey"]);
    let key_pub = run(&["rsa", "-in", &p("c.key"), "-pubout"]);
    assert_eq!(
        cert_pub
            .lines()
            .filter(|l| !l.starts_with("writing"))
            .collect::<Vec<_>>(),
        key_pub
            .lines()
            .filter(|l| !l.starts_with("writing"))
            .collect::<Vec<_>>()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn private_keys_parse() {
    let out = render(r#"{{ genPrivateKey "ecdsa" }}@@{{ genPrivateKey "ed25519" }}"#);
    let parts: Vec<&str> = out.split("@@").collect();
    assert!(
        parts[0].starts_with("-----BEGIN EC PRIVATE KEY-----\n"),
        "{}",
        parts[0]
    );
    assert!(
        parts[1].starts_with("-----BEGIN PRIVATE KEY-----\n"),
        "{}",
        parts[1]
    );
    if fleet_testkit::tools::openssl().is_none() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("gotmpl-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp");
    for (k, p) in parts.iter().enumerate() {
        let f = dir.join(format!("k{k}.pem"));
        std::fs::write(&f, p).expect("write");
        let t = run(&["pkey", "-in", &f.to_string_lossy(), "-noout", "-text"]);
        assert!(
            t.contains("Private-Key") || t.contains("private-key") || t.contains("priv:"),
            "{t}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
