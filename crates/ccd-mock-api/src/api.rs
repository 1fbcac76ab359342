//! What the mock answers: the Messages API (streaming and not), token
//! counting, and a harmless `{}` for anything else — logged as UNHANDLED so
//! that a new request from a new CLI version is visible.

use crate::http::{self, Request};
use serde_json::{json, Value};
use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Token figures reported in every reply's `usage`.
#[derive(Clone, Copy, Debug)]
pub struct Usage {
    pub input_tokens: u64,
    pub cache_creation_input_tokens: u64,
    pub cache_read_input_tokens: u64,
    pub output_tokens: u64,
}

impl Usage {
    fn json(&self) -> Value {
        json!({
            "input_tokens": self.input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "output_tokens": self.output_tokens,
        })
    }
}

pub struct Config {
    pub usage: Usage,
    /// Prefix of every reply's text: `<prefix><last user text>`.
    pub reply_prefix: String,
    /// Pause between streamed events (lets a test see the turn as busy).
    pub event_delay: Duration,
    /// Put whole request bodies in the log file (to study a new CLI).
    pub log_bodies: bool,
}

pub struct Server {
    pub config: Config,
    log: Mutex<Option<std::fs::File>>,
    seq: AtomicU64,
}

/// Header values worth seeing in the log (never the key itself).
const LOGGED_HEADERS: &[&str] = &[
    "user-agent",
    "anthropic-version",
    "anthropic-beta",
    "x-app",
    "content-type",
    "accept",
];

impl Server {
    pub fn new(config: Config, log: Option<std::fs::File>) -> Self {
        Self {
            config,
            log: Mutex::new(log),
            seq: AtomicU64::new(0),
        }
    }

    /// One line on stderr and one JSON line in the log file per request.
    fn log(&self, req: &Request, body: Option<&Value>, kind: &str) {
        let n = self.seq.fetch_add(1, Ordering::Relaxed) + 1;
        let ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        let mut headers = serde_json::Map::new();
        for (k, v) in &req.headers {
            if LOGGED_HEADERS.contains(&k.as_str()) {
                headers.insert(k.clone(), Value::String(v.clone()));
            }
        }
        let auth: Vec<&str> = ["x-api-key", "authorization"]
            .into_iter()
            .filter(|h| req.header(h).is_some())
            .collect();
        let summary = body.map(summarize).unwrap_or(Value::Null);
        let line = json!({
            "n": n,
            "t_ms": ms,
            "kind": kind,
            "method": req.method,
            "target": req.target,
            "headers": headers,
            "auth_headers": auth,
            "body_len": req.body.len(),
            "body": summary,
        });
        let mut line = line;
        if self.config.log_bodies {
            line["full_body"] = body.cloned().unwrap_or(Value::Null);
        }
        eprintln!(
            "ccd-mock-api: #{n} {kind} {} {} body={}B {}",
            req.method,
            req.target,
            req.body.len(),
            summary
        );
        if let Ok(mut guard) = self.log.lock() {
            if let Some(f) = guard.as_mut() {
                let _ = writeln!(f, "{line}");
                let _ = f.flush();
            }
        }
    }

    /// Answers one request. `Err` only for socket errors.
    pub fn handle(&self, req: &Request, w: &mut impl Write, keep_alive: bool) -> io::Result<()> {
        let body: Option<Value> = if req.body.is_empty() {
            None
        } else {
            serde_json::from_slice(&req.body).ok()
        };
        let head = req.method == "HEAD";
        let route = (req.method.as_str(), req.path().trim_end_matches('/'));
        match route {
            ("POST", "/v1/messages") => {
                let Some(b) = body.as_ref().filter(|b| b.is_object()) else {
                    self.log(req, None, "bad-json");
                    return error(w, 400, "request body is not a JSON object", keep_alive);
                };
                let stream = b["stream"].as_bool().unwrap_or(false);
                self.log(
                    req,
                    Some(b),
                    if stream {
                        "messages-stream"
                    } else {
                        "messages"
                    },
                );
                let model = b["model"].as_str().unwrap_or("claude-mock").to_string();
                let reply = self.reply(b);
                if stream {
                    self.stream(w, &model, &reply, keep_alive)
                } else {
                    let msg = self.message(&model, &reply);
                    respond_json(w, &msg, head, keep_alive)
                }
            }
            ("POST", "/v1/messages/count_tokens") => {
                self.log(req, body.as_ref(), "count-tokens");
                let u = self.config.usage;
                let n = u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens;
                respond_json(w, &json!({ "input_tokens": n }), head, keep_alive)
            }
            // The CLI's connectivity check (2.1.173 sends it at start).
            ("HEAD", "") => {
                self.log(req, None, "connectivity-check");
                respond_json(w, &json!({}), head, keep_alive)
            }
            ("GET", "/v1/models") => {
                self.log(req, None, "models");
                let v = json!({"data": [], "has_more": false, "first_id": null, "last_id": null});
                respond_json(w, &v, head, keep_alive)
            }
            _ => {
                self.log(req, body.as_ref(), "UNHANDLED");
                respond_json(w, &json!({}), head, keep_alive)
            }
        }
    }

