//! `fleet server`: the embedded Kubernetes-compatible API server over HTTPS, with its own CA and an
//! admin kubeconfig in the data directory.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Args;
use fleet_apiserver::app::{ApiServer, ApiServerConfig};
use fleet_apiserver::auth::{Authenticator, UserInfo};
use fleet_apiserver::pki::{self, Pki};
use fleet_apiserver::serve::{self, ServeOptions};
use fleet_apiserver::store::StoreConfig;

/// Flags of `fleet server` (the DESIGN.md contract).
#[derive(Args, Debug)]
pub struct ServerArgs {
    /// Directory for the store, the CA and the admin kubeconfig (created when missing).
    #[arg(long, value_name = "DIR")]
    pub data_dir: PathBuf,
    /// Address to listen on; port 0 picks a free port (the `ready` line shows it).
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:6443")]
    pub listen: String,
    /// Serve the API only, without the manager controllers.
    #[arg(long)]
    pub no_controllers: bool,
}

/// The SQLite file inside the data directory.
pub const STORE_FILE: &str = "store.db";
/// The admin kubeconfig inside the data directory.
pub const KUBECONFIG_FILE: &str = "kubeconfig";

/// Runs the server until SIGTERM/SIGINT.
pub fn run(args: ServerArgs) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let result = rt.block_on(serve_until_signal(args));
    // Dropping the runtime drops every task still holding the API server, which closes the store
    // (its writer thread finishes the queue and checkpoints the WAL).
    drop(rt);
    result
}

/// The host part of `HOST:PORT` (brackets removed), for the serving certificate's names.
pub fn listen_host(listen: &str) -> anyhow::Result<String> {
    let (host, port) = listen
        .rsplit_once(':')
        .with_context(|| format!("--listen {listen:?}: expected HOST:PORT"))?;
    if port.parse::<u16>().is_err() {
        bail!("--listen {listen:?}: port {port:?} is not a number in 0..=65535");
    }
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        bail!("--listen {listen:?}: missing host (use 0.0.0.0:PORT for every interface)");
    }
    Ok(host.to_string())
}

async fn serve_until_signal(args: ServerArgs) -> anyhow::Result<()> {
    let host = listen_host(&args.listen)?;
    let pki = Pki::load_or_create(&args.data_dir, std::slice::from_ref(&host))
        .context("preparing the server's certificates")?;
    let tls = pki.server_tls_config()?;

    let store = StoreConfig::file(args.data_dir.join(STORE_FILE));
    let mut cfg = ApiServerConfig::with_store(store);
    cfg.service_accounts.key_dir = Some(args.data_dir.clone());
    cfg.service_accounts.ca_pem = Some(pki.ca_cert_pem().to_string());
    let api = ApiServer::new(cfg)
        .await
        .with_context(|| format!("opening the store in {}", args.data_dir.display()))?;

    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .with_context(|| format!("--listen {}: cannot listen", args.listen))?;
    let addr: SocketAddr = listener.local_addr().context("reading the bound address")?;
    let url = pki::server_url(addr);
    let kubeconfig = args.data_dir.join(KUBECONFIG_FILE);
    pki.write_admin_kubeconfig(&kubeconfig, &url)?;

    let admin = UserInfo::authenticated(pki::ADMIN_USER, &[pki::ADMIN_GROUP]);
    let authenticator = Authenticator::new(vec![(pki.admin_token().to_string(), admin)])
        .with_verifier(api.service_account_authenticator());
    let app = serve::with_authentication(api.router(), authenticator);

    if !args.no_controllers {
        tracing::debug!("manager controllers are not part of this build yet; serving the API only");
    }
    let server = tokio::spawn(serve::serve(
        listener,
        tls,
        app,
        serve::shutdown_signal(),
        ServeOptions::default(),
    ));
    tracing::info!(%url, kubeconfig = %kubeconfig.display(), "serving");
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "ready {url}").context("writing the ready line")?;
        out.flush().context("writing the ready line")?;
    }
    server
        .await
        .context("server task failed")?
        .context("serving")?;
    drop(api);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_host_parsing() {
        assert_eq!(listen_host("127.0.0.1:0").unwrap(), "127.0.0.1");
        assert_eq!(listen_host("[::1]:6443").unwrap(), "::1");
        assert_eq!(listen_host("example.test:1").unwrap(), "example.test");
        assert!(listen_host("6443").is_err());
        assert!(listen_host(":6443").is_err());
        assert!(listen_host("h:99999").is_err());
    }
}
