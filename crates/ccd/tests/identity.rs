//! A process is not a conversation: `/clear` and a conversation resumed
//! inside the TUI change the id a held process writes, and everything ccd
//! says follows the registry's truth (the fake claude switches its entry the
//! way the real CLI does; see crates/ccd-fake-claude/README.md).

mod common;

use common::external::resumed_outside;
use common::{ls_json, row, wait_for, Sandbox};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(20);

/// The live row a holder's process writes now, once it is not `not`.
fn current_of(sb: &Sandbox, holder: &str, not: &str) -> Value {
    wait_for(T, "the held process's new id in ccd ls", || {
        ls_json(sb).into_iter().find(|r| {
            r["ccd"]["holder"] == holder && r["session_id"] != not && r["state"] == "live"
        })
    })
}

/// Events until one of type `kind` passes `pred`; the ones seen before it.
fn until_event(
    c: &mut ccd_client::Client,
    kind: &str,
    pred: impl Fn(&Value) -> bool,
) -> (Value, Vec<Value>) {
    let deadline = Instant::now() + T;
    let mut seen = Vec::new();
    loop {
        assert!(Instant::now() < deadline, "no {kind} after {seen:#?}");
        let Some(e) = common::next_event(c, Duration::from_millis(200)) else {
            continue;
        };
        if e["type"] == kind && pred(&e) {
            return (e, seen);
        }
        seen.push(e);
    }
}

fn transcript_text(sb: &Sandbox, sid: &str) -> String {
    ccd_claude::transcript::find_by_session_id(&sb.config.join("projects"), sid)
        .and_then(|p| std::fs::read_to_string(p).ok())
        .unwrap_or_default()
}

fn wait_reply(sb: &Sandbox, sid: &str, prompt: &str) {
    wait_for(T, "the reply in the transcript", || {
        transcript_text(sb, sid)
            .contains(&format!("echo: {prompt}"))
            .then_some(())
    });
}