    /// What to answer a Messages request with.
    ///
    /// - structured output asked for (e.g. the session-title request): a
    ///   JSON instance of the schema, so the CLI's parse succeeds;
    /// - the last user message carries a `tool_result`: "done";
    /// - tools offered and the prompt is `TOOL:<command>`: a `Bash` tool use
    ///   running that command; `BGTOOL:<command>`: the same with
    ///   `run_in_background: true`; `WRITE:<path>`: a `Write` tool use
    ///   creating it;
    /// - `AGENT:<text>`: a subagent tool use (`Agent`, or `Task` when only
    ///   that is offered) whose prompt is `<text>`; `BGAGENT:<text>`: the
    ///   same with `run_in_background: true` where the tool's schema has it.
    ///   The subagent's own requests come here too, with `<text>` as their
    ///   prompt: plain text is echoed (its turn ends), or `TOOL:…` makes it
    ///   run a command first;
    /// - otherwise `<prefix><last user text>`.
    pub fn reply(&self, b: &Value) -> Reply {
        let user = last_user_text(b);
        let text = format!("{}{}", self.config.reply_prefix, user);
        let format = &b["output_config"]["format"];
        if format["type"] == "json_schema" {
            return Reply::Text(
                schema_instance(&format["schema"], &strip_tags(&text), 0).to_string(),
            );
        }
        if last_user_has_tool_result(b) {
            return Reply::Text("done".into());
        }
        let has_tools = b["tools"].as_array().is_some_and(|t| !t.is_empty());
        if has_tools {
            if let Some(cmd) = user.strip_prefix("TOOL:") {
                let cmd = cmd.trim();
                return Reply::ToolUse {
                    name: "Bash".into(),
                    input: json!({"command": cmd, "description": format!("Run {cmd}")}),
                };
            }
            if let Some(cmd) = user.strip_prefix("BGTOOL:") {
                let cmd = cmd.trim();
                return Reply::ToolUse {
                    name: "Bash".into(),
                    input: json!({"command": cmd, "description": format!("Run {cmd}"),
                                  "run_in_background": true}),
                };
            }
            let agent = user
                .strip_prefix("AGENT:")
                .map(|t| (t, false))
                .or_else(|| user.strip_prefix("BGAGENT:").map(|t| (t, true)));
            if let Some((task, background)) = agent {
                if let Some(tool) = subagent_tool(b) {
                    let task = task.trim();
                    let mut input = json!({"description": "Mock subagent", "prompt": task,
                                           "subagent_type": "general-purpose"});
                    if background && tool_has_property(tool, "run_in_background") {
                        input["run_in_background"] = json!(true);
                    }
                    return Reply::ToolUse {
                        name: tool["name"].as_str().unwrap_or("Agent").to_string(),
                        input,
                    };
                }
            }
            if let Some(path) = user.strip_prefix("WRITE:") {
                return Reply::ToolUse {
                    name: "Write".into(),
                    input: json!({"file_path": path.trim(), "content": "x"}),
                };
            }
        }
        Reply::Text(text)
    }

    fn message(&self, model: &str, reply: &Reply) -> Value {
        json!({
            "id": msg_id(),
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [reply.block(&tool_use_id())],
            "stop_reason": reply.stop_reason(),
            "stop_sequence": null,
            "usage": self.config.usage.json(),
        })
    }

