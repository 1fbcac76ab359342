//! Protocol conformance: `docs/protocol.schema.json` is the machine-readable
//! form of `docs/protocol.md`, and
//!
//! - every ```json example line of the doc validates against it (requests
//!   against `$defs/requests/<method>`, results against
//!   `$defs/responses/<method>` of the request with the same id, errors
//!   against `$defs/error_response`, notifications against
//!   `$defs/notifications/<name>`);
//! - a live daemon (with the fake claude, a session it holds, one started
//!   outside ccd and dead ones) answers a replay of every example request,
//!   ids and session ids substituted by real ones, with traffic that
//!   validates line by line: every response, every notification (resync,
//!   output, exited, transcript, progress, events) and the documented error
//!   replies, whose codes are checked too.
//!
//! Violations are collected, not raised one by one: a failing run lists
//! every disagreement, each naming the method, the JSON sent, the JSON
//! received and the schema paths of the errors.

mod common;

use common::external::external;
use common::{ls_json, wait_for, Sandbox};
use serde_json::{json, Map, Value};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use ccd_protocol::methods::{ALL_METHODS, ALL_NOTIFICATIONS};
use ccd_protocol::ErrorCode;

const T: Duration = Duration::from_secs(20);
/// How long a response may take (`session.new` waits for a ready session,
/// `session.kill` for the exit).
const REPLY_TIMEOUT: Duration = Duration::from_secs(60);

fn repo_file(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel)
}

// ------------------------------------------------------------------ schema

/// `docs/protocol.schema.json`, with one compiled validator per `$defs`
/// entry used.
struct Schema {
    root: Value,
    validators: RefCell<HashMap<String, Rc<jsonschema::Validator>>>,
}

impl Schema {
    fn load() -> Schema {
        let path = repo_file("docs/protocol.schema.json");
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let root: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
        if let Err(e) = jsonschema::meta::validate(&root) {
            panic!(
                "{} is not a valid JSON Schema: {e} (at {})",
                path.display(),
                e.instance_path()
            );
        }
        assert_eq!(
            root["$schema"], "https://json-schema.org/draft/2020-12/schema",
            "the schema declares draft 2020-12"
        );
        Schema {
            root,
            validators: RefCell::new(HashMap::new()),
        }
    }

    fn has(&self, pointer: &str) -> bool {
        self.root.pointer(pointer).is_some()
    }

    /// A validator for the schema at `pointer` (e.g.
    /// `/$defs/requests/hello`), resolved inside the whole document.
    fn validator(&self, pointer: &str) -> Rc<jsonschema::Validator> {
        if let Some(v) = self.validators.borrow().get(pointer) {
            return v.clone();
        }
        assert!(self.has(pointer), "the schema has no #{pointer}");
        // The root as it is, or a root that refers to the entry.
        let schema = if pointer.is_empty() {
            self.root.clone()
        } else {
            let mut s = Map::new();
            for k in ["$schema", "$id", "$defs"] {
                if let Some(v) = self.root.get(k) {
                    s.insert(k.to_string(), v.clone());
                }
            }
            s.insert("$ref".into(), json!(format!("#{pointer}")));
            Value::Object(s)
        };
        let v = jsonschema::draft202012::options()
            .should_validate_formats(true)
            .build(&schema)
            .unwrap_or_else(|e| panic!("cannot compile #{pointer}: {e}"));
        let v = Rc::new(v);
        self.validators
            .borrow_mut()
            .insert(pointer.to_string(), v.clone());
        v
    }

    /// Every error of `instance` against the schema at `pointer`, each with
    /// the instance path and the schema path that failed.
    fn errors(&self, pointer: &str, instance: &Value) -> Vec<String> {
        let v = self.validator(pointer);
        let out: Vec<String> = v
            .iter_errors(instance)
            .map(|e| {
                format!(
                    "at instance `{}`: {} [schema path #{}{}]",
                    e.instance_path(),
                    e,
                    pointer,
                    e.evaluation_path()
                )
            })
            .collect();
        out
    }
}

fn short(s: &str) -> String {
    const MAX: usize = 3000;
    if s.len() <= MAX {
        return s.to_string();
    }
    let mut end = MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes in all)", &s[..end], s.len())
}

/// Validates traffic and collects every violation.
struct Checker {
    schema: Schema,
    failures: Vec<String>,
    /// Methods with a validated success response.
    results: BTreeSet<String>,
    /// Notifications received, by method.
    notes: BTreeMap<String, usize>,
    /// Error codes received.
    codes: BTreeSet<i64>,
}

type Chk = Rc<RefCell<Checker>>;

impl Checker {
    fn new() -> Chk {
        Rc::new(RefCell::new(Checker {
            schema: Schema::load(),
            failures: Vec::new(),
            results: BTreeSet::new(),
            notes: BTreeMap::new(),
            codes: BTreeSet::new(),
        }))
    }

    /// Validates `received` against `#pointer`; records a failure naming
    /// `what`, the line sent and the line received.
    fn check(&mut self, what: &str, sent: Option<&str>, received: &str, pointer: &str) -> bool {
        let v: Value = match serde_json::from_str(received) {
            Ok(v) => v,
            Err(e) => {
                self.fail(what, sent, received, &format!("not JSON: {e}"));
                return false;
            }
        };
        let errs = self.schema.errors(pointer, &v);
        if errs.is_empty() {
            return true;
        }
        let msg = format!(
            "does not validate against #{pointer}:\n    {}",
            errs.join("\n    ")
        );
        self.fail(what, sent, received, &msg);
        false
    }

    fn fail(&mut self, what: &str, sent: Option<&str>, received: &str, why: &str) {
        self.failures.push(format!(
            "{what}\n  sent:     {}\n  received: {}\n  problem:  {why}",
            sent.map(short)
                .unwrap_or_else(|| "(nothing: unsolicited)".into()),
            short(received),
        ));
    }

    fn finish(&self, extra: &str) {
        if !self.failures.is_empty() {
            panic!(
                "{} protocol conformance failure(s):\n\n{}\n{extra}",
                self.failures.len(),
                self.failures.join("\n\n")
            );
        }
    }
}

// ---------------------------------------------------------- doc examples

/// One line of a ```json block of docs/protocol.md.
struct DocLine {
    /// 1-based line number in protocol.md.
    line: usize,
    /// Index of its block.
    block: usize,
    text: String,
    v: Value,
}

