//! Transcripts: `<config>/projects/<slug>/<sessionId>.jsonl`, one JSON record per line,
//! created lazily at the first turn and appended with one write per line.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::util::{random_hex, rfc3339_now, uuid_v4};

/// The project folder name for a cwd: every UTF-16 unit outside `[A-Za-z0-9]` becomes `-`;
/// past 200 characters, the first 200 then `-` and base-36 of |Java string hash|.
pub fn slug(cwd: &str) -> String {
    let units: Vec<u16> = cwd.encode_utf16().collect();
    let s: String = units
        .iter()
        .map(|&u| match u {
            0x30..=0x39 | 0x41..=0x5a | 0x61..=0x7a => char::from(u as u8),
            _ => '-',
        })
        .collect();
    if s.len() <= 200 {
        return s;
    }
    let mut h: i32 = 0;
    for &u in &units {
        h = h.wrapping_mul(31).wrapping_add(i32::from(u));
    }
    format!("{}-{}", &s[..200], base36(u64::from(h.unsigned_abs())))
}

fn base36(mut n: u64) -> String {
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    if n == 0 {
        return "0".into();
    }
    let mut out = Vec::new();
    while n > 0 {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// Finds `<config>/projects/*/<sid>.jsonl`.
pub fn find(config: &Path, sid: &str) -> Option<PathBuf> {
    let name = format!("{sid}.jsonl");
    fs::read_dir(config.join("projects"))
        .ok()?
        .flatten()
        .map(|e| e.path().join(&name))
        .find(|p| p.is_file())
}

/// The conversations of a cwd's project folder other than `current`, newest first, each with
/// its first prompt (for the `/resume` picker).
pub fn list_project(config: &Path, cwd: &str, current: &str) -> Vec<(String, String)> {
    let Ok(rd) = fs::read_dir(config.join("projects").join(slug(cwd))) else {
        return Vec::new();
    };
    let mut found: Vec<(std::time::SystemTime, String, String)> = rd
        .flatten()
        .filter_map(|e| {
            let path = e.path();
            let id = path
                .file_name()?
                .to_str()?
                .strip_suffix(".jsonl")?
                .to_string();
            if id == current {
                return None;
            }
            let mtime = e.metadata().ok()?.modified().ok()?;
            let first = History::read(&path)
                .ok()?
                .conversation
                .into_iter()
                .find_map(|s| match s {
                    Said::User(t) => Some(t),
                    Said::Assistant(_) => None,
                })?;
            Some((mtime, id, first))
        })
        .collect();
    found.sort_by_key(|f| std::cmp::Reverse(f.0));
    found
        .into_iter()
        .map(|(_, id, first)| (id, first))
        .collect()
}

/// One utterance of a past conversation, for redrawing it on resume.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Said {
    User(String),
    Assistant(String),
}

/// What a resume needs from an existing transcript.
#[derive(Debug, Default, Clone)]
pub struct History {
    /// Raw lines (complete JSON records only), for copying into a fork.
    pub lines: Vec<String>,
    pub conversation: Vec<Said>,
    /// The cwd of the first record that has one.
    pub cwd: Option<String>,
    pub last_uuid: Option<String>,
    pub assistant_turns: u64,
}

fn text_of(content: &Value) -> Option<String> {
    match content {
        Value::String(s) => Some(s.clone()),
        Value::Array(items) => {
            let texts: Vec<&str> = items
                .iter()
                .filter(|i| i.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|i| i.get("text").and_then(Value::as_str))
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
    }
}

impl History {
    pub fn read(path: &Path) -> io::Result<History> {
        let text = fs::read_to_string(path)?;
        let mut h = History::default();
        for line in text.lines() {
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                continue; // a half-written last line
            };
            h.lines.push(line.to_string());
            if h.cwd.is_none() {
                h.cwd = v.get("cwd").and_then(Value::as_str).map(str::to_string);
            }
            if let Some(u) = v.get("uuid").and_then(Value::as_str) {
                h.last_uuid = Some(u.to_string());
            }
            let content = v.get("message").and_then(|m| m.get("content"));
            match (v.get("type").and_then(Value::as_str), content) {
                (Some("user"), Some(c)) if v.get("isMeta").is_none() => {
                    // Local slash commands (`/clear`) are not part of the conversation shown.
                    if let Some(t) = text_of(c).filter(|t| !t.starts_with("<command-name>")) {
                        h.conversation.push(Said::User(t));
                    }
                }
                (Some("assistant"), Some(c)) => {
                    h.assistant_turns += 1;
                    if let Some(t) = text_of(c) {
                        h.conversation.push(Said::Assistant(t));
                    }
                }
                _ => {}
            }
        }
        Ok(h)
    }
}

/// The meta `user` record the real CLI writes before a local command's record (2.1.332 text).
const LOCAL_COMMAND_CAVEAT: &str = "<local-command-caveat>The command below was run directly in Claude Code, not sent to you as a request, and its output goes straight to the user. It's recorded here as context for later messages.</local-command-caveat>";

/// Fixed facts stamped on every conversation record.
#[derive(Debug, Clone)]
pub struct Meta {
    pub cwd: String,
    pub version: String,
    pub model: String,
    pub usage_base: u64,
}

/// An ordered JSON object, so records keep the field order of the real CLI.
struct Obj(Vec<(&'static str, Value)>);

impl Obj {
    fn line(&self) -> String {
        let fields: Vec<String> = self
            .0
            .iter()
            .map(|(k, v)| format!("{}:{}", json!(k), v))
            .collect();
        format!("{{{}}}", fields.join(","))
    }
}

/// The transcript of the current session id.
pub struct Transcript {
    path: PathBuf,
    session_id: String,
    meta: Meta,
    parent: Option<String>,
    assistant_turns: u64,
    wrote_preamble: bool,
    /// For a fork: the history to copy (with the old id rewritten) when the file is created.
    seed: Option<(Vec<String>, String)>,
    last_prompt: String,
}

impl Transcript {
    /// A new session: `<config>/projects/<slug(cwd)>/<sid>.jsonl`, not created yet.
    pub fn fresh(config: &Path, session_id: &str, meta: Meta) -> Transcript {
        let path = config
            .join("projects")
            .join(slug(&meta.cwd))
            .join(format!("{session_id}.jsonl"));
        Transcript {
            path,
            session_id: session_id.to_string(),
            meta,
            parent: None,
            assistant_turns: 0,
            wrote_preamble: false,
            seed: None,
            last_prompt: String::new(),
        }
    }

    /// A resumed session keeps appending to its original file, wherever it is.
    pub fn resumed(path: PathBuf, session_id: &str, history: &History, meta: Meta) -> Transcript {
        Transcript {
            path,
            session_id: session_id.to_string(),
            meta,
            parent: history.last_uuid.clone(),
            assistant_turns: history.assistant_turns,
            wrote_preamble: false,
            seed: None,
            last_prompt: String::new(),
        }
    }

    /// A fork: a new id whose file, created at the first turn, starts with a copy of the
    /// history rewritten to the new id. The original file is never touched.
    pub fn forked(
        config: &Path,
        new_id: &str,
        old_id: &str,
        history: &History,
        meta: Meta,
    ) -> Transcript {
        let mut t = Transcript::fresh(config, new_id, meta);
        t.parent = history.last_uuid.clone();
        t.assistant_turns = history.assistant_turns;
        t.seed = Some((history.lines.clone(), old_id.to_string()));
        t
    }

    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    fn append(&self, line: &str) -> io::Result<()> {
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        f.write_all(&bytes)
    }

    fn start(&mut self) -> io::Result<()> {
        if let Some(dir) = self.path.parent() {
            fs::create_dir_all(dir)?;
        }
        if let Some((lines, old)) = self.seed.take() {
            for line in lines {
                self.append(&line.replace(&old, &self.session_id))?;
            }
        }
        if !self.wrote_preamble {
            self.wrote_preamble = true;
            let sid = json!(self.session_id);
            self.append(
                &Obj(vec![
                    ("type", json!("mode")),
                    ("mode", json!("normal")),
                    ("sessionId", sid.clone()),
                ])
                .line(),
            )?;
            self.append(
                &Obj(vec![
                    ("type", json!("permission-mode")),
                    ("permissionMode", json!("default")),
                    ("sessionId", sid),
                ])
                .line(),
            )?;
        }
        Ok(())
    }

    fn common(&self, mut fields: Vec<(&'static str, Value)>) -> Obj {
        fields.extend([
            ("userType", json!("external")),
            ("entrypoint", json!("cli")),
            ("cwd", json!(self.meta.cwd)),
            ("sessionId", json!(self.session_id)),
            ("version", json!(self.meta.version)),
            ("gitBranch", json!("HEAD")),
        ]);
        Obj(fields)
    }

    fn last_prompt_record(&self) -> String {
        Obj(vec![
            ("type", json!("last-prompt")),
            ("lastPrompt", json!(self.last_prompt)),
            ("leafUuid", json!(self.parent)),
            ("sessionId", json!(self.session_id)),
        ])
        .line()
    }

    /// Records a submitted prompt (creating the file on the first turn).
    pub fn record_user(&mut self, text: &str) -> io::Result<()> {
        self.start()?;
        let uuid = uuid_v4();
        let now = rfc3339_now();
        self.append(
            &Obj(vec![
                ("type", json!("file-history-snapshot")),
                ("messageId", json!(uuid)),
                (
                    "snapshot",
                    json!({"messageId": uuid, "trackedFileBackups": {}, "timestamp": now}),
                ),
                ("isSnapshotUpdate", json!(false)),
            ])
            .line(),
        )?;
        let record = self.common(vec![
            ("parentUuid", json!(self.parent)),
            ("isSidechain", json!(false)),
            ("promptId", json!(uuid_v4())),
            ("type", json!("user")),
            ("message", json!({"role": "user", "content": text})),
            ("uuid", json!(uuid)),
            ("timestamp", json!(now)),
            ("permissionMode", json!("default")),
            ("origin", json!({"kind": "human"})),
            ("promptSource", json!("typed")),
        ]);
        self.append(&record.line())?;
        self.parent = Some(uuid);
        self.last_prompt = text.to_string();
        self.append(&self.last_prompt_record())
    }

    /// Records a local slash command (`/clear`) the way the real CLI does: a snapshot, a meta
    /// `user` caveat, the `user` command record and a `system` `local_command` record.
    /// Creates the file (with its preamble) if needed.
    pub fn record_local_command(&mut self, command: &str, args: &str) -> io::Result<()> {
        self.record_local_command_said(command, args, "")
    }

    /// [`Transcript::record_local_command`] with what the command printed (`/model`'s "Set
    /// model to …", which ccd reads back).
    pub fn record_local_command_said(
        &mut self,
        command: &str,
        args: &str,
        stdout: &str,
    ) -> io::Result<()> {
        self.start()?;
        let cmd_uuid = uuid_v4();
        let now = rfc3339_now();
        self.append(
            &Obj(vec![
                ("type", json!("file-history-snapshot")),
                ("messageId", json!(cmd_uuid)),
                (
                    "snapshot",
                    json!({"messageId": cmd_uuid, "trackedFileBackups": {}, "timestamp": now}),
                ),
                ("isSnapshotUpdate", json!(false)),
            ])
            .line(),
        )?;
        let caveat_uuid = uuid_v4();
        let caveat = self.common(vec![
            ("parentUuid", json!(self.parent)),
            ("isSidechain", json!(false)),
            ("type", json!("user")),
            (
                "message",
                json!({"role": "user", "content": LOCAL_COMMAND_CAVEAT}),
            ),
            ("isMeta", json!(true)),
            ("uuid", json!(caveat_uuid)),
            ("timestamp", json!(now)),
        ]);
        self.append(&caveat.line())?;
        let content = format!(
            "<command-name>/{command}</command-name>\n            <command-message>{command}</command-message>\n            <command-args>{args}</command-args>"
        );
        let cmd = self.common(vec![
            ("parentUuid", json!(caveat_uuid)),
            ("isSidechain", json!(false)),
            ("type", json!("user")),
            ("message", json!({"role": "user", "content": content})),
            ("uuid", json!(cmd_uuid)),
            ("timestamp", json!(now)),
        ]);
        self.append(&cmd.line())?;
        let sys_uuid = uuid_v4();
        let system = self.common(vec![
            ("parentUuid", json!(cmd_uuid)),
            ("isSidechain", json!(false)),
            ("type", json!("system")),
            ("subtype", json!("local_command")),
            (
                "content",
                json!(format!(
                    "<local-command-stdout>{stdout}</local-command-stdout>"
                )),
            ),
            ("level", json!("info")),
            ("timestamp", json!(rfc3339_now())),
            ("uuid", json!(sys_uuid)),
            ("isMeta", json!(false)),
            ("commandRun", json!({"command": command, "args": args})),
        ]);
        self.append(&system.line())?;
        self.parent = Some(sys_uuid);
        Ok(())
    }

    /// The model later replies name (`/model`).
    pub fn set_model(&mut self, model: &str) {
        self.meta.model = model.to_string();
    }

    /// Records the assistant's reply, with usage figures that grow each turn.
    pub fn record_assistant(&mut self, reply: &str, duration_ms: u64) -> io::Result<()> {
        self.start()?;
        self.assistant_turns += 1;
        let k = self.assistant_turns;
        let base = self.meta.usage_base;
        let usage = json!({
            "input_tokens": base,
            "cache_creation_input_tokens": if k > 1 { 50 } else { 0 },
            "cache_read_input_tokens": (k - 1) * 200,
            "output_tokens": reply.split_whitespace().count() as u64 + 5,
            "service_tier": "standard",
        });
        let uuid = uuid_v4();
        let record = self.common(vec![
            ("parentUuid", json!(self.parent)),
            ("isSidechain", json!(false)),
            (
                "message",
                json!({
                    "id": format!("msg_fake_{}", random_hex(10)),
                    "type": "message",
                    "role": "assistant",
                    "model": self.meta.model,
                    "content": [{"type": "text", "text": reply}],
                    "stop_reason": "end_turn",
                    "stop_sequence": null,
                    "usage": usage,
                }),
            ),
            ("requestId", json!(format!("req_fake_{}", random_hex(8)))),
            ("type", json!("assistant")),
            ("uuid", json!(uuid)),
            ("timestamp", json!(rfc3339_now())),
        ]);
        self.append(&record.line())?;
        self.parent = Some(uuid);
        let sys_uuid = uuid_v4();
        let system = self.common(vec![
            ("parentUuid", json!(self.parent)),
            ("isSidechain", json!(false)),
            ("type", json!("system")),
            ("subtype", json!("turn_duration")),
            ("durationMs", json!(duration_ms)),
            ("timestamp", json!(rfc3339_now())),
            ("uuid", json!(sys_uuid)),
            ("isMeta", json!(false)),
        ]);
        self.append(&system.line())?;
        self.parent = Some(sys_uuid);
        self.append(&self.last_prompt_record())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slug_rules() {
        assert_eq!(slug("/home/dev/my_project.x"), "-home-dev-my-project-x");
        assert_eq!(slug("/tmp/é"), "-tmp--");
        let long = format!("/{}", "a".repeat(250));
        let s = slug(&long);
        assert!(s.starts_with(&format!("-{}", "a".repeat(199))));
        assert_eq!(&s[200..201], "-");
        // Java: "/aaa...".hashCode() folded to |h| in base 36.
        let mut h: i32 = 0;
        for u in long.encode_utf16() {
            h = h.wrapping_mul(31).wrapping_add(i32::from(u));
        }
        assert_eq!(&s[201..], base36(u64::from(h.unsigned_abs())));
        assert_eq!(base36(35), "z");
        assert_eq!(base36(36), "10");
    }

    #[test]
    fn ordered_object() {
        let o = Obj(vec![("type", json!("mode")), ("a", json!(1))]);
        assert_eq!(o.line(), r#"{"type":"mode","a":1}"#);
    }
}