    fn stream(
        &self,
        w: &mut impl Write,
        model: &str,
        reply: &Reply,
        keep_alive: bool,
    ) -> io::Result<()> {
        let u = self.config.usage;
        let mut events: Vec<(&str, Value)> = vec![(
            "message_start",
            json!({"type": "message_start", "message": {
                "id": msg_id(), "type": "message", "role": "assistant", "model": model,
                "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": {
                    "input_tokens": u.input_tokens,
                    "cache_creation_input_tokens": u.cache_creation_input_tokens,
                    "cache_read_input_tokens": u.cache_read_input_tokens,
                    "output_tokens": 1,
                }
            }}),
        )];
        match reply {
            Reply::Text(text) => {
                events.push((
                    "content_block_start",
                    json!({"type": "content_block_start", "index": 0,
                           "content_block": {"type": "text", "text": ""}}),
                ));
                for piece in split_text(text, 3) {
                    events.push((
                        "content_block_delta",
                        json!({"type": "content_block_delta", "index": 0,
                               "delta": {"type": "text_delta", "text": piece}}),
                    ));
                }
            }
            Reply::ToolUse { name, input } => {
                events.push((
                    "content_block_start",
                    json!({"type": "content_block_start", "index": 0,
                           "content_block": {"type": "tool_use", "id": tool_use_id(),
                                             "name": name, "input": {}}}),
                ));
                for piece in split_text(&input.to_string(), 3) {
                    events.push((
                        "content_block_delta",
                        json!({"type": "content_block_delta", "index": 0,
                               "delta": {"type": "input_json_delta", "partial_json": piece}}),
                    ));
                }
            }
        }
        events.push((
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ));
        events.push((
            "message_delta",
            json!({"type": "message_delta",
                   "delta": {"stop_reason": reply.stop_reason(), "stop_sequence": null},
                   "usage": u.json()}),
        ));
        events.push(("message_stop", json!({"type": "message_stop"})));

        let mut c = http::Chunked::start(
            w,
            "text/event-stream; charset=utf-8",
            &[("request-id", req_id())],
            keep_alive,
        )?;
        for (i, (name, data)) in events.iter().enumerate() {
            if i > 0 && !self.config.event_delay.is_zero() {
                std::thread::sleep(self.config.event_delay);
            }
            c.send(format!("event: {name}\ndata: {data}\n\n").as_bytes())?;
        }
        c.finish()
    }
}

/// One assistant reply: text, or a single tool use.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    Text(String),
    ToolUse { name: String, input: Value },
}

impl Reply {
    fn stop_reason(&self) -> &'static str {
        match self {
            Reply::Text(_) => "end_turn",
            Reply::ToolUse { .. } => "tool_use",
        }
    }

    /// The whole content block (non-streaming replies).
    fn block(&self, id: &str) -> Value {
        match self {
            Reply::Text(t) => json!({"type": "text", "text": t}),
            Reply::ToolUse { name, input } => {
                json!({"type": "tool_use", "id": id, "name": name, "input": input})
            }
        }
    }
}

/// The offered subagent tool: `Agent` (newer CLIs) or `Task` (older).
fn subagent_tool(body: &Value) -> Option<&Value> {
    let tools = body["tools"].as_array()?;
    ["Agent", "Task"]
        .iter()
        .find_map(|n| tools.iter().find(|t| t["name"] == *n))
}

/// Does the tool's input schema have property `name`?
fn tool_has_property(tool: &Value, name: &str) -> bool {
    tool["input_schema"]["properties"].get(name).is_some()
}

/// Does the last user message carry a `tool_result` block?
fn last_user_has_tool_result(body: &Value) -> bool {
    body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_array())
        .is_some_and(|blocks| blocks.iter().any(|b| b["type"] == "tool_result"))
}

fn respond_json(w: &mut impl Write, v: &Value, head: bool, keep_alive: bool) -> io::Result<()> {
    http::write_response(
        w,
        200,
        "application/json",
        &[("request-id", req_id())],
        v.to_string().as_bytes(),
        head,
        keep_alive,
    )
}

