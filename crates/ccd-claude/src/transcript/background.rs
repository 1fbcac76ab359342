//! Is a session still running background work (a background shell, a
//! subagent) that a stop would cut short?
//!
//! Read from the transcript's tail only (bounded). The rule, checked on
//! the real CLI (2.1.173 and 2.1.332; recordings
//! `tests/recordings/claude-cli/transcript-background-*.jsonl`, facts in
//! `docs/claude-cli-compat.md`, "Background work"):
//!
//! - **Start.** An assistant `tool_use` with `input.run_in_background:
//!   true` (a background Bash; a 2.1.173 `Agent`), or any `Agent`/`Task`
//!   tool use. Its `tool_result` does not end it when the work went to the
//!   background: the record's `toolUseResult` then carries
//!   `backgroundTaskId` (a shell: "Command running in background with ID:
//!   b…") or `isAsync: true` / `status: "async_launched"` with `agentId` (a
//!   subagent: "Async agent launched successfully"; 2.1.332 launches every
//!   subagent so). Either id is the work's task id. A foreground subagent
//!   (2.1.173) ends with its `tool_result`.
//! - **End.** A `<task-notification>` naming the work by
//!   `<tool-use-id>` or `<task-id>` with a final `<status>` (`completed`,
//!   `failed`, … — seen: `completed`, `failed`). Both versions write it
//!   first in a `queue-operation` record (`operation: "enqueue"`,
//!   `content`), then as a `user` record whose `message.content` is that
//!   text (`origin.kind: "task-notification"`); any non-assistant record
//!   carrying it counts. An unknown status keeps the work pending.
//! - Tool uses and results count only in `assistant` and `user` records:
//!   2.1.332 first writes copies of each request (`api-request-blob`
//!   records, whose `message.content` holds the same blocks without the
//!   `toolUseResult`).
//! - Not recorded, from the tools' documented shapes: `KillShell`/
//!   `KillBash`/`TaskStop` naming the work ends it; `SendMessage` to a
//!   settled subagent's id wakes it again (its next notification ends it);
//!   a tool result with `is_error: true` (refused) means it never started;
//!   a result with `backgroundTaskId` for a tool use that did not ask for
//!   the background (a command the user sent there) starts a shell.
//!
//! The rule is conservative — when in doubt, work is pending — because a
//! wrong "no" would let idle reaping stop a session mid-task. So a CLI
//! that ended while work ran (killed, crashed) leaves that work pending in
//! its transcript for good: no notification ever comes.

use serde_json::Value;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// How much of the tail is read.
pub const TAIL: u64 = 2 * 1024 * 1024;

/// Background work still running, by tool-use id.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Pending {
    pub shells: Vec<String>,
    pub subagents: Vec<String>,
}

impl Pending {
    pub fn any(&self) -> bool {
        !self.shells.is_empty() || !self.subagents.is_empty()
    }
}

/// Pending background work in the transcript at `path` (an unreadable
/// file counts as no evidence of work).
pub fn pending(path: &Path) -> std::io::Result<Pending> {
    let mut f = std::fs::File::open(path)?;
    let len = f.metadata()?.len();
    let start = len.saturating_sub(TAIL);
    f.seek(SeekFrom::Start(start))?;
    let mut buf = Vec::with_capacity((len - start) as usize);
    f.take(TAIL).read_to_end(&mut buf)?;
    let body = if start > 0 {
        match memchr::memchr(b'\n', &buf) {
            Some(i) => &buf[i + 1..],
            None => &[][..],
        }
    } else {
        &buf[..]
    };
    Ok(scan(body))
}

/// `<status>` values of a task notification that end the work. Anything
/// else (a progress report, a status a later CLI invents) keeps it pending.
const FINAL_STATUSES: &[&str] = &[
    "completed",
    "failed",
    "killed",
    "stopped",
    "cancelled",
    "canceled",
    "error",
    "exited",
    "timeout",
    "timed_out",
];

/// One piece of work the transcript started.
struct Work {
    /// The tool-use id.
    id: String,
    subagent: bool,
    /// The CLI's own id (`backgroundTaskId`, `agentId`), once announced.
    task_id: Option<String>,
    done: bool,
}

impl Work {
    fn named_by(&self, id: &str) -> bool {
        !id.is_empty() && (self.id == id || self.task_id.as_deref() == Some(id))
    }
}

