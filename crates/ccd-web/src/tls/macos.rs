//! macOS: the system's own TLS (Security.framework) through native-tls
//! and tokio-native-tls. The PEM files are read by the shared
//! [`files`](super::files) (the same errors as on Linux, and the same
//! names for the `Host` check) and handed to
//! `native_tls::Identity::from_pkcs8` as a chain and a PKCS #8 key.
//! native-tls imports them into a throwaway keychain in a temporary
//! directory (`TMPDIR`) once, at start; the user's keychains are not
//! touched. The handshake runs on the connection's task, like rustls's on
//! Linux. Compiled and linted only: never run (docs/platforms.md).

use super::files::{self, Names};
use anyhow::Context;
use std::path::Path;

/// The server's TLS identity: the acceptor, and the certificate's names
/// (this server's too, for the `Host` check).
#[derive(Clone)]
pub struct Acceptor {
    inner: tokio_native_tls::TlsAcceptor,
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

/// A Security.framework acceptor from PEM files (the certificate chain,
/// the key).
pub fn acceptor(cert: &Path, key: &Path) -> anyhow::Result<Acceptor> {
    let files::Files { chain, key: der } = files::read(cert, key)?;
    let names = Names::new(chain[0].clone());
    let chain = files::chain_pem(&chain)?;
    let key_pem =
        files::pkcs8_pem(&der).with_context(|| format!("reading the TLS key {}", key.display()))?;
    let identity = native_tls::Identity::from_pkcs8(chain.as_bytes(), key_pem.as_bytes())
        .context("the TLS certificate and key do not make a server identity")?;
    // TLS 1.2 and up, as rustls's safe defaults on Linux.
    let inner = native_tls::TlsAcceptor::builder(identity)
        .min_protocol_version(Some(native_tls::Protocol::Tlsv12))
        .build()
        .context("the TLS certificate and key do not make a server identity")?;
    Ok(Acceptor {
        inner: tokio_native_tls::TlsAcceptor::from(inner),
        names,
    })
}

/// The TLS handshake of one connection.
pub async fn accept(
    a: &Acceptor,
    stream: tokio::net::TcpStream,
) -> std::io::Result<tokio_native_tls::TlsStream<tokio::net::TcpStream>> {
    a.inner.accept(stream).await.map_err(std::io::Error::other)
}
