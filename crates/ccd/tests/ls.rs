//! `ccd ls` end to end through the built binary, on fixture config dirs in
//! temp folders (never the machine's real ~/.claude: HOME is a temp dir too).

use ccd_testkit::gen::{registry_entry, transcript, write_registry_entry};
use serde_json::Value;
use std::path::Path;
use std::process::{Child, Command, Output};

fn ccd(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ccd"))
        .args(args)
        .env("HOME", home)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CCD_CONFIG")
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .output()
        .unwrap()
}

fn json(out: &Output) -> Vec<Value> {
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice::<Value>(&out.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

struct Reaped(Child);
impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn json_listing_of_a_fixture_config_dir() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("claude-config");
    let projects = config.join("projects").join("-home-dev-plain");
    std::fs::create_dir_all(&projects).unwrap();
    std::fs::write(
        projects.join("9cc17429-452c-4d23-84b4-86e7b2683de6.jsonl"),
        ccd_testkit::fixtures::read("transcript-2.1.332.jsonl"),
    )
    .unwrap();
    transcript(&config, "older-dead", "/home/dev/other", 1);
    // a live session: a real process with a matching entry
    let child = Reaped(Command::new("sleep").arg("60").spawn().unwrap());
    let pid = child.0.id();
    let start = ccd_claude::liveness::current_proc_start(pid).unwrap();
    transcript(&config, "live-sess", "/home/dev/live", 3);
    write_registry_entry(
        &config,
        &registry_entry(pid, "live-sess", "/home/dev/live", &start, None),
    );
    std::fs::write(config.join("sessions/77.json"), b"{garbage").unwrap();

    let out = ccd(
        home.path(),
        &[
            "ls",
            "--json",
            "--claude-config-dir",
            config.to_str().unwrap(),
        ],
    );
    let rows = json(&out);
    assert_eq!(rows.len(), 3, "{rows:#?}");
    for r in &rows {
        for key in [
            "session_id",
            "state",
            "pid",
            "cwd",
            "status",
            "last_activity",
            "context_tokens",
            "context_percent",
            "title",
            "transcript",
        ] {
            assert!(r.get(key).is_some(), "missing {key} in {r}");
        }
    }
    let fixture = rows
        .iter()
        .find(|r| r["session_id"] == "9cc17429-452c-4d23-84b4-86e7b2683de6")
        .unwrap();
    assert_eq!(fixture["state"], "dead");
    assert_eq!(fixture["pid"], Value::Null);
    assert_eq!(fixture["status"], Value::Null);
    assert_eq!(fixture["cwd"], "/home/dev/plain");
    assert_eq!(fixture["title"], "munge test 0");
    assert_eq!(fixture["context_tokens"], 1234);
    assert_eq!(fixture["context_percent"], 0.6);
    assert_eq!(fixture["context_window"]["source"], "default");
    assert_eq!(fixture["last_activity"], "2026-11-29T18:57:52.278Z");
    assert!(fixture["transcript"].as_str().unwrap().ends_with(".jsonl"));
    let live = rows
        .iter()
        .find(|r| r["session_id"] == "live-sess")
        .unwrap();
    assert_eq!(live["state"], "live");
    assert_eq!(live["pid"], pid);
    assert_eq!(live["status"], "idle");

    // --live keeps only the live one
    let live_only = json(&ccd(
        home.path(),
        &[
            "ls",
            "--json",
            "--live",
            "--claude-config-dir",
            config.to_str().unwrap(),
        ],
    ));
    assert_eq!(live_only.len(), 1);
    assert_eq!(live_only[0]["session_id"], "live-sess");

    // --cwd includes subfolders, normalized (trailing slash, dot segments)
    let under = json(&ccd(
        home.path(),
        &[
            "ls",
            "--json",
            "--cwd",
            "/home/dev/./",
            "--claude-config-dir",
            config.to_str().unwrap(),
        ],
    ));
    assert_eq!(under.len(), 3);
    let one = json(&ccd(
        home.path(),
        &[
            "ls",
            "--json",
            "--cwd",
            "/home/dev/plain/",
            "--claude-config-dir",
            config.to_str().unwrap(),
        ],
    ));
    assert_eq!(one.len(), 1);
    assert!(json(&ccd(
        home.path(),
        &[
            "ls",
            "--json",
            "--cwd",
            "/home/dev/pla",
            "--claude-config-dir",
            config.to_str().unwrap()
        ],
    ))
    .is_empty());

    // the table: no colour when not a TTY, newest first, short ids
    let table = ccd(
        home.path(),
        &["ls", "--claude-config-dir", config.to_str().unwrap()],
    );
    assert!(table.status.success());
    let text = String::from_utf8(table.stdout).unwrap();
    assert!(!text.contains('\x1b'), "colour on a pipe: {text:?}");
    assert!(text.lines().next().unwrap().starts_with("ID"));
    assert!(text.contains("9cc17429 "));
    assert!(text.contains("~/") || text.contains("/home/dev"));
}

#[test]
fn config_dir_from_environment_and_missing_dir() {
    let home = tempfile::tempdir().unwrap();
    // CLAUDE_CONFIG_DIR is honoured
    let config = home.path().join("cc");
    transcript(&config, "env-sess", "/w", 1);
    let out = Command::new(env!("CARGO_BIN_EXE_ccd"))
        .args(["ls", "--json"])
        .env("HOME", home.path())
        .env("CLAUDE_CONFIG_DIR", &config)
        .output()
        .unwrap();
    let rows = json(&out);
    assert_eq!(rows[0]["session_id"], "env-sess");
    // HOME/.claude by default; missing → empty list, exit 0
    let out = ccd(home.path(), &["ls", "--json"]);
    assert!(json(&out).is_empty());
    let out = ccd(home.path(), &["ls"]);
    assert!(out.status.success());
}

#[test]
fn context_window_override_from_config_file() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("cc");
    transcript(&config, "s", "/w", 1);
    let cfg = home.path().join("ccd.toml");
    std::fs::write(&cfg, "[context_windows]\n\"claude-opus\" = 1000000\n").unwrap();
    let rows = json(&ccd(
        home.path(),
        &[
            "ls",
            "--json",
            "--config",
            cfg.to_str().unwrap(),
            "--claude-config-dir",
            config.to_str().unwrap(),
        ],
    ));
    assert_eq!(rows[0]["context_window"]["tokens"], 1_000_000);
    assert_eq!(rows[0]["context_window"]["source"], "config");
    // a broken config file is a clear error naming the file
    std::fs::write(&cfg, "context_windows = 3").unwrap();
    let out = ccd(
        home.path(),
        &[
            "ls",
            "--config",
            cfg.to_str().unwrap(),
            "--claude-config-dir",
            config.to_str().unwrap(),
        ],
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("ccd.toml"));
}
