//! Tokens and dollars where the daemon lists sessions (issue 56): the
//! usage board `sessions.list` and `sessions.get` fill, equal to `ccd
//! usage --by session`'s totals and following appended usage; another
//! machine's rows in `ccd ls --host` (an ssh stand-in running the far
//! sandbox's `ccd dial-stdio`) carrying its tokens; archived conversations
//! listed and answered by the daemon; `ccd ui` (tmux) showing this
//! machine's TOKENS and `$` per row and their total, and an archived row.

mod common;

use ccd_protocol::methods::session::{ListParams, SessionsGet, SessionsList};
use ccd_protocol::methods::SessionRef;
use ccd_testkit::gen::TranscriptWriter;
use common::{wait_for, Sandbox};
use serde_json::{json, Value};
use std::time::Duration;

const T: Duration = Duration::from_secs(30);

const A: &str = "aaaaaaaa-1111-4111-8111-111111111111";
const B: &str = "bbbbbbbb-2222-4222-8222-222222222222";
const SONNET: &str = "claude-sonnet-4-20250514";

fn assistant(w: &mut TranscriptWriter, sid: &str, id: &str, at: &str, u: [u64; 4]) {
    w.line(json!({"type":"assistant","isSidechain":false,
        "message":{"id":id,"role":"assistant","model":SONNET,"content":[{"type":"text","text":"x"}],
          "usage":{"input_tokens":u[0],"output_tokens":u[1],"cache_creation_input_tokens":u[2],"cache_read_input_tokens":u[3]}},
        "requestId":format!("req-{id}"),"timestamp":at,"sessionId":sid,"cwd":"/w"}));
}

fn user(w: &mut TranscriptWriter, sid: &str, cwd: &str, at: &str) {
    w.line(
        json!({"type":"user","cwd":cwd,"sessionId":sid,"timestamp":at,
        "message":{"role":"user","content":"hi"}}),
    );
}

/// Two dead conversations with usage (a streamed message in A counted
/// once).
fn two_sessions(sb: &Sandbox) -> TranscriptWriter {
    let mut a = TranscriptWriter::create(&sb.config, A, "/w/api");
    user(&mut a, A, "/w/api", "2026-11-01T09:59:00Z");
    assistant(&mut a, A, "m1", "2026-11-01T10:00:00Z", [1000, 10, 20, 30]);
    assistant(&mut a, A, "m2", "2026-11-01T10:01:00Z", [5, 1, 0, 0]);
    assistant(&mut a, A, "m2", "2026-11-01T10:01:00Z", [5, 400, 0, 0]);
    let mut b = TranscriptWriter::create(&sb.config, B, "/w/web");
    user(&mut b, B, "/w/web", "2026-11-02T09:59:00Z");
    assistant(&mut b, B, "m3", "2026-11-02T10:00:00Z", [70, 7, 0, 0]);
    a
}

/// `ccd usage --by session --json`'s row of each session.
fn usage_rows(sb: &Sandbox) -> Vec<Value> {
    let out = sb.ok(&["usage", "--by", "session", "--json", "--utc"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    v["rows"].as_array().unwrap().clone()
}

fn listed(sb: &Sandbox, params: &ListParams) -> Vec<Value> {
    let mut c = sb.client();
    let r = c.call::<SessionsList>(params).unwrap();
    r.sessions
        .iter()
        .map(|s| serde_json::to_value(s).unwrap())
        .collect()
}

fn row_of<'a>(rows: &'a [Value], sid: &str) -> Option<&'a Value> {
    rows.iter().find(|r| r["session_id"] == sid)
}

/// The daemon's usage of `sid` equals `ccd usage`'s row for it.
fn same_as_ccd_usage(usage: &Value, row: &Value) -> bool {
    usage["input_tokens"] == row["tokens"]["input"]
        && usage["output_tokens"] == row["tokens"]["output"]
        && usage["cache_creation_tokens"] == row["tokens"]["cache_creation"]
        && usage["cache_read_tokens"] == row["tokens"]["cache_read"]
        && usage["total_tokens"] == row["total_tokens"]
        && (usage["cost_usd"].as_f64().unwrap() - row["cost_usd"].as_f64().unwrap()).abs() < 1e-9
}

