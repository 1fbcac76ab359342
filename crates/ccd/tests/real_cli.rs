//! End to end against the REAL Claude Code CLI, offline (docs/claude-cli-compat.md, "Running the real CLI offline"):
//! each pinned version (`tests/real-cli/versions`) is installed into a cache
//! outside the repo by `tests/real-cli/install.sh`, talks to `ccd-mock-api`
//! on loopback, and runs under ccd in a sandbox (temp HOME, config dir,
//! TMPDIR). Versions run side by side, one thread each.
//!
//! When the CLI cannot be installed: with `$CI` set the test fails; else it
//! prints "SKIPPED: …" and passes.

mod common;

use ccd_testkit::notify::CommandSink;
use common::real::{self, MockApi, MockUsage};
use common::{ls_json, wait_for, Sandbox};
use serde_json::{json, Value};
use std::io::Write;
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(60);

/// What a failure should show: ccd's logs, the session's screen, and the
/// requests the mock saw.
fn evidence(sb: &Sandbox, mock: &MockApi, sid: Option<&str>) -> String {
    let screen = sid
        .map(|s| {
            let o = sb.run(&["screen", s]);
            String::from_utf8_lossy(&o.stdout).into_owned()
        })
        .unwrap_or_default();
    format!(
        "--- screen:\n{screen}\n--- mock requests:\n{}\n--- ccd logs:\n{}",
        mock.summary(),
        sb.logs()
    )
}