/// The rule (module doc) over a chunk of complete transcript lines.
pub fn scan(body: &[u8]) -> Pending {
    let mut work: Vec<Work> = Vec::new();
    for line in body.split(|&b| b == b'\n') {
        let Ok(v) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        let kind = v.get("type").and_then(Value::as_str).unwrap_or("");
        // Task notifications, wherever the CLI puts them (not in what the
        // model writes).
        if kind != "assistant" {
            let mut texts = Vec::new();
            strings(&v, &mut texts, 0);
            for n in texts.into_iter().flat_map(notifications) {
                if !n.is_final() {
                    continue;
                }
                for w in work.iter_mut() {
                    if w.named_by(n.tool_use_id) || w.named_by(n.task_id) {
                        w.done = true;
                    }
                }
            }
        }
        let Some(content) = v.pointer("/message/content").and_then(Value::as_array) else {
            continue;
        };
        // Only the conversation's own records: 2.1.332 also writes copies
        // of the request (`api-request-blob`, tool uses and results
        // included) before the records themselves.
        for block in content {
            match (kind, block.get("type").and_then(Value::as_str)) {
                ("assistant", Some("tool_use")) => tool_use(block, &mut work),
                ("user", Some("tool_result")) => tool_result(&v, block, &mut work),
                _ => {}
            }
        }
    }
    let mut p = Pending::default();
    for w in work.into_iter().filter(|w| !w.done) {
        if w.subagent {
            p.subagents.push(w.id);
        } else {
            p.shells.push(w.id);
        }
    }
    p
}

fn str_at<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// An assistant's tool use: work starts, is stopped, or is woken.
fn tool_use(block: &Value, work: &mut Vec<Work>) {
    let id = str_at(block, "id");
    let name = str_at(block, "name");
    let input = block.get("input").unwrap_or(&Value::Null);
    match name {
        "KillShell" | "KillBash" | "TaskStop" => {
            let target = ["shell_id", "bash_id", "task_id"]
                .iter()
                .map(|k| str_at(input, k))
                .find(|t| !t.is_empty())
                .unwrap_or("");
            for w in work.iter_mut().filter(|w| w.named_by(target)) {
                w.done = true;
            }
        }
        "SendMessage" => {
            let to = str_at(input, "to");
            for w in work.iter_mut().filter(|w| w.subagent && w.named_by(to)) {
                w.done = false;
            }
        }
        // Empty, or seen already (a record written twice).
        _ if id.is_empty() || work.iter().any(|w| w.id == id) => {}
        "Agent" | "Task" => work.push(Work {
            id: id.to_string(),
            subagent: true,
            task_id: None,
            done: false,
        }),
        _ if input.get("run_in_background").and_then(Value::as_bool) == Some(true) => {
            work.push(Work {
                id: id.to_string(),
                subagent: false,
                task_id: None,
                done: false,
            })
        }
        _ => {}
    }
}

/// A tool result (`record` is the whole line, whose `toolUseResult` says
/// whether the work went to the background).
fn tool_result(record: &Value, block: &Value, work: &mut Vec<Work>) {
    let id = str_at(block, "tool_use_id");
    if id.is_empty() {
        return;
    }
    let result = record.get("toolUseResult").unwrap_or(&Value::Null);
    let shell_task = Some(str_at(result, "backgroundTaskId"))
        .filter(|t| !t.is_empty())
        .map(String::from)
        .or_else(|| announced_id(block));
    let async_agent = result.get("isAsync").and_then(Value::as_bool) == Some(true)
        || str_at(result, "status") == "async_launched"
        || result_text(block).contains("Async agent launched");
    let failed = block.get("is_error").and_then(Value::as_bool) == Some(true);
    let Some(w) = work.iter_mut().find(|w| w.id == id) else {
        // A foreground command sent to the background later (its tool use
        // did not ask for it): work from here on.
        if let (Some(task), false) = (
            Some(str_at(result, "backgroundTaskId")).filter(|t| !t.is_empty()),
            failed,
        ) {
            work.push(Work {
                id: id.to_string(),
                subagent: false,
                task_id: Some(task.to_string()),
                done: false,
            });
        }
        return;
    };
    if failed {
        w.done = true;
    } else if w.subagent {
        if async_agent {
            let agent = str_at(result, "agentId");
            w.task_id = (!agent.is_empty()).then(|| agent.to_string());
        } else {
            w.done = true;
        }
    } else {
        w.task_id = shell_task;
    }
}

