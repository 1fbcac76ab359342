//! Faults: the daemon killed mid-flood, a holder killed, claude crashing,
//! an unwritable log, and many sessions started and stopped.

mod common;

use common::{row, wait_for, Sandbox};
use serde_json::json;
use std::time::Duration;

const T: Duration = Duration::from_secs(30);

fn kill9(pid: u32) {
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    );
}

fn gone(pid: u32) -> bool {
    ccd_testkit::procs::gone(pid)
}

#[test]
fn daemon_killed_mid_flood_loses_no_session_and_a_client_gets_a_redraw() {
    let sb = Sandbox::new();
    let sid = sb.new_session("flood");
    let mut c = sb.client();
    c.call_value("session.attach", json!({"session": sid, "mode": "observe"}))
        .unwrap();
    sb.client()
        .call_value(
            "session.input",
            json!({"session": sid, "data": ccd_protocol::b64::encode(b"flood 8000000\r")}),
        )
        .unwrap();
    // Some output flows, then the daemon dies.
    wait_for(T, "output", || {
        let n = c
            .next_notification(Some(Duration::from_millis(200)))
            .ok()??;
        (n.method == "session.output").then_some(())
    });
    let pid = sb.daemon_pid().unwrap();
    kill9(pid);
    wait_for(T, "daemon death", || gone(pid).then_some(()));
    // The client reconnects (a new daemon starts) and is redrawn first.
    let mut c2 = sb.client_or_start();
    c2.call_value("session.attach", json!({"session": sid, "mode": "observe"}))
        .unwrap();
    let first = wait_for(T, "the first notification", || {
        c2.next_notification(Some(Duration::from_millis(200)))
            .ok()?
    });
    assert_eq!(first.method, "session.resync", "{first:?}");
    // The flood completes and the session is still there, owned.
    wait_for(T, "the flood's end", || {
        sb.ok(&["screen", &sid])
            .contains("echo: flood 8000000")
            .then_some(())
    });
    wait_for(T, "the session idle and owned", || {
        (row(&sb, &sid)["ccd"]["lifecycle"] == "idle").then_some(())
    });
}

#[test]
fn a_killed_holder_is_reported_failed_and_attach_resumes_the_session() {
    let sb = Sandbox::new();
    let sid = sb.new_session("holder-dies");
    sb.ok(&["send", &sid, "leave a transcript"]);
    wait_for(T, "the transcript", || {
        row(&sb, &sid)["transcript"].as_str().map(|_| ())
    });
    let holder = sb.holder_pids()[0];
    kill9(holder);
    wait_for(T, "the session reported failed", || {
        let r = row(&sb, &sid);
        (r["state"] == "dead" && r["ccd"]["lifecycle"] == "failed").then_some(())
    });
    // Resumable: attach through the API resumes it in its original cwd.
    let mut c = sb.client();
    let r = c
        .call_value("session.attach", json!({"session": sid}))
        .unwrap();
    assert_eq!(r["resumed"], true, "{r}");
    assert_eq!(row(&sb, &sid)["state"], "live");
}

#[test]
fn a_crashing_claude_is_reported_exited_with_its_status() {
    // The crash comes well after the session is ready (about 1.4 s with the
    // ready settle time), and the subscription is made before the session
    // starts, so a slow start cannot make the exit come first.
    let sb = Sandbox::with_env(&[("FAKE_CLAUDE_CRASH_AFTER_MS", "5000")]);
    let mut c = sb.client_or_start();
    c.call_value("events.subscribe", json!({"types": ["session.exited"]}))
        .unwrap();
    let sid = sb.new_session("crash");
    let e = wait_for(T, "the exit event", || {
        let n = c
            .next_notification(Some(Duration::from_millis(200)))
            .ok()??;
        let p = n.params?;
        (p["session"] == sid.as_str()).then_some(p)
    });
    assert_eq!(e["exit_code"], 3, "{e}");
    assert_eq!(e["status"], "exited", "{e}");
}

