//! Is a session still running background work (a background shell, a
//! subagent) that a stop would cut short?
//!
//! Read from the whole transcript, however long, in bounded memory:
//! [`Scanner`] (sans IO) takes the bytes in any pieces, applies each
//! complete line to the rule below and keeps only the work it started;
//! [`Tracker`] keeps a scanner per transcript file with the offset after
//! its last complete line, so each look reads only what was appended since
//! (a file replaced, shortened or rewritten in place is read again from its
//! start). [`pending`] is one fresh look, [`scan`] the rule over bytes in
//! memory; both give the same answer for the same bytes. The rule, checked
//! on the real CLI (2.1.173 and 2.1.332; recordings
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
//!
//! Bounds, each conservative ([`Pending::untracked`] counts what they
//! leave unnamed, and any count there is pending work, for good):
//! - a line longer than [`MAX_LINE`] is not parsed nor held: its bytes
//!   are only searched for what a start needs (a `"tool_use"` block or a
//!   `"backgroundTaskId"` key, as JSON tokens); with either it is possible
//!   work nothing can end, without them it is skipped (an end it held is
//!   missed: the work stays pending);
//! - at most [`MAX_WORK`] pieces of work are tracked: past it the oldest
//!   settled one is forgotten (after which a `SendMessage` to a subagent
//!   no longer tracked counts as work woken under the name it was sent
//!   to), and with none settled a new start is untracked;
//! - an id longer than [`MAX_ID`] bytes is not kept: a start under such a
//!   tool-use id is untracked, such a task id names nothing.
//!
//! Lines that name none of `tool_use`, `<task-notification>` or a `\u`
//! escape cannot change the answer and are not parsed.

use super::follow::Identity;
use memchr::memmem;
use serde_json::Value;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

/// The longest line that is parsed; a longer one is searched only (module
/// doc, "Bounds").
pub const MAX_LINE: usize = 16 * 1024 * 1024;
/// The most pieces of work tracked per transcript, settled ones included.
pub const MAX_WORK: usize = 256;
/// The longest tool-use or task id kept, in bytes.
pub const MAX_ID: usize = 128;
/// How much one read takes.
const READ_CHUNK: usize = 64 * 1024;
/// How many bytes before a tracker's offset it checks again at each look,
/// to notice a file rewritten in place.
const SEAL: u64 = 64;

/// Background work still running, by tool-use id.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Pending {
    pub shells: Vec<String>,
    pub subagents: Vec<String>,
    /// Possible work the scan could not name (module doc, "Bounds"): lines
    /// over [`MAX_LINE`] that could start work, starts past [`MAX_WORK`],
    /// ids over [`MAX_ID`].
    pub untracked: usize,
}

impl Pending {
    pub fn any(&self) -> bool {
        !self.shells.is_empty() || !self.subagents.is_empty() || self.untracked > 0
    }
}

/// Pending background work in the transcript at `path`, read whole (in
/// bounded memory). A caller that asks again should keep a [`Tracker`].
pub fn pending(path: &Path) -> io::Result<Pending> {
    Tracker::default().look(path)
}

