//! The `webhook` sink: an HTTPS POST of the notification's JSON
//! (`Content-Type: application/json`) to the `webhook` URL.
//!
//! Bounds (never blocking its caller): [`WebhookSink::send`] only queues
//! (at most [`QUEUE`] waiting, more are dropped and counted); one worker
//! task sends them in turn; each attempt (connect, TLS, request, response
//! head) is bounded by the send timeout; a failed attempt (no connection,
//! a timeout, a 5xx, 408 or 429) is retried up to [`ATTEMPTS`] in all,
//! after [`BACKOFF`] then twice that; another 4xx is not retried. A
//! notification that fails every attempt is a failure in [`Health`] (said
//! once in the log).
//!
//! TLS, behind one interface ([`Connector`], [`connect`]): on Linux rustls
//! with ring (`linux.rs`; the system's roots from the files OpenSSL would
//! read, found by `openssl-probe`, `SSL_CERT_FILE` included), on macOS the
//! system's own through native-tls (`macos.rs`: Security.framework, the
//! keychain's roots). Either side adds `webhook_ca` (a PEM file of extra
//! CAs, for a private CA). Only `https://` is accepted.

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
use linux as platform;
#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
use macos as platform;

pub use platform::Connector;

use crate::health::{Health, Queue};
use crate::notification::Notification;
use bytes::Bytes;
use http_body_util::Full;
use hyper::Uri;
use std::path::Path;
use std::time::Duration;
use tokio::sync::mpsc;

/// Notifications waiting to be posted.
pub const QUEUE: usize = 64;
/// Attempts per notification, the first included.
pub const ATTEMPTS: u32 = 3;
/// The wait before the second attempt (doubled before each later one).
pub const BACKOFF: Duration = Duration::from_millis(500);

/// Why a webhook cannot be used (said by `ccd doctor`).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum WebhookError {
    #[error("notify.webhook {0:?} is not a valid URL")]
    Invalid(String),
    #[error("notify.webhook {0:?} is not https:// (a notification may carry a prompt's command: only TLS is used)")]
    NotHttps(String),
    #[error("notify.webhook_ca {path}: {error}")]
    Ca { path: String, error: String },
    #[error("TLS setup: {0}")]
    Tls(String),
}

impl Connector {
    /// The TLS client configuration of a sink: the system's roots plus
    /// `extra_ca`'s (which must hold at least one certificate).
    pub fn new(extra_ca: Option<&Path>) -> Result<Connector, WebhookError> {
        platform::connector(extra_ca)
    }
}

/// A parsed `https://` URL.
#[derive(Debug, Clone)]
pub struct Target {
    uri: Uri,
    host: String,
    port: u16,
}

/// Checks `url` (an `https://` URL with a host).
pub fn parse(url: &str) -> Result<Target, WebhookError> {
    let uri: Uri = url.parse().map_err(|_| WebhookError::Invalid(url.into()))?;
    if uri.scheme_str() != Some("https") {
        return Err(WebhookError::NotHttps(url.into()));
    }
    let host = uri
        .host()
        .filter(|h| !h.is_empty())
        .ok_or_else(|| WebhookError::Invalid(url.into()))?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let port = uri.port_u16().unwrap_or(443);
    Ok(Target { uri, host, port })
}

/// A running webhook sink (see the module doc).
#[derive(Debug, Clone)]
pub struct WebhookSink {
    queue: Queue,
}

impl WebhookSink {
    /// Checks the URL and the CA file and starts the worker on the current
    /// tokio runtime.
    pub fn spawn(
        url: &str,
        ca: Option<&Path>,
        timeout: Duration,
        health: Health,
    ) -> Result<Self, WebhookError> {
        let target = parse(url)?;
        let connector = platform::connector(ca)?;
        let (queue, rx) = Queue::new(QUEUE, health.clone());
        tokio::spawn(worker(target, connector, timeout, rx, health));
        Ok(Self { queue })
    }

    /// Queues `n` (never waits; a full queue drops it and counts it).
    pub fn send(&self, n: Notification) {
        self.queue.send(n);
    }

    pub fn health(&self) -> &Health {
        self.queue.health()
    }
}

