//! Linux: rustls through tokio-rustls, ring as the crypto provider.

use anyhow::{bail, Context};
use std::path::Path;
use std::sync::Arc;

/// The server's TLS identity: the acceptor, and the certificate's leaf
/// (whose names are this server's too, for the `Host` check).
#[derive(Clone)]
pub struct Acceptor {
    inner: tokio_rustls::TlsAcceptor,
    leaf: tokio_rustls::rustls::pki_types::CertificateDer<'static>,
}

impl std::fmt::Debug for Acceptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Acceptor")
    }
}

impl Acceptor {
    /// Whether the certificate is valid for `name` (a DNS name or an IP
    /// address, as a browser would check it).
    pub fn names(&self, name: &str) -> bool {
        use tokio_rustls::rustls::pki_types::ServerName;
        let name = name
            .strip_prefix('[')
            .and_then(|n| n.strip_suffix(']'))
            .unwrap_or(name);
        let Ok(server) = ServerName::try_from(name) else {
            return false;
        };
        webpki::EndEntityCert::try_from(&self.leaf)
            .is_ok_and(|c| c.verify_is_valid_for_subject_name(&server).is_ok())
    }
}

/// A rustls acceptor from PEM files (the certificate chain, the key).
pub fn acceptor(cert: &Path, key: &Path) -> anyhow::Result<Acceptor> {
    use tokio_rustls::rustls;
    use tokio_rustls::rustls::pki_types::pem::PemObject;
    use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .with_context(|| format!("reading the TLS certificate {}", cert.display()))?
        .collect::<Result<_, _>>()
        .with_context(|| format!("reading the TLS certificate {}", cert.display()))?;
    if certs.is_empty() {
        bail!("{}: no certificate in it", cert.display());
    }
    let leaf = certs[0].clone();
    let key = PrivateKeyDer::from_pem_file(key)
        .with_context(|| format!("reading the TLS key {}", key.display()))?;
    // ring, not aws-lc-rs: no C toolchain of the target is needed to
    // build (or lint) for macOS from Linux. Its defaults lack the
    // post-quantum key exchange (hence deprecated); X25519 and the NIST
    // curves remain.
    #[allow(deprecated)]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .context("the TLS certificate and key do not make a server identity")?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Acceptor {
        inner: tokio_rustls::TlsAcceptor::from(Arc::new(config)),
        leaf,
    })
}

/// The TLS handshake of one connection.
pub async fn accept(
    a: &Acceptor,
    stream: tokio::net::TcpStream,
) -> std::io::Result<tokio_rustls::server::TlsStream<tokio::net::TcpStream>> {
    a.inner.accept(stream).await
}
