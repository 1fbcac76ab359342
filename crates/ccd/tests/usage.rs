//! `ccd usage` end to end through the built binary, on generated config
//! dirs in temp folders (HOME, the state dir and the config file too):
//! totals by day, model and session, the date range, the config's prices,
//! the cache carried from one run to the next, hostile model names
//! sanitized, and `--host` merging another machine (an ssh stand-in
//! running the far side's ccd) while naming one that cannot be reached.

use ccd_testkit::gen::TranscriptWriter;
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

struct World {
    home: tempfile::TempDir,
}

impl World {
    fn new() -> Self {
        let w = Self {
            home: tempfile::tempdir().unwrap(),
        };
        std::fs::write(w.config_file(), "").unwrap();
        w
    }
    fn claude(&self) -> PathBuf {
        self.home.path().join("claude")
    }
    fn state(&self) -> PathBuf {
        self.home.path().join("state")
    }
    fn config_file(&self) -> PathBuf {
        self.home.path().join("ccd.toml")
    }
    fn env(&self) -> Vec<(String, String)> {
        let h = self.home.path();
        let s = |p: PathBuf| p.display().to_string();
        vec![
            ("HOME".into(), s(h.to_path_buf())),
            ("CLAUDE_CONFIG_DIR".into(), s(self.claude())),
            ("CCD_STATE_DIR".into(), s(self.state())),
            ("CCD_CONFIG".into(), s(self.config_file())),
            ("CCD_SOCKET_DIR".into(), s(h.join("sock"))),
            ("XDG_CONFIG_HOME".into(), s(h.join(".config"))),
            ("TZ".into(), "UTC".into()),
        ]
    }
    fn ccd(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_ccd"))
            .arg("usage")
            .args(args)
            .env_remove("CCD_HOST")
            .envs(self.env())
            .output()
            .unwrap()
    }
    fn json(&self, args: &[&str]) -> Value {
        let mut a = vec!["--json", "--utc"];
        a.extend_from_slice(args);
        let out = self.ccd(&a);
        assert!(
            out.status.success(),
            "stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

fn assistant(w: &mut TranscriptWriter, id: &str, model: &str, at: &str, u: [u64; 4]) {
    w.line(json!({"type":"assistant","isSidechain":false,
        "message":{"id":id,"role":"assistant","model":model,"content":[{"type":"text","text":"x"}],
          "usage":{"input_tokens":u[0],"output_tokens":u[1],"cache_creation_input_tokens":u[2],"cache_read_input_tokens":u[3]}},
        "requestId":format!("req-{id}"),"timestamp":at,"sessionId":"x"}));
}

const SONNET: &str = "claude-sonnet-4-20250514";

/// Two sessions over two days: Sonnet 4 (priced) and claude-opus-5-5
/// (not in the table).
fn world() -> World {
    let w = World::new();
    let mut a = TranscriptWriter::create(&w.claude(), "sess-a", "/w/api");
    a.line(
        json!({"type":"user","cwd":"/w/api","timestamp":"2026-11-01T09:59:00Z",
        "message":{"role":"user","content":"hi"}}),
    );
    assistant(
        &mut a,
        "m1",
        SONNET,
        "2026-11-01T10:00:00Z",
        [1_000_000, 0, 0, 0],
    );
    // Streamed: the same message again, its final output count.
    assistant(&mut a, "m2", SONNET, "2026-11-02T10:00:00Z", [0, 10, 0, 0]);
    assistant(
        &mut a,
        "m2",
        SONNET,
        "2026-11-02T10:00:00Z",
        [0, 1_000_000, 0, 0],
    );
    let mut b = TranscriptWriter::create(&w.claude(), "sess-b", "/w/web");
    b.line(
        json!({"type":"user","cwd":"/w/web","timestamp":"2026-11-02T10:59:00Z",
        "message":{"role":"user","content":"hi"}}),
    );
    assistant(
        &mut b,
        "m3",
        "claude-opus-5-5",
        "2026-11-02T11:00:00Z",
        [100, 5, 0, 0],
    );
    w
}

fn keys(v: &Value) -> Vec<&str> {
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["key"].as_str().unwrap())
        .collect()
}

#[test]
fn totals_by_day_model_and_session_and_the_range() {
    let w = world();
    let v = w.json(&[]);
    assert_eq!(keys(&v), ["2026-11-01", "2026-11-02"]);
    let t = &v["total"];
    assert_eq!(t["tokens"]["input"], 1_000_100);
    assert_eq!(t["tokens"]["output"], 1_000_005);
    // $5.40 (1M input past the 200k tier) + $21 (1M output): opus-5-5 unpriced.
    assert!((t["cost_usd"].as_f64().unwrap() - 26.4).abs() < 1e-9);
    assert_eq!(t["unpriced"], json!(["claude-opus-5-5"]));
    assert_eq!(v["prices_date"].as_str().unwrap().len(), 10);
    assert_eq!(v["hosts"][0]["host"], "local");

    let v = w.json(&["--by", "session"]);
    assert_eq!(keys(&v), ["sess-a", "sess-b"]);
    assert_eq!(v["rows"][1]["folder"], "/w/web");
    let v = w.json(&["--by", "model"]);
    assert_eq!(keys(&v), ["claude-opus-5-5", SONNET]);
    let v = w.json(&["--by", "month"]);
    assert_eq!(keys(&v), ["2026-11"]);
    let v = w.json(&["--since", "20261102", "--until", "2026-11-02"]);
    assert_eq!(keys(&v), ["2026-11-02"]);
    assert_eq!(v["total"]["tokens"]["input"], 100);

    // The table: the unpriced model said, no dollars guessed for it.
    let out = w.ccd(&["--utc"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("$26.40+"), "{text}");
    assert!(
        text.contains("not priced") && text.contains("claude-opus-5-5"),
        "{text}"
    );

    // Bad input refused.
    assert!(!w.ccd(&["--by", "year"]).status.success());
    assert!(!w.ccd(&["--since", "yesterday"]).status.success());
}

#[test]
fn the_configs_prices_add_a_model_and_the_cache_follows_appends() {
    let w = world();
    std::fs::write(
        w.config_file(),
        "[prices.\"claude-opus-5-5\"]\ninput = 10.0\noutput = 100.0\ncache_write = 0.0\ncache_read = 0.0\n",
    )
    .unwrap();
    let v = w.json(&["--by", "model"]);
    assert!((v["rows"][0]["cost_usd"].as_f64().unwrap() - 0.0015).abs() < 1e-12);
    assert_eq!(v["total"]["unpriced"], json!([]));
    assert!(w.state().join("usage-cache.bin").exists());
    // Appended after the first run: counted by the next.
    let p = w.claude().join("projects/-w-web/sess-b.jsonl");
    let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
    std::io::Write::write_all(
        &mut f,
        format!(
            "{}\n",
            json!({"type":"assistant","timestamp":"2026-11-03T00:00:00Z","requestId":"r9",
                "message":{"id":"m9","model":"claude-opus-5-5","usage":{"input_tokens":7,"output_tokens":0}}})
        )
        .as_bytes(),
    )
    .unwrap();
    let v = w.json(&[]);
    assert_eq!(v["total"]["tokens"]["input"], 1_000_107);
    // A bad price is refused, naming it.
    std::fs::write(
        w.config_file(),
        "[prices.\"x\"]\ninput = -1.0\noutput = 1.0\ncache_write = 0.0\ncache_read = 0.0\n",
    )
    .unwrap();
    let out = w.ccd(&[]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("price of x"));
}

#[test]
fn a_hostile_model_name_and_folder_reach_the_terminal_sanitized() {
    let w = World::new();
    let mut a = TranscriptWriter::create(&w.claude(), "s", "/w/x");
    assistant(
        &mut a,
        "m1",
        "evil\u{1b}]0;pwned\u{7}\u{1b}[2J",
        "2026-11-01T10:00:00Z",
        [1, 1, 0, 0],
    );
    for by in ["model", "session", "day"] {
        let out = w.ccd(&["--by", by]);
        assert!(out.status.success());
        assert!(
            !out.stdout.contains(&0x1b) && !out.stdout.contains(&0x07),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

/// An ssh stand-in: the host `far` runs the rest of the command line in
/// `far`'s world; any other host cannot be reached.
fn stand_in_ssh(near: &World, far: &World) -> PathBuf {
    let path = near.home.path().join("fake-ssh");
    let mut script = String::from(
        "#!/bin/sh\nhost=\nwhile [ \"$1\" != -- ]; do host=$1; shift; done; shift\n\
         [ \"$host\" = far ] || { echo \"ssh: connect to host $host port 22: Connection refused\" >&2; exit 255; }\nexec env",
    );
    for (k, v) in far.env() {
        script.push_str(&format!(" {k}='{v}'"));
    }
    script.push_str(" sh -c \"$*\"\n");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn run_hosts(near: &World, ssh: &Path, hosts: &[&str]) -> Output {
    let mut args = vec![
        "usage",
        "--json",
        "--utc",
        "--remote-ccd",
        env!("CARGO_BIN_EXE_ccd"),
    ];
    for h in hosts {
        args.push("--host");
        args.push(h);
    }
    Command::new(env!("CARGO_BIN_EXE_ccd"))
        .args(&args)
        .env_remove("CCD_HOST")
        .envs(near.env())
        .env("CCD_SSH_COMMAND", ssh)
        .output()
        .unwrap()
}

#[test]
fn host_merges_machines_and_names_the_unreachable_one() {
    let near = world();
    let far = World::new();
    let mut f = TranscriptWriter::create(&far.claude(), "far-sess", "/srv");
    assistant(
        &mut f,
        "f1",
        SONNET,
        "2026-11-02T09:00:00Z",
        [100_000, 0, 0, 0],
    );
    let ssh = stand_in_ssh(&near, &far);

    let out = run_hosts(&near, &ssh, &["local", "ssh://far"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["total"]["tokens"]["input"], 1_000_100 + 100_000);
    assert!((v["total"]["cost_usd"].as_f64().unwrap() - 26.7).abs() < 1e-9);
    let hosts: Vec<&str> = v["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["host"].as_str().unwrap())
        .collect();
    assert_eq!(hosts, ["local", "far"]);
    assert_eq!(v["hosts"][1]["total"]["tokens"]["input"], 100_000);
    // The day both machines used is one row.
    assert_eq!(keys(&v), ["2026-11-01", "2026-11-02"]);
    assert_eq!(v["rows"][1]["tokens"]["input"], 100 + 100_000);

    let out = run_hosts(&near, &ssh, &["local", "ssh://far", "ssh://gone"]);
    assert_eq!(out.status.code(), Some(2));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["unreachable"][0]["host"], "gone");
    assert_eq!(v["hosts"].as_array().unwrap().len(), 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("gone not reached"));
}

fn ls(w: &World, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ccd"))
        .arg("ls")
        .args(args)
        .env_remove("CCD_HOST")
        .envs(w.env())
        .output()
        .unwrap()
}

#[test]
fn ls_shows_each_sessions_tokens_and_dollars_unless_no_cost() {
    let w = world();
    let out = ls(&w, &["--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = |sid: &str| {
        rows.as_array()
            .unwrap()
            .iter()
            .find(|r| r["session_id"] == sid)
            .unwrap_or_else(|| panic!("{sid} in {rows}"))
            .clone()
    };
    let a = row("sess-a");
    assert_eq!(a["usage"]["input_tokens"], 1_000_000);
    assert_eq!(a["usage"]["output_tokens"], 1_000_000);
    assert_eq!(a["usage"]["total_tokens"], 2_000_000);
    assert!((a["usage"]["cost_usd"].as_f64().unwrap() - 26.4).abs() < 1e-9);
    assert_eq!(a["usage"]["models"], json!([SONNET]));
    assert!(a["usage"].get("unpriced").is_none());
    let b = row("sess-b");
    assert_eq!(b["usage"]["unpriced"], json!(["claude-opus-5-5"]));

    let out = ls(&w, &[]);
    let table = String::from_utf8(out.stdout).unwrap();
    let header = table.lines().next().unwrap();
    assert!(
        header.contains("TOKENS") && header.contains(" $ "),
        "{table}"
    );
    let line = |sid: &str| table.lines().find(|l| l.contains(sid)).unwrap().to_owned();
    assert!(
        line("sess-a").contains("2.0M") && line("sess-a").contains("$26.40"),
        "{table}"
    );
    assert!(
        line("sess-b").contains("105") && line("sess-b").contains("$0.00+"),
        "{table}"
    );

    // --no-cost: neither the columns nor the field, nothing read.
    let _ = std::fs::remove_file(w.state().join("usage-cache.bin"));
    let out = ls(&w, &["--no-cost"]);
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(!table.lines().next().unwrap().contains("TOKENS"), "{table}");
    let out = ls(&w, &["--json", "--no-cost"]);
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(rows
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r.get("usage").is_none()));
    assert!(!w.state().join("usage-cache.bin").exists());
}
