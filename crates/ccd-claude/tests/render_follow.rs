//! Rendering transcript records and following a growing transcript.

use ccd_claude::transcript::follow::{
    Follower, FIRST_WINDOW, MAX_WINDOW, POLL_CHUNK, TRUNCATED_NOTICE,
};
use ccd_claude::transcript::render::{render_line, render_record, Rendered, RenderedKind};
use serde_json::{json, Value};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;

const FIXTURE: &str = "transcript-2.1.332.jsonl";

fn line(v: Value) -> Vec<u8> {
    serde_json::to_vec(&v).unwrap()
}

fn user(text: &str) -> Value {
    json!({"type":"user","isSidechain":false,"timestamp":"2026-01-01T00:00:00Z",
           "message":{"role":"user","content":text}})
}

fn assistant_blocks(blocks: Value) -> Value {
    json!({"type":"assistant","isSidechain":false,"timestamp":"2026-01-01T00:00:01Z",
           "message":{"role":"assistant","model":"m","content":blocks}})
}

fn assistant(text: &str) -> Value {
    assistant_blocks(json!([{"type":"text","text":text}]))
}

fn tool_use(name: &str, input: Value) -> Value {
    assistant_blocks(json!([{"type":"tool_use","id":"t1","name":name,"input":input}]))
}

fn tool_result(content: Value, is_error: Option<bool>) -> Value {
    let mut block = json!({"type":"tool_result","tool_use_id":"t1","content":content});
    if let Some(e) = is_error {
        block["is_error"] = json!(e);
    }
    json!({"type":"user","timestamp":"2026-01-01T00:00:02Z",
           "message":{"role":"user","content":[block]}})
}

fn render(v: Value) -> Vec<Rendered> {
    render_record(&line(v))
}

fn one(v: Value) -> (RenderedKind, String) {
    let r = render(v);
    assert_eq!(r.len(), 1, "{r:?}");
    (r[0].kind, r[0].text.clone())
}

// ---------------------------------------------------------------- render

#[test]
fn fixture_renders_the_conversation_only() {
    let data = ccd_testkit::fixtures::read(FIXTURE);
    let mut all = Vec::new();
    for l in data.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let v: Value = serde_json::from_slice(l).unwrap();
        let kind = v["type"].as_str().unwrap_or("").to_string();
        let r = render_record(l);
        if !matches!(kind.as_str(), "user" | "assistant" | "system") {
            assert!(r.is_empty(), "{kind} record rendered {r:?}");
        }
        all.extend(r);
    }
    assert_eq!(
        all.iter()
            .map(|r| (r.kind, r.text.as_str()))
            .collect::<Vec<_>>(),
        vec![
            (RenderedKind::User, "munge test 0"),
            (RenderedKind::Assistant, "ACK: munge test 0"),
        ]
    );
    assert_eq!(
        all[0].timestamp.as_deref(),
        Some("2026-11-29T18:57:51.996Z")
    );
    assert!(all[1].timestamp.is_some());
}

#[test]
fn bookkeeping_and_unknown_records_render_nothing() {
    for v in [
        json!({"type":"mode","mode":"normal"}),
        json!({"type":"last-prompt","lastPrompt":"hello"}),
        json!({"type":"cost-state","totalCostUSD":1.0}),
        json!({"type":"file-history-snapshot","snapshot":{}}),
        json!({"type":"attachment","attachment":{"type":"date"},"message":{"content":"x"}}),
        json!({"type":"api-request-blob","message":{"role":"user","content":"munge"}}),
        json!({"type":"something-new","message":{"content":"x"}}),
        json!({"message":{"role":"user","content":"no type"}}),
        json!({"type":"system","subtype":"turn_duration","durationMs":3}),
    ] {
        assert!(render(v.clone()).is_empty(), "{v}");
    }
}

#[test]
fn user_prompts() {
    assert_eq!(one(user("hello")), (RenderedKind::User, "hello".into()));
    assert_eq!(
        one(user("  line one\n\nline two  \n")),
        (RenderedKind::User, "line one ⏎ line two".into())
    );
    let long = "word ".repeat(200);
    let (_, text) = one(user(&long));
    assert_eq!(text.chars().count(), 400);
    assert!(text.ends_with('…'));
    // Text blocks count too.
    let v = json!({"type":"user","message":{"content":[{"type":"text","text":"from blocks"}]}});
    assert_eq!(one(v), (RenderedKind::User, "from blocks".into()));
    // An interruption is a notice, not a prompt.
    let v = json!({"type":"user","message":{"content":[{"type":"text","text":"[Request interrupted by user]"}]}});
    assert_eq!(one(v), (RenderedKind::System, "interrupted by user".into()));
}

