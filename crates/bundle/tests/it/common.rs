//! What this crate's tests add to `fleet-testkit`: a tiny HTTP server on 127.0.0.1:0 serving
//! fixed bodies, rewriting fixture trees and tgz building.

#![allow(dead_code)]

pub use fleet_testkit::fs::{copy_dir, write};
pub use fleet_testkit::tools::shared_data;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Serves fixed bodies by path until dropped (the thread exits with the process).
pub struct Server {
    pub base: String,
    pub files: Arc<Mutex<BTreeMap<String, Vec<u8>>>>,
}

impl Server {
    pub fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let files: Arc<Mutex<BTreeMap<String, Vec<u8>>>> = Arc::default();
        let f2 = files.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut s) = stream else { continue };
                let mut buf = [0u8; 8192];
                let n = s.read(&mut buf).unwrap_or(0);
                let req = String::from_utf8_lossy(&buf[..n]).to_string();
                let path = req.split_whitespace().nth(1).unwrap_or("/").to_string();
                let body = f2.lock().unwrap().get(&path).cloned();
                let resp = match body {
                    Some(b) => {
                        let mut r = format!(
                            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                            b.len()
                        )
                        .into_bytes();
                        r.extend(b);
                        r
                    }
                    None => {
                        b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                            .to_vec()
                    }
                };
                let _ = s.write_all(&resp);
            }
        });
        Server { base, files }
    }

    pub fn put(&self, path: &str, body: Vec<u8>) {
        self.files.lock().unwrap().insert(path.to_string(), body);
    }
}

/// Replaces `from` with `to` in every file below `dir`.
pub fn rewrite(dir: &Path, from: &str, to: &str) {
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            rewrite(&e.path(), from, to);
        } else if let Ok(t) = std::fs::read_to_string(e.path())
            && t.contains(from)
        {
            std::fs::write(e.path(), t.replace(from, to)).unwrap();
        }
    }
}

/// Builds a `.tgz` from (path, content) pairs.
pub use fleet_testkit::helmrepo::tgz;
