//! `ccd ui` over two machines (`ui_hosts = ["local", "ssh://far"]` in
//! the config; `--host` is the real-sshd test's): one dashboard. The other machine is a second sandbox (its own home, Claude
//! config, socket and state directories, daemon); `$CCD_SSH_COMMAND` is a
//! stand-in for ssh that runs that sandbox's `ccd dial-stdio`, so the test
//! can stop it (a stalled network) or kill it (a cut) by pid. The same
//! with a real sshd is in `ssh.rs`.

mod common;

use common::tmux::{list_rows, tmux_or_skip, Tmux};
use common::{wait_for, Sandbox};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(30);

fn short(sid: &str) -> &str {
    &sid[..8]
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// A stand-in for ssh (whatever its options and host) running `far`'s
/// `ccd dial-stdio` in `far`'s environment; while [`hang_flag`] exists,
/// a new connection hangs instead (a network that never answers).
fn stand_in_ssh(near: &Sandbox, far: &Sandbox) -> PathBuf {
    let path = near.tmp.path().join("fake-ssh");
    let mut script = format!(
        "#!/bin/sh\n[ -e {} ] && exec sleep 600\nexec env -u XDG_RUNTIME_DIR",
        quote(hang_flag(near).to_str().unwrap())
    );
    for (k, v) in &far.env {
        script.push_str(&format!(" {k}={}", quote(v)));
    }
    script.push_str(&format!(
        " {} dial-stdio\n",
        quote(common::ccd_bin().to_str().unwrap())
    ));
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn hang_flag(near: &Sandbox) -> PathBuf {
    near.tmp.path().join("hang")
}

/// Every child of `pid` running `dial-stdio`.
fn dial_children(pid: u32) -> Vec<i32> {
    ccd_testkit::procs::children(pid)
        .into_iter()
        .filter(|&(p, _)| {
            String::from_utf8_lossy(&ccd_testkit::procs::cmdline(p)).contains("dial-stdio")
        })
        .filter_map(|(p, _)| i32::try_from(p).ok())
        .collect()
}

fn signal(pid: i32, s: nix::sys::signal::Signal) {
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), s);
}

fn row_of<'a>(rows: &'a [String], sid: &str) -> Option<&'a String> {
    rows.iter().find(|r| r.contains(short(sid)))
}

/// Filters the list down to `sid` (selecting it).
fn select(t: &Tmux, sid: &str) {
    t.keys(&["Escape"]);
    t.keys(&["\\"]);
    t.type_text(short(sid));
    t.keys(&["Enter"]);
    t.wait_until("the row alone", T, |p| {
        let r = list_rows(p);
        r.len() == 1 && r[0].contains(short(sid))
    });
}

