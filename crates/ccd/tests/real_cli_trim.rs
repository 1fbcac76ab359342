//! `ccd trim` is lossless, proven with the REAL Claude Code CLI on each
//! pinned version (issue 17): a session of several turns with tool calls
//! (Bash and Write) is made under ccd and ended; then `claude --resume` (via
//! `ccd attach`) runs twice from the same saved config dir, once on the
//! untouched transcript and once on the trimmed one, and the first Messages
//! request each sends (logged whole by `ccd-mock-api --log-bodies`) must
//! carry the same system prompt, messages and tools.
//!
//! The one part of a request allowed to differ is the billing header's
//! hash suffixes (`cc_version=<v>.<hex>;`, `cch=<hex>;`), which the CLI
//! derives from the request (docs/claude-cli-compat.md, "What resume
//! reads"); it never differed without the messages differing too.
//!
//! When the CLI cannot be installed: with `$CI` set the test fails; else it
//! prints "SKIPPED: …" and passes.

mod common;

use common::real::{self, MockApi, MockUsage};
use common::{wait_for, Sandbox};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(60);

/// Flags that let the session run Bash and Write without asking.
fn tool_args(version: &str) -> Vec<&'static str> {
    if version.starts_with("2.1.1") {
        vec!["--allowed-tools=Bash,Write"]
    } else {
        vec![
            "--permission-mode",
            "acceptEdits",
            "--allowed-tools=Bash,Write",
        ]
    }
}

fn transcript_of(sb: &Sandbox, sid: &str) -> Option<PathBuf> {
    ccd_claude::transcript::find_by_session_id(&sb.config.join("projects"), sid)
}

