//! Trim on real-shaped records: the CLI's own transcripts (2.1.173 and
//! 2.1.332 recordings) and the spike's shapes (dead branches from
//! `/rewind`, last-prompt leaves, tool pairs).

use super::*;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};

fn recording(name: &str) -> Vec<u8> {
    ccd_testkit::fixtures::read(name)
}

fn records(bytes: &[u8]) -> Vec<Value> {
    bytes
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect()
}

fn no_guard() -> Option<String> {
    None
}

/// Trims `bytes` in a temp dir; returns (report, output bytes, dir).
fn run(bytes: &[u8], opts: TrimOptions) -> (TrimReport, Vec<u8>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jsonl");
    std::fs::write(&p, bytes).unwrap();
    let r = trim(&p, &dir.path().join("backups"), &opts, &no_guard, None).unwrap();
    let out = std::fs::read(&p).unwrap();
    (r, out, dir)
}

/// The chain resume follows, as (type, uuid) from the root: from the
/// newest last-prompt's leaf (else the newest user/assistant) through
/// parentUuid.
fn chain(recs: &[Value]) -> Vec<String> {
    let by: HashMap<&str, &Value> = recs
        .iter()
        .filter_map(|r| Some((r.get("uuid")?.as_str()?, r)))
        .collect();
    let leaf = recs
        .iter()
        .rev()
        .find(|r| r["type"] == "last-prompt")
        .and_then(|r| r["leafUuid"].as_str())
        .filter(|l| by.contains_key(l))
        .or_else(|| {
            recs.iter()
                .rev()
                .find(|r| r["type"] == "user" || r["type"] == "assistant")
                .and_then(|r| r["uuid"].as_str())
        });
    let mut out = Vec::new();
    let mut at = leaf;
    while let Some(u) = at {
        let Some(r) = by.get(u) else { break };
        out.push(u.to_string());
        at = r["parentUuid"].as_str();
    }
    out.reverse();
    out
}

/// Every kept record's parent is in the file (or null / outside it
/// before too), and every tool_use has its tool_result and back.
fn check_intact(before: &[Value], after: &[Value]) {
    let before_ids: HashSet<&str> = before.iter().filter_map(|r| r["uuid"].as_str()).collect();
    let after_ids: HashSet<&str> = after.iter().filter_map(|r| r["uuid"].as_str()).collect();
    for r in after {
        if let Some(p) = r["parentUuid"].as_str() {
            assert!(
                after_ids.contains(p) || !before_ids.contains(p),
                "dangling parent {p} in {r}"
            );
        }
    }
    let ids = |recs: &[Value], kind: &str, field: &str| -> HashSet<String> {
        recs.iter()
            .filter_map(|r| r.pointer("/message/content")?.as_array())
            .flatten()
            .filter(|b| b["type"] == kind)
            .filter_map(|b| b[field].as_str().map(String::from))
            .collect()
    };
    let uses = ids(after, "tool_use", "id");
    let results = ids(after, "tool_result", "tool_use_id");
    let uses_before = ids(before, "tool_use", "id");
    let results_before = ids(before, "tool_result", "tool_use_id");
    for u in &uses {
        assert!(
            results.contains(u) || !results_before.contains(u),
            "tool_use {u} lost its result"
        );
    }
    for r in &results {
        assert!(
            uses.contains(r) || !uses_before.contains(r),
            "tool_result {r} lost its use"
        );
    }
}

/// The conversation resume sends: the chain's user/assistant/attachment
/// records (prompt_snapshot aside), without toolUseResult.
fn conversation(recs: &[Value]) -> Vec<Value> {
    let by: HashMap<&str, &Value> = recs
        .iter()
        .filter_map(|r| Some((r.get("uuid")?.as_str()?, r)))
        .collect();
    chain(recs)
        .iter()
        .map(|u| (*by.get(u.as_str()).unwrap()).clone())
        .filter(|r| r.pointer("/attachment/type") != Some(&json!("prompt_snapshot")))
        .map(|mut r| {
            let o = r.as_object_mut().unwrap();
            o.remove("toolUseResult");
            o.remove("parentUuid");
            r
        })
        .collect()
}

const RECORDINGS: &[&str] = &[
    "transcript-2.1.332.jsonl",
    "transcript-background-agent-2.1.173-settled.jsonl",
    "transcript-background-agent-2.1.332-settled.jsonl",
    "transcript-background-bash-2.1.173-settled.jsonl",
    "transcript-background-bash-2.1.332-settled.jsonl",
    "transcript-background-fg-agent-2.1.173-settled.jsonl",
];

