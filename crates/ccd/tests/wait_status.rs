//! `ccd wait` and `ccd status` against the fake claude: a waiter returns
//! 0 when the permission prompt shows (at once when it already does), 124
//! when `--timeout` passes, 3 when the session ends first; a session
//! outside ccd is followed too; `ccd status` counts what needs someone,
//! what is busy and what is idle in each format; and without a daemon it
//! says so at once and starts none.

mod common;

use common::{wait_for, Sandbox};
use serde_json::Value;
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(30);

/// `ccd wait ...` started in the background.
fn waiter(sb: &Sandbox, args: &[&str]) -> Child {
    let mut full = vec!["wait"];
    full.extend_from_slice(args);
    sb.cmd(&full)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ccd wait starts")
}

/// Its exit status and output, once it exits (within `within`).
fn finished(mut child: Child, within: Duration) -> (i32, String) {
    let deadline = Instant::now() + within;
    loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            let out = child.wait_with_output().expect("output");
            return (s.code().unwrap_or(-1), stderr(&out));
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!("ccd wait still running after {within:?}: {}", stderr(&out));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn still_running(child: &mut Child) -> bool {
    child.try_wait().expect("try_wait").is_none()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

#[test]
fn wait_returns_when_the_prompt_shows_at_once_if_it_does_on_timeout_and_when_it_ends() {
    let sb = Sandbox::new();
    let sid = sb.new_session("waited");

    // Idle: a waiter for a prompt waits.
    let mut w = waiter(&sb, &[&sid, "--until", "needs-you", "--timeout", "60"]);
    std::thread::sleep(Duration::from_millis(1500));
    assert!(still_running(&mut w), "returned while no prompt showed");
    sb.ok(&["send", &sid, "perm touch waited.txt"]);
    let (status, err) = finished(w, T);
    assert_eq!(status, 0, "{err}");
    // Claude Code said so (its status), or ccd saw the dialog on screen.
    let info = common::row(&sb, &sid);
    assert!(
        info["status"] == "waiting" || !info["ccd"]["permission_prompt"].is_null(),
        "the prompt shows: {info}"
    );
    // Its id follows from the screen (what `ccd approve` answers).
    wait_for(T, "the prompt's id", || {
        let r = common::row(&sb, &sid);
        (!r["ccd"]["permission_prompt"].is_null()).then_some(())
    });

    // Already there: at once.
    let started = Instant::now();
    let o = sb.run(&["wait", &sid, "--until", "needs-you"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(started.elapsed() < Duration::from_secs(5));

    // Not idle while the prompt shows: the timeout's own status.
    let started = Instant::now();
    let o = sb.run(&["wait", &sid, "--until", "idle", "--timeout", "0.8"]);
    let took = started.elapsed();
    assert_eq!(code(&o), 124, "{}", stderr(&o));
    assert!(stderr(&o).contains("--timeout"), "{}", stderr(&o));
    assert!(took >= Duration::from_millis(800), "gave up after {took:?}");
    assert!(
        took < Duration::from_secs(10),
        "gave up only after {took:?}"
    );

    // Answered: idle again.
    let w = waiter(&sb, &[&sid, "--until", "idle", "--timeout", "60"]);
    sb.ok(&["approve", &sid]);
    let (status, err) = finished(w, T);
    assert_eq!(status, 0, "{err}");
    let o = sb.run(&["wait", &sid, "--until", "idle", "--timeout", "5"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));

    // Ended: a waiter for the end returns 0, one for a prompt 3.
    let mut gone = waiter(&sb, &[&sid, "--until", "exited", "--timeout", "60"]);
    let mut never = waiter(&sb, &[&sid, "--until", "needs-you", "--timeout", "60"]);
    std::thread::sleep(Duration::from_millis(1000));
    assert!(still_running(&mut gone) && still_running(&mut never));
    sb.ok(&["kill", &sid]);
    let (status, err) = finished(gone, T);
    assert_eq!(status, 0, "{err}");
    let (status, err) = finished(never, T);
    assert_eq!(status, 3, "{err}");
    assert!(err.contains("ended before"), "{err}");
    // And at once once it has.
    let o = sb.run(&["wait", &sid, "--until", "idle"]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    let o = sb.run(&["wait", &sid, "--until", "exited"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));

    // No such session: an error, not a state.
    let o = sb.run(&["wait", "no-such-session", "--until", "idle"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
}

/// `ccd wait`'s stdout, once it exits.
fn finished_out(mut child: Child, within: Duration) -> (i32, String, String) {
    let deadline = Instant::now() + within;
    while child.try_wait().expect("try_wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!("ccd wait still running after {within:?}: {}", stderr(&out));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("output");
    (
        code(&out),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr(&out),
    )
}

#[test]
fn needs_you_returns_with_the_prompt_id_when_the_dialog_is_drawn_after_the_registry_says_waiting() {
    // The registry says `waiting` 1.5 s before the dialog is drawn (the
    // real CLI: ~0.1 s): the wait returns once the prompt id is known, and
    // approving that id right after works.
    let sb = Sandbox::with_env(&[("FAKE_CLAUDE_DIALOG_LAG_MS", "1500")]);
    let sid = sb.new_session("lagged");
    let w = waiter(&sb, &[&sid, "--until", "needs-you", "--timeout", "60"]);
    std::thread::sleep(Duration::from_millis(500));
    sb.ok(&["send", &sid, "perm touch lagged.txt"]);
    let (status, out, err) = finished_out(w, T);
    assert_eq!(status, 0, "{err}");
    let row = common::row(&sb, &sid);
    let prompt = row["ccd"]["permission_prompt"]
        .as_str()
        .unwrap_or_else(|| panic!("returned before the prompt id was known: {out:?} {row}"))
        .to_string();
    let words: Vec<&str> = out.trim_end().split(' ').collect();
    assert_eq!(
        words[..4],
        ["needs-you", sid.as_str(), "prompt", prompt.as_str()],
        "{out:?}"
    );
    assert!(out.trim_end().ends_with("touch lagged.txt"), "{out:?}");
    assert_eq!(out.lines().count(), 1, "{out:?}");
    sb.ok(&["approve", &sid, "--prompt", &prompt]);
    let o = sb.run(&["wait", &sid, "--until", "idle", "--timeout", "20"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout), format!("idle {sid}\n"));
}

#[test]
fn needs_you_returns_without_a_prompt_id_after_the_grace_when_the_dialog_never_shows() {
    // Drawn 20 s after the registry says `waiting`: past the 3 s the wait
    // gives the screen (DETAIL_GRACE), it returns without the id, says so.
    let sb = Sandbox::with_env(&[("FAKE_CLAUDE_DIALOG_LAG_MS", "20000")]);
    let sid = sb.new_session("undrawn");
    let w = waiter(&sb, &[&sid, "--until", "needs-you", "--timeout", "60"]);
    std::thread::sleep(Duration::from_millis(500));
    sb.ok(&["send", &sid, "perm touch undrawn.txt"]);
    let waiting = wait_for(T, "the registry's waiting", || {
        (common::row(&sb, &sid)["status"] == "waiting").then(Instant::now)
    });
    let (status, out, err) = finished_out(w, T);
    let took = waiting.elapsed();
    assert_eq!(status, 0, "{err}");
    assert!(
        took >= Duration::from_millis(2500) && took < Duration::from_secs(10),
        "returned {took:?} after the registry said waiting"
    );
    assert_eq!(out, format!("needs-you {sid} permission prompt\n"), "{err}");
    assert!(err.contains("no prompt id"), "{err}");
    assert!(common::row(&sb, &sid)["ccd"]["permission_prompt"].is_null());
}

#[test]
fn wait_follows_a_session_running_outside_ccd() {
    let sb = Sandbox::new();
    let dir = sb.project("outside");
    let ext = common::external::external(&sb, &dir);
    let sid = ext.sid.clone();
    // Its turn is done: idle now (the daemon is started by the wait).
    let o = sb.run(&["wait", &sid, "--until", "idle", "--timeout", "20"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let mut w = waiter(&sb, &[&sid, "--until", "exited", "--timeout", "60"]);
    std::thread::sleep(Duration::from_millis(1000));
    assert!(still_running(&mut w), "returned while it ran");
    drop(ext); // kills the outside process
    let (status, err) = finished(w, T);
    assert_eq!(status, 0, "{err}");
}

#[test]
fn status_counts_what_needs_someone_what_is_busy_and_what_is_idle_in_each_format() {
    // Turns of 8 s: a busy session stays busy while it is counted.
    let sb = Sandbox::with_env(&[("FAKE_CLAUDE_TURN_MS", "8000")]);
    // One outside ccd too (counted from Claude Code's registry), its
    // first turn over before the counts are read.
    let outside = sb.project("outside");
    let _ext = common::external::external(&sb, &outside);
    let asking = sb.new_session("asking");
    let working = sb.new_session("working");
    let _resting = sb.new_session("resting");
    sb.ok(&["send", &asking, "perm touch counted.txt"]);
    let o = sb.run(&["wait", &asking, "--until", "needs-you", "--timeout", "30"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    sb.ok(&["send", &working, "think for a while"]);

    let plain = wait_for(T, "one of each in `ccd status`", || {
        let o = sb.run(&["status"]);
        let s = String::from_utf8_lossy(&o.stdout).into_owned();
        (s.trim_end() == "1 needs you · 1 busy · 2 idle").then_some(s)
    });
    assert!(
        plain.ends_with('\n') && plain.lines().count() == 1,
        "{plain:?}"
    );
    assert!(!plain.contains("#["), "no tmux styles in plain: {plain:?}");

    let o = sb.run(&["status", "--format", "tmux"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim_end(),
        "#[fg=red,bold]1 needs you#[default] · #[fg=yellow]1 busy#[default] · 2 idle"
    );

    let o = sb.run(&["status", "--format", "json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).expect("one JSON object");
    assert_eq!(
        (&v["needs_you"], &v["busy"], &v["idle"]),
        (&Value::from(1), &Value::from(1), &Value::from(2)),
        "{v}"
    );
    assert_eq!(v["machines"][0]["host"], "local", "{v}");
    assert_eq!(v["machines"][0]["needs_you"], 1, "{v}");
    assert_eq!(v["waiting"].as_array().map(Vec::len), Some(1), "{v}");
    assert_eq!(v["waiting"][0]["session"], asking.as_str(), "{v}");
    let why = v["waiting"][0]["why"].as_str().unwrap_or_default();
    assert!(why.contains("touch counted.txt"), "{v}");
}

#[test]
fn status_without_a_daemon_says_so_at_once_and_starts_none() {
    let sb = Sandbox::new();
    for format in ["plain", "tmux"] {
        let started = Instant::now();
        let o = sb.run(&["status", "--format", format]);
        let took = started.elapsed();
        assert_eq!(code(&o), 1, "{}", stderr(&o));
        assert_eq!(String::from_utf8_lossy(&o.stdout), "ccd: no daemon\n");
        assert!(took < Duration::from_secs(1), "{format}: took {took:?}");
    }
    let o = sb.run(&["status", "--format", "json"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).expect("one JSON object");
    assert_eq!(v["machines"][0]["error"], "no daemon", "{v}");
    assert_eq!(v["needs_you"], 0, "{v}");
    // Nothing started: no daemon, no socket.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(sb.daemon_pid(), None);
    assert!(!sb.sock.join("ccd.sock").exists(), "a socket appeared");
}
