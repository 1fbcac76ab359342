//! Focus suppression fed for real (issue 53): `ccd attach` under a PTY
//! asks its terminal for focus reports, the holder reading the handed-off
//! terminal finds `ESC [ I` / `ESC [ O` (split across reads too) and tells
//! the client, the client tells the daemon (`session.focus`), the daemon
//! publishes `session.focus` events and its notification rules hold a
//! permission prompt back while the session is focused — unless
//! `notify_when_focused`. Losing the focus, or detaching, lets the next
//! prompt through. The fake claude turns focus reporting on itself, like
//! Claude Code, so the reports stay its keys too; a program that did not
//! gets none (`ccd-holder/tests/terminal.rs`). A client relaying the keys
//! itself (`CCD_TERMINAL_HANDOFF=0`) tells the focus the program's own
//! reports bring.

mod common;

use ccd_testkit::notify::CommandSink;
use common::pty::PtyRun;
use common::{holder_info, next_event, wait_for, Sandbox};
use serde_json::json;
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(20);

/// A sandbox whose `[notify]` has `notify`, `permission` its one reason,
/// and a command sink keeping each notification.
fn sandbox(notify: &str) -> (Sandbox, CommandSink) {
    sandbox_with_env(notify, &[])
}

/// [`sandbox`] with `env` set for every ccd process.
fn sandbox_with_env(notify: &str, env: &[(&str, &str)]) -> (Sandbox, CommandSink) {
    let sb = Sandbox::with_env(env);
    let root = sb.tmp.path().canonicalize().unwrap();
    let sink = CommandSink::new(&root);
    sink.write_config(&root, &format!("reasons = [\"permission\"]\n{notify}"));
    (sb, sink)
}

/// A client subscribed to the daemon's `session.focus` events.
fn focus_events(sb: &Sandbox) -> ccd_client::Client {
    let mut c = sb.client();
    c.call_value("events.subscribe", json!({"types": ["session.focus"]}))
        .unwrap();
    c
}

/// Waits for the `session.focus` event saying `sid` is `focused`.
fn await_focus(ev: &mut ccd_client::Client, sid: &str, focused: bool) {
    let deadline = Instant::now() + T;
    while Instant::now() < deadline {
        if let Some(e) = next_event(ev, Duration::from_millis(500)) {
            if e["type"] == "session.focus" && e["session"] == sid && e["focused"] == focused {
                return;
            }
        }
    }
    panic!("no session.focus event saying {sid} is focused={focused}");
}

/// Waits until `sid` shows its permission dialog.
fn await_dialog(sb: &Sandbox, sid: &str) {
    wait_for(T, "the permission dialog", || {
        sb.ok(&["screen", sid])
            .contains("Do you want")
            .then_some(())
    });
}

/// Approves `sid`'s dialog and waits until the turn is over.
fn approve(sb: &Sandbox, sid: &str) {
    sb.ok(&["approve", sid]);
    wait_for(T, "idle after the approved turn", || {
        (common::row(sb, sid)["status"] == "idle").then_some(())
    });
}

#[test]
fn a_focused_terminal_holds_the_prompt_back_and_losing_the_focus_lets_the_next_through() {
    let (sb, out) = sandbox("quiet_secs = 1");
    let sid = sb.new_session("focus");
    let mut ev = focus_events(&sb);
    let mut a = PtyRun::start(&sb, &["attach", &sid], None);
    a.wait_text("❯", T);
    // The terminal reports the focus, split across two reads.
    a.send(b"\x1b[");
    std::thread::sleep(Duration::from_millis(5));
    a.send(b"I");
    await_focus(&mut ev, &sid, true);

    sb.ok(&["send", &sid, "perm touch watched.txt"]);
    await_dialog(&sb, &sid);
    // The program turned focus reporting on itself (the fake, like Claude
    // Code): a report is its key too, as without ccd.
    let sock = sb.holder_socket(&sid);
    std::thread::sleep(Duration::from_millis(300));
    let typed = holder_info(&sock).last_input_at;
    a.send(b"\x1b[I");
    wait_for(T, "the report as the program's key", || {
        (holder_info(&sock).last_input_at != typed).then_some(())
    });
    // Well past the quiet delay: held back, the person is looking.
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        out.permissions().is_empty(),
        "notified while focused: {:?}",
        out.permissions()
    );
    approve(&sb, &sid);

    // Focus out: the next prompt is notified.
    a.send(b"\x1b[O");
    await_focus(&mut ev, &sid, false);
    sb.ok(&["send", &sid, "perm touch away.txt"]);
    wait_for(T, "the prompt's notification once unfocused", || {
        (out.permissions().len() == 1).then_some(())
    });
    assert_eq!(out.permissions()[0]["detail"], "touch away.txt");
    approve(&sb, &sid);

    // Focused again, then detached: a client that leaves is not focused.
    a.send(b"\x1b[I");
    await_focus(&mut ev, &sid, true);
    a.send(b"\x1c");
    assert_eq!(a.wait_exit(T), 0);
    assert!(
        a.raw_text().contains("\x1b[?1004l"),
        "focus reports left on"
    );
    await_focus(&mut ev, &sid, false);
    sb.ok(&["send", &sid, "perm touch left.txt"]);
    wait_for(T, "the prompt's notification once detached", || {
        (out.permissions().len() == 2).then_some(())
    });
    assert_eq!(out.permissions()[1]["detail"], "touch left.txt");
}

#[test]
fn notify_when_focused_notifies_a_focused_session() {
    let (sb, out) = sandbox("quiet_secs = 1\nnotify_when_focused = true");
    let sid = sb.new_session("focused-anyway");
    let mut ev = focus_events(&sb);
    let mut a = PtyRun::start(&sb, &["attach", &sid], None);
    a.wait_text("❯", T);
    a.send(b"\x1b[I");
    await_focus(&mut ev, &sid, true);
    sb.ok(&["send", &sid, "perm touch anyway.txt"]);
    wait_for(T, "the focused session's notification", || {
        (out.permissions().len() == 1).then_some(())
    });
    assert_eq!(out.permissions()[0]["detail"], "touch anyway.txt");
    a.send(b"\x1c");
    assert_eq!(a.wait_exit(T), 0);
}

#[test]
fn a_client_relaying_the_keys_tells_the_focus_the_program_asked_for() {
    // Without the hand-off the client reads the keys itself: it turns no
    // reports on, but watches those the program's own `?1004h` brings.
    let (sb, _out) = sandbox_with_env("", &[("CCD_TERMINAL_HANDOFF", "0")]);
    let sid = sb.new_session("relayed");
    let mut ev = focus_events(&sb);
    let mut a = PtyRun::start(&sb, &["attach", &sid], None);
    a.wait_text("❯", T);
    a.send(b"\x1b[I");
    await_focus(&mut ev, &sid, true);
    a.send(b"\x1c");
    assert_eq!(a.wait_exit(T), 0);
    await_focus(&mut ev, &sid, false);
}
