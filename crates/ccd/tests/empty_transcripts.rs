//! An empty transcript (0 bytes, or no parsable record) is not a session:
//! `ccd ls` does not list it, and `ccd attach <its id>` says it is empty.

mod common;

use common::pty::PtyRun;
use common::{ls_json, Sandbox};
use serde_json::json;
use std::time::Duration;

const T: Duration = Duration::from_secs(20);
const ZERO: &str = "aaaaaaaa-1111-4222-8333-444455556666";
const JUNK: &str = "abababab-1111-4222-8333-444455556666";
const REAL: &str = "acacacac-1111-4222-8333-444455556666";

#[test]
fn empty_transcripts_are_not_listed_and_attach_says_why() {
    let sb = Sandbox::new();
    let proj = sb.project("empty");
    let real = ccd_testkit::gen::transcript(&sb.config, REAL, proj.to_str().unwrap(), 1);
    let dir = real.parent().unwrap().to_path_buf();
    let zero = dir.join(format!("{ZERO}.jsonl"));
    std::fs::write(&zero, b"").unwrap();
    std::fs::write(dir.join(format!("{JUNK}.jsonl")), b"not json\n{\"type\":").unwrap();

    let ids: Vec<String> = ls_json(&sb)
        .iter()
        .filter_map(|r| r["session_id"].as_str().map(String::from))
        .collect();
    assert_eq!(ids, [REAL], "only the real transcript is a session");

    let mut c = sb.client_or_start();
    for sid in [ZERO, JUNK] {
        match c.call_value("session.attach", json!({"session": sid})) {
            Err(ccd_client::ClientError::Rpc(e)) => {
                assert_eq!(e.code, -32007, "{e:?}");
                assert!(e.message.contains("is empty"), "{}", e.message);
            }
            other => panic!("{sid}: expected transcript_missing, got {other:?}"),
        }
    }

    let mut a = PtyRun::start(&sb, &["attach", &ZERO[..8]], None);
    assert_eq!(a.wait_exit(T), 1);
    let out = a.raw_text();
    assert!(
        out.contains("is empty") && out.contains(&zero.to_string_lossy().to_string()),
        "{out}"
    );
}
