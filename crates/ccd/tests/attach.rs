//! attach / observe / fork / resume through the built binary under a PTY,
//! against a daemon running the fake claude. Implements docs/claude-cli-compat.md's
//! decision table, row by row.

mod common;

use common::external::{dead_session, external, resumed_outside};
use common::pty::PtyRun;
use common::{ls_json, wait_for, Sandbox};
use serde_json::json;
use std::time::Duration;

const T: Duration = Duration::from_secs(20);

use std::io::Write as _;

#[test]
fn attach_type_detach_and_reattach_redraws_the_same_screen() {
    let sb = Sandbox::new();
    let sid = sb.new_session("typing");
    let mut a = PtyRun::start(&sb, &["attach", &sid[..8]], None);
    a.wait_text("❯", T);
    a.send(b"hello there\r");
    a.wait_text("echo: hello there", T);
    let before = a.text();
    a.send(b"\x1c");
    assert_eq!(a.wait_exit(T), 0);
    assert!(a.terminal_is_cooked(), "terminal left in raw mode");
    let raw = a.raw_text();
    assert!(raw.contains("\x1b[?1049l"), "alternate screen left");
    assert!(raw.contains("\x1b[?2004l"), "bracketed paste reset");
    assert!(
        raw.contains(&format!("ccd attach {}", &sid[..8])),
        "how to come back: {raw}"
    );

    let b = PtyRun::start(&sb, &["attach", &sid], None);
    b.wait_text("echo: hello there", T);
    std::thread::sleep(Duration::from_millis(300));
    let after = b.text();
    let rows = |s: &str| {
        s.lines()
            .map(str::trim_end)
            .filter(|l| !l.is_empty())
            .map(String::from)
            .collect::<Vec<_>>()
    };
    assert_eq!(rows(&before), rows(&after), "redraw differs");
}

/// Context switches of every thread of `pid` so far (`/proc`: Linux only).
#[cfg(target_os = "linux")]
fn switches(pid: u32) -> u64 {
    let mut n = 0;
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
    {
        let status = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
        for l in status.lines() {
            if l.starts_with("voluntary_ctxt_switches")
                || l.starts_with("nonvoluntary_ctxt_switches")
            {
                n += l
                    .split_whitespace()
                    .nth(1)
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(0);
            }
        }
    }
    n
}

// Linux only: the wakeups are counted in `/proc/<pid>/task`.
#[cfg(target_os = "linux")]
#[test]
fn an_idle_attachment_wakes_nobody() {
    // Issue 20 (idle cost): a `ccd attach` nobody types into, on a session
    // that prints nothing, sleeps until a key, output or its end. Its
    // input thread used to wake twice a second.
    let sb = Sandbox::new();
    let sid = sb.new_session("idle");
    let a = PtyRun::start(&sb, &["attach", &sid], None);
    a.wait_text("❯", T);
    let pid = a.child.process_id().expect("the client's pid");
    std::thread::sleep(Duration::from_millis(500));
    let before = switches(pid);
    std::thread::sleep(Duration::from_secs(4));
    let woke = switches(pid) - before;
    assert!(woke <= 2, "an idle attachment woke {woke} times in 4 s");
}

#[test]
fn detach_key_twice_is_sent_through_and_is_configurable() {
    let sb = Sandbox::new();
    let sid = sb.new_session("keys");
    let mut a = PtyRun::start(&sb, &["attach", &sid, "--detach-key", "ctrl-]"], None);
    a.wait_text("❯", T);
    a.send(b"\x1c"); // no longer the detach key
    a.send(b"abc\r");
    a.wait_text("echo: ", T);
    a.send(b"\x1d\x1d"); // twice: sent through, still attached
    std::thread::sleep(Duration::from_millis(600));
    assert!(
        a.child.try_wait().unwrap().is_none(),
        "detached on a double press"
    );
    a.send(b"\x1d");
    assert_eq!(a.wait_exit(T), 0);
}

#[test]
fn resize_propagates_and_two_clients_share_a_session() {
    let sb = Sandbox::new();
    let sid = sb.new_session("two");
    let mut a = PtyRun::start(&sb, &["attach", &sid], None);
    let b = PtyRun::start(&sb, &["attach", &sid], None);
    a.wait_text("❯", T);
    b.wait_text("❯", T);
    a.send(b"from a\r");
    b.wait_text("echo: from a", T);
    a.resize(30, 100);
    let mut c = sb.client();
    wait_for(T, "the session at 30x100", || {
        let s = c
            .call_value("session.screen", json!({"session": sid}))
            .ok()?;
        (s["size"]["rows"] == 30 && s["size"]["cols"] == 100).then_some(())
    });
    a.send(b"\x1c");
    a.wait_exit(T);
}