#[test]
fn two_machines_in_one_list_every_key_on_a_remote_row_and_a_stalled_link_never_freezes_it() {
    if !tmux_or_skip() {
        return;
    }
    let far = Sandbox::new();
    let mut near = Sandbox::new();
    let ssh = stand_in_ssh(&near, &far);
    near.env
        .push(("CCD_SSH_COMMAND".into(), ssh.display().to_string()));
    let here = near.new_session("nearproj");
    let there = far.new_session("farproj");
    // A dead remote session with a transcript: previewed through session.tail.
    let old = far.new_session("oldproj");
    far.ok(&["send", &old, "remember the tail"]);
    wait_for(T, "the old session's reply", || {
        far.ok(&["screen", &old])
            .contains("echo: remember the tail")
            .then_some(())
    });
    far.ok(&["kill", &old]);

    std::fs::write(
        near.tmp.path().join("ccd.toml"),
        "ui_hosts = [\"local\", \"ssh://far\"]\n",
    )
    .unwrap();
    let t = Tmux::start(&near, &["ui"], 140, 40);
    let pane = t.wait_until("rows of both machines", T, |p| {
        let r = list_rows(p);
        row_of(&r, &here).is_some() && row_of(&r, &there).is_some() && row_of(&r, &old).is_some()
    });
    let rows = list_rows(&pane);
    assert!(row_of(&rows, &here).unwrap().contains("local"), "{pane}");
    assert!(row_of(&rows, &there).unwrap().contains("far"), "{pane}");
    assert!(row_of(&rows, &old).unwrap().contains("dead"), "{pane}");
    let ui = t.child_pid().expect("the dashboard's pid");
    assert_eq!(
        dial_children(ui).len(),
        1,
        "one connection to the other machine"
    );

    // The remote dead session's preview: its transcript, through the API.
    select(&t, &old);
    let pane = t.wait("far:", T);
    t.wait_until("the remote transcript", T, |p| {
        p.contains("· transcript") && p.contains("remember the tail")
    });
    assert!(!pane.contains("no transcript yet"), "{pane}");

    // A remote prompt comes by the remote's events, goes on top, and is
    // approved from here.
    far.ok(&["send", &there, "perm echo hi"]);
    t.keys(&["Escape"]);
    let pane = t.wait("[permission: Bash command echo hi]", T);
    let rows = list_rows(&pane);
    assert!(
        rows[0].contains(short(&there)) && rows[0].starts_with('!'),
        "the waiting remote session first:\n{pane}"
    );
    select(&t, &there);
    t.wait_until("the remote live screen", T, |p| p.contains("· live screen"));
    t.keys(&["a"]);
    t.wait("approved prompt", T);
    wait_for(T, "the approved turn on the other machine", || {
        far.ok(&["screen", &there])
            .contains("echo: perm echo hi")
            .then_some(())
    });

    // Attach to the remote session, type, detach back to the dashboard.
    t.keys(&["Enter"]);
    t.wait_until("the attached session", T, |p| {
        !p.contains("q quit") && p.contains("echo: perm echo hi")
    });
    std::thread::sleep(Duration::from_millis(300));
    t.type_text("typed-on-the-other-machine");
    wait_for(T, "the typed text there", || {
        far.ok(&["screen", &there])
            .contains("typed-on-the-other-machine")
            .then_some(())
    });
    t.keys(&["C-\\"]);
    t.wait(&format!("detached from {}", short(&there)), T);
    assert!(t.alternate_on());
    assert_eq!(
        dial_children(ui).len(),
        1,
        "the attach's own connection is gone; the link's stays"
    );

    // An attach whose new connection hangs: the dashboard stays, keys
    // answer, Esc gives up.
    std::fs::write(hang_flag(&near), b"").unwrap();
    t.keys(&["Enter"]);
    t.wait("connecting to far for", T);
    t.keys(&["?"]);
    t.wait("keys", Duration::from_secs(5));
    t.keys(&["Escape"]);
    assert!(t.alternate_on(), "the dashboard stayed");
    t.keys(&["Escape"]);
    t.wait("gave up attaching to far:", Duration::from_secs(5));
    std::fs::remove_file(hang_flag(&near)).unwrap();

    // Observe it (read-only), back with the detach key.
    t.keys(&["o"]);
    t.wait_until("observing", T, |p| {
        !p.contains("q quit") && p.contains("echo: perm echo hi")
    });
    std::thread::sleep(Duration::from_millis(300));
    t.keys(&["C-\\"]);
    t.wait(&format!("detached from {}", short(&there)), T);

    // Fork it: the fork starts there and is attached; back with the key.
    t.keys(&["f"]);
    t.wait_until("the fork attached", T, |p| {
        !p.contains("q quit") && p.contains("echo: perm echo hi")
    });
    std::thread::sleep(Duration::from_millis(300));
    t.keys(&["C-\\"]);
    let pane = t.wait_until("back from the fork", T, |p| {
        p.contains("detached from") && !p.contains(&format!("detached from {}", short(&there)))
    });
    let forks: Vec<String> = common::ls_json(&far)
        .iter()
        .filter(|r| r["session_id"] != there.as_str() && r["session_id"] != old.as_str())
        .filter_map(|r| r["session_id"].as_str().map(String::from))
        .collect();
    assert_eq!(forks.len(), 1, "one fork on the other machine: {forks:?}");
    assert!(
        pane.contains(&format!("detached from {}", short(&forks[0]))),
        "{pane}"
    );

    // A stalled link (ssh stopped: it reads and writes nothing): keys
    // still answer at once, the machine is said unreachable within a
    // call's deadline after the next look at it, its rows stale.
    let link = dial_children(ui)[0];
    signal(link, nix::sys::signal::Signal::SIGSTOP);
    t.keys(&["Escape"]);
    let stalled = Instant::now();
    for (key, note) in [("?", "keys"), ("Escape", "HOST")] {
        t.keys(&[key]);
        t.wait(note, Duration::from_secs(5));
    }
    eprintln!(
        "keys answered while the link was stalled, {:?} after the stop",
        stalled.elapsed()
    );
    let pane = t.wait("far UNREACHABLE", T);
    eprintln!("the stall was said after {:?}", stalled.elapsed());
    assert!(
        row_of(&list_rows(&pane), &there)
            .unwrap()
            .contains("[stale]"),
        "{pane}"
    );
    select(&t, &there);
    let asked = Instant::now();
    t.keys(&["k"]);
    t.wait(
        "far is unreachable, nothing was done",
        Duration::from_secs(5),
    );
    eprintln!("a key on a stale row answered in {:?}", asked.elapsed());
    // The stopped ssh is ended (SIGKILL after SIGTERM), a new one made.
    t.wait_until("back", T, |p| !p.contains("UNREACHABLE"));
    let pane = t.wait_until("fresh rows", T, |p| {
        row_of(&list_rows(p), &there).is_some_and(|r| !r.contains("[stale]"))
    });
    assert!(!pane.contains("[stale]"), "{pane}");
    wait_for(T, "the stopped stand-in gone", || {
        (!std::path::Path::new(&format!("/proc/{link}")).exists()
            || std::fs::read_to_string(format!("/proc/{link}/stat"))
                .is_ok_and(|s| s.contains(") Z ")))
        .then_some(())
    });
    assert_eq!(dial_children(ui).len(), 1, "{:?}", dial_children(ui));

    // The connection cut mid-session: back again.
    signal(dial_children(ui)[0], nix::sys::signal::Signal::SIGKILL);
    t.wait("far UNREACHABLE", T);
    t.wait_until("back after the cut", T, |p| !p.contains("UNREACHABLE"));

    // The remote daemon stopped: its dial-stdio starts it again.
    far.ok(&["daemon", "stop"]);
    t.wait_until("back after the daemon's stop", T, |p| {
        !p.contains("UNREACHABLE") && row_of(&list_rows(p), &there).is_some()
    });
    wait_for(T, "the remote daemon running again", || {
        far.daemon_pid().map(|_| ())
    });

    // Kill a remote session from here (asks first).
    select(&t, &there);
    t.keys(&["k"]);
    t.wait("y to kill", T);
    t.keys(&["y"]);
    t.wait(&format!("{}: ", short(&there)), T);
    wait_for(T, "the remote session dead", || {
        (common::row(&far, &there)["state"] == "dead").then_some(())
    });

    // New asks for the machine, then the directory there: Tab completes
    // on that machine (a directory only it has), Enter starts it there.
    let only_there = far.project("only-on-far-xyz");
    t.keys(&["Escape"]);
    t.keys(&["n"]);
    t.wait("new session on which machine?", T);
    t.keys(&["Down", "Enter"]);
    t.wait("new session on far in directory", T);
    for _ in 0..80 {
        t.keys(&["BSpace"]);
    }
    t.type_text(&format!("{}/only-on-f", far.work.display()));
    t.keys(&["Tab"]);
    t.wait(&format!("{}/", only_there.display()), T);
    t.keys(&["Enter"]);
    wait_for(T, "the new session on the other machine", || {
        common::ls_json(&far)
            .iter()
            .any(|r| r["cwd"] == only_there.to_str().unwrap() && r["state"] == "live")
            .then_some(())
    });
    // It is attached; the detach key comes back.
    t.wait_until("the new session attached", T, |p| {
        !p.contains("q quit") && !p.contains("HOST") && p.contains("only-on-far-xyz")
    });
    // (The key is pressed again until it is read: the attach client
    // may still be starting when its first frame shows.)
    wait_for(T, "back from the new session", || {
        t.keys(&["C-\\"]);
        std::thread::sleep(Duration::from_millis(1500));
        t.capture().contains("detached from").then_some(())
    });

    t.keys(&["q"]);
    t.wait("ccd-exited=0", T);
}

