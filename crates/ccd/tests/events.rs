//! Events and `ccd send`, end to end with the fake claude.

mod common;

use common::external::external;
use common::{wait_for, Sandbox};
use serde_json::{json, Value};
use std::io::Write;
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(20);

/// An event type and a test on the event.
type Wanted<'a> = (&'a str, &'a dyn Fn(&Value) -> bool);

/// Collects events until `pred` has matched each of `wanted` in order.
fn expect_events(c: &mut ccd_client::Client, wanted: &[Wanted<'_>]) -> Vec<Value> {
    let deadline = Instant::now() + T;
    let mut seen = Vec::new();
    let mut i = 0;
    while i < wanted.len() {
        assert!(
            Instant::now() < deadline,
            "missing {} after {seen:#?}",
            wanted[i].0
        );
        let Some(e) = common::next_event(c, Duration::from_millis(200)) else {
            continue;
        };
        if e["type"] == wanted[i].0 && (wanted[i].1)(&e) {
            i += 1;
        }
        seen.push(e);
    }
    seen
}

#[test]
fn an_external_session_start_status_and_exit_are_events() {
    // Turns long enough that `busy` is a state, not a blink.
    let sb = Sandbox::with_env(&[("FAKE_CLAUDE_TURN_MS", "800")]);
    let mut c = sb.client_or_start();
    c.call_value("events.subscribe", json!({})).unwrap();
    let dir = sb.project("evented");
    let mut ext = external(&sb, &dir);
    let sid = ext.sid.clone();
    let is = |s: &str| {
        let s = s.to_string();
        move |e: &Value| e["session"] == s.as_str()
    };
    let mine = is(&sid);
    let seen = expect_events(
        &mut c,
        &[
            ("session.appeared", &|e: &Value| {
                mine(e) && e["held"] == false
            }),
            ("session.status", &|e: &Value| {
                mine(e) && e["status"] == "busy"
            }),
            ("session.status", &|e: &Value| {
                mine(e) && e["status"] == "idle" && e["previous"] == "busy"
            }),
            ("session.context", &|e: &Value| {
                mine(e) && e["context_tokens"].as_u64().unwrap_or(0) > 0
            }),
        ],
    );
    assert!(!seen.is_empty());
    // A permission prompt: waiting, and attention with the reason.
    ext._writer.write_all(b"perm rm -rf build\r").unwrap();
    expect_events(
        &mut c,
        &[("session.attention", &|e: &Value| {
            mine(e) && e["reason"] == "permission prompt"
        })],
    );
    // The process exits: the session disappears.
    ext._writer.write_all(b"1").unwrap();
    std::thread::sleep(Duration::from_millis(500));
    ext._writer.write_all(b"/exit\r").unwrap();
    expect_events(&mut c, &[("session.disappeared", &|e: &Value| mine(e))]);
}

/// A process that ends without removing its registry entry (a crash,
/// SIGKILL) is seen ending — the daemon waits on the process itself — not
/// found by a periodic rescan (`RESCAN_NET`, a minute, where the folder and
/// the processes are watched): the session disappears while its file stays.
#[test]
fn an_external_session_killed_with_its_entry_left_behind_disappears() {
    let sb = Sandbox::new();
    let mut c = sb.client_or_start();
    c.call_value("events.subscribe", json!({})).unwrap();
    let dir = sb.project("crashing");
    let ext = external(&sb, &dir);
    let sid = ext.sid.clone();
    let mine = |e: &Value| e["session"] == sid.as_str();
    expect_events(&mut c, &[("session.appeared", &mine)]);
    let pid = ext.child.process_id().unwrap();
    let entry = sb.config.join("sessions").join(format!("{pid}.json"));
    assert!(entry.exists());
    // SIGKILL: no cleanup (portable-pty's kill starts with SIGHUP, which
    // the CLI handles by removing its entry).
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    // Within T (20 s): a rescan would come only after a minute.
    expect_events(&mut c, &[("session.disappeared", &mine)]);
    assert!(entry.exists(), "the entry stays behind");
}

#[test]
fn held_sessions_report_lifecycle_and_exit() {
    let sb = Sandbox::new();
    let mut c = sb.client_or_start();
    c.call_value(
        "events.subscribe",
        json!({"types": ["session.lifecycle", "session.exited"]}),
    )
    .unwrap();
    let sid = sb.new_session("held");
    let is_mine = |e: &Value| e["session"] == sid.as_str();
    expect_events(
        &mut c,
        &[("session.lifecycle", &|e: &Value| {
            is_mine(e) && e["status"] == "idle"
        })],
    );
    sb.ok(&["kill", &sid]);
    let seen = expect_events(
        &mut c,
        &[("session.exited", &|e: &Value| {
            is_mine(e) && e["exit_code"] == 143
        })],
    );
    assert!(
        seen.iter()
            .all(|e| e["type"] == "session.lifecycle" || e["type"] == "session.exited"),
        "type filter: {seen:#?}"
    );
}

/// A session that has been still for a while is refreshed slowly by the
/// daemon, but a change of its registry entry is seen at once: its turn
/// still shows as `busy` then `idle`, within a second of each.
#[test]
fn a_still_held_session_reports_its_next_turn_promptly() {
    let sb = Sandbox::with_env(&[("FAKE_CLAUDE_TURN_MS", "1500")]);
    let mut c = sb.client_or_start();
    c.call_value("events.subscribe", json!({"types": ["session.lifecycle"]}))
        .unwrap();
    let sid = sb.new_session("still");
    let is_mine = |e: &Value| e["session"] == sid.as_str();
    expect_events(
        &mut c,
        &[("session.lifecycle", &|e: &Value| {
            is_mine(e) && e["status"] == "idle"
        })],
    );
    // Longer than the daemon's quiet refresh period (5 s).
    std::thread::sleep(Duration::from_secs(7));
    while c
        .next_notification(Some(Duration::from_millis(1)))
        .unwrap()
        .is_some()
    {}
    let typed = Instant::now();
    sb.ok(&["send", &sid, "a slow turn"]);
    let seen = expect_events(
        &mut c,
        &[
            ("session.lifecycle", &|e: &Value| {
                is_mine(e) && e["status"] == "busy"
            }),
            ("session.lifecycle", &|e: &Value| {
                is_mine(e) && e["status"] == "idle"
            }),
        ],
    );
    // The busy event came while the turn (1.5 s) was still running.
    let busy_at = seen
        .iter()
        .find(|e| e["status"] == "busy")
        .and_then(|e| e["at"].as_i64())
        .expect("a busy event");
    let idle_at = seen
        .iter()
        .rev()
        .find(|e| e["status"] == "idle")
        .and_then(|e| e["at"].as_i64())
        .expect("an idle event");
    assert!(
        idle_at - busy_at >= 500,
        "busy at {busy_at}, idle at {idle_at}: the busy state was seen late"
    );
    assert!(typed.elapsed() < Duration::from_secs(10));
}

#[test]
fn send_types_at_the_prompt_and_refuses_while_a_dialog_is_open() {
    let sb = Sandbox::new();
    let sid = sb.new_session("send");
    sb.ok(&["send", &sid, "first prompt"]);
    let projects = sb.config.join("projects");
    let transcript = wait_for(T, "the transcript", || {
        let p = ccd_claude::transcript::find_by_session_id(&projects, &sid)?;
        std::fs::read_to_string(&p)
            .ok()?
            .contains("echo: first prompt")
            .then_some(p)
    });
    // Open the permission dialog, then try to send.
    sb.ok(&["send", &sid, "perm rm -rf build"]);
    wait_for(T, "the permission dialog", || {
        sb.ok(&["screen", &sid])
            .contains("Do you want to proceed?")
            .then_some(())
    });
    let o = sb.run(&["send", &sid, "second prompt"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("not at its prompt"), "{err}");
    std::thread::sleep(Duration::from_millis(300));
    assert!(!std::fs::read_to_string(&transcript)
        .unwrap()
        .contains("second prompt"));
    // Multi-line prompts arrive whole (bracketed paste).
    let mut c = sb.client();
    c.call_value(
        "session.input",
        json!({"session": sid, "data": ccd_protocol::b64::encode(b"1")}),
    )
    .unwrap();
    wait_for(T, "the prompt back", || {
        let o = sb.run(&["send", &sid, "line one\nline two"]);
        o.status.success().then_some(())
    });
    wait_for(T, "the multi-line turn", || {
        std::fs::read_to_string(&transcript)
            .ok()?
            .contains("line one\\nline two")
            .then_some(())
    });
}

#[test]
fn a_held_sessions_permission_dialog_is_attention_until_answered() {
    let sb = Sandbox::new();
    let sid = sb.new_session("permitted");
    let mut c = sb.client_or_start();
    c.call_value("events.subscribe", json!({})).unwrap();
    let input = |c: &mut ccd_client::Client, data: &[u8]| {
        c.call_value(
            "session.input",
            json!({"session": sid, "data": ccd_protocol::b64::encode(data)}),
        )
        .unwrap();
    };
    input(&mut c, b"perm echo hi\r");
    let seen = expect_events(
        &mut c,
        &[("session.attention", &|e: &Value| {
            e["session"] == sid.as_str() && e["reason"] == "permission"
        })],
    );
    let a = seen.last().cloned().unwrap_or(Value::Null);
    assert_eq!(a["held"], true, "{a}");
    assert!(a["holder"].as_str().is_some_and(|h| !h.is_empty()), "{a}");
    assert_eq!(a["tool"], "Bash command", "{a}");
    assert_eq!(a["detail"], "echo hi", "{a}");
    let options: Vec<&str> = a["options"]
        .as_array()
        .map(|o| o.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    assert_eq!(options.len(), 3, "{a}");
    assert_eq!(options[0], "Yes", "{a}");
    assert!(options[2].starts_with("No"), "{a}");
    // `ccd ls` shows what the session waits for.
    let ls = wait_for(T, "the mark in ccd ls", || {
        let out = sb.ok(&["ls"]);
        out.contains("[permission: Bash command echo hi]")
            .then_some(out)
    });
    assert!(ls.contains("waiting"), "{ls}");
    // Refused with Esc: cleared, once, and the mark goes.
    input(&mut c, b"\x1b");
    let seen = expect_events(
        &mut c,
        &[("session.attention_cleared", &|e: &Value| {
            e["session"] == sid.as_str()
        })],
    );
    let cl = seen.last().cloned().unwrap_or(Value::Null);
    assert_eq!(cl["holder"], a["holder"], "{cl}");
    let again = seen
        .iter()
        .filter(|e| e["type"] == "session.attention" && e["reason"] == "permission")
        .count();
    assert_eq!(again, 0, "one attention per dialog: {seen:#?}");
    wait_for(T, "the mark gone", || {
        (!sb.ok(&["ls"]).contains("[permission:")).then_some(())
    });
}
