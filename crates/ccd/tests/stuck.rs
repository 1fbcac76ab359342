//! Stuck peers: a stopped daemon or holder makes no command wait forever,
//! and a daemon lost during `ccd new` leaves the user the session's id.

mod common;

use common::pty::PtyRun;
use common::{row, wait_for, Sandbox};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

/// Sends SIGCONT to a process this test stopped, whatever happens.
struct Stopped(u32);

impl Stopped {
    fn new(pid: u32) -> Self {
        kill(Pid::from_raw(pid as i32), Signal::SIGSTOP).unwrap();
        wait_for(Duration::from_secs(5), "the stop", || {
            ccd_client::deadline::is_stopped(pid).then_some(())
        });
        Self(pid)
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = kill(Pid::from_raw(self.0 as i32), Signal::SIGCONT);
    }
}

fn timed(sb: &Sandbox, args: &[&str]) -> (Output, Duration) {
    let t = Instant::now();
    let o = sb.run(args);
    (o, t.elapsed())
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The daemon stopped: `ls` lists from the files in about its usual time
/// with one line saying so; `daemon status`, `new` and `attach` fail
/// within the hello deadline naming the pid and `kill -CONT`; after
/// SIGCONT everything works again.
#[test]
fn a_stopped_daemon_is_reported_not_waited_for() {
    let sb = Sandbox::new();
    let sid = sb.new_session("one");
    let pid = sb.daemon_pid().unwrap();
    let _ = timed(&sb, &["ls", "--json"]);
    let (o, usual) = timed(&sb, &["ls", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));

    let stopped = Stopped::new(pid);
    let cont = format!("kill -CONT {pid}");

    let (o, took) = timed(&sb, &["ls"]);
    assert!(
        took < usual * 2 + Duration::from_millis(700),
        "ls took {took:?}, usually {usual:?}"
    );
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(out.contains(&sid[..8]), "{out}");
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    // Named as stopped, never as "did not answer … within 0s".
    assert!(
        err.contains(&format!("(pid {pid}")) && err.contains("is stopped") && err.contains(&cont),
        "{err}"
    );
    assert!(!err.contains("within 0"), "{err}");
    let line = out.lines().find(|l| l.starts_with(&sid[..8])).unwrap();
    assert!(line.contains(" ? "), "held marker unknown: {line}");

    // Hello's deadline is 3 s; a stopped daemon is seen at the first 1 s check.
    let limit = Duration::from_secs(4);
    let p = sb.project("while-stopped");
    for args in [
        &["daemon", "status"][..],
        &["new", "--detach", "--cwd", p.to_str().unwrap()],
    ] {
        let (o, took) = timed(&sb, args);
        assert!(!o.status.success(), "ccd {args:?}");
        assert!(took < limit, "ccd {args:?} took {took:?}");
        let err = stderr(&o);
        assert!(
            err.contains(&format!("pid {pid}")) && err.contains(&cont),
            "ccd {args:?}: {err}"
        );
    }
    let t = Instant::now();
    let mut run = PtyRun::start(&sb, &["attach", &sid], None);
    assert_ne!(run.wait_exit(Duration::from_secs(10)), 0);
    assert!(
        t.elapsed() < limit + Duration::from_secs(1),
        "{:?}",
        t.elapsed()
    );
    let text = run.raw_text();
    assert!(text.contains(&cont), "{text}");

    drop(stopped);
    sb.ok(&["daemon", "status"]);
    let o = sb.run(&["ls"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("did not answer"));
    assert_eq!(
        sb.daemon_pid(),
        Some(pid),
        "the same daemon, never replaced"
    );
    sb.new_session("after");
}

/// A stopped holder: `ccd attach` fails within the direct stream's
/// deadline, naming the holder's pid; after SIGCONT it attaches.
#[test]
fn a_stopped_holder_is_reported_on_attach() {
    let sb = Sandbox::new();
    let sid = sb.new_session("held");
    let holder = sb.holder_pids()[0];
    let stopped = Stopped::new(holder);
    let t = Instant::now();
    let mut run = PtyRun::start(&sb, &["attach", &sid], None);
    assert_ne!(run.wait_exit(Duration::from_secs(20)), 0);
    let took = t.elapsed();
    let text = run.raw_text();
    assert!(
        took < Duration::from_secs(9),
        "attach took {took:?}: {text}"
    );
    assert!(
        text.contains(&format!("holder (pid {holder})"))
            && text.contains(&format!("kill -CONT {holder}")),
        "{text}"
    );
    // Asked through the daemon, the answer names the holder, not the
    // daemon (whose own deadline used to run out first).
    for args in [&["screen", &sid][..], &["send", &sid, "hello"][..]] {
        let t = Instant::now();
        let o = sb.run(args);
        let took = t.elapsed();
        let err = stderr(&o);
        assert!(!o.status.success(), "ccd {args:?}");
        assert!(
            took < Duration::from_secs(3),
            "ccd {args:?} took {took:?}: {err}"
        );
        assert!(
            err.contains("holder")
                && err.contains(&format!("(pid {holder}) is stopped"))
                && err.contains(&format!("kill -CONT {holder}")),
            "ccd {args:?}: {err}"
        );
        assert!(!err.contains("ccd daemon did not answer"), "{err}");
    }
    drop(stopped);
    let mut run = PtyRun::start(&sb, &["attach", &sid], None);
    run.wait_text("❯", Duration::from_secs(10));
    run.send(b"\x1c");
    assert_eq!(run.wait_exit(Duration::from_secs(10)), 0);
}

/// The daemon killed while `ccd new` waits for the trust dialog: the
/// client names the session's id; a new daemon adopts the holder and
/// `ccd ls` shows that id held.
#[test]
fn a_daemon_lost_during_new_leaves_the_id() {
    let sb = Sandbox::with_env(&[("FAKE_CLAUDE_INPUT_DELAY_MS", "4000")]);
    sb.client_or_start();
    let pid = sb.daemon_pid().unwrap();
    let p = sb.project("slow-trust");
    let child = sb
        .cmd(&["new", "--detach", "--cwd", p.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let holders = sb.sock.join("holders");
    wait_for(Duration::from_secs(10), "a holder socket", || {
        std::fs::read_dir(&holders)
            .ok()?
            .flatten()
            .any(|e| e.file_name().to_string_lossy().ends_with(".sock"))
            .then_some(())
    });
    std::thread::sleep(Duration::from_millis(500));
    kill(Pid::from_raw(pid as i32), Signal::SIGKILL).unwrap();
    let o = child.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout).trim().to_string();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(
        uuid::Uuid::parse_str(&out).is_ok(),
        "stdout: {out:?}, stderr: {err}"
    );
    assert!(err.contains(&out) && err.contains("ccd ls"), "{err}");

    sb.client_or_start();
    let r = wait_for(Duration::from_secs(20), "the adopted session in ls", || {
        let r = row(&sb, &out);
        (!r["ccd"].is_null()).then_some(r)
    });
    assert_eq!(r["session_id"], out.as_str());
}