#[test]
fn meta_sidechain_wrappers_and_summaries_render_nothing() {
    let mut meta = user("Caveat: the messages below...");
    meta["isMeta"] = json!(true);
    assert!(render(meta).is_empty());

    let mut side = user("subagent prompt");
    side["isSidechain"] = json!(true);
    assert!(render(side).is_empty());
    let mut side = assistant("subagent reply");
    side["isSidechain"] = json!(true);
    assert!(render(side).is_empty());
    let mut side = tool_use("Bash", json!({"command":"ls"}));
    side["isSidechain"] = json!(true);
    assert!(render(side).is_empty());

    assert!(render(user("<command-name>/clear</command-name>")).is_empty());
    assert!(render(user("<local-command-stdout>ok</local-command-stdout>")).is_empty());

    let mut summary = user("This session is being continued from a previous conversation");
    summary["isCompactSummary"] = json!(true);
    assert!(render(summary).is_empty());

    assert!(render(user("   \n ")).is_empty());
}

#[test]
fn assistant_text_and_thinking() {
    assert_eq!(
        one(assistant("Done.\n\nAll **tests** pass.")),
        (
            RenderedKind::Assistant,
            "Done. ⏎ All **tests** pass.".into()
        )
    );
    let long = "x".repeat(1000);
    let (_, text) = one(assistant(&long));
    assert_eq!(text.chars().count(), 400);
    assert!(text.ends_with('…'));
    let v = assistant_blocks(json!([
        {"type":"thinking","thinking":"hmm","signature":"s"},
        {"type":"text","text":"first"},
        {"type":"tool_use","id":"a","name":"Bash","input":{"command":"ls -la"}},
        {"type":"text","text":""},
    ]));
    let r = render(v);
    assert_eq!(
        r.iter()
            .map(|r| (r.kind, r.text.as_str()))
            .collect::<Vec<_>>(),
        vec![
            (RenderedKind::Assistant, "first"),
            (RenderedKind::Tool, "Bash(ls -la)"),
        ]
    );
    assert!(render(assistant_blocks(
        json!([{"type":"thinking","thinking":"x"}])
    ))
    .is_empty());
    // A plain string content.
    let v = json!({"type":"assistant","message":{"content":"plain"}});
    assert_eq!(one(v), (RenderedKind::Assistant, "plain".into()));
}