/// A machine whose ssh connects and then answers nothing: the dashboard
/// (ssh in `BatchMode`, so nobody is typing a password) gives up on
/// `hello` after 20 s (`ssh::BATCH_CONNECT_TIMEOUT`) and says so, instead
/// of "connecting…" for the 120 s a person typing a password gets. The
/// stand-in for ssh is two words (`sh SCRIPT`): `-o BatchMode=yes` comes
/// after both, as `ccd --host` puts its options (it once came after the
/// first: `sh -o BatchMode=yes SCRIPT`).
#[test]
fn a_machine_that_never_says_hello_is_given_up_on_in_20_s_with_batch_mode_after_the_whole_ssh_command(
) {
    if !tmux_or_skip() {
        return;
    }
    let mut near = Sandbox::new();
    let args = near.tmp.path().join("ssh-args");
    let script = near.tmp.path().join("silent-ssh.sh");
    std::fs::write(
        &script,
        format!(
            "printf '%s\\n' \"$@\" > {}\nread line\nexec sleep 120\n",
            quote(args.to_str().unwrap())
        ),
    )
    .unwrap();
    near.env
        .push(("CCD_SSH_COMMAND".into(), format!("sh {}", script.display())));
    std::fs::write(
        near.tmp.path().join("ccd.toml"),
        "ui_hosts = [\"local\", \"ssh://far\"]\n",
    )
    .unwrap();
    let started = Instant::now();
    let t = Tmux::start(&near, &["ui"], 200, 30);
    t.wait("far connecting…", T);
    let words: Vec<String> = wait_for(T, "ssh's arguments", || {
        std::fs::read_to_string(&args)
            .ok()
            .filter(|s| s.ends_with("dial-stdio\n"))
    })
    .lines()
    .map(String::from)
    .collect();
    assert_eq!(
        words,
        [
            "-o",
            "BatchMode=yes",
            "-T",
            "far",
            "--",
            "ccd",
            "dial-stdio"
        ]
    );
    let pane = t.wait(
        "far UNREACHABLE (the ccd on far did not answer `hello` within 20s",
        Duration::from_secs(40),
    );
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(19) && took < Duration::from_secs(35),
        "{took:?}: {pane}"
    );
}

