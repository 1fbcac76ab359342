//! The merged index: registry × transcripts × liveness.

use ccd_claude::context::ContextWindows;
use ccd_claude::index::build;
use ccd_claude::liveness::{current_proc_start, system_probe};
use ccd_claude::{ClaudeConfigDir, Liveness};
use ccd_testkit::gen::{registry_entry, transcript, write_registry_entry, TranscriptWriter};
use std::process::{Child, Command};

struct Reaped(Child);
impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn live_entry(config: &std::path::Path, sid: &str, cwd: &str, started_ms: i64) -> Reaped {
    let child = Reaped(Command::new("sleep").arg("60").spawn().unwrap());
    let pid = child.0.id();
    let start = current_proc_start(pid).unwrap();
    let mut e = registry_entry(
        pid,
        sid,
        cwd,
        &start,
        system_probe().pid_domain().as_deref(),
    );
    e["startedAt"] = serde_json::json!(started_ms);
    write_registry_entry(config, &e);
    child
}

fn index(config: &std::path::Path) -> ccd_claude::SessionIndex {
    build(
        &ClaudeConfigDir::new(config),
        system_probe().as_ref(),
        &ContextWindows::default(),
    )
    .unwrap()
}

#[test]
fn dead_live_and_stale() {
    let tmp = tempfile::tempdir().unwrap();
    let c = tmp.path();
    transcript(c, "dead-one", "/p/dead", 2);
    transcript(c, "live-one", "/p/live", 1);
    let _live = live_entry(c, "live-one", "/p/live", 0);
    // dead entry with a transcript: dead; without: stale, not listed
    write_registry_entry(
        c,
        &registry_entry(999_999, "dead-one", "/p/dead", "1", None),
    );
    write_registry_entry(
        c,
        &registry_entry(999_998, "never-had-a-turn", "/p/x", "1", None),
    );
    let idx = index(c);
    let ids: Vec<_> = idx
        .sessions
        .iter()
        .map(|r| (r.session_id.as_str(), r.state))
        .collect();
    assert!(ids.contains(&("dead-one", Liveness::Dead)));
    assert!(ids.contains(&("live-one", Liveness::Live)));
    assert_eq!(idx.sessions.len(), 2);
    assert_eq!(idx.stale_entries, 1);
    let dead = idx.find("dead-one")[0];
    assert_eq!(dead.pid, None);
    assert_eq!(dead.status, None);
    assert_eq!(dead.name.as_deref(), Some("gen"));
    let live = idx.find("live")[0];
    assert_eq!(live.status.as_deref(), Some("idle"));
    assert!(live.pid.is_some());
    assert!(!live.several_writers);
}

#[test]
fn two_live_writers_on_one_id_are_both_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let c = tmp.path();
    transcript(c, "shared", "/p/s", 1);
    let _a = live_entry(c, "shared", "/p/s", 1_000);
    let _b = live_entry(c, "shared", "/p/s", 2_000);
    let idx = index(c);
    assert_eq!(idx.sessions.len(), 1);
    let r = &idx.sessions[0];
    assert!(r.several_writers);
    assert_eq!(r.writers.len(), 2);
    assert_eq!(r.pid, Some(r.writers[0].pid));
    assert_eq!(r.writers[0].pid, _b.0.id(), "most recently started first");
}

#[test]
fn after_clear_the_registry_id_is_the_live_one_and_the_old_conversation_is_dead() {
    let tmp = tempfile::tempdir().unwrap();
    let c = tmp.path();
    // The process wrote "before-clear" (created after it started), then
    // `/clear` made its entry name "after-clear", which has no transcript
    // until its first turn. A guess from transcript times must not put the
    // process back on the old conversation.
    let started = time::macros::datetime!(2026-10-31 00:00 UTC).unix_timestamp() * 1000;
    TranscriptWriter::create(c, "before-clear", "/p/c").turn("before /clear", 5, 5);
    let p = live_entry(c, "after-clear", "/p/c", started);
    let idx = index(c);
    let now = idx.find("after-clear")[0];
    assert_eq!(now.state, Liveness::Live);
    assert_eq!(now.pid, Some(p.0.id()));
    assert_eq!(now.writers.len(), 1);
    let old = idx.find("before-clear")[0];
    assert_eq!(old.state, Liveness::Dead);
    assert_eq!(old.pid, None);
    assert!(old.writers.is_empty());
}

#[test]
fn find_by_prefix_and_name() {
    let tmp = tempfile::tempdir().unwrap();
    let c = tmp.path();
    transcript(c, "abc-1", "/p", 1);
    transcript(c, "abc-2", "/p", 1);
    transcript(c, "xyz", "/q", 1);
    write_registry_entry(c, &registry_entry(999_997, "xyz", "/q", "1", None));
    let idx = index(c);
    assert_eq!(idx.find("abc").len(), 2);
    assert_eq!(idx.find("abc-1").len(), 1);
    assert_eq!(idx.find("xy")[0].session_id, "xyz");
    assert_eq!(idx.find("gen")[0].session_id, "xyz");
    assert!(idx.find("nothing").is_empty());
}

#[test]
fn missing_config_dir_is_empty() {
    let tmp = tempfile::tempdir().unwrap();
    let idx = index(&tmp.path().join("absent"));
    assert!(idx.sessions.is_empty());
}

