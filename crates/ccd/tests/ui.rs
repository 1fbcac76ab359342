//! `ccd ui` under a real terminal (tmux on a private socket) against a
//! daemon running the fake claude.

mod common;

use common::external::external;
use common::tmux::{list_rows, tmux_or_skip, Tmux};
use common::{wait_for, Sandbox};
use serde_json::json;
use std::io::Write;
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(20);

/// The one test that times the dashboard (a waiting session on top
/// within a second) runs alone; the others share the machine among
/// themselves.
static TIMING: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// A share of the machine for an untimed test.
fn shared() -> std::sync::RwLockReadGuard<'static, ()> {
    TIMING.read().unwrap_or_else(|p| p.into_inner())
}

fn short(sid: &str) -> &str {
    &sid[..8]
}

#[test]
fn the_dashboard_lists_filters_attaches_detaches_and_quits() {
    let _share = shared();
    if !tmux_or_skip() {
        return;
    }
    let sb = Sandbox::new();
    let held = sb.new_session("heldproj");
    let gone = sb.new_session("goneproj");
    sb.ok(&["send", &gone, "a prompt so it has a transcript"]);
    std::thread::sleep(Duration::from_millis(500));
    sb.ok(&["kill", &gone]);
    let ext_dir = sb.project("extproj");
    let mut ext = external(&sb, &ext_dir);
    ext._writer.write_all(b"perm rm -rf build\r").unwrap();
    wait_for(T, "the external session waiting", || {
        let r = common::row(&sb, &ext.sid);
        (r["status"] == "waiting").then_some(())
    });

    let t = Tmux::start(&sb, &["ui"], 120, 40);
    let pane = t.wait(short(&gone), T);
    assert!(t.alternate_on(), "the dashboard uses the alternate screen");
    let rows = list_rows(&pane);
    assert!(
        rows[0].contains(short(&ext.sid)) && rows[0].starts_with('!'),
        "the waiting external session first:\n{pane}"
    );
    assert!(rows[0].contains("waiting"), "{pane}");
    let at = |sid: &str| rows.iter().position(|r| r.contains(short(sid))).unwrap();
    assert!(at(&held) < at(&gone), "held before dead:\n{pane}");
    assert!(rows[at(&gone)].contains("dead"), "{pane}");
    assert!(rows[at(&held)].contains("idle"), "{pane}");

    // The filter narrows live; Enter keeps it; Esc clears it.
    t.keys(&["\\"]);
    t.type_text("heldproj");
    let pane = t.wait_until("the filtered list", T, |p| {
        let r = list_rows(p);
        r.len() == 1 && r[0].contains(short(&held))
    });
    assert!(pane.contains("\\heldproj"), "{pane}");
    t.keys(&["Enter"]);
    t.wait("[\\heldproj]", T);

    // Enter attaches: keys reach the session.
    t.keys(&["Enter"]);
    t.wait_until("the attached session", T, |p| !p.contains("[\\heldproj]"));
    std::thread::sleep(Duration::from_millis(300));
    t.type_text("typed-through-the-dashboard");
    wait_for(T, "the typed text on the session's screen", || {
        sb.ok(&["screen", &held])
            .contains("typed-through-the-dashboard")
            .then_some(())
    });
    // The detach key comes back to the dashboard, the selection kept.
    t.keys(&["C-\\"]);
    let pane = t.wait(&format!("detached from {}", short(&held)), T);
    assert!(t.alternate_on(), "{pane}");
    let rows = list_rows(&pane);
    assert_eq!(rows.len(), 1, "the filter is kept:\n{pane}");
    t.keys(&["Escape"]);
    let pane = t.wait_until("the whole list again", T, |p| list_rows(p).len() >= 3);
    // The selection stayed on the session just left (its preview shows).
    assert!(
        pane.contains(&format!(" {} · live screen", short(&held))),
        "{pane}"
    );

    // q: exit status 0, the terminal's own screen back.
    t.keys(&["q"]);
    t.wait("ccd-exited=0", T);
    assert!(!t.alternate_on(), "the alternate screen was left");
    drop(ext);
}

