//! Linux: rustls through tokio-rustls, ring as the crypto provider; the
//! PEM files and the certificate's names through the shared `files.rs`.

use super::files::{self, Names};
use anyhow::Context;
use std::path::Path;
use std::sync::Arc;

/// The server's TLS identity: the acceptor, and the certificate's names
/// (this server's too, for the `Host` check).
#[derive(Clone)]
pub struct Acceptor {
    inner: tokio_rustls::TlsAcceptor,
    names: Names,
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
        self.names.contains(name)
    }
}

/// A rustls acceptor from PEM files (the certificate chain, the key).
pub fn acceptor(cert: &Path, key: &Path) -> anyhow::Result<Acceptor> {
    use tokio_rustls::rustls;
    let files::Files { chain, key } = files::read(cert, key)?;
    let names = Names::new(chain[0].clone());
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
        .with_single_cert(chain, key)
        .context("the TLS certificate and key do not make a server identity")?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Acceptor {
        inner: tokio_rustls::TlsAcceptor::from(Arc::new(config)),
        names,
    })
}

/// The TLS handshake of one connection.
pub async fn accept(
    a: &Acceptor,
    stream: tokio::net::TcpStream,
) -> std::io::Result<tokio_rustls::server::TlsStream<tokio::net::TcpStream>> {
    a.inner.accept(stream).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn web(path: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
    }

    #[test]
    fn a_key_that_is_not_the_certificates_is_refused() {
        let e = acceptor(
            &web("tests/tls/cert.pem"),
            &web("src/tls/testdata/rsa.pkcs1.pem"),
        )
        .err()
        .map(|e| format!("{e:#}"))
        .unwrap_or_default();
        assert!(
            e.starts_with("the TLS certificate and key do not make a server identity"),
            "{e}"
        );
        let a = acceptor(&web("tests/tls/cert.pem"), &web("tests/tls/key.pem")).unwrap();
        assert!(a.names("web.example") && !a.names("other.example"));
    }
}