#[test]
fn the_holder_takes_the_terminal_so_keys_echo_past_a_stopped_client() {
    let sb = Sandbox::new();
    let sid = sb.new_session("handoff");
    let mut a = PtyRun::start(&sb, &["attach", &sid], None);
    a.wait_text("❯", T);
    // With the terminal handed to the holder, `ccd attach` moves neither
    // keys nor output: stopped, the session still echoes.
    let pid = nix::unistd::Pid::from_raw(a.child.process_id().unwrap() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP).unwrap();
    a.send(b"typed while stopped\r");
    a.wait_text("echo: typed while stopped", T);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGCONT).unwrap();
    // The detach key, read by the holder, ends the attachment as before.
    a.send(b"\x1c");
    assert_eq!(a.wait_exit(T), 0);
    assert!(a.terminal_is_cooked(), "terminal left in raw mode");
    assert!(
        a.raw_text().contains("\x1b[?1049l"),
        "alternate screen left"
    );
    let screen = sb.ok(&["screen", &sid]);
    assert!(screen.contains("echo: typed while stopped"), "{screen}");
}

#[test]
fn the_session_keeps_running_when_the_client_is_killed() {
    let sb = Sandbox::new();
    let sid = sb.new_session("sigkill");
    let mut a = PtyRun::start(&sb, &["attach", &sid], None);
    a.wait_text("❯", T);
    a.child.kill().unwrap(); // SIGKILL
    a.wait_exit(T);
    let rows = ls_json(&sb);
    let r = rows
        .iter()
        .find(|r| r["session_id"] == sid.as_str())
        .unwrap();
    assert_eq!(r["state"], "live");
    let screen = sb.ok(&["screen", &sid]);
    assert!(screen.contains('❯'));
}

#[test]
fn a_session_running_elsewhere_is_never_resumed() {
    let sb = Sandbox::new();
    let dir = sb.project("outside");
    let ext = external(&sb, &dir);
    let before = std::fs::read(&ext.transcript).unwrap();
    let rows = ls_json(&sb);
    let r = rows
        .iter()
        .find(|r| r["session_id"] == ext.sid.as_str())
        .unwrap();
    assert_eq!(r["state"], "live");
    assert!(r["ccd"].is_null());

    let mut a = PtyRun::start(&sb, &["attach", &ext.sid[..8]], None);
    assert_eq!(a.wait_exit(T), 2);
    let out = a.raw_text();
    assert!(out.contains("will not resume"), "{out}");
    assert!(
        out.contains(&format!("ccd observe {}", &ext.sid[..8])),
        "{out}"
    );
    assert!(
        out.contains(&format!("ccd fork {}", &ext.sid[..8])),
        "{out}"
    );
    assert!(
        out.contains(&ext.child.process_id().unwrap().to_string()),
        "pid shown: {out}"
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        std::fs::read(&ext.transcript).unwrap(),
        before,
        "transcript changed"
    );

    // Forking it is safe: a new id, the original byte for byte.
    let new = sb
        .ok(&["fork", &ext.sid[..8], "--detach"])
        .trim()
        .to_string();
    assert_eq!(new.len(), 36, "{new}");
    assert_ne!(new, ext.sid);
    let mut c = sb.client();
    c.call_value(
        "session.input",
        json!({"session": new, "data": ccd_protocol::b64::encode(b"in the fork\r")}),
    )
    .unwrap();
    let fork_t = wait_for(T, "the fork's transcript", || {
        ccd_claude::transcript::find_by_session_id(&sb.config.join("projects"), &new)
    });
    wait_for(T, "the fork's turn", || {
        std::fs::read_to_string(&fork_t)
            .ok()?
            .contains("in the fork")
            .then_some(())
    });
    assert_eq!(
        std::fs::read(&ext.transcript).unwrap(),
        before,
        "original changed by the fork"
    );
    drop(ext);
}

