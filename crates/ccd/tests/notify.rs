//! Notifications from the daemon (issue 53, `[notify]`): the fake
//! claude's permission prompt runs the `command` sink with the
//! notification as JSON on stdin and as `CCD_NOTIFY_*` variables, once per
//! dialog; a prompt answered within `quiet_secs` sends nothing; the rate
//! bound drops the excess; a webhook that never answers is abandoned after
//! its timeout while the daemon keeps serving, and `ccd doctor` says so
//! once, as it says a missing command and a non-https webhook; docs/notify.md's
//! Apprise example, run as written, posts to a local HTTP receiver.

mod common;

use ccd_testkit::notify::CommandSink;
use common::{wait_for, Sandbox};
use serde_json::Value;
use std::path::PathBuf;
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(20);

/// A sandbox whose config has `notify` (a TOML table body) and a command
/// sink keeping each notification's stdin and `CCD_NOTIFY_*` environment.
fn sandbox(notify: &str) -> (Sandbox, CommandSink) {
    sandbox_with_env(notify, &[])
}

/// [`sandbox`] with `env` set for the daemon.
fn sandbox_with_env(notify: &str, env: &[(&str, &str)]) -> (Sandbox, CommandSink) {
    let sb = Sandbox::with_env(env);
    let root = sb.tmp.path().canonicalize().unwrap();
    let sink = CommandSink::new(&root);
    sink.write_config(&root, notify);
    (sb, sink)
}

#[test]
fn a_permission_prompt_runs_the_command_once_with_its_json_and_env() {
    let (sb, out) = sandbox("quiet_secs = 0\nreasons = [\"permission\"]");
    let sid = sb.new_session("notified");
    sb.ok(&["send", &sid, "perm touch notified.txt"]);
    let n = wait_for(T, "the command's notification", || {
        out.received().into_iter().next()
    });
    let (json, env) = n;
    assert_eq!(json["reason"], "permission", "{json}");
    assert_eq!(json["session"], sid.as_str(), "{json}");
    assert_eq!(json["detail"], "touch notified.txt", "{json}");
    assert_eq!(json["title"], "notified", "the folder's name: {json}");
    assert!(
        json["cwd"].as_str().unwrap_or("").ends_with("/notified"),
        "{json}"
    );
    assert!(!json["machine"].as_str().unwrap_or("").is_empty(), "{json}");
    assert!(json["tool"].as_str().is_some(), "{json}");
    let prompt = json["prompt_id"].as_str().unwrap_or_default().to_string();
    assert_eq!(prompt.len(), 16, "{json}");
    // The same id `sessions.get` shows, so `ccd approve --prompt` takes it.
    assert!(
        env.contains(&format!("CCD_NOTIFY_PROMPT_ID={prompt}\n")),
        "{env}"
    );
    assert!(env.contains("CCD_NOTIFY_REASON=permission\n"), "{env}");
    assert!(
        env.contains("CCD_NOTIFY_DETAIL=touch notified.txt\n"),
        "{env}"
    );
    assert!(
        env.contains(&format!("CCD_NOTIFY_SESSION={sid}\n")),
        "{env}"
    );
    // The dialog stays (refreshes see it again): still one notification.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(out.permissions().len(), 1, "{:?}", out.received());
    // Approved with the notification's prompt id.
    sb.ok(&["approve", &sid, "--prompt", &prompt]);
    // Another dialog is notified.
    wait_for(T, "idle after the approved turn", || {
        (common::row(&sb, &sid)["status"] == "idle").then_some(())
    });
    sb.ok(&["send", &sid, "perm touch second.txt"]);
    wait_for(T, "the second dialog's notification", || {
        let p = out.permissions();
        (p.len() == 2).then_some(())
    });
    assert_eq!(out.permissions()[1]["detail"], "touch second.txt");
    let rec: Value = serde_json::from_slice(
        &std::fs::read(sb.state.join("notify-command.json")).expect("the sink's record"),
    )
    .unwrap();
    assert_eq!(rec["sent"], 2, "{rec}");
    assert!(rec["last_error"].is_null(), "{rec}");
}