#[test]
fn recordings_of_both_versions_keep_the_conversation() {
    for name in RECORDINGS {
        let bytes = recording(name);
        let (r, out, _d) = run(&bytes, TrimOptions::default());
        let before = records(&bytes);
        let after = records(&out);
        check_intact(&before, &after);
        assert_eq!(conversation(&before), conversation(&after), "{name}");
        assert_eq!(r.bytes_after, out.len() as u64, "{name}");
        assert_eq!(r.bytes_before, bytes.len() as u64);
        let types: HashSet<&str> = after.iter().filter_map(|r| r["type"].as_str()).collect();
        for gone in [
            "api-request",
            "api-request-shape",
            "api-request-blob",
            "cost-state",
            "tools-used",
            "mode",
        ] {
            assert!(!types.contains(gone), "{name}: {gone} kept");
        }
        // Kept: permission-mode (state), every attachment but the
        // snapshot, file history (opt-in only), queue operations, one
        // last-prompt / ai-title.
        let count = |recs: &[Value], t: &str| recs.iter().filter(|r| r["type"] == t).count();
        assert_eq!(
            count(&before, "permission-mode"),
            count(&after, "permission-mode")
        );
        assert_eq!(
            count(&before, "file-history-snapshot"),
            count(&after, "file-history-snapshot")
        );
        assert_eq!(
            count(&before, "queue-operation"),
            count(&after, "queue-operation")
        );
        assert_eq!(
            count(&after, "last-prompt").min(1),
            count(&before, "last-prompt").min(1)
        );
        assert!(count(&after, "last-prompt") <= 1 && count(&after, "ai-title") <= 1);
        // The newest of each stays, unchanged.
        for t in ["last-prompt", "ai-title"] {
            let newest = |recs: &[Value]| recs.iter().rev().find(|r| r["type"] == t).cloned();
            if let Some(b) = newest(&before) {
                let a = newest(&after).unwrap();
                assert_eq!(b["lastPrompt"], a["lastPrompt"]);
                assert_eq!(b["aiTitle"], a["aiTitle"]);
            }
        }
        let atts = |recs: &[Value]| {
            recs.iter()
                .filter_map(|r| r.pointer("/attachment/type")?.as_str().map(String::from))
                .filter(|t| t != "prompt_snapshot")
                .collect::<Vec<_>>()
        };
        assert_eq!(atts(&before), atts(&after), "{name}");
        assert!(out.len() < bytes.len(), "{name}");
        // Every kept line is byte-identical, but for the edits.
        let kept: HashSet<&[u8]> = bytes.split(|b| *b == b'\n').collect();
        let edited = out
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty() && !kept.contains(l))
            .count() as u64;
        assert!(edited <= r.relinked + r.tool_use_result.records, "{name}");
    }
}

#[test]
fn relinks_across_a_dropped_prompt_snapshot_2_1_332() {
    let bytes = recording("transcript-2.1.332.jsonl");
    let before = records(&bytes);
    let (r, out, _d) = run(&bytes, TrimOptions::default());
    let after = records(&out);
    // The assistant's parent was the first prompt_snapshot: now the
    // attachment before it (remote_session_change).
    let snap = before
        .iter()
        .find(|r| r.pointer("/attachment/type") == Some(&json!("prompt_snapshot")))
        .unwrap();
    let snap_parent = snap["parentUuid"].clone();
    let asst = after.iter().find(|r| r["type"] == "assistant").unwrap();
    assert_eq!(asst["parentUuid"], snap_parent);
    assert!(r.relinked >= 2, "{r:?}");
    assert_eq!(r.dropped["attachment:prompt_snapshot"].records, 2);
    assert_eq!(r.dropped["api-request-shape"].records, 1);
    assert_eq!(chain(&before).len() - 2, chain(&after).len());
}

