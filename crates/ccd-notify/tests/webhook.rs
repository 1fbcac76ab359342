//! The webhook sink against a local HTTPS server whose certificate is
//! signed by a CA made here (rcgen), the client told to trust it through
//! `webhook_ca`: a 500 then a 200 (the retry seen, the JSON body as sent),
//! a server that never answers (each attempt abandoned at the timeout, 3
//! in all), a server the client does not trust (refused by TLS), and a
//! queue that never blocks its caller. Linux only: the server side is
//! rustls with ring, which is not built for macOS from Linux.
#![cfg(target_os = "linux")]

use bytes::Bytes;
use ccd_notify::health::Health;
use ccd_notify::webhook::{self, Connector, WebhookSink};
use ccd_notify::{Notification, Reason};
use http_body_util::{BodyExt, Full};
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio_rustls::rustls;

/// A CA, a server certificate for 127.0.0.1 it signed, the CA's PEM file.
struct Pki {
    _dir: tempfile::TempDir,
    ca_file: PathBuf,
    server: rustls::ServerConfig,
}

fn pki() -> Pki {
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "ccd test CA");
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).unwrap();
    let leaf_key = rcgen::KeyPair::generate().unwrap();
    let leaf = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
        .unwrap()
        .signed_by(&leaf_key, &ca)
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, ca.pem()).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::try_from(leaf_key.serialize_der()).unwrap();
    #[allow(deprecated)]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let server = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![leaf.der().clone(), ca.der().clone()], key)
        .unwrap();
    Pki {
        _dir: dir,
        ca_file,
        server,
    }
}

/// What the server got: each request's path and body.
type Seen = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

/// An HTTPS server answering each request with the next status of
/// `statuses` (200 once they run out); its URL.
async fn server(p: &Pki, statuses: Vec<u16>, seen: Seen) -> String {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(p.server.clone()));
    let statuses = Arc::new(Mutex::new(VecDeque::from(statuses)));
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = l.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            let (statuses, seen) = (statuses.clone(), seen.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let svc = hyper::service::service_fn(
                    move |req: hyper::Request<hyper::body::Incoming>| {
                        let (statuses, seen) = (statuses.clone(), seen.clone());
                        async move {
                            let path = req.uri().path().to_string();
                            let body = req.into_body().collect().await?.to_bytes().to_vec();
                            seen.lock().unwrap().push((path, body));
                            let status = statuses.lock().unwrap().pop_front().unwrap_or(200);
                            let mut resp = hyper::Response::new(Full::new(Bytes::from_static(b"")));
                            *resp.status_mut() = hyper::StatusCode::from_u16(status).unwrap();
                            Ok::<_, hyper::Error>(resp)
                        }
                    },
                );
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(tls), svc)
                    .await;
            });
        }
    });
    format!("https://127.0.0.1:{port}/hook")
}

fn n() -> Notification {
    Notification {
        machine: "box".into(),
        session: "9b1d4c2e".into(),
        title: "proj".into(),
        cwd: Some("/home/me/proj".into()),
        reason: Reason::Permission,
        tool: Some("Bash command".into()),
        detail: Some("echo hi".into()),
        prompt_id: Some("5f1c09a2b7e4d3c8".into()),
        options: Some(vec!["Yes".into(), "No".into()]),
        link: None,
        at: 1,
    }
}

fn body() -> Bytes {
    Bytes::from(serde_json::to_vec(&n()).unwrap())
}

#[tokio::test]
async fn a_500_is_retried_and_the_200_after_it_delivers_the_json() {
    let p = pki();
    let seen = Seen::default();
    let url = server(&p, vec![500], seen.clone()).await;
    let target = webhook::parse(&url).unwrap();
    let c = Connector::new(Some(&p.ca_file)).unwrap();
    webhook::deliver(&target, &c, body(), Duration::from_secs(5))
        .await
        .unwrap();
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2, "one retry after the 500");
    for (path, b) in seen.iter() {
        assert_eq!(path, "/hook");
        let got: Notification = serde_json::from_slice(b).unwrap();
        assert_eq!(got, n());
    }
}

