//! Direct streams: `session.attach` with `direct` hands the client a
//! connection to the session's holder (`SCM_RIGHTS`), on which the daemon
//! attached as asked; output and keys then skip the daemon.

mod common;

use ccd_client::Client;
use ccd_protocol::Incoming;
use common::{wait_for, Sandbox};
use serde_json::json;
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(20);

#[test]
fn a_direct_stream_carries_the_screen_and_keys_and_shows_as_a_client() {
    let sb = Sandbox::new();
    let sid = sb.new_session("direct");
    let mut c = sb.client();
    let size = json!({"cols": 100, "rows": 30});
    let r = c
        .call_value(
            "session.attach",
            json!({"session": &sid[..8], "direct": true, "size": size}),
        )
        .unwrap();
    assert_eq!(r["direct"], true, "{r}");
    assert_eq!(r["session"], sid.as_str(), "{r}");
    let fd = c.take_passed_fd().expect("the holder connection");
    let (mut reader, mut writer, queued) = Client::direct_stream(fd).unwrap();
    assert!(queued.is_empty(), "nothing before the reply: {queued:?}");
    // The first message is the redraw, at the client's size.
    let first = match reader.next().unwrap() {
        Incoming::Notification(n) => n,
        other => panic!("expected the resync, got {other:?}"),
    };
    assert_eq!(first.method, "session.resync");
    let p = first.params.unwrap();
    assert_eq!(p["session"], sid.as_str());
    assert_eq!(p["size"], json!({"rows": 30, "cols": 100}));
    let mut screen = ccd_screen::Screen::new(30, 100);
    screen.process(&ccd_protocol::b64::decode(p["data"].as_str().unwrap()).unwrap());
    // Keys as notifications, like `ccd attach` sends them.
    writer
        .notify(
            "session.input",
            json!({"session": sid, "data": ccd_protocol::b64::encode(b"straight through\r")}),
        )
        .unwrap();
    let deadline = Instant::now() + T;
    while !screen.contents().contains("echo: straight through") {
        assert!(Instant::now() < deadline, "no echo: {}", screen.contents());
        if let Incoming::Notification(n) = reader.next().unwrap() {
            assert_eq!(n.method, "session.output");
            let p = n.params.unwrap();
            screen.process(&ccd_protocol::b64::decode(p["data"].as_str().unwrap()).unwrap());
        }
    }
    // The daemon keeps no part of it, but the holder counts the client.
    drop(c);
    let mut d = sb.client();
    let info = d
        .call_value("sessions.get", json!({"session": sid}))
        .unwrap();
    assert_eq!(info["ccd"]["attached"], 1, "{info}");
    assert_eq!(
        info["ccd"]["clients"].as_array().map(Vec::len),
        Some(1),
        "{info}"
    );
    // Leaving the connection detaches.
    drop((reader, writer));
    wait_for(T, "the client gone", || {
        let info = d.call_value("sessions.get", json!({"session": sid})).ok()?;
        (info["ccd"]["attached"] == 0).then_some(())
    });
}

#[test]
fn a_direct_stream_keeps_the_mode_asked_for() {
    let sb = Sandbox::new();
    let sid = sb.new_session("direct-observe");
    let mut c = sb.client();
    let r = c
        .call_value(
            "session.attach",
            json!({"session": sid, "direct": true, "mode": "observe"}),
        )
        .unwrap();
    assert_eq!(r["mode"], "observe", "{r}");
    let fd = c.take_passed_fd().expect("the holder connection");
    let (mut reader, mut writer, _) = Client::direct_stream(fd).unwrap();
    let id = writer
        .send(
            "session.input",
            json!({"data": ccd_protocol::b64::encode(b"not mine\r")}),
        )
        .unwrap();
    let deadline = Instant::now() + T;
    loop {
        assert!(Instant::now() < deadline, "no reply to the input");
        if let Incoming::Response(r) = reader.next().unwrap() {
            assert_eq!(r.id, Some(id));
            let e = r.outcome.expect_err("an observer's keys are refused");
            assert_eq!(e.code, -32010, "{e:?}");
            break;
        }
    }
}

#[test]
fn without_direct_no_connection_is_passed() {
    let sb = Sandbox::new();
    let sid = sb.new_session("relayed");
    let mut c = sb.client();
    let r = c
        .call_value("session.attach", json!({"session": sid}))
        .unwrap();
    assert!(r.get("direct").is_none(), "{r}");
    assert!(c.take_passed_fd().is_none());
    let n = c.next_notification(Some(T)).unwrap().expect("the resync");
    assert_eq!(n.method, "session.resync");
}