/// A session shaped like the spike's: turns, then a branch rewound away
/// (a user + assistant off an earlier turn), then more turns.
fn spike_shaped(version: &str, leaf_to_dead: bool) -> Vec<u8> {
    let u = |n: u32| format!("00000000-0000-4000-8000-{n:012}");
    let mut lines = vec![
        json!({"type":"permission-mode","permissionMode":"default","sessionId":"s"}),
        json!({"type":"mode","mode":"normal","sessionId":"s"}),
    ];
    let mut rec = |kind: &str, n: u32, parent: Option<u32>, extra: Value| {
        let mut r = json!({"parentUuid": parent.map(u), "isSidechain": false, "type": kind,
            "uuid": u(n), "timestamp":"2026-12-01T00:00:00Z", "version": version, "cwd": "/w", "sessionId":"s"});
        for (k, v) in extra.as_object().unwrap() {
            r[k] = v.clone();
        }
        lines.push(r);
    };
    rec(
        "user",
        1,
        None,
        json!({"message":{"role":"user","content":"hello one"}}),
    );
    rec(
        "attachment",
        2,
        Some(1),
        json!({"attachment":{"type":"skill_listing","content":"x"}}),
    );
    rec(
        "assistant",
        3,
        Some(2),
        json!({"message":{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}]}}),
    );
    rec(
        "user",
        4,
        Some(3),
        json!({"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"1 2 3"}]},
        "toolUseResult":{"stdout":"1\n2\n3","stderr":"","interrupted":false}}),
    );
    rec(
        "assistant",
        5,
        Some(4),
        json!({"message":{"role":"assistant","content":[{"type":"text","text":"done"}]}}),
    );
    rec(
        "system",
        6,
        Some(5),
        json!({"subtype":"turn_duration","durationMs":5}),
    );
    // The branch rewound away.
    rec(
        "user",
        7,
        Some(6),
        json!({"message":{"role":"user","content":"rewound away"}}),
    );
    rec(
        "assistant",
        8,
        Some(7),
        json!({"message":{"role":"assistant","content":[{"type":"text","text":"ACK rewound"}]}}),
    );
    rec(
        "system",
        9,
        Some(8),
        json!({"subtype":"turn_duration","durationMs":5}),
    );
    // The chain resume follows continues from 6.
    rec(
        "user",
        10,
        Some(6),
        json!({"message":{"role":"user","content":"hello two"}}),
    );
    rec(
        "assistant",
        11,
        Some(10),
        json!({"message":{"role":"assistant","content":[{"type":"text","text":"ACK two"}]}}),
    );
    rec(
        "system",
        12,
        Some(11),
        json!({"subtype":"turn_duration","durationMs":5}),
    );
    let leaf = if leaf_to_dead { u(9) } else { u(12) };
    lines.push(json!({"type":"last-prompt","lastPrompt":"older","leafUuid":u(6),"sessionId":"s"}));
    lines.push(
        json!({"type":"last-prompt","lastPrompt":"hello two","leafUuid":leaf,"sessionId":"s"}),
    );
    let mut out = Vec::new();
    for l in lines {
        out.extend(serde_json::to_vec(&l).unwrap());
        out.push(b'\n');
    }
    out
}

#[test]
fn dead_branches_go_and_the_leaf_follows_last_prompt() {
    for v in ["2.1.173", "2.1.332"] {
        let bytes = spike_shaped(v, false);
        let before = records(&bytes);
        let (r, out, _d) = run(&bytes, TrimOptions::default());
        let after = records(&out);
        check_intact(&before, &after);
        assert_eq!(conversation(&before), conversation(&after));
        assert_eq!(r.dropped["dead branch: user"].records, 1);
        assert_eq!(r.dropped["dead branch: assistant"].records, 1);
        assert_eq!(r.dropped["dead branch: system"].records, 1);
        assert_eq!(r.dropped["older last-prompt"].records, 1);
        assert!(!String::from_utf8_lossy(&out).contains("rewound away"));
        assert_eq!(
            r.leaf.as_deref(),
            Some("00000000-0000-4000-8000-000000000012")
        );
        // The tool pair and its toolUseResult field.
        assert_eq!(r.tool_use_result.records, 1);
        assert!(!String::from_utf8_lossy(&out).contains("toolUseResult"));
        assert!(String::from_utf8_lossy(&out).contains("toolu_1"));
        // Pointed at the rewound branch, resume follows it (the spike's
        // `edit:leaf-to-dead`): that branch is kept, and so is the newest
        // turn's (which of the two resume takes then was not measured).
        let bytes = spike_shaped(v, true);
        let (r, out, _d) = run(&bytes, TrimOptions::default());
        let s = String::from_utf8_lossy(&out);
        assert!(s.contains("rewound away") && s.contains("ACK two"), "{s}");
        assert!(
            !r.dropped.keys().any(|k| k.starts_with("dead branch")),
            "{r:?}"
        );
    }
}

#[test]
fn a_turn_after_the_last_last_prompt_stays() {
    // 2.1.332 wrote a background task's notification turn after the last
    // last-prompt (its leaf is that turn's parent).
    let bytes = recording("transcript-background-bash-2.1.332-settled.jsonl");
    let (r, out, _d) = run(&bytes, TrimOptions::default());
    assert!(
        !r.dropped.keys().any(|k| k.starts_with("dead branch")),
        "{r:?}"
    );
    let before = records(&bytes);
    let after = records(&out);
    let last_user = |recs: &[Value]| recs.iter().rev().find(|r| r["type"] == "user").cloned();
    assert_eq!(
        last_user(&before).unwrap()["uuid"],
        last_user(&after).unwrap()["uuid"]
    );
    check_intact(&before, &after);
}

