//! Builders for Claude Code config dirs, shaped like what the real CLI
//! writes (see `tests/recordings/claude-cli/`).

use serde_json::{json, Value};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

/// A registry entry as CLI 2.1.332 writes it.
pub fn registry_entry(
    pid: u32,
    sid: &str,
    cwd: &str,
    proc_start: &str,
    pid_domain: Option<&str>,
) -> Value {
    let mut v = json!({
        "pid": pid, "sessionId": sid, "cwd": cwd, "startedAt": 1_795_977_273_050i64,
        "procStart": proc_start, "version": "2.1.332", "peerProtocol": 1,
        "kind": "interactive", "entrypoint": "cli",
        "messagingSocketPath": format!("/tmp/cc-socks/{pid}.sock"),
        "name": "gen", "nameSource": "derived", "status": "idle",
        "updatedAt": 1_795_977_273_110i64, "statusUpdatedAt": 1_795_977_273_110i64
    });
    if let Some(d) = pid_domain {
        v["pidDomain"] = json!(d);
    }
    v
}

/// Writes `entry` as `<config>/sessions/<pid>.json` plus its `.key` sibling.
pub fn write_registry_entry(config: &Path, entry: &Value) -> PathBuf {
    let dir = config.join("sessions");
    fs::create_dir_all(&dir).expect("sessions dir");
    let pid = entry["pid"].as_u64().expect("pid");
    fs::write(
        dir.join(format!("{pid}.0123abcd.key")),
        b"{\"pid\":1,\"sessionId\":\"secret\"}",
    )
    .expect("key file");
    let p = dir.join(format!("{pid}.json"));
    fs::write(&p, serde_json::to_vec(entry).expect("json")).expect("entry");
    p
}

/// A transcript being written line by line.
pub struct TranscriptWriter {
    pub path: PathBuf,
    sid: String,
    cwd: String,
    out: fs::File,
    turn: u32,
    minute: u32,
}

impl TranscriptWriter {
    /// Creates `<config>/projects/<slug(cwd)>/<sid>.jsonl` with the
    /// bookkeeping records that open a real transcript (no `cwd` in them).
    pub fn create(config: &Path, sid: &str, cwd: &str) -> Self {
        let dir = config.join("projects").join(ccd_claude::slug::slug(cwd));
        Self::create_in(&dir, sid, cwd)
    }

    /// Like [`Self::create`] in an explicit project folder.
    pub fn create_in(dir: &Path, sid: &str, cwd: &str) -> Self {
        fs::create_dir_all(dir).expect("project dir");
        let path = dir.join(format!("{sid}.jsonl"));
        let out = fs::File::create(&path).expect("transcript");
        let mut w = Self {
            path,
            sid: sid.into(),
            cwd: cwd.into(),
            out,
            turn: 0,
            minute: 0,
        };
        w.line(json!({"type":"mode","mode":"normal","sessionId":sid}));
        w.line(json!({"type":"permission-mode","permissionMode":"auto","sessionId":sid}));
        w
    }

    pub fn line(&mut self, v: Value) {
        let mut b = serde_json::to_vec(&v).expect("json");
        b.push(b'\n');
        self.out.write_all(&b).expect("write");
    }

    fn stamp(&mut self) -> String {
        self.minute += 1;
        let m = self.minute;
        format!(
            "2026-11-{:02}T{:02}:{:02}:00.000Z",
            1 + (m / 1440) % 28,
            (m / 60) % 24,
            m % 60
        )
    }

    /// One user prompt, its assistant reply with `usage`, and the
    /// bookkeeping records around them. `padding` bytes of filler text
    /// are added to the reply (to grow files).
    pub fn turn(&mut self, prompt: &str, input_tokens: u64, padding: usize) {
        self.turn += 1;
        let (sid, cwd) = (self.sid.clone(), self.cwd.clone());
        let t = self.stamp();
        let uuid = format!("u-{}-{}", self.sid, self.turn);
        self.line(json!({"parentUuid":null,"isSidechain":false,"type":"user",
            "message":{"role":"user","content":prompt},"uuid":uuid,"timestamp":t,
            "userType":"external","entrypoint":"cli","cwd":cwd,"sessionId":sid,
            "version":"2.1.332","gitBranch":"HEAD"}));
        self.line(
            json!({"type":"last-prompt","lastPrompt":prompt,"leafUuid":uuid,"sessionId":sid}),
        );
        let t = self.stamp();
        self.line(json!({"parentUuid":uuid,"isSidechain":false,"type":"assistant",
            "message":{"model":"claude-opus-5-5","role":"assistant",
              "content":[{"type":"text","text":format!("reply {} {}", self.turn, "x".repeat(padding))}],
              "usage":{"input_tokens":input_tokens,"cache_creation_input_tokens":100,
                       "cache_read_input_tokens":1000,"output_tokens":7}},
            "uuid":format!("a-{}-{}", self.sid, self.turn),"timestamp":t,"cwd":cwd,
            "sessionId":sid,"version":"2.1.332"}));
        let t = self.stamp();
        self.line(
            json!({"type":"system","subtype":"turn_duration","durationMs":200,
            "timestamp":t,"cwd":cwd,"sessionId":sid}),
        );
        self.line(json!({"type":"cost-state","sessionId":sid,"totalCostUSD":0.01}));
    }

    /// Appends raw bytes (e.g. a half-written line).
    pub fn raw(&mut self, bytes: &[u8]) {
        self.out.write_all(bytes).expect("write");
    }
}

/// Writes a transcript of `turns` turns and returns its path.
pub fn transcript(config: &Path, sid: &str, cwd: &str, turns: u32) -> PathBuf {
    let mut w = TranscriptWriter::create(config, sid, cwd);
    for i in 0..turns {
        w.turn(
            &format!("prompt {i} of {sid}"),
            1000 + u64::from(i) * 100,
            200,
        );
    }
    w.path
}

/// A v4-shaped id derived from `n` (deterministic).
pub fn sid(n: u64) -> String {
    let h = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        (h >> 32) as u32,
        (h >> 16) as u16,
        n & 0xfff,
        (n >> 12) & 0xfff,
        n
    )
}