#[test]
fn tool_calls() {
    let cases = [
        (
            tool_use("Bash", json!({"command":"ls -la","description":"List"})),
            "Bash(ls -la)",
        ),
        (
            tool_use(
                "Edit",
                json!({"file_path":"src/main.rs","old_string":"a","new_string":"b"}),
            ),
            "Edit(src/main.rs)",
        ),
        (
            tool_use("Read", json!({"file_path":"/etc/hosts"})),
            "Read(/etc/hosts)",
        ),
        (
            tool_use("Glob", json!({"pattern":"**/*.rs"})),
            "Glob(**/*.rs)",
        ),
        (tool_use("LS", json!({"path":"/tmp"})), "LS(/tmp)"),
        (
            tool_use("Grep", json!({"pattern":"fn main","path":"src"})),
            "Grep(fn main)",
        ),
        (
            tool_use("WebFetch", json!({"url":"https://x.org","prompt":"p"})),
            "WebFetch(https://x.org)",
        ),
        (
            tool_use(
                "Task",
                json!({"description":"Find bugs","prompt":"long..."}),
            ),
            "Task(Find bugs)",
        ),
        (
            tool_use("Bash", json!({"command":"echo a\necho b"})),
            "Bash(echo a ⏎ echo b)",
        ),
        (tool_use("ExitPlanMode", json!({})), "ExitPlanMode()"),
        (
            tool_use(
                "TodoWrite",
                json!({"todos":[{"content":"a","status":"pending"}]}),
            ),
            r#"TodoWrite({"todos":[{"content":"a","status":"pending"}]})"#,
        ),
    ];
    for (v, want) in cases {
        assert_eq!(one(v), (RenderedKind::Tool, want.to_string()));
    }
    // A long input is cut to 120 chars inside the parentheses.
    let (_, text) = one(tool_use("Custom", json!({"data":"y".repeat(500)})));
    let inner = text
        .strip_prefix("Custom(")
        .and_then(|t| t.strip_suffix(')'))
        .unwrap();
    assert_eq!(inner.chars().count(), 120);
    assert!(inner.starts_with(r#"{"data":"yyy"#) && inner.ends_with('…'));
    let (_, text) = one(tool_use("Bash", json!({"command":"z".repeat(500)})));
    assert_eq!(text.chars().count(), "Bash()".len() + 120);
    // No name, no input.
    let v = assistant_blocks(json!([{"type":"tool_use","id":"x"}]));
    assert_eq!(one(v), (RenderedKind::Tool, "tool()".into()));
}

#[test]
fn tool_results() {
    assert_eq!(
        one(tool_result(json!("\n  first line\nsecond line"), None)),
        (RenderedKind::ToolResult, "first line".into())
    );
    assert_eq!(
        one(tool_result(
            json!([{"type":"image","source":{}},{"type":"text","text":"from block\nmore"}]),
            Some(false)
        )),
        (RenderedKind::ToolResult, "from block".into())
    );
    assert_eq!(
        one(tool_result(json!("Exit code 1\nboom"), Some(true))),
        (RenderedKind::ToolResult, "error: Exit code 1".into())
    );
    assert_eq!(
        one(tool_result(json!(""), None)),
        (RenderedKind::ToolResult, "(no output)".into())
    );
    assert_eq!(
        one(tool_result(json!(""), Some(true))),
        (RenderedKind::ToolResult, "error".into())
    );
    let (_, text) = one(tool_result(json!("q".repeat(5000)), None));
    assert_eq!(text.chars().count(), 120);
    assert!(text.ends_with('…'));
    // Two results in one record, and a text block beside them is not a prompt.
    let v = json!({"type":"user","message":{"content":[
        {"type":"tool_result","tool_use_id":"a","content":"one"},
        {"type":"tool_result","tool_use_id":"b","content":"two","is_error":true},
        {"type":"text","text":"injected"},
    ]}});
    let r = render(v);
    assert_eq!(
        r.iter()
            .map(|r| (r.kind, r.text.as_str()))
            .collect::<Vec<_>>(),
        vec![
            (RenderedKind::ToolResult, "one"),
            (RenderedKind::ToolResult, "error: two"),
        ]
    );
}

#[test]
fn system_records() {
    let v = json!({"type":"system","subtype":"compact_boundary","timestamp":"t",
                   "compactMetadata":{"trigger":"auto","preTokens":155000}});
    let r = render(v);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].kind, RenderedKind::System);
    assert_eq!(r[0].text, "conversation compacted (auto, 155000 tokens)");
    assert_eq!(r[0].timestamp.as_deref(), Some("t"));
    let v = json!({"type":"system","subtype":"compact_boundary"});
    assert_eq!(
        one(v),
        (RenderedKind::System, "conversation compacted".into())
    );
    let v =
        json!({"type":"system","subtype":"compact_boundary","content":"Conversation compacted"});
    assert_eq!(
        one(v),
        (RenderedKind::System, "Conversation compacted".into())
    );
    let v = json!({"type":"system","subtype":"informational","content":"Model changed\nto opus"});
    assert_eq!(
        one(v),
        (RenderedKind::System, "Model changed ⏎ to opus".into())
    );
    let v = json!({"type":"system","subtype":"local_command",
                   "content":"<local-command-stdout>Set model to opus</local-command-stdout>"});
    assert_eq!(one(v), (RenderedKind::System, "Set model to opus".into()));
    assert!(render(json!({"type":"system","content":{"not":"a string"}})).is_empty());
    assert!(render(json!({"type":"system","content":""})).is_empty());
    let mut side = json!({"type":"system","subtype":"compact_boundary"});
    side["isSidechain"] = json!(true);
    assert!(render(side).is_empty());
}