fn doc_lines() -> Vec<DocLine> {
    let path = repo_file("docs/protocol.md");
    let md = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut out = Vec::new();
    let mut in_json = false;
    let mut block = 0;
    for (i, line) in md.lines().enumerate() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("```") {
            in_json = !in_json && rest.trim() == "json";
            block += 1;
            continue;
        }
        if in_json && !t.is_empty() {
            let v = serde_json::from_str(t)
                .unwrap_or_else(|e| panic!("protocol.md:{}: not JSON: {e}", i + 1));
            out.push(DocLine {
                line: i + 1,
                block,
                text: t.to_string(),
                v,
            });
        }
    }
    assert!(out.len() >= 30, "only {} example lines found", out.len());
    out
}

/// A request example and the outcome the doc shows for it.
#[derive(Clone)]
struct DocRequest {
    line: usize,
    id: Value,
    method: String,
    params: Option<Value>,
    /// The doc's error code for it, or `None` when the doc shows a result.
    error: Option<i64>,
}

fn doc_requests(lines: &[DocLine]) -> Vec<DocRequest> {
    let mut out: Vec<DocRequest> = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let (Some(method), Some(id)) = (l.v["method"].as_str(), l.v.get("id")) else {
            continue;
        };
        // Its response: the next line with this id and no method.
        let resp = lines[i + 1..]
            .iter()
            .find(|r| r.v.get("id") == Some(id))
            .filter(|r| r.v.get("method").is_none());
        let resp =
            resp.unwrap_or_else(|| panic!("protocol.md:{}: request without a response", l.line));
        out.push(DocRequest {
            line: l.line,
            id: id.clone(),
            method: method.to_string(),
            params: l.v.get("params").cloned(),
            error: resp.v["error"]["code"].as_i64(),
        });
    }
    out
}

