//! Tokens and dollars of archived conversations (issue 56 §5: usage
//! "still sees it"): a conversation with usage (and a subagent file whose
//! messages include a copy of one of the transcript's) counts the same in
//! `ccd usage` (by session, folder and day), `ccd ls --json` and the
//! daemon's `sessions.list` before `ccd archive`, after it, and after it is
//! put back (`ccd archive --restore`, and with a stale copy of the archive
//! left beside it: counted once, from its place); a damaged member of an
//! archive names that conversation as unreadable while the rest is still
//! counted.

mod common;

use ccd_protocol::methods::session::{ListParams, SessionsList};
use ccd_testkit::gen::TranscriptWriter;
use common::{wait_for, Sandbox};
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

const T: Duration = Duration::from_secs(30);

const A: &str = "aaaaaaaa-5555-4555-8555-555555555555";
const B: &str = "bbbbbbbb-6666-4666-8666-666666666666";
const SONNET: &str = "claude-sonnet-4-20250514";

fn assistant(w: &mut TranscriptWriter, sid: &str, id: &str, at: &str, u: [u64; 4]) {
    w.line(json!({"type":"assistant","isSidechain":false,
        "message":{"id":id,"role":"assistant","model":SONNET,"content":[{"type":"text","text":"x"}],
          "usage":{"input_tokens":u[0],"output_tokens":u[1],"cache_creation_input_tokens":u[2],"cache_read_input_tokens":u[3]}},
        "requestId":format!("req-{id}"),"timestamp":at,"sessionId":sid,"cwd":"/w/api"}));
}

fn user(w: &mut TranscriptWriter, sid: &str, cwd: &str, at: &str) {
    w.line(
        json!({"type":"user","cwd":cwd,"sessionId":sid,"timestamp":at,
        "message":{"role":"user","content":"hi"}}),
    );
}

/// A (archived later) with a streamed message and a subagent file, B left
/// in place.
fn conversations(sb: &Sandbox) {
    let mut a = TranscriptWriter::create(&sb.config, A, "/w/api");
    user(&mut a, A, "/w/api", "2026-11-01T09:59:00Z");
    assistant(&mut a, A, "m1", "2026-11-01T10:00:00Z", [1000, 10, 20, 30]);
    assistant(&mut a, A, "m2", "2026-11-01T10:01:00Z", [5, 1, 0, 0]);
    assistant(&mut a, A, "m2", "2026-11-01T10:01:00Z", [5, 400, 0, 0]);
    // A record without a message id is never deduplicated: counted in
    // every file that holds it (a stale archive beside the restored
    // transcript would count it twice).
    a.line(
        json!({"type":"assistant","message":{"role":"assistant","model":SONNET,
        "usage":{"input_tokens":7,"output_tokens":0}},"timestamp":"2026-11-01T10:02:00Z",
        "sessionId":A,"cwd":"/w/api"}),
    );
    drop(a);
    let side = sb
        .config
        .join("projects")
        .join(ccd_claude::slug::slug("/w/api"))
        .join(A)
        .join("subagents");
    std::fs::create_dir_all(&side).unwrap();
    let mut s = TranscriptWriter::create_in(&side, "agent-x", "/w/api");
    assistant(&mut s, A, "s1", "2026-11-02T08:00:00Z", [300, 30, 0, 3000]);
    // A copy of the transcript's m1 with fewer tokens: counted once.
    assistant(&mut s, A, "m1", "2026-11-01T10:00:00Z", [1000, 1, 20, 30]);
    drop(s);
    let mut b = TranscriptWriter::create(&sb.config, B, "/w/web");
    user(&mut b, B, "/w/web", "2026-11-02T09:59:00Z");
    assistant(&mut b, B, "m3", "2026-11-02T10:00:00Z", [70, 7, 0, 0]);
}

/// `ccd usage --by <by> --json`, whole.
fn usage(sb: &Sandbox, by: &str) -> Value {
    let out = sb.ok(&["usage", "--by", by, "--json", "--utc"]);
    serde_json::from_str(&out).unwrap()
}

/// What must not change: the rows and totals by session, folder and day.
fn totals(sb: &Sandbox) -> Vec<Value> {
    ["session", "folder", "day"]
        .iter()
        .map(|by| {
            let v = usage(sb, by);
            assert_eq!(v["unreadable"], json!([]), "{v}");
            json!({"rows": v["rows"], "total": v["total"]})
        })
        .collect()
}

