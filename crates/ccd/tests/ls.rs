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

/// `ccd ls` with its own socket and state folders under `home` (no other
/// daemon on the machine is asked).
fn ccd_alone(home: &Path, config: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ccd"))
        .args(args)
        .arg("--claude-config-dir")
        .arg(config)
        .env("HOME", home)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CCD_CONFIG")
        .env_remove("CCD_LOG")
        .env("CCD_SOCKET_DIR", home.join("sock"))
        .env("CCD_STATE_DIR", home.join("state"))
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .output()
        .unwrap()
}

/// On a machine with no session yet `ccd ls` says how to start one (on
/// stderr, with no lone header), `--json` stays `[]`, and with a filter it
/// says the filter left none.
#[test]
fn an_empty_machine_says_how_to_start_a_session() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("cc");
    let text = |o: &Vec<u8>| String::from_utf8_lossy(o).into_owned();
    let out = ccd_alone(home.path(), &config, &["ls"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "");
    let err = text(&out.stderr);
    assert!(
        err.contains("no Claude Code sessions on this machine yet")
            && err.contains("`ccd new --cwd DIR`"),
        "{err}"
    );
    let out = ccd_alone(home.path(), &config, &["ls", "--json"]);
    assert!(json(&out).is_empty());
    assert_eq!(text(&out.stderr), "");
    let out = ccd_alone(home.path(), &config, &["ls", "--live"]);
    assert!(out.status.success());
    assert!(
        text(&out.stderr).contains("no session matches"),
        "{}",
        text(&out.stderr)
    );
}

/// Wide (CJK, emoji) and zero-width characters in cwds and titles: every
/// row's TITLE starts at the header's display column, and a long title is
/// cut at a display width.
#[test]
fn the_table_is_aligned_by_display_width() {
    use ccd_testkit::gen::TranscriptWriter;
    use unicode_width::UnicodeWidthStr;
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("cc");
    let cwds = [
        "/w/plain",
        "/w/日本語のフォルダ",
        "/w/🚀rocket🚀",
        "/w/a\u{200b}b\u{200b}c\u{200b}d\u{301}",
    ];
    for (n, cwd) in cwds.iter().enumerate() {
        let mut w = TranscriptWriter::create(&config, &ccd_testkit::gen::sid(n as u64 + 1), cwd);
        let title = if n == 1 {
            format!("title-{n} {}", "長い題名".repeat(30))
        } else {
            format!("title-{n} 🚀 x")
        };
        w.turn(&title, 1000, 10);
    }
    let out = ccd_alone(home.path(), &config, &["ls"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), cwds.len() + 1, "{text}");
    let column = |l: &str, needle: &str| {
        let at = l.find(needle).unwrap_or_else(|| panic!("{needle} in {l}"));
        l[..at].width()
    };
    let title_at = column(lines[0], "TITLE");
    for l in &lines[1..] {
        assert_eq!(column(l, "title-"), title_at, "misaligned:\n{text}");
        let title = &l[l.find("title-").unwrap()..];
        assert!(title.width() <= 60, "{title}");
    }
    let long = lines.iter().find(|l| l.contains("title-1")).unwrap();
    assert!(long.ends_with('…'), "{long}");
    assert!(long.contains("長い題名"), "{long}");
}

/// Live sessions of a CLI version ccd was not verified against: the table
/// says it once on stderr, naming the versions; `--json` marks each row.
#[test]
fn an_unverified_cli_version_is_said_once() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("cc");
    let mut children = Vec::new();
    for (sid, version) in [
        ("new-a", "2.1.999"),
        ("new-b", "2.1.999"),
        ("old-c", "1.0.3"),
        ("good-d", "2.1.332"),
    ] {
        let child = Reaped(Command::new("sleep").arg("60").spawn().unwrap());
        let pid = child.0.id();
        let start = ccd_claude::liveness::current_proc_start(pid).unwrap();
        transcript(&config, sid, "/home/dev/v", 1);
        let mut e = registry_entry(pid, sid, "/home/dev/v", &start, None);
        e["version"] = version.into();
        write_registry_entry(&config, &e);
        children.push(child);
    }
    transcript(&config, "dead-e", "/home/dev/v", 1);

    let out = ccd_alone(home.path(), &config, &["ls"]);
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    let notes: Vec<&str> = err.lines().filter(|l| l.contains("unverified")).collect();
    assert_eq!(notes.len(), 1, "{err}");
    assert!(
        notes[0].contains("Claude Code 1.0.3, 2.1.999 running"),
        "{err}"
    );
    assert!(notes[0].contains("2.1.173, 2.1.332"), "{err}");
    assert!(notes[0].contains("ccd doctor"), "{err}");

    let out = ccd_alone(home.path(), &config, &["ls", "--json"]);
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("unverified"),
        "{out:?}"
    );
    let rows = json(&out);
    let verified =
        |sid: &str| rows.iter().find(|r| r["session_id"] == sid).unwrap()["cli_verified"].clone();
    assert_eq!(verified("new-a"), Value::Bool(false));
    assert_eq!(verified("old-c"), Value::Bool(false));
    assert_eq!(verified("good-d"), Value::Bool(true));
    assert_eq!(verified("dead-e"), Value::Null);

    // Every live one verified: nothing said.
    drop(children.drain(..2));
    drop(children.remove(0));
    let out = ccd_alone(home.path(), &config, &["ls"]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("unverified"),
        "{out:?}"
    );
}
