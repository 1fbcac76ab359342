//! Opt-in idle reaping, with a 2-second limit.

mod common;

use common::{row, wait_for, Sandbox};
use serde_json::json;
use std::time::Duration;

const T: Duration = Duration::from_secs(30);

#[test]
fn idle_sessions_are_reaped_unless_pinned_attached_or_working() {
    let sb = Sandbox::with_env(&[("CCD_REAP_IDLE_SECS", "2"), ("FAKE_CLAUDE_TURN_MS", "300")]);
    let reaped = sb.new_session_with_a_turn("reaped");
    let pinned = sb.new_session_with_a_turn("pinned");
    sb.ok(&["pin", &pinned]);
    let background = sb.new_session_with_a_turn("background");
    // The transcript says a background shell is still running.
    let path = row(&sb, &background)["transcript"]
        .as_str()
        .unwrap()
        .to_string();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    use std::io::Write;
    writeln!(f, "{}", json!({"type":"assistant","message":{"content":[{"type":"tool_use","id":"toolu_bg","name":"Bash","input":{"command":"sleep 999","run_in_background":true}}]}})).unwrap();
    // An attached client keeps a session.
    let attached = sb.new_session_with_a_turn("attached");
    let mut c = sb.client();
    c.call_value(
        "session.attach",
        json!({"session": attached, "mode": "observe"}),
    )
    .unwrap();

    wait_for(T, "the idle session reaped", || {
        let r = row(&sb, &reaped);
        (r["state"] == "dead" && r["ccd"]["lifecycle"] == "reaped").then_some(())
    });
    std::thread::sleep(Duration::from_secs(3));
    for (name, sid) in [
        ("pinned", &pinned),
        ("background", &background),
        ("attached", &attached),
    ] {
        let r = row(&sb, sid);
        assert_eq!(r["state"], "live", "{name} was reaped: {r}");
    }
    // Reaped sessions stay resumable: the transcript is there, attach resumes.
    let r = row(&sb, &reaped);
    assert!(r["transcript"].as_str().is_some());
    let logs = sb.logs_with(&["reaping an idle session", "context_tokens"]);
    assert!(
        logs.contains("reaping an idle session") && logs.contains("context_tokens"),
        "reap not logged"
    );
    sb.ok(&["unpin", &pinned]);
    wait_for(T, "the unpinned session reaped", || {
        (row(&sb, &pinned)["ccd"]["lifecycle"] == "reaped").then_some(())
    });
}

#[test]
fn without_the_setting_nothing_is_reaped() {
    let sb = Sandbox::new();
    let sid = sb.new_session_with_a_turn("kept");
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(row(&sb, &sid)["state"], "live");
}

/// A session the memory budget stops before its first turn has no
/// transcript (Claude Code writes one at the first turn): `ccd attach`
/// with the id `ccd new` printed says what happened and how to start
/// again, not "no session matches".
#[test]
fn a_session_stopped_before_its_first_turn_says_so_on_attach() {
    let sb = Sandbox::with_env(&[
        ("CCD_COST_INTERVAL_MS", "300"),
        ("CCD_REAP_MIN_IDLE_SECS", "1"),
        ("CCD_MEMORY_BUDGET", "1KiB"),
    ]);
    let sid = sb.new_session("unstarted");
    let cwd = sb.work.join("unstarted");
    let mut c = sb.client();
    wait_for(T, "the session stopped by the budget", || {
        let held = c
            .call_value("sessions.list", json!({"held_only": true}))
            .ok()?;
        held["sessions"]
            .as_array()?
            .iter()
            .any(|r| r["session_id"] == sid.as_str() && r["ccd"]["lifecycle"] == "reaped")
            .then_some(())
    });
    assert!(
        row(&sb, &sid)["transcript"].is_null(),
        "it had a transcript"
    );
    let want = format!(
        "session {sid} was stopped by ccd (memory budget) before its first turn; it has no conversation to resume"
    );
    // The protocol: transcript_missing, with that message.
    match c.call_value(
        "session.attach",
        json!({"session": sid, "mode": "interactive"}),
    ) {
        Err(ccd_client::ClientError::Rpc(e)) => {
            assert_eq!(e.code, -32007, "{e:?}");
            assert!(e.message.starts_with(&want), "{e:?}");
            assert!(
                e.message
                    .contains(&format!("`ccd new --cwd {}`", cwd.display())),
                "{e:?}"
            );
        }
        other => panic!("expected transcript_missing, got {other:?}"),
    }
    // `ccd attach` on a terminal, by the short id it printed.
    let mut run = common::pty::PtyRun::start(&sb, &["attach", &sid[..8]], None);
    assert_ne!(run.wait_exit(Duration::from_secs(20)), 0);
    let text = run.raw_text();
    assert!(text.contains("before its first turn"), "{text}");
    assert!(!text.contains("no session matches"), "{text}");
}