#[test]
fn ansi_and_control_chars_are_stripped() {
    let (_, text) = one(assistant(
        "\u{1b}[1;32mgreen\u{1b}[0m and \u{1b}]0;title\u{7}bell\u{7}",
    ));
    assert_eq!(text, "green and bell");
    let (_, text) = one(tool_result(
        json!("\u{1b}[31mFAILED\u{1b}[0m\r\u{1b}[2Kdone\u{0}\u{8}"),
        Some(true),
    ));
    // A lone CR is a line break to the one sanitizer (`display`), which
    // a one-line rendering shows as a space.
    assert_eq!(text, "error: FAILED done");
    let (_, text) = one(user("tab\there\u{1b}[?25l \u{9b}1mcsi"));
    assert_eq!(text, "tab here csi");
    let (_, text) = one(tool_use(
        "Bash",
        json!({"command":"printf '\u{1b}[2J'; ls"}),
    ));
    assert_eq!(text, "Bash(printf ''; ls)");
    for r in [
        assistant("\u{1b}[31mred\u{1b}"),
        user("x\u{1b}]8;;http://a\u{1b}\\link\u{1b}]8;;\u{1b}\\"),
    ] {
        for item in render(r) {
            assert!(!item.text.chars().any(|c| c.is_control()), "{item:?}");
        }
    }
}

#[test]
fn render_line_prefixes_and_width() {
    let item = |kind, text: &str| Rendered {
        kind,
        text: text.to_string(),
        timestamp: None,
    };
    assert_eq!(render_line(&item(RenderedKind::User, "hi"), 80), "› hi");
    assert_eq!(
        render_line(&item(RenderedKind::Assistant, "ok"), 80),
        "● ok"
    );
    assert_eq!(
        render_line(&item(RenderedKind::Tool, "Bash(ls)"), 80),
        "⏺ Bash(ls)"
    );
    assert_eq!(
        render_line(&item(RenderedKind::ToolResult, "out"), 80),
        "  ⎿ out"
    );
    assert!(render_line(&item(RenderedKind::System, "note"), 80).ends_with("note"));

    // Cut by chars, with an ellipsis, never splitting a multibyte char.
    let wide = item(
        RenderedKind::Assistant,
        "日本語のテキストです🎉🎉🎉 and more",
    );
    for width in 0..40 {
        let l = render_line(&wide, width);
        assert!(l.chars().count() <= width, "{width}: {l}");
    }
    assert_eq!(render_line(&wide, 6), "● 日本語…");
    assert_eq!(render_line(&wide, 0), "");
    assert_eq!(render_line(&wide, 1), "…");
    let full = render_line(&wide, 1000);
    assert_eq!(full, "● 日本語のテキストです🎉🎉🎉 and more");
    let l = render_line(&item(RenderedKind::User, "éééééééééé"), 5);
    assert_eq!(l, "› éé…");
    // Text with newlines (built by hand) still yields one line.
    let l = render_line(&item(RenderedKind::User, "a\nb\u{1b}c"), 80);
    assert!(!l.contains('\n') && !l.contains('\u{1b}'));
}

#[test]
fn serde_form() {
    let r = Rendered {
        kind: RenderedKind::ToolResult,
        text: "x".into(),
        timestamp: Some("t".into()),
    };
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(v, json!({"kind":"tool_result","text":"x","timestamp":"t"}));
    let back: Rendered = serde_json::from_value(v).unwrap();
    assert_eq!(back, r);
    let back: Rendered = serde_json::from_value(json!({"kind":"user","text":"y"})).unwrap();
    assert_eq!(back.timestamp, None);
}

