//! `ccd web --host ssh://… --host local` in a real browser (headless
//! Chromium through chromedriver: `ccd_testkit::browser`) over the real
//! `sshd` the `--host` tests use (`common/sshd.rs`: a throwaway user whose
//! home is a temp dir, the fake claude as its `claude`): the other
//! machine's held session listed beside this one's with its machine named,
//! its permission prompt appearing on the open page without a reload, and
//! one tap on Approve answering it there.
//!
//! Needs root and `openssh-server` (else skipped, a failure under `CI`)
//! and Chromium with chromedriver (the same).

mod common;

use ccd_testkit::browser::{browser_or_skip, Browser, Device};
use common::sshd::sshd_or_skip;
use common::wait_for;
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::time::Duration;

const T: Duration = Duration::from_secs(30);

/// `ccd web`, ended by its pid when dropped.
struct Web(Child);

impl Drop for Web {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The list item of `sid` exists on the page.
fn item(sid: &str) -> String {
    format!("return !!document.querySelector('#sessions .item[data-session=\"{sid}\"]');")
}

/// Waits (as `Browser::until` does) for the list item of `sid`; on a
/// timeout the panic says what `/api/sessions` answers now and `ccd web`'s
/// log, so a failure on CI explains itself.
async fn listed(b: &Browser, what: &str, sid: &str, web_log: &std::path::Path) {
    let deadline = std::time::Instant::now() + T;
    loop {
        if b.js(&item(sid), vec![]).await == json!(true) {
            return;
        }
        if std::time::Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let page = b
        .js(
            "return document.body ? document.body.innerText : ''",
            vec![],
        )
        .await;
    let api = b
        .js(
            "var x = new XMLHttpRequest(); x.open('GET', '/api/sessions', false); x.send(); return x.status + ' ' + x.responseText;",
            vec![],
        )
        .await;
    let log = std::fs::read_to_string(web_log).unwrap_or_else(|e| format!("(no log: {e})"));
    panic!(
        "timed out waiting for {what} ({sid}); the page shows:\n{page}\n/api/sessions now: {api}\nccd web's log:\n{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_on_a_machine_behind_a_real_sshd_answered_from_the_browser() {
    let Some((chromium, driver)) = browser_or_skip("web_browser_ssh") else {
        return;
    };
    let Some(host) = sshd_or_skip() else { return };
    let sb = host.sandbox();
    let url = host.url();
    let there = host.new_session(&sb, "browserthere");
    let here = sb.new_session("browserhere");

    let log = std::fs::File::create(sb.tmp.path().join("web.log")).expect("a log");
    let mut child = sb
        .cmd(&[
            "web",
            "--listen",
            "127.0.0.1:0",
            "--host",
            &url,
            "--host",
            "local",
        ])
        .env("CCD_LOG", "info,ccd_web=debug")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .expect("starting ccd web");
    let mut lines = BufReader::new(child.stdout.take().expect("its stdout")).lines();
    let web = Web(child);
    let first = lines.next().and_then(Result::ok).unwrap_or_default();
    let addr = first
        .strip_prefix("ccd web listening on ")
        .unwrap_or_else(|| panic!("{first}"))
        .trim()
        .to_string();
    let login = lines.next().and_then(Result::ok).unwrap_or_default();
    let path = login
        .find("/?token=")
        .map(|i| login[i..].trim().to_string())
        .unwrap_or_else(|| panic!("a login URL: {login}"));
    std::thread::spawn(move || for _ in lines {});

    let b = Browser::start(&chromium, &driver, Device::Phone).await;
    b.login(&format!("http://{addr}{path}")).await;

    // Both machines' sessions listed, each with its machine named.
    let label = url.trim_start_matches("ssh://").to_string();
    let web_log = sb.tmp.path().join("web.log");
    listed(&b, "this machine's session", &here, &web_log).await;
    listed(&b, "the ssh machine's session", &there, &web_log).await;
    let text_of = |sid: &str| {
        format!(
            "return document.querySelector('#sessions .item[data-session=\"{sid}\"]').innerText"
        )
    };
    let shown = b.js(&text_of(&there), vec![]).await;
    let shown = shown.as_str().unwrap_or_default();
    assert!(shown.contains(&label), "the machine named: {shown}");
    assert!(shown.contains("browserthere"), "its folder: {shown}");
    let shown = b.js(&text_of(&here), vec![]).await;
    assert!(
        shown.as_str().unwrap_or_default().contains("local"),
        "{shown}"
    );

    // Into the remote session; a marker that a reload would lose.
    b.tap(&format!("#sessions .item[data-session=\"{there}\"]"))
        .await;
    b.until(
        "the remote session's live screen",
        "return !document.getElementById('view-session').hidden && document.getElementById('screen').textContent.length > 0",
    )
    .await;
    b.js("window.__not_reloaded = 1; return true", vec![]).await;

    // A permission prompt there appears without a reload; one tap
    // approves it, on that machine.
    sb.ok(&["--host", &url, "send", &there, "perm touch remote.txt"]);
    b.until(
        "the remote prompt",
        "var p = document.getElementById('prompt'); return !p.hidden && document.getElementById('p-detail').textContent.indexOf('touch remote.txt') >= 0",
    )
    .await;
    b.tap("#p-yes").await;
    wait_for(T, "the approved turn there", || {
        sb.ok(&["--host", &url, "screen", &there])
            .contains("echo: perm touch remote.txt")
            .then_some(())
    });
    b.until(
        "the prompt gone from the page",
        "return document.getElementById('prompt').hidden",
    )
    .await;
    assert_eq!(
        b.js("return window.__not_reloaded === 1", vec![]).await,
        json!(true),
        "the page was not reloaded"
    );
    b.close().await;
    drop(web);
}