#[test]
fn a_dropped_half_of_a_tool_pair_is_kept() {
    // A tool_result in a dead record whose tool_use is on the chain (a
    // parallel-tool sibling): kept, and its dropped parent re-linked.
    let u = |n: u32| format!("00000000-0000-4000-8000-{n:012}");
    let recs = [
        json!({"type":"user","uuid":u(1),"parentUuid":null,"message":{"content":"go"}}),
        json!({"type":"assistant","uuid":u(2),"parentUuid":u(1),"message":{"content":[{"type":"tool_use","id":"t1"},{"type":"tool_use","id":"t2"}]}}),
        json!({"type":"attachment","uuid":u(3),"parentUuid":u(2),"attachment":{"type":"prompt_snapshot"}}),
        json!({"type":"user","uuid":u(4),"parentUuid":u(3),"message":{"content":[{"type":"tool_result","tool_use_id":"t2"}]}}),
        json!({"type":"user","uuid":u(5),"parentUuid":u(2),"message":{"content":[{"type":"tool_result","tool_use_id":"t1"}]}}),
        json!({"type":"assistant","uuid":u(6),"parentUuid":u(5),"message":{"content":[{"type":"text","text":"ok"}]}}),
    ];
    let mut bytes = Vec::new();
    for r in &recs {
        bytes.extend(serde_json::to_vec(r).unwrap());
        bytes.push(b'\n');
    }
    let (r, out, _d) = run(&bytes, TrimOptions::default());
    let after = records(&out);
    check_intact(&records(&bytes), &after);
    assert_eq!(r.rescued_for_tool_pairs, 1);
    let t2 = after.iter().find(|r| r["uuid"] == json!(u(4))).unwrap();
    assert_eq!(t2["parentUuid"], json!(u(2)), "re-linked past the snapshot");
}

