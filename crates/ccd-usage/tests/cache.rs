//! The incremental usage cache on real files: only appended bytes are read
//! again, a replaced, shrunk or other-format cache is rebuilt, the cache
//! file's bound holds, and the totals are those of a full read.

use ccd_usage::cache::{Refresh, UsageCache, FORMAT};
use ccd_usage::files::{transcripts, Transcript};
use ccd_usage::tally::FileUsage;
use std::io::Write;
use std::path::Path;

fn rec(id: &str, input: u64) -> String {
    format!(
        r#"{{"type":"assistant","timestamp":"2026-11-29T10:00:00Z","requestId":"r{id}","cwd":"/w","message":{{"id":"m{id}","model":"claude-sonnet-4-20250514","usage":{{"input_tokens":{input},"output_tokens":1}}}}}}"#
    ) + "\n"
}

fn append(p: &Path, s: &str) {
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(p)
        .unwrap();
    f.write_all(s.as_bytes()).unwrap();
}

fn input_of(c: &UsageCache, t: &[Transcript]) -> u64 {
    t.iter()
        .filter_map(|t| c.get(&t.path))
        .map(|u: &FileUsage| u.tokens().input)
        .sum()
}

#[test]
fn only_appended_bytes_are_read_and_stale_entries_are_rebuilt() {
    let d = tempfile::tempdir().unwrap();
    let proj = d.path().join("projects/-w");
    std::fs::create_dir_all(proj.join("s2/subagents")).unwrap();
    let a = proj.join("s1.jsonl");
    let b = proj.join("s2.jsonl");
    let sub = proj.join("s2/subagents/agent-1.jsonl");
    append(&a, &(rec("1", 10) + &rec("2", 20)));
    append(&b, &rec("3", 30));
    append(&sub, &rec("4", 40));
    let cache_file = d.path().join("state").join(ccd_usage::cache::CACHE_FILE);

    let t = transcripts(d.path());
    assert_eq!(t.len(), 3);
    let mut c = UsageCache::load(&cache_file);
    let r = c.refresh(&t, 4);
    assert_eq!((r.full, r.appended, r.unchanged), (3, 0, 0));
    assert_eq!(input_of(&c, &t), 100);
    c.save(&cache_file).unwrap();

    // A new run: nothing changed, nothing read.
    let mut c = UsageCache::load(&cache_file);
    assert_eq!(c.len(), 3);
    let r = c.refresh(&t, 4);
    assert_eq!(
        r,
        Refresh {
            unchanged: 3,
            ..Refresh::default()
        }
    );

    // Appended: a repeat of a streamed message (kept once, its larger
    // copy), a new message and a half-written line; only those bytes read.
    let before = std::fs::metadata(&a).unwrap().len();
    let grown = rec("2", 25) + &rec("5", 50);
    append(&a, &(grown.clone() + "{\"half"));
    let r = c.refresh(&t, 4);
    assert_eq!((r.full, r.appended, r.unchanged), (0, 1, 2));
    assert_eq!(r.bytes, std::fs::metadata(&a).unwrap().len() - before);
    assert_eq!(input_of(&c, &t), 100 - 20 + 25 + 50);
    // The half line completes: read from its start, counted once.
    append(&a, "\n");
    std::fs::write(
        &a,
        std::fs::read_to_string(&a)
            .unwrap()
            .replace("{\"half\n", ""),
    )
    .unwrap();
    // (rewritten: a new length, read from the start again)
    let r = c.refresh(&t, 4);
    assert_eq!(r.full, 1);
    assert_eq!(input_of(&c, &t), 100 - 20 + 25 + 50);

    // Replaced (a trim writes a new file and renames it): read again.
    let tmp = proj.join("s2.tmp");
    std::fs::write(&tmp, rec("3", 3)).unwrap();
    std::fs::rename(&tmp, &b).unwrap();
    let r = c.refresh(&t, 4);
    assert_eq!(r.full, 1);
    assert_eq!(input_of(&c, &t), 155 - 30 + 3);

    // Shrunk in place: read again.
    std::fs::write(&a, rec("1", 10)).unwrap();
    let r = c.refresh(&t, 4);
    assert_eq!(r.full, 1);
    assert_eq!(input_of(&c, &t), 10 + 3 + 40);

    // Gone: dropped from the cache.
    std::fs::remove_file(&sub).unwrap();
    let t = transcripts(d.path());
    c.refresh(&t, 4);
    assert_eq!(c.len(), 2);

    // The cache agrees with a cold read.
    let mut cold = UsageCache::default();
    cold.refresh(&t, 1);
    assert_eq!(input_of(&cold, &t), input_of(&c, &t));
}