#[test]
fn a_prompt_answered_within_the_quiet_delay_is_not_sent() {
    let (sb, out) = sandbox("quiet_secs = 4\nreasons = [\"permission\"]");
    let sid = sb.new_session("quiet");
    sb.ok(&["send", &sid, "perm touch answered.txt"]);
    // Answered at once (well within 4 s).
    wait_for(T, "the prompt", || {
        let info = common::row(&sb, &sid);
        (info["status"] == "waiting" || sb.ok(&["screen", &sid]).contains("Do you want"))
            .then_some(())
    });
    sb.ok(&["approve", &sid]);
    let answered = Instant::now();
    std::thread::sleep(Duration::from_secs(6));
    assert!(
        out.permissions().is_empty(),
        "answered {:?} ago, yet notified: {:?}",
        answered.elapsed(),
        out.received()
    );
    // Not answered: sent when the delay ends, not before.
    wait_for(T, "idle after the approved turn", || {
        (common::row(&sb, &sid)["status"] == "idle").then_some(())
    });
    sb.ok(&["send", &sid, "perm touch unanswered.txt"]);
    let asked = Instant::now();
    wait_for(T, "the unanswered prompt's notification", || {
        (out.permissions().len() == 1).then_some(())
    });
    assert!(
        asked.elapsed() >= Duration::from_secs(3),
        "sent after {:?}, before the quiet delay",
        asked.elapsed()
    );
    assert_eq!(out.permissions()[0]["detail"], "touch unanswered.txt");
}

#[test]
fn the_rate_bound_drops_the_excess() {
    let (sb, out) = sandbox("quiet_secs = 0\nrate_per_minute = 1\nreasons = [\"permission\"]");
    let a = sb.new_session("rate-a");
    let b = sb.new_session("rate-b");
    sb.ok(&["send", &a, "perm touch a.txt"]);
    wait_for(T, "the first notification", || {
        (out.permissions().len() == 1).then_some(())
    });
    sb.ok(&["send", &b, "perm touch b.txt"]);
    let logs = sb.logs_with(&["rate bound"]);
    assert!(logs.contains("rate bound"), "{logs}");
    std::thread::sleep(Duration::from_secs(1));
    let p = out.permissions();
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0]["session"], a.as_str());
}

#[test]
fn a_webhook_that_never_answers_is_abandoned_and_the_daemon_keeps_serving() {
    // A listener that accepts and never says a word (the TLS handshake
    // hangs).
    let hang = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = hang.local_addr().unwrap().port();
    let held = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    {
        let held = held.clone();
        std::thread::spawn(move || {
            for s in hang.incoming().flatten() {
                held.lock().unwrap().push(s);
            }
        });
    }
    let (sb, out) = sandbox(&format!(
        "quiet_secs = 0\nreasons = [\"permission\"]\nsend_timeout_secs = 1\nwebhook = \"https://127.0.0.1:{port}/hook\""
    ));
    let sid = sb.new_session("hook");
    sb.ok(&["send", &sid, "perm touch hook.txt"]);
    // The command sink is not held up by the webhook's.
    wait_for(T, "the command's notification", || {
        (out.permissions().len() == 1).then_some(())
    });
    // The daemon answers at once while the webhook hangs.
    let t = Instant::now();
    sb.ok(&["ls"]);
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "ls took {:?}",
        t.elapsed()
    );
    // Three attempts of 1 s with 0.5 s and 1 s between: failed, said.
    let rec = wait_for(T, "the webhook's failure in its record", || {
        let r: Value =
            serde_json::from_slice(&std::fs::read(sb.state.join("notify-webhook.json")).ok()?)
                .ok()?;
        (r["failed"] == 1).then_some(r)
    });
    let err = rec["last_error"].as_str().unwrap_or_default();
    assert!(err.contains("no answer within 1 s"), "{rec}");
    assert!(
        held.lock().unwrap().len() >= 3,
        "retried: {} connections",
        held.lock().unwrap().len()
    );
    let logs = sb.logs_with(&["notify: send failed"]);
    assert_eq!(
        logs.matches("notify: send failed").count(),
        1,
        "said once:\n{logs}"
    );
    // ccd doctor says it once.
    let doctor: Value = serde_json::from_str(&sb.ok(&["doctor", "--json"])).unwrap();
    let notify: Vec<&Value> = doctor
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["check"] == "notify")
        .collect();
    let failed: Vec<_> = notify
        .iter()
        .filter(|c| {
            c["message"]
                .as_str()
                .unwrap_or("")
                .contains("last webhook send failed")
        })
        .collect();
    assert_eq!(failed.len(), 1, "{notify:?}");
    assert_eq!(failed[0]["status"], "warn");
    assert!(
        failed[0]["message"]
            .as_str()
            .unwrap()
            .contains("no answer within"),
        "{notify:?}"
    );
}

#[test]
fn doctor_names_a_missing_command_and_a_webhook_that_is_not_https() {
    let sb = Sandbox::new();
    let root = sb.tmp.path().canonicalize().unwrap();
    std::fs::write(
        root.join("ccd.toml"),
        "[notify]\ndesktop = false\ncommand = [\"no-such-notifier-ccd\"]\nwebhook = \"http://hooks.example/x\"\n",
    )
    .unwrap();
    let o = sb.run(&["doctor", "--json"]);
    assert!(!o.status.success(), "a bad notify config is an error");
    let doctor: Value = serde_json::from_slice(&o.stdout).unwrap();
    let notify: Vec<&Value> = doctor
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["check"] == "notify")
        .collect();
    assert_eq!(notify.len(), 2, "{notify:?}");
    assert!(notify.iter().all(|c| c["status"] == "error"), "{notify:?}");
    let text = format!("{notify:?}");
    assert!(
        text.contains("no-such-notifier-ccd not found on PATH"),
        "{text}"
    );
    assert!(text.contains("is not https://"), "{text}");
    // The daemon still starts and serves sessions.
    let sid = sb.new_session("still");
    assert!(!sid.is_empty());
}