#[test]
fn a_session_that_starts_waiting_moves_up_within_a_second() {
    let _alone = TIMING.write().unwrap_or_else(|p| p.into_inner());
    if !tmux_or_skip() {
        return;
    }
    let sb = Sandbox::new();
    let first = sb.new_session("first");
    let second = sb.new_session("second");
    // `first` is the more recent: `second` lists below it.
    sb.ok(&["send", &first, "hello"]);
    let t = Tmux::start(&sb, &["ui"], 120, 30);
    let pane = t.wait_until("both rows, second below", T, |p| {
        let r = list_rows(p);
        let at = |sid: &str| r.iter().position(|l| l.contains(short(sid)));
        matches!((at(&first), at(&second)), (Some(a), Some(b)) if a < b)
    });
    assert!(!list_rows(&pane)[0].starts_with('!'), "{pane}");
    let mut c = sb.client();
    c.call_value("events.subscribe", json!({"types": ["session.attention"]}))
        .unwrap();
    c.call_value(
        "session.input",
        json!({"session": second, "data": ccd_protocol::b64::encode(b"perm echo hi\r")}),
    )
    .unwrap();
    wait_for(T, "the attention event", || {
        let e = common::next_event(&mut c, Duration::from_millis(200))?;
        (e["session"] == second.as_str()).then_some(())
    });
    let seen = Instant::now();
    let pane = t.wait_until("the waiting session on top", T, |p| {
        list_rows(p)
            .first()
            .is_some_and(|r| r.contains(short(&second)) && r.starts_with('!'))
    });
    let took = seen.elapsed();
    assert!(
        took < Duration::from_secs(1),
        "moved up after {took:?}:\n{pane}"
    );
    // What it asks: the row may first say only that a prompt shows (the
    // registry's status), then what the holder read off the screen.
    t.wait_until("what the prompt asks", T, |p| {
        p.contains("[permission: Bash command echo hi]")
    });
    // The selection stayed where it was; `a` on the waiting row approves
    // the prompt the dashboard shows.
    t.keys(&["Home"]);
    t.wait_until("the waiting row selected", T, |p| {
        p.contains(&format!(" {} · live screen", short(&second)))
    });
    t.keys(&["a"]);
    t.wait(&format!("of {}: Yes", short(&second)), T);
    t.wait_until("the prompt answered", T, |p| {
        list_rows(p).first().is_some_and(|r| !r.starts_with('!'))
    });
    t.keys(&["q"]);
    t.wait("ccd-exited=0", T);
}

#[test]
fn the_dashboard_says_the_daemon_is_gone_and_reconnects() {
    let _share = shared();
    if !tmux_or_skip() {
        return;
    }
    let sb = Sandbox::new();
    let held = sb.new_session("p");
    let t = Tmux::start(&sb, &["ui"], 80, 24);
    t.wait(short(&held), T);
    let pid = sb.daemon_pid().expect("a daemon");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let pane = t.wait("DAEMON GONE", T);
    assert!(pane.contains(short(&held)), "the list stays:\n{pane}");
    // A daemon again (it adopts the session): the dashboard reconnects.
    let _ = sb.client_or_start();
    t.wait_until("the daemon back", T, |p| !p.contains("DAEMON GONE"));
    t.keys(&["q"]);
    t.wait("ccd-exited=0", T);
    assert!(!t.alternate_on());
}

#[test]
fn a_panic_restores_the_terminal() {
    let _share = shared();
    if !tmux_or_skip() {
        return;
    }
    let mut sb = Sandbox::new();
    sb.env.push(("CCD_UI_PANIC_FOR_TEST".into(), "1".into()));
    let t = Tmux::start(&sb, &["ui"], 80, 24);
    let pane = t.wait("ccd-exited=101", T);
    assert!(!t.alternate_on(), "the alternate screen was left:\n{pane}");
    assert!(pane.contains("CCD_UI_PANIC_FOR_TEST is set"), "{pane}");
}

