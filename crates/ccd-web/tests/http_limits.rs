//! `ccd web`'s bounds, each pushed past (crate `ccd_web::limits`;
//! docs/architecture.md lists them): connections, WebSockets, the request
//! body, a page's message, cookies stored, one watched session per socket.
//! (The per-socket queue is pushed past in `ws`'s unit test; failed logins
//! in `http_login`.)

mod http;

use ccd_web::limits;
use http::{upgrade_status, wait_for, Sandbox, Web, T};
use serde_json::json;
use std::io::Read;
use std::net::TcpStream;
use std::time::{Duration, Instant};

#[test]
fn connections_past_the_bound_are_closed_at_once() {
    let sb = Sandbox::new();
    let web = Web::start(&sb, &[]);
    let cookie = web.login();
    // Idle connections (no request yet) each hold a slot.
    let held: Vec<TcpStream> = (0..limits::CONNECTIONS)
        .map(|_| TcpStream::connect(&web.addr).unwrap())
        .collect();
    // Let the server accept them all.
    std::thread::sleep(Duration::from_millis(300));
    let mut over = TcpStream::connect(&web.addr).unwrap();
    over.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let started = Instant::now();
    let mut buf = [0u8; 16];
    let n = over.read(&mut buf).unwrap_or(0);
    assert_eq!(n, 0, "closed, not served");
    assert!(started.elapsed() < Duration::from_secs(3), "closed at once");
    drop(held);
    wait_for(T, "a slot again", || {
        (web.get(&cookie, "/api/sessions").status == 200).then_some(())
    });
}

#[test]
fn websockets_past_the_bound_are_refused_until_one_closes() {
    let sb = Sandbox::new();
    let web = Web::start(&sb, &[]);
    let cookie = web.login();
    let mut open: Vec<_> = (0..limits::WEBSOCKETS).map(|_| web.ws(&cookie)).collect();
    for ws in &mut open {
        assert_eq!(ws.next()["t"], "sessions");
    }
    let c = format!("ccd_web={cookie}");
    let o = web.origin();
    let headers = [
        ("Host", web.addr.as_str()),
        ("Cookie", c.as_str()),
        ("Origin", o.as_str()),
    ];
    let r = upgrade_status(&web.addr, &headers);
    assert_eq!(r.status, 503, "{r:?}");
    assert!(r.body.contains("too many"), "{r:?}");
    let mut one = open.pop().unwrap();
    let _ = one.0.close(None);
    let _ = one.0.flush();
    drop(one);
    wait_for(T, "a WebSocket slot again", || {
        (upgrade_status(&web.addr, &headers).status == 101).then_some(())
    });
}

#[test]
fn a_body_past_the_bound_and_a_page_message_past_its_bound_are_refused() {
    let sb = Sandbox::new();
    let web = Web::start(&sb, &[]);
    let cookie = web.login();
    let big = json!({"cwd": "x".repeat(limits::BODY_BYTES)}).to_string();
    let r = web.post(&cookie, "/api/new", &big);
    assert_eq!(r.status, 413, "{r:?}");
    let r = web.post(
        &cookie,
        "/api/session/0000/send",
        &json!({"text": "y".repeat(limits::TEXT_CHARS + 1)}).to_string(),
    );
    assert_eq!(r.status, 413, "{r:?}");

    let mut ws = web.ws(&cookie);
    assert_eq!(ws.next()["t"], "sessions");
    let long = json!({"t": "watch", "session": "z".repeat(limits::WS_MESSAGE_BYTES)});
    let _ =
        ws.0.send(tungstenite::Message::Text(long.to_string().into()));
    let closed = wait_for(T, "the socket closed", || match ws.0.read() {
        Ok(tungstenite::Message::Close(_)) | Err(_) => Some(true),
        Ok(_) => None,
    });
    assert!(closed);
}

#[test]
fn the_oldest_cookie_goes_past_the_bound() {
    let sb = Sandbox::new();
    let web = Web::start(&sb, &[]);
    let first = web.login();
    let second = web.login();
    for _ in 0..(limits::COOKIES - 1) {
        web.login();
    }
    assert_eq!(web.get(&first, "/api/sessions").status, 401, "evicted");
    assert_eq!(web.get(&second, "/api/sessions").status, 200);
}

#[test]
fn a_socket_watches_one_session_at_a_time() {
    let sb = Sandbox::new();
    let a = sb.new_session("a");
    let b = sb.new_session("b");
    let web = Web::start(&sb, &[]);
    let cookie = web.login();
    let mut ws = web.ws(&cookie);
    ws.send(&json!({"t": "watch", "session": a}));
    ws.until("a's screen", |m| {
        m["t"] == "screen" && m["session"] == a.as_str()
    });
    ws.send(&json!({"t": "watch", "session": b}));
    ws.until("b's screen", |m| {
        m["t"] == "screen" && m["session"] == b.as_str()
    });
    // a's watcher notices within its 250 ms wake-up.
    std::thread::sleep(Duration::from_millis(400));
    // Type into a, then into b: only b's screen comes.
    for (sid, text) in [(&a, "into a"), (&b, "into b")] {
        let r = web.post(
            &cookie,
            &format!("/api/session/{sid}/keys"),
            &json!({"text": text}).to_string(),
        );
        assert_eq!(r.status, 200, "{r:?}");
    }
    let m = ws.until("b's typed text", |m| {
        assert!(
            m["session"] != a.as_str() || m["t"] != "screen",
            "a is not watched any more: {m}"
        );
        m["t"] == "screen" && m.to_string().contains("into b")
    });
    assert_eq!(m["session"], b.as_str());
    ws.send(&json!({"t": "unwatch"}));
}
