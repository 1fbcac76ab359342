//! Transcript location and bounded reading.

use ccd_claude::slug::slug;
use ccd_claude::transcript::{find_by_session_id, find_for_cwd, read_summary};
use ccd_testkit::gen::{transcript, TranscriptWriter};
use std::fs;
use std::io::Write;
use std::path::Path;

const FIXTURE_SID: &str = "9cc17429-452c-4d23-84b4-86e7b2683de6";

fn fixture_config() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("projects").join(slug("/home/dev/plain"));
    fs::create_dir_all(&dir).unwrap();
    fs::write(
        dir.join(format!("{FIXTURE_SID}.jsonl")),
        ccd_testkit::fixtures::read("transcript-2.1.332.jsonl"),
    )
    .unwrap();
    tmp
}

#[test]
fn real_shaped_fixture() {
    let tmp = fixture_config();
    let path = find_by_session_id(&tmp.path().join("projects"), FIXTURE_SID).unwrap();
    let s = read_summary(&path).unwrap();
    assert_eq!(s.session_id, FIXTURE_SID);
    assert_eq!(s.cwd.as_deref(), Some("/home/dev/plain"));
    assert_eq!(s.title.as_deref(), Some("munge test 0"));
    assert_eq!(s.model.as_deref(), Some("claude-opus-5-5"));
    assert_eq!(s.context_tokens, Some(1234));
    assert_eq!(
        s.last_activity.unwrap().unix_timestamp_nanos(),
        time::macros::datetime!(2026-11-29 18:57:52.278 UTC).unix_timestamp_nanos()
    );
    assert!(!s.half_written_tail);
}

