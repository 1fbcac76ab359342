//! What both sides read from `--tls-cert`/`--tls-key`, the same way and
//! with the same errors, in pure Rust (no crypto provider):
//! - [`read`]: the certificate chain and the key from their PEM files
//!   (rustls-pki-types' PEM reader: PKCS #8, SEC1 and PKCS #1 keys);
//! - [`Names`]: whether the leaf certificate is valid for a host name, as
//!   a browser would check it (rustls-webpki's verifier), for the `Host`
//!   check;
//! - [`chain_pem`], [`pkcs8_pem`]: the chain and the key written back as
//!   the PEM that macOS's `native_tls::Identity::from_pkcs8` takes (a
//!   PKCS #8 key only: a SEC1 or PKCS #1 key is wrapped into one here, so
//!   a key Linux serves with, macOS serves with too). Used by the macOS
//!   side; tested here on Linux.

use anyhow::{bail, Context};
use pki_types::pem::PemObject;
use pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::path::Path;

/// The PEM files' contents.
pub struct Files {
    /// The leaf first, then any intermediates.
    pub chain: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
}

/// Reads the certificate chain and the key (errors name the file).
pub fn read(cert: &Path, key: &Path) -> anyhow::Result<Files> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .with_context(|| format!("reading the TLS certificate {}", cert.display()))?
        .collect::<Result<_, _>>()
        .with_context(|| format!("reading the TLS certificate {}", cert.display()))?;
    if chain.is_empty() {
        bail!("{}: no certificate in it", cert.display());
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .with_context(|| format!("reading the TLS key {}", key.display()))?;
    Ok(Files { chain, key })
}

/// The leaf certificate, asked which names it is valid for.
#[derive(Clone)]
pub struct Names {
    leaf: CertificateDer<'static>,
}

impl Names {
    pub fn new(leaf: CertificateDer<'static>) -> Self {
        Self { leaf }
    }