#[test]
fn a_resize_redraws_to_the_new_width() {
    let _share = shared();
    if !tmux_or_skip() {
        return;
    }
    let sb = Sandbox::new();
    let held = sb.new_session("p");
    // `ccd` alone on a terminal is the dashboard.
    let t = Tmux::start(&sb, &[], 120, 30);
    t.wait(short(&held), T);
    t.wait("CWD", T);
    t.tmux(&["resize-window", "-t", "ui", "-x", "80", "-y", "24"]);
    let pane = t.wait_until("the 80-column layout", T, |p| {
        !p.contains("CWD") && p.contains(short(&held))
    });
    assert!(pane.lines().all(|l| l.chars().count() <= 80), "{pane}");
    t.keys(&["q"]);
    t.wait("ccd-exited=0", T);
}

#[test]
fn sigterm_and_sighup_restore_the_terminal() {
    let _share = shared();
    if !tmux_or_skip() {
        return;
    }
    let sb = Sandbox::new();
    for (signal, code) in [
        (nix::sys::signal::Signal::SIGTERM, 143),
        (nix::sys::signal::Signal::SIGHUP, 129),
    ] {
        let t = Tmux::start(&sb, &["ui"], 80, 24);
        t.wait("sessions:", T);
        assert!(t.alternate_on());
        let pid = wait_for(T, "the ccd process", || t.child_pid());
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), signal).unwrap();
        t.wait(&format!("ccd-exited={code}"), T);
        assert!(!t.alternate_on(), "{signal}: the alternate screen was left");
        drop(t);
    }
}

#[test]
fn new_with_completion_fork_observe_and_kill_with_confirm() {
    let _share = shared();
    if !tmux_or_skip() {
        return;
    }
    let sb = Sandbox::new();
    let held = sb.new_session("orig");
    // A conversation to fork.
    sb.ok(&["send", &held, "something to fork"]);
    let target = sb.project("newplace-unique");
    let t = Tmux::start(&sb, &["ui"], 120, 40);
    t.wait(short(&held), T);

    // n: a directory, completed with Tab, then Enter: a new session,
    // attached; the detach key comes back.
    t.keys(&["n"]);
    t.wait("new session in directory", T);
    // Replace the suggested directory with the work dir's prefix.
    for _ in 0..200 {
        t.keys(&["BSpace"]);
    }
    t.type_text(&format!("{}/newplace-u", sb.work.display()));
    t.keys(&["Tab"]);
    t.wait(&format!("{}/", target.display()), T);
    t.keys(&["Enter"]);
    t.wait_until("attached to the new session", T, |p| {
        !p.contains("sessions:")
    });
    t.keys(&["C-\\"]);
    let pane = t.wait("detached from", T);
    let new_sid = wait_for(T, "the new session held in its directory", || {
        common::ls_json(&sb).into_iter().find_map(|r| {
            (r["cwd"] == target.to_str().unwrap() && !r["ccd"].is_null())
                .then(|| r["session_id"].as_str().unwrap().to_string())
        })
    });
    assert!(
        pane.contains(&format!("detached from {}", short(&new_sid))),
        "{pane}"
    );

    // o: observe, read-only; the detach key comes back.
    t.keys(&["\\"]);
    t.type_text("orig");
    t.keys(&["Enter"]);
    t.wait_until("only the original", T, |p| {
        let r = list_rows(p);
        r.len() == 1 && r[0].contains(short(&held))
    });
    t.keys(&["o"]);
    t.wait_until("observing", T, |p| !p.contains("sessions:"));
    t.type_text("not-typed-when-observing");
    std::thread::sleep(Duration::from_millis(300));
    t.keys(&["C-\\"]);
    t.wait(&format!("detached from {}", short(&held)), T);
    assert!(!sb
        .ok(&["screen", &held])
        .contains("not-typed-when-observing"));

    // f: fork, attached to the fork; back with the detach key.
    t.keys(&["f"]);
    t.wait_until("attached to the fork", T, |p| !p.contains("sessions:"));
    t.keys(&["C-\\"]);
    let pane = t.wait("detached from", T);
    assert!(
        !pane.contains(&format!("detached from {}", short(&held))),
        "the fork is another session:\n{pane}"
    );

    // k asks first: any key but y keeps it; y kills it.
    t.keys(&["Escape"]);
    t.wait_until("the filter cleared", T, |p| !p.contains("[\\orig]"));
    t.keys(&["\\"]);
    t.type_text(short(&held)); // the fork has the same directory
    t.keys(&["Enter"]);
    t.wait_until("only the original", T, |p| {
        let r = list_rows(p);
        r.len() == 1 && r[0].contains(short(&held))
    });
    t.keys(&["k"]);
    t.wait(&format!("kill {}? y to kill", short(&held)), T);
    t.keys(&["n"]);
    t.wait("kept it", T);
    assert!(!common::row(&sb, &held)["ccd"].is_null(), "still held");
    t.keys(&["k"]);
    t.wait(&format!("kill {}? y to kill", short(&held)), T);
    t.keys(&["y"]);
    t.wait(&format!("{}: exited", short(&held)), T);
    t.wait_until("the killed session dead", T, |p| {
        list_rows(p).first().is_some_and(|r| r.contains("dead"))
    });
    t.keys(&["q"]);
    t.wait("ccd-exited=0", T);
}