fn wait_reply(sb: &Sandbox, mock: &MockApi, sid: &str, words: &str, version: &str) {
    let deadline = Instant::now() + T;
    loop {
        if transcript_of(sb, sid)
            .as_deref()
            .and_then(real::assistant_usage)
            .is_some_and(|(_, w)| w == words)
        {
            return;
        }
        if Instant::now() > deadline {
            let screen = sb.run(&["screen", sid]);
            panic!(
                "[{version}] timed out waiting for the reply {words:?} in {sid}\nscreen:\n{}\n\
                 mock requests:\n{}\nlogs:\n{}",
                String::from_utf8_lossy(&screen.stdout),
                mock.summary(),
                sb.logs()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn copy_dir(from: &Path, to: &Path) {
    let st = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .expect("cp");
    assert!(st.success(), "cp -a {} {}", from.display(), to.display());
}

/// Puts the config dir back as it was saved: every resume starts from the
/// same files (what the first resume wrote is gone).
fn restore_config(sb: &Sandbox, saved: &Path) {
    std::fs::remove_dir_all(&sb.config).unwrap();
    copy_dir(saved, &sb.config);
}

fn wait_dead(sb: &Sandbox, sid: &str) {
    wait_for(T, "the session dead in ccd ls", || {
        (common::row(sb, sid)["state"] == "dead").then_some(())
    });
}

/// What the first Messages request with tools after `from` sent: system,
/// messages and tool names.
struct FirstRequest {
    system: Value,
    messages: Vec<Value>,
    tools: Vec<String>,
}

fn first_request_after(mock: &MockApi, from: usize) -> Option<FirstRequest> {
    let b = mock
        .requests()
        .into_iter()
        .skip(from)
        .filter(|r| {
            r["kind"]
                .as_str()
                .is_some_and(|k| k.starts_with("messages"))
        })
        .map(|r| r["full_body"].clone())
        .find(|b| b["tools"].as_array().is_some_and(|t| !t.is_empty()))?;
    Some(FirstRequest {
        system: b["system"].clone(),
        messages: b["messages"].as_array().cloned().unwrap_or_default(),
        tools: b["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["name"].as_str().map(String::from))
            .collect(),
    })
}

/// The system prompt with the billing header's request-derived hashes
/// blanked.
fn normalized_system(system: &Value) -> String {
    let text = system.to_string();
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(i) = ["cc_version=", "cch="]
        .iter()
        .filter_map(|k| rest.find(k).map(|i| (i, k.len())))
        .min()
        .map(|(i, l)| i + l)
    {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        // cc_version=<digits and dots>.<hex>;  cch=<hex>;
        let end = rest.find(';').unwrap_or(rest.len());
        let value = &rest[..end];
        match value.rfind('.') {
            Some(dot) if value[..dot].chars().all(|c| c.is_ascii_digit() || c == '.') => {
                out.push_str(&value[..=dot]);
            }
            _ => {}
        }
        out.push('*');
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// A one-line picture of a message, for a failure's diff.
fn short(m: &Value) -> String {
    let blocks: Vec<String> = match &m["content"] {
        Value::String(s) => vec![format!("text:{}", s.chars().take(50).collect::<String>())],
        Value::Array(a) => a
            .iter()
            .map(|b| match b["type"].as_str() {
                Some("text") => format!(
                    "text:{}",
                    b["text"]
                        .as_str()
                        .unwrap_or("")
                        .chars()
                        .take(50)
                        .collect::<String>()
                ),
                Some(t) => t.to_string(),
                None => "?".into(),
            })
            .collect(),
        _ => vec![],
    };
    format!(
        "{}[{}]",
        m["role"].as_str().unwrap_or("?"),
        blocks.join(", ")
    )
}

/// Resumes `sid` (dead) under ccd, sends one prompt, and returns the first
/// request the resumed CLI sent; the session is ended again.
fn resume_and_capture(
    sb: &Sandbox,
    mock: &MockApi,
    sid: &str,
    version: &str,
    what: &str,
    shown: &str,
) -> FirstRequest {
    let a = common::pty::PtyRun::start(sb, &["attach", sid], None);
    a.wait_text(shown, T);
    let from = mock.requests().len();
    sb.ok(&["send", sid, "after resume"]);
    wait_reply(sb, mock, sid, "ACK: after resume", version);
    let req = first_request_after(mock, from).unwrap_or_else(|| {
        panic!(
            "[{version}] {what}: no Messages request with tools after the resume\n{}",
            mock.summary()
        )
    });
    sb.ok(&["kill", sid]);
    drop(a);
    wait_dead(sb, sid);
    req
}

/// The untouched resume's request `a` and a trimmed one's `b` carry the
/// same system prompt (billing hashes aside), messages and tools.
fn same_request(a: &FirstRequest, b: &FirstRequest, version: &str, said: &str) {
    assert_eq!(
        normalized_system(&a.system),
        normalized_system(&b.system),
        "[{version}] the system prompt differs after trim\n--- {said}"
    );
    if a.messages != b.messages {
        let first = (0..a.messages.len().max(b.messages.len()))
            .find(|&i| a.messages.get(i) != b.messages.get(i))
            .unwrap_or(0);
        if let Ok(dir) = std::env::var("CCD_TRIM_TEST_DUMP") {
            let _ = std::fs::write(
                format!("{dir}/{version}-untouched.json"),
                serde_json::to_string_pretty(&a.messages).unwrap_or_default(),
            );
            let _ = std::fs::write(
                format!("{dir}/{version}-trimmed.json"),
                serde_json::to_string_pretty(&b.messages).unwrap_or_default(),
            );
        }
        let list = |m: &[Value]| m.iter().map(short).collect::<Vec<_>>().join("\n  ");
        panic!(
            "[{version}] the resumed messages differ after trim ({} -> {}), first at #{first}:\n\
             untouched:\n  {}\ntrimmed:\n  {}\n--- {said}",
            a.messages.len(),
            b.messages.len(),
            list(&a.messages),
            list(&b.messages),
        );
    }
    assert_eq!(
        a.tools, b.tools,
        "[{version}] the tool list differs\n--- {said}"
    );
}

/// A session made under the real CLI for one scenario.
struct Made {
    mock: MockApi,
    sb: Sandbox,
    dir: PathBuf,
    sid: String,
}

/// The real CLI of `version` under ccd, a mock that logs bodies, and a new
/// session in `project` that may run Bash and Write; `None`: skipped.
fn make(version: &str, project: &str) -> Option<Made> {
    let claude = real::claude_or_skip(version)?;
    let mock = MockApi::start_logging_bodies(MockUsage::SMALL);
    let sb = real::sandbox(&mock, &claude, version);
    let dir = sb.project(project);
    let mut args = vec!["new", "--detach", "--cwd", dir.to_str().unwrap(), "--"];
    args.extend(tool_args(version));
    let sid = sb.ok(&args).trim().to_string();
    Some(Made { mock, sb, dir, sid })
}

impl Made {
    fn turn(&self, prompt: &str, reply: &str, version: &str) {
        self.sb.ok(&["send", &self.sid, prompt]);
        wait_reply(&self.sb, &self.mock, &self.sid, reply, version);
    }

    /// Ends the session and saves the config dir; the transcript's path
    /// and bytes.
    fn end_and_save(&self) -> (PathBuf, PathBuf, Vec<u8>) {
        self.sb.ok(&["kill", &self.sid]);
        wait_dead(&self.sb, &self.sid);
        let saved = self.sb.tmp.path().join("saved-config");
        copy_dir(&self.sb.config, &saved);
        let transcript = transcript_of(&self.sb, &self.sid).expect("the transcript");
        let untouched = std::fs::read(&transcript).unwrap();
        (saved, transcript, untouched)
    }
}

fn trim_version(version: &str) {
    let started = Instant::now();
    // A session of several turns, with a Bash and a Write tool call.
    let Some(made) = make(version, "trimmed") else {
        return;
    };
    made.turn("hello one", "ACK: hello one", version);
    made.turn("TOOL:echo trim-tool-ran", "done", version);
    made.turn("in between", "ACK: in between", version);
    let written = made.dir.join("new.txt");
    made.turn(&format!("WRITE:{}", written.display()), "done", version);
    assert!(written.exists(), "[{version}] the Write tool did not run");
    made.turn("hello two", "ACK: hello two", version);
    let (saved, transcript, untouched) = made.end_and_save();
    let Made { mock, sb, sid, .. } = made;

    // The untouched transcript, resumed.
    let a = resume_and_capture(&sb, &mock, &sid, version, "untouched", "hello two");

    // The same files again, trimmed, resumed.
    restore_config(&sb, &saved);
    assert_eq!(std::fs::read(&transcript).unwrap(), untouched);
    let dry = sb.ok(&["trim", &sid, "--dry-run"]);
    assert_eq!(
        std::fs::read(&transcript).unwrap(),
        untouched,
        "[{version}] --dry-run changed the transcript:\n{dry}"
    );
    let said = sb.ok(&["trim", &sid]);
    let trimmed = std::fs::read(&transcript).unwrap();
    assert!(
        trimmed.len() < untouched.len(),
        "[{version}] trim dropped nothing ({} bytes):\n{said}",
        untouched.len()
    );
    let b = resume_and_capture(&sb, &mock, &sid, version, "trimmed", "hello two");
    same_request(
        &a,
        &b,
        version,
        &format!("trim said:\n{said}\n--- dry run:\n{dry}"),
    );

    // --drop-file-history costs /rewind's checkpoints, not what the model
    // sees; --undo puts the exact bytes back.
    restore_config(&sb, &saved);
    let said = sb.ok(&["trim", &sid, "--drop-file-history"]);
    let no_history = std::fs::read(&transcript).unwrap();
    assert!(
        no_history.len() < trimmed.len(),
        "[{version}] --drop-file-history dropped no more ({} bytes):\n{said}",
        no_history.len()
    );
    sb.ok(&["trim", "--undo", &sid]);
    assert_eq!(
        std::fs::read(&transcript).unwrap(),
        untouched,
        "[{version}] --undo did not restore the exact bytes"
    );
    sb.ok(&["trim", &sid, "--drop-file-history"]);
    assert_eq!(std::fs::read(&transcript).unwrap(), no_history);
    let c = resume_and_capture(
        &sb,
        &mock,
        &sid,
        version,
        "trimmed without file history",
        "hello two",
    );
    same_request(
        &a,
        &c,
        version,
        &format!("trim --drop-file-history said:\n{said}"),
    );

    // The conversation really was there: both turns with tools included.
    let texts: Vec<String> = a.messages.iter().map(short).collect();
    assert!(
        a.messages.len() >= 9 && texts.iter().any(|t| t.contains("tool_use")),
        "[{version}] the resumed request lacks the history: {texts:?}"
    );
    eprintln!(
        "[{version}] trim: {} -> {} bytes ({} without file history), resumed request identical \
         ({} messages) in {:.1}s",
        untouched.len(),
        trimmed.len(),
        no_history.len(),
        a.messages.len(),
        started.elapsed().as_secs_f64()
    );
}

/// A session compacted with `/compact`, then `ccd trim --before-compact`:
/// what precedes the boundary goes, the resumed request stays the same.
fn compact_version(version: &str) {
    let started = Instant::now();
    let Some(made) = make(version, "compacted") else {
        return;
    };
    made.turn("hello one", "ACK: hello one", version);
    made.turn("TOOL:echo before-compact", "done", version);
    made.sb.ok(&["send", &made.sid, "/compact"]);
    wait_for(T, "a compaction boundary in the transcript", || {
        let t = transcript_of(&made.sb, &made.sid)?;
        std::fs::read_to_string(t)
            .ok()?
            .contains("\"compact_boundary\"")
            .then_some(())
    });
    made.turn("after compact", "ACK: after compact", version);
    let (saved, transcript, untouched) = made.end_and_save();
    let Made { mock, sb, sid, .. } = made;
    if let Ok(dir) = std::env::var("CCD_TRIM_TEST_DUMP") {
        let _ = std::fs::write(format!("{dir}/{version}-compacted.jsonl"), &untouched);
    }
    let a = resume_and_capture(&sb, &mock, &sid, version, "untouched", "after compact");

    // The default trim crosses the boundary (the history before it stays).
    restore_config(&sb, &saved);
    let said = sb.ok(&["trim", &sid]);
    let by_default = std::fs::read(&transcript).unwrap().len();
    let b = resume_and_capture(&sb, &mock, &sid, version, "trimmed", "after compact");
    same_request(&a, &b, version, &format!("trim said:\n{said}"));

    restore_config(&sb, &saved);
    let said_bc = sb.ok(&["trim", &sid, "--before-compact"]);
    let trimmed = std::fs::read(&transcript).unwrap();
    assert!(
        trimmed.len() < by_default,
        "[{version}] --before-compact dropped nothing:\n{said_bc}"
    );
    assert!(
        String::from_utf8_lossy(&trimmed).contains("\"compact_boundary\""),
        "[{version}] --before-compact lost the boundary:\n{said_bc}"
    );
    let c = resume_and_capture(&sb, &mock, &sid, version, "before-compact", "after compact");
    same_request(
        &a,
        &c,
        version,
        &format!("trim --before-compact said:\n{said_bc}"),
    );
    eprintln!(
        "[{version}] compacted: {} bytes, trimmed {by_default}, --before-compact {}; resumed \
         request identical ({} messages) in {:.1}s",
        untouched.len(),
        trimmed.len(),
        a.messages.len(),
        started.elapsed().as_secs_f64()
    );
}

/// Runs `f` for each pinned version, one thread each; fails with every
/// version's failure.
/// `ccd archive` (issue 56): a conversation archived and put back with
/// `--restore`, and one archived `--trim`med and put back by `ccd attach`,
/// resume with the same first request as the untouched one.
fn archive_version(version: &str) {
    let Some(made) = make(version, "archived") else {
        return;
    };
    made.turn("hello one", "ACK: hello one", version);
    let written = made.dir.join("kept.txt");
    made.turn(&format!("WRITE:{}", written.display()), "done", version);
    made.turn("hello two", "ACK: hello two", version);
    let (saved, transcript, untouched) = made.end_and_save();
    let Made { mock, sb, sid, .. } = made;
    let a = resume_and_capture(&sb, &mock, &sid, version, "untouched", "hello two");

    restore_config(&sb, &saved);
    let said = sb.ok_stderr(&["archive", &sid]);
    assert!(
        !transcript.exists(),
        "[{version}] still there after: {said}"
    );
    sb.ok_stderr(&["archive", "--restore", &sid]);
    assert_eq!(
        std::fs::read(&transcript).unwrap(),
        untouched,
        "[{version}] archive + restore changed the transcript"
    );
    let b = resume_and_capture(
        &sb,
        &mock,
        &sid,
        version,
        "archived and restored",
        "hello two",
    );
    same_request(&a, &b, version, &format!("archive said:\n{said}"));

    restore_config(&sb, &saved);
    let said = sb.ok_stderr(&["archive", "--trim", &sid]);
    assert!(said.contains("trimmed first"), "[{version}] {said}");
    assert!(!transcript.exists());
    // ccd attach puts it back itself.
    let c = resume_and_capture(
        &sb,
        &mock,
        &sid,
        version,
        "archived --trim, attached",
        "hello two",
    );
    same_request(&a, &c, version, &format!("archive --trim said:\n{said}"));
    eprintln!(
        "[{version}] archive: resumed request identical after restore and after --trim + attach ({} messages)",
        a.messages.len()
    );
}

#[test]
fn real_cli_resume_after_archive_sends_the_same_request() {
    each_version(archive_version);
}

fn each_version(f: fn(&str)) {
    let handles: Vec<_> = real::versions()
        .into_iter()
        .map(|v| std::thread::spawn(move || f(&v)))
        .collect();
    let mut failed = Vec::new();
    for h in handles {
        if let Err(e) = h.join() {
            failed.push(
                e.downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default(),
            );
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}

#[test]
fn real_cli_resume_after_trim_sends_the_same_request() {
    each_version(trim_version);
}

#[test]
fn real_cli_resume_after_trim_before_compact_sends_the_same_request() {
    each_version(compact_version);
}

#[test]
fn the_billing_hashes_are_blanked_and_nothing_else() {
    let s = serde_json::json!([{"type": "text",
        "text": "x-anthropic-billing-header: cc_version=2.1.173.a3f; cch=0b1c2; cc_entrypoint=cli;"},
        {"type": "text", "text": "You are Claude Code"}]);
    let t = serde_json::json!([{"type": "text",
        "text": "x-anthropic-billing-header: cc_version=2.1.173.ffe; cch=99999; cc_entrypoint=cli;"},
        {"type": "text", "text": "You are Claude Code"}]);
    assert_eq!(normalized_system(&s), normalized_system(&t));
    assert!(normalized_system(&s).contains("cc_version=2.1.173.*;"));
    let u = serde_json::json!([{"type": "text", "text": "You are Claude Code, changed"}]);
    assert_ne!(normalized_system(&s), normalized_system(&u));
    let v = serde_json::json!([{"type": "text",
        "text": "x-anthropic-billing-header: cc_version=2.1.174.a3f; cch=0b1c2; cc_entrypoint=cli;"},
        {"type": "text", "text": "You are Claude Code"}]);
    assert_ne!(normalized_system(&s), normalized_system(&v));
}