/// A machine whose ccd answers the preview's `session.tail` with 2 MiB on
/// one line (a stand-in for ssh, python3, plays it): the dashboard says
/// the reply was too large, with the client's bound, rather than that
/// the machine did not answer (the line was once skipped and the call
/// left to time out).
#[test]
fn a_reply_over_the_bound_on_the_dashboard_is_too_large_not_a_timeout() {
    if !tmux_or_skip() {
        return;
    }
    if !common::python3_or_skip() {
        return;
    }
    let mut near = Sandbox::new();
    let script = near.tmp.path().join("big-ssh.py");
    std::fs::write(
        &script,
        r#"
import json, sys
row = {"session_id": "0badc0de-0000-4000-8000-000000000000", "state": "dead", "pid": None,
       "cwd": "/srv/bigproj", "status": None, "waiting_for": None, "kind": None, "name": None,
       "version": None, "started_at": None, "last_activity": None, "title": "big",
       "model": None, "context_tokens": None, "context_percent": None,
       "context_window": None, "transcript": None, "transcript_bytes": None,
       "writers": [], "several_writers": False, "ccd": None}
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    out = {"jsonrpc": "2.0", "id": m["id"]}
    if m["method"] == "hello":
        out["result"] = {"daemon_version": "0", "protocol": 1, "server": "ccd"}
    elif m["method"] == "events.subscribe":
        out["result"] = {"subscribed": True}
    elif m["method"] == "sessions.list":
        out["result"] = {"sessions": [row], "total": 1, "next_offset": None}
    elif m["method"] == "session.tail":
        out["result"] = {"x": "a" * (2 << 20)}
    else:
        out["error"] = {"code": -32601, "message": "method not found"}
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
"#,
    )
    .unwrap();
    near.env.push((
        "CCD_SSH_COMMAND".into(),
        format!("python3 {}", script.display()),
    ));
    std::fs::write(
        near.tmp.path().join("ccd.toml"),
        "ui_hosts = [\"local\", \"ssh://far\"]\n",
    )
    .unwrap();
    let t = Tmux::start(&near, &["ui"], 250, 30);
    t.wait_until("the remote row", T, |p| {
        row_of(&list_rows(p), "0badc0de").is_some()
    });
    select(&t, "0badc0de-");
    let pane = t.wait("sent a reply to `session.tail` of 2097", T);
    assert!(
        pane.contains("over this client's bound of 1048576 bytes (1 MiB)"),
        "{pane}"
    );
    assert!(!pane.contains("did not answer"), "{pane}");
}