#[test]
fn every_doc_example_validates_against_the_schema() {
    let chk = Checker::new();
    let mut c = chk.borrow_mut();

    // Coverage: a schema for every method, notification and error code.
    for m in ALL_METHODS {
        for kind in ["params", "results", "requests", "responses"] {
            let p = format!("/$defs/{kind}/{m}");
            assert!(c.schema.has(&p), "the schema lacks #{p}");
        }
    }
    for n in ALL_NOTIFICATIONS {
        for kind in ["notifications", "notification_params"] {
            let p = format!("/$defs/{kind}/{n}");
            assert!(c.schema.has(&p), "the schema lacks #{p}");
        }
    }
    let documented: BTreeSet<i64> = ErrorCode::ALL.iter().map(|c| c.code()).collect();
    let in_schema: BTreeSet<i64> = c.schema.root["$defs"]["ErrorCode"]["enum"]
        .as_array()
        .expect("$defs/ErrorCode/enum")
        .iter()
        .filter_map(Value::as_i64)
        .collect();
    assert_eq!(
        in_schema, documented,
        "$defs/ErrorCode lists ErrorCode::ALL"
    );
    for m in c.schema.root["$defs"]["requests"]
        .as_object()
        .expect("$defs/requests")
        .keys()
    {
        assert!(
            ALL_METHODS.contains(&m.as_str()),
            "the schema describes {m}, unknown to the crate"
        );
    }

    // Every example line, each against the schema of what it is.
    let lines = doc_lines();
    let mut pending: Vec<(usize, Value, String, String)> = Vec::new(); // block, id, method, line
    let (mut nreq, mut nres, mut nerr, mut nnote) = (0, 0, 0, 0);
    for l in &lines {
        let what = format!("protocol.md:{}", l.line);
        let method = l.v["method"].as_str();
        let id = l.v.get("id");
        match (method, id) {
            (Some(m), Some(id)) => {
                nreq += 1;
                let p = format!("/$defs/requests/{m}");
                if !c.schema.has(&p) {
                    c.fail(&what, None, &l.text, &format!("no schema for method {m}"));
                    continue;
                }
                c.check(&format!("{what}: request {m}"), None, &l.text, &p);
                // The root schema dispatches on the method too.
                c.check(&format!("{what}: request {m} (root)"), None, &l.text, "");
                pending.push((l.block, id.clone(), m.to_string(), l.text.clone()));
            }
            (Some(m), None) => {
                nnote += 1;
                let p = format!("/$defs/notifications/{m}");
                if !c.schema.has(&p) {
                    c.fail(&what, None, &l.text, &format!("no schema for {m}"));
                    continue;
                }
                c.check(&format!("{what}: notification {m}"), None, &l.text, &p);
                c.check(
                    &format!("{what}: notification {m} (root)"),
                    None,
                    &l.text,
                    "",
                );
            }
            (None, _) if l.v.get("error").is_some() => {
                nerr += 1;
                let req = pending
                    .iter()
                    .rev()
                    .find(|(_, pid, _, _)| Some(pid) == id)
                    .map(|(_, _, _, t)| t.clone());
                c.check(
                    &format!("{what}: error response"),
                    req.as_deref(),
                    &l.text,
                    "/$defs/error_response",
                );
                c.check(&format!("{what}: error (root)"), None, &l.text, "");
            }
            (None, _) => {
                nres += 1;
                // The request with this id in the same block, else the
                // nearest one before.
                let req = pending
                    .iter()
                    .rev()
                    .find(|(b, pid, _, _)| *b == l.block && Some(pid) == id)
                    .or_else(|| pending.iter().rev().find(|(_, pid, _, _)| Some(pid) == id))
                    .map(|(_, _, m, t)| (m.clone(), t.clone()));
                let Some((m, sent)) = req else {
                    c.fail(&what, None, &l.text, "a result with no request of that id");
                    continue;
                };
                c.check(
                    &format!("{what}: result of {m}"),
                    Some(&sent),
                    &l.text,
                    &format!("/$defs/responses/{m}"),
                );
                c.check(&format!("{what}: result (root)"), None, &l.text, "");
            }
        }
    }
    assert!(nreq >= ALL_METHODS.len(), "{nreq} requests");
    assert!(nres >= ALL_METHODS.len(), "{nres} results");
    assert!(nerr >= 5, "{nerr} error examples");
    assert!(nnote >= ALL_NOTIFICATIONS.len(), "{nnote} notifications");

    // The schema is not vacuous: messages that break the contract fail.
    let must_fail: &[(&str, Value, &str)] = &[
        (
            "/$defs/responses/hello",
            json!({"jsonrpc":"2.0","id":1,"result":{"daemon_version":"0.1.0","server":"ccd"}}),
            "hello result without protocol",
        ),
        (
            "/$defs/responses/hello",
            json!({"jsonrpc":"2.0","id":1,"result":{"daemon_version":"0.1.0","protocol":1,"server":"ccd"},"error":{"code":-32603,"message":"x"}}),
            "result and error together",
        ),
        (
            "/$defs/requests/session.input",
            json!({"jsonrpc":"2.0","id":1,"method":"session.input","params":{"session":"ff","data":"not base64!"}}),
            "input data that is not base64",
        ),
        (
            "/$defs/requests/sessions.get",
            json!({"jsonrpc":"2.0","id":1,"method":"sessions.get"}),
            "sessions.get without params",
        ),
        (
            "/$defs/responses/sessions.get",
            json!({"jsonrpc":"2.0","id":5,"result":{"session_id":"3c5e7a9b-1d2f-4a6c-8e0b-2d4f6a8c0e1f","state":"dead"}}),
            "SessionInfo without its always-sent fields",
        ),
        (
            "/$defs/responses/session.kill",
            json!({"jsonrpc":"2.0","id":8,"result":{"signalled":true,"exited":true,"exit_code":"143","exit_signal":null}}),
            "exit_code as a string",
        ),
        (
            "/$defs/notifications/session.resync",
            json!({"jsonrpc":"2.0","method":"session.resync","params":{"session":"ff0beea3-5d8e-4b7a-9c61-2f4e8a1b3c7d","seq":0,"size":{"cols":0,"rows":40},"reason":"attach","data":""}}),
            "a zero-column size",
        ),
        (
            "/$defs/notifications/session.exited",
            json!({"jsonrpc":"2.0","method":"session.exited","params":{"session":"ff0beea3-5d8e-4b7a-9c61-2f4e8a1b3c7d","exit_code":null}}),
            "null for a skip_serializing_if field",
        ),
        (
            "/$defs/notifications/event",
            json!({"jsonrpc":"2.0","method":"event","params":{"type":"session.appeared","session":"9b1d4c2e-7a3f-4e8b-b5d6-1c0e9f8a7b6d","at":1}}),
            "session.appeared without pid, cwd, state, held",
        ),
        (
            "/$defs/error_response",
            json!({"jsonrpc":"2.0","id":1,"error":{"code":-31999,"message":"x"}}),
            "an undocumented error code",
        ),
        (
            "/$defs/error_response",
            json!({"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"unknown method: x"}}),
            "-32601 without data.method",
        ),
        (
            "/$defs/error_response",
            json!({"jsonrpc":"2.0","id":3,"error":{"code":-32700,"message":"parse error"}}),
            "a parse error with an id",
        ),
        (
            "",
            json!({"jsonrpc":"2.0","id":1,"method":"hello","params":{"client":"x"}}),
            "(root) a hello without protocol",
        ),
        (
            "",
            json!({"jsonrpc":"2.0","method":"session.output","params":{"session":"ff0beea3-5d8e-4b7a-9c61-2f4e8a1b3c7d","seq":-1,"data":""}}),
            "(root) a negative seq",
        ),
        (
            "",
            json!({"jsonrpc":"1.0","id":1,"result":{}}),
            "(root) jsonrpc 1.0",
        ),
    ];
    for (pointer, v, why) in must_fail {
        assert!(
            !c.schema.errors(pointer, v).is_empty(),
            "#{pointer} accepts {why}: {v}"
        );
    }
    c.finish("(docs/protocol.md examples vs docs/protocol.schema.json)");
}

// ------------------------------------------------------------ live daemon

/// A [`Sandbox`] that, once its daemon is stopped with its sessions, also
/// ends the holder processes still waiting for a daemon to collect their
/// exited session (a stopped daemon never comes back for them). Only
/// processes of this sandbox: their environment names its socket dir.
struct Sb(Sandbox);

impl std::ops::Deref for Sb {
    type Target = Sandbox;
    fn deref(&self) -> &Sandbox {
        &self.0
    }
}

impl Drop for Sb {
    fn drop(&mut self) {
        let _ = self.0.run(&["daemon", "stop", "--kill-sessions"]);
        let marker = format!("CCD_SOCKET_DIR={}", self.0.sock.display());
        for pid in ccd_testkit::procs::pids() {
            if ccd_testkit::procs::has_env(pid, &marker) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid as i32),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
    }
}

enum Line {
    Text(String),
    Bad(String),
}

/// A raw connection: lines as sent and received, each received line
/// validated against the schema.
struct Conn {
    name: String,
    w: UnixStream,
    rx: mpsc::Receiver<Line>,
    next_id: i64,
    chk: Chk,
    /// Every notification received, validated, in order.
    notes: Vec<Value>,
    closed: bool,
}

impl Drop for Conn {
    fn drop(&mut self) {
        let _ = self.w.shutdown(std::net::Shutdown::Both);
    }
}

/// A reply to a request: what was sent and what came back.
struct Reply {
    sent: String,
    raw: String,
    msg: Value,
}

impl Reply {
    fn result(&self) -> &Value {
        &self.msg["result"]
    }
}

impl Conn {
    /// Connects without saying hello.
    fn open(sb: &Sandbox, name: &str, chk: &Chk) -> Conn {
        let s = UnixStream::connect(sb.sock.join("ccd.sock")).expect("connect to the daemon");
        let r = s.try_clone().expect("clone");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(r);
            let mut buf = Vec::new();
            loop {
                buf.clear();
                match r.read_until(b'\n', &mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        while matches!(buf.last(), Some(b'\n' | b'\r')) {
                            buf.pop();
                        }
                        let l = match String::from_utf8(buf.clone()) {
                            Ok(s) => Line::Text(s),
                            Err(e) => Line::Bad(format!("a line that is not UTF-8: {e}")),
                        };
                        if tx.send(l).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        Conn {
            name: name.to_string(),
            w: s,
            rx,
            next_id: 100,
            chk: chk.clone(),
            notes: Vec::new(),
            closed: false,
        }
    }

    /// Connects and says the doc's `hello` (validated).
    fn hello(sb: &Sandbox, name: &str, chk: &Chk, hello: &DocRequest) -> Conn {
        let mut c = Conn::open(sb, name, chk);
        let r = c.request("hello", hello.params.clone());
        assert!(
            r.msg.get("result").is_some(),
            "{name}: hello failed: {}",
            r.raw
        );
        c
    }

    fn send_line(&mut self, line: &str) {
        let mut b = line.as_bytes().to_vec();
        b.push(b'\n');
        if let Err(e) = self.w.write_all(&b) {
            self.chk.borrow_mut().fail(
                &format!("[{}] write", self.name),
                Some(line),
                "",
                &format!("cannot write: {e}"),
            );
        }
    }

    /// The next line, validated when it is a notification (responses are
    /// validated by the caller, who knows the method). `None` on timeout
    /// or end of stream.
    fn next_line(&mut self, timeout: Duration) -> Option<(String, Value)> {
        if self.closed {
            return None;
        }
        let l = match self.rx.recv_timeout(timeout) {
            Ok(l) => l,
            Err(mpsc::RecvTimeoutError::Timeout) => return None,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                self.closed = true;
                return None;
            }
        };
        let text = match l {
            Line::Text(t) => t,
            Line::Bad(why) => {
                self.chk
                    .borrow_mut()
                    .fail(&format!("[{}] a line", self.name), None, "", &why);
                return Some((String::new(), Value::Null));
            }
        };
        let v: Value = match serde_json::from_str(&text) {
            Ok(v) => v,
            Err(e) => {
                self.chk.borrow_mut().fail(
                    &format!("[{}] a line", self.name),
                    None,
                    &text,
                    &format!("not JSON: {e}"),
                );
                return Some((text, Value::Null));
            }
        };
        if v.get("method").is_some() && v.get("id").is_none() {
            self.on_notification(&text, &v);
        }
        Some((text, v))
    }

    fn on_notification(&mut self, text: &str, v: &Value) {
        let m = v["method"].as_str().unwrap_or("").to_string();
        let mut chk = self.chk.borrow_mut();
        *chk.notes.entry(m.clone()).or_default() += 1;
        let p = format!("/$defs/notifications/{m}");
        let what = format!("[{}] notification {m}", self.name);
        if chk.schema.has(&p) {
            chk.check(&what, None, text, &p);
        } else {
            chk.fail(
                &what,
                None,
                text,
                "a notification the protocol does not document",
            );
        }
        drop(chk);
        self.notes.push(v.clone());
    }

    /// Sends `line` and reads until the response with `id` (every line on
    /// the way is validated), then validates the response: against
    /// `$defs/responses/<method>` or `$defs/error_response`.
    fn exchange(&mut self, method: Option<&str>, id: &Value, line: &str) -> Reply {
        self.send_line(line);
        let deadline = Instant::now() + REPLY_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Some((text, v)) = self.next_line(left.min(Duration::from_millis(500))) else {
                if self.closed || Instant::now() >= deadline {
                    let why = if self.closed {
                        "the connection closed before the response"
                    } else {
                        "no response in time"
                    };
                    self.chk.borrow_mut().fail(
                        &format!("[{}] {}", self.name, method.unwrap_or("raw line")),
                        Some(line),
                        "",
                        why,
                    );
                    return Reply {
                        sent: line.to_string(),
                        raw: String::new(),
                        msg: Value::Null,
                    };
                }
                continue;
            };
            if v.get("method").is_some() || v.is_null() {
                continue; // a notification (validated) or garbage (recorded)
            }
            if v.get("id") != Some(id) {
                self.chk.borrow_mut().fail(
                    &format!("[{}] {}", self.name, method.unwrap_or("raw line")),
                    Some(line),
                    &text,
                    &format!("a response with an unexpected id (waiting for {id})"),
                );
                continue;
            }
            let mut chk = self.chk.borrow_mut();
            let what = format!("[{}] {}", self.name, method.unwrap_or("raw line"));
            if let Some(e) = v.get("error") {
                if let Some(code) = e["code"].as_i64() {
                    chk.codes.insert(code);
                }
                chk.check(&what, Some(line), &text, "/$defs/error_response");
            } else if let Some(m) = method {
                if chk.check(&what, Some(line), &text, &format!("/$defs/responses/{m}")) {
                    chk.results.insert(m.to_string());
                }
            } else {
                chk.fail(&what, Some(line), &text, "a result for a malformed line");
            }
            drop(chk);
            return Reply {
                sent: line.to_string(),
                raw: text,
                msg: v,
            };
        }
    }

    fn request(&mut self, method: &str, params: Option<Value>) -> Reply {
        self.next_id += 1;
        let id = json!(self.next_id);
        self.request_with_id(method, params, id)
    }

    fn request_with_id(&mut self, method: &str, params: Option<Value>, id: Value) -> Reply {
        let mut m = Map::new();
        m.insert("jsonrpc".into(), json!("2.0"));
        m.insert("id".into(), id.clone());
        m.insert("method".into(), json!(method));
        if let Some(p) = params {
            m.insert("params".into(), p);
        }
        let line = Value::Object(m).to_string();
        self.exchange(Some(method), &id, &line)
    }

    /// A request that must succeed; its result (`null` after a recorded
    /// failure).
    fn ok(&mut self, method: &str, params: Value) -> Value {
        let r = self.request(method, Some(params));
        if r.msg.get("result").is_none() && !r.raw.is_empty() {
            let what = format!("[{}] {method}", self.name);
            self.chk
                .borrow_mut()
                .fail(&what, Some(&r.sent), &r.raw, "expected a result");
        }
        r.result().clone()
    }

    /// A request that must fail with `code`; the error object.
    fn err(&mut self, method: &str, params: Option<Value>, code: ErrorCode) -> Value {
        let r = self.request(method, params);
        self.expect_code(&r, method, code);
        r.msg["error"].clone()
    }

    fn expect_code(&mut self, r: &Reply, what: &str, code: ErrorCode) {
        if r.raw.is_empty() {
            return; // already recorded
        }
        if r.msg["error"]["code"].as_i64() != Some(code.code()) {
            let what = format!("[{}] {what}", self.name);
            self.chk.borrow_mut().fail(
                &what,
                Some(&r.sent),
                &r.raw,
                &format!("expected error {code}"),
            );
        }
    }

    /// Waits for a notification matching `pred` (earlier ones included).
    fn wait_note(
        &mut self,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> Option<Value> {
        let deadline = Instant::now() + timeout;
        let mut from = 0;
        loop {
            if let Some(n) = self.notes[from..].iter().find(|n| pred(n)) {
                return Some(n.clone());
            }
            from = self.notes.len();
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || self.closed {
                let seen: Vec<String> = self
                    .notes
                    .iter()
                    .rev()
                    .take(8)
                    .map(|n| short(&n.to_string()))
                    .collect();
                self.chk.borrow_mut().fail(
                    &format!("[{}] waiting for {what}", self.name),
                    None,
                    &seen.join("\n            "),
                    "not received in time (the last notifications are shown)",
                );
                return None;
            }
            let _ = self.next_line(left.min(Duration::from_millis(200)));
        }
    }

    /// Reads (and validates) whatever arrives for `d`.
    fn drain(&mut self, d: Duration) {
        let deadline = Instant::now() + d;
        while Instant::now() < deadline && !self.closed {
            let left = deadline.saturating_duration_since(Instant::now());
            if self.next_line(left).is_none() {
                break;
            }
        }
    }
}

fn note_is(method: &'static str, session: &str) -> impl Fn(&Value) -> bool {
    let s = session.to_string();
    move |n: &Value| n["method"] == method && n["params"]["session"] == s.as_str()
}

/// Sessions of the live sandbox that doc examples are mapped to.
#[derive(Clone, Copy, Debug)]
enum Target {
    /// Held by ccd (`ccd new`): the doc's `ff0beea3…` (proj1).
    Held,
    /// Live outside ccd: the doc's `9b1d4c2e…` (proj2).
    External,
    /// Dead (its process was killed), resumable: the doc's `3c5e7a9b…`.
    Dead,
    /// A second dead session (transcript only), for the `fresh_on_failure`
    /// example.
    Dead2,
    /// A third dead session (transcript only, never resumed): `session.trim`.
    Dead3,
    /// The session the replayed `session.new` started: the doc's
    /// `5e6f7a8b…`.
    New,
}

/// Which session each example that names one is replayed against, by
/// (method, doc id). A new example naming a session needs a row here.
fn target(method: &str, doc_id: &Value) -> Option<Target> {
    Some(match (method, doc_id.as_i64()?) {
        ("sessions.get", 5) => Target::Dead,
        ("session.fork", 7) => Target::External,
        ("session.kill", 8) => Target::New,
        ("session.screen", 9) => Target::Held,
        ("session.tail", 10) => Target::Dead,
        ("session.attach", 10) => Target::Dead,
        ("session.attach", 11) => Target::Dead2,
        ("session.attach", 12) => Target::External,
        ("session.detach", 13) => Target::Dead,
        ("session.input", 14) | ("session.resize", 15) | ("session.focus", 17) => Target::Held,
        ("session.send", 16) | ("session.pin", 18) => Target::New,
        ("session.respond", 19) | ("session.respond", 20) => Target::New,
        ("session.trim", 22) => Target::Dead3,
        ("session.trim", 23) => Target::External,
        _ => return None,
    })
}

/// The doc's session reference (a prefix or a full id) replaced by the
/// real id, cut to the same length but never below 8 characters (a shorter
/// prefix could match two random ids).
fn substitute(doc: &str, real: &str) -> String {
    if doc.len() >= real.len() {
        real.to_string()
    } else {
        real[..doc.len().max(8)].to_string()
    }
}

struct Ids {
    held: String,
    external: String,
    dead: String,
    dead2: String,
    dead3: String,
    new: Option<String>,
}

impl Ids {
    fn of(&self, t: Target) -> &str {
        match t {
            Target::Held => &self.held,
            Target::External => &self.external,
            Target::Dead => &self.dead,
            Target::Dead2 => &self.dead2,
            Target::Dead3 => &self.dead3,
            Target::New => self
                .new
                .as_deref()
                .expect("session.new is replayed before the examples that use its session"),
        }
    }
}

/// The doc example's params with real session ids and directories.
fn fill(sb: &Sandbox, r: &DocRequest, ids: &Ids) -> Option<Value> {
    let mut p = r.params.clone()?;
    if let Some(s) = p.get("session").and_then(Value::as_str).map(String::from) {
        let t = target(&r.method, &r.id).unwrap_or_else(|| {
            panic!(
                "protocol.md:{}: {} example names a session: add a row to `target`",
                r.line, r.method
            )
        });
        p["session"] = json!(substitute(&s, ids.of(t)));
    }
    if r.method == "session.new" {
        p["cwd"] = json!(sb.project("proj3"));
    }
    Some(p)
}

/// Replays one doc example and checks the outcome is the doc's: a result,
/// or an error with the doc's code.
fn replay(c: &mut Conn, r: &DocRequest, params: Option<Value>) -> Reply {
    let rep = c.request(&r.method, params);
    if rep.raw.is_empty() {
        return rep;
    }
    let got = rep.msg["error"]["code"].as_i64();
    if got != r.error {
        let want = match r.error {
            Some(c) => format!("error {c}"),
            None => "a result".into(),
        };
        c.chk.borrow_mut().fail(
            &format!("[{}] {} (protocol.md:{})", c.name, r.method, r.line),
            Some(&rep.sent),
            &rep.raw,
            &format!("the doc's example gets {want}"),
        );
    }
    rep
}

/// Waits until `session.screen` of `sid` satisfies `pred` (each poll is a
/// validated exchange); the last reply.
fn wait_screen(c: &mut Conn, sid: &str, what: &str, pred: impl Fn(&Value) -> bool) -> Reply {
    let deadline = Instant::now() + T;
    loop {
        let r = c.request("session.screen", Some(json!({"session": sid})));
        if pred(r.result()) {
            return r;
        }
        if Instant::now() > deadline {
            c.chk.borrow_mut().fail(
                &format!("[{}] waiting for {what}", c.name),
                Some(&r.sent),
                &r.raw,
                "the screen never showed it",
            );
            return r;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// True if a row of the screen's `lines` satisfies `f`.
fn screen_has(s: &Value, f: impl Fn(&str) -> bool) -> bool {
    s["lines"]
        .as_array()
        .is_some_and(|l| l.iter().any(|r| r.as_str().is_some_and(&f)))
}

fn find<'a>(reqs: &'a [DocRequest], method: &str, error: bool) -> &'a DocRequest {
    reqs.iter()
        .find(|r| r.method == method && r.error.is_some() == error)
        .unwrap_or_else(|| panic!("protocol.md has no example of {method} (error: {error})"))
}

#[test]
fn a_live_daemon_answers_every_example_by_the_schema() {
    let started = Instant::now();
    let sb = Sb(Sandbox::new());
    let chk = Checker::new();
    let lines = doc_lines();
    let reqs = doc_requests(&lines);
    let hello = find(&reqs, "hello", false).clone();
    drop(sb.client_or_start());

    // Handshake: nothing but hello before hello; the doc's two hellos.
    let mut c = Conn::open(&sb, "main", &chk);
    c.err("daemon.status", None, ErrorCode::HandshakeRequired);
    let mut hellos: Vec<&DocRequest> = reqs.iter().filter(|r| r.method == "hello").collect();
    hellos.sort_by_key(|r| r.error.is_none()); // the refused range first
    for r in hellos {
        replay(&mut c, r, r.params.clone());
    }

    // Subscribers, before anything happens: all types, and the doc's.
    let mut ev_all = Conn::hello(&sb, "events(all)", &chk, &hello);
    ev_all.ok("events.subscribe", json!({}));
    let mut ev_doc = Conn::hello(&sb, "events(doc)", &chk, &hello);
    let sub = find(&reqs, "events.subscribe", false);
    replay(&mut ev_doc, sub, sub.params.clone());
    let doc_types: Vec<String> = sub.params.as_ref().expect("types")["types"]
        .as_array()
        .expect("types")
        .iter()
        .filter_map(|t| t.as_str().map(String::from))
        .collect();

    // The sessions: held, external (live elsewhere), dead (its process
    // killed, registry entry left), dead2 (a transcript only), two that
    // share a prefix, one registry entry without a transcript, dead3 (a
    // transcript only, never resumed here).
    let held = sb.new_session("proj1");
    let mut ext = external(&sb, &sb.project("proj2"));
    let dead = external(&sb, &sb.project("old")).sid.clone();
    let dead2 = "3c5e0000-1d2f-4a6c-8e0b-2d4f6a8c0e1f".to_string();
    ccd_testkit::gen::transcript(&sb.config, &dead2, sb.project("old2").to_str().unwrap(), 1);
    let dead3 = "d3ad0000-1d2f-4a6c-8e0b-2d4f6a8c0e1f";
    ccd_testkit::gen::transcript(&sb.config, dead3, sb.project("old3").to_str().unwrap(), 1);
    for tail in ["1111-4222-8333-444455556666", "2222-4222-8333-444455556666"] {
        ccd_testkit::gen::transcript(
            &sb.config,
            &format!("abcdef01-{tail}"),
            sb.project("twins").to_str().unwrap(),
            1,
        );
    }
    let no_transcript = "cccccccc-1111-4222-8333-444455556666";
    ccd_testkit::gen::write_registry_entry(
        &sb.config,
        &ccd_testkit::gen::registry_entry(4_000_001, no_transcript, "/x", "1", None),
    );
    wait_for(T, "the killed session to be dead", || {
        ls_json(&sb)
            .iter()
            .any(|r| r["session_id"] == dead.as_str() && r["state"] == "dead")
            .then_some(())
    });
    let mut ids = Ids {
        held: held.clone(),
        external: ext.sid.clone(),
        dead: dead.clone(),
        dead2: dead2.clone(),
        dead3: dead3.to_string(),
        new: None,
    };

    // Every example request, in the doc's order. Deferred: session.kill
    // (the doc's later session.send uses the same session); elsewhere:
    // hello (above), events.subscribe (above), daemon.stop (its own test).
    let mut deferred: Vec<&DocRequest> = Vec::new();
    for r in &reqs {
        match r.method.as_str() {
            "hello" | "events.subscribe" | "daemon.stop" => continue,
            "session.kill" => {
                deferred.push(r);
                continue;
            }
            _ => {}
        }
        // Before.
        match r.method.as_str() {
            "session.input" => {
                // Attached, so that its output comes back.
                c.ok(
                    "session.attach",
                    json!({"session": held, "size": {"cols": 120, "rows": 40}}),
                );
                c.wait_note("a resync (attach) of the held session", T, |n| {
                    note_is("session.resync", &held)(n) && n["params"]["reason"] == "attach"
                });
            }
            "session.send" => {
                let sid = ids.of(Target::New).to_string();
                // The empty prompt is up: `shows` says `prompt` (the doc's
                // session.screen example and its list of values).
                let r = wait_screen(&mut c, &sid, "the new session's empty prompt", |s| {
                    screen_has(s, |r| r.trim_end() == "❯")
                        && !screen_has(s, |r| r.contains("Do you want"))
                });
                if r.result()["shows"] != "prompt" {
                    chk.borrow_mut().fail(
                        "[main] session.screen",
                        Some(&r.sent),
                        &r.raw,
                        "the screen shows the empty prompt, but `shows` is not \"prompt\"",
                    );
                }
            }
            _ => {}
        }
        let mut params = fill(&sb, r, &ids);
        if r.method == "session.respond" {
            // A permission dialog up, and the example's `prompt` made the
            // id of the one on screen.
            let sid = ids.of(Target::New).to_string();
            let dialog = |s: &Value| screen_has(s, |r| r.contains("Do you want to proceed?"));
            let now = c.request("session.screen", Some(json!({"session": sid})));
            if !dialog(now.result()) {
                wait_screen(
                    &mut c,
                    &sid,
                    "the prompt before a permission example",
                    |s| screen_has(s, |r| r.trim_end() == "❯") && !dialog(s),
                );
                c.ok(
                    "session.send",
                    json!({"session": sid, "text": "perm ls -la"}),
                );
                wait_screen(&mut c, &sid, "a permission dialog to answer", dialog);
            }
            let prompt = wait_for(T, "the prompt id in sessions.get", || {
                let info = c.ok("sessions.get", json!({"session": sid}));
                info["ccd"]["permission_prompt"].as_str().map(String::from)
            });
            if let Some(p) = params.as_mut().filter(|p| p.get("prompt").is_some()) {
                p["prompt"] = json!(prompt);
            }
        }
        let notes_before = c.notes.len();
        let rep = replay(&mut c, r, params);
        let res = rep.result().clone();
        // After.
        match r.method.as_str() {
            "sessions.list" => {
                let rows = res["sessions"].as_array().cloned().unwrap_or_default();
                let row = |sid: &str| rows.iter().find(|s| s["session_id"] == sid).cloned();
                let kinds = [
                    (
                        held.as_str(),
                        "held by ccd",
                        row(&held).is_some_and(|s| s["ccd"].is_object()),
                    ),
                    (
                        ext.sid.as_str(),
                        "live elsewhere",
                        row(&ext.sid).is_some_and(|s| s["ccd"].is_null() && s["state"] == "live"),
                    ),
                    (
                        dead.as_str(),
                        "dead",
                        row(&dead).is_some_and(|s| s["state"] == "dead"),
                    ),
                ];
                for (sid, kind, ok) in kinds {
                    if !ok {
                        chk.borrow_mut().fail(
                            "[main] sessions.list",
                            Some(&rep.sent),
                            &rep.raw,
                            &format!("session {sid} is not listed as {kind}"),
                        );
                    }
                }
            }
            "session.new" => {
                ids.new = res["session"].as_str().map(String::from);
                let progress = c.notes[notes_before..]
                    .iter()
                    .filter(|n| n["method"] == "session.progress")
                    .count();
                if progress == 0 {
                    chk.borrow_mut().fail(
                        "[main] session.new",
                        Some(&rep.sent),
                        &rep.raw,
                        "no session.progress before the reply (wait: true)",
                    );
                }
                if ids.new.is_none() {
                    c.finish_now(&rep, "session.new gave no session id: cannot go on");
                }
            }
            "session.attach" if r.error.is_none() => {
                if let Some(sid) = res["session"].as_str() {
                    let sid = sid.to_string();
                    c.wait_note("the resync after attach", T, |n| {
                        note_is("session.resync", &sid)(n) && n["params"]["reason"] == "attach"
                    });
                }
            }
            "session.input" => {
                c.wait_note(
                    "output of the held session",
                    T,
                    note_is("session.output", &held),
                );
            }
            "session.resize" => {
                // The application repaints itself for the new size: output.
                c.wait_note(
                    "the repaint after the resize",
                    Duration::from_secs(5),
                    note_is("session.output", &held),
                );
            }
            "session.respond" => {
                // Answered: the dialog went, and a deny's message became
                // the next prompt.
                let sid = ids.of(Target::New).to_string();
                let message = r
                    .params
                    .as_ref()
                    .and_then(|p| p["message"].as_str())
                    .map(|m| format!("echo: {m}"));
                wait_screen(&mut c, &sid, "the answered dialog gone", |s| {
                    !screen_has(s, |r| r.contains("Do you want to proceed?"))
                        && message
                            .as_deref()
                            .is_none_or(|m| screen_has(s, |r| r.contains(m)))
                });
            }
            "session.send" => {
                // -32008: a permission dialog is open. First the example's
                // turn ends (Enter is ignored while a turn runs).
                let sid = ids.of(Target::New).to_string();
                let text = r
                    .params
                    .as_ref()
                    .map_or("", |p| p["text"].as_str().unwrap_or(""));
                let echo = format!("echo: {text}");
                wait_screen(&mut c, &sid, "the reply to the example's prompt", |s| {
                    screen_has(s, |r| r.contains(&echo)) && screen_has(s, |r| r.trim_end() == "❯")
                });
                c.ok(
                    "session.send",
                    json!({"session": sid, "text": "perm rm -rf build"}),
                );
                wait_screen(&mut c, &sid, "the permission dialog", |s| {
                    screen_has(s, |r| r.contains("Do you want to proceed?"))
                });
                c.err(
                    "session.send",
                    Some(json!({"session": sid, "text": "not now"})),
                    ErrorCode::NotAtPrompt,
                );
            }
            _ => {}
        }
    }

    // Requests beyond the examples, for notifications and errors the
    // examples do not produce.
    // session.transcript: observe the external session.
    c.ok(
        "session.attach",
        json!({"session": ext.sid, "mode": "observe"}),
    );
    c.wait_note(
        "the external session's transcript",
        T,
        note_is("session.transcript", &ext.sid),
    );
    // session.screen in its other format: `data`, base64.
    let s = c.ok("session.screen", json!({"session": held, "format": "ansi"}));
    if !s["data"].is_string() {
        chk.borrow_mut().fail(
            "[main] session.screen (ansi)",
            None,
            &s.to_string(),
            "format ansi gave no `data`",
        );
    }
    // A string id.
    let r = c.request_with_id("daemon.status", None, json!("status-1"));
    if r.msg.get("result").is_none() {
        chk.borrow_mut().fail(
            "[main] daemon.status (string id)",
            Some(&r.sent),
            &r.raw,
            "expected a result",
        );
    }
    // -32010: typing through an observe-only attachment.
    let mut obs = Conn::hello(&sb, "observer", &chk, &hello);
    obs.ok(
        "session.attach",
        json!({"session": held, "mode": "observe"}),
    );
    obs.wait_note("the observer's resync", T, note_is("session.resync", &held));
    obs.err(
        "session.input",
        Some(json!({"session": held, "data": ccd_protocol::b64::encode(b"x")})),
        ErrorCode::PermissionDenied,
    );
    drop(obs);
    // -32601, -32602 (the doc's message names `session`), -32003, -32004,
    // -32005, -32006, -32007.
    let e = c.err("session.frobnicate", None, ErrorCode::MethodNotFound);
    if e["data"]["method"] != "session.frobnicate" {
        chk.borrow_mut().fail(
            "[main] session.frobnicate",
            None,
            &e.to_string(),
            "data.method does not name the method",
        );
    }
    c.err("sessions.get", Some(json!({})), ErrorCode::InvalidParams);
    c.err(
        "session.input",
        Some(json!({"session": held, "data": "not base64!"})),
        ErrorCode::InvalidParams,
    );
    c.err(
        "session.resize",
        Some(json!({"session": held, "cols": "wide", "rows": 30})),
        ErrorCode::InvalidParams,
    );
    c.err(
        "sessions.get",
        Some(json!({"session": "ffffffff-0000-4000-8000-000000000000"})),
        ErrorCode::SessionNotFound,
    );
    c.err(
        "sessions.get",
        Some(json!({"session": "abcdef01"})),
        ErrorCode::AmbiguousSessionId,
    );
    c.err(
        "session.input",
        Some(json!({"session": ext.sid, "data": "DQ=="})),
        ErrorCode::SessionLiveElsewhere,
    );
    // session.input: "-32012 for one that is not running".
    c.err(
        "session.input",
        Some(json!({"session": dead3, "data": "DQ=="})),
        ErrorCode::SessionNotRunning,
    );
    c.err(
        "session.new",
        Some(json!({"cwd": sb.work.join("no-such-dir")})),
        ErrorCode::CwdMissing,
    );
    c.err(
        "session.attach",
        Some(json!({"session": no_transcript})),
        ErrorCode::TranscriptMissing,
    );
    // Malformed lines: -32700, -32600 (with and without a readable id),
    // -32000.
    let raw_cases: Vec<(String, Value, ErrorCode)> = vec![
        ("{not json".into(), Value::Null, ErrorCode::ParseError),
        (
            r#"{"jsonrpc":"1.0","id":7,"method":"daemon.status"}"#.into(),
            json!(7),
            ErrorCode::InvalidRequest,
        ),
        (
            r#"[{"jsonrpc":"2.0","id":1,"method":"daemon.status"}]"#.into(),
            Value::Null,
            ErrorCode::InvalidRequest,
        ),
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":99,"method":"daemon.status","params":{{"pad":"{}"}}}}"#,
                "x".repeat(ccd_protocol::MAX_LINE_BYTES + 10)
            ),
            Value::Null,
            ErrorCode::LineTooLong,
        ),
    ];
    for (line, id, code) in &raw_cases {
        let r = c.exchange(None, id, line);
        c.expect_code(&r, "a malformed line", *code);
    }

    // The deferred session.kill: attached first, so session.exited comes.
    let new = ids.of(Target::New).to_string();
    c.ok("session.attach", json!({"session": new, "mode": "observe"}));
    for r in deferred {
        let params = fill(&sb, r, &ids);
        replay(&mut c, r, params);
    }
    c.wait_note(
        "session.exited of the killed session",
        T,
        note_is("session.exited", &new),
    );

    // The external session ends: the observer gets session.exited,
    // subscribers session.disappeared.
    let _ = ext.child.kill();
    let _ = ext.child.wait();
    c.wait_note(
        "session.exited of the observed external session",
        T,
        note_is("session.exited", &ext.sid),
    );
    let ext_sid = ext.sid.clone();
    ev_all.wait_note("session.disappeared of the external session", T, |n| {
        n["params"]["type"] == "session.disappeared" && n["params"]["session"] == ext_sid.as_str()
    });
    ev_all.drain(Duration::from_millis(300));
    ev_doc.drain(Duration::from_millis(300));
    c.drain(Duration::from_millis(300));

    // What the subscribers got.
    let types: BTreeSet<String> = ev_all
        .notes
        .iter()
        .filter_map(|n| n["params"]["type"].as_str().map(String::from))
        .collect();
    for t in [
        "session.appeared",
        "session.lifecycle",
        "session.exited",
        "session.disappeared",
        "session.status",
    ] {
        if !types.contains(t) {
            chk.borrow_mut().fail(
                "[events(all)] events",
                None,
                &format!("types received: {types:?}"),
                &format!("no {t} event"),
            );
        }
    }
    if ev_doc.notes.is_empty() {
        chk.borrow_mut()
            .fail("[events(doc)] events", None, "", "no event at all");
    }
    for n in &ev_doc.notes {
        let t = n["params"]["type"].as_str().unwrap_or("");
        if t != "events.lagged" && !doc_types.iter().any(|d| d == t) {
            chk.borrow_mut().fail(
                "[events(doc)] event",
                None,
                &n.to_string(),
                &format!("a type outside the subscription {doc_types:?}"),
            );
        }
    }

    // Coverage: every method (daemon.stop: its own test), every
    // notification, every error code provoked here.
    let mut chk = chk.borrow_mut();
    for m in ALL_METHODS.iter().filter(|m| **m != "daemon.stop") {
        if !chk.results.contains(*m) {
            chk.fail(
                &format!("coverage: {m}"),
                None,
                "",
                "no validated successful response",
            );
        }
    }
    for n in ALL_NOTIFICATIONS {
        if !chk.notes.contains_key(*n) {
            chk.fail(&format!("coverage: {n}"), None, "", "never received");
        }
    }
    for code in [
        ErrorCode::ParseError,
        ErrorCode::InvalidRequest,
        ErrorCode::MethodNotFound,
        ErrorCode::InvalidParams,
        ErrorCode::LineTooLong,
        ErrorCode::UnsupportedProtocolVersion,
        ErrorCode::HandshakeRequired,
        ErrorCode::SessionNotFound,
        ErrorCode::AmbiguousSessionId,
        ErrorCode::SessionLiveElsewhere,
        ErrorCode::CwdMissing,
        ErrorCode::TranscriptMissing,
        ErrorCode::NotAtPrompt,
        ErrorCode::PermissionDenied,
    ] {
        if !chk.codes.contains(&code.code()) {
            chk.fail(&format!("coverage: {code}"), None, "", "never received");
        }
    }
    let summary = format!(
        "(live replay: {} methods answered, notifications {:?}, error codes {:?}, {:.1} s)",
        chk.results.len(),
        chk.notes,
        chk.codes,
        started.elapsed().as_secs_f64()
    );
    chk.finish(&summary);
    eprintln!("{summary}");
}

impl Conn {
    /// Stops the test now, listing what failed so far and why it cannot go
    /// on.
    fn finish_now(&self, r: &Reply, why: &str) -> ! {
        let mut chk = self.chk.borrow_mut();
        chk.fail(&format!("[{}]", self.name), Some(&r.sent), &r.raw, why);
        chk.finish("");
        unreachable!("finish panics on failures");
    }
}

/// `daemon.stop` ends the daemon, so it runs in a sandbox of its own, with
/// the resume failure that the `fresh_on_failure` example is about.
#[test]
fn daemon_stop_and_failed_resumes_answer_by_the_schema() {
    let started = Instant::now();
    let sb = Sb(Sandbox::with_env(&[("FAKE_CLAUDE_PROMPT_TOO_LONG", "1")]));
    let chk = Checker::new();
    let lines = doc_lines();
    let reqs = doc_requests(&lines);
    let hello = find(&reqs, "hello", false).clone();
    drop(sb.client_or_start());
    let dead = external(&sb, &sb.project("old")).sid.clone();
    wait_for(T, "the killed session to be dead", || {
        ls_json(&sb)
            .iter()
            .any(|r| r["session_id"] == dead.as_str() && r["state"] == "dead")
            .then_some(())
    });
    let mut c = Conn::hello(&sb, "main", &chk, &hello);
    let mut other = Conn::hello(&sb, "other", &chk, &hello);

    // -32009: the resume fails ("Prompt is too long").
    c.err(
        "session.attach",
        Some(json!({"session": dead})),
        ErrorCode::SpawnFailed,
    );
    // The doc's fresh_on_failure example: a fresh session, said so.
    let fresh = reqs
        .iter()
        .find(|r| {
            r.method == "session.attach"
                && r.params
                    .as_ref()
                    .is_some_and(|p| p["fresh_on_failure"] == true)
        })
        .expect("protocol.md has a fresh_on_failure example");
    let mut p = fresh.params.clone().expect("params");
    let doc_sid = p["session"].as_str().unwrap_or("").to_string();
    p["session"] = json!(substitute(&doc_sid, &dead));
    let r = replay(&mut c, fresh, Some(p));
    if r.result()["fresh_instead_of"]["session"] != dead.as_str() {
        chk.borrow_mut().fail(
            "[main] session.attach (fresh_on_failure)",
            Some(&r.sent),
            &r.raw,
            "fresh_instead_of does not name the session that failed to resume",
        );
    }
    let fresh_sid = r.result()["session"].as_str().unwrap_or("").to_string();

    // daemon.stop, the doc's example: sessions keep running.
    let stop = find(&reqs, "daemon.stop", false);
    replay(&mut c, stop, stop.params.clone());
    // From the reply on, new requests fail with -32011, unless the
    // connection is already gone (the daemon exits right after).
    let r = other.request("daemon.status", None);
    if !r.raw.is_empty() {
        other.expect_code(
            &r,
            "daemon.status after daemon.stop",
            ErrorCode::ShuttingDown,
        );
    } else {
        chk.borrow_mut()
            .failures
            .retain(|f| !f.starts_with("[other] "));
        eprintln!("note: the connection closed before -32011 could be seen");
    }
    wait_for(T, "the daemon to exit", || {
        sb.daemon_pid().is_none().then_some(())
    });
    drop(c);
    drop(other);

    // The next daemon adopts the session that kept running.
    drop(sb.client_or_start());
    let mut c = Conn::hello(&sb, "after", &chk, &hello);
    let l = c.ok("sessions.list", json!({"held_only": true}));
    let adopted = l["sessions"]
        .as_array()
        .is_some_and(|s| s.iter().any(|s| s["session_id"] == fresh_sid.as_str()));
    if !adopted {
        chk.borrow_mut().fail(
            "[after] sessions.list",
            None,
            &l.to_string(),
            &format!("the session {fresh_sid} did not survive daemon.stop"),
        );
    }
    let chk = chk.borrow();
    for m in ["session.attach", "daemon.stop"] {
        assert!(
            chk.results.contains(m) || !chk.failures.is_empty(),
            "{m} was not answered"
        );
    }
    chk.finish(&format!("({:.1} s)", started.elapsed().as_secs_f64()));
}