/// The rule (module doc) over transcript bytes in memory; a last line
/// without its newline counts as it stands.
pub fn scan(body: &[u8]) -> Pending {
    let mut s = Scanner::default();
    s.feed(body);
    s.pending()
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
#[derive(Debug, Clone)]
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

/// The work a transcript started, within [`MAX_WORK`] and [`MAX_ID`].
#[derive(Debug, Clone, Default)]
struct Works {
    items: Vec<Work>,
    /// Starts not tracked (module doc, "Bounds").
    untracked: usize,
    /// A settled piece was forgotten to make room.
    evicted: bool,
}

impl Works {
    /// Work starts under tool-use `id` (not empty, not seen before).
    fn start(&mut self, id: &str, subagent: bool, task_id: Option<&str>) {
        if id.len() > MAX_ID {
            self.untracked = self.untracked.saturating_add(1);
            return;
        }
        if self.items.len() >= MAX_WORK {
            match self.items.iter().position(|w| w.done) {
                Some(i) => {
                    self.items.remove(i);
                    self.evicted = true;
                }
                None => {
                    self.untracked = self.untracked.saturating_add(1);
                    return;
                }
            }
        }
        self.items.push(Work {
            id: id.to_string(),
            subagent,
            task_id: task_id.and_then(kept_id),
            done: false,
        });
    }

    fn pending(&self) -> Pending {
        let mut p = Pending {
            untracked: self.untracked,
            ..Pending::default()
        };
        for w in self.items.iter().filter(|w| !w.done) {
            if w.subagent {
                p.subagents.push(w.id.clone());
            } else {
                p.shells.push(w.id.clone());
            }
        }
        p
    }
}

/// `id` as kept: `None` when empty or over [`MAX_ID`].
fn kept_id(id: &str) -> Option<String> {
    (!id.is_empty() && id.len() <= MAX_ID).then(|| id.to_string())
}

/// A line over [`MAX_LINE`] being skipped: whether it could start work.
#[derive(Debug, Clone, Default)]
struct LongLine {
    could_start: bool,
    /// The last bytes seen, for a token split between two pieces.
    carry: Vec<u8>,
}

/// What in an over-long line could start work (module doc, "Bounds").
const START_TOKENS: [&[u8]; 2] = [b"\"tool_use\"", b"\"backgroundTaskId\""];

impl LongLine {
    fn see(&mut self, part: &[u8]) {
        if self.could_start || part.is_empty() {
            return;
        }
        let keep = START_TOKENS.iter().map(|t| t.len()).max().unwrap_or(0) - 1;
        let head = &part[..part.len().min(keep)];
        let mut seam = std::mem::take(&mut self.carry);
        seam.extend_from_slice(head);
        self.could_start = START_TOKENS
            .iter()
            .any(|t| memmem::find(&seam, t).is_some() || memmem::find(part, t).is_some());
        if part.len() >= keep {
            seam.clear();
            seam.extend_from_slice(&part[part.len() - keep..]);
        } else if seam.len() > keep {
            seam.drain(..seam.len() - keep);
        }
        self.carry = seam;
    }
}

/// The rule over a transcript's bytes, fed in any pieces (sans IO): the
/// answer depends on the bytes only, never on how they were cut.
#[derive(Debug, Clone, Default)]
pub struct Scanner {
    works: Works,
    /// The unfinished last line (at most [`MAX_LINE`] bytes).
    line: Vec<u8>,
    /// The unfinished last line when it is over [`MAX_LINE`].
    long: Option<LongLine>,
    /// Bytes fed.
    fed: u64,
    /// Bytes fed up to and including the last newline.
    complete: u64,
}

impl Scanner {
    /// Takes the next bytes of the transcript.
    pub fn feed(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let Some(i) = memchr::memchr(b'\n', bytes) else {
                self.take_part(bytes);
                self.fed += bytes.len() as u64;
                return;
            };
            if self.line.is_empty() && self.long.is_none() && i <= MAX_LINE {
                // A whole line in this piece: no copy.
                self.works.apply_line(&bytes[..i]);
            } else {
                self.take_part(&bytes[..i]);
                self.end_line();
            }
            self.fed += i as u64 + 1;
            self.complete = self.fed;
            bytes = &bytes[i + 1..];
        }
    }

    /// The answer over what was fed, the unfinished last line included as
    /// it stands.
    pub fn pending(&self) -> Pending {
        if self.line.is_empty() && self.long.is_none() {
            return self.works.pending();
        }
        let mut works = self.works.clone();
        match &self.long {
            Some(long) if long.could_start => works.untracked = works.untracked.saturating_add(1),
            Some(_) => {}
            None => works.apply_line(&self.line),
        }
        works.pending()
    }

    /// Bytes fed up to and including the last newline.
    pub fn complete_bytes(&self) -> u64 {
        self.complete
    }

    /// Forgets the unfinished last line (it will be fed again whole).
    pub fn drop_unfinished(&mut self) {
        self.line = Vec::new();
        self.long = None;
        self.fed = self.complete;
    }

    fn take_part(&mut self, part: &[u8]) {
        if let Some(long) = &mut self.long {
            long.see(part);
        } else if self.line.len() + part.len() > MAX_LINE {
            let mut long = LongLine::default();
            long.see(&self.line);
            long.see(part);
            self.line = Vec::new();
            self.long = Some(long);
        } else {
            self.line.extend_from_slice(part);
        }
    }

    fn end_line(&mut self) {
        if let Some(long) = self.long.take() {
            if long.could_start {
                self.works.untracked = self.works.untracked.saturating_add(1);
            }
            return;
        }
        let line = std::mem::take(&mut self.line);
        self.works.apply_line(&line);
        // Keep a small buffer for the next piece; give a big one back.
        if line.capacity() <= READ_CHUNK {
            self.line = line;
            self.line.clear();
        }
    }
}