/// `ccd ls --json`'s usage of `sid`.
fn ls_usage(sb: &Sandbox, sid: &str) -> Value {
    common::row(sb, sid)["usage"].clone()
}

/// The daemon's usage of `sid` once its board has one.
fn listed_usage(sb: &Sandbox, sid: &str, total: u64) -> Value {
    wait_for(T, "the daemon's usage", || {
        let mut c = sb.client();
        let r = c.call::<SessionsList>(&ListParams::default()).unwrap();
        let row = r.sessions.iter().find(|s| s.session_id == sid)?;
        let u = serde_json::to_value(row.usage.as_ref()?).unwrap();
        (u["total_tokens"] == total).then_some(u)
    })
}

fn archive_dir(sb: &Sandbox) -> std::path::PathBuf {
    sb.state.join("archive")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

#[test]
fn an_archived_conversation_counts_as_in_place_and_once_when_put_back() {
    let sb = Sandbox::new();
    conversations(&sb);
    let before = totals(&sb);
    let by_session = &before[0]["rows"];
    let a_row = by_session
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["key"] == A)
        .unwrap()
        .clone();
    // m1 once (its larger copy), m2 once, the record without an id, the
    // subagent's s1.
    assert_eq!(a_row["total_tokens"], 1060 + 405 + 7 + 3330, "{a_row}");
    let ls_before = ls_usage(&sb, A);
    assert_eq!(ls_before["total_tokens"], a_row["total_tokens"]);

    let said = sb.ok_stderr(&["archive", A]);
    assert!(said.contains("2 files"), "{said}");
    assert_eq!(common::row(&sb, A)["state"], "archived");
    assert_eq!(totals(&sb), before, "archived");
    // A warm run (the archive's results cached): the same.
    assert_eq!(totals(&sb), before, "archived, warm");
    assert_eq!(ls_usage(&sb, A), ls_before);
    sb.client_or_start();
    let got = listed_usage(&sb, A, 4802);
    assert_eq!(got, ls_before);

    // Put back: counted from its place, once.
    sb.ok_stderr(&["archive", "--restore", A]);
    assert!(!archive_dir(&sb).join(A).exists());
    assert_eq!(totals(&sb), before, "restored");
    assert_eq!(ls_usage(&sb, A), ls_before);
    // A stale copy of the archive beside the restored files (as between
    // a restore's placing and its removing the archive): still once.
    sb.ok_stderr(&["archive", A]);
    let stale = sb.tmp.path().join("stale");
    copy_dir(&archive_dir(&sb).join(A), &stale);
    sb.ok_stderr(&["archive", "--restore", A]);
    copy_dir(&stale, &archive_dir(&sb).join(A));
    assert_eq!(totals(&sb), before, "restored, a stale archive beside");
    assert_eq!(ls_usage(&sb, A), ls_before);
    let got = listed_usage(&sb, A, 4802);
    assert_eq!(got, ls_before);
}

#[test]
fn a_damaged_archive_names_its_conversation_and_the_rest_is_counted() {
    let sb = Sandbox::new();
    conversations(&sb);
    let before = usage(&sb, "session");
    sb.ok_stderr(&["archive", A]);
    // The subagent file's compressed copy damaged.
    let dir = archive_dir(&sb).join(A);
    let m: Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    let store = m["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"].as_str().unwrap().ends_with("agent-x.jsonl"))
        .unwrap()["store"]
        .as_str()
        .unwrap()
        .to_owned();
    std::fs::write(dir.join(&store), b"not zstd at all").unwrap();
    let o = sb.run(&["usage", "--by", "session", "--json", "--utc"]);
    assert!(o.status.success());
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let bad = v["unreadable"].as_array().unwrap();
    assert_eq!(bad.len(), 1, "{v}");
    assert_eq!(bad[0]["session"], A);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("the archived conversation {A}")),
        "{err}"
    );
    let row = |v: &Value, sid: &str| {
        v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["key"] == sid)
            .cloned()
    };
    // B counted as before; A's transcript still counted, not its
    // subagent's file.
    assert_eq!(row(&v, B), row(&before, B));
    assert_eq!(row(&v, A).unwrap()["total_tokens"], 1060 + 405 + 7);
}
