//! Linux: the webhook's TLS through rustls with ring (as `ccd web`'s
//! server): the system's roots (the PEM bundle and directory OpenSSL would
//! read, found by `openssl-probe`; `SSL_CERT_FILE`/`SSL_CERT_DIR` honoured)
//! and `webhook_ca`'s certificates.

use super::WebhookError;
use pki_types::pem::PemObject;
use pki_types::{CertificateDer, ServerName};
use std::path::Path;
use std::sync::Arc;
use tokio_rustls::rustls;

/// A TLS client configuration, made once per sink.
#[derive(Clone)]
pub struct Connector(tokio_rustls::TlsConnector);

impl std::fmt::Debug for Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Connector")
    }
}

/// The system's roots plus `extra_ca`'s (which must hold at least one).
pub fn connector(extra_ca: Option<&Path>) -> Result<Connector, WebhookError> {
    let mut roots = rustls::RootCertStore::empty();
    let probe = openssl_probe::probe();
    if let Some(file) = &probe.cert_file {
        if let Ok(certs) = CertificateDer::pem_file_iter(file) {
            roots.add_parsable_certificates(certs.flatten());
        }
    }
    for dir in &probe.cert_dir {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for e in entries.flatten() {
            if let Ok(certs) = CertificateDer::pem_file_iter(e.path()) {
                roots.add_parsable_certificates(certs.flatten());
            }
        }
    }
    if let Some(ca) = extra_ca {
        let certs = super::read_ca(ca)?;
        let (added, _) = roots.add_parsable_certificates(certs);
        if added == 0 {
            return Err(WebhookError::Ca {
                path: ca.display().to_string(),
                error: "no usable CA certificate in it".into(),
            });
        }
    }
    // ring, not aws-lc-rs: no C toolchain of the target is needed (see
    // ccd-web's tls/linux.rs).
    #[allow(deprecated)]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| WebhookError::Tls(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Connector(tokio_rustls::TlsConnector::from(Arc::new(
        config,
    ))))
}

/// The TLS handshake with `host` (a DNS name or an IP address).
pub async fn connect(
    c: &Connector,
    host: &str,
    tcp: tokio::net::TcpStream,
) -> std::io::Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>> {
    let name = ServerName::try_from(host.to_string())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    c.0.connect(name, tcp).await
}