#[test]
fn a_half_written_last_line_is_kept_as_it_is() {
    let mut bytes = spike_shaped("2.1.332", false);
    bytes.extend_from_slice(br#"{"type":"assistant","uuid":"00000000-0000-4000-8000-0000000000"#);
    let (r, out, _d) = run(&bytes, TrimOptions::default());
    assert!(out.ends_with(br#"{"type":"assistant","uuid":"00000000-0000-4000-8000-0000000000"#));
    assert_eq!(r.half_written_tail, Some(62));
    let complete = &out[..out.len() - 62];
    check_intact(&records(&bytes[..bytes.len() - 62]), &records(complete));
}

#[test]
fn unknown_types_are_refused_unless_forced() {
    let mut bytes = recording("transcript-2.1.332.jsonl");
    bytes.extend_from_slice(
        b"{\"type\":\"brand-new-kind\",\"x\":1}\n{\"type\":\"brand-new-kind\"}\n",
    );
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jsonl");
    std::fs::write(&p, &bytes).unwrap();
    let e = trim(
        &p,
        &dir.path().join("b"),
        &TrimOptions::default(),
        &no_guard,
        None,
    )
    .unwrap_err();
    assert!(
        matches!(&e, TrimError::UnknownTypes { types, .. } if types == &[("brand-new-kind".to_string(), 2)]),
        "{e}"
    );
    assert!(e.to_string().contains("\"brand-new-kind\" (2)"), "{e}");
    assert_eq!(std::fs::read(&p).unwrap(), bytes, "untouched");
    assert!(!dir.path().join("b").exists());
    // A line that is not a record is refused too.
    let mut bad = recording("transcript-2.1.332.jsonl");
    bad.extend_from_slice(b"not json\n");
    std::fs::write(&p, &bad).unwrap();
    let e = trim(
        &p,
        &dir.path().join("b"),
        &TrimOptions::default(),
        &no_guard,
        None,
    )
    .unwrap_err();
    assert!(matches!(e, TrimError::BadRecord { line: 34, .. }), "{e}");
    // Forced: kept as they are, the rest trimmed.
    let (r, out, _d) = run(
        &bytes,
        TrimOptions {
            force: true,
            ..Default::default()
        },
    );
    assert!(
        out.ends_with(b"{\"type\":\"brand-new-kind\",\"x\":1}\n{\"type\":\"brand-new-kind\"}\n")
    );
    assert!(r.bytes_after < r.bytes_before);
}

#[test]
fn a_line_over_the_bound_is_refused() {
    let mut bytes = spike_shaped("2.1.332", false);
    let big = format!(
        "{{\"type\":\"user\",\"message\":{{\"content\":\"{}\"}}}}\n",
        "x".repeat(5000)
    );
    bytes.extend_from_slice(big.as_bytes());
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jsonl");
    std::fs::write(&p, &bytes).unwrap();
    let opts = TrimOptions {
        max_line: 4096,
        ..Default::default()
    };
    let e = trim(&p, &dir.path().join("b"), &opts, &no_guard, None).unwrap_err();
    assert!(matches!(e, TrimError::LineTooLong { max: 4096, .. }), "{e}");
    assert_eq!(std::fs::read(&p).unwrap(), bytes);
}

#[test]
fn file_history_goes_only_when_asked() {
    let bytes = recording("transcript-background-bash-2.1.332-settled.jsonl");
    let (r, _, _d) = run(&bytes, TrimOptions::default());
    assert!(!r.dropped.contains_key("file-history-snapshot"));
    let (r, out, _d) = run(
        &bytes,
        TrimOptions {
            drop_file_history: true,
            ..Default::default()
        },
    );
    assert_eq!(r.dropped["file-history-snapshot"].records, 2);
    assert!(!String::from_utf8_lossy(&out).contains("file-history-snapshot"));
}

#[test]
fn before_compact_keeps_what_follows_the_boundary() {
    let u = |n: u32| format!("00000000-0000-4000-8000-{n:012}");
    let recs = [
        json!({"type":"user","uuid":u(1),"parentUuid":null,"message":{"content":"old"}}),
        json!({"type":"assistant","uuid":u(2),"parentUuid":u(1),"message":{"content":[{"type":"text","text":"old reply"}]}}),
        json!({"type":"system","subtype":"compact_boundary","uuid":u(3),"parentUuid":null,"logicalParentUuid":u(2)}),
        json!({"type":"user","uuid":u(4),"parentUuid":u(3),"isCompactSummary":true,"message":{"content":"summary"}}),
        json!({"type":"assistant","uuid":u(5),"parentUuid":u(4),"message":{"content":[{"type":"text","text":"new"}]}}),
    ];
    let mut bytes = Vec::new();
    for r in &recs {
        bytes.extend(serde_json::to_vec(r).unwrap());
        bytes.push(b'\n');
    }
    // By default the pre-compaction history is on the chain (through
    // logicalParentUuid) and stays.
    let (r, out, _d) = run(&bytes, TrimOptions::default());
    assert!(r.unchanged && r.compact_boundary);
    assert_eq!(out, bytes);
    let (r, out, _d) = run(
        &bytes,
        TrimOptions {
            before_compact: true,
            ..Default::default()
        },
    );
    assert_eq!(r.dropped["dead branch: user"].records, 1);
    assert!(!String::from_utf8_lossy(&out).contains("old reply"));
    assert!(String::from_utf8_lossy(&out).contains("compact_boundary"));
}

/// The real CLI (2.1.173 and 2.1.332) sends a compaction's preserved
/// segment (`compactMetadata.preservedSegment`, tail up to head) after the
/// summary on resume: `--before-compact` keeps it (shape of a real
/// `/compact` transcript, tests/real_cli_trim.rs proves the request).
#[test]
fn before_compact_keeps_the_preserved_segment() {
    let u = |n: u32| format!("00000000-0000-4000-8000-{n:012}");
    let recs = [
        json!({"type":"user","uuid":u(1),"parentUuid":null,"message":{"content":"old"}}),
        json!({"type":"assistant","uuid":u(2),"parentUuid":u(1),"message":{"content":[{"type":"text","text":"old reply"}]}}),
        json!({"type":"assistant","uuid":u(3),"parentUuid":u(2),"message":{"content":[{"type":"text","text":"kept reply"}]}}),
        json!({"type":"system","subtype":"turn_duration","uuid":u(4),"parentUuid":u(3)}),
        json!({"type":"system","subtype":"compact_boundary","uuid":u(5),"parentUuid":null,"logicalParentUuid":u(4),
               "compactMetadata":{"trigger":"manual","preservedSegment":{"headUuid":u(3),"anchorUuid":u(6),"tailUuid":u(4)}}}),
        json!({"type":"user","uuid":u(6),"parentUuid":u(5),"isCompactSummary":true,"message":{"content":"summary"}}),
        json!({"type":"assistant","uuid":u(7),"parentUuid":u(6),"message":{"content":[{"type":"text","text":"new"}]}}),
    ];
    let mut bytes = Vec::new();
    for r in &recs {
        bytes.extend(serde_json::to_vec(r).unwrap());
        bytes.push(b'\n');
    }
    let (r, out, _d) = run(
        &bytes,
        TrimOptions {
            before_compact: true,
            ..Default::default()
        },
    );
    let text = String::from_utf8_lossy(&out);
    assert!(
        !text.contains("old reply") && !text.contains("\"old\""),
        "{text}"
    );
    assert!(
        text.contains("kept reply") && text.contains("turn_duration"),
        "{text}"
    );
    assert_eq!(r.dropped["dead branch: user"].records, 1);
    assert_eq!(r.dropped["dead branch: assistant"].records, 1);
}

#[test]
fn undo_puts_the_exact_bytes_back_and_refuses_after_a_change() {
    let mut bytes = recording("transcript-background-agent-2.1.332-settled.jsonl");
    bytes.extend_from_slice(b"{\"type\":\"mode\",\"mode\":\"normal\"}"); // half-written
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jsonl");
    let b = dir.path().join("backups").join("s");
    std::fs::write(&p, &bytes).unwrap();
    let r = trim(&p, &b, &TrimOptions::default(), &no_guard, None).unwrap();
    let kept = r.backup.unwrap();
    assert_eq!(std::fs::read(&kept).unwrap(), bytes);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&b).unwrap().permissions().mode() & 0o777,
        0o700
    );
    let u = undo(&p, &b, &no_guard).unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), bytes);
    assert_eq!(u.bytes_restored, bytes.len() as u64);
    assert!(!kept.exists());
    assert!(matches!(
        undo(&p, &b, &no_guard),
        Err(TrimError::NoBackup(_))
    ));
    // Trimmed, then written to (resumed): undo refuses, nothing lost.
    trim(&p, &b, &TrimOptions::default(), &no_guard, None).unwrap();
    let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
    std::io::Write::write_all(&mut f, b"{\"type\":\"user\"}\n").unwrap();
    let now = std::fs::read(&p).unwrap();
    assert!(matches!(
        undo(&p, &b, &no_guard),
        Err(TrimError::ChangedSinceTrim(..))
    ));
    assert_eq!(std::fs::read(&p).unwrap(), now);
}

