//! Claude Code's retention sweep, proven on the REAL CLI of each pinned
//! version (issue 56; docs/claude-cli-compat.md, "The retention sweep"):
//! conversations whose transcript was last written more than
//! `cleanupPeriodDays` ago (30 by default) are deleted when `claude` starts,
//! with their sidecar folder, file history, todos, session env and tasks;
//! what decides age is the file's mtime, not the records' timestamps.
//!
//! Each case plants conversations in a sandbox config dir, asks `ccd doctor
//! --json` which the next start would delete, runs `claude -p` once
//! (against `ccd-mock-api`, slowed so the run outlives the CLI's 5 s
//! housekeeping delay) and compares what is gone with the prediction.
//!
//! When the CLI cannot be installed: with `$CI` set the test fails; else it
//! prints "SKIPPED: …" and passes.

mod common;

use common::real::{self, MockApi, MockUsage};
use serde_json::Value;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

const DAY: Duration = Duration::from_secs(86_400);

/// Sets a file's or folder's mtime to `days` ago.
fn age(path: &Path, days: u64) {
    let when = SystemTime::now() - DAY * days as u32;
    File::open(path)
        .and_then(|f| f.set_modified(when))
        .unwrap_or_else(|e| panic!("setting the mtime of {}: {e}", path.display()));
}

/// Every path under `root`, relative, sorted.
fn tree(root: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            out.push(p.strip_prefix(root).unwrap().display().to_string());
            if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                walk(root, &p, out);
            }
        }
    }
    let mut out = vec![];
    walk(root, root, &mut out);
    out.sort();
    out
}

/// One planted conversation: its transcript and every sidecar the CLI keeps
/// per session, all last written `days` ago. The records' own timestamps are
/// always from 2020, so only the mtime can tell ages apart.
fn plant(config: &Path, cwd: &Path, sid: &str, days: u64) -> Vec<PathBuf> {
    let proj = config
        .join("projects")
        .join(ccd_claude::slug::slug(cwd.to_str().unwrap()));
    let record = serde_json::json!({
        "type": "user", "sessionId": sid, "cwd": cwd, "uuid": format!("u-{sid}"),
        "parentUuid": null, "isSidechain": false, "userType": "external", "version": "2.1.173",
        "timestamp": "2020-01-01T00:00:00.000Z",
        "message": {"role": "user", "content": format!("planted {sid}")},
    });
    let side = proj.join(sid);
    let mut files = vec![];
    let mut write = |p: PathBuf, text: String| {
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(&p, text).unwrap();
        files.push(p);
    };
    write(proj.join(format!("{sid}.jsonl")), format!("{record}\n"));
    write(side.join("subagents/agent-a1.jsonl"), format!("{record}\n"));
    write(side.join("tool-results/t1.txt"), "out\n".into());
    write(
        config.join("file-history").join(sid).join("abc@v1"),
        "v1".into(),
    );
    write(
        config.join("todos").join(format!("{sid}-agent-{sid}.json")),
        "[]".into(),
    );
    write(config.join("session-env").join(sid).join("env"), "".into());
    write(config.join("tasks").join(sid).join("1.json"), "{}".into());
    let mut dirs = vec![
        side.join("subagents"),
        side.join("tool-results"),
        side.clone(),
        config.join("file-history").join(sid),
        config.join("session-env").join(sid),
        config.join("tasks").join(sid),
    ];
    for p in files.iter().chain(dirs.iter()) {
        age(p, days);
    }
    files.append(&mut dirs);
    files
}

struct Case {
    settings: Option<&'static str>,
    /// (days since last written, deleted?)
    planted: &'static [(u64, bool)],
}

fn run_case(version: &str, claude: &Path, case: &Case) {
    let mock = MockApi::start_with_delay(
        MockUsage {
            input: 10,
            cache_creation: 0,
            cache_read: 0,
            output: 5,
        },
        2000,
    );
    let sb = real::sandbox(&mock, claude, version);
    let cwd = sb.project("kept-proj");
    if let Some(s) = case.settings {
        fs::write(sb.config.join("settings.json"), s).unwrap();
    }
    let mut expect_gone = vec![];
    let mut expect_kept = vec![];
    for (i, &(days, gone)) in case.planted.iter().enumerate() {
        let sid = format!("{:08}-1111-4111-8111-{:012}", days, i);
        let paths = plant(&sb.config, &cwd, &sid, days);
        if gone {
            expect_gone.push((sid, paths));
        } else {
            expect_kept.push((sid, paths));
        }
    }

    // ccd's prediction, before the CLI starts.
    let doctor: Value = serde_json::from_str(&sb.ok(&["doctor", "--json"])).unwrap();
    let mut predicted: Vec<String> = doctor
        .as_array()
        .unwrap_or_else(|| panic!("[{version}] ccd doctor --json: {doctor}"))
        .iter()
        .filter(|c| c["check"] == "retention")
        .filter_map(|c| c["session_id"].as_str().map(String::from))
        .collect();
    predicted.sort();
    let summary = doctor
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "retention" && c["session_id"].is_null())
        .unwrap_or_else(|| panic!("[{version}] no retention summary: {doctor}"));
    let low = case.settings.is_none_or(|s| !s.contains("3650"));
    assert_eq!(
        summary["status"],
        if low { "warn" } else { "ok" },
        "[{version}] {summary}"
    );
    let mut want: Vec<String> = expect_gone.iter().map(|(s, _)| s.clone()).collect();
    want.sort();
    assert_eq!(
        predicted, want,
        "[{version}] {:?}: ccd doctor's at-risk list",
        case.settings
    );

    let before = tree(&sb.config);
    let mut cmd = Command::new(claude);
    cmd.args(["-p", "hello"])
        .current_dir(&cwd)
        .stdin(Stdio::null())
        .env_remove("XDG_RUNTIME_DIR");
    for (k, v) in sb.env.iter() {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "[{version}] claude -p: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let after = tree(&sb.config);
    let gone: Vec<&String> = before.iter().filter(|p| !after.contains(p)).collect();
    for (sid, paths) in &expect_gone {
        for p in paths {
            assert!(
                !p.exists(),
                "[{version}] {:?}: {} of {sid} survived the sweep; gone: {gone:#?}",
                case.settings,
                p.display()
            );
        }
    }
    for (sid, paths) in &expect_kept {
        for p in paths {
            assert!(
                p.exists(),
                "[{version}] {:?}: {} of {sid} was deleted; gone: {gone:#?}",
                case.settings,
                p.display()
            );
        }
    }
}

fn one_version(version: &str) {
    let Some(claude) = real::claude_or_skip(version) else {
        return;
    };
    let cases = [
        // The default (30 days): 40 days old goes, 10 days and fresh stay.
        Case {
            settings: None,
            planted: &[(40, true), (10, false), (0, false)],
        },
        // A low explicit setting: 10 days old goes too.
        Case {
            settings: Some(r#"{"cleanupPeriodDays": 7}"#),
            planted: &[(40, true), (10, true), (0, false)],
        },
        // A high one keeps everything.
        Case {
            settings: Some(r#"{"cleanupPeriodDays": 3650}"#),
            planted: &[(400, false), (40, false), (0, false)],
        },
    ];
    for case in &cases {
        run_case(version, &claude, case);
    }
}

#[test]
fn the_sweep_deletes_what_ccd_predicts_on_each_pinned_cli() {
    let handles: Vec<_> = real::versions()
        .into_iter()
        .map(|v| std::thread::spawn(move || one_version(&v)))
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}
