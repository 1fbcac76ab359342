//! A socket directory (or daemon socket) loosened while a daemon runs: every
//! command that talks to the daemon refuses with the one message naming what
//! is wrong and the fix, nothing is repaired behind the user's back, and
//! after the fix everything works again. And the README's socket examples
//! find the daemon where the CLI does.

mod common;

use ccd_client::{Entry, Problem, SocketDirError};
use common::pty::PtyRun;
use common::{row, Sandbox};
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn mode_of(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The message the library renders for this refusal: what every command
/// must print.
fn refusal(path: PathBuf, entry: Entry, mode: u32) -> (String, String) {
    let e = SocketDirError::NotPrivate {
        path,
        entry,
        problem: Problem::Mode(mode),
    };
    (e.to_string(), e.fix().unwrap())
}

/// `ccd daemon status`, `ccd daemon stop`, `ccd ls`, `ccd doctor`,
/// `ccd screen`, `ccd new`, `ccd attach` all refuse with `message`; the
/// daemon keeps running, untouched.
fn everything_refuses(sb: &Sandbox, sid: &str, message: &str, fix: &str) {
    let line = format!("ccd: {message}\n");
    let pid = sb.daemon_pid().expect("the daemon runs");

    for args in [
        &["daemon", "status"][..],
        &["daemon", "status", "--json"],
        &["daemon", "stop"],
        &["screen", sid],
        &["send", sid, "hello"],
    ] {
        let o = sb.run(args);
        assert!(!o.status.success(), "ccd {args:?} succeeded");
        assert_eq!(stderr(&o), line, "ccd {args:?}");
        assert!(
            !stdout(&o).contains("no ccd daemon"),
            "ccd {args:?}: {}",
            stdout(&o)
        );
    }
    let p = sb.project("refused");
    let o = sb.run(&["new", "--detach", "--cwd", p.to_str().unwrap()]);
    assert!(!o.status.success());
    assert_eq!(stderr(&o), line, "ccd new");

    // ls still lists the session, without the held marker, and says why.
    let o = sb.run(&["ls", "--json"]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.starts_with(&line), "{err}");
    assert!(err.contains("not marked"), "{err}");
    let rows: Value = serde_json::from_slice(&o.stdout).unwrap();
    let r = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["session_id"] == sid)
        .unwrap_or_else(|| panic!("{sid} not listed: {rows}"));
    assert!(r["ccd"].is_null(), "{r}");
    let o = sb.run(&["ls"]);
    assert!(!o.status.success());
    assert!(stdout(&o).contains(&sid[..8]), "{}", stdout(&o));
    assert!(stderr(&o).starts_with(&line), "{}", stderr(&o));

    // doctor names the real problem, not a stale socket.
    let o = sb.run(&["doctor", "--json"]);
    assert!(!o.status.success());
    let checks: Value = serde_json::from_slice(&o.stdout).unwrap();
    let checks = checks.as_array().unwrap();
    let socket = checks.iter().find(|c| c["check"] == "socket").unwrap();
    assert_eq!(socket["status"], "error", "{checks:#?}");
    assert_eq!(socket["message"], message, "{checks:#?}");
    assert_eq!(socket["fix"], fix, "{checks:#?}");
    let daemon = checks.iter().find(|c| c["check"] == "daemon").unwrap();
    assert_eq!(daemon["status"], "error", "{checks:#?}");
    assert_eq!(daemon["fix"], fix, "{checks:#?}");
    for c in checks {
        let m = c["message"].as_str().unwrap_or("");
        assert!(!m.contains("nothing answers"), "{c}");
        assert!(!c["fix"].as_str().unwrap_or("").contains("stale"), "{c}");
    }
    let o = sb.run(&["doctor"]);
    assert!(!o.status.success());
    assert!(stdout(&o).contains(message), "{}", stdout(&o));
    assert!(!stdout(&o).contains("stale"), "{}", stdout(&o));

    // attach, on a terminal, refuses the same way.
    let mut run = PtyRun::start(sb, &["attach", sid], None);
    assert_ne!(run.wait_exit(Duration::from_secs(20)), 0);
    let text = run.raw_text();
    assert!(text.contains(fix), "{text}");

    // Nothing was stopped, started or repaired.
    assert_eq!(sb.daemon_pid(), Some(pid));
}

