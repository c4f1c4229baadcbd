//! A smart-HTTP git server on loopback: real `git http-backend` (CGI) behind a tiny HTTP/1.1
//! front that requires basic auth, for testing credentials (`clientSecretName`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// A running server; stops when dropped.
pub struct GitHttpServer {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    stop: Arc<AtomicBool>,
    /// Requests refused with 401.
    pub refused: Arc<AtomicU64>,
}

impl GitHttpServer {
    /// Serves the repositories under `base` to `user`/`password` only.
    pub fn start(base: &Path, user: &str, password: &str) -> GitHttpServer {
        use base64::Engine;
        let listener = TcpListener::bind("127.0.0.1:0").expect("binding the git http server");
        let url = format!("http://{}", listener.local_addr().expect("local addr"));
        let stop = Arc::new(AtomicBool::new(false));
        let refused = Arc::new(AtomicU64::new(0));
        let want = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
        );
        let (s, r, base) = (stop.clone(), refused.clone(), base.to_path_buf());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let (want, base, r) = (want.clone(), base.clone(), r.clone());
                std::thread::spawn(move || {
                    let _ = serve(conn, &base, &want, &r);
                });
            }
        });
        GitHttpServer { url, stop, refused }
    }

    /// URL of repository `name`.
    pub fn repo_url(&self, name: &str) -> String {
        format!("{}/{name}", self.url)
    }
}

impl Drop for GitHttpServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(self.url.trim_start_matches("http://"));
    }
}

fn serve(conn: TcpStream, base: &Path, want: &str, refused: &AtomicU64) -> std::io::Result<()> {
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut out = conn;
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let target = parts.next().unwrap_or("").to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h == "\r\n" || h == "\n" {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    let header = |k: &str| headers.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    if header("authorization").as_deref() != Some(want) {
        refused.fetch_add(1, Ordering::Relaxed);
        out.write_all(b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"git\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")?;
        return Ok(());
    }
    let mut body = Vec::new();
    if header("transfer-encoding").is_some_and(|t| t.eq_ignore_ascii_case("chunked")) {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size)?;
            let n = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16)
                .unwrap_or(0);
            let mut chunk = vec![0; n + 2];
            reader.read_exact(&mut chunk)?;
            if n == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..n]);
        }
    } else if let Some(n) = header("content-length").and_then(|n| n.parse::<usize>().ok()) {
        body.resize(n, 0);
        reader.read_exact(&mut body)?;
    }
    let (path, query) = target.split_once('?').unwrap_or((target.as_str(), ""));
    let mut child = Command::new(git_bin())
        .arg("http-backend")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("GIT_PROJECT_ROOT", base)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("REQUEST_METHOD", &method)
        .env("PATH_INFO", path)
        .env("QUERY_STRING", query)
        .env("REMOTE_USER", "git")
        .env("REMOTE_ADDR", "127.0.0.1")
        .env("CONTENT_TYPE", header("content-type").unwrap_or_default())
        .env("CONTENT_LENGTH", body.len().to_string())
        .env("GIT_PROTOCOL", header("git-protocol").unwrap_or_default())
        .env(
            "HTTP_CONTENT_ENCODING",
            header("content-encoding").unwrap_or_default(),
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(&body)?;
    }
    let output = child.wait_with_output()?;
    let raw = output.stdout;
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|p| (p, 4))
        .or_else(|| raw.windows(2).position(|w| w == b"\n\n").map(|p| (p, 2)));
    let (head, payload) = match split {
        Some((p, n)) => (
            String::from_utf8_lossy(&raw[..p]).into_owned(),
            &raw[p + n..],
        ),
        None => (String::new(), &raw[..]),
    };
    let mut status = "200 OK".to_string();
    let mut resp = Vec::new();
    for l in head.lines() {
        if let Some(s) = l.strip_prefix("Status:") {
            status = s.trim().to_string();
        } else if !l.trim().is_empty() {
            resp.push(l.trim().to_string());
        }
    }
    write!(out, "HTTP/1.1 {status}\r\n")?;
    for h in resp {
        write!(out, "{h}\r\n")?;
    }
    write!(
        out,
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        payload.len()
    )?;
    out.write_all(payload)?;
    out.flush()
}

fn git_bin() -> PathBuf {
    crate::tools::git().unwrap_or_else(|| PathBuf::from("git"))
}