/// The search line of `sid` on `host` (after the WHAT WAS SAID header).
fn hit_of(pane: &str, host: &str, sid: &str) -> Option<String> {
    pane.lines()
        .skip_while(|l| !l.contains("WHAT WAS SAID"))
        .skip(1)
        .find(|l| l.contains(short(sid)) && l.trim_start().starts_with(host))
        .map(String::from)
}

/// A session with one turn saying `prompt`, then killed: dead, with a
/// transcript.
fn dead_with(sb: &Sandbox, project: &str, prompt: &str) -> String {
    let sid = sb.new_session(project);
    sb.ok(&["send", &sid, prompt]);
    wait_for(T, "the turn", || {
        let r = common::row(sb, &sid);
        (r["status"] == "idle" && !r["transcript"].is_null()).then_some(())
    });
    sb.ok(&["kill", &sid]);
    wait_for(T, "the session dead", || {
        (common::row(sb, &sid)["state"] == "dead").then_some(())
    });
    sid
}

/// Issue 55 §3 across machines: `/` asks every machine shown through its
/// link; the hits of both come in one list with their machine, a machine
/// that cannot be reached is named while the others answer, and Enter on
/// the other machine's dead hit resumes it there, in its own folder.
#[test]
fn the_search_asks_every_machine_names_a_failed_one_and_resumes_a_remote_hit_there() {
    if !tmux_or_skip() {
        return;
    }
    let far = Sandbox::new();
    let mut near = Sandbox::new();
    let ssh = stand_in_ssh(&near, &far);
    // A third machine whose ssh fails at once.
    let gone = near.tmp.path().join("fake-ssh-gone");
    std::fs::write(
        &gone,
        format!(
            "#!/bin/sh\ncase \"$*\" in *gone*) echo 'ssh: connect to host gone port 22: Connection refused' >&2; exit 255;; esac\nexec {} \"$@\"\n",
            quote(ssh.to_str().unwrap())
        ),
    )
    .unwrap();
    std::fs::set_permissions(&gone, std::fs::Permissions::from_mode(0o755)).unwrap();
    near.env
        .push(("CCD_SSH_COMMAND".into(), gone.display().to_string()));
    let mine = dead_with(&near, "nearproj", "the zebraquokka near side");
    let theirs = dead_with(&far, "farproj", "the zebraquokka far side onlyfarword");
    std::fs::write(
        near.tmp.path().join("ccd.toml"),
        "ui_hosts = [\"local\", \"ssh://far\", \"ssh://gone\"]\n",
    )
    .unwrap();
    let t = Tmux::start(&near, &["ui"], 140, 40);
    t.wait_until("rows of both machines", T, |p| {
        let r = list_rows(p);
        row_of(&r, &mine).is_some() && row_of(&r, &theirs).is_some()
    });
    t.keys(&["/"]);
    t.type_text("zebraquokka");
    t.keys(&["Enter"]);
    let pane = t.wait_until("both machines' hits and the failed one named", T, |p| {
        hit_of(p, "local", &mine).is_some()
            && hit_of(p, "far", &theirs).is_some()
            && p.contains("gone not searched: unreachable")
    });
    assert!(pane.contains("Connection refused"), "{pane}");
    assert!(
        hit_of(&pane, "far", &theirs).is_some_and(|l| l.contains("dead") && l.contains("far side")),
        "{pane}"
    );
    // The far machine's hit alone; Enter: resumed there, in its folder.
    t.keys(&["/", "C-u"]);
    t.type_text("onlyfarword");
    t.keys(&["Enter"]);
    t.wait_until("the far hit alone", T, |p| {
        hit_of(p, "far", &theirs).is_some() && hit_of(p, "local", &mine).is_none()
    });
    t.keys(&["Enter"]);
    t.wait_until("attached to the resumed session", T, |p| {
        !p.contains("WHAT WAS SAID")
    });
    let r = wait_for(T, "the far session resumed under ccd there", || {
        let r = common::row(&far, &theirs);
        (r["state"] == "live" && !r["ccd"].is_null()).then_some(r)
    });
    let dir = far.work.join("farproj");
    assert_eq!(
        r["writers"][0]["cwd"],
        dir.to_str().unwrap(),
        "resumed in its own folder: {r}"
    );
    assert_eq!(common::row(&near, &mine)["state"], "dead", "not this one");
    t.keys(&["C-\\"]);
    t.wait(&format!("detached from {}", short(&theirs)), T);
    t.keys(&["Escape"]);
    t.keys(&["q"]);
    t.wait("ccd-exited=0", T);
}