#[test]
fn doctor_warns_of_a_session_bus_without_a_notification_service() {
    // A private bus of our own (no service activation: nothing answers
    // for org.freedesktop.Notifications). Skipped without dbus-daemon.
    let Ok(dbus) = which("dbus-daemon") else {
        eprintln!("SKIP: no dbus-daemon");
        assert!(
            std::env::var_os("CI").is_none(),
            "dbus-daemon is needed in CI"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let bus = dir.path().join("bus");
    let conf = dir.path().join("bus.conf");
    std::fs::write(
        &conf,
        format!(
            "<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN\" \"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\n<busconfig><type>session</type><listen>unix:path={}</listen><auth>EXTERNAL</auth><policy context=\"default\"><allow send_destination=\"*\" eavesdrop=\"true\"/><allow eavesdrop=\"true\"/><allow own=\"*\"/></policy></busconfig>\n",
            bus.display()
        ),
    )
    .unwrap();
    let mut daemon = std::process::Command::new(dbus)
        .arg(format!("--config-file={}", conf.display()))
        .arg("--nofork")
        .spawn()
        .unwrap();
    wait_for(T, "the bus socket", || bus.exists().then_some(()));
    let address = format!("unix:path={}", bus.display());
    let sb = Sandbox::with_env(&[("DBUS_SESSION_BUS_ADDRESS", address.as_str())]);
    let o = sb.run(&["doctor", "--json"]);
    let _ = daemon.kill();
    let _ = daemon.wait();
    let doctor: Value = serde_json::from_slice(&o.stdout).unwrap();
    let notify: Vec<&Value> = doctor
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["check"] == "notify")
        .collect();
    assert_eq!(notify.len(), 1, "{notify:?}");
    assert_eq!(notify[0]["status"], "warn", "{notify:?}");
    assert!(
        notify[0]["message"]
            .as_str()
            .unwrap_or("")
            .contains("no desktop notification server"),
        "{notify:?}"
    );
}

fn which(name: &str) -> Result<PathBuf, ()> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .ok_or(())
}

#[test]
fn a_finished_turn_and_an_ended_session_are_notified() {
    let (sb, out) = sandbox("quiet_secs = 0\nturn_done_after_secs = 0\nreasons = [\"turn_done\", \"exited\", \"failed\"]");
    let sid = sb.new_session("turns");
    sb.ok(&["send", &sid, "a turn"]);
    let n = wait_for(T, "the turn_done notification", || {
        out.received()
            .into_iter()
            .map(|(j, _)| j)
            .find(|j| j["reason"] == "turn_done")
    });
    assert_eq!(n["session"], sid.as_str(), "{n}");
    assert_eq!(n["title"], "turns", "{n}");
    sb.ok(&["kill", &sid]);
    let n = wait_for(T, "the end's notification", || {
        out.received()
            .into_iter()
            .map(|(j, _)| j)
            .find(|j| j["reason"] == "exited" || j["reason"] == "failed")
    });
    assert_eq!(n["session"], sid.as_str(), "{n}");
    // Killed by a person: an exit, not a failure.
    assert_eq!(n["reason"], "exited", "{n}");
    assert!(n["cwd"].as_str().unwrap_or("").ends_with("/turns"), "{n}");
    // Only what the config lists: no permission, no question.
    assert!(
        out.received()
            .iter()
            .all(|(j, _)| ["turn_done", "exited", "failed"]
                .contains(&j["reason"].as_str().unwrap_or(""))),
        "{:?}",
        out.received()
    );
}

#[test]
fn a_reaped_session_is_notified_with_its_folder() {
    let (sb, out) = sandbox_with_env(
        "quiet_secs = 0\nreasons = [\"reaped\", \"budget\"]",
        &[("CCD_REAP_IDLE_SECS", "2"), ("FAKE_CLAUDE_TURN_MS", "300")],
    );
    let sid = sb.new_session_with_a_turn("reaped");
    let n = wait_for(T, "the reaped notification", || {
        out.received().into_iter().map(|(j, _)| j).next()
    });
    assert_eq!(n["reason"], "reaped", "idle, not the budget: {n}");
    assert_eq!(n["session"], sid.as_str(), "{n}");
    assert!(n["cwd"].as_str().unwrap_or("").ends_with("/reaped"), "{n}");
}

