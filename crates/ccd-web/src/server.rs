//! Where and how `ccd web` listens: the checked plan ([`Plan`]: the
//! address, what `Host`/`Origin` are this server's, TLS or a proxy), the
//! TLS acceptor, and the accept loop.
//!
//! The accept loop owns the listener. Each accepted connection takes a
//! slot of [`limits::CONNECTIONS`] (none left: the connection is closed at
//! once) and runs in a task of its own: the TLS handshake (bounded by
//! [`limits::TLS_HANDSHAKE`]), then hyper's http1 connection with
//! upgrades and a header read timeout ([`limits::HEADER_READ`]). The
//! client's address travels to the handlers as a [`Peer`] extension. A
//! WebSocket leaves its connection's slot when it upgrades and holds one
//! of [`limits::WEBSOCKETS`] instead (`ws`).

use crate::limits;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use tokio::sync::Semaphore;
use tower::ServiceExt;

/// The client's address, as the connection saw it.
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub IpAddr);

/// What the options say about listening, checked.
#[derive(Debug, Clone)]
pub struct Plan {
    pub listen: SocketAddr,
    pub read_only: bool,
    /// The proxy's origin (`https://host[:port]`), normalized.
    pub proxy: Option<ProxyOrigin>,
    pub tls: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyOrigin {
    /// `https://host[:port]`, lowercase, no path.
    pub origin: String,
    /// `host[:port]` as a browser sends it in `Host`.
    pub host: String,
}

/// What is wrong with the options.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("--listen {0}: not ADDR:PORT (e.g. 127.0.0.1:7878)")]
    BadListen(String),
    #[error("refusing to listen on {0} without TLS: beyond loopback, every local network would see the token and the session cookie in clear. Give --tls-cert and --tls-key (config web_tls_cert/web_tls_key), or --behind-proxy https://… for a TLS-terminating proxy (e.g. tailscale serve) — or listen on 127.0.0.1 and forward the port over ssh")]
    ClearBeyondLoopback(SocketAddr),
    #[error("--behind-proxy {0}: must be an https:// origin (scheme and host, no path)")]
    BadProxy(String),
    #[error("--tls-cert and --tls-key go together")]
    HalfTls,
}

impl Plan {
    pub fn from_options(opts: &crate::Options) -> Result<Self, PlanError> {
        let text = opts.listen.as_deref().unwrap_or(crate::DEFAULT_LISTEN);
        let listen: SocketAddr = text
            .parse()
            .map_err(|_| PlanError::BadListen(text.to_string()))?;
        let tls = match (&opts.tls_cert, &opts.tls_key) {
            (Some(_), Some(_)) => true,
            (None, None) => false,
            _ => return Err(PlanError::HalfTls),
        };
        let proxy = opts.behind_proxy.as_deref().map(parse_proxy).transpose()?;
        if !listen.ip().is_loopback() && !tls && proxy.is_none() {
            return Err(PlanError::ClearBeyondLoopback(listen));
        }
        Ok(Self {
            listen,
            read_only: opts.read_only,
            proxy,
            tls,
        })
    }

    fn scheme(&self) -> &'static str {
        if self.tls {
            "https"
        } else {
            "http"
        }
    }

    /// The URL that logs in: the proxy's when there is one.
    pub fn login_url(&self, bound: SocketAddr, token: &str) -> String {
        match &self.proxy {
            Some(p) => format!("{}/?token={token}", p.origin),
            None => format!("{}://{}/?token={token}", self.scheme(), url_host(bound)),
        }
    }

    /// `Host` values that name this server, for the bound address.
    pub fn hosts(&self, bound: SocketAddr) -> Vec<String> {
        let port = bound.port();
        let mut v = vec![url_host(bound), format!("localhost:{port}")];
        if bound.ip().is_unspecified() {
            // 0.0.0.0 / [::]: the loopback names still reach it.
            v.push(format!("127.0.0.1:{port}"));
            v.push(format!("[::1]:{port}"));
        }
        if let Some(p) = &self.proxy {
            v.push(p.host.clone());
        }
        v
    }

    /// Origins a page of this server has.
    pub fn origins(&self, bound: SocketAddr) -> Vec<String> {
        let mut v: Vec<String> = self
            .hosts(bound)
            .into_iter()
            .filter(|h| self.proxy.as_ref().is_none_or(|p| *h != p.host))
            .map(|h| format!("{}://{h}", self.scheme()))
            .collect();
        if let Some(p) = &self.proxy {
            v.push(p.origin.clone());
        }
        v
    }

    /// Cookies get `Secure` when the page is reached over https.
    pub fn secure_cookie(&self) -> bool {
        self.tls || self.proxy.is_some()
    }
}

/// `ip:port` as it appears in a URL (IPv6 in brackets).
fn url_host(a: SocketAddr) -> String {
    match a {
        SocketAddr::V4(v4) => format!("{}:{}", v4.ip(), v4.port()),
        SocketAddr::V6(v6) => format!("[{}]:{}", v6.ip(), v6.port()),
    }
}

