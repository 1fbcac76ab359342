//! macOS: the webhook's TLS through the system's own (Security.framework
//! through native-tls: the keychain's roots), plus `webhook_ca`'s
//! certificates. Compiled and linted from Linux; not run on a Mac yet
//! (docs/platforms.md).

use super::WebhookError;
use std::path::Path;

/// A TLS connector, made once per sink.
#[derive(Clone)]
pub struct Connector(tokio_native_tls::TlsConnector);

impl std::fmt::Debug for Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Connector")
    }
}

/// The system's roots plus `extra_ca`'s (which must hold at least one).
pub fn connector(extra_ca: Option<&Path>) -> Result<Connector, WebhookError> {
    let mut b = native_tls::TlsConnector::builder();
    if let Some(ca) = extra_ca {
        for der in super::read_ca(ca)? {
            let cert =
                native_tls::Certificate::from_der(der.as_ref()).map_err(|e| WebhookError::Ca {
                    path: ca.display().to_string(),
                    error: e.to_string(),
                })?;
            b.add_root_certificate(cert);
        }
    }
    let c = b.build().map_err(|e| WebhookError::Tls(e.to_string()))?;
    Ok(Connector(tokio_native_tls::TlsConnector::from(c)))
}

/// The TLS handshake with `host`.
pub async fn connect(
    c: &Connector,
    host: &str,
    tcp: tokio::net::TcpStream,
) -> std::io::Result<tokio_native_tls::TlsStream<tokio::net::TcpStream>> {
    c.0.connect(host, tcp).await.map_err(std::io::Error::other)
}