#[tokio::test]
async fn a_4xx_is_not_retried_and_says_its_status() {
    let p = pki();
    let seen = Seen::default();
    let url = server(&p, vec![403, 200], seen.clone()).await;
    let target = webhook::parse(&url).unwrap();
    let c = Connector::new(Some(&p.ca_file)).unwrap();
    let e = webhook::deliver(&target, &c, body(), Duration::from_secs(5))
        .await
        .unwrap_err();
    assert!(e.contains("HTTP 403"), "{e}");
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_server_that_never_answers_is_abandoned_after_three_timeouts() {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let accepted = Arc::new(Mutex::new(Vec::new()));
    {
        let accepted = accepted.clone();
        tokio::spawn(async move {
            while let Ok((s, _)) = l.accept().await {
                accepted.lock().unwrap().push(s);
            }
        });
    }
    let p = pki();
    let target = webhook::parse(&format!("https://127.0.0.1:{port}/")).unwrap();
    let c = Connector::new(Some(&p.ca_file)).unwrap();
    let t = Instant::now();
    let e = webhook::deliver(&target, &c, body(), Duration::from_millis(300))
        .await
        .unwrap_err();
    let took = t.elapsed();
    assert!(e.contains("no answer within 0.3 s"), "{e}");
    // 3 × 0.3 s + 0.5 s + 1 s of backoff.
    assert!(
        took >= Duration::from_millis(2300) && took < Duration::from_secs(5),
        "{took:?}"
    );
    assert_eq!(accepted.lock().unwrap().len(), 3);
}

#[tokio::test]
async fn a_server_signed_by_an_untrusted_ca_is_refused() {
    let p = pki();
    let seen = Seen::default();
    let url = server(&p, vec![], seen.clone()).await;
    let target = webhook::parse(&url).unwrap();
    let c = Connector::new(None).unwrap();
    let e = webhook::deliver(&target, &c, body(), Duration::from_secs(5))
        .await
        .unwrap_err();
    assert!(e.contains("TLS"), "{e}");
    assert!(seen.lock().unwrap().is_empty());
}

#[tokio::test]
async fn the_sink_never_blocks_its_caller_and_counts_what_it_drops() {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let held = Arc::new(Mutex::new(Vec::new()));
    {
        let held = held.clone();
        tokio::spawn(async move {
            while let Ok((s, _)) = l.accept().await {
                held.lock().unwrap().push(s);
            }
        });
    }
    let p = pki();
    let health = Health::new("webhook", "test", None);
    let sink = WebhookSink::spawn(
        &format!("https://127.0.0.1:{port}/"),
        Some(&p.ca_file),
        Duration::from_secs(30),
        health.clone(),
    )
    .unwrap();
    let t = Instant::now();
    for _ in 0..(webhook::QUEUE + 20) {
        sink.send(n());
    }
    assert!(
        t.elapsed() < Duration::from_millis(200),
        "{:?}",
        t.elapsed()
    );
    // One taken by the worker, QUEUE waiting: the rest dropped.
    let dropped = health.report().dropped;
    assert!((19..=20).contains(&dropped), "{dropped}");
}

#[tokio::test]
async fn the_sink_delivers_and_records_it() {
    let p = pki();
    let seen = Seen::default();
    let url = server(&p, vec![], seen.clone()).await;
    let health = Health::new("webhook", &url, None);
    let sink = WebhookSink::spawn(
        &url,
        Some(&p.ca_file),
        Duration::from_secs(5),
        health.clone(),
    )
    .unwrap();
    sink.send(n());
    for _ in 0..250 {
        if health.report().sent == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(health.report().sent, 1);
    assert_eq!(seen.lock().unwrap().len(), 1);
}
