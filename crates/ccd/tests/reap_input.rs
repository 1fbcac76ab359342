//! The reaper never stops a session a prompt was just submitted to (issue
//! 50, finding 3). Once Enter takes a prompt the screen shows an empty
//! prompt at once, but Claude Code says `busy` only later (~0.2 s on the
//! real CLI, more under load): a session that looked idle in that gap was
//! stopped and its prompt's turn lost. Here the fake CLI takes 2.5 s to
//! go busy (its turn ends at 3.5 s) and the idle limit is 1 s: the prompt
//! must still get its turn.

mod common;

use common::{row, wait_for, Sandbox};
use serde_json::Value;
use std::time::Duration;

const T: Duration = Duration::from_secs(30);

/// Whether the transcript at `path` holds an assistant record after the
/// user record holding `prompt`.
fn answered(path: &str, prompt: &str) -> bool {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let records: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let Some(at) = records
        .iter()
        .position(|r| r["type"] == "user" && r.to_string().contains(prompt))
    else {
        return false;
    };
    records[at + 1..].iter().any(|r| r["type"] == "assistant")
}

#[test]
fn a_prompt_submitted_just_before_the_reaper_looks_gets_its_turn() {
    let sb = Sandbox::with_env(&[
        ("CCD_REAP_IDLE_SECS", "1"),
        ("FAKE_CLAUDE_TURN_MS", "3500"),
        ("FAKE_CLAUDE_BUSY_AFTER_MS", "2500"),
    ]);
    let sid = sb.new_session("late");
    // Pinned until it has been idle past the limit: once unpinned, the
    // reaper would stop it on its next look (every 250 ms).
    sb.ok(&["pin", &sid]);
    std::thread::sleep(Duration::from_millis(1500));
    sb.ok(&["unpin", &sid]);
    sb.ok(&["send", &sid, "the last prompt"]);
    wait_for(T, "the last prompt's turn", || {
        let r = row(&sb, &sid);
        assert_ne!(
            r["ccd"]["lifecycle"],
            "reaped",
            "stopped with a prompt just submitted: {r}\n{}",
            sb.logs()
        );
        let path = r["transcript"].as_str()?.to_string();
        answered(&path, "the last prompt").then_some(())
    });
    // At rest again, it is reaped as usual.
    wait_for(T, "the session reaped once it rests", || {
        (row(&sb, &sid)["ccd"]["lifecycle"] == "reaped").then_some(())
    });
}