/// One transcript file followed across looks: the scanner over its
/// complete lines, and where they end. Its memory is the tracked work
/// (at most [`MAX_WORK`] × 2 × [`MAX_ID`] bytes of ids) and [`SEAL`]
/// bytes; a look holds besides at most one read ([`READ_CHUNK`]) and one
/// line ([`MAX_LINE`]) with its parse.
#[derive(Debug, Clone, Default)]
pub struct Tracker {
    /// Over the complete lines before `scanner.complete_bytes()`.
    scanner: Scanner,
    identity: Option<Identity>,
    /// The bytes just before the offset, as last read.
    seal: Vec<u8>,
    /// Bytes the last look read.
    last_read: u64,
}

impl Tracker {
    /// Pending work in the file at `path` now. Reads what was appended
    /// since the last look; the whole file when it is another file (a new
    /// inode), shorter than the offset, or changed before it.
    pub fn look(&mut self, path: &Path) -> io::Result<Pending> {
        self.last_read = 0;
        let mut f = File::open(path)?;
        let meta = f.metadata()?;
        let identity = Identity::of(&meta);
        let len = meta.len();
        let offset = self.scanner.complete_bytes();
        let same = self.identity == Some(identity)
            && len >= offset
            && read_range(&mut f, offset - self.seal.len() as u64, self.seal.len())? == self.seal;
        if !same {
            if self.identity.is_some() {
                tracing::debug!(path = %path.display(), offset, len, "transcript replaced or rewritten: scanning it again");
            }
            *self = Tracker {
                identity: Some(identity),
                ..Tracker::default()
            };
        }
        let offset = self.scanner.complete_bytes();
        f.seek(SeekFrom::Start(offset))?;
        let mut rest = (&mut f).take(len - offset);
        let mut buf = vec![0u8; READ_CHUNK];
        let read = loop {
            match rest.read(&mut buf) {
                Ok(0) => break Ok(()),
                Ok(n) => {
                    self.last_read += n as u64;
                    self.scanner.feed(&buf[..n]);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        let answer = self.scanner.pending();
        self.scanner.drop_unfinished();
        let end = self.scanner.complete_bytes();
        let seal_len = end.min(SEAL);
        self.seal = read_range(&mut f, end - seal_len, seal_len as usize)?;
        read?;
        Ok(answer)
    }

    /// The offset after the last complete line read.
    pub fn offset(&self) -> u64 {
        self.scanner.complete_bytes()
    }

    /// Bytes the last [`Tracker::look`] read from the file (not counting
    /// the few that check it is still the same).
    pub fn last_read(&self) -> u64 {
        self.last_read
    }
}

/// `len` bytes at `offset` (fewer at the end of the file).
fn read_range(f: &mut File, offset: u64, len: usize) -> io::Result<Vec<u8>> {
    f.seek(SeekFrom::Start(offset))?;
    let mut out = Vec::with_capacity(len);
    f.take(len as u64).read_to_end(&mut out)?;
    Ok(out)
}

impl Works {
    /// The rule over one complete line.
    fn apply_line(&mut self, line: &[u8]) {
        if !may_matter(line) {
            return;
        }
        let Ok(v) = serde_json::from_slice::<Value>(line) else {
            return;
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
                for w in self.items.iter_mut() {
                    if w.named_by(n.tool_use_id) || w.named_by(n.task_id) {
                        w.done = true;
                    }
                }
            }
        }
        let Some(content) = v.pointer("/message/content").and_then(Value::as_array) else {
            return;
        };
        // Only the conversation's own records: 2.1.332 also writes copies
        // of the request (`api-request-blob`, tool uses and results
        // included) before the records themselves.
        for block in content {
            match (kind, block.get("type").and_then(Value::as_str)) {
                ("assistant", Some("tool_use")) => self.tool_use(block),
                ("user", Some("tool_result")) => self.tool_result(&v, block),
                _ => {}
            }
        }
    }
}

/// Whether a line can change the answer at all: every start and end needs
/// a `tool_use` block, a `tool_use_id` or a `<task-notification>` — as
/// bytes, unless the JSON spells them with `\u` escapes.
fn may_matter(line: &[u8]) -> bool {
    memmem::find(line, b"tool_use").is_some()
        || memmem::find(line, b"<task-notification>").is_some()
        || memmem::find(line, b"\\u").is_some()
}

fn str_at<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

impl Works {
    /// An assistant's tool use: work starts, is stopped, or is woken.
    fn tool_use(&mut self, block: &Value) {
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
                for w in self.items.iter_mut().filter(|w| w.named_by(target)) {
                    w.done = true;
                }
            }
            "SendMessage" => {
                let to = str_at(input, "to");
                let mut woken = false;
                for w in self
                    .items
                    .iter_mut()
                    .filter(|w| w.subagent && w.named_by(to))
                {
                    w.done = false;
                    woken = true;
                }
                // The subagent may be one forgotten to make room: work under
                // the name it was sent to, until a notification names it.
                if !woken && self.evicted && !to.is_empty() {
                    self.start(to, true, Some(to));
                }
            }
            // Empty, or seen already (a record written twice).
            _ if id.is_empty() || self.items.iter().any(|w| w.id == id) => {}
            "Agent" | "Task" => self.start(id, true, None),
            _ if input.get("run_in_background").and_then(Value::as_bool) == Some(true) => {
                self.start(id, false, None)
            }
            _ => {}
        }
    }