#[test]
fn garbage_renders_nothing() {
    for l in [
        &b""[..],
        b"   ",
        b"not json",
        b"{",
        b"[1,2,3]",
        b"null",
        b"42",
        b"\"user\"",
        b"\xff\xfe\x00garbage",
        br#"{"type":"user"}"#,
        br#"{"type":"user","message":"str"}"#,
        br#"{"type":"user","message":{"content":42}}"#,
        br#"{"type":"user","message":{"content":[1,"a",null]}}"#,
        br#"{"type":"assistant","message":{"content":[{"type":7}]}}"#,
        br#"{"type":"assistant","message":{"content":{"type":"text"}}}"#,
        br#"{"type":"assistant","message":null}"#,
        br#"{"type":7,"message":{"content":"x"}}"#,
        br#"{"type":"user","message":{"content":"hi"}} trailing"#,
        br#"{"type":"system","subtype":5}"#,
    ] {
        assert!(
            render_record(l).is_empty(),
            "{:?}",
            String::from_utf8_lossy(l)
        );
    }
    // Odd but valid shapes do not panic either.
    let _ = render_record(br#"{"type":"assistant","message":{"content":[{"type":"tool_use","name":5,"input":"str"}]}}"#);
    let _ = render_record(
        br#"{"type":"user","message":{"content":[{"type":"tool_result","content":{"x":1}}]}}"#,
    );
}

#[test]
fn every_prefix_of_a_real_line_renders_nothing() {
    let data = ccd_testkit::fixtures::read(FIXTURE);
    for l in data.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let step = if l.len() < 3000 { 1 } else { 37 };
        for end in (0..l.len()).step_by(step) {
            assert!(render_record(&l[..end]).is_empty());
        }
    }
}

// ---------------------------------------------------------------- follow

fn append(path: &Path, bytes: &[u8]) {
    let mut f = OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(bytes).unwrap();
}

fn jsonl(values: &[Value]) -> Vec<u8> {
    let mut out = Vec::new();
    for v in values {
        out.extend(line(v.clone()));
        out.push(b'\n');
    }
    out
}

/// `turns` turns of a prompt, a reply and some bookkeeping each: two
/// rendered items per turn.
fn turns(range: std::ops::Range<usize>) -> Vec<Value> {
    let mut out = Vec::new();
    for i in range {
        out.push(user(&format!("prompt {i}")));
        out.push(json!({"type":"last-prompt","lastPrompt":format!("prompt {i}")}));
        out.push(assistant(&format!("reply {i}")));
        out.push(json!({"type":"system","subtype":"turn_duration","durationMs":1}));
    }
    out
}

fn texts(items: &[Rendered]) -> Vec<String> {
    items.iter().map(|r| r.text.clone()).collect()
}

#[test]
fn open_returns_the_last_items() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    std::fs::write(&path, jsonl(&turns(0..20))).unwrap();

    let (_, items) = Follower::open(&path, 5).unwrap();
    assert_eq!(
        texts(&items),
        ["reply 17", "prompt 18", "reply 18", "prompt 19", "reply 19"]
    );
    assert_eq!(items[0].kind, RenderedKind::Assistant);
    assert_eq!(items[1].kind, RenderedKind::User);

    let (_, items) = Follower::open(&path, 1000).unwrap();
    assert_eq!(items.len(), 40);
    assert_eq!(items[0].text, "prompt 0");

    let (f, items) = Follower::open(&path, 0).unwrap();
    assert!(items.is_empty());
    assert_eq!(f.offset(), std::fs::metadata(&path).unwrap().len());
}

#[test]
fn open_on_the_fixture_and_on_an_empty_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fixture.jsonl");
    std::fs::write(&path, ccd_testkit::fixtures::read(FIXTURE)).unwrap();
    let (_, items) = Follower::open(&path, 10).unwrap();
    assert_eq!(texts(&items), ["munge test 0", "ACK: munge test 0"]);

    let path = dir.path().join("empty.jsonl");
    File::create(&path).unwrap();
    let (mut f, items) = Follower::open(&path, 10).unwrap();
    assert!(items.is_empty());
    assert!(f.poll().unwrap().is_empty());
    append(&path, &jsonl(&[user("first")]));
    assert_eq!(texts(&f.poll().unwrap()), ["first"]);

    assert!(Follower::open(&dir.path().join("missing.jsonl"), 1).is_err());
}

#[test]
fn appended_lines_are_returned_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    std::fs::write(&path, jsonl(&turns(0..3))).unwrap();
    let (mut f, _) = Follower::open(&path, 2).unwrap();
    assert!(f.poll().unwrap().is_empty());

    append(
        &path,
        &jsonl(&[
            user("new prompt"),
            json!({"type":"cost-state"}),
            tool_use("Bash", json!({"command":"ls"})),
            tool_result(json!("a.txt"), None),
            assistant("new reply"),
        ]),
    );
    let items = f.poll().unwrap();
    assert_eq!(
        items
            .iter()
            .map(|r| (r.kind, r.text.as_str()))
            .collect::<Vec<_>>(),
        vec![
            (RenderedKind::User, "new prompt"),
            (RenderedKind::Tool, "Bash(ls)"),
            (RenderedKind::ToolResult, "a.txt"),
            (RenderedKind::Assistant, "new reply"),
        ]
    );
    assert!(f.poll().unwrap().is_empty());
    // Garbage and blank lines in between are skipped.
    append(&path, b"\n{half garbage\n\r\n");
    append(&path, &jsonl(&[assistant("after garbage")]));
    assert_eq!(texts(&f.poll().unwrap()), ["after garbage"]);
}