#[test]
fn after_clear_the_new_id_reaches_the_held_process_and_the_old_one_is_dead() {
    let sb = Sandbox::new();
    let old = sb.new_session("clearing");
    sb.ok(&["send", &old, "before clear"]);
    wait_reply(&sb, &old, "before clear");
    let r = row(&sb, &old);
    let holder = r["ccd"]["holder"].as_str().unwrap().to_string();
    let child = r["pid"].as_u64().unwrap();
    let mut c = sb.client();
    c.call_value("events.subscribe", json!({})).unwrap();

    sb.ok(&["send", &old, "/clear"]);
    let (changed, _) = until_event(&mut c, "session.id_changed", |e| e["from"] == old.as_str());
    let new = changed["to"].as_str().unwrap().to_string();
    assert_ne!(new, old);
    assert_eq!(changed["session"], new.as_str());
    assert_eq!(changed["holder"], holder.as_str());
    assert_eq!(changed["held"], true);
    assert_eq!(changed["pid"], child);
    assert_eq!(changed["reason"], "clear");

    // ccd ls: the new id is live and held by the same holder, with the
    // child's pid; the old one is dead, not held, and says what took over.
    let now = current_of(&sb, &holder, &old);
    assert_eq!(now["session_id"], new.as_str());
    assert_eq!(now["pid"], child);
    // Until the holder's next refresh says why, the reason is `unknown`.
    let was = wait_for(T, "the old row's superseded_by with its reason", || {
        let r = row(&sb, &old);
        (r["superseded_by"]["reason"] == "clear").then_some(r)
    });
    assert_eq!(was["state"], "dead", "{was:#}");
    assert!(was["ccd"].is_null(), "{was:#}");
    assert!(was["pid"].is_null(), "{was:#}");
    let s = &was["superseded_by"];
    assert_eq!(s["session"], new.as_str(), "{was:#}");
    assert_eq!(s["writes_now"], new.as_str());
    assert_eq!(s["holder"], holder.as_str());
    assert_eq!(s["reason"], "clear");
    // The held row keeps the history.
    let now = row(&sb, &new);
    let earlier = now["ccd"]["earlier"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(earlier.len(), 1, "{now:#}");
    assert_eq!(earlier[0]["session"], old.as_str());
    assert_eq!(earlier[0]["next"], new.as_str());
    let table = sb.ok(&["ls"]);
    assert!(
        table.contains(&format!(
            "cleared; its ccd process now writes {}",
            &new[..8]
        )),
        "{table}"
    );

    // Send, screen and kill by the new id all reach the held process.
    sb.ok(&["send", &new, "after clear"]);
    wait_reply(&sb, &new, "after clear");
    assert!(!transcript_text(&sb, &old).contains("after clear"));
    let screen = sb.ok(&["screen", &new]);
    assert!(screen.contains("after clear"), "{screen}");
    // So do its name and an attach by the new id.
    let name = now["name"].as_str().expect("a registry name").to_string();
    sb.ok(&["send", &name, "by name"]);
    wait_reply(&sb, &new, "by name");
    let mut a = common::pty::PtyRun::start(&sb, &["attach", &new[..8]], None);
    a.wait_text("echo: by name", T);
    a.send(b"\x1c");
    assert_eq!(a.wait_exit(T), 0);
    assert_eq!(row(&sb, &new)["ccd"]["holder"], holder.as_str());
    // The holder id still reaches it too.
    let by_holder = c
        .call_value("sessions.get", json!({"session": holder}))
        .unwrap();
    assert_eq!(by_holder["session_id"], new.as_str());
    // The old id is not running: nothing to type into, and the message
    // names the process that moved on and the id that reaches it.
    let o = sb.run(&["send", &old, "hello?"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&new[..8]), "{err}");
    assert!(err.contains(&holder), "{err}");
    sb.ok(&["kill", &new]);
    let (gone, _) = until_event(&mut c, "session.exited", |e| e["holder"] == holder.as_str());
    assert_eq!(
        gone["session"],
        new.as_str(),
        "exited names the id it wrote last"
    );
    let row_new = row(&sb, &new);
    assert_eq!(row_new["state"], "dead");
}

#[test]
fn attaching_the_old_id_resumes_it_under_a_new_holder_while_the_first_runs_on() {
    let sb = Sandbox::new();
    let old = sb.new_session("both");
    sb.ok(&["send", &old, "first conversation"]);
    wait_reply(&sb, &old, "first conversation");
    let holder = row(&sb, &old)["ccd"]["holder"]
        .as_str()
        .unwrap()
        .to_string();
    sb.ok(&["send", &old, "/clear"]);
    let new = current_of(&sb, &holder, &old)["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    // The old conversation is dead: attaching resumes it in its own cwd.
    let mut c = sb.client();
    let r = c
        .call_value(
            "session.attach",
            json!({"session": old, "size": {"cols": 100, "rows": 30}}),
        )
        .unwrap();
    assert_eq!(r["resumed"], true, "{r:#}");
    assert_eq!(r["session"], old.as_str());
    let was = row(&sb, &old);
    assert_eq!(was["state"], "live", "{was:#}");
    let second = was["ccd"]["holder"].as_str().unwrap();
    assert_ne!(second, holder);
    assert!(was["superseded_by"].is_null());
    let first = row(&sb, &new);
    assert_eq!(first["state"], "live");
    assert_eq!(first["ccd"]["holder"], holder.as_str());
    assert_eq!(first["several_writers"], false);
    assert_eq!(was["several_writers"], false);
}

#[test]
fn a_conversation_resumed_inside_the_tui_is_the_held_process_s_session() {
    let sb = Sandbox::new();
    // A conversation to go back to, ended.
    let earlier = sb.new_session("inside");
    sb.ok(&["send", &earlier, "the earlier one"]);
    wait_reply(&sb, &earlier, "the earlier one");
    sb.ok(&["kill", &earlier]);
    wait_for(T, "the earlier session dead", || {
        (row(&sb, &earlier)["state"] == "dead").then_some(())
    });
    let dir = sb.work.join("inside");
    let current = sb
        .ok(&["new", "--detach", "--cwd", dir.to_str().unwrap()])
        .trim()
        .to_string();
    sb.ok(&["send", &current, "the current one"]);
    wait_reply(&sb, &current, "the current one");
    let holder = row(&sb, &current)["ccd"]["holder"]
        .as_str()
        .unwrap()
        .to_string();
    let mut c = sb.client();
    c.call_value("events.subscribe", json!({})).unwrap();
    sb.ok(&["send", &current, &format!("/resume {earlier}")]);
    let (changed, _) = until_event(&mut c, "session.id_changed", |e| {
        e["from"] == current.as_str()
    });
    assert_eq!(changed["to"], earlier.as_str());
    assert_eq!(changed["reason"], "resume");
    assert_eq!(changed["holder"], holder.as_str());
    let now = current_of(&sb, &holder, &current);
    assert_eq!(now["session_id"], earlier.as_str());
    let left = wait_for(T, "the left row's superseded_by with its reason", || {
        let r = row(&sb, &current);
        (r["superseded_by"]["reason"] == "resume").then_some(r)
    });
    assert_eq!(left["state"], "dead");
    assert_eq!(left["superseded_by"]["reason"], "resume");
    assert_eq!(left["superseded_by"]["writes_now"], earlier.as_str());
    // Later turns go to the resumed conversation's own file.
    sb.ok(&["send", &earlier, "back again"]);
    wait_reply(&sb, &earlier, "back again");
}

#[test]
fn a_second_writer_on_a_held_session_is_flagged_within_a_second() {
    let sb = Sandbox::new();
    let sid = sb.new_session("shared");
    sb.ok(&["send", &sid, "mine"]);
    wait_reply(&sb, &sid, "mine");
    let holder = row(&sb, &sid)["ccd"]["holder"]
        .as_str()
        .unwrap()
        .to_string();
    let mut c = sb.client();
    c.call_value("events.subscribe", json!({})).unwrap();
    let dir = sb.work.join("shared");
    let started = Instant::now();
    let ext = resumed_outside(&sb, &dir, &sid);
    let (w, _) = until_event(&mut c, "session.writers", |e| e["session"] == sid.as_str());
    let took = started.elapsed();
    let ext_pid = ext.child.process_id().unwrap();
    assert_eq!(w["pid"], ext_pid);
    assert_eq!(w["holder"], holder.as_str());
    assert_eq!(w["pids"].as_array().map(Vec::len), Some(2));
    let (a, _) = until_event(&mut c, "session.attention", |e| {
        e["reason"] == "second_writer"
    });
    assert_eq!(a["session"], sid.as_str());
    // The external start itself (its registry entry, a turn) is part of
    // `took`; the flag itself follows the entry by one watcher scan.
    assert!(took < Duration::from_secs(10), "{took:?}");
    let r = row(&sb, &sid);
    assert_eq!(r["several_writers"], true, "{r:#}");
    assert_eq!(r["ccd"]["holder"], holder.as_str());
    let table = sb.ok(&["ls"]);
    assert!(table.contains("[several writers]"), "{table}");
}

#[test]
fn detaching_after_clear_names_the_id_that_reaches_the_process_now() {
    use common::pty::PtyRun;
    let sb = Sandbox::new();
    let old = sb.new_session("attached-clear");
    let holder = row(&sb, &old)["ccd"]["holder"]
        .as_str()
        .unwrap()
        .to_string();
    let mut a = PtyRun::start(&sb, &["attach", &old[..8]], None);
    a.wait_text("❯", T);
    a.send(b"hello before\r");
    a.wait_text("echo: hello before", T);
    a.send(b"/clear\r");
    let new = current_of(&sb, &holder, &old)["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    // Someone resumes the new conversation by hand meanwhile.
    let dir = sb.work.join("attached-clear");
    let _ext = resumed_outside(&sb, &dir, &new);
    wait_for(T, "two writers listed", || {
        (row(&sb, &new)["several_writers"] == true).then_some(())
    });
    a.send(b"\x1c");
    assert_eq!(a.wait_exit(T), 0);
    let raw = a.raw_text();
    assert!(
        raw.contains(&format!("it writes {} now", &new[..8])),
        "the move is told: {raw}"
    );
    assert!(
        raw.contains(&format!("come back with: ccd attach {}", &new[..8])),
        "the way back reaches the process, not the old conversation: {raw}"
    );
    assert!(raw.contains("WARNING"), "the second writer is told: {raw}");
}
