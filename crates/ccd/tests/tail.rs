//! `session.tail`: a conversation's last items through the API (what the
//! dashboard previews for another machine's session): bounded, a
//! half-written last line skipped, clear errors for no transcript and no
//! session.

mod common;

use common::{wait_for, Sandbox};
use serde_json::json;
use std::io::Write;
use std::time::Duration;

const T: Duration = Duration::from_secs(20);
const DEAD: &str = "adadadad-1111-4222-8333-444455556666";

#[test]
fn the_last_items_bounded_from_any_transcript_and_clear_errors_without_one() {
    let sb = Sandbox::new();
    // A dead session of 700 turns, its last line half written.
    let proj = sb.project("long");
    let path = ccd_testkit::gen::transcript(&sb.config, DEAD, proj.to_str().unwrap(), 700);
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(b"{\"type\":\"user\",\"message\":{\"role\":\"us")
        .unwrap();
    let mut c = sb.client_or_start();

    let r = c
        .call_value("session.tail", json!({"session": &DEAD[..8]}))
        .unwrap();
    assert_eq!(r["session"], DEAD, "{r}");
    let items = r["items"].as_array().unwrap();
    assert_eq!(items.len(), 60, "the default");
    let last = items.last().unwrap();
    assert!(
        items
            .iter()
            .any(|i| i["kind"] == "user" && i["text"] == format!("prompt 699 of {DEAD}")),
        "the last turn is there: {last}"
    );
    // More than the bound is cut to it.
    let r = c
        .call_value("session.tail", json!({"session": DEAD, "items": 100_000}))
        .unwrap();
    assert_eq!(r["items"].as_array().unwrap().len(), 500);
    let r = c
        .call_value("session.tail", json!({"session": DEAD, "items": 1}))
        .unwrap();
    assert_eq!(r["items"].as_array().unwrap().len(), 1, "{r}");

    // A held session: its transcript once something was said.
    let held = sb.new_session("held");
    match c.call_value("session.tail", json!({"session": held})) {
        Err(ccd_client::ClientError::Rpc(e)) => {
            assert_eq!(e.code, -32007, "{e:?}");
            assert!(e.message.contains("no transcript yet"), "{}", e.message);
        }
        other => panic!("expected transcript_missing, got {other:?}"),
    }
    sb.ok(&["send", &held, "said once"]);
    wait_for(T, "the held session's tail", || {
        let r = c
            .call_value("session.tail", json!({"session": held}))
            .ok()?;
        r["items"]
            .as_array()?
            .iter()
            .any(|i| i["text"] == "said once")
            .then_some(())
    });

    // No such session; bad params.
    match c.call_value("session.tail", json!({"session": "no-such-session"})) {
        Err(ccd_client::ClientError::Rpc(e)) => assert_eq!(e.code, -32003, "{e:?}"),
        other => panic!("expected session_not_found, got {other:?}"),
    }
    match c.call_value("session.tail", json!({"session": DEAD, "items": -1})) {
        Err(ccd_client::ClientError::Rpc(e)) => assert_eq!(e.code, -32602, "{e:?}"),
        other => panic!("expected invalid_params, got {other:?}"),
    }
    // The daemon keeps serving.
    c.call_value("sessions.get", json!({"session": DEAD}))
        .unwrap();
}