/// `ccd attach 3c5e` is how people type it: a prefix of a held session's id
/// resolves without reading every transcript, but only while no other
/// session id (a transcript's name, a registry entry) shares it.
#[test]
fn a_held_prefix_resolves_and_a_shared_one_stays_ambiguous() {
    let sb = Sandbox::new();
    let sid = sb.new_session("prefix");
    let mut c = sb.client();
    let r = c
        .call_value("sessions.get", json!({"session": &sid[..6]}))
        .unwrap();
    assert_eq!(r["session_id"], sid.as_str(), "{r}");
    // Another session whose id starts the same, known only by its
    // transcript's name.
    let twin = format!("{}0000-0000-4000-8000-000000000000", &sid[..8]);
    let dir = sb.config.join("projects").join("-elsewhere");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join(format!("{twin}.jsonl")),
        format!("{{\"type\":\"user\",\"sessionId\":\"{twin}\",\"cwd\":\"/elsewhere\",\"message\":{{\"role\":\"user\",\"content\":\"hi\"}},\"timestamp\":\"2026-11-29T10:00:00.000Z\"}}\n"),
    )
    .unwrap();
    let e = c
        .call_value(
            "session.attach",
            json!({"session": &sid[..6], "direct": true}),
        )
        .unwrap_err();
    assert_eq!(e.rpc().map(|e| e.code), Some(-32004), "{e}");
    assert!(c.take_passed_fd().is_none());
    // One character more than they share is unique again.
    let r = c
        .call_value("sessions.get", json!({"session": &sid[..9]}))
        .unwrap();
    assert_eq!(r["session_id"], sid.as_str(), "{r}");
}

/// More direct streams than a holder takes besides the daemon's own
/// connections: each `session.attach {direct}` either passes a stream the
/// holder serves or is refused in its reply (`too_many_connections`, no
/// descriptor), and the daemon's own calls (`ccd screen`, `ccd send`) keep
/// working while every stream is open.
#[test]
fn direct_streams_past_the_holders_share_are_refused_and_leave_the_daemon_its_slots() {
    use ccd_holder::rpc::server::MAX_OTHER_CONNECTIONS;
    const ASKED: usize = 70;
    let sb = Sandbox::new();
    let sid = sb.new_session("direct-many");
    // The daemon's kept connections are open (a refresh ran).
    std::thread::sleep(Duration::from_millis(800));
    let mut c = sb.client();
    let mut streams = Vec::new();
    let mut refusals = Vec::new();
    for i in 0..ASKED {
        match c.call_value("session.attach", json!({"session": sid, "direct": true})) {
            Ok(r) => {
                assert_eq!(r["direct"], true, "attach {i}: {r}");
                let fd = c
                    .take_passed_fd()
                    .expect("a direct reply passes a connection");
                // The stream works: the holder's attach reply, then the
                // redraw.
                let (mut reader, writer, queued) = Client::direct_stream(fd)
                    .unwrap_or_else(|e| panic!("attach {i} promised a stream that failed: {e}"));
                let first = match queued.into_iter().next() {
                    Some(n) => n,
                    None => match reader.next().unwrap() {
                        Incoming::Notification(n) => n,
                        other => panic!("attach {i}: expected the resync, got {other:?}"),
                    },
                };
                assert_eq!(first.method, "session.resync", "attach {i}");
                streams.push((reader, writer));
            }
            Err(e) => {
                assert!(
                    c.take_passed_fd().is_none(),
                    "attach {i}: a refusal passes no connection"
                );
                let rpc = e.rpc().unwrap_or_else(|| panic!("attach {i}: {e}"));
                assert_eq!(rpc.code, -32603, "attach {i}: {rpc:?}");
                let data = rpc.data.clone().unwrap_or_default();
                assert_eq!(data["reason"], "too_many_connections", "{rpc:?}");
                assert_eq!(data["limit"], MAX_OTHER_CONNECTIONS, "{rpc:?}");
                assert!(rpc.message.contains("direct"), "{rpc:?}");
                refusals.push(i);
            }
        }
    }
    eprintln!(
        "{} direct streams served, {} refused",
        streams.len(),
        refusals.len()
    );
    assert!(
        streams.len() <= MAX_OTHER_CONNECTIONS && streams.len() + 4 >= MAX_OTHER_CONNECTIONS,
        "{} direct streams served",
        streams.len()
    );
    assert_eq!(streams.len() + refusals.len(), ASKED);
    // The daemon's own calls are served while every stream is open.
    let screen = sb.run(&["screen", &sid]);
    assert!(
        screen.status.success(),
        "ccd screen failed with {} direct streams open: {}",
        streams.len(),
        String::from_utf8_lossy(&screen.stderr)
    );
    let send = sb.run(&["send", &sid, "still reachable"]);
    assert!(
        send.status.success(),
        "ccd send failed with {} direct streams open: {}",
        streams.len(),
        String::from_utf8_lossy(&send.stderr)
    );
    // One closed, one more is taken.
    streams.pop();
    wait_for(T, "a direct stream taken again", || {
        let r = c
            .call_value("session.attach", json!({"session": sid, "direct": true}))
            .ok()?;
        assert_eq!(r["direct"], true, "{r}");
        let fd = c.take_passed_fd().expect("a connection");
        let (reader, writer, _) = Client::direct_stream(fd).ok()?;
        streams.push((reader, writer));
        Some(())
    });
}