#[test]
fn unknown_liveness_is_treated_as_live() {
    let sb = Sandbox::new();
    ccd_testkit::gen::transcript(
        &sb.config,
        "aaaaaaaa-1111-4222-8333-444455556666",
        sb.project("u").to_str().unwrap(),
        1,
    );
    let sleeper = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    let pid = sleeper.id();
    let start = ccd_claude::liveness::current_proc_start(pid).unwrap();
    ccd_testkit::gen::write_registry_entry(
        &sb.config,
        &ccd_testkit::gen::registry_entry(
            pid,
            "aaaaaaaa-1111-4222-8333-444455556666",
            "/x",
            &start,
            Some("linux:other-machine:pid:[1]"),
        ),
    );
    let mut a = PtyRun::start(&sb, &["attach", "aaaaaaaa"], None);
    assert_eq!(a.wait_exit(T), 2);
    assert!(
        a.raw_text().contains("possibly running"),
        "{}",
        a.raw_text()
    );
    let mut s = sleeper;
    let _ = s.kill();
    let _ = s.wait();
}

#[test]
fn a_dead_session_is_resumed_in_its_original_cwd_from_anywhere() {
    let sb = Sandbox::new();
    let dir = sb.project("resume-me");
    let sid = {
        let ext = external(&sb, &dir);
        ext.sid.clone()
        // dropped: SIGKILL, the registry entry stays behind
    };
    wait_for(T, "the session to be dead", || {
        let rows = ls_json(&sb);
        rows.iter()
            .find(|r| r["session_id"] == sid.as_str() && r["state"] == "dead")
            .map(|_| ())
    });
    // From another directory, through a symlinked and trailing-slash cwd of ours.
    let elsewhere = sb.project("elsewhere");
    let a = PtyRun::start(&sb, &["attach", &sid[..8]], Some(&elsewhere));
    a.wait_text("hello from outside", T);
    let rows = ls_json(&sb);
    let r = rows
        .iter()
        .find(|r| r["session_id"] == sid.as_str())
        .unwrap();
    assert_eq!(r["state"], "live", "{r}");
    assert_eq!(r["cwd"], dir.to_str().unwrap());
    let held = r["writers"][0]["cwd"].as_str().unwrap().to_string();
    assert_eq!(held, dir.to_str().unwrap(), "resumed in the original cwd");
}

/// Pids of running `ccd __holder` processes of this sandbox.
fn holder_processes(sb: &Sandbox) -> Vec<u32> {
    let needle = format!("CCD_SOCKET_DIR={}", sb.sock.display());
    ccd_testkit::procs::pids()
        .into_iter()
        .filter(|&pid| {
            let zombie = ccd_testkit::procs::stat(pid).is_some_and(|s| s.state == 'Z');
            !zombie
                && ccd_testkit::procs::cmdline(pid)
                    .split(|&b| b == 0)
                    .any(|a| a == b"__holder")
                && ccd_testkit::procs::has_env(pid, &needle)
        })
        .collect()
}