#[test]
fn sessions_list_and_get_carry_ccd_usages_totals_and_follow_appends() {
    let sb = Sandbox::new();
    let mut a = two_sessions(&sb);
    sb.client_or_start();
    let expected = usage_rows(&sb);
    assert_eq!(expected.len(), 2, "{expected:?}");
    // The reader's first pass comes soon after the start.
    let rows = wait_for(T, "usage on both rows", || {
        let rows = listed(&sb, &ListParams::default());
        [A, B]
            .iter()
            .all(|s| row_of(&rows, s).is_some_and(|r| !r["usage"].is_null()))
            .then_some(rows)
    });
    for e in &expected {
        let sid = e["key"].as_str().unwrap();
        let got = &row_of(&rows, sid).unwrap()["usage"];
        assert!(same_as_ccd_usage(got, e), "{sid}: {got} vs {e}");
    }
    assert_eq!(row_of(&rows, A).unwrap()["usage"]["total_tokens"], 1465);
    assert_eq!(
        row_of(&rows, A).unwrap()["usage"]["models"],
        json!([SONNET])
    );

    // sessions.get answers with it too; no_cost lists none.
    let mut c = sb.client();
    let got = c
        .call::<SessionsGet>(&SessionRef {
            session: B.to_string(),
        })
        .unwrap();
    assert_eq!(got.usage.map(|u| u.total_tokens), Some(77));
    let bare = listed(
        &sb,
        &ListParams {
            no_cost: true,
            ..Default::default()
        },
    );
    assert!(bare.iter().all(|r| r.get("usage").is_none()), "{bare:?}");

    // Usage appended to A shows up after a pass (the list kept asking).
    assistant(&mut a, A, "m4", "2026-11-01T11:00:00Z", [100_000, 0, 0, 0]);
    drop(a);
    let rows = wait_for(T, "the appended usage", || {
        let rows = listed(&sb, &ListParams::default());
        (row_of(&rows, A)?["usage"]["total_tokens"] == 101_465).then_some(rows)
    });
    let expected = usage_rows(&sb);
    for e in &expected {
        let sid = e["key"].as_str().unwrap();
        let got = &row_of(&rows, sid).unwrap()["usage"];
        assert!(same_as_ccd_usage(got, e), "{sid}: {got} vs {e}");
    }
}

#[test]
fn an_archived_conversation_is_listed_and_answered_by_the_daemon() {
    let sb = Sandbox::new();
    drop(two_sessions(&sb));
    sb.ok_stderr(&["archive", B]);
    sb.client_or_start();
    let rows = listed(&sb, &ListParams::default());
    let b = row_of(&rows, B).unwrap_or_else(|| panic!("{B} listed: {rows:?}"));
    assert_eq!(b["state"], "archived");
    assert_eq!(b["cwd"], "/w/web");
    assert_eq!(row_of(&rows, A).unwrap()["state"], "dead");
    // Once, and not among the live ones.
    assert_eq!(rows.iter().filter(|r| r["session_id"] == B).count(), 1);
    let live = listed(
        &sb,
        &ListParams {
            live_only: true,
            ..Default::default()
        },
    );
    assert!(row_of(&live, B).is_none(), "{live:?}");
    // sessions.get by its id and by a prefix.
    let mut c = sb.client();
    for q in [B, &B[..8]] {
        let got = c
            .call::<SessionsGet>(&SessionRef {
                session: q.to_string(),
            })
            .unwrap_or_else(|e| panic!("sessions.get {q}: {e}"));
        assert_eq!(got.session_id, B);
        assert_eq!(serde_json::to_value(got.state).unwrap(), json!("archived"));
    }
    // The same row `ccd ls --json` shows.
    let ls = common::ls_json(&sb);
    let l = row_of(&ls, B).unwrap();
    assert_eq!(l["state"], b["state"]);
    assert_eq!(l["transcript"], b["transcript"]);
}

