//! The background-work rule on the real CLI's own transcripts: each
//! `transcript-background-<kind>-<version>-running.jsonl` recording (made by
//! `tests/real-cli/record-background.sh` while the work ran) is pending, its
//! `-settled.jsonl` twin (once the CLI recorded the end) is not.

use ccd_claude::transcript::background::{pending, scan};

/// (kind, version) of every running/settled pair in the recordings.
fn pairs() -> Vec<(String, String)> {
    let dir = ccd_testkit::fixtures::claude_cli_dir();
    let mut out: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let rest = name
                .strip_prefix("transcript-background-")?
                .strip_suffix("-running.jsonl")?;
            let (kind, version) = rest.rsplit_once('-')?;
            Some((kind.to_string(), version.to_string()))
        })
        .collect();
    out.sort();
    out
}

#[test]
fn both_pinned_versions_are_recorded() {
    let p = pairs();
    for kind in ["bash", "agent"] {
        for version in ["2.1.173", "2.1.332"] {
            assert!(
                p.contains(&(kind.to_string(), version.to_string())),
                "no {kind} recording for {version}: {p:?}"
            );
        }
    }
}

#[test]
fn running_is_pending_and_settled_is_not() {
    let dir = ccd_testkit::fixtures::claude_cli_dir();
    for (kind, version) in pairs() {
        let base = format!("transcript-background-{kind}-{version}");
        let running = pending(&dir.join(format!("{base}-running.jsonl"))).unwrap();
        match kind.as_str() {
            "bash" => {
                assert_eq!(running.shells.len(), 1, "{base}: {running:?}");
                assert!(running.subagents.is_empty(), "{base}: {running:?}");
            }
            _ => {
                assert_eq!(running.subagents.len(), 1, "{base}: {running:?}");
                assert!(running.shells.is_empty(), "{base}: {running:?}");
            }
        }
        let settled_path = dir.join(format!("{base}-settled.jsonl"));
        let settled = pending(&settled_path).unwrap();
        assert!(!settled.any(), "{base}-settled: {settled:?}");
        // Line by line: one pending stretch, from the tool use that
        // started the work to the record that ends it (the queued
        // task notification; a foreground subagent's tool result).
        let text = std::fs::read_to_string(&settled_path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let states: Vec<bool> = (1..=lines.len())
            .map(|n| scan(lines[..n].join("\n").as_bytes()).any())
            .collect();
        let start = states.iter().position(|&p| p).unwrap();
        let end = start + states[start..].iter().position(|&p| !p).unwrap();
        assert!(
            states[end..].iter().all(|&p| !p),
            "{base}-settled: pending again after line {end}"
        );
        let record = |i: usize| serde_json::from_str::<serde_json::Value>(lines[i]).unwrap();
        assert_eq!(
            record(start)["type"],
            "assistant",
            "{base}: {}",
            lines[start]
        );
        let ended_by = record(end);
        if kind == "fg-agent" {
            assert_eq!(ended_by["type"], "user", "{base}: {}", lines[end]);
        } else {
            assert_eq!(
                ended_by["type"], "queue-operation",
                "{base}: {}",
                lines[end]
            );
            assert_eq!(ended_by["operation"], "enqueue", "{base}: {}", lines[end]);
        }
    }
}