#[test]
fn a_resume_another_process_beat_is_refused_naming_it_and_leaves_no_trace() {
    // A wide settle window: the other process starts once the resume is
    // under way, and is seen within it whatever the machine's load.
    let sb = Sandbox::with_env(&[("CCD_RESUME_SETTLE_MS", "20000")]);
    let (sid, dir) = dead_session(&sb, "late");
    let mut c = sb.client_or_start();
    let mut ev = sb.client();
    ev.call_value("events.subscribe", json!({"types": ["session.lifecycle"]}))
        .unwrap();
    let mut steps = Vec::new();
    let mut other = None;
    let t0 = std::time::Instant::now();
    let r = c.call_value_watching(
        "session.attach",
        json!({"session": sid, "mode": "interactive", "size": {"cols": 100, "rows": 30}}),
        &mut |n| {
            if n.method != "session.progress" {
                return;
            }
            let p = n.params.clone().unwrap_or_default();
            if let Some(step) = p["step"].as_str() {
                steps.push(p.clone());
                // Someone runs `claude --resume` by hand meanwhile.
                if step == "resuming" && other.is_none() {
                    other = Some(resumed_outside(&sb, &dir, &sid));
                }
            }
        },
    );
    let elapsed = t0.elapsed();
    let other = other.expect("the resume said it was resuming");
    let pid = other.child.process_id().unwrap();
    let e = r.expect_err("the resume is refused");
    let e = e.rpc().expect("an RPC error").clone();
    assert_eq!(e.code, -32005, "{e:?}");
    assert!(
        e.message.contains(&format!("pid {pid}")) && e.message.contains("while ccd was resuming"),
        "{}",
        e.message
    );
    let data = e.data.clone().unwrap();
    assert_eq!(data["session"], sid.as_str(), "{data}");
    assert_eq!(data["pid"], pid, "{data}");
    assert_eq!(data["cwd"], dir.to_str().unwrap(), "{data}");
    assert_eq!(data["kind"], "interactive", "{data}");
    assert_eq!(data["state"], "live", "{data}");
    assert_eq!(data["started_meanwhile"], true, "{data}");
    let since = data["since"].as_str().expect("since");
    assert!(
        time::OffsetDateTime::parse(since, &time::format_description::well_known::Rfc3339).is_ok(),
        "{since}"
    );
    // Seen within the window, not at its end.
    assert!(elapsed < Duration::from_secs(15), "{elapsed:?}");
    // Progress: where it resumed, and whom it stopped for.
    let words: Vec<&str> = steps.iter().filter_map(|p| p["step"].as_str()).collect();
    assert_eq!(words.first(), Some(&"resuming"), "{steps:?}");
    assert_eq!(words.last(), Some(&"stopping"), "{steps:?}");
    assert_eq!(steps[0]["cwd"], dir.to_str().unwrap(), "{steps:?}");
    assert_eq!(steps.last().unwrap()["pid"], pid, "{steps:?}");

    // Its lifecycle events end: the copy is discarded, held no more.
    let discarded = wait_for(T, "the discarded copy's lifecycle event", || {
        let n = ev
            .next_notification(Some(Duration::from_millis(100)))
            .ok()
            .flatten()?;
        let p = n.params?;
        (p["session"] == sid.as_str() && p["status"] == "discarded").then_some(p)
    });
    assert_eq!(discarded["held"], false, "{discarded}");
    assert!(discarded["holder"].is_string(), "{discarded}");
    // ccd's copy is gone, and nothing of it is reported.
    wait_for(T, "no holder process left", || {
        holder_processes(&sb).is_empty().then_some(())
    });
    let held = c
        .call_value("sessions.list", json!({"held_only": true}))
        .unwrap();
    assert_eq!(held["sessions"], json!([]), "{held}");
    let r = common::row(&sb, &sid);
    assert_eq!(r["state"], "live", "{r}");
    assert_eq!(r["pid"], pid, "{r}");
    assert!(r["ccd"].is_null(), "{r}");
    let k = sb.run(&["kill", &sid]);
    assert!(!k.status.success());
    let err = String::from_utf8_lossy(&k.stderr);
    assert!(
        err.contains("runs outside ccd") && err.contains(&format!("pid {pid}")),
        "{err}"
    );
    assert!(other.child.process_id().is_some());
    // The session still runs, outside ccd, untouched.
    assert!(ccd_testkit::procs::exists(pid));
}

#[test]
fn ccd_attach_shows_the_resume_and_names_the_process_that_beat_it() {
    let sb = Sandbox::with_env(&[("CCD_RESUME_SETTLE_MS", "20000")]);
    let (sid, dir) = dead_session(&sb, "late-cli");
    let short = &sid[..8];
    let mut a = PtyRun::start(&sb, &["attach", short], None);
    a.wait_text(&format!("resuming {short} in {}", dir.display()), T);
    let other = resumed_outside(&sb, &dir, &sid);
    let pid = other.child.process_id().unwrap();
    assert_eq!(a.wait_exit(T), 2);
    let out = a.raw_text();
    for want in [
        format!("another process (pid {pid}) started {short} meanwhile; stopping ccd's copy"),
        format!("another process started session {sid} while ccd was resuming it; ccd stopped its own copy"),
        format!("held by: pid {pid}, kind interactive, in {}, since 20", dir.display()),
        format!("ccd observe {short}"),
    ] {
        assert!(out.contains(&want), "{want:?} not in {out}");
    }
    for unknown in ["pid ?", "kind ?", "in ?", "since ?"] {
        assert!(!out.contains(unknown), "{unknown:?} in {out}");
    }
    let k = sb.run(&["kill", short]);
    let err = String::from_utf8_lossy(&k.stderr);
    assert!(
        err.contains(&format!("runs outside ccd (pid {pid})")),
        "{err}"
    );
}