/// `build_cached` keeps summaries between calls: the same index as a fresh
/// build, an unchanged transcript not read again, a grown one re-read, a
/// deleted one gone — and a corrupt cache file is simply rebuilt.
#[test]
fn cached_summaries_follow_every_change() {
    use ccd_claude::index::build_cached_stamped as build_cached;
    use ccd_claude::transcript::summary_cache::cache_file;
    let tmp = tempfile::tempdir().unwrap();
    let c = tmp.path().join("claude");
    let cache_dir = tmp.path().join("state");
    for i in 0..20 {
        transcript(&c, &format!("s{i:02}"), &format!("/p/{i}"), 2);
    }
    let cached = || {
        build_cached(
            &ClaudeConfigDir::new(&c),
            system_probe().as_ref(),
            &ContextWindows::default(),
            Some(&cache_dir),
        )
        .unwrap()
    };
    let same = |a: &ccd_claude::SessionIndex, b: &ccd_claude::SessionIndex| {
        assert_eq!(
            serde_json::to_value(&a.sessions).unwrap(),
            serde_json::to_value(&b.sessions).unwrap()
        );
    };
    let fresh = index(&c);
    same(&cached(), &fresh);
    let file = cache_file(&cache_dir, &c.join("projects"));
    assert!(file.exists(), "the cache is written");
    same(&cached(), &fresh);
    // An unchanged file's summary really comes from the cache: doctor the
    // cached title and see it listed.
    let bytes = std::fs::read(&file).unwrap();
    let at = bytes
        .windows(15)
        .position(|w| w == b"prompt 0 of s05")
        .expect("the title is in the cache");
    let mut doctored = bytes.clone();
    doctored[at..at + 15].copy_from_slice(b"from the cache!");
    std::fs::write(&file, doctored).unwrap();
    let title = |i: &ccd_claude::SessionIndex, sid: &str| {
        i.sessions
            .iter()
            .find(|r| r.session_id == sid)
            .and_then(|r| r.title.clone())
    };
    assert_eq!(title(&cached(), "s05").as_deref(), Some("from the cache!"));
    std::fs::write(&file, bytes).unwrap();

    // One transcript is rewritten (another first prompt), one is deleted.
    let mut w = TranscriptWriter::create(&c, "s03", "/p/3");
    w.turn("a brand new prompt", 99_999, 10);
    let p07 = c
        .join("projects")
        .join(ccd_claude::slug::slug("/p/7"))
        .join("s07.jsonl");
    std::fs::remove_file(p07).unwrap();
    let after = cached();
    same(&after, &index(&c));
    assert_eq!(title(&after, "s03").as_deref(), Some("a brand new prompt"));
    assert!(after.sessions.iter().all(|r| r.session_id != "s07"));
    // Each listed transcript's stamp, as its file is now (the rewritten
    // one's new stamp): what ccd search's index update takes for a stat.
    for r in &after.sessions {
        let p = r.transcript.as_ref().expect("a transcript");
        let now =
            ccd_claude::transcript::summary_cache::FileStamp::of(&std::fs::metadata(p).unwrap());
        assert_eq!(after.stamps.get(p), Some(&now), "{}", p.display());
    }
    assert_eq!(after.stamps.len(), after.sessions.len());

    // A corrupt cache is an empty one, rewritten.
    std::fs::write(&file, b"{not a cache").unwrap();
    same(&cached(), &index(&c));
    assert_ne!(std::fs::read(&file).unwrap(), b"{not a cache", "rewritten");
    same(&cached(), &index(&c));
}

#[test]
fn empty_transcripts_are_not_sessions() {
    let tmp = tempfile::tempdir().unwrap();
    let c = tmp.path();
    transcript(c, "real-one", "/p/real", 1);
    let dir = c.join("projects").join("-p-empty");
    std::fs::create_dir_all(&dir).unwrap();
    // 0 bytes; nothing parsable; a dead entry whose transcript is empty.
    std::fs::write(dir.join("zero-bytes.jsonl"), b"").unwrap();
    std::fs::write(dir.join("garbage.jsonl"), b"not json\n{\"half\":").unwrap();
    std::fs::write(dir.join("dead-empty.jsonl"), b"").unwrap();
    write_registry_entry(
        c,
        &registry_entry(999_997, "dead-empty", "/p/empty", "1", None),
    );
    // A running writer whose transcript is still empty is listed (by its
    // process), without a transcript.
    std::fs::write(dir.join("live-empty.jsonl"), b"").unwrap();
    let _live = live_entry(c, "live-empty", "/p/empty", 0);
    let idx = index(c);
    let mut ids: Vec<_> = idx.sessions.iter().map(|r| r.session_id.as_str()).collect();
    ids.sort_unstable();
    assert_eq!(ids, ["live-empty", "real-one"]);
    assert_eq!(idx.find("live-empty")[0].transcript, None);
    assert_eq!(
        idx.stale_entries, 1,
        "the dead entry with an empty transcript"
    );
    let mut empty: Vec<_> = idx
        .empty_transcripts
        .iter()
        .filter_map(|p| p.file_stem()?.to_str())
        .collect();
    empty.sort_unstable();
    assert_eq!(empty, ["dead-empty", "garbage", "live-empty", "zero-bytes"]);
}
