//! Sprig's hashing and crypto functions with real cryptography: certificates and keys (rcgen on
//! aws-lc-rs), bcrypt/htpasswd, Master Password's derivePassword (scrypt + HMAC-SHA256) and
//! AES-CBC encryptAES/decryptAES.

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine as _;

use super::super::{Map, Ty, i, reg, s};
use super::strval;
use crate::value::Value;

/// SHA-1 digest.
pub(crate) fn sha1(data: &[u8]) -> Vec<u8> {
    use sha1::Digest as _;
    sha1::Sha1::digest(data).to_vec()
}

/// PEM armour with 64-column lines, like Go's pem.EncodeToMemory.
fn pem(label: &str, der: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// Reads one DER TLV: (tag, content, rest).
fn tlv(b: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let tag = *b.first()?;
    let l0 = *b.get(1)? as usize;
    let (len, hdr) = if l0 < 0x80 {
        (l0, 2)
    } else {
        let n = l0 & 0x7f;
        if n == 0 || n > 4 {
            return None;
        }
        let mut len = 0usize;
        for k in 0..n {
            len = (len << 8) | *b.get(2 + k)? as usize;
        }
        (len, 2 + n)
    };
    let content = b.get(hdr..hdr + len)?;
    Some((tag, content, &b[hdr + len..]))
}

fn der(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let n = content.len();
    if n < 0x80 {
        out.push(n as u8);
    } else {
        let bytes: Vec<u8> = n
            .to_be_bytes()
            .iter()
            .copied()
            .skip_while(|&x| x == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(content);
    out
}

/// The private key inside a PKCS#8 PrivateKeyInfo.
fn pkcs8_inner(p8: &[u8]) -> Option<&[u8]> {
    let (_, seq, _) = tlv(p8)?;
    let (_, _version, rest) = tlv(seq)?;
    let (_, _alg, rest) = tlv(rest)?;
    let (tag, key, _) = tlv(rest)?;
    (tag == 0x04).then_some(key)
}

/// OID 1.2.840.10045.3.1.7 (prime256v1).
const P256_OID: [u8; 10] = [0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];

/// PEM for a key the way Go's sprig writes it: PKCS#1 for RSA, SEC1 for ECDSA, PKCS#8 otherwise.
fn key_pem(kp: &rcgen::KeyPair) -> String {
    let p8 = kp.serialize_der();
    let alg = kp.algorithm();
    if (alg == &rcgen::PKCS_RSA_SHA256
        || alg == &rcgen::PKCS_RSA_SHA384
        || alg == &rcgen::PKCS_RSA_SHA512)
        && let Some(inner) = pkcs8_inner(&p8)
    {
        return pem("RSA PRIVATE KEY", inner);
    }
    if alg == &rcgen::PKCS_ECDSA_P256_SHA256
        && let Some(inner) = pkcs8_inner(&p8)
        && let Some((_, seq, _)) = tlv(inner)
    {
        // ECPrivateKey: version, privateKey, [0] parameters, [1] publicKey
        let mut body = Vec::new();
        let mut rest = seq;
        let mut public = None;
        while let Some((tag, content, r)) = tlv(rest) {
            match tag {
                0x02 | 0x04 => body.extend(der(tag, content)),
                0xa1 => public = Some(content.to_vec()),
                _ => {}
            }
            rest = r;
        }
        body.extend(der(0xa0, &P256_OID));
        if let Some(p) = public {
            body.extend(der(0xa1, &p));
        }
        return pem("EC PRIVATE KEY", &der(0x30, &body));
    }
    if alg == &rcgen::PKCS_ED25519
        && let Some(inner) = pkcs8_inner(&p8)
    {
        // Go writes PKCS#8 v1 (no embedded public key): version 0, id-Ed25519, CurvePrivateKey.
        let mut body = der(0x02, &[0]);
        body.extend(der(0x30, &[0x06, 0x03, 0x2b, 0x65, 0x70]));
        body.extend(der(0x04, inner));
        return pem("PRIVATE KEY", &der(0x30, &body));
    }
    pem("PRIVATE KEY", &p8)
}

fn rsa2048() -> Result<rcgen::KeyPair, String> {
    rcgen::KeyPair::generate_rsa_for(&rcgen::PKCS_RSA_SHA256, rcgen::RsaKeySize::_2048)
        .map_err(|e| format!("error generating rsa key: {e}"))
}

fn parse_key(pem_text: &str) -> Result<rcgen::KeyPair, String> {
    rcgen::KeyPair::from_pem(pem_text).map_err(|e| format!("error parsing private key: {e}"))
}

fn cert_value(cert: &str, key: &str) -> Value {
    let mut m = BTreeMap::new();
    m.insert("Cert".to_string(), Value::from(cert));
    m.insert("Key".to_string(), Value::from(key));
    Value::Map(Arc::new(m))
}

/// sprig's getBaseCertTemplate.
fn base_params(
    cn: &str,
    ips: &Value,
    dns: &Value,
    days: i64,
) -> Result<rcgen::CertificateParams, String> {
    let mut p = rcgen::CertificateParams::default();
    p.distinguished_name = rcgen::DistinguishedName::new();
    p.distinguished_name.push(rcgen::DnType::CommonName, cn);
    if let Value::List(l) = ips {
        for ip in l.iter() {
            let Value::String(st) = ip else {
                return Err(format!("error processing ip address: {}", strval(ip)));
            };
            let addr: std::net::IpAddr =
                st.parse().map_err(|_| format!("error parsing ip: {st}"))?;
            p.subject_alt_names.push(rcgen::SanType::IpAddress(addr));
        }
    }
    if let Value::List(l) = dns {
        for d in l.iter() {
            let Value::String(st) = d else {
                return Err(format!(
                    "error processing alternate dns name: {}",
                    strval(d)
                ));
            };
            let name =
                rcgen::string::Ia5String::try_from(st.to_string()).map_err(|e| e.to_string())?;
            p.subject_alt_names.push(rcgen::SanType::DnsName(name));
        }
    }
    let now = std::time::SystemTime::now();
    let secs = now
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    p.not_before = rcgen::date_time_ymd(1970, 1, 1) + time_secs(secs);
    p.not_after =
        rcgen::date_time_ymd(1970, 1, 1) + time_secs(secs + days.clamp(-100_000, 100_000) * 86_400);
    let mut serial = [0u8; 16];
    rand::Rng::fill(&mut rand::thread_rng(), &mut serial[..]);
    serial[0] &= 0x7f;
    p.serial_number = Some(rcgen::SerialNumber::from_slice(&serial));
    p.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyEncipherment,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    p.extended_key_usages = vec![
        rcgen::ExtendedKeyUsagePurpose::ServerAuth,
        rcgen::ExtendedKeyUsagePurpose::ClientAuth,
    ];
    p.is_ca = rcgen::IsCa::ExplicitNoCa;
    Ok(p)
}

fn time_secs(s: i64) -> std::time::Duration {
    std::time::Duration::from_secs(s.max(0) as u64)
}

fn gen_ca(cn: &str, days: i64, key: Option<&str>) -> Result<Value, String> {
    let kp = match key {
        Some(k) => parse_key(k)?,
        None => rsa2048()?,
    };
    let mut p = base_params(cn, &Value::Nil, &Value::Nil, days)?;
    p.key_usages.push(rcgen::KeyUsagePurpose::KeyCertSign);
    p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let cert = p
        .self_signed(&kp)
        .map_err(|e| format!("error creating certificate: {e}"))?;
    Ok(cert_value(&cert.pem(), &key_pem(&kp)))
}

fn gen_self_signed(
    cn: &str,
    ips: &Value,
    dns: &Value,
    days: i64,
    key: Option<&str>,
) -> Result<Value, String> {
    let kp = match key {
        Some(k) => parse_key(k)?,
        None => rsa2048()?,
    };
    let p = base_params(cn, ips, dns, days)?;
    let cert = p
        .self_signed(&kp)
        .map_err(|e| format!("error creating certificate: {e}"))?;
    Ok(cert_value(&cert.pem(), &key_pem(&kp)))
}

fn gen_signed(
    cn: &str,
    ips: &Value,
    dns: &Value,
    days: i64,
    ca: &Value,
    key: Option<&str>,
) -> Result<Value, String> {
    let (ca_cert, ca_key) = match ca {
        Value::Map(m) => (
            m.get("Cert").map(strval).unwrap_or_default(),
            m.get("Key").map(strval).unwrap_or_default(),
        ),
        _ => return Err("error parsing CA: not a certificate".into()),
    };
    let ca_kp = parse_key(&ca_key).map_err(|e| format!("error decoding CA key: {e}"))?;
    let issuer = rcgen::Issuer::from_ca_cert_pem(&ca_cert, ca_kp)
        .map_err(|e| format!("error parsing CA certificate: {e}"))?;
    let kp = match key {
        Some(k) => parse_key(k)?,
        None => rsa2048()?,
    };
    let p = base_params(cn, ips, dns, days)?;
    let cert = p
        .signed_by(&kp, &issuer)
        .map_err(|e| format!("error creating certificate: {e}"))?;
    Ok(cert_value(&cert.pem(), &key_pem(&kp)))
}

fn gen_private_key(typ: &str) -> String {
    let kp = match typ {
        "rsa" => {
            rcgen::KeyPair::generate_rsa_for(&rcgen::PKCS_RSA_SHA256, rcgen::RsaKeySize::_4096)
        }
        "ecdsa" => rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256),
        "ed25519" => rcgen::KeyPair::generate_for(&rcgen::PKCS_ED25519),
        "dsa" => return "failed to generate private key: DSA keys are not supported".to_string(),
        other => return format!("Unknown type {other}"),
    };
    match kp {
        Ok(k) => key_pem(&k),
        Err(e) => format!("failed to generate private key: {e}"),
    }
}

const MP_SEED: &str = "com.lyndir.masterpassword";

fn mp_templates(t: &str) -> Option<&'static [&'static str]> {
    Some(match t {
        "maximum" => &["anoxxxxxxxxxxxxxxxxx", "axxxxxxxxxxxxxxxxxno"],
        "long" => &[
            "CvcvnoCvcvCvcv",
            "CvcvCvcvnoCvcv",
            "CvcvCvcvCvcvno",
            "CvccnoCvcvCvcv",
            "CvccCvcvnoCvcv",
            "CvccCvcvCvcvno",
            "CvcvnoCvccCvcv",
            "CvcvCvccnoCvcv",
            "CvcvCvccCvcvno",
            "CvcvnoCvcvCvcc",
            "CvcvCvcvnoCvcc",
            "CvcvCvcvCvccno",
            "CvccnoCvccCvcv",
            "CvccCvccnoCvcv",
            "CvccCvccCvcvno",
            "CvcvnoCvccCvcc",
            "CvcvCvccnoCvcc",
            "CvcvCvccCvccno",
            "CvccnoCvcvCvcc",
            "CvccCvcvnoCvcc",
            "CvccCvcvCvccno",
        ],
        "medium" => &["CvcnoCvc", "CvcCvcno"],
        "short" => &["Cvcn"],
        "basic" => &["aaanaaan", "aannaaan", "aaannaaa"],
        "pin" => &["nnnn"],
        _ => return None,
    })
}

fn mp_chars(c: u8) -> &'static [u8] {
    match c {
        b'V' => b"AEIOU",
        b'C' => b"BCDFGHJKLMNPQRSTVWXYZ",
        b'v' => b"aeiou",
        b'c' => b"bcdfghjklmnpqrstvwxyz",
        b'A' => b"AEIOUBCDFGHJKLMNPQRSTVWXYZ",
        b'a' => b"AEIOUaeiouBCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz",
        b'n' => b"0123456789",
        b'o' => b"@&%?,=[]_:-+*$#!'^~;()/.",
        _ => b"AEIOUaeiouBCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz0123456789!@#$%^&*()",
    }
}