#[test]
fn a_session_that_starts_waiting_rings_the_bell_when_configured() {
    let _share = shared();
    if !tmux_or_skip() {
        return;
    }
    let sb = Sandbox::new();
    std::fs::write(sb.tmp.path().join("ccd.toml"), "ui_notify = \"bell\"\n").unwrap();
    let held = sb.new_session("p");
    let t = Tmux::start(&sb, &["ui"], 120, 30);
    t.wait(short(&held), T);
    let bell = || {
        t.tmux(&["display-message", "-p", "-t", "ui", "#{window_bell_flag}"])
            .trim()
            == "1"
    };
    std::thread::sleep(Duration::from_millis(500));
    assert!(!bell(), "no bell before anything waits");
    let mut c = sb.client();
    c.call_value(
        "session.input",
        json!({"session": held, "data": ccd_protocol::b64::encode(b"perm echo hi\r")}),
    )
    .unwrap();
    t.wait("[permission: Bash command echo hi]", T);
    wait_for(T, "the bell", || bell().then_some(()));
    t.keys(&["q"]);
    t.wait("ccd-exited=0", T);
}

#[test]
fn ccd_alone_without_a_terminal_prints_the_usage() {
    let _share = shared();
    let sb = Sandbox::new();
    let o = sb.run(&[]);
    assert_eq!(o.status.code(), Some(2));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("Usage: ccd") && out.contains("ui"), "{out}");
}

#[test]
fn a_detach_key_pressed_while_attaching_is_a_key_not_a_signal() {
    let _share = shared();
    if !tmux_or_skip() {
        return;
    }
    let mut sb = Sandbox::new();
    // A wide spell between leaving the dashboard and the attach.
    sb.env
        .push(("CCD_UI_TEST_ATTACH_DELAY_MS".into(), "1500".into()));
    let held = sb.new_session("p");
    let t = Tmux::start(&sb, &["ui"], 100, 30);
    t.wait(short(&held), T);
    t.keys(&["Enter"]);
    // The dashboard leaves its screen before the attach client takes the
    // terminal: Ctrl-\ (QUIT in a cooked terminal) pressed then must
    // detach, not kill it.
    t.wait_until("the dashboard's screen left", T, |_| !t.alternate_on());
    t.keys(&["C-\\"]);
    let pane = t.wait(&format!("detached from {}", short(&held)), T);
    assert!(!pane.contains("ccd-exited"), "{pane}");
    t.keys(&["q"]);
    t.wait("ccd-exited=0", T);
}