#[test]
fn missing_cwd_and_missing_transcript_are_named() {
    let sb = Sandbox::new();
    let gone = sb.work.join("gone");
    ccd_testkit::gen::transcript(
        &sb.config,
        "bbbbbbbb-1111-4222-8333-444455556666",
        gone.to_str().unwrap(),
        1,
    );
    let mut a = PtyRun::start(&sb, &["attach", "bbbbbbbb"], None);
    assert_eq!(a.wait_exit(T), 1);
    let out = a.raw_text();
    assert!(
        out.contains("original directory") && out.contains("gone"),
        "{out}"
    );

    // A dead registry entry whose transcript never existed.
    ccd_testkit::gen::write_registry_entry(
        &sb.config,
        &ccd_testkit::gen::registry_entry(
            4_000_001,
            "cccccccc-1111-4222-8333-444455556666",
            "/x",
            "1",
            None,
        ),
    );
    let mut a = PtyRun::start(
        &sb,
        &["attach", "cccccccc-1111-4222-8333-444455556666"],
        None,
    );
    assert_eq!(a.wait_exit(T), 1);
    let out = a.raw_text();
    assert!(out.contains("no transcript"), "{out}");

    let mut a = PtyRun::start(&sb, &["attach", "dddddddd"], None);
    assert_eq!(a.wait_exit(T), 1);
    assert!(
        a.raw_text().contains("no session matches"),
        "{}",
        a.raw_text()
    );
}

#[test]
fn fork_of_a_dead_session_leaves_the_original_untouched() {
    let sb = Sandbox::new();
    let dir = sb.project("fork-dead");
    let (sid, transcript) = {
        let ext = external(&sb, &dir);
        (ext.sid.clone(), ext.transcript.clone())
    };
    let before = std::fs::read(&transcript).unwrap();
    let new = sb.ok(&["fork", &sid, "--detach"]).trim().to_string();
    assert_ne!(new, sid);
    let mut c = sb.client();
    c.call_value(
        "session.input",
        json!({"session": new, "data": ccd_protocol::b64::encode(b"branch\r")}),
    )
    .unwrap();
    wait_for(T, "the fork's turn", || {
        let p = ccd_claude::transcript::find_by_session_id(&sb.config.join("projects"), &new)?;
        std::fs::read_to_string(p)
            .ok()?
            .contains("branch")
            .then_some(())
    });
    assert_eq!(std::fs::read(&transcript).unwrap(), before);
}

#[test]
fn resume_failure_is_reported_and_fresh_only_on_request() {
    let sb = Sandbox::with_env(&[("FAKE_CLAUDE_PROMPT_TOO_LONG", "1")]);
    let dir = sb.project("too-long");
    let (sid, transcript) = {
        let ext = external(&sb, &dir);
        (ext.sid.clone(), ext.transcript.clone())
    };
    let before = std::fs::read(&transcript).unwrap();
    let mut a = PtyRun::start(&sb, &["attach", &sid], None);
    assert_eq!(a.wait_exit(T), 1);
    let out = a.raw_text();
    assert!(out.contains("Prompt is too long"), "{out}");
    assert!(out.contains("--fresh-on-failure"), "{out}");
    assert_eq!(std::fs::read(&transcript).unwrap(), before);
    let count = || ls_json(&sb).len();
    let n = count();

    let a = PtyRun::start(&sb, &["attach", &sid, "--fresh-on-failure"], None);
    a.wait_text("❯", T);
    let out = a.raw_text();
    assert!(
        out.contains("RESUMING") && out.contains("NEW session"),
        "{out}"
    );
    assert!(
        out.contains(transcript.to_str().unwrap()),
        "names the original transcript: {out}"
    );
    wait_for(T, "a new session listed", || {
        (count() > n || sb.holder_pids().len() == 1).then_some(())
    });
    assert_eq!(std::fs::read(&transcript).unwrap(), before);
}

#[test]
fn completions_and_help_examples() {
    let sb = Sandbox::new();
    let out = sb.ok(&["completions", "bash"]);
    assert!(out.contains("ccd"), "{out}");
    for cmd in [
        "ls", "new", "attach", "fork", "observe", "kill", "screen", "daemon",
    ] {
        let help = sb.ok(&[cmd, "--help"]);
        assert!(help.contains("Examples:"), "{cmd} --help has no example");
    }
}

