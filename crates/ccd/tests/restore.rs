//! Sessions come back after a reboot (issue 54). A simulated reboot:
//! every ccd and claude process this test started (each carries the
//! sandbox's `CCD_SOCKET_DIR`) SIGKILLed by pid, the socket directory
//! (holders' sockets and metadata, the runtime dir) removed, and a new
//! boot id (`CCD_TEST_BOOT_ID`); then a daemon starts. The restore record
//! in the state dir tells it which sessions were lost; `ccd restore` (or
//! `restore = "auto"`) brings them back, each checked through `/proc`: its
//! folder, its argv (`--resume <own id>`, model, permission mode, added
//! flags), its name and pin.

mod common;
use common::*;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

fn config(sb: &Sandbox, text: &str) {
    let path = sb.tmp.path().join("ccd.toml");
    let path = std::fs::canonicalize(sb.tmp.path())
        .map(|r| r.join("ccd.toml"))
        .unwrap_or(path);
    std::fs::write(path, text).expect("config");
}

/// `held.json` in the state dir.
fn record(sb: &Sandbox) -> Value {
    let text = std::fs::read_to_string(sb.state.join("held.json")).unwrap_or_default();
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

fn recorded_sessions(r: &Value, list: &str) -> HashSet<String> {
    r[list]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|e| e["session"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// One session started for the test, and what it should come back as.
#[derive(Debug, Clone)]
struct Started {
    sid: String,
    folder: PathBuf,
    model: String,
    mode: String,
    name: String,
}

/// `ccd new` in `folder` with a model, a permission mode and a name,
/// pinned, with one turn done; waits until its footer shows the mode.
fn start(sb: &Sandbox, folder: &Path, i: usize, mode: &str) -> Started {
    let model = format!("claude-test-{i}");
    let name = format!("s{i}");
    let sid = sb
        .ok(&[
            "new",
            "--detach",
            "--name",
            &name,
            "--cwd",
            folder.to_str().expect("utf-8"),
            "--",
            "--model",
            &model,
            "--permission-mode",
            mode,
            "--add-dir",
            "/tmp",
        ])
        .trim()
        .to_string();
    sb.ok(&["pin", &sid]);
    sb.ok(&["send", &sid, "make a transcript"]);
    Started {
        sid,
        folder: folder.to_path_buf(),
        model,
        mode: mode.into(),
        name,
    }
}

fn wait_turns(sb: &Sandbox, started: &[Started]) {
    wait_for(Duration::from_secs(60), "every turn done", || {
        let rows = ls_json(sb);
        started
            .iter()
            .all(|s| {
                rows.iter().any(|r| {
                    r["session_id"] == s.sid.as_str()
                        && r["status"] == "idle"
                        && !r["transcript"].is_null()
                })
            })
            .then_some(())
    });
}

/// The footer text each mode shows on the fake's 2.1.332 face.
fn footer_of(mode: &str) -> &'static str {
    match mode {
        "default" => "manual mode on",
        "acceptEdits" => "accept edits on",
        "plan" => "plan mode on",
        "auto" => "auto mode on",
        "bypassPermissions" => "bypass permissions on",
        _ => "?",
    }
}

/// `sid` runs under ccd again as it was: in its folder, on its own
/// conversation, with its model, mode and added folder, named and pinned.
fn check_back(sb: &Sandbox, s: &Started) {
    let r = row(sb, &s.sid);
    assert_eq!(r["state"], "live", "{} back: {r}", s.sid);
    assert_eq!(r["ccd"]["pinned"], true, "{} pinned: {r}", s.sid);
    // Its name still reaches it.
    let by_name = sb
        .client()
        .call_value("sessions.get", serde_json::json!({"session": s.name}))
        .expect("by name");
    assert_eq!(
        by_name["session_id"],
        s.sid.as_str(),
        "{} named {}",
        s.sid,
        s.name
    );
    let pid = r["pid"].as_u64().expect("a pid") as u32;
    let argv: Vec<String> = ccd_testkit::procs::cmdline(pid)
        .split(|b| *b == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let has = |pair: [&str; 2]| argv.windows(2).any(|w| w[0] == pair[0] && w[1] == pair[1]);
    assert!(has(["--resume", &s.sid]), "{argv:?}");
    assert!(has(["--model", &s.model]), "{argv:?}");
    assert!(
        has(["--permission-mode", &s.mode]),
        "{} wants {}: {argv:?}\n{}",
        s.sid,
        s.mode,
        mode_trail(sb)
    );
    assert!(has(["--add-dir", "/tmp"]), "{argv:?}");
    assert!(
        !argv.iter().any(|a| a == "--session-id"),
        "no fresh id: {argv:?}"
    );
    let cwd = ccd_testkit::procs::cwd(pid).expect("its cwd");
    assert_eq!(
        std::fs::canonicalize(cwd).expect("cwd"),
        std::fs::canonicalize(&s.folder).expect("folder"),
        "{} in its folder",
        s.sid
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !sb
        .model_rows(&s.sid)
        .iter()
        .any(|r| r.contains(footer_of(&s.mode)))
    {
        assert!(
            std::time::Instant::now() < deadline,
            "{} back in {}: its screen {:#?}\n{}",
            s.sid,
            s.mode,
            sb.model_rows(&s.sid),
            mode_trail(sb)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Every log line that tells how a permission mode was read or typed,
/// for a failure's message.
fn mode_trail(sb: &Sandbox) -> String {
    sb.logs()
        .lines()
        .filter(|l| {
            l.starts_with("== ")
                || l.contains("permission mode")
                || l.contains("permission_mode")
                || l.contains("input")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Folders of every kind the issue names: plain ones, one with a space,
/// one reached through a symlink.
fn folders(sb: &Sandbox, n: usize) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for i in 0..n {
        out.push(match i {
            1 => sb.project("with space"),
            2 => {
                let real = sb.project("real-target");
                let link = sb.work.join("linked");
                std::os::unix::fs::symlink(&real, &link).expect("symlink");
                link
            }
            _ => sb.project(&format!("p{i}")),
        });
    }
    out
}

const MODES: [&str; 4] = ["default", "acceptEdits", "plan", "bypassPermissions"];

#[test]
fn after_a_reboot_ccd_restore_brings_twenty_sessions_back_as_they_were() {
    let mut sb = Sandbox::with_env(&[("CCD_REAP_IDLE_SECS", "6")]);
    sb.set_env("CCD_TEST_BOOT_ID", "boot-1");
    config(&sb, "restore_at_once = 3\n");
    let dirs = folders(&sb, 20);
    let mut started: Vec<Started> = dirs
        .iter()
        .enumerate()
        .map(|(i, d)| start(&sb, d, i, MODES[i % MODES.len()]))
        .collect();
    wait_turns(&sb, &started);
    // Shift-Tab moves two of them on: acceptEdits → plan, plan →
    // bypass-less auto; the record follows the footer.
    for i in [1usize, 2] {
        let s = &mut started[i];
        sb.type_keys(&s.sid, b"\x1b[Z");
        s.mode = if s.mode == "acceptEdits" {
            "plan"
        } else {
            "auto"
        }
        .into();
        sb.wait_for_row(&s.sid, footer_of(&s.mode));
    }
    // A killed one and a reaped one are not lost.
    let killed = sb.new_session_with_a_turn("killed");
    sb.ok(&["kill", &killed]);
    let reaped = sb.new_session_with_a_turn("reaped");
    wait_for(Duration::from_secs(30), "the idle one reaped", || {
        (row(&sb, &reaped)["ccd"]["lifecycle"] == "reaped").then_some(())
    });
    let want: HashSet<String> = started.iter().map(|s| s.sid.clone()).collect();
    wait_for(
        Duration::from_secs(20),
        "the record of all twenty, modes included",
        || {
            let r = record(&sb);
            let modes_in: bool = [1usize, 2].iter().all(|&i| {
                r["held"].as_array().is_some_and(|a| {
                    a.iter().any(|e| {
                        e["session"] == started[i].sid.as_str()
                            && e["permission_mode"] == started[i].mode.as_str()
                    })
                })
            });
            (recorded_sessions(&r, "held") == want && modes_in).then_some(())
        },
    );
    eprintln!("record before the reboot: {:#}", record(&sb));
    // The folder of one is gone after the reboot.
    let gone = started.pop().expect("one");
    sb.simulate_reboot(&[], "boot-2");
    std::fs::remove_dir_all(&gone.folder).expect("remove a folder");

    let _ = sb.client_or_start();
    let rows = ls_json(&sb);
    for s in started.iter().chain(std::iter::once(&gone)) {
        let r = rows
            .iter()
            .find(|r| r["session_id"] == s.sid.as_str())
            .unwrap_or_else(|| panic!("{} listed", s.sid));
        assert_eq!(r["state"], "dead", "{r}");
        assert_eq!(r["ccd"]["lifecycle"], "lost", "{r}");
    }
    for sid in [&killed, &reaped] {
        let r = rows.iter().find(|r| r["session_id"] == sid.as_str());
        assert!(
            r.is_none_or(|r| r["ccd"]["lifecycle"] != "lost"),
            "{sid} ended on purpose: not lost ({r:?})"
        );
    }
    let out = sb.run(&["restore", "--json"]);
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert!(!out.status.success(), "one did not come back: exit 1");
    let back: HashSet<String> = report["restored"]
        .as_array()
        .expect("restored")
        .iter()
        .map(|r| r["session"].as_str().expect("id").to_string())
        .collect();
    let expected: HashSet<String> = started.iter().map(|s| s.sid.clone()).collect();
    assert_eq!(back, expected, "{report:#}\n{}", sb.logs());
    let failed = report["failed"].as_array().expect("failed");
    assert_eq!(failed.len(), 1, "{report:#}");
    assert_eq!(failed[0]["session"], gone.sid.as_str());
    assert_eq!(failed[0]["code"], "cwd_missing", "{report:#}");
    assert!(
        failed[0]["reason"].as_str().unwrap_or("").contains("gone"),
        "{report:#}"
    );
    assert_eq!(failed[0]["kept"], false);
    for s in &started {
        check_back(&sb, s);
    }
    // Nothing was started fresh for the missing folder, and nothing is
    // lost any more.
    let rows = ls_json(&sb);
    assert!(
        !rows.iter().any(|r| r["ccd"]["lifecycle"] == "lost"),
        "none lost after the restore"
    );
    assert_eq!(
        rows.iter().filter(|r| r["state"] == "live").count(),
        started.len(),
        "no fresh session instead of the one whose folder is gone"
    );
    let again = sb.ok(&["restore"]);
    assert!(again.contains("no lost session"), "{again}");
}

#[test]
fn restore_auto_brings_them_back_at_daemon_start_and_off_forgets_them() {
    let mut sb = Sandbox::new();
    sb.set_env("CCD_TEST_BOOT_ID", "boot-1");
    config(&sb, "restore = \"auto\"\nrestore_at_once = 2\n");
    let dirs = folders(&sb, 5);
    let started: Vec<Started> = dirs
        .iter()
        .enumerate()
        .map(|(i, d)| start(&sb, d, i, MODES[i % MODES.len()]))
        .collect();
    wait_turns(&sb, &started);
    let want: HashSet<String> = started.iter().map(|s| s.sid.clone()).collect();
    wait_for(Duration::from_secs(20), "the record", || {
        (recorded_sessions(&record(&sb), "held") == want).then_some(())
    });
    sb.simulate_reboot(&[], "boot-2");
    // The daemon starts (through a client) and restores on its own, at
    // most two at a time.
    let mut c = sb.client_or_start();
    let mut most = 0usize;
    wait_for(Duration::from_secs(60), "all five back", || {
        let v = c
            .call_value(
                "sessions.list",
                serde_json::json!({"held_only": true, "no_cost": true}),
            )
            .ok()?;
        let rows = v["sessions"].as_array().cloned().unwrap_or_default();
        let starting = rows
            .iter()
            .filter(|r| {
                r["state"] != "dead"
                    && matches!(r["ccd"]["lifecycle"].as_str(), Some("starting" | "trust"))
            })
            .count();
        most = most.max(starting);
        let live: HashSet<String> = rows
            .iter()
            .filter(|r| matches!(r["ccd"]["lifecycle"].as_str(), Some("idle" | "ready")))
            .filter_map(|r| r["session_id"].as_str().map(String::from))
            .collect();
        want.is_subset(&live).then_some(())
    });
    assert!(most <= 2, "at most restore_at_once resumes at once: {most}");
    for s in &started {
        check_back(&sb, s);
    }
    let logs = sb.logs_with(&["restore = \\\"auto\\\": done"]);
    assert!(logs.contains("restored=5"), "{logs}");

    // `off`: the next reboot's sessions are forgotten.
    config(&sb, "restore = \"off\"\n");
    wait_for(
        Duration::from_secs(20),
        "the record of the restored ones",
        || (recorded_sessions(&record(&sb), "held") == want).then_some(()),
    );
    sb.simulate_reboot(&[], "boot-3");
    let _ = sb.client_or_start();
    let rows = ls_json(&sb);
    assert!(
        !rows.iter().any(|r| r["ccd"]["lifecycle"] == "lost"),
        "off: nothing listed as lost"
    );
    assert!(sb.ok(&["restore"]).contains("no lost session"));
    assert!(recorded_sessions(&record(&sb), "lost").is_empty());
}

/// `restore_at_once` bounds the sessions *starting*: a slot is let go
/// once its session is at its prompt, not after the settle check that
/// follows. With one slot and an 8 s settle check, the second session
/// is at its prompt before the first is reported restored (its check
/// over); holding the slot through the check, the second would not even
/// start until then.
#[test]
fn a_restore_slot_is_let_go_at_the_prompt_not_after_the_settle_check() {
    let mut sb = Sandbox::with_env(&[("CCD_RESUME_SETTLE_MS", "8000")]);
    sb.set_env("CCD_TEST_BOOT_ID", "boot-1");
    config(&sb, "restore_at_once = 1\n");
    let dirs = folders(&sb, 2);
    let started: Vec<Started> = dirs
        .iter()
        .enumerate()
        .map(|(i, d)| start(&sb, d, i, "acceptEdits"))
        .collect();
    wait_turns(&sb, &started);
    let want: HashSet<String> = started.iter().map(|s| s.sid.clone()).collect();
    wait_for(Duration::from_secs(20), "the record", || {
        (recorded_sessions(&record(&sb), "held") == want).then_some(())
    });
    sb.simulate_reboot(&[], "boot-2");
    let _ = sb.client_or_start();
    let mut ev = sb.client();
    ev.call_value(
        "events.subscribe",
        serde_json::json!({"types": ["session.lifecycle", "session.restored"]}),
    )
    .expect("subscribe");
    let mut restore = sb
        .cmd(&["restore", "--json"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("ccd restore");
    let mut ready: HashSet<String> = HashSet::new();
    let mut order: Vec<String> = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    while std::time::Instant::now() < deadline {
        let Some(e) = next_event(&mut ev, Duration::from_secs(5)) else {
            continue;
        };
        let sid = e["session"].as_str().unwrap_or("").to_string();
        if !want.contains(&sid) {
            continue;
        }
        let kind = e["type"].as_str().unwrap_or("").to_string();
        let status = e["status"].as_str().unwrap_or("").to_string();
        order.push(format!("{kind} {sid} {status}"));
        if kind == "session.restored" {
            break;
        }
        if matches!(status.as_str(), "ready" | "idle") {
            ready.insert(sid);
        }
    }
    let _ = restore.wait();
    assert_eq!(
        ready,
        want,
        "both at their prompt before the first settle check ended: {order:#?}\n{}",
        sb.logs()
            .lines()
            .filter(|l| l.contains("restor"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    for s in &started {
        check_back(&sb, s);
    }
}

#[test]
fn a_daemon_restart_is_no_reboot_but_every_holder_gone_is() {
    let mut sb = Sandbox::new();
    sb.set_env("CCD_TEST_BOOT_ID", "boot-1");
    let dirs = folders(&sb, 2);
    let started: Vec<Started> = dirs
        .iter()
        .enumerate()
        .map(|(i, d)| start(&sb, d, i, "plan"))
        .collect();
    wait_turns(&sb, &started);
    let (a, b) = (started[0].sid.clone(), started[1].sid.clone());
    let want: HashSet<String> = [a.clone(), b.clone()].into();
    wait_for(Duration::from_secs(20), "the record", || {
        (recorded_sessions(&record(&sb), "held") == want).then_some(())
    });
    // The daemon alone dies: its holders are adopted, nothing is lost.
    let daemon = sb.daemon_pid().expect("daemon");
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(daemon as i32),
        nix::sys::signal::Signal::SIGKILL,
    );
    wait_for(Duration::from_secs(10), "daemon gone", || {
        ccd_testkit::procs::gone(daemon).then_some(())
    });
    let _ = sb.client_or_start();
    assert_eq!(row(&sb, &a)["state"], "live");
    assert!(recorded_sessions(&record(&sb), "lost").is_empty());
    // Every process gone on the same boot (no exit recorded): lost.
    sb.simulate_reboot(&[], "boot-1");
    let _ = sb.client_or_start();
    assert_eq!(recorded_sessions(&record(&sb), "lost"), want);
    assert_eq!(row(&sb, &a)["ccd"]["lifecycle"], "lost");
    // Attaching a lost one resumes it with its recorded flags too.
    let r = sb
        .client()
        .call_value("session.attach", serde_json::json!({"session": a}))
        .expect("attach");
    assert_eq!(r["resumed"], true, "{r}");
    check_back(&sb, &started[0]);
    assert_eq!(recorded_sessions(&record(&sb), "lost"), [b.clone()].into());
    assert_eq!(row(&sb, &b)["ccd"]["lifecycle"], "lost");
}

#[test]
fn a_garbage_record_is_moved_aside_and_reported_never_fatal() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(&sb.state).expect("state");
    std::fs::write(
        sb.state.join("held.json"),
        b"{\"version\":1,\"held\":[{\"hol",
    )
    .expect("garbage");
    let sid = sb.new_session("a");
    assert_eq!(row(&sb, &sid)["state"], "live");
    assert!(sb.state.join("held.json.bad").exists(), "moved aside");
    let logs = sb.logs_with(&["restore record is unreadable"]);
    assert!(logs.contains("restore record is unreadable"), "{logs}");
    wait_for(Duration::from_secs(20), "a new record", || {
        recorded_sessions(&record(&sb), "held")
            .contains(&sid)
            .then_some(())
    });
    // `ccd doctor` reports the record moved aside, with what to do.
    let out = sb.run(&["doctor", "--json"]);
    let checks: Value = serde_json::from_slice(&out.stdout).expect("doctor's JSON");
    let restore: Vec<&Value> = checks
        .as_array()
        .expect("checks")
        .iter()
        .filter(|c| c["check"] == "restore")
        .collect();
    let moved = |c: &&Value| {
        c["status"] == "warn" && c["message"].as_str().unwrap_or("").contains("moved aside")
    };
    assert!(restore.iter().any(moved), "{checks:#}");
    assert!(
        restore.iter().any(|c| c["status"] == "ok"),
        "the new record reads: {checks:#}"
    );
}

/// SIGKILL of the daemon and the holders at random moments while sessions
/// start, change and end: the record always parses and names only
/// sessions that existed.
#[test]
fn the_record_survives_sigkill_at_any_moment() {
    let mut sb = Sandbox::new();
    sb.set_env("CCD_TEST_BOOT_ID", "boot-1");
    let mut made: HashSet<String> = HashSet::new();
    let mut rng = 0x9e37_79b9_u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for round in 0..6 {
        let _ = sb.client_or_start();
        let env = sb.env.clone();
        let work = sb.work.clone();
        let bin = ccd_bin();
        // Sessions start, change conversation and end in the background.
        let churn = std::thread::spawn(move || {
            let mut ids = Vec::new();
            for i in 0..4 {
                let p = work.join(format!("r{round}-{i}"));
                let _ = std::fs::create_dir_all(&p);
                let o = ccd_testkit::sandbox::command(
                    &bin,
                    &["new", "--detach", "--cwd", p.to_str().unwrap_or("/")],
                    &env,
                )
                .output();
                if let Ok(o) = o {
                    let sid = String::from_utf8_lossy(&o.stdout).trim().to_string();
                    if !sid.is_empty() {
                        ids.push(sid.clone());
                        let _ =
                            ccd_testkit::sandbox::command(&bin, &["send", &sid, "/clear"], &env)
                                .output();
                        if i % 2 == 0 {
                            let _ =
                                ccd_testkit::sandbox::command(&bin, &["kill", &sid], &env).output();
                        }
                    }
                }
            }
            ids
        });
        std::thread::sleep(Duration::from_millis(300 + next() % 2500));
        for p in sb.processes(&[]) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(p as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let ids = churn.join().expect("churn");
        made.extend(ids);
        // Conversations a /clear started are sessions that existed too.
        for e in std::fs::read_dir(sb.config.join("projects"))
            .into_iter()
            .flatten()
            .flatten()
        {
            for f in std::fs::read_dir(e.path()).into_iter().flatten().flatten() {
                if let Some(id) = f
                    .file_name()
                    .to_str()
                    .and_then(|n| n.strip_suffix(".jsonl"))
                {
                    made.insert(id.to_string());
                }
            }
        }
        for (k, v) in std::fs::read_dir(sb.config.join("sessions"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| std::fs::read_to_string(e.path()).ok())
            .filter_map(|t| serde_json::from_str::<Value>(&t).ok())
            .filter_map(|v| Some((v["sessionId"].as_str()?.to_string(), v)))
            .collect::<HashMap<_, _>>()
        {
            let _ = v;
            made.insert(k);
        }
        // And every id the daemon or a holder logged starting (a `ccd new`
        // killed before its reply printed none).
        for e in std::fs::read_dir(&sb.state).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with("held.json") {
                continue;
            }
            let text = std::fs::read_to_string(e.path()).unwrap_or_default();
            made.extend(uuids(&text));
        }
        let path = sb.state.join("held.json");
        if path.exists() {
            let text = std::fs::read(&path).expect("read");
            let r: ccd_protocol::methods::session::HeldRecord = serde_json::from_slice(&text)
                .unwrap_or_else(|e| panic!("round {round}: the record parses: {e}"));
            for e in r.held.iter().chain(&r.lost) {
                assert!(
                    made.contains(&e.session),
                    "round {round}: {} existed ({made:?})",
                    e.session
                );
            }
        }
        let _ = std::fs::remove_dir_all(&sb.sock);
    }
}

/// The UUIDs (8-4-4-4-12 hex) in `text`.
fn uuids(text: &str) -> Vec<String> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i + 36 <= b.len() {
        let w = &b[i..i + 36];
        let ok = w.iter().enumerate().all(|(j, c)| match j {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        });
        if ok {
            out.push(String::from_utf8_lossy(w).into_owned());
            i += 36;
        } else {
            i += 1;
        }
    }
    out
}
