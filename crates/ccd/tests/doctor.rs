//! `ccd doctor` on a healthy and on a drifted machine.

mod common;

use common::Sandbox;
use serde_json::{json, Value};

fn doctor(sb: &Sandbox) -> (bool, Vec<Value>) {
    let o = sb.run(&["doctor", "--json"]);
    let v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stdout)));
    (o.status.success(), v.as_array().unwrap().clone())
}

#[test]
fn healthy_then_drifted() {
    let sb = Sandbox::new();
    let sid = sb.new_session("healthy");
    sb.ok(&["send", &sid, "a turn"]);
    common::wait_for(std::time::Duration::from_secs(20), "the transcript", || {
        ccd_claude::transcript::find_by_session_id(&sb.config.join("projects"), &sid)
    });
    let (ok, checks) = doctor(&sb);
    assert!(ok, "{checks:#?}");
    assert!(checks.iter().all(|c| c["status"] == "ok"), "{checks:#?}");
    let daemon = checks.iter().find(|c| c["check"] == "daemon").unwrap();
    assert!(daemon["message"].as_str().unwrap().contains("running"));

    // Drift: a registry entry without procStart and with an unknown status,
    // a transcript with a new record kind and no usage.
    ccd_testkit::gen::write_registry_entry(
        &sb.config,
        &json!({"pid": 4_000_123, "sessionId": "x", "status": "dozing"}),
    );
    let p = sb.config.join("projects/-drift");
    std::fs::create_dir_all(&p).unwrap();
    std::fs::write(
        p.join("d.jsonl"),
        "{\"type\":\"user\",\"message\":{\"content\":\"hi\"}}\n{\"type\":\"assistant\",\"message\":{\"model\":\"m\"}}\n{\"type\":\"hologram\"}\n",
    )
    .unwrap();
    let (_, checks) = doctor(&sb);
    let warn = |needle: &str| {
        checks.iter().any(|c| {
            c["status"] == "warn"
                && c["message"].as_str().unwrap_or("").contains(needle)
                && c["file"].as_str().is_some()
                && c["fix"].as_str().is_some()
        })
    };
    assert!(warn("lacks `procStart`"), "{checks:#?}");
    assert!(warn("\"dozing\""), "{checks:#?}");
    assert!(warn("\"hologram\""), "{checks:#?}");
    assert!(warn("no `message.usage`"), "{checks:#?}");

    // A socket dir that is not private is an error, with the fix.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&sb.sock, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (ok, checks) = doctor(&sb);
    assert!(!ok);
    let s = checks.iter().find(|c| c["check"] == "socket").unwrap();
    assert_eq!(s["status"], "error");
    assert!(s["fix"].as_str().unwrap().starts_with("chmod 700"));
    std::fs::set_permissions(&sb.sock, std::fs::Permissions::from_mode(0o700)).unwrap();
}

/// On a full disk a log opens for append but cannot be written: doctor
/// writes and syncs a probe. The probe's name is a link to /dev/full here
/// (every write: ENOSPC), which no test can otherwise make without mounting.
#[test]
fn logs_on_a_full_disk_are_not_writable() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(&sb.state).unwrap();
    std::fs::write(sb.state.join("ccd.2025-01-01.log"), "old\n").unwrap();
    std::os::unix::fs::symlink("/dev/full", sb.state.join(".doctor-probe")).unwrap();
    let (_, checks) = doctor(&sb);
    let logs = checks.iter().find(|c| c["check"] == "logs").unwrap();
    assert_eq!(logs["status"], "warn", "{logs}");
    let msg = logs["message"].as_str().unwrap();
    assert_eq!(msg.matches("No space left on device").count(), 1, "{msg}");
}

/// A claude of a version ccd was not verified against is a warning (not
/// ok, and not a failure: doctor fails on errors only), naming the
/// verified versions and how to pin one; a verified one is ok and names
/// them too.
#[test]
fn an_unverified_cli_version_is_a_warning() {
    for (version, status) in [("2.1.999", "warn"), ("1.0.3", "warn"), ("2.1.173", "ok")] {
        let sb = Sandbox::with_env(&[("FAKE_CLAUDE_VERSION", version)]);
        let (ok, checks) = doctor(&sb);
        let c = checks.iter().find(|c| c["check"] == "claude").unwrap();
        assert_eq!(c["status"], status, "{version}: {c}");
        let msg = c["message"].as_str().unwrap();
        assert!(
            msg.contains(&format!("is {version} (Claude Code)")),
            "{msg}"
        );
        assert!(msg.contains("2.1.173, 2.1.332"), "{msg}");
        let others_fail = checks
            .iter()
            .any(|c| c["check"] != "claude" && c["status"] == "error");
        assert_eq!(ok, !others_fail, "{checks:#?}");
        if status == "warn" {
            assert!(msg.contains("may misread"), "{msg}");
            let fix = c["fix"].as_str().unwrap();
            assert!(
                fix.contains("npm install -g @anthropic-ai/claude-code@2.1.332"),
                "{fix}"
            );
            let text = sb.run(&["doctor"]);
            let text = String::from_utf8_lossy(&text.stdout);
            assert!(
                text.lines()
                    .any(|l| l.starts_with("[warn] claude") && l.contains(version)),
                "{text}"
            );
        } else {
            assert!(c.get("fix").is_none(), "{c}");
        }
    }
}