#[test]
fn the_memory_column_sorts_the_biggest_first_and_the_header_totals_it() {
    let _share = shared();
    if !tmux_or_skip() {
        return;
    }
    let sb = Sandbox::with_env(&[("CCD_COST_INTERVAL_MS", "300")]);
    let small = sb.new_session("smallproj");
    let big = sb.new_session("bigproj");
    sb.ok(&["send", &big, "hold 200"]);
    wait_for(T, "the big session's memory", || {
        let r = common::row(&sb, &big);
        (r["status"] == "idle" && r["cost"]["memory_bytes"].as_u64()? >= 200 << 20).then_some(())
    });
    // `small` was active last (a second later: the list orders by the
    // second): first by recency, until sorted by memory.
    std::thread::sleep(Duration::from_millis(1100));
    sb.ok(&["send", &small, "a prompt"]);
    wait_for(T, "the small session active after the big one", || {
        let (s, b) = (common::row(&sb, &small), common::row(&sb, &big));
        let after = |r: &serde_json::Value| {
            r["last_activity"]
                .as_str()
                .and_then(|t| {
                    time::OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339)
                        .ok()
                })
                .map(|t| t.unix_timestamp())
        };
        (s["status"] == "idle" && after(&s)? > after(&b)?).then_some(())
    });
    let t = Tmux::start(&sb, &["ui"], 120, 40);
    let pane = t.wait_until("both sessions with their memory", T, |p| {
        let rows = list_rows(p);
        rows.len() >= 2 && p.contains("MEM") && p.contains("in use)")
    });
    let rows = list_rows(&pane);
    assert!(rows[0].contains(short(&small)), "recency first:\n{pane}");
    let big_row = rows.iter().find(|r| r.contains(short(&big))).unwrap();
    assert!(big_row.contains('M'), "its memory in MiB:\n{pane}");
    t.keys(&["m"]);
    let pane = t.wait_until("sorted by memory", T, |p| {
        list_rows(p)
            .first()
            .is_some_and(|r| r.contains(short(&big)))
            && p.contains("MEM↓")
    });
    t.keys(&["m"]);
    t.wait_until("sorted by what needs you again", T, |p| {
        list_rows(p)
            .first()
            .is_some_and(|r| r.contains(short(&small)))
    });
    drop(pane);
    t.keys(&["q"]);
    t.wait("ccd-exited=0", T);
}

/// On a machine with no session yet the dashboard says, whole, which key
/// starts one (it was a table cell cut to 8 columns: "no sessi").
#[test]
fn an_empty_machine_says_which_key_starts_a_session() {
    let _share = shared();
    if !tmux_or_skip() {
        return;
    }
    let sb = Sandbox::new();
    let t = Tmux::start(&sb, &["ui"], 80, 24);
    let pane = t.wait("press n to start one", T);
    assert!(
        pane.contains("no Claude Code sessions on this machine yet"),
        "{pane}"
    );
    t.keys(&["q"]);
    t.wait("ccd-exited=0", T);
}

/// The search's hit line of `sid` (after the WHAT WAS SAID header).
fn hit_line(pane: &str, sid: &str) -> Option<String> {
    pane.lines()
        .skip_while(|l| !l.contains("WHAT WAS SAID"))
        .skip(1)
        .find(|l| l.contains(short(sid)))
        .map(String::from)
}

