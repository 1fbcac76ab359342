//! A relative cwd (in a transcript, or given to session.new) is no place to
//! start a session: it would resolve against the daemon's own current
//! directory. The decision is `cwd_missing` naming the transcript and cwd.

mod common;

use common::Sandbox;
use serde_json::json;

const SID: &str = "eeeeeeee-1111-4222-8333-444455556666";

fn assert_cwd_missing(
    r: Result<serde_json::Value, ccd_client::ClientError>,
    what: &str,
) -> ccd_protocol::RpcError {
    match r {
        Err(ccd_client::ClientError::Rpc(e)) => {
            assert_eq!(e.code, -32006, "{what}: {e:?}");
            e
        }
        other => panic!("{what}: expected cwd_missing, got {other:?}"),
    }
}

#[test]
fn a_relative_cwd_in_a_transcript_is_not_resumed_nor_forked() {
    let sb = Sandbox::new();
    // The daemon runs in a folder where `proj` exists: resolving the
    // relative cwd against it would "work" and start claude there.
    std::fs::create_dir_all(sb.work.join("proj")).unwrap();
    let o = sb
        .cmd(&["screen", "no-such-session"])
        .current_dir(&sb.work)
        .output()
        .unwrap();
    assert!(!o.status.success());
    let transcript = ccd_testkit::gen::transcript(&sb.config, SID, "proj", 1);
    let transcript = transcript.to_string_lossy().into_owned();
    let mut c = sb.client();
    let attach = c.call_value(
        "session.attach",
        json!({"session": SID, "mode": "interactive"}),
    );
    let e = assert_cwd_missing(attach, "attach");
    assert!(
        e.message.contains("relative")
            && e.message.contains("proj")
            && e.message.contains(&transcript),
        "{}",
        e.message
    );
    let data = e.data.unwrap_or_default();
    assert_eq!(data["cwd"], "proj", "{data}");
    assert_eq!(data["transcript"], transcript.as_str(), "{data}");
    assert_eq!(data["session"], SID, "{data}");

    let e = assert_cwd_missing(
        c.call_value("session.fork", json!({"session": SID})),
        "fork",
    );
    assert!(e.message.contains("relative"), "{}", e.message);

    // Nothing was started.
    let held = c
        .call_value("sessions.list", json!({"held_only": true}))
        .unwrap();
    assert_eq!(held["sessions"], json!([]), "{held}");

    // The CLI says the same.
    let o = sb.run(&["fork", SID, "--detach"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("relative working directory proj"), "{err}");
}

#[test]
fn session_new_refuses_a_relative_cwd() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.work.join("proj")).unwrap();
    let _ = sb
        .cmd(&["screen", "no-such-session"])
        .current_dir(&sb.work)
        .output()
        .unwrap();
    let mut c = sb.client();
    let e = assert_cwd_missing(c.call_value("session.new", json!({"cwd": "proj"})), "new");
    assert!(e.message.contains("not an absolute path"), "{}", e.message);
}