/// Direct attaches asked all at once, from many connections, while the
/// holder's share is taken: each is refused in its reply, and the daemon's
/// own calls are served meanwhile. The direct streams the daemon is still
/// opening count as its own: it opens only a few to a holder at once, so
/// the holder never reaches its cap (every refusal is the direct streams'
/// share).
#[test]
fn concurrent_direct_attaches_past_the_share_leave_the_daemon_its_calls() {
    use ccd_holder::rpc::server::MAX_OTHER_CONNECTIONS;
    const ASKERS: usize = 12;
    let sb = Sandbox::new();
    let sid = sb.new_session("direct-flood");
    std::thread::sleep(Duration::from_millis(800));
    // The input connection is open too, as after any send.
    sb.ok(&["send", &sid, "first"]);
    let mut c = sb.client();
    let mut streams = Vec::new();
    while streams.len() < MAX_OTHER_CONNECTIONS {
        match c.call_value("session.attach", json!({"session": sid, "direct": true})) {
            Ok(_) => {
                let fd = c.take_passed_fd().expect("a connection");
                streams.push(Client::direct_stream(fd).expect("a working stream"));
            }
            Err(_) => break,
        }
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let askers: Vec<_> = (0..ASKERS)
        .map(|_| {
            let mut c = sb.client();
            let sid = sid.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let (mut refused, mut served) = (0, Vec::new());
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    match c.call_value("session.attach", json!({"session": sid, "direct": true})) {
                        Ok(_) => {
                            let fd = c.take_passed_fd().expect("a connection");
                            let s = Client::direct_stream(fd)
                                .unwrap_or_else(|e| panic!("a stream that failed: {e}"));
                            served.push(s);
                        }
                        Err(e) => {
                            let rpc = e.rpc().unwrap_or_else(|| panic!("{e}"));
                            let data = rpc.data.clone().unwrap_or_default();
                            assert_eq!(data["reason"], "too_many_connections", "{rpc:?}");
                            // The direct streams' share, never the cap:
                            // those being opened left the reserve room.
                            assert_eq!(data["limit"], MAX_OTHER_CONNECTIONS, "{rpc:?}");
                            assert!(c.take_passed_fd().is_none());
                            refused += 1;
                        }
                    }
                }
                (refused, served.len())
            })
        })
        .collect();
    let mut failures = Vec::new();
    for i in 0..5 {
        for args in [
            &["screen", &sid][..],
            &["send", &sid, "still reachable"][..],
        ] {
            let o = sb.run(args);
            if !o.status.success() {
                failures.push(format!(
                    "{i} {args:?}: {}",
                    String::from_utf8_lossy(&o.stderr)
                ));
            }
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (mut refused, mut served) = (0, 0);
    for a in askers {
        let (r, s) = a.join().unwrap();
        refused += r;
        served += s;
    }
    eprintln!(
        "{} streams open, {refused} concurrent direct attaches refused, {served} served; \
         {} daemon calls failed",
        streams.len(),
        failures.len()
    );
    assert!(refused > 0);
    assert!(failures.is_empty(), "{failures:#?}");
}