/// Master Password algorithm (sprig's derivePassword).
fn derive_password(counter: u32, typ: &str, password: &str, user: &str, site: &str) -> String {
    use hmac::Mac as _;
    let Some(templates) = mp_templates(typ) else {
        return format!("cannot find password template {typ}");
    };
    let mut salt = MP_SEED.as_bytes().to_vec();
    salt.extend((user.len() as u32).to_be_bytes());
    salt.extend(user.as_bytes());
    let mut key = [0u8; 64];
    let Ok(params) = scrypt::Params::new(15, 8, 2, 64) else {
        return "failed to derive password: bad scrypt parameters".into();
    };
    if let Err(e) = scrypt::scrypt(password.as_bytes(), &salt, &params, &mut key) {
        return format!("failed to derive password: {e}");
    }
    let mut msg = MP_SEED.as_bytes().to_vec();
    msg.extend((site.len() as u32).to_be_bytes());
    msg.extend(site.as_bytes());
    msg.extend(counter.to_be_bytes());
    let Ok(mut mac) = hmac::Hmac::<sha2::Sha256>::new_from_slice(&key) else {
        return "failed to derive password: bad key".into();
    };
    mac.update(&msg);
    let seed = mac.finalize().into_bytes();
    let tmpl = templates[seed[0] as usize % templates.len()].as_bytes();
    tmpl.iter()
        .enumerate()
        .map(|(k, &c)| {
            let chars = mp_chars(c);
            chars[seed[(k + 1) % seed.len()] as usize % chars.len()] as char
        })
        .collect()
}