#[test]
fn a_line_written_in_two_halves_is_rendered_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    std::fs::write(&path, jsonl(&turns(0..2))).unwrap();
    let (mut f, _) = Follower::open(&path, 1).unwrap();

    let whole = line(assistant("split reply"));
    let (a, b) = whole.split_at(whole.len() / 2);
    append(&path, a);
    assert!(f.poll().unwrap().is_empty());
    assert!(f.poll().unwrap().is_empty());
    append(&path, b);
    // Complete JSON but no newline yet: still unfinished.
    assert!(f.poll().unwrap().is_empty());
    let mut rest = b"\n".to_vec();
    rest.extend(line(user("next")));
    let (c, d) = rest.split_at(10);
    append(&path, c);
    assert_eq!(texts(&f.poll().unwrap()), ["split reply"]);
    assert!(f.poll().unwrap().is_empty());
    append(&path, d);
    append(&path, b"\n");
    assert_eq!(texts(&f.poll().unwrap()), ["next"]);
    assert!(f.poll().unwrap().is_empty());
}

#[test]
fn a_half_written_last_line_at_open_is_rendered_when_finished() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let mut data = jsonl(&turns(0..2));
    let whole = line(assistant("late reply"));
    let (a, b) = whole.split_at(7);
    data.extend_from_slice(a);
    std::fs::write(&path, &data).unwrap();

    let (mut f, items) = Follower::open(&path, 2).unwrap();
    assert_eq!(texts(&items), ["prompt 1", "reply 1"]);
    assert!(f.poll().unwrap().is_empty());
    append(&path, b);
    append(&path, b"\n");
    assert_eq!(texts(&f.poll().unwrap()), ["late reply"]);
    assert!(f.poll().unwrap().is_empty());

    // A file that is one unfinished line.
    let path = dir.path().join("t.jsonl");
    std::fs::write(&path, a).unwrap();
    let (mut f, items) = Follower::open(&path, 2).unwrap();
    assert!(items.is_empty());
    assert!(f.poll().unwrap().is_empty());
    append(&path, b);
    append(&path, b"\n");
    assert_eq!(texts(&f.poll().unwrap()), ["late reply"]);
}

#[test]
fn truncation_is_reported_and_following_continues() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    std::fs::write(&path, jsonl(&turns(0..5))).unwrap();
    let (mut f, _) = Follower::open(&path, 3).unwrap();

    // Truncated in place, with a pending half line kept aside.
    append(&path, b"{\"type\":\"user\",");
    assert!(f.poll().unwrap().is_empty());
    std::fs::write(&path, jsonl(&[user("short")])).unwrap();
    let items = f.poll().unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].kind, RenderedKind::System);
    assert_eq!(items[0].text, TRUNCATED_NOTICE);
    // Restarted at the new end: nothing old, then new lines follow.
    assert!(f.poll().unwrap().is_empty());
    append(&path, &jsonl(&[assistant("after truncation")]));
    assert_eq!(texts(&f.poll().unwrap()), ["after truncation"]);

    // Emptied.
    File::create(&path).unwrap();
    assert_eq!(texts(&f.poll().unwrap()), [TRUNCATED_NOTICE]);
    append(&path, &jsonl(&[user("again")]));
    assert_eq!(texts(&f.poll().unwrap()), ["again"]);
}

