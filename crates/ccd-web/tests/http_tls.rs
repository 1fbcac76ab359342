//! `ccd web` over TLS (Linux: rustls with ring; macOS uses the system's
//! own through native-tls, compiled and linted but never run there, so
//! these tests, whose client is rustls, run on Linux only:
//! docs/platforms.md): listening on every address is
//! allowed with a certificate, the cookie is `Secure`, the certificate's
//! names are this server's `Host` and `https://` origin (others refused),
//! and plain HTTP gets no page.

#![cfg(target_os = "linux")]

mod http;

use http::{parse, Resp, Sandbox, Web, T};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use tokio_rustls::rustls;

/// The test certificate (`tests/tls/`: self-signed, for `localhost`,
/// `127.0.0.1` and `web.example`, valid until 2126; made once with
/// `openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes
/// -days 36500 -subj /CN=localhost -addext
/// subjectAltName=DNS:localhost,IP:127.0.0.1,DNS:web.example -addext
/// basicConstraints=critical,CA:FALSE -addext
/// keyUsage=critical,digitalSignature -addext extendedKeyUsage=serverAuth`: not
/// a CA, rustls refuses one as a server's certificate); its key
/// is for these tests only): the PEM files' paths and the certificate to
/// trust.
fn certificate() -> (String, String, rustls::pki_types::CertificateDer<'static>) {
    use rustls::pki_types::pem::PemObject;
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tls");
    let cert = dir.join("cert.pem");
    let der = rustls::pki_types::CertificateDer::from_pem_file(&cert).unwrap();
    (
        cert.display().to_string(),
        dir.join("key.pem").display().to_string(),
        der,
    )
}

/// One HTTPS request (`Connection: close`) trusting `ca` only.
fn https(
    addr: &str,
    ca: &rustls::pki_types::CertificateDer<'static>,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Resp {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.clone()).unwrap();
    #[allow(deprecated)]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(T)).unwrap();
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    let mut head = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if let Some(b) = body {
        head.push_str(&format!("Content-Length: {}\r\n", b.len()));
    }
    head.push_str("\r\n");
    head.push_str(body.unwrap_or_default());
    tls.write_all(head.as_bytes()).unwrap();
    let mut raw = Vec::new();
    // The server may close without close_notify after a reply: what came
    // is the reply.
    let _ = tls.read_to_end(&mut raw);
    parse(&raw)
}

#[test]
fn tls_on_every_address_with_a_secure_cookie_and_the_certificates_names() {
    let sb = Sandbox::new();
    let (cert, key, ca) = certificate();
    let web = Web::start(
        &sb,
        &[
            "--listen",
            "0.0.0.0:0",
            "--tls-cert",
            &cert,
            "--tls-key",
            &key,
        ],
    );
    let port = web.addr.rsplit(':').next().unwrap().to_string();
    let local = format!("127.0.0.1:{port}");

    let r = https(
        &web.addr,
        &ca,
        "GET",
        &format!("/?token={}", web.token),
        &[("Host", &local)],
        None,
    );
    assert_eq!(r.status, 303, "{r:?}");
    let set = r.header("set-cookie").unwrap().to_string();
    assert!(set.split(';').any(|p| p.trim() == "Secure"), "{set}");
    let cookie = set.split(';').next().unwrap().to_string();

    // The certificate's names, on this port, are this server's.
    let named = format!("web.example:{port}");
    let r = https(
        &web.addr,
        &ca,
        "GET",
        "/api/sessions",
        &[("Host", &named), ("Cookie", &cookie)],
        None,
    );
    assert_eq!(r.status, 200, "{r:?}");
    for host in [format!("evil.example:{port}"), "web.example:1".to_string()] {
        let r = https(
            &web.addr,
            &ca,
            "GET",
            "/api/sessions",
            &[("Host", &host), ("Cookie", &cookie)],
            None,
        );
        assert_eq!(r.status, 403, "Host {host}: {r:?}");
    }
    // And their https origin is the page's.
    let body = r#"{"text":"x"}"#;
    let post = |origin: &str| {
        https(
            &web.addr,
            &ca,
            "POST",
            "/api/session/0000/send",
            &[
                ("Host", &named),
                ("Cookie", &cookie),
                ("Origin", origin),
                ("Content-Type", "application/json"),
            ],
            Some(body),
        )
    };
    let r = post(&format!("https://web.example:{port}"));
    assert_ne!(r.status, 403, "{r:?}");
    for origin in [
        format!("http://web.example:{port}"),
        format!("https://evil.example:{port}"),
    ] {
        let r = post(&origin);
        assert_eq!(r.status, 403, "Origin {origin}: {r:?}");
    }

    // Plain HTTP on the TLS port gets no page.
    let mut plain = TcpStream::connect(&web.addr).unwrap();
    plain.set_read_timeout(Some(T)).unwrap();
    plain
        .write_all(
            format!(
                "GET /?token={} HTTP/1.1\r\nHost: {local}\r\n\r\n",
                web.token
            )
            .as_bytes(),
        )
        .unwrap();
    let mut raw = Vec::new();
    let _ = plain.read_to_end(&mut raw);
    assert!(
        !String::from_utf8_lossy(&raw).contains("ccd_web="),
        "no cookie in clear"
    );
}