/// The text of a tool result's content (a string or text blocks).
fn result_text(block: &Value) -> String {
    match block.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    }
}

/// "… with ID: abc123" in a tool result's text.
fn announced_id(block: &Value) -> Option<String> {
    let text = result_text(block);
    let i = text.find("ID: ")?;
    let id: String = text[i + 4..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
        .collect();
    (!id.is_empty()).then_some(id)
}

/// Every string in `v` that mentions a task notification (bounded depth).
fn strings<'a>(v: &'a Value, out: &mut Vec<&'a str>, depth: usize) {
    if depth > 16 {
        return;
    }
    match v {
        Value::String(s) if s.contains("<task-notification>") => out.push(s),
        Value::Array(a) => a.iter().for_each(|x| strings(x, out, depth + 1)),
        Value::Object(o) => o.values().for_each(|x| strings(x, out, depth + 1)),
        _ => {}
    }
}

/// One `<task-notification>…</task-notification>` block.
struct Notification<'a> {
    task_id: &'a str,
    tool_use_id: &'a str,
    status: &'a str,
}

impl Notification<'_> {
    fn is_final(&self) -> bool {
        FINAL_STATUSES.contains(&self.status.to_ascii_lowercase().as_str())
    }
}

/// The notification blocks in `text`.
fn notifications(text: &str) -> Vec<Notification<'_>> {
    const OPEN: &str = "<task-notification>";
    const CLOSE: &str = "</task-notification>";
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find(OPEN) {
        let after = &rest[i + OPEN.len()..];
        let end = after.find(CLOSE).unwrap_or(after.len());
        let inner = &after[..end];
        out.push(Notification {
            task_id: tag(inner, "task-id"),
            tool_use_id: tag(inner, "tool-use-id"),
            status: tag(inner, "status"),
        });
        rest = &after[end..];
    }
    out
}

/// The trimmed text of the first `<name>…</name>` in `text`, or "".
fn tag<'a>(text: &'a str, name: &str) -> &'a str {
    let open = format!("<{name}>");
    let close = format!("</{name}>");
    let Some(i) = text.find(&open) else {
        return "";
    };
    let after = &text[i + open.len()..];
    after.find(&close).map_or("", |j| after[..j].trim())
}

#[cfg(test)]
mod tests {
    //! Synthetic lines in the shapes the real CLI writes (2.1.173 and
    //! 2.1.332); the recordings themselves are read by
    //! `crates/ccd-claude/tests/background.rs`.
    use super::*;
    use serde_json::json;

    fn lines(ls: &[Value]) -> Vec<u8> {
        let mut out = Vec::new();
        for l in ls {
            out.extend_from_slice(l.to_string().as_bytes());
            out.push(b'\n');
        }
        out
    }

    fn tool_use(id: &str, name: &str, input: Value) -> Value {
        json!({"type":"assistant","message":{"content":[{"type":"tool_use","id":id,"name":name,"input":input}]}})
    }