#[test]
fn a_foreign_or_other_format_cache_is_rebuilt_and_the_bound_holds() {
    let d = tempfile::tempdir().unwrap();
    let proj = d.path().join("projects/-w");
    std::fs::create_dir_all(&proj).unwrap();
    for i in 0..20 {
        append(&proj.join(format!("s{i}.jsonl")), &rec(&i.to_string(), 1));
    }
    let t = transcripts(d.path());
    let f = d.path().join("usage-cache.bin");
    let mut c = UsageCache::default();
    c.refresh(&t, 2);
    c.save(&f).unwrap();
    let len = std::fs::metadata(&f).unwrap().len();
    assert_eq!(UsageCache::load(&f).len(), 20);
    // Past the bound: not written, and not read.
    let small = d.path().join("small.bin");
    assert!(c.save_within(&small, len - 1).is_err());
    assert!(!small.exists());
    assert!(UsageCache::load_within(&f, len - 1).is_empty());
    // Garbage, and another format version: empty, rebuilt by a refresh.
    std::fs::write(&f, b"garbage").unwrap();
    assert!(UsageCache::load(&f).is_empty());
    let mut bytes = b"ccdusage".to_vec();
    bytes.extend(postcard::to_stdvec(&(FORMAT + 1, 0u8)).unwrap());
    std::fs::write(&f, bytes).unwrap();
    let mut c = UsageCache::load(&f);
    assert!(c.is_empty());
    let r = c.refresh(&t, 2);
    assert_eq!(r.full, 20);
}

#[test]
fn an_archive_is_decompressed_once_and_read_again_only_when_replaced() {
    use ccd_usage::here::{archive_root, report};
    use ccd_usage::report::{By, Query};
    let d = tempfile::tempdir().unwrap();
    let proj = d.path().join("projects/-w");
    std::fs::create_dir_all(proj.join("s2/subagents")).unwrap();
    append(&proj.join("s1.jsonl"), &rec("1", 10));
    append(&proj.join("s2.jsonl"), &rec("3", 30));
    append(&proj.join("s2/subagents/agent-1.jsonl"), &rec("4", 40));
    let cache_file = d.path().join("state").join(ccd_usage::cache::CACHE_FILE);
    let prices = ccd_usage::PriceTable::builtin();
    let q = Query {
        by: By::Session,
        since: None,
        until: None,
        offset: time::UtcOffset::UTC,
    };
    let (before, _) = report(d.path(), &cache_file, &prices, &q);
    let config = ccd_claude::ClaudeConfigDir::new(d.path());
    let root = archive_root(&cache_file);
    let archive = || {
        ccd_claude::archive::archive(&config, &root, "s2", &|| None, false, &|_| {}).unwrap();
    };
    archive();
    // The two archived transcripts read once, the archive's files
    // decompressed: the same report.
    let (got, r) = report(d.path(), &cache_file, &prices, &q);
    assert_eq!(got, before);
    assert_eq!((r.full, r.unchanged), (2, 1), "{r:?}");
    // Warm: nothing decompressed, nothing read.
    let (got, r) = report(d.path(), &cache_file, &prices, &q);
    assert_eq!(got, before);
    assert_eq!((r.full, r.unchanged, r.bytes), (0, 3, 0), "{r:?}");
    // Put back and archived again (another archive): read again.
    ccd_claude::archive::restore(&root, "s2").unwrap();
    let (got, r) = report(d.path(), &cache_file, &prices, &q);
    assert_eq!(got, before);
    assert_eq!((r.full, r.unchanged), (2, 1), "{r:?}");
    archive();
    let (got, r) = report(d.path(), &cache_file, &prices, &q);
    assert_eq!(got, before);
    assert_eq!((r.full, r.unchanged), (2, 1), "{r:?}");
}
