//! Background work started early keeps its session from idle reaping
//! however long the transcript grows after it (issue 50, finding 2: the
//! scan used to read only the transcript's last 2 MiB).

mod common;

use common::{row, wait_for, Sandbox};
use serde_json::json;
use std::io::Write;
use std::time::Duration;

const T: Duration = Duration::from_secs(30);

fn append(path: &str, records: &[serde_json::Value]) {
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    let mut out = Vec::new();
    for r in records {
        out.extend_from_slice(r.to_string().as_bytes());
        out.push(b'\n');
    }
    f.write_all(&out).unwrap();
}

#[test]
fn work_started_before_megabytes_of_conversation_keeps_its_session() {
    let sb = Sandbox::with_env(&[("CCD_REAP_IDLE_SECS", "2"), ("FAKE_CLAUDE_TURN_MS", "300")]);
    let plain = sb.new_session_with_a_turn("plain");
    let early = sb.new_session_with_a_turn("early");
    let path = row(&sb, &early)["transcript"].as_str().unwrap().to_string();
    // A background shell, as 2.1.332 records it, then 3.2 MB of ordinary
    // turns (the figure; well past the old 2 MiB tail).
    append(
        &path,
        &[
            json!({"type":"assistant","message":{"content":[{"type":"tool_use","id":"toolu_dev","name":"Bash","input":{"command":"npm run dev","run_in_background":true}}]}}),
            json!({"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_dev","content":"Command running in background with ID: bdev1."}]},"toolUseResult":{"stdout":"","stderr":"","interrupted":false,"backgroundTaskId":"bdev1"}}),
        ],
    );
    let turn = [
        json!({"type":"user","message":{"role":"user","content":"tell me more ".repeat(80)}}),
        json!({"type":"assistant","message":{"content":[{"type":"text","text":"more words ".repeat(200)}]}}),
    ];
    let per_turn: usize = turn.iter().map(|r| r.to_string().len() + 1).sum();
    let turns: Vec<serde_json::Value> = turn
        .iter()
        .cycle()
        .take(2 * (3_200_000 / per_turn + 1))
        .cloned()
        .collect();
    append(&path, &turns);
    assert!(std::fs::metadata(&path).unwrap().len() > 3_200_000);

    // The reaper runs (the plain session goes), and leaves the early one.
    wait_for(T, "the plain session reaped", || {
        (row(&sb, &plain)["ccd"]["lifecycle"] == "reaped").then_some(())
    });
    std::thread::sleep(Duration::from_secs(3));
    let r = row(&sb, &early);
    assert_eq!(r["state"], "live", "reaped with work in flight: {r}");

    // Its end, recorded after all that: now it may go.
    let n = "<task-notification>\n<task-id>bdev1</task-id>\n<tool-use-id>toolu_dev</tool-use-id>\n<status>completed</status>\n<summary>Background command \"npm run dev\" completed (exit code 0)</summary>\n</task-notification>";
    append(
        &path,
        &[json!({"type":"queue-operation","operation":"enqueue","content":n})],
    );
    wait_for(T, "the early session reaped once its work ended", || {
        (row(&sb, &early)["ccd"]["lifecycle"] == "reaped").then_some(())
    });
}
