//! `ccd web --host ssh://… --host local` over a real `sshd` on 127.0.0.1
//! (a throwaway user whose home is a temp dir, the fake claude as its
//! `claude`; see `common/sshd.rs`): the other machine's session listed
//! with its machine beside this one's, and a prompt sent to it from the
//! page's route reaching it. The page's HTTP is spoken over a plain
//! `TcpStream` (the ccd-web crate's own tests check the doors).

mod common;

use common::sshd::sshd_or_skip;
use common::wait_for;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
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

/// One request (`Connection: close`); the status and the body.
fn request(
    addr: &str,
    method: &str,
    path: &str,
    cookie: Option<&str>,
    body: Option<&str>,
) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(T)).unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    if let Some(c) = cookie {
        head.push_str(&format!("Cookie: ccd_web={c}\r\nOrigin: http://{addr}\r\n"));
    }
    if let Some(b) = body {
        head.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            b.len()
        ));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    if let Some(b) = body {
        s.write_all(b.as_bytes()).unwrap();
    }
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, head.to_string(), body.to_string())
}

#[test]
fn web_lists_and_acts_on_a_machine_behind_a_real_sshd() {
    let Some(host) = sshd_or_skip() else { return };
    let sb = host.sandbox();
    let url = host.url();
    let there = host.new_session(&sb, "webthere");
    let here = sb.new_session("webhere");

    let log = std::fs::File::create(sb.tmp.path().join("web.log")).unwrap();
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
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let web = Web(child);
    let first = lines.next().unwrap().unwrap();
    let addr = first
        .strip_prefix("ccd web listening on ")
        .unwrap_or_else(|| panic!("{first}"))
        .trim()
        .to_string();
    let login = lines.next().unwrap().unwrap();
    let token = login.split("token=").nth(1).unwrap().trim().to_string();
    std::thread::spawn(move || for _ in lines {});

    let (status, head, _) = request(&addr, "GET", &format!("/?token={token}"), None, None);
    assert_eq!(status, 303, "{head}");
    let cookie = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .starts_with("set-cookie:")
                .then(|| {
                    l.split_once("ccd_web=")
                        .map(|(_, v)| v.split(';').next().unwrap().to_string())
                })
                .flatten()
        })
        .expect("a cookie");

    let label = url.trim_start_matches("ssh://").to_string();
    let list = wait_for(T, "both machines' sessions", || {
        let (status, _, body) = request(&addr, "GET", "/api/sessions", Some(&cookie), None);
        assert_eq!(status, 200, "{body}");
        let l: Value = serde_json::from_str(&body).unwrap();
        let has = |sid: &str| {
            l["sessions"]
                .as_array()
                .unwrap()
                .iter()
                .any(|s| s["id"] == sid)
        };
        (has(&here) && has(&there)).then_some(l)
    });
    let machine_of = |sid: &str| {
        list["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == sid)
            .unwrap()["machine"]
            .clone()
    };
    assert_eq!(machine_of(&there), label.as_str(), "{list}");
    assert_eq!(machine_of(&here), "local", "{list}");
    let names: Vec<&str> = list["machines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, [label.as_str(), "local"], "{list}");

    let (status, _, body) = request(
        &addr,
        "POST",
        &format!("/api/m/{label}/session/{there}/send"),
        Some(&cookie),
        Some(r#"{"text":"over real ssh"}"#),
    );
    assert_eq!(status, 200, "{body}");
    wait_for(T, "the remote turn", || {
        sb.ok(&["--host", &url, "screen", &there])
            .contains("echo: over real ssh")
            .then_some(())
    });
    drop(web);
}