#[test]
fn half_written_last_line_is_ignored() {
    let tmp = fixture_config();
    let path = find_by_session_id(&tmp.path().join("projects"), FIXTURE_SID).unwrap();
    let mut f = fs::OpenOptions::new().append(true).open(&path).unwrap();
    f.write_all(br#"{"type":"assistant","message":{"model":"other","usage":{"input_tokens":99999"#)
        .unwrap();
    drop(f);
    let s = read_summary(&path).unwrap();
    assert!(s.half_written_tail);
    assert_eq!(s.context_tokens, Some(1234));
    assert_eq!(s.model.as_deref(), Some("claude-opus-5-5"));
}

#[test]
fn unknown_records_and_missing_cwd_are_tolerated() {
    let tmp = tempfile::tempdir().unwrap();
    let mut w = TranscriptWriter::create(tmp.path(), "s1", "/w");
    w.line(serde_json::json!({"type":"some-future-kind","payload":[1,2,3]}));
    w.raw(b"garbage line\n");
    w.turn("first", 500, 10);
    w.line(serde_json::json!({"type":"another-kind"}));
    let s = read_summary(&w.path).unwrap();
    assert_eq!(s.cwd.as_deref(), Some("/w"));
    assert_eq!(s.title.as_deref(), Some("first"));
    assert_eq!(s.context_tokens, Some(500 + 100 + 1000));
}

#[test]
fn title_falls_back_to_newest_last_prompt() {
    let tmp = tempfile::tempdir().unwrap();
    let mut w = TranscriptWriter::create(tmp.path(), "s2", "/w");
    w.line(
        serde_json::json!({"type":"user","isMeta":true,"cwd":"/w","message":{"content":"meta"}}),
    );
    w.line(serde_json::json!({"type":"last-prompt","lastPrompt":"older"}));
    w.line(serde_json::json!({"type":"last-prompt","lastPrompt":"newest\nsecond line"}));
    let s = read_summary(&w.path).unwrap();
    assert_eq!(s.title.as_deref(), Some("newest"));
}

#[test]
fn hundred_mb_transcript_is_read_in_bounded_windows() {
    let tmp = tempfile::tempdir().unwrap();
    let mut w = TranscriptWriter::create(tmp.path(), "big", "/big");
    w.turn("the very first prompt", 10, 1000);
    // ~100 MB of turns with 64 KiB replies.
    for i in 0..1600 {
        w.turn(&format!("prompt {i}"), 1000 + i, 64 * 1024);
    }
    w.turn("the last prompt", 4242, 100);
    let size = fs::metadata(&w.path).unwrap().len();
    assert!(size > 100_000_000, "{size}");
    let t0 = std::time::Instant::now();
    let s = read_summary(&w.path).unwrap();
    let took = t0.elapsed();
    assert_eq!(s.title.as_deref(), Some("the very first prompt"));
    assert_eq!(s.context_tokens, Some(4242 + 1100));
    assert!(
        s.bytes_read <= 1 << 20,
        "read {} bytes of {size}",
        s.bytes_read
    );
    eprintln!(
        "summary of a {size}-byte transcript: {} bytes read in {took:?}",
        s.bytes_read
    );
}

#[test]
fn huge_lines_grow_the_windows() {
    let tmp = tempfile::tempdir().unwrap();
    let mut w = TranscriptWriter::create(tmp.path(), "wide", "/wide");
    // A first line larger than the first head window, a last reply larger
    // than the first tail window.
    w.line(serde_json::json!({"type":"file-history-snapshot","blob":"y".repeat(100_000)}));
    w.turn("prompt after a wide line", 77, 300_000);
    let s = read_summary(&w.path).unwrap();
    assert_eq!(s.title.as_deref(), Some("prompt after a wide line"));
    assert_eq!(s.context_tokens, Some(77 + 1100));
}

#[test]
fn odd_cwds_round_trip_through_slug() {
    let tmp = tempfile::tempdir().unwrap();
    let projects = tmp.path().join("projects");
    for (i, cwd) in ["/w/a.b", "/w/a_b", "/w/a b", "/w/café ☕", "/w/emoji 😀/x"]
        .iter()
        .enumerate()
    {
        transcript(tmp.path(), &format!("odd-{i}"), cwd, 1);
    }
    // a.b, a_b and "a b" share one folder; the cwd field tells them apart.
    assert_eq!(slug("/w/a.b"), slug("/w/a b"));
    for (i, cwd) in ["/w/a.b", "/w/a_b", "/w/a b", "/w/café ☕", "/w/emoji 😀/x"]
        .iter()
        .enumerate()
    {
        let found = find_for_cwd(&projects, Path::new(cwd));
        let ids: Vec<_> = found.iter().map(|t| t.session_id.clone()).collect();
        assert_eq!(ids, [format!("odd-{i}")], "{cwd}");
    }
}

#[test]
fn long_path_found_by_prefix_whatever_the_hash() {
    let tmp = tempfile::tempdir().unwrap();
    let projects = tmp.path().join("projects");
    let cwd = format!("/w/{}", "deep-folder-name/".repeat(15));
    let cwd = cwd.trim_end_matches('/').to_string();
    let s = slug(&cwd);
    assert!(s.len() > 200);
    // An older CLI used another hash: same 200-char prefix, other suffix.
    let old_dir = projects.join(format!("{}-oldhash", &s[..200]));
    TranscriptWriter::create_in(&old_dir, "long-old", &cwd).turn("old", 1, 1);
    transcript(tmp.path(), "long-new", &cwd, 1);
    // A different long path with the same prefix must not match.
    let other = format!("{cwd}-other");
    let other_dir = projects.join(format!("{}-zzz", &slug(&other)[..200]));
    TranscriptWriter::create_in(&other_dir, "long-other", &other).turn("x", 1, 1);

    let mut ids: Vec<_> = find_for_cwd(&projects, Path::new(&cwd))
        .into_iter()
        .map(|t| t.session_id)
        .collect();
    ids.sort();
    assert_eq!(ids, ["long-new", "long-old"]);
    assert!(find_by_session_id(&projects, "long-old").is_some());
    assert!(find_by_session_id(&projects, "../long-old").is_none());
    assert!(find_by_session_id(&projects, "nope").is_none());
}

#[test]
fn a_transcript_without_a_parsable_record_is_empty() {
    let tmp = tempfile::tempdir().unwrap();
    let zero = tmp.path().join("a.jsonl");
    fs::write(&zero, b"").unwrap();
    assert!(read_summary(&zero).unwrap().empty);
    let junk = tmp.path().join("b.jsonl");
    fs::write(&junk, b"\n\nnot json\n{\"type\":\"user\",\"cwd\":").unwrap();
    let s = read_summary(&junk).unwrap();
    assert!(s.empty, "{s:?}");
    // One record is enough, even a bookkeeping one.
    let w = TranscriptWriter::create(tmp.path(), "c", "/p/c");
    drop(w);
    let p = tmp
        .path()
        .join("projects")
        .join(slug("/p/c"))
        .join("c.jsonl");
    assert!(!read_summary(&p).unwrap().empty);
    let p = transcript(tmp.path(), "d", "/p/d", 1);
    assert!(!read_summary(&p).unwrap().empty);
}