fn error(w: &mut impl Write, status: u16, msg: &str, keep_alive: bool) -> io::Result<()> {
    let v = json!({"type": "error", "error": {"type": "invalid_request_error", "message": msg}});
    http::write_response(
        w,
        status,
        "application/json",
        &[],
        v.to_string().as_bytes(),
        false,
        keep_alive,
    )
}

fn msg_id() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!("msg_mock{:016}", N.fetch_add(1, Ordering::Relaxed) + 1)
}

fn tool_use_id() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!("toolu_mock{:014}", N.fetch_add(1, Ordering::Relaxed) + 1)
}

fn req_id() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!("req_mock{:016}", N.fetch_add(1, Ordering::Relaxed) + 1)
}

/// The text the user typed last: the last text block of the last user
/// message that is not a `<system-reminder>` (the CLI adds those).
pub fn last_user_text(body: &Value) -> String {
    let Some(msgs) = body["messages"].as_array() else {
        return String::new();
    };
    let Some(last) = msgs.iter().rev().find(|m| m["role"] == "user") else {
        return String::new();
    };
    let text = match &last["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .rfind(|t| !t.trim_start().starts_with("<system-reminder>"))
            .unwrap_or("")
            .to_string(),
        _ => String::new(),
    };
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    one_line.chars().take(200).collect()
}