async fn worker(
    target: Target,
    connector: Connector,
    timeout: Duration,
    mut rx: mpsc::Receiver<Notification>,
    health: Health,
) {
    while let Some(n) = rx.recv().await {
        let body = match serde_json::to_vec(&n) {
            Ok(b) => Bytes::from(b),
            Err(e) => {
                health.failed(&e.to_string());
                continue;
            }
        };
        match deliver(&target, &connector, body, timeout).await {
            Ok(()) => health.ok(),
            Err(e) => health.failed(&e),
        }
    }
}

/// Posts `body` with the retries and the backoff of the module doc.
pub async fn deliver(
    target: &Target,
    connector: &Connector,
    body: Bytes,
    timeout: Duration,
) -> Result<(), String> {
    let mut wait = BACKOFF;
    let mut last = String::new();
    for attempt in 1..=ATTEMPTS {
        let r = tokio::time::timeout(timeout, post(target, connector, body.clone())).await;
        let retry = match r {
            Ok(Ok(status)) if (200..300).contains(&status) => return Ok(()),
            Ok(Ok(status)) => {
                last = format!("{}: HTTP {status}", target.uri);
                status >= 500 || status == 408 || status == 429
            }
            Ok(Err(e)) => {
                last = format!("{}: {e}", target.uri);
                true
            }
            Err(_) => {
                last = format!(
                    "{}: no answer within {} s (send_timeout_secs)",
                    target.uri,
                    timeout.as_secs_f32()
                );
                true
            }
        };
        tracing::debug!(url = %target.uri, attempt, error = %last, "notify: webhook attempt failed");
        if !retry || attempt == ATTEMPTS {
            break;
        }
        tokio::time::sleep(wait).await;
        wait *= 2;
    }
    Err(format!("{last} (after {ATTEMPTS} attempts at most)"))
}

/// One POST; the response's status.
async fn post(target: &Target, connector: &Connector, body: Bytes) -> Result<u16, String> {
    let tcp = tokio::net::TcpStream::connect((target.host.as_str(), target.port))
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let tls = platform::connect(connector, &target.host, tcp)
        .await
        .map_err(|e| format!("TLS: {e}"))?;
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls))
            .await
            .map_err(|e| format!("HTTP: {e}"))?;
    let driver = tokio::spawn(conn);
    let host = match target.uri.port_u16() {
        Some(p) => format!("{}:{p}", target.uri.host().unwrap_or_default()),
        None => target.uri.host().unwrap_or_default().to_string(),
    };
    let path = target
        .uri
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("/");
    let req = hyper::Request::post(path)
        .header(hyper::header::HOST, host)
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .header(
            hyper::header::USER_AGENT,
            concat!("ccd/", env!("CARGO_PKG_VERSION")),
        )
        .body(Full::new(body))
        .map_err(|e| format!("HTTP: {e}"))?;
    let resp = sender.send_request(req).await;
    driver.abort();
    resp.map(|r| r.status().as_u16())
        .map_err(|e| format!("HTTP: {e}"))
}

/// The certificates of a PEM file (at least one).
fn read_ca(path: &Path) -> Result<Vec<pki_types::CertificateDer<'static>>, WebhookError> {
    use pki_types::pem::PemObject;
    let err = |error: String| WebhookError::Ca {
        path: path.display().to_string(),
        error,
    };
    let certs: Vec<_> = pki_types::CertificateDer::pem_file_iter(path)
        .map_err(|e| err(e.to_string()))?
        .collect::<Result<_, _>>()
        .map_err(|e| err(e.to_string()))?;
    if certs.is_empty() {
        return Err(err("no PEM certificate in it".into()));
    }
    Ok(certs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_urls_with_a_host_are_taken() {
        assert!(parse("https://ntfy.sh/topic").is_ok());
        let t = parse("https://127.0.0.1:8443/hook?x=1").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("127.0.0.1", 8443));
        assert!(matches!(
            parse("http://ntfy.sh/topic"),
            Err(WebhookError::NotHttps(_))
        ));
        assert!(matches!(parse("not a url"), Err(WebhookError::Invalid(_))));
        assert!(matches!(parse("https:///x"), Err(WebhookError::Invalid(_))));
    }

    #[test]
    fn a_ca_file_without_certificates_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("ca.pem");
        std::fs::write(&f, "not pem").unwrap();
        assert!(matches!(
            platform::connector(Some(&f)),
            Err(WebhookError::Ca { .. })
        ));
        assert!(matches!(
            platform::connector(Some(&dir.path().join("absent.pem"))),
            Err(WebhookError::Ca { .. })
        ));
        assert!(platform::connector(None).is_ok());
    }
}
