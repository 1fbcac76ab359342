//! The retention guard (issue 56 item 4) with the fake claude: `ccd ls`
//! says in one line how many conversations the next start of `claude`
//! deletes, and only when something is at risk now or within a week;
//! `ccd doctor` names each one. (What the real CLI's sweep deletes is
//! proven in `real_cli_retention.rs`.)

mod common;

use common::Sandbox;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

const DAY: Duration = Duration::from_secs(86_400);

/// A dead conversation's transcript in `cwd`'s project folder, last
/// written `days` ago.
fn plant(sb: &Sandbox, cwd: &Path, sid: &str, days: u32) -> PathBuf {
    let dir = sb
        .config
        .join("projects")
        .join(ccd_claude::slug::slug(cwd.to_str().unwrap()));
    fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{sid}.jsonl"));
    let record = serde_json::json!({
        "type": "user", "sessionId": sid, "cwd": cwd, "uuid": format!("u-{sid}"),
        "parentUuid": null, "timestamp": "2026-01-01T00:00:00.000Z",
        "message": {"role": "user", "content": "planted"},
    });
    fs::write(&path, format!("{record}\n")).unwrap();
    File::open(&path)
        .unwrap()
        .set_modified(SystemTime::now() - DAY * days)
        .unwrap();
    path
}

fn ls_stderr(sb: &Sandbox, args: &[&str]) -> String {
    let o = sb.run(args);
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn ls_notices_conversations_the_sweep_deletes_and_is_quiet_otherwise() {
    let sb = Sandbox::new();
    let cwd = sb.project("p");
    plant(&sb, &cwd, "aaaaaaaa-0000-4000-8000-000000000001", 2);
    let quiet = ls_stderr(&sb, &["ls"]);
    assert!(
        !quiet.contains("cleanupPeriodDays") && !quiet.contains("deletes"),
        "{quiet}"
    );

    plant(&sb, &cwd, "aaaaaaaa-0000-4000-8000-000000000002", 26);
    let soon = ls_stderr(&sb, &["ls"]);
    assert!(
        soon.contains("1 conversation will be older than cleanupPeriodDays (30) within 7 days"),
        "{soon}"
    );

    plant(&sb, &cwd, "aaaaaaaa-0000-4000-8000-000000000003", 40);
    plant(&sb, &cwd, "aaaaaaaa-0000-4000-8000-000000000004", 45);
    let now = ls_stderr(&sb, &["ls"]);
    let lines: Vec<&str> = now.lines().filter(|l| l.contains("deletes")).collect();
    assert_eq!(
        lines,
        ["ccd: the next start of claude deletes 2 conversations older than 30 days (1 more within 7 days): ccd doctor lists them; ccd archive --older-than 25d keeps them"],
        "{now}"
    );
    // Scripts read JSON: no notice there.
    assert!(!ls_stderr(&sb, &["ls", "--json"]).contains("deletes"));

    // Doctor names each one, oldest first, and the setting's source.
    let doctor = sb.ok(&["doctor"]);
    let at_risk: Vec<&str> = doctor
        .lines()
        .filter(|l| l.contains("is deleted by the next start of claude"))
        .collect();
    assert_eq!(at_risk.len(), 2, "{doctor}");
    assert!(
        at_risk[0].contains("aaaaaaaa") && at_risk[0].contains("45 days ago"),
        "{doctor}"
    );
    assert!(
        doctor.contains("[warn] retention  cleanupPeriodDays is 30 (Claude Code's default"),
        "{doctor}"
    );

    // A long setting in the user settings: quiet, and doctor says it is fine.
    fs::write(
        sb.config.join("settings.json"),
        r#"{"cleanupPeriodDays": 3650}"#,
    )
    .unwrap();
    let kept = ls_stderr(&sb, &["ls"]);
    assert!(
        !kept.contains("deletes") && !kept.contains("within"),
        "{kept}"
    );
    let doctor = sb.ok(&["doctor"]);
    assert!(
        doctor.contains("[ok  ] retention  cleanupPeriodDays is 3650 (set in"),
        "{doctor}"
    );
}