fn one_version(version: &str) {
    let Some(claude) = real::claude_or_skip(version) else {
        return;
    };
    let started = Instant::now();
    let usage = MockUsage {
        input: 1234,
        cache_creation: 2345,
        cache_read: 3456,
        output: 77,
    };
    let mock = MockApi::start(usage);
    let sb = real::sandbox(&mock, &claude, version);
    let proj = sb.project("untrusted-proj");

    // New session in an untrusted folder: ccd must pass the trust dialog,
    // whichever option is the default in this version.
    let out = sb.run(&["new", "--detach", "--cwd", proj.to_str().unwrap()]);
    let sid = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(
        out.status.success() && sid.len() >= 8,
        "[{version}] ccd new failed: {}\nstdout: {sid}\n{}",
        String::from_utf8_lossy(&out.stderr),
        evidence(&sb, &mock, None)
    );
    let entry = wait_for(T, "the registry entry", || {
        real::registry_entries(&sb)
            .into_iter()
            .find(|e| e["sessionId"] == sid.as_str())
    });
    let pid = entry["pid"].as_u64().expect("pid in the registry entry");
    assert_eq!(entry["version"], version, "[{version}] {entry}");
    let claude_json: Value =
        serde_json::from_slice(&std::fs::read(sb.config.join(".claude.json")).unwrap()).unwrap();
    assert_eq!(
        claude_json["projects"][proj.to_str().unwrap()]["hasTrustDialogAccepted"],
        true,
        "[{version}] trust not recorded"
    );

    // A turn, sent with `ccd send` the moment `ccd new` has returned: ccd
    // reports ready only once the prompt takes a submitted line (on
    // 2.1.332 under load, a line typed as soon as the registry entry
    // appears is taken as text: docs/claude-cli-compat.md).
    let sent = sb.run(&["send", &sid, "hello real cli"]);
    assert!(
        sent.status.success(),
        "[{version}] ccd send failed: {}\n{}",
        String::from_utf8_lossy(&sent.stderr),
        evidence(&sb, &mock, Some(&sid))
    );
    let deadline = Instant::now() + T;
    let (got_usage, words) = loop {
        let transcript =
            ccd_claude::transcript::find_by_session_id(&sb.config.join("projects"), &sid);
        if let Some(u) = transcript.as_deref().and_then(real::assistant_usage) {
            break u;
        }
        assert!(
            Instant::now() < deadline,
            "[{version}] no assistant record in the transcript ({transcript:?})\n{}",
            evidence(&sb, &mock, Some(&sid))
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(words, "ACK: hello real cli", "[{version}]");
    assert_eq!(got_usage["input_tokens"], usage.input, "[{version}]");
    assert_eq!(
        got_usage["cache_creation_input_tokens"], usage.cache_creation,
        "[{version}]"
    );
    assert_eq!(
        got_usage["cache_read_input_tokens"], usage.cache_read,
        "[{version}]"
    );
    let screen = String::from_utf8_lossy(&sb.run(&["screen", &sid]).stdout).into_owned();
    assert!(
        screen.contains("ACK: hello real cli"),
        "[{version}] reply not on screen:\n{screen}"
    );

    // ccd ls: live, with the context in use from the last assistant record.
    let deadline = Instant::now() + T;
    loop {
        let rows = ls_json(&sb);
        let row = rows.iter().find(|r| r["session_id"] == sid.as_str());
        if let Some(r) = row {
            if r["state"] == "live" && r["context_tokens"] == usage.context_tokens() {
                assert_eq!(r["pid"], pid, "[{version}] {r}");
                break;
            }
        }
        assert!(
            Instant::now() < deadline,
            "[{version}] ls never showed the session live with context_tokens {}: {row:#?}",
            usage.context_tokens()
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    // ccd kill: the process ends and removes its registry entry.
    sb.ok(&["kill", &sid]);
    wait_for(T, "the registry entry to go", || {
        (!sb.config
            .join("sessions")
            .join(format!("{pid}.json"))
            .exists())
        .then_some(())
    });
    wait_for(T, "the process to end", || {
        (!u32::try_from(pid).is_ok_and(ccd_testkit::procs::exists)).then_some(())
    });
    let rows = ls_json(&sb);
    assert!(
        rows.iter()
            .all(|r| r["session_id"] != sid.as_str() || r["state"] != "live"),
        "[{version}] still live after kill: {rows:#?}"
    );

    let reqs = mock.requests();
    assert!(
        reqs.iter().any(|r| r["kind"] == "messages-stream"),
        "[{version}] no streamed message request:\n{}",
        mock.summary()
    );
    assert!(
        reqs.iter().all(|r| r["kind"] != "bad-json"),
        "[{version}] the mock refused a request:\n{}",
        mock.summary()
    );
    eprintln!(
        "[{version}] ok in {:.1}s; requests seen by the mock:\n{}",
        started.elapsed().as_secs_f64(),
        mock.summary()
    );
}

#[test]
fn real_cli_new_send_ls_kill_for_each_pinned_version() {
    each_version();
}

fn each_version() {
    let versions = real::versions();
    assert!(
        versions.len() >= 2 || std::env::var_os("CCD_REAL_CLI_VERSIONS").is_some(),
        "pin at least two versions"
    );
    let handles: Vec<_> = versions
        .into_iter()
        .map(|v| {
            std::thread::Builder::new()
                .name(format!("real-cli-{v}"))
                .spawn(move || one_version(&v))
                .unwrap()
        })
        .collect();
    let failed: Vec<String> = handles
        .into_iter()
        .filter_map(|h| {
            let name = h.thread().name().unwrap_or("?").to_string();
            h.join().err().map(|_| name)
        })
        .collect();
    assert!(
        failed.is_empty(),
        "failed: {failed:?} (see the panics above)"
    );
}

/// A real claude started outside ccd, under the test's own PTY, in a folder
/// trusted beforehand (as a person's terminal would run it).
struct Outside {
    child: Box<dyn portable_pty::Child + Send + Sync>,
    writer: Box<dyn std::io::Write + Send>,
    _master: Box<dyn portable_pty::MasterPty + Send>,
    screen: std::sync::Arc<std::sync::Mutex<ccd_screen::Screen>>,
}

impl Drop for Outside {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn trust_folder(sb: &Sandbox, dir: &std::path::Path) {
    let p = sb.config.join(".claude.json");
    let mut v: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
    v["projects"][dir.to_str().unwrap()] = serde_json::json!({"hasTrustDialogAccepted": true});
    std::fs::write(&p, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
}

fn outside(sb: &Sandbox, claude: &std::path::Path, dir: &std::path::Path) -> Outside {
    use portable_pty::CommandBuilder;
    trust_folder(sb, dir);
    let pty = common::pty::open();
    let mut cmd = CommandBuilder::new(claude);
    for (k, v) in &sb.env {
        cmd.env(k, v);
    }
    cmd.env("TERM", "xterm-256color");
    cmd.cwd(dir);
    let child = pty.slave.spawn_command(cmd).unwrap();
    drop(pty.slave);
    let screen = std::sync::Arc::new(std::sync::Mutex::new(ccd_screen::Screen::new(40, 120)));
    let mut reader = pty.master.try_clone_reader().unwrap();
    let s2 = screen.clone();
    std::thread::spawn(move || {
        let mut b = [0u8; 65536];
        while let Ok(n) = std::io::Read::read(&mut reader, &mut b) {
            if n == 0 {
                break;
            }
            if let Ok(mut s) = s2.lock() {
                s.process(&b[..n]);
            }
        }
    });
    let writer = pty.master.take_writer().unwrap();
    Outside {
        child,
        writer,
        _master: pty.master,
        screen,
    }
}

impl Outside {
    /// Types a prompt once the screen shows the prompt, unchanged for a second.
    fn prompt(&mut self, text: &str) {
        let deadline = Instant::now() + T;
        let mut last = String::new();
        let mut since = Instant::now();
        loop {
            let now = self.screen.lock().unwrap().contents();
            if now != last {
                last = now;
                since = Instant::now();
            } else if matches!(
                ccd_screen::classify::classify_text(&self.screen.lock().unwrap().text()),
                ccd_screen::ScreenState::Ready(_)
            ) && since.elapsed() > Duration::from_secs(1)
            {
                break;
            }
            assert!(Instant::now() < deadline, "no prompt outside ccd:\n{last}");
            std::thread::sleep(Duration::from_millis(100));
        }
        self.writer.write_all(text.as_bytes()).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        self.writer.write_all(b"\r").unwrap();
    }
}

fn transcript_of(sb: &Sandbox, sid: &str) -> Option<std::path::PathBuf> {
    ccd_claude::transcript::find_by_session_id(&sb.config.join("projects"), sid)
}

/// Waits for the assistant's last words in `sid`'s transcript; on a timeout,
/// fails with what the session's screen, transcript and the logs show.
fn wait_reply(sb: &Sandbox, sid: &str, words: &str, version: &str) -> std::path::PathBuf {
    let deadline = Instant::now() + T;
    loop {
        if let Some(p) = transcript_of(sb, sid) {
            if real::assistant_usage(&p).is_some_and(|(_, w)| w == words) {
                return p;
            }
        }
        if Instant::now() > deadline {
            let screen = sb.run(&["screen", sid]);
            let transcript = transcript_of(sb, sid)
                .map(|p| std::fs::read_to_string(p).unwrap_or_default())
                .unwrap_or_else(|| "(no transcript file)".into());
            panic!(
                "[{version}] timed out waiting for the reply {words:?} in {sid}'s transcript\n\
                 screen:\n{}{}\ntranscript:\n{transcript}\nlogs:\n{}",
                String::from_utf8_lossy(&screen.stdout),
                String::from_utf8_lossy(&screen.stderr),
                sb.logs()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Scenarios with a session started outside ccd, then dead, then resumed.
fn outside_version(version: &str) {
    let Some(claude) = real::claude_or_skip(version) else {
        return;
    };
    let started = Instant::now();
    let mock = MockApi::start(MockUsage {
        input: 100,
        cache_creation: 200,
        cache_read: 300,
        output: 5,
    });
    let sb = real::sandbox(&mock, &claude, version);
    let dir = sb.project("outside");
    let mut ext = outside(&sb, &claude, &dir);
    let pid = ext.child.process_id().unwrap();
    let entry = wait_for(T, "the outside session's registry entry", || {
        real::registry_entries(&sb)
            .into_iter()
            .find(|e| e["pid"] == pid)
    });
    let sid = entry["sessionId"].as_str().unwrap().to_string();
    ext.prompt("hello from outside");
    let original = wait_reply(&sb, &sid, "ACK: hello from outside", version);

    // ccd ls: live, not ccd's.
    let r = common::row(&sb, &sid);
    assert_eq!(r["state"], "live", "[{version}] {r}");
    assert!(r["ccd"].is_null(), "[{version}] {r}");

    // ccd attach refuses to resume it, and the transcript does not change.
    let before = std::fs::read(&original).unwrap();
    let mut a = common::pty::PtyRun::start(&sb, &["attach", &sid], None);
    assert_eq!(a.wait_exit(T), 2, "[{version}] {}", a.raw_text());
    assert!(
        a.raw_text().contains("will not resume"),
        "[{version}] {}",
        a.raw_text()
    );
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        std::fs::read(&original).unwrap(),
        before,
        "[{version}] transcript changed"
    );

    // ccd fork: a new id, the original byte for byte.
    let fork = sb.ok(&["fork", &sid, "--detach"]).trim().to_string();
    assert!(
        fork.len() == 36 && fork != sid,
        "[{version}] fork id {fork:?}"
    );
    sb.ok(&["send", &fork, "in the fork"]);
    wait_reply(&sb, &fork, "ACK: in the fork", version);
    assert_eq!(
        std::fs::read(&original).unwrap(),
        before,
        "[{version}] the fork touched the original"
    );
    sb.ok(&["kill", &fork]);

    // kill -9 of the outside process: the entry stays, the session is dead.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let _ = ext.child.wait();
    assert!(
        sb.config
            .join("sessions")
            .join(format!("{pid}.json"))
            .exists(),
        "[{version}] entry removed on SIGKILL?"
    );
    wait_for(T, "dead in ccd ls", || {
        (common::row(&sb, &sid)["state"] == "dead").then_some(())
    });
    drop(ext);

    // ccd attach from another directory resumes it in its original cwd,
    // same id, appending to the same file.
    let elsewhere = sb.project("elsewhere");
    let a = common::pty::PtyRun::start(&sb, &["attach", &sid], Some(&elsewhere));
    a.wait_text("hello from outside", T);
    let entry = wait_for(T, "the resumed registry entry", || {
        real::registry_entries(&sb)
            .into_iter()
            .find(|e| e["sessionId"] == sid.as_str() && e["pid"] != pid)
    });
    assert_eq!(
        entry["cwd"],
        dir.to_str().unwrap(),
        "[{version}] resumed elsewhere"
    );
    sb.ok(&["send", &sid, "after the resume"]);
    let same = wait_reply(&sb, &sid, "ACK: after the resume", version);
    assert_eq!(same, original, "[{version}] the resume wrote another file");
    drop(a);
    sb.ok(&["kill", &sid]);
    eprintln!(
        "[{version}] outside/fork/dead/resume ok in {:.1}s",
        started.elapsed().as_secs_f64()
    );
}

/// A session made through a symlinked, trailing-slash cwd, killed, resumed
/// from elsewhere; and `kill -9` of the daemon in the middle of a turn.
fn daemon_version(version: &str) {
    let Some(claude) = real::claude_or_skip(version) else {
        return;
    };
    let started = Instant::now();
    // Each streamed event waits: a turn lasts a few seconds.
    let mock = MockApi::start_with_delay(
        MockUsage {
            input: 10,
            cache_creation: 20,
            cache_read: 30,
            output: 5,
        },
        400,
    );
    let sb = real::sandbox(&mock, &claude, version);
    let real_dir = sb.project("linked-target");
    let link = sb.work.join("link");
    std::os::unix::fs::symlink(&real_dir, &link).unwrap();
    let given = format!("{}/", link.display());
    let sid = sb
        .ok(&["new", "--detach", "--cwd", &given])
        .trim()
        .to_string();
    let r = common::row(&sb, &sid);
    assert_eq!(r["cwd"], real_dir.to_str().unwrap(), "[{version}] {r}");

    // kill -9 of the daemon mid-turn: the turn completes, the next daemon
    // owns the session.
    sb.ok(&["send", &sid, "a long turn"]);
    wait_for(T, "busy", || {
        (common::row(&sb, &sid)["status"] == "busy").then_some(())
    });
    let daemon = sb.daemon_pid().unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(daemon as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let p = wait_reply(&sb, &sid, "ACK: a long turn", version);
    let _ = sb.ok(&["screen", &sid]); // starts a daemon, which adopts
    let r = common::row(&sb, &sid);
    assert!(
        r["ccd"]["holder"].is_string(),
        "[{version}] not owned after the restart: {r}"
    );
    assert_ne!(sb.daemon_pid(), Some(daemon));

    // ccd kill: the entry goes, the session is dead; attach from elsewhere
    // resumes it in the real directory behind the link.
    let pid = r["pid"].as_u64().unwrap();
    sb.ok(&["kill", &sid]);
    assert!(
        !sb.config
            .join("sessions")
            .join(format!("{pid}.json"))
            .exists(),
        "[{version}] entry left after ccd kill"
    );
    assert_eq!(common::row(&sb, &sid)["state"], "dead");
    let a = common::pty::PtyRun::start(&sb, &["attach", &sid[..8]], Some(&sb.work));
    a.wait_text("a long turn", T);
    let entry = wait_for(T, "the resumed entry", || {
        real::registry_entries(&sb)
            .into_iter()
            .find(|e| e["sessionId"] == sid.as_str())
    });
    assert_eq!(
        entry["cwd"],
        real_dir.to_str().unwrap(),
        "[{version}] {entry}"
    );
    assert_eq!(transcript_of(&sb, &sid), Some(p));
    drop(a);
    sb.ok(&["kill", &sid]);
    eprintln!(
        "[{version}] symlinked cwd/daemon kill -9 mid-turn/resume ok in {:.1}s",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn real_cli_outside_session_fork_dead_and_resume() {
    for v in real::versions() {
        outside_version(&v);
    }
}

#[test]
fn real_cli_daemon_killed_mid_turn_and_symlinked_cwd() {
    for v in real::versions() {
        daemon_version(&v);
    }
}

/// `/clear` in a held session: the new id reaches the process (send,
/// screen, kill), the old one is dead and resumable under a new holder while
/// the first runs on, and a manual `claude --resume` of the held
/// conversation is flagged as a second writer.
fn clear_version(version: &str) {
    let Some(claude) = real::claude_or_skip(version) else {
        return;
    };
    let mock = MockApi::start(MockUsage::SMALL);
    let sb = real::sandbox(&mock, &claude, version);
    let started = Instant::now();
    let dir = sb.project("cleared");
    let old = sb
        .ok(&["new", "--detach", "--cwd", dir.to_str().unwrap()])
        .trim()
        .to_string();
    sb.ok(&["send", &old, "before clear"]);
    wait_reply(&sb, &old, "ACK: before clear", version);
    let r = common::row(&sb, &old);
    let holder = r["ccd"]["holder"].as_str().unwrap().to_string();
    let child = r["pid"].as_u64().unwrap();
    sb.ok(&["send", &old, "/clear"]);
    let now = wait_for(T, "the cleared process's new id", || {
        ls_json(&sb)
            .into_iter()
            .find(|r| r["ccd"]["holder"] == holder.as_str() && r["session_id"] != old.as_str())
    });
    let new = now["session_id"].as_str().unwrap().to_string();
    assert_eq!(now["pid"], child, "[{version}] {now}");
    assert_eq!(now["state"], "live", "[{version}] {now}");
    let deadline = Instant::now() + T;
    let was = loop {
        let r = common::row(&sb, &old);
        if r["superseded_by"]["reason"] == "clear" {
            break r;
        }
        assert!(
            Instant::now() < deadline,
            "[{version}] the old id is not superseded by a clear: {r:#}\nlogs:\n{}",
            sb.logs()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(was["state"], "dead", "[{version}] {was}");
    assert!(was["ccd"].is_null(), "[{version}] {was}");
    assert_eq!(was["superseded_by"]["writes_now"], new.as_str());

    // Send and screen by the new id.
    sb.ok(&["send", &new, "after clear"]);
    wait_reply(&sb, &new, "ACK: after clear", version);
    let screen = sb.ok(&["screen", &new]);
    assert!(screen.contains("after clear"), "[{version}] {screen}");

    // The old conversation resumes under a new holder; the first runs on.
    let mut c = sb.client();
    let r = c
        .call_value(
            "session.attach",
            json!({"session": old, "size": {"cols": 120, "rows": 40}}),
        )
        .unwrap();
    assert_eq!(r["resumed"], true, "[{version}] {r}");
    let resumed = common::row(&sb, &old);
    assert_eq!(resumed["state"], "live", "[{version}] {resumed}");
    assert_ne!(resumed["ccd"]["holder"], holder.as_str());
    assert_eq!(common::row(&sb, &new)["ccd"]["holder"], holder.as_str());
    drop(c);

    // A second writer, started by hand on the held conversation.
    let mut ev = sb.client();
    ev.call_value("events.subscribe", json!({})).unwrap();
    trust_folder(&sb, &dir);
    let pty = common::pty::open();
    let mut cmd = portable_pty::CommandBuilder::new(&claude);
    cmd.args(["--resume", &new]);
    for (k, v) in &sb.env {
        cmd.env(k, v);
    }
    cmd.env("TERM", "xterm-256color");
    cmd.cwd(&dir);
    let mut second = pty.slave.spawn_command(cmd).unwrap();
    drop(pty.slave);
    let mut reader = pty.master.try_clone_reader().unwrap();
    std::thread::spawn(move || {
        let mut b = [0u8; 65536];
        while matches!(std::io::Read::read(&mut reader, &mut b), Ok(n) if n > 0) {}
    });
    let deadline = Instant::now() + T;
    let flagged = loop {
        assert!(Instant::now() < deadline, "[{version}] no session.writers");
        match ev
            .next_notification(Some(Duration::from_millis(200)))
            .unwrap()
        {
            Some(n)
                if n.params
                    .as_ref()
                    .is_some_and(|p| p["type"] == "session.writers") =>
            {
                break n.params.unwrap();
            }
            _ => {}
        }
    };
    assert_eq!(flagged["session"], new.as_str(), "[{version}] {flagged}");
    assert_eq!(flagged["holder"], holder.as_str(), "[{version}] {flagged}");
    assert_eq!(common::row(&sb, &new)["several_writers"], true);
    let _ = second.kill();
    let _ = second.wait();

    // Kill by the new id ends ccd's process.
    sb.ok(&["kill", &new]);
    assert!(
        !sb.config
            .join("sessions")
            .join(format!("{child}.json"))
            .exists(),
        "[{version}] entry left after ccd kill"
    );
    sb.ok(&["kill", &old]);
    eprintln!(
        "[{version}] /clear, resume of the old id, second writer ok in {:.1}s",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn real_cli_clear_moves_the_held_process_to_its_new_id() {
    for v in real::versions() {
        clear_version(&v);
    }
}

/// The CLI's arguments that make it ask before running a tool: 2.1.332's
/// default mode is auto (it asks nothing), 2.1.1xx asks by default.
fn asking_args(version: &str) -> Vec<&'static str> {
    if version.starts_with("2.1.1") {
        Vec::new()
    } else {
        vec!["--permission-mode", "manual"]
    }
}

/// A new held session in `dir` whose CLI asks before running a tool; its id.
fn asking_session(sb: &Sandbox, dir: &std::path::Path, version: &str) -> String {
    let mut args = vec!["new", "--detach", "--cwd", dir.to_str().unwrap(), "--"];
    args.extend(asking_args(version));
    sb.ok(&args).trim().to_string()
}

/// Waits for the turn that answers with `reply`, then for the prompt.
fn settled(sb: &Sandbox, c: &mut ccd_client::Client, sid: &str, reply: &str, version: &str) {
    wait_reply(sb, sid, reply, version);
    wait_for(T, "the prompt after the turn", || {
        (shows(c, sid) == "prompt").then_some(())
    });
}

/// Waits for a permission `session.attention` of `sid` whose detail holds
/// `command`; the event.
fn permission_attention(
    c: &mut ccd_client::Client,
    sb: &Sandbox,
    mock: &MockApi,
    sid: &str,
    command: &str,
    version: &str,
) -> Value {
    let deadline = Instant::now() + T;
    loop {
        assert!(
            Instant::now() < deadline,
            "[{version}] no permission attention for {command:?}\n{}",
            evidence(sb, mock, Some(sid))
        );
        let Some(e) = common::next_event(c, Duration::from_millis(200)) else {
            continue;
        };
        if e["type"] == "session.attention"
            && e["session"] == sid
            && e["reason"] == "permission"
            && e["detail"].as_str().is_some_and(|d| d.contains(command))
        {
            return e;
        }
    }
}

/// What `session.screen` says the screen shows.
fn shows(c: &mut ccd_client::Client, sid: &str) -> String {
    c.call_value("session.screen", json!({"session": sid}))
        .map(|s| s["shows"].as_str().unwrap_or("").to_string())
        .unwrap_or_default()
}

fn approve_deny_version(version: &str) {
    // 50,000 tokens in use: 5 % of a stated 1M window, 25 % of an
    // assumed 200k one.
    let usage = MockUsage {
        input: 50_000,
        ..MockUsage::SMALL
    };
    let Some((mock, sb)) = real::setup(version, usage) else {
        return;
    };
    let started = Instant::now();
    let dir = sb.project("asked");
    let sid = asking_session(&sb, &dir, version);
    let mut c = sb.client_or_start();
    c.call_value(
        "events.subscribe",
        json!({"types": ["session.attention", "session.attention_cleared"]}),
    )
    .unwrap();

    let mut ctx_events = sb.client_or_start();
    ctx_events
        .call_value("events.subscribe", json!({"types": ["session.context"]}))
        .unwrap();

    // Nothing asks yet: refused, nothing typed.
    let out = sb.run(&["approve", &sid]);
    assert!(
        !out.status.success(),
        "[{version}] approve without a prompt"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("shows no permission prompt"),
        "[{version}] {}",
        String::from_utf8_lossy(&out.stderr)
    );

    // A Bash prompt: the event names the command and the prompt.
    sb.ok(&["send", &sid, "TOOL:echo approved > approved.txt"]);
    let a = permission_attention(
        &mut c,
        &sb,
        &mock,
        &sid,
        "echo approved > approved.txt",
        version,
    );
    assert_eq!(a["tool"], "Bash command", "[{version}] {a}");
    let prompt = a["prompt"].as_str().unwrap_or_default().to_string();
    assert_eq!(prompt.len(), 16, "[{version}] {a}");
    let out = sb.run(&["approve", &sid, "--prompt", &prompt]);
    assert!(
        out.status.success(),
        "[{version}] ccd approve: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        evidence(&sb, &mock, Some(&sid))
    );
    // The command ran, the turn ended ("done" after the tool result) and
    // the session is back at its prompt.
    let made = dir.join("approved.txt");
    wait_for(T, "approved.txt", || {
        std::fs::read_to_string(&made)
            .ok()
            .filter(|t| t.trim() == "approved")
    });
    wait_reply(&sb, &sid, "done", version);
    wait_for(T, "the prompt after the approved turn", || {
        (shows(&mut c, &sid) == "prompt").then_some(())
    });
    // The session.context event measures against the same window.
    let deadline = Instant::now() + T;
    let percent = loop {
        assert!(
            Instant::now() < deadline,
            "[{version}] no session.context event"
        );
        let Some(e) = common::next_event(&mut ctx_events, Duration::from_millis(200)) else {
            continue;
        };
        if e["session"] == sid.as_str() && e["context_tokens"].as_u64() >= Some(50_000) {
            break e["context_percent"].as_f64().unwrap_or(-1.0);
        }
    };
    if version.starts_with("2.1.1") {
        assert!(
            (4.0..6.0).contains(&percent),
            "[{version}] {percent}% of a 1M window"
        );
    } else {
        assert!(
            percent > 20.0,
            "[{version}] {percent}% of an assumed window"
        );
    }
    // The window the CLI's banner states: 2.1.173 says "(1M context)",
    // 2.1.332 says none (ccd's figure is then an assumed one).
    let row = wait_for(T, "the row with its context", || {
        Some(common::row(&sb, &sid)).filter(|r| r["context_tokens"].is_u64())
    });
    if version.starts_with("2.1.1") {
        assert_eq!(
            row["context_window"],
            json!({"tokens": 1_000_000, "source": "screen"}),
            "[{version}] {row}"
        );
        assert_eq!(
            row["ccd"]["stated_context_window"], 1_000_000,
            "[{version}] {row}"
        );
    } else {
        assert_ne!(
            row["context_window"]["source"], "screen",
            "[{version}] {row}"
        );
    }
    // The prompt that was answered is gone: naming it again is refused.
    let stale = c
        .call::<ccd_protocol::methods::session::SessionRespond>(
            &ccd_protocol::methods::session::RespondParams {
                session: sid.clone(),
                choice: ccd_protocol::methods::session::RespondChoice::Yes,
                message: None,
                prompt: Some(prompt.clone()),
            },
        )
        .unwrap_err();
    assert_eq!(
        stale.rpc().map(|r| r.code),
        Some(ccd_protocol::ErrorCode::PromptNotShown.code()),
        "[{version}] {stale}"
    );

    // The next prompt, denied: the command does not run and the session is
    // back at its prompt.
    sb.ok(&["send", &sid, "TOOL:echo denied > denied.txt"]);
    let a = permission_attention(
        &mut c,
        &sb,
        &mock,
        &sid,
        "echo denied > denied.txt",
        version,
    );
    assert_ne!(a["prompt"], prompt.as_str(), "[{version}] {a}");
    let out = sb.run(&["deny", &sid]);
    assert!(
        out.status.success(),
        "[{version}] ccd deny: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        evidence(&sb, &mock, Some(&sid))
    );
    wait_for(T, "the prompt after the refusal", || {
        (shows(&mut c, &sid) == "prompt").then_some(())
    });
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        !dir.join("denied.txt").exists(),
        "[{version}] a denied command ran\n{}",
        evidence(&sb, &mock, Some(&sid))
    );
    sb.ok(&["kill", &sid]);
    eprintln!(
        "[{version}] approve/deny ok in {:.1}s",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn real_cli_approve_and_deny_answer_permission_prompts() {
    for v in real::versions() {
        approve_deny_version(&v);
    }
}

/// The permission-mode words the CLI's footer shows (2.1.332: "auto mode
/// on"; both: "accept edits on" and "plan mode on" after Shift-Tab).
fn mode_words(screen: &str) -> Vec<&'static str> {
    [
        "accept edits on",
        "plan mode on",
        "auto mode on",
        "bypass permissions on",
        "manual mode",
    ]
    .into_iter()
    .filter(|w| screen.contains(w))
    .collect()
}

/// The prompts of `sid`'s transcript in order: user records whose content
/// is text (a string, or text blocks), not tool results, not meta, not the
/// CLI's own "[Request interrupted by user …]" after a refusal.
fn user_prompts(sb: &Sandbox, sid: &str) -> Vec<String> {
    let Some(p) = transcript_of(sb, sid) else {
        return Vec::new();
    };
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "user" && v.get("isMeta").is_none())
        .filter_map(|v| match &v["message"]["content"] {
            Value::String(s) => Some(s.clone()),
            Value::Array(blocks) if blocks.iter().all(|b| b["type"] == "text") => Some(
                blocks
                    .iter()
                    .filter_map(|b| b["text"].as_str())
                    .collect::<Vec<_>>()
                    .join(""),
            ),
            _ => None,
        })
        .filter(|t| !t.starts_with("[Request interrupted by user"))
        .collect()
}

/// Text typed for a client stays text on the real CLI: a send and a deny
/// message holding the bracketed paste's end marker, `\r`, ESC and
/// Shift-Tab make exactly one prompt each with the text, and the
/// permission mode shown before is the one shown after (unfiltered, a
/// Shift-Tab after `ESC[201~` switched 2.1.332 from auto mode to accept
/// edits, and on 2.1.173 `ONE\e[201~\rTWO` submitted `TWO` alone).
fn typed_text_version(version: &str) {
    let Some((mock, sb)) = real::setup(version, MockUsage::SMALL) else {
        return;
    };
    let dir = sb.project("typed");
    let sid = asking_session(&sb, &dir, version);
    let mut c = sb.client_or_start();
    c.call_value("events.subscribe", json!({"types": ["session.attention"]}))
        .unwrap();
    let modes = mode_words(&sb.ok(&["screen", &sid]));

    // A turn's reply, the prompt back, and the mode line as it was.
    let settled = |c: &mut ccd_client::Client, reply: &str| {
        settled(&sb, c, &sid, reply, version);
        let screen = sb.ok(&["screen", &sid]);
        assert_eq!(
            mode_words(&screen),
            modes,
            "[{version}] the permission mode changed:\n{screen}"
        );
    };
    sb.ok(&["send", &sid, "ONE\x1b[201~\rTWO"]);
    settled(&mut c, "ACK: ONE TWO");
    sb.ok(&["send", &sid, "THREE\x1b[201~\x1b[Z\x1b[Z"]);
    settled(&mut c, "ACK: THREE");

    // A deny message.
    sb.ok(&["send", &sid, "TOOL:echo denied > denied.txt"]);
    permission_attention(
        &mut c,
        &sb,
        &mock,
        &sid,
        "echo denied > denied.txt",
        version,
    );
    let out = sb.run(&["deny", &sid, "--message", "FOUR\x1b[201~\r\x1b[Z\x1b[ZFIVE"]);
    assert!(
        out.status.success(),
        "[{version}] ccd deny: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        evidence(&sb, &mock, Some(&sid))
    );
    // With a refused tool in the history the mock answers "done".
    settled(&mut c, "done");
    assert!(
        !dir.join("denied.txt").exists(),
        "[{version}] a denied command ran"
    );
    assert_eq!(
        user_prompts(&sb, &sid),
        [
            "ONE\nTWO",
            "THREE",
            "TOOL:echo denied > denied.txt",
            "FOUR\nFIVE"
        ],
        "[{version}] one prompt per send, with the text and nothing else\n{}",
        evidence(&sb, &mock, Some(&sid))
    );
    sb.ok(&["kill", &sid]);
}

#[test]
fn real_cli_typed_text_never_becomes_keys() {
    for v in real::versions() {
        typed_text_version(&v);
    }
}

/// Text a client forwards never runs a command nobody asked for (issue 50,
/// finding 1): on both versions a `!` first runs a shell command at once
/// (bash mode) and a `/` a slash command. `ccd send` refuses a leading `!`
/// (nothing typed), runs it with `--shell`, sends it as words with
/// `--literal`; a deny message can be neither a shell nor a slash command;
/// text of blanks is refused instead of being left in the box (finding 5).
fn prefixes_version(version: &str) {
    let Some((mock, sb)) = real::setup(version, MockUsage::SMALL) else {
        return;
    };
    let dir = sb.project("prefixes");
    let sid = asking_session(&sb, &dir, version);
    let mut c = sb.client_or_start();
    c.call_value("events.subscribe", json!({"types": ["session.attention"]}))
        .unwrap();
    wait_for(T, "the prompt", || {
        (shows(&mut c, &sid) == "prompt").then_some(())
    });
    let refused = |args: &[&str], why: &str| {
        let out = sb.run(args);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            !out.status.success() && err.contains(why),
            "[{version}] ccd {args:?} was not refused ({why}): {err}
{}",
            evidence(&sb, &mock, Some(&sid))
        );
    };
    let settled = |c: &mut ccd_client::Client, reply: &str| settled(&sb, c, &sid, reply, version);

    refused(&["send", &sid, "!echo bang > bang.txt"], "--shell");
    refused(&["send", &sid, "   "], "nothing to submit");
    refused(&["send", &sid, "\n\n\n"], "nothing to submit");
    refused(
        &["send", "--literal", &sid, " /permissions"],
        "slash command",
    );
    sb.ok(&["send", "--literal", &sid, "!echo lit > lit.txt"]);
    settled(&mut c, "ACK: !echo lit > lit.txt");
    sb.ok(&["send", "--shell", &sid, "echo sh > sh.txt"]);
    wait_for(T, "the --shell command's file", || {
        dir.join("sh.txt").exists().then_some(())
    });
    wait_for(T, "the prompt after the shell command", || {
        (shows(&mut c, &sid) == "prompt").then_some(())
    });

    sb.ok(&["send", &sid, "TOOL:echo denied > denied.txt"]);
    permission_attention(
        &mut c,
        &sb,
        &mock,
        &sid,
        "echo denied > denied.txt",
        version,
    );
    refused(
        &["deny", &sid, "--message", "/permissions"],
        "slash command",
    );
    assert_eq!(
        shows(&mut c, &sid),
        "permission_prompt",
        "[{version}] a refused deny answered"
    );
    let out = sb.run(&["deny", &sid, "--message", "!echo words > w.txt"]);
    assert!(
        out.status.success(),
        "[{version}] ccd deny: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        evidence(&sb, &mock, Some(&sid))
    );
    settled(&mut c, "done");
    for f in ["bang.txt", "lit.txt", "denied.txt", "w.txt"] {
        assert!(
            !dir.join(f).exists(),
            "[{version}] {f} exists: a command ran that nobody asked for"
        );
    }
    let prompts = user_prompts(&sb, &sid);
    // A literal `!` is typed after one space, which the transcript keeps.
    for p in [" !echo lit > lit.txt", " !echo words > w.txt"] {
        assert!(
            prompts.iter().any(|q| q == p),
            "[{version}] no prompt {p:?} (blanks must not join it): {prompts:?}"
        );
    }
    sb.ok(&["kill", &sid]);
}

#[test]
fn real_cli_text_never_runs_a_command_nobody_asked_for() {
    for v in real::versions() {
        prefixes_version(&v);
    }
}

/// An answer walked while another client presses arrows every 1–4 ms is
/// the option the CLI took (issue 50, finding 4): `ccd deny` reports "No"
/// and the command did not run, `ccd approve` reports "Yes" and it ran;
/// neither comes back with a spurious "prompt not shown". Before the
/// holder held others' input during a walk, `respond no` reported "No"
/// while the tool ran (1 run in 25) and 19 of 25 ended in `-32013`.
fn raced_answer_version(version: &str) {
    use std::sync::atomic::{AtomicBool, Ordering};
    let Some((mock, sb)) = real::setup(version, MockUsage::SMALL) else {
        return;
    };
    let dir = sb.project("raced");
    let mut c = sb.client_or_start();
    c.call_value("events.subscribe", json!({"types": ["session.attention"]}))
        .unwrap();
    for (round, verb) in ["deny", "approve", "deny", "approve"].iter().enumerate() {
        let sid = asking_session(&sb, &dir, version);
        let file = format!("raced{round}.txt");
        let command = format!("echo {round} > {file}");
        sb.ok(&["send", &sid, &format!("TOOL:{command}")]);
        permission_attention(&mut c, &sb, &mock, &sid, &command, version);
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let presser = {
            let mut other = sb.client();
            let (sid, stop) = (sid.clone(), stop.clone());
            // Down and Up in both cursor modes' normal form, base64.
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(Ordering::Acquire) {
                    let data = ["G1tC", "G1tB"][(n % 2) as usize];
                    let _ =
                        other.call_value("session.input", json!({"session": sid, "data": data}));
                    n += 1;
                    std::thread::sleep(Duration::from_millis(1 + n % 4));
                }
                n
            })
        };
        std::thread::sleep(Duration::from_millis(100));
        let out = sb.run(&[verb, &sid]);
        stop.store(true, Ordering::Release);
        let pressed = presser.join().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            out.status.success(),
            "[{version}] round {round}: ccd {verb} failed while {pressed} arrows came: {err}\n{}",
            evidence(&sb, &mock, Some(&sid))
        );
        let want = if *verb == "deny" { ": No" } else { ": Yes" };
        assert!(err.contains(want), "[{version}] round {round}: {err}");
        let ran = || dir.join(&file).exists();
        if *verb == "approve" {
            wait_for(T, "the approved command's file", || ran().then_some(()));
        } else {
            // A refusal without a message ends the turn at the prompt
            // ("What should Claude do instead?").
            wait_for(T, "the prompt after the refusal", || {
                (shows(&mut c, &sid) == "prompt").then_some(())
            });
            std::thread::sleep(Duration::from_millis(500));
            assert!(
                !ran(),
                "[{version}] round {round}: `ccd deny` reported No but the command ran ({pressed} arrows)"
            );
        }
        sb.ok(&["kill", &sid]);
    }
}

#[test]
fn real_cli_an_answer_is_the_option_taken_while_someone_types() {
    for v in real::versions() {
        raced_answer_version(&v);
    }
}

/// A held session runs `BGTOOL:sleep 3; echo done > bg.txt` (a Bash tool
/// use with `run_in_background: true`, approved through `ccd approve` when
/// the CLI asks), or with `subagent`
/// `BGAGENT:TOOL:timeout 3 tail -f /dev/null; echo done > bg.txt` (a
/// background subagent that runs that command; tools allowed so nothing
/// asks, docs/claude-cli-compat.md "Background work"): while bg.txt does
/// not exist, the transcript says the work is pending — also once the turn
/// has ended and the session sits at its prompt (what the idle reaper
/// sees); once bg.txt exists and the CLI has recorded the end, it is not.
/// (The reaper itself is not run: its limit is in minutes.)
fn background_version(version: &str, subagent: bool) {
    use ccd_claude::transcript::background;
    let Some((mock, sb)) = real::setup(version, MockUsage::SMALL) else {
        return;
    };
    let started = Instant::now();
    let dir = sb.project("bg");
    let mut args = vec!["new", "--detach", "--cwd", dir.to_str().unwrap(), "--"];
    if !subagent {
        args.extend(asking_args(version));
    } else if version.starts_with("2.1.1") {
        args.push("--allowed-tools=Bash");
    } else {
        // Auto mode's server-side check of a subagent launch cannot pass
        // against the mock (it asks); accept-edits mode lets it run.
        args.extend(["--permission-mode", "acceptEdits", "--allowed-tools=Bash"]);
    }
    let sid = sb.ok(&args).trim().to_string();
    let mut c = sb.client_or_start();
    c.call_value("events.subscribe", json!({"types": ["session.attention"]}))
        .unwrap();
    if subagent {
        sb.ok(&[
            "send",
            &sid,
            "BGAGENT:TOOL:timeout 3 tail -f /dev/null; echo done > bg.txt",
        ]);
    } else {
        sb.ok(&["send", &sid, "BGTOOL:sleep 3; echo done > bg.txt"]);
        let a = permission_attention(&mut c, &sb, &mock, &sid, "sleep 3", version);
        let prompt = a["prompt"].as_str().unwrap_or_default().to_string();
        let out = sb.run(&["approve", &sid, "--prompt", &prompt]);
        assert!(
            out.status.success(),
            "[{version}] ccd approve: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            evidence(&sb, &mock, Some(&sid))
        );
    }

    let marker = dir.join("bg.txt");
    let path = wait_for(T, "the transcript", || transcript_of(&sb, &sid));
    let dump = |what: &str| {
        format!(
            "[{version}] {what}\ntranscript:\n{}\n{}",
            std::fs::read_to_string(&path).unwrap_or_default(),
            evidence(&sb, &mock, Some(&sid))
        )
    };
    // The work starts (its tool use is recorded) before bg.txt exists.
    wait_for(T, "the background work to show as pending", || {
        let p = background::pending(&path).unwrap();
        assert!(
            !marker.exists() || p.any(),
            "{}",
            dump("bg.txt before pending")
        );
        p.any().then_some(())
    });
    // Until bg.txt exists the work is pending, also at the prompt.
    let mut at_prompt_while_pending = false;
    loop {
        let p = background::pending(&path).unwrap();
        let idle = shows(&mut c, &sid) == "prompt";
        if marker.exists() {
            break;
        }
        let (n, other) = if subagent {
            (p.subagents.len(), p.shells.len())
        } else {
            (p.shells.len(), p.subagents.len())
        };
        assert_eq!((n, other), (1, 0), "{}", dump("not pending while running"));
        at_prompt_while_pending |= idle && p.any();
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        at_prompt_while_pending,
        "{}",
        dump("the session never sat at its prompt while the work ran")
    );
    // bg.txt exists: once the CLI has recorded the end, not pending.
    wait_for(T, "the background work to settle", || {
        (!background::pending(&path).unwrap().any()).then_some(())
    });
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains("<task-notification>") && text.contains("<status>completed</status>"),
        "{}",
        dump("settled without a completed task notification")
    );
    assert_eq!(std::fs::read_to_string(&marker).unwrap().trim(), "done");
    sb.ok(&["kill", &sid]);
    eprintln!(
        "[{version}] background {} ok in {:.1}s",
        if subagent { "subagent" } else { "shell" },
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn real_cli_background_work_is_pending_until_it_settles() {
    for v in real::versions() {
        background_version(&v, false);
        background_version(&v, true);
    }
}

/// The scenarios `tests/real-cli/record.sh` records, in its order.
const RECORDED: [&str; 15] = [
    "trust-dialog",
    "api-key-dialog",
    "resume-not-found",
    "permission-bash",
    "permission-write",
    "ready",
    "mode-cycle",
    "mode-cycle-bypass",
    "mode-flag-default",
    "mode-flag-acceptEdits",
    "mode-flag-plan",
    "mode-flag-auto",
    "mode-flag-bypassPermissions",
    "mode-flag-dontAsk",
    "mode-flag-manual",
];

/// `/tmp/ccd-record-XXXXXX` with its random tail blanked: the recorder's
/// temp folder, shown on screen and in typed prompts.
fn normalize_temp_folder(s: &str) -> String {
    const MARK: &str = "ccd-record-";
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find(MARK) {
        out.push_str(&rest[..i + MARK.len()]);
        out.push_str("XXXXXX");
        rest = &rest[i + MARK.len()..];
        let tail = rest
            .char_indices()
            .take_while(|&(n, c)| n < 6 && c.is_ascii_alphanumeric())
            .count();
        rest = &rest[tail..];
    }
    out.push_str(rest);
    out
}

/// What a recording's classifiers say, step by step: the verdict at each
/// `chunk_end` and at the end of the stream, reduced to what a recording is
/// for (the verdict's kind; a dialog's options, selection, kind and detail;
/// an error's kind), with the temp folder and the random session id
/// normalized; plus the keys sent and the CLI's arguments, and at each
/// step the permission mode the footer shows.
fn classified(dir: &std::path::Path, name: &str) -> Result<Vec<String>, String> {
    let bin = dir.join(format!("{name}.bin"));
    let data = std::fs::read(&bin).map_err(|e| format!("{}: {e}", bin.display()))?;
    let meta_path = dir.join(format!("{name}.json"));
    let meta: Value = serde_json::from_slice(
        &std::fs::read(&meta_path).map_err(|e| format!("{}: {e}", meta_path.display()))?,
    )
    .map_err(|e| format!("{}: {e}", meta_path.display()))?;
    let rows = meta["rows"].as_u64().unwrap_or(40) as u16;
    let cols = meta["cols"].as_u64().unwrap_or(120) as u16;
    let mut points: Vec<usize> = meta["chunk_ends"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_u64)
                .map(|n| n as usize)
                .collect()
        })
        .unwrap_or_default();
    points.push(data.len());
    // The one argument that is random by design: `--resume <uuid>`.
    let sid = match meta["args"].as_array().map(Vec::as_slice) {
        Some([flag, id, ..]) if flag == "--resume" => id.as_str().map(str::to_string),
        _ => None,
    };
    let unrandom = |s: String| {
        let s = normalize_temp_folder(&s);
        match &sid {
            Some(id) => s.replace(id.as_str(), "<session-id>"),
            None => s,
        }
    };
    let mut out = vec![
        unrandom(format!("keys {}", meta["keys"])),
        unrandom(format!("args {}", meta["args"])),
    ];
    for (step, &end) in points.iter().enumerate() {
        let mut screen = ccd_screen::Screen::new(rows, cols);
        screen.process(&data[..end.min(data.len())]);
        let mut v = serde_json::to_value(ccd_screen::classify_screen(&screen))
            .map_err(|e| e.to_string())?;
        let mode = ccd_screen::classify::mode::detect(&screen.text());
        if let Some(o) = v.as_object_mut() {
            match o.get("state").and_then(Value::as_str) {
                // Where the prompt sits and its hint line (banner, tips,
                // effort) are not what the recording is for.
                Some("ready") => o.retain(|k, _| k == "state" || k == "input"),
                // The error's kind (with its id); not the line around it.
                Some("error") => o.retain(|k, _| k == "state" || k == "kind"),
                _ => {}
            }
        }
        out.push(unrandom(format!("step {step}: {v} mode {mode:?}")));
    }
    Ok(out)
}

/// Runs `tests/real-cli/record.sh` for `version` into a temp folder and
/// compares every fresh recording with the checked-in one of that version,
/// on what the classifiers make of them.
fn recorder_version(version: &str) {
    let Some(claude) = real::claude_or_skip(version) else {
        return;
    };
    let started = Instant::now();
    let out_dir = tempfile::Builder::new()
        .prefix("ccd-recorded")
        .tempdir()
        .unwrap();
    let script = real::repo_root().join("tests/real-cli/record.sh");
    let out = std::process::Command::new("bash")
        .arg(&script)
        .arg(&claude)
        .arg(out_dir.path())
        .env("CCD_MOCK_API", real::mock_api_bin())
        // The recordings were made with their sandboxes in /tmp: the same
        // folder on screen, the same wrapping.
        .env("TMPDIR", "/tmp")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "[{version}] record.sh failed ({}):\n{log}",
        out.status
    );
    let checked_in = ccd_testkit::fixtures::claude_cli_dir();
    let mut differences = Vec::new();
    for scenario in RECORDED {
        let name = format!("{scenario}-{version}");
        let fresh = classified(out_dir.path(), &name)
            .unwrap_or_else(|e| panic!("[{version}] fresh {name}: {e}\n{log}"));
        let kept = match classified(&checked_in, &name) {
            Ok(k) => k,
            Err(e) => {
                differences.push(format!("{name}: no checked-in recording ({e})"));
                continue;
            }
        };
        if fresh != kept {
            differences.push(format!(
                "{name}:\n  checked in: {kept:#?}\n  fresh:      {fresh:#?}"
            ));
        }
    }
    assert!(
        differences.is_empty(),
        "[{version}] the recorder's output differs from the checked-in recordings \
         (re-record with `tests/real-cli/record.sh {}`?):\n{}\n{log}",
        claude.display(),
        differences.join("\n")
    );
    eprintln!(
        "[{version}] {} recordings match in {:.1}s",
        RECORDED.len(),
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn real_cli_recorder_matches_the_checked_in_recordings() {
    assert_eq!(
        normalize_temp_folder("to /tmp/ccd-record-ab12Cd/proj/ and ccd-record-x"),
        "to /tmp/ccd-record-XXXXXX/proj/ and ccd-record-XXXXXX"
    );
    for v in real::versions() {
        recorder_version(&v);
    }
}

/// A session the memory budget stopped comes back with `ccd attach`, with
/// its conversation: the first request after the resume carries the turn
/// from before.
fn budget_version(version: &str) {
    let Some(claude) = real::claude_or_skip(version) else {
        return;
    };
    let started = Instant::now();
    let mock = MockApi::start_logging_bodies(MockUsage::SMALL);
    let mut sb = real::sandbox(&mock, &claude, version);
    // Any real CLI is over 1 MiB: the session is stopped once idle 8 s
    // (time enough for `ccd send` to follow `ccd new`).
    for (k, v) in [
        ("CCD_MEMORY_BUDGET", "1MiB"),
        ("CCD_REAP_MIN_IDLE_SECS", "8"),
        ("CCD_COST_INTERVAL_MS", "500"),
    ] {
        sb.env.push((k.into(), v.into()));
    }
    let dir = sb.project("budgeted");
    let sid = sb
        .ok(&["new", "--detach", "--cwd", dir.to_str().unwrap()])
        .trim()
        .to_string();
    sb.ok(&["send", &sid, "remember the word marmalade"]);
    wait_reply(&sb, &sid, "ACK: remember the word marmalade", version);
    let r = wait_for(T, "the session stopped by the budget", || {
        let r = common::row(&sb, &sid);
        (r["state"] == "dead" && r["ccd"]["lifecycle"] == "reaped").then_some(r)
    });
    assert!(
        r["ccd"]["attention"]
            .as_str()
            .is_some_and(|a| a.contains("memory budget")),
        "[{version}] {r}\n{}",
        evidence(&sb, &mock, None)
    );
    assert!(
        sb.logs()
            .contains("stopping an idle session to keep under the memory budget"),
        "[{version}] the stop is not logged"
    );

    // Attached, it is back in its folder with what was said before, and
    // never stopped while a client is attached.
    let a = common::pty::PtyRun::start(&sb, &["attach", &sid], None);
    a.wait_text("marmalade", T);
    let entry = wait_for(T, "the resumed entry", || {
        real::registry_entries(&sb)
            .into_iter()
            .find(|e| e["sessionId"] == sid.as_str())
    });
    assert_eq!(entry["cwd"], dir.to_str().unwrap(), "[{version}] {entry}");
    let from = mock.requests().len();
    sb.ok(&["send", &sid, "what was the word"]);
    wait_reply(&sb, &sid, "ACK: what was the word", version);
    let asked: Vec<Value> = mock.requests()[from..]
        .iter()
        .filter(|r| r["kind"] == "messages-stream")
        .filter(|r| r["body"]["last_user"] == "what was the word")
        .cloned()
        .collect();
    let body = asked
        .first()
        .map(|r| r["full_body"]["messages"].to_string())
        .unwrap_or_default();
    assert!(
        body.contains("remember the word marmalade") && body.contains("ACK: remember the word"),
        "[{version}] the resumed request lacks the earlier turn: {body}\n{}",
        mock.summary()
    );
    // Still there after the idle time: a client is attached.
    std::thread::sleep(Duration::from_secs(10));
    assert_eq!(common::row(&sb, &sid)["state"], "live", "[{version}]");
    drop(a);
    sb.ok(&["kill", &sid]);
    eprintln!(
        "[{version}] budget stop and resume ok in {:.1}s",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn real_cli_a_session_the_memory_budget_stopped_resumes_with_its_conversation() {
    let handles: Vec<_> = real::versions()
        .into_iter()
        .map(|v| std::thread::spawn(move || budget_version(&v)))
        .collect();
    for h in handles {
        h.join().expect("a version failed (see the panic above)");
    }
}

/// The daemon's `[notify]` command sink on a real permission prompt: the
/// notification names the tool and the command, and its prompt id
/// approves that prompt (`ccd approve --prompt`), which runs the command.
fn notify_version(version: &str) {
    let Some((mock, sb)) = real::setup(version, MockUsage::SMALL) else {
        return;
    };
    let root = sb.tmp.path().canonicalize().unwrap();
    let out = CommandSink::new(&root);
    out.write_config(&root, "quiet_secs = 0\nreasons = [\"permission\"]");
    let dir = sb.project("notified");
    let sid = asking_session(&sb, &dir, version);
    sb.ok(&["send", &sid, "TOOL:echo notified > notified.txt"]);
    let n: Value = wait_for(T, "the notification", || {
        out.permissions().into_iter().next()
    });
    assert_eq!(n["reason"], "permission", "[{version}] {n}");
    assert_eq!(n["session"], sid.as_str(), "[{version}] {n}");
    assert_eq!(n["tool"], "Bash command", "[{version}] {n}");
    assert!(
        n["detail"]
            .as_str()
            .is_some_and(|d| d.contains("echo notified > notified.txt")),
        "[{version}] {n}"
    );
    let prompt = n["prompt_id"].as_str().unwrap_or_default().to_string();
    assert_eq!(prompt.len(), 16, "[{version}] {n}");
    let o = sb.run(&["approve", &sid, "--prompt", &prompt]);
    assert!(
        o.status.success(),
        "[{version}] ccd approve: {}\n{}",
        String::from_utf8_lossy(&o.stderr),
        evidence(&sb, &mock, Some(&sid))
    );
    wait_for(T, "notified.txt", || {
        std::fs::read_to_string(dir.join("notified.txt"))
            .ok()
            .filter(|t| t.trim() == "notified")
    });
    sb.ok(&["kill", &sid]);
}

#[test]
fn real_cli_a_permission_prompt_is_notified_with_its_command() {
    for v in real::versions() {
        notify_version(&v);
    }
}

/// The footer's mode indicator words on the session's screen, if any.
fn footer_mode(sb: &Sandbox, sid: &str) -> Option<&'static str> {
    let rows = sb.model_rows(sid).join("\n");
    mode_words(&rows).into_iter().next()
}

/// Issue 54 on the real CLI: a session with a conversation, its mode
/// moved to "accept edits" by Shift-Tab (shown by `ccd ls --json`) and its
/// model switched with `/model sonnet` (confirmed in the "Switch model?"
/// dialog, no turn after it), then the simulated reboot and `ccd restore`:
/// it is back in its folder on its own conversation, started in that mode
/// (`--permission-mode acceptEdits`, the footer shows it) and with that
/// model (`--model sonnet`: the CLI's own resume would take the last
/// reply's), and the first request the mock receives after the restore
/// carries the earlier turn and asks for a Sonnet model.
fn restore_version(version: &str) {
    let Some(claude) = real::claude_or_skip(version) else {
        return;
    };
    let started = Instant::now();
    let mock = MockApi::start_logging_bodies(MockUsage::SMALL);
    let mut sb = real::sandbox(&mock, &claude, version);
    sb.env
        .push(("CCD_TEST_BOOT_ID".into(), format!("boot-1-{version}")));
    let dir = sb.project("restored proj");
    let sid = sb
        .ok(&["new", "--detach", "--cwd", dir.to_str().unwrap()])
        .trim()
        .to_string();
    sb.ok(&["send", &sid, "remember the word marmalade"]);
    wait_reply(&sb, &sid, "ACK: remember the word marmalade", version);

    // Shift-Tab until the footer shows accept edits: one press from
    // 2.1.173's default, two from 2.1.332's auto (through manual).
    for _ in 0..6 {
        let before = footer_mode(&sb, &sid);
        if before == Some("accept edits on") {
            break;
        }
        sb.type_keys(&sid, b"\x1b[Z");
        wait_for(T, "the footer to change", || {
            (footer_mode(&sb, &sid) != before).then_some(())
        });
    }
    assert_eq!(
        footer_mode(&sb, &sid),
        Some("accept edits on"),
        "[{version}]\n{}",
        evidence(&sb, &mock, Some(&sid))
    );
    let row = wait_for(T, "ccd ls --json showing acceptEdits", || {
        ls_json(&sb).into_iter().find(|r| {
            r["session_id"] == sid.as_str() && r["ccd"]["permission_mode"] == "acceptEdits"
        })
    });
    let claude_pid = row["pid"].as_u64().expect("a live pid") as u32;
    // `/model sonnet`: typed, then Enter once the text shows; the CLI asks
    // first as the conversation has history.
    sb.type_keys(&sid, b"/model sonnet");
    sb.wait_for_row(&sid, "/model sonnet");
    sb.type_keys(&sid, b"\r");
    wait_for(T, "the switch asked or done", || {
        let rows = sb.model_rows(&sid).join("\n");
        (rows.contains("Switch model?") || rows.contains("Set model to")).then_some(())
    });
    if sb.model_rows(&sid).join("\n").contains("Switch model?") {
        sb.type_keys(&sid, b"\r");
    }
    sb.wait_for_row(&sid, "Set model to");
    // The restore record has them (the mode follows the footer, the
    // model the transcript).
    wait_for(T, "the restore record with the mode and model", || {
        let text = std::fs::read_to_string(sb.state.join("held.json")).unwrap_or_default();
        let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        v["held"]
            .as_array()?
            .iter()
            .any(|e| {
                e["session"] == sid.as_str()
                    && e["permission_mode"] == "acceptEdits"
                    && e["model"] == "sonnet"
            })
            .then_some(())
    });

    sb.simulate_reboot(&[claude_pid], &format!("boot-2-{version}"));
    // The daemon starts (as at login) and lists it as lost.
    let _ = sb.client_or_start();
    let r = wait_for(T, "the session listed as lost", || {
        let r = common::row(&sb, &sid);
        (r["ccd"]["lifecycle"] == "lost").then_some(r)
    });
    assert_eq!(r["state"], "dead", "[{version}] {r}");

    let from = mock.requests().len();
    let out = sb.run(&["restore", "--json"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "[{version}] ccd restore --json: {e}: {}{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            sb.logs()
        )
    });
    assert!(
        out.status.success(),
        "[{version}] {report:#}\n{}",
        sb.logs()
    );
    assert!(
        report["restored"]
            .as_array()
            .is_some_and(|a| a.iter().any(|x| x["session"] == sid.as_str())),
        "[{version}] {report:#}"
    );
    // Back on its conversation, in its folder, in accept edits.
    let r = wait_for(T, "the restored session live", || {
        let r = common::row(&sb, &sid);
        (r["state"] == "live" && r["pid"].is_u64()).then_some(r)
    });
    let pid = r["pid"].as_u64().expect("a pid") as u32;
    let argv: Vec<String> = ccd_testkit::procs::cmdline(pid)
        .split(|b| *b == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let has = |a: &str, b: &str| argv.windows(2).any(|w| w[0] == a && w[1] == b);
    assert!(
        has("--resume", &sid)
            && has("--permission-mode", "acceptEdits")
            && has("--model", "sonnet"),
        "[{version}] {argv:?}"
    );
    assert_eq!(
        std::fs::canonicalize(ccd_testkit::procs::cwd(pid).expect("its cwd")).unwrap(),
        std::fs::canonicalize(&dir).unwrap(),
        "[{version}]"
    );
    wait_for(T, "the footer in accept edits again", || {
        (footer_mode(&sb, &sid) == Some("accept edits on")).then_some(())
    });
    wait_for(T, "ccd ls --json showing acceptEdits again", || {
        (common::row(&sb, &sid)["ccd"]["permission_mode"] == "acceptEdits").then_some(())
    });

    sb.ok(&["send", &sid, "what was the word"]);
    wait_reply(&sb, &sid, "ACK: what was the word", version);
    let first = mock.requests()[from..]
        .iter()
        .find(|r| r["kind"] == "messages-stream")
        .cloned()
        .unwrap_or_default();
    let body = first["full_body"]["messages"].to_string();
    assert!(
        body.contains("remember the word marmalade")
            && body.contains("ACK: remember the word marmalade")
            && body.contains("what was the word"),
        "[{version}] the first request after the restore lacks the earlier turn: {body}\n{}",
        mock.summary()
    );
    let model = first["full_body"]["model"].as_str().unwrap_or_default();
    assert!(
        model.starts_with("claude-sonnet"),
        "[{version}] the first request after the restore asks for {model:?}"
    );
    sb.ok(&["kill", &sid]);
    eprintln!(
        "[{version}] reboot and restore in accept edits ok in {:.1}s",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn real_cli_a_reboot_and_ccd_restore_bring_back_the_conversation_in_its_permission_mode() {
    let handles: Vec<_> = real::versions()
        .into_iter()
        .map(|v| std::thread::spawn(move || restore_version(&v)))
        .collect();
    for h in handles {
        h.join().expect("a version failed (see the panic above)");
    }
}
