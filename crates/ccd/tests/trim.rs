//! `ccd trim` through the daemon, with the fake claude: live sessions are
//! refused (file byte-identical), a writer appearing mid-trim leaves the
//! original, `--undo` is byte-exact, `--dry-run` reports by record type.

mod common;

use common::external::{external, resumed_outside};
use common::{wait_for, Sandbox};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

const T: Duration = Duration::from_secs(20);

/// A dead session whose transcript is a real 2.1.332 recording (the
/// session id replaced): returns (sid, transcript path, bytes).
fn dead_recorded(sb: &Sandbox, name: &str) -> (String, PathBuf, Vec<u8>) {
    let sid = uuid();
    let cwd = sb.project(&format!("rec-{}", &sid[..8]));
    let text = String::from_utf8(ccd_testkit::fixtures::read(name)).unwrap();
    let old = text
        .lines()
        .find_map(|l| {
            serde_json::from_str::<Value>(l).ok()?["sessionId"]
                .as_str()
                .map(String::from)
        })
        .unwrap();
    let text = text.replace(&old, &sid);
    let dir = sb
        .config
        .join("projects")
        .join(ccd_claude::slug::slug(cwd.to_str().unwrap()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(format!("{sid}.jsonl"));
    std::fs::write(&p, &text).unwrap();
    (sid, p, text.into_bytes())
}

fn uuid() -> String {
    let b: [u8; 16] = rand_bytes();
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-4{}-a{}-{}",
        &h[0..8],
        &h[8..12],
        &h[13..16],
        &h[17..20],
        &h[20..32]
    )
}

/// 16 random bytes: the kernel's uuid on Linux, `rand` elsewhere.
#[cfg(not(target_os = "linux"))]
fn rand_bytes() -> [u8; 16] {
    rand::random()
}

#[cfg(target_os = "linux")]
fn rand_bytes() -> [u8; 16] {
    let mut b = [0u8; 16];
    let f = std::fs::read("/proc/sys/kernel/random/uuid").unwrap();
    let s: String = String::from_utf8(f)
        .unwrap()
        .chars()
        .filter(char::is_ascii_hexdigit)
        .collect();
    for (i, x) in b.iter_mut().enumerate() {
        *x = u8::from_str_radix(&s[i * 2..i * 2 + 2], 16).unwrap();
    }
    b
}

fn trim_json(sb: &Sandbox, args: &[&str]) -> (bool, Value, String) {
    let mut a = vec!["trim"];
    a.extend_from_slice(args);
    a.push("--json");
    let o = sb.run(&a);
    let v = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    (
        o.status.success(),
        v,
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn dry_run_reports_by_type_and_changes_nothing() {
    let sb = Sandbox::new();
    let (sid, p, bytes) = dead_recorded(&sb, "transcript-background-bash-2.1.332-settled.jsonl");
    let out = sb.ok(&["trim", &sid[..8], "--dry-run"]);
    assert!(out.contains("would drop"), "{out}");
    for kind in [
        "api-request-shape",
        "api-request-blob",
        "attachment:prompt_snapshot",
        "atis-latch",
    ] {
        assert!(
            out.lines().any(|l| l.trim_start().starts_with(kind)),
            "{kind} missing:\n{out}"
        );
    }
    assert_eq!(
        std::fs::read(&p).unwrap(),
        bytes,
        "a dry run writes nothing"
    );
    let (ok, v, err) = trim_json(&sb, &[&sid, "--dry-run"]);
    assert!(ok, "{err}");
    assert_eq!(v["dry_run"], true);
    let shape = v["dropped"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["kind"] == "api-request-shape")
        .unwrap();
    assert_eq!(shape["records"], 1);
    let line = bytes
        .split(|b| *b == b'\n')
        .find(|l| {
            serde_json::from_slice::<Value>(l).is_ok_and(|v| v["type"] == "api-request-shape")
        })
        .unwrap();
    assert_eq!(shape["bytes"], line.len() as u64 + 1);
    assert_eq!(std::fs::read(&p).unwrap(), bytes);
    assert!(!sb.state.join("trim-backups").join(&sid).exists());
}

#[test]
fn trim_then_undo_is_byte_exact() {
    let sb = Sandbox::new();
    let (sid, p, bytes) = dead_recorded(&sb, "transcript-2.1.332.jsonl");
    let (ok, v, err) = trim_json(&sb, &[&sid]);
    assert!(ok, "{err}");
    let after = std::fs::read(&p).unwrap();
    assert_eq!(v["bytes_after"], after.len() as u64);
    assert!(
        after.len() < bytes.len() / 2,
        "{} → {}",
        bytes.len(),
        after.len()
    );
    let backup = PathBuf::from(v["backup"].as_str().unwrap());
    assert!(
        backup.starts_with(sb.state.join("trim-backups").join(&sid)),
        "{backup:?}"
    );
    assert_eq!(std::fs::read(&backup).unwrap(), bytes);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(backup.parent().unwrap())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);
    // The trimmed session still lists and resolves.
    let ls = sb.ok(&["ls", "--json"]);
    assert!(ls.contains(&sid));
    let doctor = String::from_utf8_lossy(&sb.run(&["doctor"]).stdout).into_owned();
    assert!(
        doctor.contains("1 original transcript(s) kept by ccd trim"),
        "{doctor}"
    );
    let out = sb.ok(&["trim", "--undo", &sid]);
    assert!(out.contains("restored the original"), "{out}");
    assert_eq!(
        std::fs::read(&p).unwrap(),
        bytes,
        "undo puts the exact bytes back"
    );
    let (ok, v, _) = trim_json(&sb, &["--undo", &sid]);
    assert!(!ok);
    assert_eq!(v["error"]["data"]["reason"], "no_backup");
}

#[test]
fn live_sessions_are_refused_and_untouched() {
    let sb = Sandbox::new();
    // Outside ccd.
    let dir = sb.project("outside");
    let ext = external(&sb, &dir);
    let before = std::fs::read(&ext.transcript).unwrap();
    let (ok, v, err) = trim_json(&sb, &[&ext.sid]);
    assert!(!ok, "a live session was trimmed");
    assert_eq!(v["error"]["data"]["reason"], "live", "{v} {err}");
    assert!(err.contains("running"), "{err}");
    assert_eq!(std::fs::read(&ext.transcript).unwrap(), before);
    let (ok, _, _) = trim_json(&sb, &[&ext.sid, "--dry-run"]);
    assert!(!ok, "dry run of a live session");
    // Held by ccd.
    let sid = sb.new_session("held");
    let _ = sb.run(&["send", &sid, "hello"]);
    let t = wait_for(T, "the held transcript", || {
        ccd_claude::transcript::find_by_session_id(&sb.config.join("projects"), &sid)
    });
    let before = std::fs::read(&t).unwrap();
    let (ok, v, err) = trim_json(&sb, &[&sid]);
    assert!(!ok);
    assert_eq!(v["error"]["data"]["reason"], "live", "{err}");
    assert!(err.contains("ccd runs it"), "{err}");
    assert_eq!(std::fs::read(&t).unwrap(), before);
}

/// Starts `ccd trim` paused between its passes (the daemon's test hook),
/// runs `meanwhile`, lets it go, returns its outcome.
fn race(sb: &Sandbox, pause: &Path, sid: &str, meanwhile: impl FnOnce()) -> (bool, Value, String) {
    let child = sb
        .cmd(&["trim", sid, "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(T, "the trim to pause", || {
        pause.join("paused").exists().then_some(())
    });
    meanwhile();
    std::fs::write(pause.join("go"), b"").unwrap();
    let o = child.wait_with_output().unwrap();
    let _ = std::fs::remove_file(pause.join("paused"));
    let _ = std::fs::remove_file(pause.join("go"));
    (
        o.status.success(),
        serde_json::from_slice(&o.stdout).unwrap_or(Value::Null),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn a_writer_appearing_mid_trim_leaves_the_original() {
    let pause = tempfile::tempdir().unwrap();
    let sb = Sandbox::with_env(&[("CCD_TEST_TRIM_PAUSE_DIR", pause.path().to_str().unwrap())]);
    // A write to the file between the passes.
    let (sid, p, bytes) = dead_recorded(&sb, "transcript-background-agent-2.1.332-settled.jsonl");
    let extra = b"{\"type\":\"mode\",\"mode\":\"normal\",\"sessionId\":\"x\"}\n";
    let (ok, v, err) = race(&sb, pause.path(), &sid, || {
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        std::io::Write::write_all(&mut f, extra).unwrap();
    });
    assert!(!ok, "trimmed while written");
    assert_eq!(v["error"]["data"]["reason"], "writer_appeared", "{v} {err}");
    assert!(err.contains("left as it was"), "{err}");
    let mut expected = bytes.clone();
    expected.extend_from_slice(extra);
    assert_eq!(
        std::fs::read(&p).unwrap(),
        expected,
        "the original and the write"
    );
    let leftovers: Vec<_> = std::fs::read_dir(p.parent().unwrap())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(leftovers.len(), 1, "{leftovers:?}");
    // A process resuming the session between the passes (it becomes live
    // before the rename).
    let dir = sb.project("resumer");
    let mut resumed = None;
    let (ok, v, err) = race(&sb, pause.path(), &sid, || {
        resumed = Some(resumed_outside(&sb, &dir, &sid));
    });
    assert!(resumed.is_some());
    assert!(!ok, "trimmed while resumed");
    assert_eq!(v["error"]["data"]["reason"], "writer_appeared", "{v} {err}");
    assert!(
        std::fs::read(&p).unwrap().starts_with(&expected),
        "the original stays (the resumed process may append)"
    );
}

/// At most two trims run at once (`MAX_CONCURRENT_TRIMS`): a third waits
/// for a turn, then runs.
#[test]
fn a_third_trim_waits_for_a_turn() {
    let pause = tempfile::tempdir().unwrap();
    let sb = Sandbox::with_env(&[("CCD_TEST_TRIM_PAUSE_DIR", pause.path().to_str().unwrap())]);
    let sessions: Vec<_> = (0..3)
        .map(|_| dead_recorded(&sb, "transcript-background-agent-2.1.332-settled.jsonl"))
        .collect();
    sb.client_or_start();
    let children: Vec<_> = sessions
        .iter()
        .map(|(sid, _, _)| {
            sb.cmd(&["trim", sid, "--json"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let paused = || {
        std::fs::read_dir(pause.path())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("paused."))
            .count()
    };
    wait_for(T, "two trims paused", || (paused() >= 2).then_some(()));
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(paused(), 2, "a third trim ran beside two");
    std::fs::write(pause.path().join("go"), b"").unwrap();
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    assert_eq!(paused(), 3);
    for (_, p, bytes) in &sessions {
        assert!(std::fs::read(p).unwrap().len() < bytes.len());
    }
}

#[test]
fn doctor_and_ls_show_sizes_and_savings() {
    let sb = Sandbox::new();
    let (sid, p, mut bytes) = dead_recorded(&sb, "transcript-2.1.332.jsonl");
    // Over doctor's 10 MB floor: request shapes, which a trim drops.
    let shape = bytes
        .split(|b| *b == b'\n')
        .find(|l| {
            serde_json::from_slice::<Value>(l).is_ok_and(|v| v["type"] == "api-request-shape")
        })
        .unwrap()
        .to_vec();
    while bytes.len() < 11 * 1024 * 1024 {
        bytes.extend_from_slice(&shape);
        bytes.push(b'\n');
    }
    std::fs::write(&p, &bytes).unwrap();
    let out = String::from_utf8_lossy(&sb.run(&["doctor"]).stdout).into_owned();
    let line = out
        .lines()
        .find(|l| l.contains("trim") && l.contains(&sid[..8]))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(line.contains("would save about 11."), "{line}");
    assert!(
        out.contains(&format!("fix: ccd trim {}", &sid[..8])) || line.starts_with("[ok"),
        "{out}"
    );
    let ls = sb.ok(&["ls"]);
    let row = ls.lines().find(|l| l.starts_with(&sid[..8])).unwrap();
    assert!(row.contains(" 11M "), "{row}");
    assert!(ls.lines().next().unwrap().contains("SIZE"));
}

#[test]
fn unknown_liveness_is_refused() {
    let sb = Sandbox::new();
    let (sid, p, bytes) = dead_recorded(&sb, "transcript-2.1.332.jsonl");
    // A registry entry naming it whose process cannot be verified (a
    // procStart of a form ccd does not know): liveness unknown.
    let entry = ccd_testkit::gen::registry_entry(std::process::id(), &sid, "/x", "x", None);
    ccd_testkit::gen::write_registry_entry(&sb.config, &entry);
    let (ok, v, err) = trim_json(&sb, &[&sid]);
    assert!(!ok, "trimmed a session of unknown liveness");
    assert_eq!(v["error"]["data"]["reason"], "live", "{v} {err}");
    assert!(err.contains("unknown"), "{err}");
    assert_eq!(std::fs::read(&p).unwrap(), bytes);
}

/// A trim killed before its rename (`kill -9`) leaves
/// `.<sid>.jsonl.ccd-trim-<pid>-<n>.tmp`, as large as the transcript,
/// beside it: the daemon removes it when it starts, and the next trim of
/// the session removes one left later; files of other names stay.
#[test]
fn a_killed_trims_temporary_file_goes_at_start_and_with_the_next_trim() {
    let sb = Sandbox::new();
    let (sid, p, bytes) = dead_recorded(&sb, "transcript-2.1.332.jsonl");
    let dir = p.parent().unwrap().to_path_buf();
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let left = |n: u32| {
        let t = dir.join(format!(".{sid}.jsonl.ccd-trim-{dead}-{n}.tmp"));
        std::fs::write(&t, &bytes[..bytes.len() / 2]).unwrap();
        t
    };
    let first = left(1);
    let others = [
        dir.join(format!(".{sid}.jsonl.ccd-trim-{dead}-1.tmp.mine")),
        dir.join(format!("{sid}.jsonl.bak")),
    ];
    for o in &others {
        std::fs::write(o, b"not ccd's").unwrap();
    }
    assert!(sb.daemon_pid().is_none());
    let _c = sb.client_or_start();
    wait_for(T, "the daemon removes the leftover at start", || {
        (!first.exists()).then_some(())
    });
    let second = left(2);
    let (ok, v, err) = trim_json(&sb, &[&sid]);
    assert!(ok, "{err}");
    assert_eq!(v["unchanged"], false);
    assert!(!second.exists(), "the trim left the leftover");
    for o in &others {
        assert!(o.exists(), "{} was removed", o.display());
    }
}