#[cfg(unix)]
#[test]
fn replacement_is_reported_and_the_new_file_followed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    std::fs::write(&path, jsonl(&turns(0..2))).unwrap();
    let (mut f, _) = Follower::open(&path, 3).unwrap();

    // A bigger file renamed over the old one: a new inode.
    let other = dir.path().join("new.jsonl");
    let mut data = jsonl(&turns(0..10));
    let whole = line(user("half at replace"));
    let (a, b) = whole.split_at(5);
    data.extend_from_slice(a);
    std::fs::write(&other, &data).unwrap();
    std::fs::rename(&other, &path).unwrap();

    assert_eq!(texts(&f.poll().unwrap()), [TRUNCATED_NOTICE]);
    assert!(f.poll().unwrap().is_empty());
    append(&path, b);
    append(&path, b"\n");
    append(&path, &jsonl(&[assistant("in the new file")]));
    assert_eq!(
        texts(&f.poll().unwrap()),
        ["half at replace", "in the new file"]
    );

    // The path gone for a moment: nothing, no error.
    std::fs::remove_file(&path).unwrap();
    assert!(f.poll().unwrap().is_empty());
    std::fs::write(&path, jsonl(&[user("recreated")])).unwrap();
    assert_eq!(texts(&f.poll().unwrap()), [TRUNCATED_NOTICE]);
    append(&path, &jsonl(&[user("then this")]));
    assert_eq!(texts(&f.poll().unwrap()), ["then this"]);
}

#[test]
fn poll_reads_bounded_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    std::fs::write(&path, jsonl(&turns(0..1))).unwrap();
    let (mut f, _) = Follower::open(&path, 1).unwrap();

    let pad = "p".repeat(1000);
    let many: Vec<Value> = (0..3000)
        .map(|i| assistant(&format!("{i} {pad}")))
        .collect();
    append(&path, &jsonl(&many));
    let mut got = Vec::new();
    let mut polls = 0;
    loop {
        let before = f.bytes_read();
        got.extend(f.poll().unwrap());
        assert!(f.bytes_read() - before <= POLL_CHUNK);
        polls += 1;
        if !f.is_behind() {
            break;
        }
    }
    assert!(polls >= 3, "{polls}");
    assert_eq!(got.len(), 3000);
    for (i, r) in got.iter().enumerate() {
        assert!(r.text.starts_with(&format!("{i} ")), "{i}: {}", r.text);
    }
    assert!(f.poll().unwrap().is_empty());
}

#[test]
fn a_50_mb_file_opens_with_a_bounded_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.jsonl");
    {
        let mut w = std::io::BufWriter::new(File::create(&path).unwrap());
        let blob = json!({"type":"file-history-snapshot","snapshot":{"data":"b".repeat(1000)}});
        let blob = line(blob);
        let mut written = 0usize;
        let mut i = 0usize;
        while written < 50 * 1024 * 1024 {
            // A prompt every 50 lines, bookkeeping in between.
            let l = match i % 50 {
                0 => line(user(&format!("prompt {i}"))),
                _ => blob.clone(),
            };
            w.write_all(&l).unwrap();
            w.write_all(b"\n").unwrap();
            written += l.len() + 1;
            i += 1;
        }
        w.write_all(&jsonl(&[user("last prompt"), assistant("last reply")]))
            .unwrap();
    }
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size >= 50 * 1024 * 1024);

    let (mut f, items) = Follower::open(&path, 2).unwrap();
    assert_eq!(texts(&items), ["last prompt", "last reply"]);
    assert!(f.bytes_read() <= FIRST_WINDOW, "{}", f.bytes_read());
    assert!(f.poll().unwrap().is_empty());

    // Asking for more than the tail holds grows the window, but never past
    // the largest one.
    let (f, items) = Follower::open(&path, 1_000_000).unwrap();
    assert!(f.bytes_read() <= MAX_WINDOW, "{}", f.bytes_read());
    assert!(items.len() > 10 && items.len() < 1000, "{}", items.len());
    assert_eq!(items.last().unwrap().text, "last reply");
}

#[test]
fn a_huge_unfinished_line_is_skipped_not_misread() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let mut data = jsonl(&turns(0..2));
    // An unfinished line longer than the largest window.
    data.extend_from_slice(b"{\"type\":\"assistant\",\"message\":{\"content\":\"");
    data.resize(data.len() + MAX_WINDOW as usize + 1024, b'z');
    std::fs::write(&path, &data).unwrap();

    let (mut f, items) = Follower::open(&path, 3).unwrap();
    assert!(items.is_empty());
    assert!(f.bytes_read() <= MAX_WINDOW);
    append(&path, b"\"}}\n");
    append(&path, &jsonl(&[user("after the huge line")]));
    assert_eq!(texts(&f.poll().unwrap()), ["after the huge line"]);
}