/// Issue 55 §3: `/` searches what was said, in the background, and
/// Enter on a hit does what Enter on its row does: a dead session is
/// resumed in its own folder (the dashboard runs elsewhere), a held one
/// is attached.
#[test]
fn slash_searches_what_was_said_and_enter_on_a_hit_goes_back_in() {
    let _share = shared();
    if !tmux_or_skip() {
        return;
    }
    let sb = Sandbox::new();
    let held = sb.new_session("heldsearch");
    sb.ok(&["send", &held, "the aardvarkheld plan for the week"]);
    let gone = sb.new_session("gonesearch");
    sb.ok(&["send", &gone, "where is the zebraquokka handler"]);
    wait_for(T, "both turns in their transcripts", || {
        let (h, g) = (common::row(&sb, &held), common::row(&sb, &gone));
        (h["status"] == "idle"
            && g["status"] == "idle"
            && !h["transcript"].is_null()
            && !g["transcript"].is_null())
        .then_some(())
    });
    sb.ok(&["kill", &gone]);
    let gone_dir = sb.work.join("gonesearch");
    wait_for(T, "the killed session dead", || {
        (common::row(&sb, &gone)["state"] == "dead").then_some(())
    });

    let t = Tmux::start(&sb, &["ui"], 120, 40);
    t.wait(short(&gone), T);
    // `/`: the prompt; the words; Enter: every machine asked.
    t.keys(&["/"]);
    t.wait("search what was said", T);
    t.type_text("zebraquokka");
    t.keys(&["Enter"]);
    let pane = t.wait_until("the dead session's hit", T, |p| {
        hit_line(p, &gone).is_some()
    });
    let line = hit_line(&pane, &gone).unwrap_or_default();
    assert!(
        line.contains("dead") && line.contains("zebraquokka") && line.contains("gonesearch"),
        "{pane}"
    );
    assert!(hit_line(&pane, &held).is_none(), "one hit:\n{pane}");
    // Enter on the hit: resumed, in its own folder, attached.
    t.keys(&["Enter"]);
    t.wait_until("attached to the resumed session", T, |p| {
        !p.contains("WHAT WAS SAID")
    });
    let r = wait_for(T, "the session resumed under ccd", || {
        let r = common::row(&sb, &gone);
        (r["state"] == "live" && !r["ccd"].is_null()).then_some(r)
    });
    assert_eq!(r["cwd"], gone_dir.to_str().unwrap(), "{r}");
    assert_eq!(
        r["writers"][0]["cwd"],
        gone_dir.to_str().unwrap(),
        "resumed in its own folder: {r}"
    );
    // The detach key: back to the hits, which say what the session is now.
    t.keys(&["C-\\"]);
    t.wait(&format!("detached from {}", short(&gone)), T);
    t.wait_until("the hit now held", T, |p| {
        hit_line(p, &gone).is_some_and(|l| l.contains("held"))
    });

    // `/` edits the search (Ctrl-U clears it): a held session's hit,
    // Enter attaches (keys reach it).
    t.keys(&["/"]);
    t.keys(&["C-u"]);
    t.type_text("aardvarkheld");
    t.keys(&["Enter"]);
    let pane = t.wait_until("the held session's hit", T, |p| {
        hit_line(p, &held).is_some()
    });
    assert!(
        hit_line(&pane, &held).is_some_and(|l| l.contains("held")),
        "{pane}"
    );
    t.keys(&["Enter"]);
    t.wait_until("attached to the held session", T, |p| {
        !p.contains("WHAT WAS SAID")
    });
    std::thread::sleep(Duration::from_millis(300));
    t.type_text("typed-from-a-search-hit");
    wait_for(T, "the typed text on the held session's screen", || {
        sb.ok(&["screen", &held])
            .contains("typed-from-a-search-hit")
            .then_some(())
    });
    t.keys(&["C-\\"]);
    t.wait(&format!("detached from {}", short(&held)), T);
    // Esc: the list again, with its name filter on `\`.
    t.keys(&["Escape"]);
    t.wait_until("the list", T, |p| list_rows(p).len() >= 2);
    t.keys(&["q"]);
    t.wait("ccd-exited=0", T);
}