#[test]
fn observe_mirrors_a_held_session_and_follows_an_external_transcript() {
    let sb = Sandbox::new();
    // Held: a read-only mirror; keys other than detach are ignored.
    let sid = sb.new_session("mirror");
    let mut o = PtyRun::start(&sb, &["observe", &sid], None);
    o.wait_text("❯", T);
    o.send(b"typed by the observer\r");
    let mut c = sb.client();
    c.call_value(
        "session.input",
        json!({"session": sid, "data": ccd_protocol::b64::encode(b"typed by the owner\r")}),
    )
    .unwrap();
    o.wait_text("echo: typed by the owner", T);
    assert!(
        !o.text().contains("typed by the observer"),
        "observer keys reached the session"
    );
    o.send(b"\x1c");
    assert_eq!(o.wait_exit(T), 0);

    // External: its transcript, readably, as it grows; ends when it ends.
    let dir = sb.project("watched");
    let mut ext = external(&sb, &dir);
    let mut o = PtyRun::start(&sb, &["observe", &ext.sid[..8]], None);
    o.wait_text("› hello from outside", T);
    o.wait_text("● echo: hello from outside", T);
    ext._writer.write_all(b"second message\r").unwrap();
    o.wait_text("› second message", T);
    o.wait_text("● echo: second message", T);
    let before = std::fs::read(&ext.transcript).unwrap();
    o.send(b"ignored keys\r");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(std::fs::read(&ext.transcript).unwrap(), before);
    // The external process ends: so does the observer.
    ext.child.kill().unwrap();
    let _ = ext.child.wait();
    assert_eq!(o.wait_exit(T), 0);
    assert!(o.raw_text().contains("ended"), "{}", o.raw_text());
}

#[test]
fn the_terminal_is_restored_on_sigterm_and_an_attachment_outlives_the_daemon() {
    let sb = Sandbox::new();
    let sid = sb.new_session("restore");
    let mut a = PtyRun::start(&sb, &["attach", &sid], None);
    a.wait_text("❯", T);
    let pid = a.child.process_id().unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert_eq!(a.wait_exit(T), 3);
    assert!(a.terminal_is_cooked(), "raw mode left behind after SIGTERM");
    assert!(
        a.raw_text().contains("ended by signal 15"),
        "{}",
        a.raw_text()
    );

    // `ccd attach` talks to the session's holder directly: the daemon dying
    // does not end it, and keys and output keep flowing.
    let mut b = PtyRun::start(&sb, &["attach", &sid], None);
    b.wait_text("❯", T);
    let daemon = sb.daemon_pid().unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(daemon as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    wait_for(T, "the daemon gone", || {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(daemon as i32), None)
            .is_err()
            .then_some(())
    });
    b.send(b"after the daemon\r");
    b.wait_text("echo: after the daemon", T);
    b.send(b"\x1c");
    assert_eq!(b.wait_exit(T), 0);
    assert!(b.terminal_is_cooked(), "raw mode left behind");
    // And a new daemon finds the session running.
    let screen = sb.ok(&["screen", &sid]);
    assert!(screen.contains("echo: after the daemon"), "{screen}");
}

#[test]
fn an_attachment_whose_holder_dies_says_so_and_restores_the_terminal() {
    let sb = Sandbox::new();
    let sid = sb.new_session("holder-gone");
    let mut a = PtyRun::start(&sb, &["attach", &sid], None);
    a.wait_text("❯", T);
    let holder = sb.holder_pids()[0];
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(holder as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    assert_eq!(a.wait_exit(T), 3);
    assert!(a.terminal_is_cooked(), "raw mode left behind");
    let out = a.raw_text();
    assert!(out.contains("holder is gone"), "{out}");
    assert!(out.contains(&format!("ccd attach {}", &sid[..8])), "{out}");
}

#[test]
fn a_held_session_forks_by_its_full_id() {
    let sb = Sandbox::new();
    let sid = sb.new_session("fork-held");
    sb.ok(&["send", &sid, "something to fork"]);
    wait_for(T, "the transcript", || {
        ccd_claude::transcript::find_by_session_id(&sb.config.join("projects"), &sid)
    });
    let new = sb.ok(&["fork", &sid, "--detach"]).trim().to_string();
    assert_eq!(new.len(), 36);
    assert_ne!(new, sid);
}
