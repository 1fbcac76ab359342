//! `--host ssh://…`: the same commands and the same API on another machine
//! over a real `sshd` on 127.0.0.1 (a throwaway user whose home is a temp
//! dir, the fake claude as its `claude`; see `common/sshd.rs`).

mod common;

use common::sshd::{sshd_or_skip, sshd_with_shell_or_skip, SshHost};
use common::{wait_for, Sandbox};
use serde_json::Value;
use std::time::Duration;

const T: Duration = Duration::from_secs(30);

fn json_rows(out: &str) -> Vec<Value> {
    serde_json::from_str::<Value>(out)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
        .as_array()
        .cloned()
        .unwrap()
}

#[test]
fn new_ls_send_and_screen_on_another_machine() {
    let Some(host) = sshd_or_skip() else { return };
    let sb = host.sandbox();
    let url = host.url();
    let label = url.trim_start_matches("ssh://").to_string();
    let here = sb.new_session("here");
    let there = host.new_session(&sb, "there");
    assert_eq!(there.len(), 36, "{there}");

    // The remote session lives under the throwaway user's own ~/.claude.
    wait_for(T, "the remote registry entry", || {
        std::fs::read_dir(host.claude_dir().join("sessions"))
            .ok()?
            .next()
            .map(|_| ())
    });
    assert!(
        !sb.config.join("sessions").exists()
            || std::fs::read_dir(sb.config.join("sessions"))
                .unwrap()
                .flatten()
                .all(|e| !std::fs::read_to_string(e.path())
                    .unwrap_or_default()
                    .contains(&there))
    );

    // One host: every row says which.
    let rows = json_rows(&sb.ok(&["--host", &url, "ls", "--json"]));
    assert!(
        rows.iter().any(|r| r["session_id"] == there.as_str()),
        "{rows:?}"
    );
    assert!(rows.iter().all(|r| r["host"] == label.as_str()), "{rows:?}");
    assert!(!rows.iter().any(|r| r["session_id"] == here.as_str()));

    // Merged with this machine's.
    let rows = json_rows(&sb.ok(&["--host", "local", "--host", &url, "ls", "--json"]));
    let row = |sid: &str| rows.iter().find(|r| r["session_id"] == sid).cloned();
    assert_eq!(row(&here).expect("local row")["host"], "local");
    let r = row(&there).expect("remote row");
    assert_eq!(r["host"], label.as_str());
    assert!(r["ccd"]["holder"].is_string(), "held there: {r}");
    // Local-only listing: `host` is there too.
    let rows = json_rows(&sb.ok(&["ls", "--json"]));
    assert!(rows.iter().all(|r| r["host"] == "local"), "{rows:?}");
    // The table has a HOST column.
    let table = sb.ok(&["--host", "local", "--host", &url, "ls"]);
    assert!(table.starts_with("HOST"), "{table}");
    assert!(
        table.contains(&label) && table.contains(&there[..8]),
        "{table}"
    );

    // send and screen.
    let o = sb.run(&["--host", &url, "send", &there, "hello from afar"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    wait_for(T, "the echo on the remote screen", || {
        let s = sb.ok(&["--host", &url, "screen", &there[..8]]);
        s.contains("echo: hello from afar").then_some(())
    });
    // The same id is not known here.
    let o = sb.run(&["screen", &there]);
    assert!(!o.status.success());

    // An unreachable host is reported and does not hide the others.
    let o = sb.run(&[
        "--host",
        "local",
        "--host",
        &url,
        "--host",
        "ssh://nobody@127.0.0.1:1",
        "ls",
        "--json",
    ]);
    assert!(!o.status.success());
    let rows = json_rows(&String::from_utf8_lossy(&o.stdout));
    assert!(rows.iter().any(|r| r["session_id"] == here.as_str()));
    assert!(rows.iter().any(|r| r["session_id"] == there.as_str()));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("host nobody@127.0.0.1:1"), "{err}");

    // Named hosts from the config file, and $CCD_HOST.
    std::fs::write(
        sb.tmp.path().join("ccd.toml"),
        format!("[hosts]\nbox = \"{url}\"\n"),
    )
    .unwrap();
    let rows = json_rows(&sb.ok(&["--host", "box", "ls", "--json"]));
    assert!(rows.iter().all(|r| r["host"] == "box"), "{rows:?}");
    let o = sb
        .cmd(&["screen", &there])
        .env("CCD_HOST", "box")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // `HOST:id` names the host with the id.
    let o = sb.run(&["screen", &format!("box:{}", &there[..8])]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = sb.run(&["screen", &format!("local:{}", &here[..8])]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = sb.run(&["--host", "nosuch", "ls"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown host \"nosuch\""));

    // Stopping the remote daemon works through --host too.
    let o = sb.run(&["--host", &url, "daemon", "stop", "--kill-sessions"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn a_remote_without_ccd_is_one_clear_message() {
    let Some(host) = sshd_or_skip() else { return };
    let sb = host.sandbox();
    let url = host.url();
    let o = sb.run(&["--host", &url, "--remote-ccd", "ccd-not-installed", "ls"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("`ccd-not-installed` was not found on the remote machine"),
        "{err}"
    );
    assert!(err.contains("--remote-ccd"), "{err}");
    // The remote shell's own line came first, through ccd (made safe).
    let shell = err.find("ccd-not-installed: not found").expect(&err);
    assert!(
        shell < err.find("was not found on the remote machine").unwrap(),
        "{err}"
    );
    let o = sb.run(&[
        "--host",
        &url,
        "--remote-ccd",
        "ccd-not-installed",
        "screen",
        "x",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("was not found on the remote machine"), "{err}");
    // With the right path in the config it works.
    std::fs::write(
        sb.tmp.path().join("ccd.toml"),
        format!("remote_ccd = \"{}/bin/ccd\"\n", host.home.display()),
    )
    .unwrap();
    let o = sb.run(&["--host", &url, "ls", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// ssh hands the remote command to the user's login shell, which need
/// not be POSIX: with fish there, a `--remote-ccd` quoted for sh
/// (`x\'; touch …; #`) ran `touch`. A value outside the conservative set
/// is refused before ssh runs, naming the character; a path with a space
/// (quoted the way every shell reads alike) still works under fish.
#[test]
fn a_remote_ccd_is_one_word_for_a_fish_login_shell() {
    let Some(host) = sshd_with_shell_or_skip("/usr/bin/fish") else {
        return;
    };
    let sb = host.sandbox();
    let url = host.url();
    // fish is the login shell there.
    let o = std::process::Command::new("ssh")
        .args(["-F"])
        .arg(&host.ssh_config)
        .args(["h", "echo fish=$FISH_VERSION"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(
        said.trim().len() > "fish=".len(),
        "not fish: {said:?} {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let marker = host.home.join("tmp/pwned");
    for hostile in [
        format!("x\\'; touch {}; #", marker.display()),
        format!("x'; touch {}; #", marker.display()),
        format!("x; touch {}", marker.display()),
        format!("(touch {})", marker.display()),
        format!("x\ntouch {}", marker.display()),
    ] {
        let o = sb.run(&["--host", &url, "--remote-ccd", &hostile, "ls"]);
        assert!(!o.status.success(), "{hostile:?} was accepted");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("--remote-ccd"), "{err}");
        assert!(err.contains("at character"), "{err}");
        assert!(err.contains("nothing was run"), "{err}");
    }
    std::thread::sleep(Duration::from_millis(200));
    assert!(!marker.exists(), "a hostile --remote-ccd ran a command");
    // The same refusal for the config's value, named as such.
    std::fs::write(
        sb.tmp.path().join("ccd.toml"),
        "remote_ccd = \"ccd$(touch x)\"\n",
    )
    .unwrap();
    let o = sb.run(&["--host", &url, "ls"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("remote_ccd in the config file"), "{err}");
    assert!(err.contains("'$' at character 4"), "{err}");
    std::fs::remove_file(sb.tmp.path().join("ccd.toml")).unwrap();
    // A path with a space reaches the remote ccd under fish.
    let spaced = host.home.join("my bin");
    std::fs::create_dir_all(&spaced).unwrap();
    let ccd = spaced.join("ccd");
    if std::fs::hard_link(common::ccd_bin(), &ccd).is_err() {
        std::fs::copy(common::ccd_bin(), &ccd).unwrap();
    }
    let o = sb.run(&[
        "--host",
        &url,
        "--remote-ccd",
        ccd.to_str().unwrap(),
        "ls",
        "--json",
    ]);
    assert!(
        o.status.success(),
        "{}\nsshd: {}",
        String::from_utf8_lossy(&o.stderr),
        host.sshd_log()
    );
}

/// The pid of the `ssh` process `ccd` (pid `parent`) runs.
fn ssh_child_of(parent: u32) -> Option<i32> {
    ccd_testkit::procs::children(parent)
        .into_iter()
        .filter_map(|(pid, _)| i32::try_from(pid).ok())
        .find(|&pid| SshHost::cmdline(pid).starts_with("ssh "))
}

/// A client of the remote daemon, through the same transport.
fn remote_client(host: &SshHost) -> ccd_client::Client {
    let remote = ccd_client::ssh::Remote {
        target: host.url().parse().unwrap(),
        label: "test".into(),
        ssh: host
            .ssh_command()
            .split_whitespace()
            .map(Into::into)
            .collect(),
        remote_ccd: "ccd".into(),
        stderr: Default::default(),
        batch: false,
    };
    ccd_client::ssh::connect(&remote, "test/0").unwrap()
}

#[test]
fn attach_on_another_machine_types_resizes_detaches_and_survives_a_cut() {
    use common::pty::PtyRun;
    let Some(host) = sshd_or_skip() else { return };
    let sb = host.sandbox();
    let url = host.url();
    let sid = host.new_session(&sb, "attached");
    let short = &sid[..8];

    let mut a = PtyRun::start(&sb, &["--host", &url, "attach", short], None);
    a.wait_text("❯", T);
    a.send(b"hello over ssh\r");
    a.wait_text("echo: hello over ssh", T);
    // Resize goes through the protocol (ssh has no tty: -T).
    a.resize(30, 100);
    let mut c = remote_client(&host);
    wait_for(T, "the remote session at 30x100", || {
        let s = c
            .call_value("session.screen", serde_json::json!({"session": sid}))
            .ok()?;
        (s["size"]["rows"] == 30 && s["size"]["cols"] == 100).then_some(())
    });
    // The detach key.
    a.send(b"\x1c");
    assert_eq!(a.wait_exit(T), 0);
    assert!(a.terminal_is_cooked(), "terminal left in raw mode");
    let raw = a.raw_text();
    assert!(
        raw.contains(&format!("come back with: ccd --host {url} attach {short}")),
        "how to come back: {raw}"
    );

    // `ccd new` without --detach attaches over ssh too.
    let dir = host.project("new-attached");
    let mut n = PtyRun::start(
        &sb,
        &["--host", &url, "new", "--cwd", dir.to_str().unwrap()],
        None,
    );
    n.wait_text("❯", T);
    n.send(b"typed into a new one\r");
    n.wait_text("echo: typed into a new one", T);
    n.send(b"\x1c");
    assert_eq!(n.wait_exit(T), 0);
    assert!(n.raw_text().contains(&format!("ccd --host {url} attach")));

    // Attach again; the redraw shows what was typed; then the connection
    // is cut (the ssh client killed by pid).
    let mut b = PtyRun::start(&sb, &["--host", &url, "attach", &sid], None);
    b.wait_text("echo: hello over ssh", T);
    let ccd_pid = b.child.process_id().unwrap();
    let ssh = wait_for(T, "ccd's ssh", || ssh_child_of(ccd_pid));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(ssh),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    assert_eq!(b.wait_exit(T), 3);
    assert!(b.terminal_is_cooked(), "terminal left in raw mode");
    let raw = b.raw_text();
    assert!(
        raw.contains("lost the connection to")
            && raw.contains("the session keeps running there")
            && raw.contains(&format!("ccd --host {url} attach {short}")),
        "{raw}"
    );
    // The remote session is still there and still answers.
    let s = c
        .call_value("sessions.get", serde_json::json!({"session": sid}))
        .unwrap();
    assert_eq!(s["state"], "live", "{s}");
    let o = sb.run(&["--host", &url, "send", &sid, "still here"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    wait_for(T, "the echo after the cut", || {
        let s = sb.ok(&["--host", &url, "screen", &sid]);
        s.contains("echo: still here").then_some(())
    });
}

#[test]
fn events_approve_deny_fork_observe_and_kill_on_another_machine() {
    use common::pty::PtyRun;
    use std::io::BufRead;
    let Some(host) = sshd_or_skip() else { return };
    let sb = host.sandbox();
    let url = host.url();
    let sid = host.new_session(&sb, "verbs");

    // `ccd events` streams the remote daemon's events.
    let mut events = sb
        .cmd(&["--host", &url, "events", "--json"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<Value>();
    let stdout = events.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Ok(v) = serde_json::from_str::<Value>(&line) {
                let _ = tx.send(v);
            }
        }
    });
    let attention = |rx: &std::sync::mpsc::Receiver<Value>| -> Value {
        let deadline = std::time::Instant::now() + T;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let e = rx.recv_timeout(left).expect("a permission attention event");
            if e["type"] == "session.attention"
                && e["session"] == sid.as_str()
                && e["reason"] == "permission"
            {
                return e;
            }
        }
    };
    // Subscribed before the prompt shows: wait for the stream to be live.
    std::thread::sleep(Duration::from_millis(1500));

    sb.ok(&["--host", &url, "send", &sid, "perm touch approved.txt"]);
    let a = attention(&rx);
    let prompt = a["prompt"].as_str().unwrap().to_string();
    let out = sb.ok_stderr(&["--host", &url, "approve", &sid, "--prompt", &prompt]);
    assert!(out.contains(&format!("approved prompt {prompt}")), "{out}");
    wait_for(T, "the approved turn's reply", || {
        sb.ok(&["--host", &url, "screen", &sid])
            .contains("echo: perm touch approved.txt")
            .then_some(())
    });
    sb.ok(&["--host", &url, "send", &sid, "perm rm -rf build"]);
    attention(&rx);
    let out = sb.ok_stderr(&["--host", &url, "deny", &sid, "--message", "list instead"]);
    assert!(out.contains("denied prompt"), "{out}");
    wait_for(T, "the refusal and the message's turn", || {
        let s = sb.ok(&["--host", &url, "screen", &sid]);
        (s.contains("User rejected the command") && s.contains("echo: list instead")).then_some(())
    });
    let _ = events.kill();
    let _ = events.wait();

    // fork, observe, kill.
    let fork = sb
        .ok(&["--host", &url, "fork", &sid, "--detach"])
        .trim()
        .to_string();
    assert_eq!(fork.len(), 36, "{fork}");
    assert_ne!(fork, sid);
    let mut o = PtyRun::start(&sb, &["--host", &url, "observe", &sid], None);
    o.wait_text("echo: list instead", T);
    o.send(b"typed while observing\r");
    o.send(b"\x1c");
    assert_eq!(o.wait_exit(T), 0);
    assert!(!sb
        .ok(&["--host", &url, "screen", &sid])
        .contains("typed while observing"));
    let out = sb.run(&["--host", &url, "kill", &fork]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut c = remote_client(&host);
    wait_for(T, "the fork ended", || {
        let v = c
            .call_value("sessions.list", serde_json::json!({"held_only": true}))
            .ok()?;
        let gone = v["sessions"]
            .as_array()?
            .iter()
            .filter(|s| s["session_id"] == fork.as_str())
            .all(|s| s["state"] == "dead" && s["ccd"]["lifecycle"] == "exited");
        gone.then_some(())
    });

    // trim there: the live session is refused; once dead, it is trimmed.
    let out = sb.run(&["--host", &url, "trim", &sid]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("needs a dead session"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    sb.ok(&["--host", &url, "kill", &sid]);
    wait_for(T, "the session dead", || {
        let out = sb.run(&["--host", &url, "trim", &sid, "--dry-run", "--json"]);
        let r: Value = serde_json::from_slice(&out.stdout).ok()?;
        (out.status.success() && r["session"] == sid.as_str() && r["dry_run"] == true).then_some(())
    });
}

#[test]
fn the_neovim_plugin_lists_a_remote_host() {
    let Some(nvim) = common::nvim::or_skip() else {
        return;
    };
    let Some(host) = sshd_or_skip() else { return };
    let sb = host.sandbox();
    let sid = host.new_session(&sb, "nvim");
    let spec = common::nvim::plugin().join("tests/remote_spec.lua");
    let mut cmd = common::nvim::headless(&nvim, &sb, &spec);
    cmd.env("CCD_TEST_HOST", host.url())
        .env("CCD_TEST_SSH", host.ssh_command())
        .env("CCD_TEST_SESSION", &sid);
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Bounded: a hung nvim is killed by pid.
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        if rx.recv_timeout(Duration::from_secs(120)).is_err() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    });
    let out = child.wait_with_output().unwrap();
    let _ = tx.send(());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("all checks passed"),
        "remote_spec failed\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
    );
    eprintln!("{stdout}");
}

/// A remote whose daemon keeps answering `next_offset` is read at most
/// 200 pages (`REMOTE_PAGES`): a stand-in for ssh (python3) plays the
/// remote ccd.
#[test]
fn a_remote_that_pages_forever_is_read_at_most_200_pages() {
    if !common::python3_or_skip() {
        return;
    }
    let sb = Sandbox::new();
    let script = sb.tmp.path().join("fake-ssh.py");
    std::fs::write(
        &script,
        r#"
import json, sys
row = {"session_id": "s", "state": "dead", "pid": None, "cwd": None, "status": None,
       "waiting_for": None, "kind": None, "name": None, "version": None,
       "started_at": None, "last_activity": None, "title": None, "model": None,
       "context_tokens": None, "context_percent": None, "context_window": None,
       "transcript": None, "transcript_bytes": None, "writers": [],
       "several_writers": False, "ccd": None}
for line in sys.stdin:
    m = json.loads(line)
    if m["method"] == "hello":
        r = {"daemon_version": "0", "protocol": 1, "server": "ccd"}
    else:
        off = (m.get("params") or {}).get("offset") or 0
        r = {"sessions": [dict(row, session_id="%08d" % off)], "total": 10**9,
             "next_offset": off + 500}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}) + "\n")
    sys.stdout.flush()
"#,
    )
    .unwrap();
    let o = sb
        .cmd(&["--host", "ssh://far", "ls", "--json"])
        .env("CCD_SSH_COMMAND", format!("python3 {}", script.display()))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = json_rows(&String::from_utf8_lossy(&o.stdout));
    assert_eq!(rows.len(), 200);
    assert!(rows.iter().all(|r| r["host"] == "far"));
}

/// A stand-in for ssh (`sh SCRIPT`, two words: the whole of it comes
/// before ssh's options) that answers `hello` with `hello` (raw, `None`:
/// nothing), then starts its answer to the next request and sends one
/// byte a second of it for 60 s.
fn trickling_remote(sb: &Sandbox, hello: Option<&str>) -> String {
    let script = sb.tmp.path().join("trickle.sh");
    let answer = match hello {
        Some(h) => format!("read line; printf '%s\\n' '{h}'; "),
        None => String::new(),
    };
    std::fs::write(
        &script,
        format!(
            "{answer}read line; printf '{{\"jsonrpc\":\"2.0\",\"id\":'; i=0; while [ $i -lt 60 ]; do printf 1; sleep 1; i=$((i+1)); done\n"
        ),
    )
    .unwrap();
    format!("sh {}", script.display())
}

/// `ccd --host ssh://far ls` against a remote trickling its answer: the
/// error (exit 1) and how long it took.
fn ls_trickled(hello: Option<&str>) -> (String, Duration) {
    let sb = Sandbox::new();
    let ssh = trickling_remote(&sb, hello);
    let started = std::time::Instant::now();
    let o = sb
        .cmd(&["--host", "ssh://far", "ls", "--json"])
        .env("CCD_SSH_COMMAND", ssh)
        .output()
        .unwrap();
    let took = started.elapsed();
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    (String::from_utf8_lossy(&o.stderr).into_owned(), took)
}

/// A remote that starts its answer to `hello` and then sends a byte a
/// second is given up on 5 s after its first bytes (ssh has
/// authenticated by then; the 120 s are for a person typing a password),
/// not held forever (each byte restarted the wait: still waiting at
/// 200 s).
#[test]
fn a_remote_trickling_its_hello_is_given_up_on() {
    let (err, took) = ls_trickled(None);
    assert!(took < Duration::from_secs(15), "{took:?}: {err}");
    assert!(
        err.contains("the ccd on far did not answer `hello` within"),
        "{err}"
    );
}

/// The same for the reply to a call after `hello`: its method's deadline
/// (5 s) bounds the whole reply, not each read.
#[test]
fn a_remote_trickling_a_reply_is_given_up_on() {
    let hello =
        r#"{"jsonrpc":"2.0","id":1,"result":{"daemon_version":"0","protocol":1,"server":"ccd"}}"#;
    let (err, took) = ls_trickled(Some(hello));
    assert!(took < Duration::from_secs(15), "{took:?}: {err}");
    assert!(
        err.contains("the ccd on far did not answer `sessions.list` within 5s"),
        "{err}"
    );
}

/// A 64 MiB reply is named as too large, with the client's bound, not
/// explained as a timeout.
#[test]
fn a_64_mib_reply_is_too_large_not_a_timeout() {
    let sb = Sandbox::new();
    let script = sb.tmp.path().join("big.sh");
    std::fs::write(
        &script,
        concat!(
            "read line; printf '%s\\n' '{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"daemon_version\":\"0\",\"protocol\":1,\"server\":\"ccd\"}}'\n",
            "read line; printf '{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"x\":\"'; ",
            "head -c 67108864 /dev/zero | tr '\\0' a; printf '\"}}\\n'; sleep 10\n"
        ),
    )
    .unwrap();
    let started = std::time::Instant::now();
    let o = sb
        .cmd(&["--host", "ssh://far", "ls", "--json"])
        .env("CCD_SSH_COMMAND", format!("sh {}", script.display()))
        .output()
        .unwrap();
    let took = started.elapsed();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("the ccd on far sent a reply to `sessions.list` of 67108906 bytes"),
        "{err}"
    );
    assert!(err.contains("bound of 1048576 bytes (1 MiB)"), "{err}");
    assert!(!err.contains("did not answer"), "{err}");
    assert!(took < Duration::from_secs(10), "{took:?}");
}

/// ssh's own questions reach the user's terminal: an unknown host key is
/// asked about on the tty, answered there, and the command goes on.
#[test]
fn ssh_asks_its_host_key_question_on_the_terminal() {
    use common::pty::PtyRun;
    let Some(host) = sshd_or_skip() else { return };
    // The same client config, but asking about an unknown host key.
    let cfg = std::fs::read_to_string(&host.ssh_config)
        .unwrap()
        .replace(
            &format!("UserKnownHostsFile {}/known_hosts", host.root.display()),
            &format!(
                "UserKnownHostsFile {}/known_hosts_empty",
                host.root.display()
            ),
        )
        .replace("StrictHostKeyChecking yes", "StrictHostKeyChecking ask")
        .replace("BatchMode yes", "BatchMode no");
    let asking = host.root.join("ssh_config_ask");
    std::fs::write(&asking, cfg).unwrap();
    let sb = Sandbox::with_env(&[("CCD_SSH_COMMAND", &format!("ssh -F {}", asking.display()))]);
    let url = host.url();
    let mut p = PtyRun::start(&sb, &["--host", &url, "daemon", "status"], None);
    p.wait_raw("Are you sure you want to continue connecting", T);
    p.send(b"yes\r");
    assert_eq!(p.wait_exit(T), 0, "{}", p.raw_text());
    assert!(
        std::fs::read_to_string(host.root.join("known_hosts_empty"))
            .unwrap_or_default()
            .contains("ssh-ed25519"),
        "the answer was ssh's to record"
    );
}

/// The bytes sent and received (TCP payload) by the ssh connections to
/// `port` on this machine, from `ss -ti` (`None` when ss says nothing).
fn tcp_bytes_to(port: u16) -> Option<(u64, u64)> {
    let out = std::process::Command::new("ss")
        .args([
            "-tinH",
            "state",
            "established",
            "dport",
            "=",
            &format!(":{port}"),
        ])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let field = |name: &str| -> Option<u64> {
        let mut sum = None;
        for part in text.split_whitespace() {
            if let Some(v) = part.strip_prefix(name) {
                *sum.get_or_insert(0) += v.parse::<u64>().ok()?;
            }
        }
        sum
    };
    Some((field("bytes_sent:")?, field("bytes_received:")?))
}

#[test]
fn the_dashboard_shows_both_machines_over_real_ssh() {
    use common::tmux::{list_rows, tmux_or_skip, Tmux};
    let Some(host) = sshd_or_skip() else { return };
    if !tmux_or_skip() {
        return;
    }
    let mut sb = host.sandbox();
    let url = host.url();
    let here = sb.new_session("here");
    let there = host.new_session(&sb, "there");
    let args = ["ui", "--host", "local", "--host", url.as_str()];
    let has = |p: &str, sid: &str| list_rows(p).iter().any(|r| r.contains(&sid[..8]));

    // The first frame with both machines (each listed), three times.
    sb.env
        .push(("CCD_UI_EXIT_AFTER_FIRST_FRAME".into(), "1".into()));
    for _ in 0..3 {
        let t = Tmux::start(&sb, &args, 140, 40);
        let pane = t.wait("ccd-exited=0", T);
        let line = pane
            .lines()
            .find(|l| l.contains("frame with"))
            .unwrap_or_else(|| panic!("{pane}"));
        let figure = line.split("frame with").nth(1).unwrap_or(line);
        eprintln!("two machines over real ssh: the first frame with{figure}");
    }
    sb.env.pop();

    let t = Tmux::start(&sb, &args, 140, 40);
    t.wait_until("rows of both machines", T, |p| {
        has(p, &here) && has(p, &there)
    });
    let ui = t.child_pid().expect("the dashboard's pid");
    let ssh = wait_for(T, "the link's ssh", || ssh_child_of(ui));

    // Idle: what the link moves over the network in 20 s (the costs
    // refreshed as usual), with this machine's row selected, then the
    // other machine's (its live screen is fetched every few seconds).
    let idle = |what: &str| {
        std::thread::sleep(Duration::from_secs(2));
        let Some((s0, r0)) = tcp_bytes_to(host.port) else {
            eprintln!("ss gave no byte counts: idle traffic not measured");
            return;
        };
        std::thread::sleep(Duration::from_secs(20));
        if let Some((s1, r1)) = tcp_bytes_to(host.port) {
            eprintln!(
                "an idle two-machine dashboard, {what} selected: {} B/min sent, {} B/min received over ssh",
                (s1 - s0) * 3,
                (r1 - r0) * 3
            );
        }
    };
    for (sid, what) in [
        (&here, "this machine's row"),
        (&there, "the remote live row"),
    ] {
        t.keys(&["\\"]);
        t.type_text(&sid[..8]);
        t.keys(&["Enter", "Escape"]);
        t.wait_until("the row selected", T, |p| {
            p.contains(&format!(":{} ·", &sid[..8]))
        });
        idle(what);
    }

    // A remote prompt, shown and approved from the dashboard.
    sb.ok(&["--host", &url, "send", &there, "perm echo hi"]);
    t.wait("[permission: Bash command echo hi]", T);
    t.keys(&["\\"]);
    t.type_text(&there[..8]);
    t.keys(&["Enter"]);
    t.wait_until("the remote row alone, its screen", T, |p| {
        list_rows(p).len() == 1 && p.contains("· live screen")
    });
    t.keys(&["a"]);
    t.wait("approved prompt", T);
    wait_for(T, "the approved turn there", || {
        sb.ok(&["--host", &url, "screen", &there])
            .contains("echo: perm echo hi")
            .then_some(())
    });

    // Attach over ssh and detach back to the dashboard.
    t.keys(&["Enter"]);
    t.wait_until("attached", T, |p| {
        !p.contains("q quit") && p.contains("echo: perm echo hi")
    });
    std::thread::sleep(Duration::from_millis(500));
    t.type_text("over-real-ssh");
    wait_for(T, "the typed text there", || {
        sb.ok(&["--host", &url, "screen", &there])
            .contains("over-real-ssh")
            .then_some(())
    });
    t.keys(&["C-\\"]);
    t.wait(&format!("detached from {}", &there[..8]), T);

    // The remote daemon killed: the link's connection ends with it; a new
    // one (a new ssh) starts a new daemon there, which adopts the session.
    let daemon_there = || {
        host.user_pids().into_iter().find(|&p| {
            let c = SshHost::cmdline(p);
            c.contains(" daemon") && !c.contains("dial-stdio")
        })
    };
    let old_daemon = wait_for(T, "the remote daemon", daemon_there);
    let old_ssh = wait_for(T, "the link's ssh", || ssh_child_of(ui));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(old_daemon),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    wait_for(T, "a new link and a new daemon there", || {
        let ssh = ssh_child_of(ui)?;
        let daemon = daemon_there()?;
        (ssh != old_ssh && daemon != old_daemon).then_some(())
    });
    t.wait_until("back after the remote daemon's death", T, |p| {
        !p.contains("UNREACHABLE") && !p.contains("[stale]") && has(p, &there)
    });

    // The ssh connection killed mid-session: unreachable, then back.
    let ssh_now = wait_for(T, "the link's ssh", || ssh_child_of(ui));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(ssh_now),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    t.wait("UNREACHABLE", T);
    let pane = t.wait_until("back after the cut", T, |p| {
        !p.contains("UNREACHABLE") && !p.contains("[stale]")
    });
    assert!(has(&pane, &there), "{pane}");
    let _ = ssh;
    t.keys(&["q"]);
    t.wait("ccd-exited=0", T);
}