    /// A tool result (`record` is the whole line, whose `toolUseResult` says
    /// whether the work went to the background).
    fn tool_result(&mut self, record: &Value, block: &Value) {
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
        let Some(w) = self.items.iter_mut().find(|w| w.id == id) else {
            // A foreground command sent to the background later (its tool use
            // did not ask for it): work from here on.
            if let (Some(task), false) = (
                Some(str_at(result, "backgroundTaskId")).filter(|t| !t.is_empty()),
                failed,
            ) {
                self.start(id, false, Some(task));
            }
            return;
        };
        if failed {
            w.done = true;
        } else if w.subagent {
            if async_agent {
                w.task_id = kept_id(str_at(result, "agentId"));
            } else {
                w.done = true;
            }
        } else {
            w.task_id = shell_task.as_deref().and_then(kept_id);
        }
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

    /// Every cut of `body` into two and three pieces gives the answer of
    /// one piece.
    fn same_in_any_pieces(body: &[u8]) {
        let whole = scan(body);
        for i in 0..=body.len() {
            let mut s = Scanner::default();
            s.feed(&body[..i]);
            s.feed(&body[i..]);
            assert_eq!(s.pending(), whole, "cut at {i}");
        }
        for step in [1, 3, 7] {
            let mut s = Scanner::default();
            for piece in body.chunks(step) {
                s.feed(piece);
            }
            assert_eq!(s.pending(), whole, "pieces of {step}");
        }
    }

    #[test]
    fn the_answer_does_not_depend_on_the_pieces() {
        let mut ls = background_bash("t1", "b1");
        ls.extend(background_bash("t2", "b2"));
        ls.push(enqueued(&notification("b1", "t1", "completed")));
        let mut body = lines(&ls);
        same_in_any_pieces(&body);
        // A half-written last line counts as it stands.
        body.extend_from_slice(br#"{"type":"queue-operation","content":"<task-notif"#);
        same_in_any_pieces(&body);
    }

    #[test]
    fn escaped_spellings_are_still_read() {
        // `\u` escapes are parsed even without the plain words.
        let n = delivered(&notification("b1", "t1", "completed"))
            .to_string()
            .replace('<', "\\u003c");
        assert!(!n.contains("<task-notification>"));
        let mut body = lines(&background_bash("t1", "b1"));
        body.extend_from_slice(n.as_bytes());
        body.push(b'\n');
        assert!(!may_matter(&lines(&[
            json!({"type":"user","message":{"content":"hi"}})
        ])));
        assert!(!scan(&body).any(), "{}", String::from_utf8_lossy(&body));
        let t = r#"{"type":"assistant","message":{"content":[{"type":"tool\u005fuse","id":"t9","name":"Agent","input":{}}]}}"#;
        assert_eq!(scan(t.as_bytes()).subagents, ["t9"]);
    }

    /// `line` padded past [`MAX_LINE`] with `pad` inside a string.
    fn long_line(v: Value, pad: &str) -> Vec<u8> {
        let mut v = v;
        v["padding"] = Value::String(pad.repeat(MAX_LINE / pad.len() + 1));
        let mut out = v.to_string().into_bytes();
        out.push(b'\n');
        out
    }

    #[test]
    fn a_line_over_the_bound_is_possible_work_only_if_it_could_start_some() {
        // Could start work: untracked, for good.
        let start = long_line(
            tool_use(
                "t1",
                "Bash",
                json!({"command":"x","run_in_background":true}),
            ),
            "x",
        );
        let p = scan(&start);
        assert_eq!((p.shells.len(), p.untracked), (0, 1));
        let mut s = Scanner::default();
        for piece in start.chunks(READ_CHUNK - 1) {
            s.feed(piece);
        }
        assert_eq!(s.pending(), p);
        assert!(s.line.capacity() <= READ_CHUNK, "the long line was held");
        // Half of it fed: already possible work.
        // Over the bound and not finished: already possible work.
        let mut half = Scanner::default();
        half.feed(&start[..MAX_LINE + 1]);
        assert_eq!(half.pending().untracked, 1);
        let started = lines(&[tool_result_with("t0", "", json!({"backgroundTaskId":"b0"}))]);
        let mut long_result = long_line(serde_json::from_slice(&started).unwrap(), "y");
        long_result.extend_from_slice(&lines(&background_bash("t2", "b2")));
        assert_eq!(scan(&long_result).untracked, 1);
        // Words that only mention it (escaped in a string) are no start.
        let quoted = long_line(
            json!({"type":"user","message":{"content":"\"tool_use\" \"backgroundTaskId\""}}),
            "z",
        );
        assert!(!scan(&quoted).any());
        // An end in an over-long line is missed: the work stays pending.
        let mut body = lines(&background_bash("t1", "b1"));
        body.extend_from_slice(&long_line(
            delivered(&notification("b1", "t1", "completed")),
            "w",
        ));
        assert_eq!(scan(&body).shells, ["t1"]);
    }

    #[test]
    fn a_start_token_cut_anywhere_in_a_long_line_is_found() {
        for token in START_TOKENS {
            let mut bytes = b"x".repeat(40);
            bytes.extend_from_slice(token);
            bytes.extend_from_slice(&b"y".repeat(40));
            for i in 0..=bytes.len() {
                for j in i..=bytes.len() {
                    let mut long = LongLine::default();
                    for piece in [&bytes[..i], &bytes[i..j], &bytes[j..]] {
                        long.see(piece);
                    }
                    assert!(long.could_start, "cut at {i}, {j}");
                }
            }
            // Short pieces, one byte at a time.
            let mut long = LongLine::default();
            for b in &bytes {
                long.see(std::slice::from_ref(b));
            }
            assert!(long.could_start);
            let mut none = LongLine::default();
            none.see(&bytes[..40 + token.len() - 1]);
            assert!(!none.could_start);
        }
    }

    #[test]
    fn past_the_work_bound_settled_work_is_forgotten_and_new_work_untracked() {
        let mut ls = Vec::new();
        for i in 0..MAX_WORK {
            ls.extend(background_bash(&format!("t{i}"), &format!("b{i}")));
        }
        let p = scan(&lines(&ls));
        assert_eq!((p.shells.len(), p.untracked), (MAX_WORK, 0));
        // One more while all run: untracked, pending for good.
        let mut over = ls.clone();
        over.extend(background_bash("t-extra", "b-extra"));
        over.push(enqueued(&notification("b-extra", "t-extra", "completed")));
        let p = scan(&lines(&over));
        assert_eq!(p.shells.len(), MAX_WORK);
        assert!(p.untracked > 0);
        // One settles: its room is the next one's.
        ls.push(enqueued(&notification("b0", "t0", "completed")));
        ls.extend(background_bash("t-next", "b-next"));
        let p = scan(&lines(&ls));
        assert_eq!((p.shells.len(), p.untracked), (MAX_WORK, 0));
        assert!(p.shells.contains(&"t-next".to_string()));
        // Settled subagents forgotten: a message to one wakes it by name.
        let mut agents = Vec::new();
        for i in 0..=MAX_WORK {
            agents.push(tool_use(&format!("a{i}"), "Agent", json!({"prompt":"p"})));
            agents.push(tool_result_with(
                &format!("a{i}"),
                "Async agent launched successfully.",
                json!({"isAsync":true,"agentId":format!("ag{i}")}),
            ));
            agents.push(enqueued(&notification(&format!("ag{i}"), "", "completed")));
        }
        assert!(!scan(&lines(&agents)).any());
        agents.push(tool_use(
            "s1",
            "SendMessage",
            json!({"to":"ag0","message":"more"}),
        ));
        assert_eq!(scan(&lines(&agents)).subagents, ["ag0"]);
        agents.push(delivered(&notification("ag0", "", "completed")));
        assert!(!scan(&lines(&agents)).any());
    }

    #[test]
    fn ids_over_the_bound_are_not_kept() {
        let long = "i".repeat(MAX_ID + 1);
        // A start under such an id: untracked.
        let p = scan(&lines(&background_bash(&long, "b1")));
        assert!(p.shells.is_empty() && p.untracked > 0, "{p:?}");
        // Such a task id names nothing: the tool-use id still does.
        let ls = background_bash("t1", &long);
        let mut by_task = ls.clone();
        by_task.push(enqueued(&notification(&long, "", "completed")));
        assert_eq!(scan(&lines(&by_task)).shells, ["t1"]);
        let mut by_tool = ls;
        by_tool.push(enqueued(&notification(&long, "t1", "completed")));
        assert!(!scan(&lines(&by_tool)).any());
    }

    #[test]
    fn pending_reads_the_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.jsonl");
        let mut body = lines(&background_bash("t1", "b1"));
        std::fs::write(&p, &body).unwrap();
        assert_eq!(pending(&p).unwrap().shells, ["t1"]);
        // Far more than the old 2 MiB tail after it: still seen.
        let filler = lines(&[json!({"type":"user","message":{"content":"x".repeat(1000)}})]);
        while body.len() < 3 * 1024 * 1024 {
            body.extend_from_slice(&filler);
        }
        std::fs::write(&p, &body).unwrap();
        assert_eq!(pending(&p).unwrap().shells, ["t1"]);
        assert_eq!(pending(&p).unwrap(), scan(&body));
    }
}