#[test]
fn a_live_session_is_refused_before_and_before_the_rename() {
    let bytes = spike_shaped("2.1.332", false);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jsonl");
    std::fs::write(&p, &bytes).unwrap();
    let live = || Some("pid 42".to_string());
    let e = trim(
        &p,
        &dir.path().join("b"),
        &TrimOptions::default(),
        &live,
        None,
    )
    .unwrap_err();
    assert!(matches!(e, TrimError::Live(_)));
    // Live from the second look on (it started while trimming).
    let calls = std::cell::Cell::new(0);
    let later = || {
        calls.set(calls.get() + 1);
        (calls.get() > 1).then(|| "pid 43".to_string())
    };
    let e = trim(
        &p,
        &dir.path().join("b"),
        &TrimOptions::default(),
        &later,
        None,
    )
    .unwrap_err();
    assert!(matches!(e, TrimError::WriterAppeared(_)), "{e}");
    // A writer appending between the passes.
    let append = || {
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        std::io::Write::write_all(&mut f, b"{\"type\":\"user\"}\n").unwrap();
    };
    let e = trim(
        &p,
        &dir.path().join("b"),
        &TrimOptions::default(),
        &no_guard,
        Some(&append),
    )
    .unwrap_err();
    assert!(matches!(e, TrimError::WriterAppeared(_)), "{e}");
    let mut expected = bytes.clone();
    expected.extend_from_slice(b"{\"type\":\"user\"}\n");
    assert_eq!(std::fs::read(&p).unwrap(), expected);
    // No temporary file or backup left behind.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(
        names.len(),
        1 + usize::from(dir.path().join("b").exists()),
        "{names:?}"
    );
    if dir.path().join("b").exists() {
        assert_eq!(std::fs::read_dir(dir.path().join("b")).unwrap().count(), 0);
    }
}

#[test]
fn edit_line_changes_only_what_it_says() {
    use super::scan::Edit;
    let line = b"{\"toolUseResult\": {\"a\":[1,2]} , \"parentUuid\":\"x\",\"type\":\"user\"}\n";
    let y = Key::hash("y");
    let text = |k: Key| {
        if k == y {
            "y".to_string()
        } else {
            k.to_string()
        }
    };
    let e = Edit {
        line: 0,
        parent: Some(Some(y)),
        leaf: None,
        strip_tool_use_result: true,
    };
    let out = super::apply::edit_line(line, &e, &text).unwrap();
    assert_eq!(out, b"{ \"parentUuid\":\"y\",\"type\":\"user\"}\n");
    let line = b"{\"type\":\"user\",\"toolUseResult\":\"s\\\"}\",\"parentUuid\":\"x\"}\n";
    let e = Edit {
        line: 0,
        parent: Some(None),
        leaf: None,
        strip_tool_use_result: true,
    };
    let out = super::apply::edit_line(line, &e, &text).unwrap();
    assert_eq!(out, b"{\"type\":\"user\",\"parentUuid\":null}\n");
}

#[test]
fn keys_round_trip() {
    let s = "0e1fa752-1234-4abc-8def-0123456789ab";
    assert_eq!(Key::parse(s).unwrap().to_string(), s);
    assert!(Key::parse("0E1FA752-1234-4abc-8def-0123456789ab").is_none());
    assert_ne!(Key::hash("a"), Key::hash("b"));
}

#[test]
fn refining_fields_of_other_shapes_do_not_refuse() {
    // `mode`, `atis`, `version`, `subtype` only refine a rule: another
    // JSON type there keeps the record instead of refusing the file.
    let mut bytes = spike_shaped("2.1.332", false);
    bytes.extend_from_slice(b"{\"type\":\"mode\",\"mode\":{\"name\":\"plan\"}}\n{\"type\":\"atis-latch\",\"atis\":null}\n{\"type\":\"system\",\"subtype\":7,\"version\":[1]}\n");
    let (r, out, _d) = run(&bytes, TrimOptions::default());
    let s = String::from_utf8_lossy(&out);
    assert!(
        s.contains("{\"type\":\"mode\",\"mode\":{\"name\":\"plan\"}}"),
        "{s}"
    );
    assert!(s.contains("{\"type\":\"atis-latch\",\"atis\":null}"));
    assert_eq!(r.dropped["mode"].records, 1, "only the normal one");
}

