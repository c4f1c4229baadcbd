//! A Helm chart repository over plain HTTP on loopback that demands basic auth: `index.yaml`
//! and one archive per chart version, built from the files a test gives. Requests without the
//! right credentials get 401 and are counted.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use base64::Engine;

/// A running repository (its thread ends with the test process).
pub struct HelmRepo {
    /// `http://127.0.0.1:PORT`
    pub url: String,
    refused: Arc<AtomicU64>,
}

/// A `.tgz` of `files` (path inside the archive, content).
pub fn tgz(files: &[(String, Vec<u8>)]) -> Vec<u8> {
    let enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut ar = tar::Builder::new(enc);
    for (p, d) in files {
        let mut h = tar::Header::new_gnu();
        h.set_size(d.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        ar.append_data(&mut h, p, &d[..]).expect("tar entry");
    }
    ar.into_inner().expect("tar").finish().expect("gzip")
}

impl HelmRepo {
    /// Serves chart `name` at `version` with `templates` (file name, content) and a Chart.yaml,
    /// to clients that send `user`:`password`.
    pub fn start(
        user: &str,
        password: &str,
        name: &str,
        version: &str,
        templates: &[(&str, &str)],
    ) -> HelmRepo {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let mut files = vec![(
            format!("{name}/Chart.yaml"),
            format!("apiVersion: v2\nname: {name}\nversion: {version}\n").into_bytes(),
        )];
        for (f, c) in templates {
            files.push((format!("{name}/templates/{f}"), c.as_bytes().to_vec()));
        }
        let archive = tgz(&files);
        let archive_path = format!("/charts/{name}-{version}.tgz");
        let index = format!(
            "apiVersion: v1\nentries:\n  {name}:\n  - name: {name}\n    version: {version}\n    urls: [charts/{name}-{version}.tgz]\n"
        );
        let want = format!(
            "basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
        );
        let refused = Arc::new(AtomicU64::new(0));
        let counter = refused.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut s) = stream else { continue };
                let mut req = Vec::new();
                let mut buf = [0u8; 4096];
                while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => req.extend_from_slice(&buf[..n]),
                    }
                }
                let req = String::from_utf8_lossy(&req).to_string();
                let path = req.split_whitespace().nth(1).unwrap_or("/").to_string();
                let authorized = req.lines().any(|l| {
                    l.split_once(':').is_some_and(|(k, v)| {
                        k.eq_ignore_ascii_case("authorization")
                            && v.trim().to_ascii_lowercase().starts_with("basic ")
                            && v.trim()[6..] == want[6..]
                    })
                });
                let (status, body): (&str, Vec<u8>) = if !authorized {
                    counter.fetch_add(1, Ordering::Relaxed);
                    ("401 Unauthorized", b"unauthorized\n".to_vec())
                } else if path == "/index.yaml" {
                    ("200 OK", index.clone().into_bytes())
                } else if path == archive_path {
                    ("200 OK", archive.clone())
                } else {
                    ("404 Not Found", Vec::new())
                };
                let mut resp = format!(
                    "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\nWWW-Authenticate: Basic realm=\"charts\"\r\n\r\n",
                    body.len()
                )
                .into_bytes();
                resp.extend(body);
                let _ = s.write_all(&resp);
            }
        });
        HelmRepo { url, refused }
    }

    /// Requests refused for want of the right credentials so far.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }
}