/// The Apprise to use: `$CCD_APPRISE` (`.ci/run` sets it from
/// `tests/apprise/install.sh`); `None` with a message when unset, a
/// failure under CI.
fn apprise_or_skip() -> Option<PathBuf> {
    const HINT: &str = "install it with `tests/apprise/install.sh` (a venv with PyPI's apprise, \
                        pinned; it prints the apprise to use) and set CCD_APPRISE to that path";
    let found = std::env::var_os("CCD_APPRISE")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .filter(|p| p.is_file());
    match found {
        Some(p) => Some(p),
        None if std::env::var_os("CI").is_some() => {
            panic!("CI needs Apprise for the command sink's test: CCD_APPRISE is unset or not a file; {HINT}")
        }
        None => {
            eprintln!("SKIPPED the Apprise test: CCD_APPRISE is unset; {HINT}");
            None
        }
    }
}

/// The requests a receiver got: each one's first line and body.
type Received = std::sync::Arc<std::sync::Mutex<Vec<(String, Vec<u8>)>>>;

/// A local HTTP receiver: every request's first line and body, answered
/// `200`.
fn http_receiver() -> (u16, Received) {
    use std::io::{BufRead, BufReader, Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let got = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = got.clone();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let mut r = BufReader::new(s);
            let mut first = String::new();
            if r.read_line(&mut first).is_err() {
                continue;
            }
            let mut len = 0usize;
            loop {
                let mut h = String::new();
                if r.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
                    break;
                }
                if let Some((k, v)) = h.split_once(':') {
                    if k.eq_ignore_ascii_case("content-length") {
                        len = v.trim().parse().unwrap_or(0);
                    }
                }
            }
            let mut body = vec![0u8; len];
            let _ = r.read_exact(&mut body);
            let mut s = r.into_inner();
            let _ =
                s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            keep.lock().unwrap().push((first.trim().to_string(), body));
        }
    });
    (port, got)
}

/// docs/notify.md's Apprise line, run as written by the daemon's command
/// sink (only `apprise` made the pinned one's path and the ntfy URL a
/// local receiver's `json://`): the receiver gets the title and the body
/// naming the session, the machine, the reason and the command.
#[test]
fn the_documented_apprise_command_posts_the_notification() {
    let Some(apprise) = apprise_or_skip() else {
        return;
    };
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/notify.md"))
        .unwrap();
    let line = doc
        .lines()
        .find(|l| l.starts_with("command = [\"sh\", \"-c\", \"apprise "))
        .expect("docs/notify.md has the Apprise example");
    // A TOML array of basic strings reads as JSON.
    let mut argv: Vec<String> =
        serde_json::from_str(line.trim_start_matches("command = ")).unwrap();
    let (port, got) = http_receiver();
    let script = argv[2].strip_prefix("apprise ").unwrap().replace(
        "ntfys://ntfy.sh/my-topic",
        &format!("json://127.0.0.1:{port}/ccd"),
    );
    assert!(
        script.contains(&format!("json://127.0.0.1:{port}/ccd")),
        "{script}"
    );
    argv[2] = format!("\"$CCD_TEST_APPRISE\" {script}");

    let sb = Sandbox::with_env(&[("CCD_TEST_APPRISE", apprise.to_str().unwrap())]);
    let root = sb.tmp.path().canonicalize().unwrap();
    let toml_argv = serde_json::to_string(&argv).unwrap();
    std::fs::write(
        root.join("ccd.toml"),
        format!("[notify]\ndesktop = false\nquiet_secs = 0\nreasons = [\"permission\"]\nsend_timeout_secs = 30\ncommand = {toml_argv}\n"),
    )
    .unwrap();
    let sid = sb.new_session("apprised");
    sb.ok(&["send", &sid, "perm touch apprised.txt"]);
    let (first, body) = wait_for(Duration::from_secs(40), "Apprise's POST", || {
        got.lock().unwrap().first().cloned()
    });
    assert_eq!(first, "POST /ccd HTTP/1.1", "{first}");
    let v: Value = serde_json::from_slice(&body).expect("Apprise's JSON body");
    let title = v["title"].as_str().unwrap_or_default();
    let message = v["message"].as_str().unwrap_or_default();
    let host = nix::unistd::gethostname().unwrap().into_string().unwrap();
    assert_eq!(title, format!("apprised on {host}: permission"), "{v}");
    assert_eq!(
        message,
        format!("apprised on {host}: permission: Bash command: touch apprised.txt"),
        "{v}"
    );
    // Apprise exited 0: the sink counts it sent.
    let rec = wait_for(T, "the command sink's record of the send", || {
        let r: Value =
            serde_json::from_slice(&std::fs::read(sb.state.join("notify-command.json")).ok()?)
                .ok()?;
        (r["sent"] == 1).then_some(r)
    });
    assert!(rec["last_error"].is_null(), "{rec}");
}
