//! macOS: no TLS stack is built (see the module header); `--tls-cert` is
//! refused before anything listens.

use std::path::Path;

/// No acceptor can exist on this platform.
#[derive(Debug, Clone)]
pub enum Acceptor {}

impl Acceptor {
    pub fn names(&self, _name: &str) -> bool {
        match *self {}
    }
}

pub fn acceptor(_cert: &Path, _key: &Path) -> anyhow::Result<Acceptor> {
    anyhow::bail!(
        "ccd web serves TLS itself on Linux only for now; on macOS put a TLS-terminating proxy in front (e.g. `tailscale serve`, then ccd web --behind-proxy https://…) or forward a loopback ccd web over ssh (ssh -L 7878:127.0.0.1:7878 this-mac)"
    )
}

pub async fn accept(
    a: &Acceptor,
    _stream: tokio::net::TcpStream,
) -> std::io::Result<tokio::net::TcpStream> {
    match *a {}
}