#[test]
fn sidechains_and_unmeasured_kinds_off_the_chain_stay() {
    let u = |n: u32| format!("00000000-0000-4000-8000-{n:012}");
    let recs = [
        json!({"type":"user","uuid":u(1),"parentUuid":null,"message":{"content":"go"}}),
        json!({"type":"assistant","uuid":u(2),"parentUuid":u(1),"message":{"content":[{"type":"text","text":"a"}]}}),
        // A subagent's records in the main file (older CLIs) and a
        // progress record: off the chain, but not measured dead.
        json!({"type":"user","uuid":u(3),"parentUuid":u(1),"isSidechain":true,"message":{"content":"sub"}}),
        json!({"type":"progress","uuid":u(4),"parentUuid":u(1),"data":{}}),
        json!({"type":"user","uuid":u(5),"parentUuid":u(2),"message":{"content":"two"}}),
        json!({"type":"assistant","uuid":u(6),"parentUuid":u(5),"message":{"content":[{"type":"text","text":"b"}]}}),
    ];
    let mut bytes = Vec::new();
    for r in &recs {
        bytes.extend(serde_json::to_vec(r).unwrap());
        bytes.push(b'\n');
    }
    let (r, out, _d) = run(&bytes, TrimOptions::default());
    assert!(r.unchanged, "{r:?}");
    assert_eq!(out, bytes);
}

#[test]
fn a_uuid_written_twice_is_kept_twice_when_on_the_chain() {
    let u = |n: u32| format!("00000000-0000-4000-8000-{n:012}");
    let recs = [
        json!({"type":"user","uuid":u(1),"parentUuid":null,"message":{"content":"go"}}),
        json!({"type":"assistant","uuid":u(2),"parentUuid":u(1),"message":{"content":[{"type":"text","text":"a"}]}}),
        json!({"type":"assistant","uuid":u(2),"parentUuid":u(1),"message":{"content":[{"type":"text","text":"a"}]}}),
        json!({"type":"user","uuid":u(9),"parentUuid":u(1),"message":{"content":"rewound"}}),
        json!({"type":"user","uuid":u(9),"parentUuid":u(1),"message":{"content":"rewound"}}),
        json!({"type":"user","uuid":u(3),"parentUuid":u(2),"message":{"content":"two"}}),
        json!({"type":"last-prompt","lastPrompt":"two","leafUuid":u(3)}),
    ];
    let mut bytes = Vec::new();
    for r in &recs {
        bytes.extend(serde_json::to_vec(r).unwrap());
        bytes.push(b'\n');
    }
    let (r, out, _d) = run(&bytes, TrimOptions::default());
    assert_eq!(r.dropped["dead branch: user"].records, 2, "{r:?}");
    let after = records(&out);
    assert_eq!(after.iter().filter(|r| r["uuid"] == json!(u(2))).count(), 2);
    check_intact(&records(&bytes), &after);
}

#[test]
fn a_whole_last_record_without_its_newline_is_read() {
    // 2.1.332's shape: the assistant's parent is a prompt snapshot, which
    // goes; the assistant is the last line, unterminated.
    let u = |n: u32| format!("00000000-0000-4000-8000-{n:012}");
    let recs = [
        json!({"type":"user","uuid":u(1),"parentUuid":null,"message":{"content":"go"}}),
        json!({"type":"attachment","uuid":u(2),"parentUuid":u(1),"attachment":{"type":"prompt_snapshot"}}),
        json!({"type":"assistant","uuid":u(3),"parentUuid":u(2),"message":{"content":[{"type":"text","text":"a"}]}}),
    ];
    let mut bytes = Vec::new();
    for r in &recs {
        bytes.extend(serde_json::to_vec(r).unwrap());
        bytes.push(b'\n');
    }
    bytes.pop();
    let (r, out, _d) = run(&bytes, TrimOptions::default());
    assert_eq!(r.half_written_tail, None);
    assert!(!out.ends_with(b"\n"), "the missing newline stays missing");
    let last: Value =
        serde_json::from_slice(out.split(|b| *b == b'\n').next_back().unwrap()).unwrap();
    assert_eq!(
        last["parentUuid"],
        json!(u(1)),
        "re-linked past the snapshot"
    );
    assert_eq!(r.relinked, 1);
}

#[test]
fn a_field_written_twice_is_refused_not_guessed() {
    use super::scan::Edit;
    let line = b"{\"toolUseResult\":1,\"toolUseResult\":2,\"type\":\"user\"}\n";
    let e = Edit {
        line: 0,
        parent: None,
        leaf: None,
        strip_tool_use_result: true,
    };
    let r = super::apply::edit_line(line, &e, &|k: Key| k.to_string());
    assert!(r.is_err(), "{r:?}");
}