#[test]
fn ls_host_shows_the_other_machines_tokens_and_dollars() {
    let near = Sandbox::new();
    let far = Sandbox::new();
    drop(two_sessions(&far));
    let ssh = near.stand_in_ssh_to(&far);
    let run = |args: &[&str]| {
        let mut full = vec!["--host", "ssh://far"];
        full.extend_from_slice(args);
        let o = near
            .cmd(&full)
            .env("CCD_SSH_COMMAND", &ssh)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "ccd {full:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8(o.stdout).unwrap()
    };
    // The far daemon starts with the first ask; its first pass follows.
    let rows = wait_for(T, "the far machine's usage", || {
        let rows: Vec<Value> = serde_json::from_str(&run(&["ls", "--json"])).ok()?;
        (row_of(&rows, A)?["usage"]["total_tokens"] == 1465).then_some(rows)
    });
    assert_eq!(row_of(&rows, A).unwrap()["host"], "far");
    assert_eq!(row_of(&rows, B).unwrap()["usage"]["total_tokens"], 77);
    let table = run(&["ls"]);
    let line = table.lines().find(|l| l.contains(&A[..8])).unwrap();
    assert!(line.contains("1k") && line.contains("$0.01"), "{table}");
}

#[test]
fn the_dashboard_shows_tokens_dollars_their_total_and_an_archived_row() {
    if !common::tmux::tmux_or_skip() {
        return;
    }
    let sb = Sandbox::new();
    drop(two_sessions(&sb));
    let c = "cccccccc-3333-4333-8333-333333333333";
    let mut w = TranscriptWriter::create(&sb.config, c, "/w/old");
    user(&mut w, c, "/w/old", "2026-10-01T09:59:00Z");
    drop(w);
    sb.ok_stderr(&["archive", c]);
    let t = common::tmux::Tmux::start(&sb, &["ui"], 250, 30);
    let pane = t.wait_until("the rows with their usage", T, |p| {
        p.contains(&A[..8]) && p.contains(&c[..8]) && p.contains("$0.01")
    });
    let rows = common::tmux::list_rows(&pane);
    let row = |sid: &str| rows.iter().find(|r| r.contains(&sid[..8])).unwrap().clone();
    assert!(row(A).contains("1k") && row(A).contains("$0.01"), "{pane}");
    assert!(row(B).contains("77") && row(B).contains("$0.00"), "{pane}");
    assert!(row(c).contains("archived"), "{pane}");
    let header = pane.lines().next().unwrap_or_default();
    assert!(header.contains("$0.01 · 1k tokens"), "the total: {pane}");
    t.keys(&["q"]);
}

#[test]
fn a_fork_over_the_socket_puts_an_archived_conversation_back_first() {
    let sb = Sandbox::new();
    let dir = sb.project("kept");
    let cwd = dir.to_str().unwrap();
    let sid = "dddddddd-4444-4444-8444-444444444444";
    let mut w = TranscriptWriter::create(&sb.config, sid, cwd);
    user(&mut w, sid, cwd, "2026-11-03T09:59:00Z");
    assistant(&mut w, sid, "m9", "2026-11-03T10:00:00Z", [10, 1, 0, 0]);
    drop(w);
    let transcript = sb
        .config
        .join("projects")
        .join(ccd_claude::slug::slug(cwd))
        .join(format!("{sid}.jsonl"));
    let before = std::fs::read(&transcript).unwrap();
    sb.ok_stderr(&["archive", sid]);
    assert!(!transcript.exists());
    let mut c = sb.client_or_start();
    let forked = c.call::<ccd_protocol::methods::session::SessionFork>(
        &ccd_protocol::methods::session::ForkParams {
            session: sid[..8].to_string(),
            size: None,
        },
    );
    // Put back byte for byte (whatever the fork then made of it), and no
    // longer archived.
    assert_eq!(
        std::fs::read(&transcript).ok(),
        Some(before),
        "put back: {forked:?}"
    );
    assert_eq!(sb.ok(&["archive", "--list"]), "");
    let rows = listed(&sb, &ListParams::default());
    assert_eq!(
        row_of(&rows, sid).map(|r| r["state"].clone()),
        Some(json!("dead"))
    );
}
