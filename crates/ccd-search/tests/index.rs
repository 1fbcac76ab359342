//! The search index kept up to date as transcripts change (issue 55,
//! item 5): a file appended to between two updates, a half-written last
//! line completed later, a trimmed (rewritten shorter) file, a deleted
//! one, an index file of another format. After each update the index
//! answers by itself (no file scanned whole), finds what was added, never
//! what is gone, and its hits equal the scan's.

use ccd_search::index::{Candidates, Index, Limits, FORMAT};
use ccd_search::{scan, Filters, Hit, Query, Source};
use serde_json::json;
use std::io::Write;
use std::path::{Path, PathBuf};
use time::OffsetDateTime;

fn user(text: &str) -> String {
    json!({"type":"user","timestamp":"2026-11-20T10:00:00.000Z","cwd":"/w","message":{"role":"user","content":text}})
        .to_string()
}

fn write(path: &Path, lines: &[String]) {
    let mut f = std::fs::File::create(path).unwrap();
    for l in lines {
        writeln!(f, "{l}").unwrap();
    }
}

fn append(path: &Path, bytes: &[u8]) {
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(bytes).unwrap();
}

fn key(h: &Hit) -> String {
    format!(
        "{} {:?} {} {:?} {} {}",
        h.session_id,
        h.role,
        h.offset,
        h.snippet,
        h.matches,
        h.score.to_bits()
    )
}

/// The sessions the index finds for `q`, checked against the scan and
/// checked to be answered by the index alone.
fn ids(index: &Index, srcs: &[Source], q: &str) -> Vec<String> {
    let q = Query::terms(q).unwrap();
    let now = OffsetDateTime::now_utc();
    let (hits, _, st) = index.search(srcs, &q, &Filters::default(), now, 100);
    let (want, _) = scan(srcs, &q, &Filters::default(), now, 100);
    assert_eq!(
        hits.iter().map(key).collect::<Vec<_>>(),
        want.iter().map(key).collect::<Vec<_>>(),
        "{q:?}: index and scan"
    );
    assert!(matches!(index.candidates(&q), Candidates::Records(_)));
    assert_eq!(st.scanned, 0, "{q:?}: answered by the index");
    let mut ids: Vec<String> = hits.into_iter().map(|h| h.session_id).collect();
    ids.sort();
    ids
}

fn src(dir: &Path, sid: &str) -> Source {
    Source {
        session_id: sid.into(),
        path: dir.join(format!("{sid}.jsonl")),
    }
}