/// Random sessions (branches, snapshots to drop, unmeasured kinds off the
/// chain, tool pairs, last-prompts anywhere): the chain resume follows
/// keeps its conversation, no kept link dangles, no pair breaks.
#[test]
fn random_sessions_keep_the_resumed_conversation() {
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n.max(1)
    };
    let u = |n: u64| format!("00000000-0000-4000-8000-{n:012}");
    for case in 0..300 {
        let mut recs: Vec<Value> = Vec::new();
        let mut uuids: Vec<u64> = Vec::new();
        let mut open_tools: Vec<(String, u64)> = Vec::new();
        let n = 5 + next(120);
        for i in 1..=n {
            let parent = if uuids.is_empty() {
                None
            } else if next(6) == 0 {
                Some(uuids[next(uuids.len() as u64) as usize]) // a branch
            } else {
                uuids.last().copied()
            };
            let p = parent.map(u);
            let r = match next(10) {
                0 => {
                    json!({"type":"attachment","uuid":u(i),"parentUuid":p,"attachment":{"type":"prompt_snapshot"}})
                }
                1 => {
                    json!({"type":"attachment","uuid":u(i),"parentUuid":p,"attachment":{"type":"date","content":i}})
                }
                2 => json!({"type":"system","subtype":"turn_duration","uuid":u(i),"parentUuid":p}),
                3 => json!({"type":"progress","uuid":u(i),"parentUuid":p}),
                4 => json!({"type":"api-request","id":i}),
                5 => {
                    json!({"type":"last-prompt","leafUuid": uuids.get(next(uuids.len() as u64 + 1) as usize).map(|x| u(*x))})
                }
                6 => {
                    let t = format!("toolu_{case}_{i}");
                    open_tools.push((t.clone(), i));
                    json!({"type":"assistant","uuid":u(i),"parentUuid":p,"message":{"content":[{"type":"tool_use","id":t}]}})
                }
                7 if !open_tools.is_empty() => {
                    let (t, _) = open_tools.remove(next(open_tools.len() as u64) as usize);
                    json!({"type":"user","uuid":u(i),"parentUuid":p,"toolUseResult":{"x":i},"message":{"content":[{"type":"tool_result","tool_use_id":t}]}})
                }
                8 => {
                    json!({"type":"assistant","uuid":u(i),"parentUuid":p,"message":{"content":[{"type":"text","text":format!("a{i}")}]}})
                }
                _ => {
                    json!({"type":"user","uuid":u(i),"parentUuid":p,"message":{"content":format!("u{i}")}})
                }
            };
            if r.get("uuid").is_some() {
                uuids.push(i);
            }
            recs.push(r);
        }
        let mut bytes = Vec::new();
        for r in &recs {
            bytes.extend(serde_json::to_vec(r).unwrap());
            bytes.push(b'\n');
        }
        for opts in [
            TrimOptions::default(),
            TrimOptions {
                drop_file_history: true,
                ..Default::default()
            },
        ] {
            let (_, out, _d) = run(&bytes, opts);
            let after = records(&out);
            check_intact(&recs, &after);
            assert_eq!(conversation(&recs), conversation(&after), "case {case}");
        }
    }
}

/// A trim killed before its rename left its temporary file (as large as
/// the transcript) beside it: the next trim of that transcript removes it
/// before it reads, and its undo too; other files stay.
#[test]
fn a_killed_trims_temporary_file_goes_with_the_next_trim() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jsonl");
    let bytes = recording("transcript-2.1.332.jsonl");
    std::fs::write(&p, &bytes).unwrap();
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let left = |n: u32| {
        let t = dir.path().join(format!(".s.jsonl.ccd-trim-{dead}-{n}.tmp"));
        std::fs::write(&t, &bytes[..bytes.len() / 2]).unwrap();
        t
    };
    let first = left(1);
    let other = dir.path().join(format!(".t.jsonl.ccd-trim-{dead}-1.tmp"));
    let unrelated = dir.path().join("notes.tmp");
    for f in [&other, &unrelated] {
        std::fs::write(f, b"keep").unwrap();
    }
    let backups = dir.path().join("backups");
    let r = trim(&p, &backups, &TrimOptions::default(), &no_guard, None).unwrap();
    assert!(!r.unchanged);
    assert!(!first.exists(), "the leftover is still there");
    assert!(other.exists() && unrelated.exists());
    let second = left(2);
    undo(&p, &backups, &no_guard).unwrap();
    assert!(!second.exists(), "the undo left the leftover");
    assert_eq!(std::fs::read(&p).unwrap(), bytes);
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(
        !names.iter().any(|n| n.starts_with(".s.jsonl.ccd-trim-")),
        "{names:?}"
    );
}