fn parse_proxy(text: &str) -> Result<ProxyOrigin, PlanError> {
    let bad = || PlanError::BadProxy(text.to_string());
    let lower = text.trim().to_ascii_lowercase();
    let rest = lower.strip_prefix("https://").ok_or_else(bad)?;
    let host = rest.strip_suffix('/').unwrap_or(rest);
    if host.is_empty()
        || host.contains(['/', '?', '#', '@', ' '])
        || !host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-.:[]_".contains(&b))
    {
        return Err(bad());
    }
    // A browser leaves the default port out of Host and Origin.
    let host = host.strip_suffix(":443").unwrap_or(host).to_string();
    Ok(ProxyOrigin {
        origin: format!("https://{host}"),
        host,
    })
}

/// Accepts and serves connections until the process ends.
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    tls: Option<crate::tls::Acceptor>,
) {
    let slots = Arc::new(Semaphore::new(limits::CONNECTIONS));
    loop {
        let (stream, addr) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                // EMFILE and the like: wait a moment rather than spin.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tracing::warn!(peer = %addr, limit = limits::CONNECTIONS, "over the connection limit: closed");
            drop(stream);
            continue;
        };
        let app = app.clone();
        let tls = tls.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let _ = stream.set_nodelay(true);
            let peer = Peer(addr.ip());
            let svc = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
                req.extensions_mut().insert(peer);
                app.clone().oneshot(req)
            });
            let http = {
                let mut b = hyper::server::conn::http1::Builder::new();
                b.timer(TokioTimer::new())
                    .header_read_timeout(limits::HEADER_READ);
                b
            };
            let served = match tls {
                Some(acceptor) => {
                    match tokio::time::timeout(
                        limits::TLS_HANDSHAKE,
                        crate::tls::accept(&acceptor, stream),
                    )
                    .await
                    {
                        Ok(Ok(s)) => {
                            http.serve_connection(TokioIo::new(s), svc)
                                .with_upgrades()
                                .await
                        }
                        Ok(Err(e)) => {
                            tracing::debug!(peer = %addr, error = %e, "TLS handshake failed");
                            return;
                        }
                        Err(_) => {
                            tracing::debug!(peer = %addr, "TLS handshake timed out");
                            return;
                        }
                    }
                }
                None => {
                    http.serve_connection(TokioIo::new(stream), svc)
                        .with_upgrades()
                        .await
                }
            };
            if let Err(e) = served {
                tracing::debug!(peer = %addr, error = %e, "connection ended with an error");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn opts(listen: &str) -> crate::Options {
        crate::Options {
            listen: Some(listen.into()),
            machines: vec![],
            read_only: false,
            revoke: false,
            tls_cert: None,
            tls_key: None,
            behind_proxy: None,
            print_url: false,
            state_dir: "/nonexistent".into(),
            socket_dir: ccd_client::SocketDir::resolve(Some(Path::new("/nonexistent"))),
            daemon: ccd_client::DaemonCommand {
                program: "/bin/false".into(),
                args: vec![],
            },
        }
    }

    #[test]
    fn beyond_loopback_needs_tls_or_a_proxy() {
        assert!(Plan::from_options(&opts("127.0.0.1:0")).is_ok());
        assert!(Plan::from_options(&opts("[::1]:0")).is_ok());
        let e = Plan::from_options(&opts("0.0.0.0:7878")).unwrap_err();
        assert!(matches!(e, PlanError::ClearBeyondLoopback(_)), "{e}");
        let mut o = opts("0.0.0.0:7878");
        o.behind_proxy = Some("https://box.tailnet.ts.net".into());
        let p = Plan::from_options(&o).unwrap();
        assert!(p.secure_cookie());
        let mut o = opts("0.0.0.0:7878");
        o.tls_cert = Some("c".into());
        assert!(matches!(
            Plan::from_options(&o).unwrap_err(),
            PlanError::HalfTls
        ));
        o.tls_key = Some("k".into());
        assert!(Plan::from_options(&o).unwrap().tls);
        assert!(Plan::from_options(&opts("localhost")).is_err());
    }

    #[test]
    fn proxy_origins_are_https_hosts_only() {
        assert_eq!(
            parse_proxy("https://Box.ts.net:443/").unwrap(),
            ProxyOrigin {
                origin: "https://box.ts.net".into(),
                host: "box.ts.net".into()
            }
        );
        assert!(parse_proxy("http://box").is_err());
        assert!(parse_proxy("https://box/path").is_err());
        assert!(parse_proxy("https://a@box").is_err());
        assert!(parse_proxy("https://").is_err());
    }

    #[test]
    fn hosts_and_origins_of_a_loopback_server() {
        let p = Plan::from_options(&opts("127.0.0.1:0")).unwrap();
        let bound: SocketAddr = "127.0.0.1:4000".parse().unwrap();
        assert_eq!(p.hosts(bound), vec!["127.0.0.1:4000", "localhost:4000"]);
        assert_eq!(
            p.origins(bound),
            vec!["http://127.0.0.1:4000", "http://localhost:4000"]
        );
        assert_eq!(p.login_url(bound, "ab"), "http://127.0.0.1:4000/?token=ab");
    }
}
