//! The background-work rule on the real CLI's own transcripts: each
//! `transcript-background-<kind>-<version>-running.jsonl` recording (made by
//! `tests/real-cli/record-background.sh` while the work ran) is pending, its
//! `-settled.jsonl` twin (once the CLI recorded the end) is not.

use ccd_claude::transcript::background::{pending, scan, Tracker};

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

/// The recording's lines.
fn recording(name: &str) -> Vec<u8> {
    std::fs::read(ccd_testkit::fixtures::claude_cli_dir().join(name)).unwrap()
}

/// At least `at_least` bytes of the recording's ordinary records (user
/// prompts, assistant text: no tool use, no notification), repeated.
fn ordinary_records(body: &[u8], at_least: usize) -> Vec<u8> {
    let text = std::str::from_utf8(body).unwrap();
    let ordinary: Vec<&str> = text
        .lines()
        .filter(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            matches!(v["type"].as_str(), Some("user" | "assistant"))
                && !l.contains("tool_use")
                && !l.contains("task-notification")
        })
        .collect();
    assert!(!ordinary.is_empty());
    let mut out = Vec::new();
    while out.len() < at_least {
        for l in &ordinary {
            out.extend_from_slice(l.as_bytes());
            out.push(b'\n');
        }
    }
    out
}

fn append(path: &std::path::Path, bytes: &[u8]) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(bytes).unwrap();
}

/// Issue 50, finding 2: a background shell or subagent started early, then
/// 3.2 MB of ordinary records (past the 2 MiB the scan used to read), is
/// still pending — to a fresh look and to a tracker kept across looks —
/// until its end is recorded after them.
#[test]
fn work_started_early_stays_pending_however_long_the_transcript() {
    let dir = tempfile::tempdir().unwrap();
    for (kind, version) in pairs() {
        let base = format!("transcript-background-{kind}-{version}");
        let running = recording(&format!("{base}-running.jsonl"));
        let settled = recording(&format!("{base}-settled.jsonl"));
        assert!(settled.starts_with(&running), "{base}");
        let path = dir.path().join(format!("{base}.jsonl"));
        std::fs::write(&path, &running).unwrap();
        let mut tracker = Tracker::default();
        assert!(tracker.look(&path).unwrap().any(), "{base}");

        let filler = ordinary_records(&settled, 3_200_000);
        append(&path, &filler);
        let fresh = pending(&path).unwrap();
        assert!(fresh.any(), "{base}: forgotten after 3.2 MB");
        assert_eq!(tracker.look(&path).unwrap(), fresh, "{base}");
        assert_eq!(tracker.last_read(), filler.len() as u64, "{base}");

        // Its end, recorded after all that.
        append(&path, &settled[running.len()..]);
        let fresh = pending(&path).unwrap();
        assert!(
            !fresh.any(),
            "{base}: still pending after its end: {fresh:?}"
        );
        assert_eq!(tracker.look(&path).unwrap(), fresh, "{base}");
        assert_eq!(
            tracker.last_read(),
            (settled.len() - running.len()) as u64,
            "{base}"
        );
    }
}

/// A tracker fed a file appended in pieces cut anywhere (half-written last
/// lines included) answers as a fresh scan of the bytes so far, reading
/// only the new bytes and the unfinished line it left.
#[test]
fn a_tracker_answers_as_a_fresh_scan_after_every_append() {
    let dir = tempfile::tempdir().unwrap();
    for (kind, version) in pairs() {
        let base = format!("transcript-background-{kind}-{version}");
        let settled = recording(&format!("{base}-settled.jsonl"));
        // Some filler in the middle, so the work spans a long stretch.
        let running_len = recording(&format!("{base}-running.jsonl")).len();
        let mut body = settled[..running_len].to_vec();
        body.extend(ordinary_records(&settled, 300_000));
        body.extend_from_slice(&settled[running_len..]);
        let path = dir.path().join(format!("{base}.jsonl"));
        std::fs::write(&path, b"").unwrap();
        let mut tracker = Tracker::default();
        let mut written = 0;
        let mut unfinished = 0;
        let mut states = Vec::new();
        // Cuts of prime sizes land everywhere in lines.
        for step in [1, 97, 1009, 7919, 65_537].iter().cycle() {
            if written == body.len() {
                break;
            }
            let end = (written + step).min(body.len());
            append(&path, &body[written..end]);
            let got = tracker.look(&path).unwrap();
            assert_eq!(got, scan(&body[..end]), "{base}: after {end} bytes");
            assert_eq!(
                tracker.last_read(),
                (unfinished + end - written) as u64,
                "{base}: after {end} bytes"
            );
            let last_newline = body[..end].iter().rposition(|&b| b == b'\n');
            unfinished = end - last_newline.map_or(0, |i| i + 1);
            assert_eq!(tracker.offset(), (end - unfinished) as u64);
            written = end;
            states.push(got.any());
        }
        assert!(states.iter().any(|&p| p), "{base}: never pending");
        assert!(!states.last().unwrap(), "{base}: pending at the end");
    }
}

/// A file replaced (a new inode), shortened, or rewritten in place is read
/// again from its start.
#[test]
fn a_replaced_or_rewritten_transcript_is_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let running = recording("transcript-background-bash-2.1.332-running.jsonl");
    let settled = recording("transcript-background-bash-2.1.332-settled.jsonl");
    let ordinary = ordinary_records(&settled, running.len() + 10_000);
    let path = dir.path().join("t.jsonl");

    // Rewritten in place (same inode), longer than before, with no work.
    std::fs::write(&path, &running).unwrap();
    let mut tracker = Tracker::default();
    assert!(tracker.look(&path).unwrap().any());
    std::fs::write(&path, &ordinary).unwrap();
    assert!(!tracker.look(&path).unwrap().any());
    assert_eq!(tracker.last_read(), ordinary.len() as u64);

    // Replaced by another file through a rename.
    let other = dir.path().join("other.jsonl");
    std::fs::write(&other, &running).unwrap();
    std::fs::rename(&other, &path).unwrap();
    assert!(tracker.look(&path).unwrap().any());
    assert_eq!(tracker.last_read(), running.len() as u64);

    // Shortened.
    std::fs::write(&path, &ordinary[..1000]).unwrap();
    assert_eq!(
        tracker.look(&path).unwrap(),
        scan(&ordinary[..1000]),
        "shortened"
    );
    assert!(std::fs::remove_file(&path).is_ok());
    assert!(tracker.look(&path).is_err(), "a missing file is an error");
}