    /// Whether the certificate is valid for `name` (a DNS name or an IP
    /// address, `[…]` around an IPv6 one allowed, as in a `Host` header).
    pub fn contains(&self, name: &str) -> bool {
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

/// The chain as concatenated `CERTIFICATE` PEM blocks, leaf first.
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
pub fn chain_pem(chain: &[CertificateDer<'_>]) -> anyhow::Result<String> {
    let mut out = String::new();
    for c in chain {
        out.push_str(
            &pkcs8::der::pem::encode_string("CERTIFICATE", LF, c.as_ref())
                .map_err(|e| anyhow::anyhow!("writing the TLS certificate as PEM: {e}"))?,
        );
    }
    Ok(out)
}

/// The key as one `PRIVATE KEY` (PKCS #8) PEM block.
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
pub fn pkcs8_pem(key: &PrivateKeyDer<'_>) -> anyhow::Result<String> {
    use pkcs8::der::{asn1::AnyRef, Encode};
    use pkcs8::{AlgorithmIdentifierRef, ObjectIdentifier, PrivateKeyInfo};
    /// rsaEncryption (RFC 8017, A.1): its parameters are NULL.
    const RSA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");
    /// id-ecPublicKey (RFC 5480, 2.1.1): its parameters name the curve.
    const EC: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.2.1");
    let der: Vec<u8> = match key {
        PrivateKeyDer::Pkcs8(k) => k.secret_pkcs8_der().to_vec(),
        PrivateKeyDer::Pkcs1(k) => {
            let algorithm = AlgorithmIdentifierRef {
                oid: RSA,
                parameters: Some(AnyRef::NULL),
            };
            PrivateKeyInfo::new(algorithm, k.secret_pkcs1_der())
                .to_der()
                .context("wrapping the RSA (PKCS #1) TLS key as PKCS #8")?
        }
        PrivateKeyDer::Sec1(k) => {
            let ec = sec1::EcPrivateKey::try_from(k.secret_sec1_der())
                .context("the EC (SEC1) TLS key is not well formed")?;
            let Some(curve) = ec.parameters.and_then(|p| p.named_curve()) else {
                bail!(
                    "the EC (SEC1) TLS key names no curve: write it as PKCS #8 (openssl pkcs8 -topk8 -nocrypt)"
                );
            };
            let algorithm = AlgorithmIdentifierRef {
                oid: EC,
                parameters: Some(AnyRef::from(&curve)),
            };
            PrivateKeyInfo::new(algorithm, k.secret_sec1_der())
                .to_der()
                .context("wrapping the EC (SEC1) TLS key as PKCS #8")?
        }
        _ => bail!(
            "the TLS key is of a kind this platform cannot use (PKCS #8, SEC1 or PKCS #1 are)"
        ),
    };
    pkcs8::der::pem::encode_string("PRIVATE KEY", LF, &der)
        .map_err(|e| anyhow::anyhow!("writing the TLS key as PEM: {e}"))
}

const LF: pkcs8::der::pem::LineEnding = pkcs8::der::pem::LineEnding::LF;

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn web(path: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
    }

    /// tests/tls/cert.pem and key.pem (http_tls.rs's).
    fn test_files() -> Files {
        read(&web("tests/tls/cert.pem"), &web("tests/tls/key.pem")).expect("test files")
    }

    #[test]
    fn the_certificates_names_as_a_browser_checks_them() {
        let names = Names::new(test_files().chain[0].clone());
        for ok in ["localhost", "LOCALHOST", "127.0.0.1", "web.example"] {
            assert!(names.contains(ok), "{ok}");
        }
        for no in [
            "other.example",
            "127.0.0.2",
            "[::1]",
            "sub.web.example",
            "",
            "local host",
        ] {
            assert!(!names.contains(no), "{no}");
        }
    }

    #[test]
    fn missing_and_empty_files_are_refused_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let gone = dir.path().join("gone.pem");
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a PEM file\n").unwrap();
        let key = web("tests/tls/key.pem");
        let cert = web("tests/tls/cert.pem");
        let e = format!("{:#}", read(&gone, &key).err().unwrap());
        assert!(e.starts_with("reading the TLS certificate"), "{e}");
        assert!(e.contains("gone.pem"), "{e}");
        let e = format!("{:#}", read(&empty, &key).err().unwrap());
        assert!(e.ends_with("empty.pem: no certificate in it"), "{e}");
        let e = format!("{:#}", read(&cert, &gone).err().unwrap());
        assert!(e.starts_with("reading the TLS key"), "{e}");
        let e = format!("{:#}", read(&cert, &empty).err().unwrap());
        assert!(e.starts_with("reading the TLS key"), "{e}");
        // A certificate is no key.
        let e = format!("{:#}", read(&cert, &cert).err().unwrap());
        assert!(e.starts_with("reading the TLS key"), "{e}");
    }

    #[test]
    fn the_chain_written_back_reads_the_same() {
        let files = test_files();
        let pem = chain_pem(&files.chain).unwrap();
        assert!(pem.starts_with("-----BEGIN CERTIFICATE-----\n"), "{pem}");
        let again: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(pem.as_bytes())
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(again, files.chain);
    }

    /// Each key form becomes PKCS #8 PEM; (on Linux) the result is checked
    /// as the key of its certificate by rustls (`with_single_cert` refuses
    /// a key that is not the certificate's).
    #[test]
    fn every_key_form_becomes_the_same_pkcs8_key() {
        let cases = [
            // PKCS #8 as it is.
            ("tests/tls/cert.pem", "tests/tls/key.pem"),
            // The same EC key as SEC1 (`openssl ec -in tests/tls/key.pem`).
            ("tests/tls/cert.pem", "src/tls/testdata/key.sec1.pem"),
            // An RSA key as PKCS #1 (`openssl genrsa -traditional 2048`)
            // and its self-signed certificate.
            (
                "src/tls/testdata/rsa.cert.pem",
                "src/tls/testdata/rsa.pkcs1.pem",
            ),
        ];
        for (cert, key) in cases {
            let files = read(&web(cert), &web(key)).unwrap();
            let pem = pkcs8_pem(&files.key).unwrap();
            assert!(pem.starts_with("-----BEGIN PRIVATE KEY-----\n"), "{key}");
            let der = PrivateKeyDer::from_pem_slice(pem.as_bytes()).unwrap();
            assert!(matches!(der, PrivateKeyDer::Pkcs8(_)), "{key}");
            #[cfg(target_os = "linux")]
            {
                use tokio_rustls::rustls;
                #[allow(deprecated)]
                let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
                rustls::ServerConfig::builder_with_provider(provider)
                    .with_safe_default_protocol_versions()
                    .unwrap()
                    .with_no_client_auth()
                    .with_single_cert(files.chain.clone(), der)
                    .unwrap_or_else(|e| panic!("{key}: {e}"));
            }
        }
        // PKCS #8 stays byte for byte.
        let files = test_files();
        let pem = pkcs8_pem(&files.key).unwrap();
        assert_eq!(
            PrivateKeyDer::from_pem_slice(pem.as_bytes()).unwrap(),
            files.key
        );
    }

    #[test]
    fn a_sec1_key_naming_no_curve_is_refused_with_what_to_do() {
        // The SEC1 key inside tests/tls/key.pem's PKCS #8 carries no curve
        // (the PKCS #8 wrapper names it).
        let PrivateKeyDer::Pkcs8(k) = test_files().key else {
            panic!("tests/tls/key.pem is PKCS #8");
        };
        let info = pkcs8::PrivateKeyInfo::try_from(k.secret_pkcs8_der()).unwrap();
        let bare = PrivateKeyDer::Sec1(info.private_key.to_vec().into());
        let e = format!("{:#}", pkcs8_pem(&bare).err().unwrap());
        assert!(e.contains("names no curve"), "{e}");
        assert!(e.contains("openssl pkcs8 -topk8 -nocrypt"), "{e}");
        let junk = PrivateKeyDer::Sec1(vec![0x30, 0x03, 0x02, 0x01].into());
        let e = format!("{:#}", pkcs8_pem(&junk).err().unwrap());
        assert!(e.contains("not well formed"), "{e}");
    }
}