fn bcrypt_hash(input: &str) -> String {
    match bcrypt::hash_with_result(input, 10) {
        Ok(h) => h.format_for_version(bcrypt::Version::TwoA),
        Err(e) => format!("failed to encrypt string with bcrypt: {e}"),
    }
}

fn aes_key(password: &str) -> [u8; 32] {
    let mut key = [0u8; 32];
    let b = password.as_bytes();
    let n = b.len().min(32);
    key[..n].copy_from_slice(&b[..n]);
    key
}

fn encrypt_aes(password: &str, plaintext: &str) -> Result<String, String> {
    use aes::cipher::{BlockEncryptMut, KeyIvInit, block_padding::Pkcs7};
    if plaintext.is_empty() {
        return Ok(String::new());
    }
    let mut iv = [0u8; 16];
    rand::Rng::fill(&mut rand::thread_rng(), &mut iv[..]);
    let enc = cbc::Encryptor::<aes::Aes256>::new(&aes_key(password).into(), &iv.into());
    let ct = enc.encrypt_padded_vec_mut::<Pkcs7>(plaintext.as_bytes());
    let mut out = iv.to_vec();
    out.extend(ct);
    Ok(base64::engine::general_purpose::STANDARD.encode(out))
}

fn decrypt_aes(password: &str, crypt: &str) -> Result<String, String> {
    use aes::cipher::{BlockDecryptMut, KeyIvInit, block_padding::Pkcs7};
    if crypt.is_empty() {
        return Ok(String::new());
    }
    let data = base64::engine::general_purpose::STANDARD
        .decode(crypt)
        .map_err(|e| e.to_string())?;
    if data.len() < 16 || data.len() % 16 != 0 {
        return Err("crypto/cipher: input not full blocks".into());
    }
    let (iv, ct) = data.split_at(16);
    let mut ivb = [0u8; 16];
    ivb.copy_from_slice(iv);
    let dec = cbc::Decryptor::<aes::Aes256>::new(&aes_key(password).into(), &ivb.into());
    let pt = dec
        .decrypt_padded_vec_mut::<Pkcs7>(ct)
        .map_err(|_| "invalid padding".to_string())?;
    Ok(String::from_utf8_lossy(&pt).into_owned())
}