/// After the fix: status, ls (held marker back), doctor all fine.
fn everything_works(sb: &Sandbox, sid: &str) {
    let out = sb.ok(&["daemon", "status"]);
    assert!(out.contains("running"), "{out}");
    let o = sb.run(&["ls"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
    assert_eq!(row(sb, sid)["ccd"]["lifecycle"], "idle");
    let o = sb.run(&["doctor", "--json"]);
    let checks: Value = serde_json::from_slice(&o.stdout).unwrap();
    for name in ["socket", "daemon"] {
        let c = checks
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["check"] == name)
            .unwrap();
        assert_eq!(c["status"], "ok", "{c}");
    }
    let screen = sb.ok(&["screen", sid]);
    assert!(screen.contains('❯'), "{screen}");
}

#[test]
fn a_loosened_socket_dir_is_refused_everywhere_until_fixed() {
    let sb = Sandbox::new();
    let sid = sb.new_session("held");
    assert_eq!(row(&sb, &sid)["ccd"]["lifecycle"], "idle");

    chmod(&sb.sock, 0o755);
    let (message, fix) = refusal(sb.sock.clone(), Entry::Directory, 0o755);
    assert_eq!(fix, format!("chmod 700 {}", sb.sock.display()));
    assert!(
        message.contains(&sb.sock.display().to_string()),
        "{message}"
    );
    assert!(
        message.contains("0755") && message.contains("0700"),
        "{message}"
    );
    assert!(message.contains(&fix), "{message}");
    everything_refuses(&sb, &sid, &message, &fix);
    assert_eq!(mode_of(&sb.sock), 0o755, "repaired behind the user's back");

    chmod(&sb.sock, 0o700);
    everything_works(&sb, &sid);
}

#[test]
fn a_loosened_daemon_socket_is_refused_everywhere_until_fixed() {
    let sb = Sandbox::new();
    let sid = sb.new_session("held");
    let socket = sb.sock.join("ccd.sock");

    chmod(&socket, 0o666);
    let (message, fix) = refusal(socket.clone(), Entry::Socket, 0o666);
    assert_eq!(fix, format!("chmod 600 {}", socket.display()));
    assert!(
        message.contains("0666") && message.contains("0600"),
        "{message}"
    );
    everything_refuses(&sb, &sid, &message, &fix);
    assert_eq!(mode_of(&socket), 0o666, "repaired behind the user's back");

    chmod(&socket, 0o600);
    everything_works(&sb, &sid);
}

/// An error that quotes its OS error (and carries it as its source) names
/// it once, not once per link of the chain.
#[test]
fn a_socket_dir_under_a_file_names_the_os_error_once() {
    let sb = common::Sandbox::new();
    let file = sb.work.join("a-file");
    std::fs::write(&file, "x").unwrap();
    let under = file.join("sub");
    let o = sb.run(&["--socket-dir", under.to_str().unwrap(), "daemon", "status"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.matches("Not a directory").count(), 1, "{err}");
}

/// `holders/` loosened while a daemon runs: starting a session there and
/// attaching to one held there are refused with the one message (nothing
/// repaired); after `chmod 700` both work. A symlinked `holders/` keeps a
/// daemon from starting.
#[test]
fn a_loosened_or_symlinked_holders_dir_is_refused() {
    let sb = Sandbox::new();
    let sid = sb.new_session("held");
    let holders = sb.sock.join("holders");
    chmod(&holders, 0o755);
    let (message, fix) = refusal(holders.clone(), Entry::HoldersDirectory, 0o755);
    assert_eq!(fix, format!("chmod 700 {}", holders.display()));

    let p = sb.project("refused");
    let o = sb.run(&["new", "--detach", "--cwd", p.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).ends_with(&format!(" {message}\n")),
        "ccd new: {}",
        stderr(&o)
    );

    let mut run = PtyRun::start(&sb, &["attach", &sid], None);
    assert_ne!(run.wait_exit(Duration::from_secs(20)), 0);
    let text = run.raw_text();
    assert!(text.contains(&fix), "{text}");
    assert_eq!(
        mode_of(&holders),
        0o755,
        "never repaired behind the user's back"
    );

    chmod(&holders, 0o700);
    let again = sb.new_session("after-fix");
    assert!(!again.is_empty());

    // A symlink in its place: a daemon refuses to start.
    sb.ok(&["daemon", "stop", "--kill-sessions"]);
    let real = sb.tmp.path().join("elsewhere");
    std::fs::create_dir(&real).unwrap();
    chmod(&real, 0o700);
    std::fs::remove_dir_all(&holders).unwrap();
    std::os::unix::fs::symlink(&real, &holders).unwrap();
    let e = SocketDirError::NotPrivate {
        path: holders.clone(),
        entry: Entry::HoldersDirectory,
        problem: Problem::Symlink,
    };
    let o = sb.run(&["daemon", "status"]);
    assert!(!o.status.success() || stdout(&o).contains("no ccd daemon"));
    let o = sb.run(&["new", "--detach", "--cwd", p.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains(&e.to_string()), "{}", stderr(&o));
    assert!(std::fs::symlink_metadata(&holders)
        .unwrap()
        .file_type()
        .is_symlink());
    std::fs::remove_file(&holders).unwrap();
}

/// A README code block: the lines between "```<lang>" after `after` and
/// the closing fence.
fn readme_block(after: &str, lang: &str) -> String {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .unwrap();
    let from = readme.find(after).expect("the README section");
    let rest = &readme[from..];
    let open = format!("```{lang}\n");
    let start = rest.find(&open).expect("the code block") + open.len();
    let len = rest[start..].find("\n```").expect("its end");
    rest[start..start + len].to_string()
}

/// The README's shell and Python examples find the daemon where the CLI
/// does: `$CCD_SOCKET_DIR`, else `$XDG_RUNTIME_DIR/ccd` when absolute, else
/// `/tmp/ccd-<uid>`.
#[test]
fn the_readme_socket_examples_find_the_daemon_where_the_cli_does() {
    let sb = Sandbox::new();
    let xdg = sb.tmp.path().join("xdg");
    std::fs::create_dir_all(&xdg).unwrap();
    chmod(&xdg, 0o700);
    let with_xdg = |c: &mut std::process::Command| {
        c.env_remove("CCD_SOCKET_DIR").env("XDG_RUNTIME_DIR", &xdg);
    };
    let proj = sb.project("readme");
    let mut new = sb.cmd(&["new", "--detach", "--cwd", proj.to_str().unwrap()]);
    with_xdg(&mut new);
    let out = new.output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let sid = stdout(&out).trim().to_string();
    assert!(
        xdg.join("ccd/ccd.sock").exists(),
        "the CLI's daemon is under XDG_RUNTIME_DIR"
    );

    // Python: connects and lists the session.
    let py = readme_block("From Python:", "python");
    let mut run = std::process::Command::new("python3");
    run.args(["-c", &py]);
    for (k, v) in &sb.env {
        run.env(k, v);
    }
    with_xdg(&mut run);
    let out = run.output().expect("python3");
    assert!(
        out.status.success(),
        "the Python example failed: {}",
        stderr(&out)
    );
    assert!(stdout(&out).contains(&sid[..8]), "{}", stdout(&out));

    // Shell: the lines that find the socket, in each case.
    let sh = readme_block("From a shell:", "sh");
    let find: String = sh
        .lines()
        .take_while(|l| !l.starts_with('{'))
        .map(|l| format!("{l}\n"))
        .collect();
    let uid = nix::unistd::getuid().as_raw();
    for (dir_env, xdg_env, want) in [
        (
            None,
            Some(xdg.to_str().unwrap()),
            format!("{}/ccd/ccd.sock", xdg.display()),
        ),
        (
            Some("/elsewhere"),
            Some(xdg.to_str().unwrap()),
            "/elsewhere/ccd.sock".into(),
        ),
        (None, Some("relative"), format!("/tmp/ccd-{uid}/ccd.sock")),
        (None, None, format!("/tmp/ccd-{uid}/ccd.sock")),
    ] {
        let mut c = std::process::Command::new("sh");
        c.args(["-c", &format!("{find}printf %s \"$sock\"")])
            .env_remove("CCD_SOCKET_DIR")
            .env_remove("XDG_RUNTIME_DIR");
        if let Some(d) = dir_env {
            c.env("CCD_SOCKET_DIR", d);
        }
        if let Some(x) = xdg_env {
            c.env("XDG_RUNTIME_DIR", x);
        }
        let out = c.output().unwrap();
        assert_eq!(
            stdout(&out),
            want,
            "CCD_SOCKET_DIR={dir_env:?} XDG_RUNTIME_DIR={xdg_env:?}"
        );
    }

    let mut stop = sb.cmd(&["daemon", "stop", "--kill-sessions"]);
    with_xdg(&mut stop);
    assert!(stop.output().unwrap().status.success());
}