/// The text with `<tag>`-like tokens removed and whitespace collapsed.
fn strip_tags(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find('<') {
        out.push_str(&rest[..i]);
        match rest[i..].find('>') {
            Some(j) => rest = &rest[i + j + 1..],
            None => {
                rest = &rest[i..];
                break;
            }
        }
    }
    out.push_str(rest);
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A minimal value matching a JSON schema: required (else all) properties
/// of objects, `text` for strings, the first of an enum.
fn schema_instance(schema: &Value, text: &str, depth: usize) -> Value {
    if depth > 8 {
        return Value::Null;
    }
    if let Some(first) = schema["enum"].as_array().and_then(|e| e.first()) {
        return first.clone();
    }
    if !schema["const"].is_null() {
        return schema["const"].clone();
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(first) = schema[key].as_array().and_then(|a| a.first()) {
            return schema_instance(first, text, depth + 1);
        }
    }
    let ty = match &schema["type"] {
        Value::Array(a) => a.first().and_then(Value::as_str).unwrap_or("object"),
        Value::String(s) => s.as_str(),
        _ if schema["properties"].is_object() => "object",
        _ => "string",
    };
    match ty {
        "object" => {
            let props = schema["properties"].as_object();
            let names: Vec<String> = match schema["required"].as_array() {
                Some(r) => r
                    .iter()
                    .filter_map(|n| n.as_str().map(String::from))
                    .collect(),
                None => props
                    .map(|p| p.keys().cloned().collect())
                    .unwrap_or_default(),
            };
            let mut obj = serde_json::Map::new();
            for n in names {
                let sub = props
                    .and_then(|p| p.get(&n))
                    .cloned()
                    .unwrap_or(Value::Null);
                obj.insert(n, schema_instance(&sub, text, depth + 1));
            }
            Value::Object(obj)
        }
        "array" => json!([]),
        "integer" | "number" => json!(0),
        "boolean" => json!(false),
        "null" => Value::Null,
        _ => json!(text),
    }
}

/// Splits into `n` roughly equal pieces on char boundaries (at least one).
fn split_text(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return vec![String::new()];
    }
    let size = chars.len().div_ceil(n.max(1));
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// What a request body asked for, for the log (no message text beyond a
/// short preview).
fn summarize(b: &Value) -> Value {
    let mut s = serde_json::Map::new();
    for k in ["model", "stream", "max_tokens"] {
        if !b[k].is_null() {
            s.insert(k.into(), b[k].clone());
        }
    }
    if let Some(m) = b["messages"].as_array() {
        s.insert("messages".into(), json!(m.len()));
        let preview: String = last_user_text(b).chars().take(60).collect();
        s.insert("last_user".into(), json!(preview));
    }
    if let Some(t) = b["tools"].as_array() {
        s.insert("tools".into(), json!(t.len()));
    }
    match &b["system"] {
        Value::String(x) => {
            s.insert("system_chars".into(), json!(x.len()));
        }
        Value::Array(a) => {
            let n: usize = a
                .iter()
                .filter_map(|x| x["text"].as_str())
                .map(str::len)
                .sum();
            s.insert("system_chars".into(), json!(n));
        }
        _ => {}
    }
    if let Some(obj) = b.as_object() {
        let keys: Vec<&String> = obj.keys().collect();
        s.insert("keys".into(), json!(keys));
    }
    Value::Object(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server() -> Server {
        Server::new(
            Config {
                usage: Usage {
                    input_tokens: 3,
                    cache_creation_input_tokens: 5,
                    cache_read_input_tokens: 7,
                    output_tokens: 11,
                },
                reply_prefix: "ACK: ".into(),
                event_delay: Duration::ZERO,
                log_bodies: false,
            },
            None,
        )
    }

    fn req(method: &str, target: &str, body: &str) -> Request {
        Request {
            method: method.into(),
            target: target.into(),
            version: "HTTP/1.1".into(),
            headers: vec![],
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn last_user_text_skips_reminders() {
        let b = json!({"messages": [
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "x"},
            {"role": "user", "content": [
                {"type": "text", "text": "<system-reminder>hi</system-reminder>"},
                {"type": "text", "text": "hello\n real  cli"},
                {"type": "text", "text": "<system-reminder>late</system-reminder>"}
            ]}
        ]});
        assert_eq!(last_user_text(&b), "hello real cli");
        assert_eq!(last_user_text(&json!({})), "");
    }

    #[test]
    fn structured_output_gets_a_schema_instance() {
        let s = server();
        let mut out = Vec::new();
        let body = json!({"model": "m", "stream": false,
            "messages": [{"role": "user", "content": "<session>\nfix it\n</session>"}],
            "output_config": {"format": {"type": "json_schema", "schema": {
                "type": "object", "required": ["title"],
                "properties": {"title": {"type": "string"}, "n": {"type": "integer"}}}}}});
        s.handle(
            &req("POST", "/v1/messages", &body.to_string()),
            &mut out,
            true,
        )
        .unwrap();
        let t = String::from_utf8(out).unwrap();
        let msg: Value = serde_json::from_str(t.split("\r\n\r\n").nth(1).unwrap()).unwrap();
        let text: Value =
            serde_json::from_str(msg["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(text, json!({"title": "ACK: fix it"}));
    }

    #[test]
    fn streaming_reply_is_a_complete_sse_sequence() {
        let s = server();
        let mut out = Vec::new();
        let r = req(
            "POST",
            "/v1/messages?beta=true",
            r#"{"model":"m","stream":true,"messages":[{"role":"user","content":"hi there"}]}"#,
        );
        s.handle(&r, &mut out, true).unwrap();
        let text = String::from_utf8(out).unwrap();
        let names: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("event: "))
            .collect();
        assert_eq!(names.first(), Some(&"message_start"));
        assert_eq!(names.last(), Some(&"message_stop"));
        assert!(names.contains(&"message_delta"));
        let deltas: String = text
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str::<Value>(d).ok())
            .filter(|v| v["type"] == "content_block_delta")
            .map(|v| v["delta"]["text"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(deltas, "ACK: hi there");
        assert!(text.contains(r#""cache_read_input_tokens":7"#));
        assert!(text.ends_with("0\r\n\r\n"));
    }

    /// The SSE events of one streamed reply, as (name, data).
    fn sse(s: &Server, body: &Value) -> Vec<(String, Value)> {
        let mut out = Vec::new();
        let r = req("POST", "/v1/messages?beta=true", &body.to_string());
        s.handle(&r, &mut out, true).unwrap();
        let text = String::from_utf8(out).unwrap();
        let mut events = Vec::new();
        let mut name = String::new();
        for l in text.lines() {
            if let Some(n) = l.strip_prefix("event: ") {
                name = n.to_string();
            } else if let Some(d) = l.strip_prefix("data: ") {
                events.push((name.clone(), serde_json::from_str(d).unwrap()));
            }
        }
        events
    }

    fn tool_prompt(prompt: &str) -> Value {
        json!({"model": "m", "stream": true,
               "tools": [{"name": "Bash"}, {"name": "Write"}],
               "messages": [{"role": "user", "content": prompt}]})
    }

    /// The tool use of a streamed reply: (block start, input from the deltas).
    fn streamed_tool_use(events: &[(String, Value)]) -> (Value, Value) {
        let start = events
            .iter()
            .find(|(n, _)| n == "content_block_start")
            .map(|(_, d)| d["content_block"].clone())
            .unwrap();
        let json: String = events
            .iter()
            .filter(|(n, _)| n == "content_block_delta")
            .map(|(_, d)| {
                assert_eq!(d["delta"]["type"], "input_json_delta");
                d["delta"]["partial_json"].as_str().unwrap().to_string()
            })
            .collect();
        (start, serde_json::from_str(&json).unwrap())
    }

    #[test]
    fn tool_prompt_is_answered_with_a_streamed_bash_tool_use() {
        let s = server();
        let events = sse(&s, &tool_prompt("TOOL:echo hi > out.txt"));
        let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names.first().copied(), Some("message_start"), "{names:?}");
        assert_eq!(names.last().copied(), Some("message_stop"));
        let (start, input) = streamed_tool_use(&events);
        assert_eq!(start["type"], "tool_use");
        assert_eq!(start["name"], "Bash");
        assert_eq!(start["input"], json!({}));
        assert!(start["id"].as_str().unwrap().starts_with("toolu_"));
        assert_eq!(input["command"], "echo hi > out.txt");
        assert!(input["description"].is_string());
        assert!(names.contains(&"content_block_stop"));
        let delta = events.iter().find(|(n, _)| n == "message_delta").unwrap();
        assert_eq!(delta.1["delta"]["stop_reason"], "tool_use");
    }

    #[test]
    fn write_prompt_is_answered_with_a_write_tool_use() {
        let s = server();
        let (start, input) = streamed_tool_use(&sse(&s, &tool_prompt("WRITE:/tmp/x/new.txt")));
        assert_eq!(start["name"], "Write");
        assert_eq!(
            input,
            json!({"file_path": "/tmp/x/new.txt", "content": "x"})
        );
    }

    #[test]
    fn bgtool_prompt_is_a_background_bash_tool_use() {
        let s = server();
        let (start, input) =
            streamed_tool_use(&sse(&s, &tool_prompt("BGTOOL:sleep 4; echo done > bg.txt")));
        assert_eq!(start["name"], "Bash");
        assert_eq!(input["command"], "sleep 4; echo done > bg.txt");
        assert_eq!(input["run_in_background"], true);
        // TOOL: stays a foreground command.
        let (_, input) = streamed_tool_use(&sse(&s, &tool_prompt("TOOL:ls")));
        assert!(input.get("run_in_background").is_none(), "{input}");
    }

    /// A prompt with these tools offered (name, has `run_in_background`).
    fn agent_prompt(prompt: &str, tools: &[(&str, bool)]) -> Value {
        let tools: Vec<Value> = tools
            .iter()
            .map(|(name, bg)| {
                let mut props = json!({"description": {"type": "string"},
                                       "prompt": {"type": "string"}});
                if *bg {
                    props["run_in_background"] = json!({"type": "boolean"});
                }
                json!({"name": name, "input_schema": {"type": "object", "properties": props}})
            })
            .collect();
        json!({"model": "m", "stream": true, "tools": tools,
               "messages": [{"role": "user", "content": prompt}]})
    }

    #[test]
    fn agent_prompt_uses_the_offered_subagent_tool() {
        let s = server();
        // Both pinned versions offer `Agent` (2.1.173 with run_in_background).
        let body = agent_prompt("AGENT:look around", &[("Bash", true), ("Agent", true)]);
        let (start, input) = streamed_tool_use(&sse(&s, &body));
        assert_eq!(start["name"], "Agent");
        assert_eq!(input["prompt"], "look around");
        assert!(input["description"].is_string());
        assert!(input.get("run_in_background").is_none(), "{input}");
        // Older CLIs call it Task.
        let body = agent_prompt("AGENT:look around", &[("Bash", true), ("Task", false)]);
        assert_eq!(streamed_tool_use(&sse(&s, &body)).0["name"], "Task");
        // No subagent tool offered: plain text.
        let body = agent_prompt("AGENT:look around", &[("Bash", true)]);
        assert_eq!(s.reply(&body), Reply::Text("ACK: AGENT:look around".into()));
    }

    #[test]
    fn bgagent_asks_for_the_background_where_the_schema_has_it() {
        let s = server();
        let body = agent_prompt("BGAGENT:TOOL:ls", &[("Agent", true)]);
        let (start, input) = streamed_tool_use(&sse(&s, &body));
        assert_eq!(start["name"], "Agent");
        assert_eq!(input["prompt"], "TOOL:ls");
        assert_eq!(input["run_in_background"], true);
        // 2.1.332's Agent has no such property (subagents always run in
        // the background there): not sent.
        let body = agent_prompt("BGAGENT:TOOL:ls", &[("Agent", false)]);
        let (_, input) = streamed_tool_use(&sse(&s, &body));
        assert!(input.get("run_in_background").is_none(), "{input}");
    }

    #[test]
    fn the_subagents_own_turn_ends_in_text() {
        let s = server();
        // The subagent's request: its own prompt, tools offered.
        let body = agent_prompt("look around", &[("Bash", true), ("Agent", true)]);
        let events = sse(&s, &body);
        let delta = events.iter().find(|(n, _)| n == "message_delta").unwrap();
        assert_eq!(delta.1["delta"]["stop_reason"], "end_turn");
        assert_eq!(s.reply(&body), Reply::Text("ACK: look around".into()));
        // A `TOOL:` task: a command first, then "done" after its result.
        let body = agent_prompt("TOOL:ls", &[("Bash", true)]);
        assert!(matches!(s.reply(&body), Reply::ToolUse { .. }));
    }

    #[test]
    fn tool_result_is_answered_with_done_and_no_tools_means_text() {
        let s = server();
        let body = json!({"model": "m", "stream": false, "tools": [{"name": "Bash"}],
            "messages": [
                {"role": "user", "content": "TOOL:echo hi"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1",
                    "name": "Bash", "input": {"command": "echo hi"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                    "content": "hi"}]}]});
        assert_eq!(s.reply(&body), Reply::Text("done".into()));
        let mut out = Vec::new();
        let r = req("POST", "/v1/messages", &body.to_string());
        s.handle(&r, &mut out, true).unwrap();
        let t = String::from_utf8(out).unwrap();
        let msg: Value = serde_json::from_str(t.split("\r\n\r\n").nth(1).unwrap()).unwrap();
        assert_eq!(msg["content"][0]["text"], "done");
        assert_eq!(msg["stop_reason"], "end_turn");
        // Without tools offered (e.g. a title request) the prompt is echoed.
        let body = json!({"messages": [{"role": "user", "content": "TOOL:ls"}]});
        assert_eq!(s.reply(&body), Reply::Text("ACK: TOOL:ls".into()));
        // Non-streaming tool use: the whole block.
        let body = json!({"tools": [{"name": "Bash"}],
                          "messages": [{"role": "user", "content": "TOOL:ls"}]});
        let msg = s.message("m", &s.reply(&body));
        assert_eq!(msg["content"][0]["input"]["command"], "ls");
        assert_eq!(msg["stop_reason"], "tool_use");
    }

    #[test]
    fn other_requests_get_empty_json_and_bad_json_a_400() {
        let s = server();
        let mut out = Vec::new();
        s.handle(&req("GET", "/api/whatever", ""), &mut out, true)
            .unwrap();
        let t = String::from_utf8(out).unwrap();
        assert!(t.starts_with("HTTP/1.1 200") && t.ends_with("{}"), "{t}");
        let mut out = Vec::new();
        s.handle(&req("POST", "/v1/messages", "[1"), &mut out, false)
            .unwrap();
        assert!(String::from_utf8(out).unwrap().starts_with("HTTP/1.1 400"));
        let mut out = Vec::new();
        s.handle(
            &req("POST", "/v1/messages/count_tokens", "{}"),
            &mut out,
            true,
        )
        .unwrap();
        assert!(String::from_utf8(out)
            .unwrap()
            .ends_with(r#"{"input_tokens":15}"#));
    }
}