#[test]
fn appended_half_written_trimmed_and_deleted_files() {
    let d = tempfile::tempdir().unwrap();
    let (a, b, c) = (src(d.path(), "a"), src(d.path(), "b"), src(d.path(), "c"));
    write(&a.path, &[user("alpha first words"), user("common ground")]);
    write(
        &b.path,
        &[user("bravo original text"), user("common ground")],
    );
    write(
        &c.path,
        &[user("charlie to be deleted"), user("common ground")],
    );
    let srcs = vec![a.clone(), b.clone(), c.clone()];
    let mut index = Index::new(Limits::default());
    let st = index.update(&srcs);
    assert_eq!((st.files_read, st.restarted, st.dropped), (3, 0, 0));
    assert_eq!(ids(&index, &srcs, "common ground"), ["a", "b", "c"]);
    assert_eq!(ids(&index, &srcs, "alpha"), ["a"]);

    // Appended between two updates, the last line half-written.
    append(&a.path, format!("{}\n", user("appended later")).as_bytes());
    let half = user("halfwritten line");
    let (head, tail) = half.split_at(half.len() - 5);
    append(&a.path, head.as_bytes());
    let before = index.records_len();
    let st = index.update(&srcs);
    assert_eq!((st.files_read, st.restarted), (1, 0));
    assert_eq!(
        index.records_len(),
        before + 1,
        "only the complete new line"
    );
    assert_eq!(ids(&index, &srcs, "appended later"), ["a"]);
    assert!(ids(&index, &srcs, "halfwritten").is_empty());
    append(&a.path, format!("{tail}\n").as_bytes());
    index.update(&srcs);
    assert_eq!(ids(&index, &srcs, "halfwritten line"), ["a"]);
    assert_eq!(
        ids(&index, &srcs, "alpha first"),
        ["a"],
        "earlier lines kept"
    );

    // Trimmed: rewritten shorter, its old text gone.
    let tmp = d.path().join("b.tmp");
    write(&tmp, &[user("bravo trimmed")]);
    std::fs::rename(&tmp, &b.path).unwrap();
    let st = index.update(&srcs);
    assert_eq!(st.restarted, 1);
    assert!(ids(&index, &srcs, "original text").is_empty());
    assert_eq!(ids(&index, &srcs, "bravo trimmed"), ["b"]);
    assert_eq!(ids(&index, &srcs, "common ground"), ["a", "c"]);
    // Rewritten in place, shorter, same inode: noticed by its length.
    std::fs::write(&b.path, format!("{}\n", user("bravo"))).unwrap();
    assert_eq!(index.update(&srcs).restarted, 1);
    assert!(ids(&index, &srcs, "trimmed").is_empty());

    // Deleted: listed but gone, then unlisted.
    std::fs::remove_file(&c.path).unwrap();
    assert_eq!(index.update(&srcs).dropped, 1);
    let srcs = vec![a.clone(), b.clone()];
    assert!(ids(&index, &srcs, "charlie").is_empty());
    assert_eq!(index.update(&srcs).dropped, 0);
    // A file no longer listed is dropped too.
    let only_a = vec![a.clone()];
    assert_eq!(index.update(&only_a).dropped, 1);
    assert_eq!(
        index.candidates(&Query::terms("bravo").unwrap()),
        Candidates::Records(vec![])
    );

    // Saved (compacted: nothing tombstoned is written) and loaded back.
    let p = d.path().join("state").join("search.idx");
    let live = index.records_len();
    index.save(&p).unwrap();
    let back = Index::load(&p, Limits::default()).unwrap();
    assert_eq!(back.records_len(), live);
    assert_eq!(back.postings_len(), index.postings_len());
    assert_eq!(ids(&back, &only_a, "appended later"), ["a"]);
}

#[test]
fn another_format_is_rebuilt() {
    let d = tempfile::tempdir().unwrap();
    let a = src(d.path(), "a");
    write(&a.path, &[user("format bump text")]);
    let srcs = vec![a];
    let p: PathBuf = d.path().join("search.idx");
    let mut index = Index::new(Limits::default());
    index.update(&srcs);
    index.save(&p).unwrap();
    let mut bytes = std::fs::read(&p).unwrap();
    bytes[8..12].copy_from_slice(&(FORMAT + 1).to_le_bytes());
    std::fs::write(&p, &bytes).unwrap();
    let mut index = Index::open_or_new(&p, Limits::default());
    assert_eq!(index.records_len(), 0, "another format is not read");
    assert_eq!(index.update(&srcs).files_read, 1);
    assert_eq!(ids(&index, &srcs, "format bump"), ["a"]);
    index.save(&p).unwrap();
    assert_eq!(&std::fs::read(&p).unwrap()[8..12], &FORMAT.to_le_bytes());
}

#[test]
fn a_file_past_the_postings_bound_is_scanned() {
    let d = tempfile::tempdir().unwrap();
    let (a, b) = (src(d.path(), "a"), src(d.path(), "b"));
    write(&a.path, &[user("abcdefghijklmnopqrstuvwxyz")]);
    write(&b.path, &[user("zyxwvutsrqponmlkjihgfedcba")]);
    let srcs = vec![a, b];
    let mut index = Index::new(Limits {
        max_postings: 40,
        ..Limits::default()
    });
    let st = index.update(&srcs);
    assert_eq!((st.files_read, st.left_out), (1, 1));
    assert!(index.postings_len() <= 40);
    let q = Query::terms("vutsr").unwrap();
    let (hits, _, st) = index.search(
        &srcs,
        &q,
        &Filters::default(),
        OffsetDateTime::now_utc(),
        10,
    );
    assert_eq!(hits.len(), 1);
    assert_eq!((hits[0].session_id.as_str(), st.scanned), ("b", 1));
}