    fn tool_result(id: &str, text: &str) -> Value {
        json!({"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":id,"content":text}]}})
    }

    /// A tool result with the record's `toolUseResult`.
    fn tool_result_with(id: &str, text: &str, result: Value) -> Value {
        let mut r = tool_result(id, text);
        r["toolUseResult"] = result;
        r
    }

    fn notification(task: &str, tool_use: &str, status: &str) -> String {
        format!(
            "<task-notification>\n<task-id>{task}</task-id>\n<tool-use-id>{tool_use}</tool-use-id>\n\
             <output-file>/tmp/x/tasks/{task}.output</output-file>\n<status>{status}</status>\n\
             <summary>Background command \"Run x\" {status} (exit code 0)</summary>\n</task-notification>"
        )
    }

    fn enqueued(text: &str) -> Value {
        json!({"type":"queue-operation","operation":"enqueue","content":text})
    }

    fn delivered(text: &str) -> Value {
        json!({"type":"user","origin":{"kind":"task-notification"},"message":{"role":"user","content":text}})
    }

    fn background_bash(id: &str, task: &str) -> Vec<Value> {
        vec![
            tool_use(
                id,
                "Bash",
                json!({"command":"sleep 4","run_in_background":true}),
            ),
            tool_result_with(
                id,
                &format!("Command running in background with ID: {task}. Output is being written to: /tmp/x/tasks/{task}.output. You will be notified when it completes."),
                json!({"stdout":"","stderr":"","interrupted":false,"backgroundTaskId":task}),
            ),
            json!({"type":"assistant","message":{"content":[{"type":"text","text":"done"}]}}),
            json!({"type":"system","subtype":"turn_duration","durationMs":444}),
        ]
    }

    #[test]
    fn nothing_in_the_background() {
        let b = lines(&[
            tool_use("t1", "Bash", json!({"command":"ls"})),
            tool_result("t1", "a b"),
        ]);
        assert!(!scan(&b).any());
        assert!(!scan(b"garbage\n{\"half").any());
    }

    #[test]
    fn background_shell_until_its_notification() {
        let mut ls = background_bash("t1", "bri0vybnu");
        assert_eq!(scan(&lines(&ls)).shells, ["t1"]);
        // Words alone are no settlement (the old guess was).
        ls.push(delivered("bri0vybnu completed, t1 exited"));
        assert_eq!(scan(&lines(&ls)).shells, ["t1"]);
        // The queued notification ends it; so does the delivered one alone.
        let n = notification("bri0vybnu", "t1", "completed");
        let mut queued = ls.clone();
        queued.push(enqueued(&n));
        assert!(!scan(&lines(&queued)).any());
        ls.push(delivered(&n));
        assert!(!scan(&lines(&ls)).any());
    }

    #[test]
    fn notification_by_either_id_and_only_with_a_final_status() {
        let ls = background_bash("t1", "b1");
        for (task, tool, status, done) in [
            ("b1", "", "completed", true),
            ("", "t1", "failed", true),
            ("b1", "t1", "killed", true),
            ("b1", "t1", "running", false),
            ("b1", "t1", "", false),
            ("b2", "t2", "completed", false),
        ] {
            let mut l = ls.clone();
            l.push(delivered(&notification(task, tool, status)));
            assert_eq!(scan(&lines(&l)).any(), !done, "{task} {tool} {status}");
        }
        // The model quoting a notification settles nothing.
        let mut l = ls.clone();
        let n = notification("b1", "t1", "completed");
        l.push(json!({"type":"assistant","message":{"content":[{"type":"text","text":n}]}}));
        assert!(scan(&lines(&l)).any());
        // Text blocks carry it too.
        let mut l = ls;
        l.push(json!({"type":"user","message":{"content":[{"type":"text","text":n}]}}));
        assert!(!scan(&lines(&l)).any());
    }

    #[test]
    fn announced_id_without_tool_use_result() {
        let mut ls = vec![
            tool_use(
                "t1",
                "Bash",
                json!({"command":"x","run_in_background":true}),
            ),
            tool_result("t1", "Command running in background with ID: bash_7"),
        ];
        assert_eq!(scan(&lines(&ls)).shells, ["t1"]);
        ls.push(delivered(&notification("bash_7", "", "completed")));
        assert!(!scan(&lines(&ls)).any());
    }

    #[test]
    fn stopped_shell_is_done() {
        for (tool, key) in [
            ("KillShell", "shell_id"),
            ("KillBash", "bash_id"),
            ("TaskStop", "task_id"),
        ] {
            let mut ls = background_bash("t1", "b9");
            ls.push(tool_use("t2", tool, json!({ key: "b9" })));
            assert!(!scan(&lines(&ls)).any(), "{tool}");
        }
    }

    #[test]
    fn refused_background_command_never_started() {
        let ls = vec![
            tool_use(
                "t1",
                "Bash",
                json!({"command":"x","run_in_background":true}),
            ),
            json!({"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1",
                "content":"The user doesn't want to proceed with this tool use.","is_error":true}]}}),
        ];
        assert!(!scan(&lines(&ls)).any());
    }

    #[test]
    fn command_sent_to_the_background_later() {
        let mut ls = vec![
            tool_use("t1", "Bash", json!({"command":"make"})),
            tool_result_with(
                "t1",
                "Command was manually backgrounded with ID: b3",
                json!({"backgroundTaskId":"b3"}),
            ),
        ];
        assert_eq!(scan(&lines(&ls)).shells, ["t1"]);
        ls.push(enqueued(&notification("b3", "t1", "completed")));
        assert!(!scan(&lines(&ls)).any());
    }

    #[test]
    fn foreground_subagent_until_its_result() {
        let mut ls = vec![tool_use(
            "a1",
            "Agent",
            json!({"description":"d","prompt":"explore"}),
        )];
        assert_eq!(scan(&lines(&ls)).subagents, ["a1"]);
        ls.push(tool_result_with(
            "a1",
            "done exploring",
            json!({"status":"completed","agentId":"ag1"}),
        ));
        assert!(!scan(&lines(&ls)).any());
        // Older CLIs call the tool Task.
        let ls = vec![tool_use("a1", "Task", json!({"prompt":"explore"}))];
        assert_eq!(scan(&lines(&ls)).subagents, ["a1"]);
    }

    #[test]
    fn background_subagent_until_its_notification() {
        let launched = |r: Value| {
            vec![
                tool_use("a1", "Agent", json!({"description":"d","prompt":"p"})),
                tool_result_with("a1", "Async agent launched successfully.\nagentId: ag1", r),
            ]
        };
        for result in [
            json!({"isAsync":true,"status":"async_launched","agentId":"ag1"}),
            json!({"status":"async_launched","agentId":"ag1"}),
            // Only the text says so.
            json!(null),
        ] {
            let ls = launched(result.clone());
            assert_eq!(scan(&lines(&ls)).subagents, ["a1"], "{result}");
            let mut done = ls.clone();
            done.push(enqueued(&notification("ag1", "a1", "completed")));
            assert!(!scan(&lines(&done)).any(), "{result}");
        }
        // Named by its agent id only.
        let mut ls = launched(json!({"isAsync":true,"agentId":"ag1"}));
        ls.push(delivered(&notification("ag1", "", "completed")));
        assert!(!scan(&lines(&ls)).any());
        // A message to it wakes it; its next notification ends it again.
        ls.push(tool_use(
            "s1",
            "SendMessage",
            json!({"to":"ag1","message":"more"}),
        ));
        assert_eq!(scan(&lines(&ls)).subagents, ["a1"]);
        ls.push(delivered(&notification("ag1", "a1", "completed")));
        assert!(!scan(&lines(&ls)).any());
    }

    #[test]
    fn request_copies_are_not_the_conversation() {
        // 2.1.332 writes the request's blocks (`api-request-blob`) before
        // the records: a copied result without `toolUseResult` must not end
        // a background subagent, nor a copied tool use start anything.
        let blob = |content: Value| json!({"type":"api-request-blob","hash":"h","message":{"content":content}});
        let ls = vec![
            blob(json!([{"type":"tool_use","id":"a1","name":"Agent","input":{"prompt":"p"}}])),
            blob(json!([{"type":"tool_result","tool_use_id":"a1","content":"launched"}])),
        ];
        assert!(!scan(&lines(&ls)).any());
        let mut ls = ls;
        ls.push(tool_use("a1", "Agent", json!({"prompt":"p"})));
        ls.push(tool_result_with(
            "a1",
            "Async agent launched successfully.",
            json!({"isAsync":true,"status":"async_launched","agentId":"ag1"}),
        ));
        // The same tool use written again changes nothing.
        ls.push(tool_use("a1", "Agent", json!({"prompt":"p"})));
        assert_eq!(scan(&lines(&ls)).subagents, ["a1"]);
        ls.push(enqueued(&notification("ag1", "a1", "completed")));
        assert!(!scan(&lines(&ls)).any());
    }

    #[test]
    fn pending_reads_only_the_tail() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.jsonl");
        let mut body = lines(&background_bash("t1", "b1"));
        assert_eq!(scan(&body).shells, ["t1"]);
        std::fs::write(&p, &body).unwrap();
        assert_eq!(pending(&p).unwrap().shells, ["t1"]);
        // Pushed out of the tail by filler: no longer seen.
        let filler = lines(&[json!({"type":"user","message":{"content":"x".repeat(1000)}})]);
        while (body.len() as u64) < TAIL + 10_000 {
            body.extend_from_slice(&filler);
        }
        std::fs::write(&p, &body).unwrap();
        assert!(!pending(&p).unwrap().any());
    }
}