pub(crate) fn register(m: &mut Map) {
    use Ty::*;
    reg(m, "genPrivateKey", &[Str], None, |_, a| {
        Ok(Value::from(gen_private_key(s(&a[0]))))
    });
    reg(m, "genCA", &[Str, Int], None, |_, a| {
        gen_ca(s(&a[0]), i(&a[1]), None)
    });
    reg(m, "genCAWithKey", &[Str, Int, Str], None, |_, a| {
        gen_ca(s(&a[0]), i(&a[1]), Some(s(&a[2])))
    });
    reg(
        m,
        "genSelfSignedCert",
        &[Str, List, List, Int],
        None,
        |_, a| gen_self_signed(s(&a[0]), &a[1], &a[2], i(&a[3]), None),
    );
    reg(
        m,
        "genSelfSignedCertWithKey",
        &[Str, List, List, Int, Str],
        None,
        |_, a| gen_self_signed(s(&a[0]), &a[1], &a[2], i(&a[3]), Some(s(&a[4]))),
    );
    reg(
        m,
        "genSignedCert",
        &[Str, List, List, Int, Any],
        None,
        |_, a| gen_signed(s(&a[0]), &a[1], &a[2], i(&a[3]), &a[4], None),
    );
    reg(
        m,
        "genSignedCertWithKey",
        &[Str, List, List, Int, Any, Str],
        None,
        |_, a| gen_signed(s(&a[0]), &a[1], &a[2], i(&a[3]), &a[4], Some(s(&a[5]))),
    );
    reg(m, "buildCustomCert", &[Str, Str], None, |_, a| {
        let dec = |x: &str, what: &str| {
            base64::engine::general_purpose::STANDARD
                .decode(x)
                .map_err(|_| format!("unable to decode base64 {what}"))
                .map(|b| String::from_utf8_lossy(&b).into_owned())
        };
        let cert = dec(s(&a[0]), "certificate")?;
        let key = dec(s(&a[1]), "private key")?;
        parse_key(&key)?;
        rcgen::Issuer::from_ca_cert_pem(&cert, parse_key(&key)?)
            .map_err(|e| format!("error parsing certificate: {e}"))?;
        Ok(cert_value(&cert, &key))
    });
    reg(
        m,
        "derivePassword",
        &[Int, Str, Str, Str, Str],
        None,
        |_, a| {
            Ok(Value::from(derive_password(
                i(&a[0]) as u32,
                s(&a[1]),
                s(&a[2]),
                s(&a[3]),
                s(&a[4]),
            )))
        },
    );
    reg(m, "bcrypt", &[Str], None, |_, a| {
        Ok(Value::from(bcrypt_hash(s(&a[0]))))
    });
    reg(m, "htpasswd", &[Str, Str], None, |_, a| {
        let user = s(&a[0]);
        if user.contains(':') {
            return Ok(Value::from(format!("invalid username: {user}")));
        }
        Ok(Value::from(format!("{user}:{}", bcrypt_hash(s(&a[1])))))
    });
    reg(m, "encryptAES", &[Str, Str], None, |_, a| {
        Ok(Value::from(encrypt_aes(s(&a[0]), s(&a[1]))?))
    });
    reg(m, "decryptAES", &[Str, Str], None, |_, a| {
        Ok(Value::from(decrypt_aes(s(&a[0]), s(&a[1]))?))
    });
    reg(m, "randBytes", &[Int], None, |_, a| {
        let n = i(&a[0]).clamp(0, 1 << 20) as usize;
        let mut b = vec![0u8; n];
        rand::Rng::fill(&mut rand::thread_rng(), &mut b[..]);
        Ok(Value::from(
            base64::engine::general_purpose::STANDARD.encode(b),
        ))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aes_roundtrip() {
        let c = encrypt_aes("secretkey", "plaintext").unwrap_or_default();
        assert_eq!(
            decrypt_aes("secretkey", &c).unwrap_or_default(),
            "plaintext"
        );
    }
}