#[test]
fn an_unwritable_log_does_not_stop_the_daemon() {
    // The state dir is a file: nothing can be created under it.
    let sb = Sandbox::new();
    std::fs::write(&sb.state, b"not a directory").unwrap();
    let sid = sb.new_session("nolog");
    assert_eq!(row(&sb, &sid)["state"], "live");
    // A full disk: the log file is /dev/full.
    let sb = Sandbox::new();
    std::fs::create_dir_all(&sb.state).unwrap();
    let today = time::OffsetDateTime::now_utc().date();
    let name = format!("ccd.{today}.log");
    std::os::unix::fs::symlink("/dev/full", sb.state.join(name)).unwrap();
    let sid = sb.new_session("fulldisk");
    sb.ok(&["send", &sid, "still serving"]);
    wait_for(T, "a turn", || {
        sb.ok(&["screen", &sid])
            .contains("echo: still serving")
            .then_some(())
    });
}

fn children_of(pid: u32) -> Vec<(u32, char)> {
    ccd_testkit::procs::children(pid)
}

fn fd_count(pid: u32) -> usize {
    ccd_testkit::procs::fd_count(pid)
}

/// Processes whose command line names this sandbox (holders, claudes).
fn sandbox_processes(sb: &Sandbox) -> usize {
    let needle = sb.sock.to_string_lossy().to_string();
    let work = sb.work.to_string_lossy().to_string();
    ccd_testkit::procs::pids()
        .into_iter()
        .filter(|&pid| {
            let env = ccd_testkit::procs::environ(pid);
            let env = String::from_utf8_lossy(&env);
            let cwd = ccd_testkit::procs::cwd(pid).unwrap_or_default();
            env.contains(&needle) && cwd.to_string_lossy().starts_with(&work)
        })
        .count()
}

#[test]
fn two_hundred_sessions_started_and_stopped_leak_nothing() {
    let sb = Sandbox::new();
    let dir = sb.project("many");
    common::external::trust(&sb, &dir); // no dialog: fast starts
    let mut c = sb.client_or_start();
    let daemon = sb.daemon_pid().unwrap();
    // Warm up, then take the baseline.
    let new = |c: &mut ccd_client::Client| {
        let r = c
            .call_value("session.new", json!({"cwd": dir, "wait": true}))
            .unwrap();
        assert_eq!(r["lifecycle"], "idle", "{r}");
        r["session"].as_str().unwrap().to_string()
    };
    let s = new(&mut c);
    c.call_value("session.kill", json!({"session": s})).unwrap();
    std::thread::sleep(Duration::from_millis(600));
    let fds_before = fd_count(daemon);
    for round in 0..20 {
        let ids: Vec<String> = (0..10).map(|_| new(&mut c)).collect();
        for id in &ids {
            let r = c
                .call_value("session.kill", json!({"session": id}))
                .unwrap();
            assert_eq!(r["exited"], true, "round {round}: {r}");
        }
    }
    // Let the last collections and reaping settle.
    wait_for(T, "no holder left", || {
        let v = c
            .call_value("sessions.list", json!({"held_only": true}))
            .ok()?;
        v["sessions"]
            .as_array()?
            .iter()
            .all(|s| s["state"] == "dead")
            .then_some(())
    });
    std::thread::sleep(Duration::from_millis(800));
    let zombies: Vec<_> = children_of(daemon)
        .into_iter()
        .filter(|(_, s)| *s == 'Z')
        .collect();
    assert!(zombies.is_empty(), "zombies: {zombies:?}");
    assert_eq!(
        sandbox_processes(&sb),
        0,
        "leftover holder or claude processes"
    );
    let fds_after = fd_count(daemon);
    assert!(
        fds_after <= fds_before + 2,
        "daemon fds {fds_before} -> {fds_after}"
    );
    let holders_dir = sb.sock.join("holders");
    let left: Vec<_> = std::fs::read_dir(&holders_dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "holder sockets or metadata left: {left:?}");
}
