//! Archived conversations through the index (issue 55 with issue 56's
//! archives): archives made by `ccd_claude::archive::archive` (what `ccd
//! archive` and the daemon's archive task run), indexed by
//! `Index::update_archives`, searched by `archived::search_indexed`.
//!
//! - Over random queries, limits 1/3/20 and random role / `--since` /
//!   `cwd` filters, the indexed answer equals reading every archive whole
//!   (`archived::search`): the same rows (sessions, state, folder, path,
//!   snippet, offset, score to the bit) and the same count searched; also
//!   from an index saved and loaded again.
//! - An archive added after the index was built is found by the next
//!   update's search; one restored or deleted is no longer returned; one
//!   replaced (restored and archived again, changed) answers with its new
//!   content; a change within the same clock tick as the last listing is
//!   seen (the racy listing is not trusted).

use ccd_claude::archive;
use ccd_claude::ClaudeConfigDir;
use ccd_protocol::methods::session::{SearchParams, SearchScope};
use ccd_search::archived::{self, Searched};
use ccd_search::index::{Index, Limits};
use ccd_search::service::Request;
use ccd_testkit::gen::{sid, TranscriptWriter};
use serde_json::json;
use std::path::Path;
use std::time::{Duration, SystemTime};

mod common;
use common::{now, record, stamp, Rng, WORDS};

/// Writes session `n`'s transcript in `config` and archives it into
/// `root`, as `ccd archive` does.
fn archived_session(config: &Path, root: &Path, n: u64, r: &mut Rng) -> String {
    let s = sid(n);
    let cwd = format!("/home/dev/p{}", n % 4);
    let mut w = TranscriptWriter::create(config, &s, &cwd);
    w.line(
        json!({"type":"user","message":{"role":"user","content":"start"},
        "timestamp":stamp(r),"cwd":cwd,"sessionId":s}),
    );
    for _ in 0..r.below(9) {
        w.line(record(r, &s, Some(&cwd)));
    }
    drop(w);
    archive::archive(
        &ClaudeConfigDir::new(config),
        root,
        &s,
        &|| None,
        false,
        &|_| {},
    )
    .unwrap();
    s
}

fn request(
    q: &str,
    limit: u32,
    roles: Vec<String>,
    since: Option<String>,
    cwd: Option<String>,
) -> Request {
    Request::parse(&SearchParams {
        query: q.to_string(),
        regex: false,
        cwd,
        since,
        scope: SearchScope::All,
        roles,
        limit,
    })
    .unwrap()
}

fn rows(s: &Searched) -> Vec<String> {
    s.hits
        .iter()
        .map(|h| {
            format!(
                "{} {:?} {:?} {} {} {:?} {} {} {:?} {:?} {} {}",
                h.session_id,
                h.state,
                h.folder,
                h.path,
                h.role,
                h.timestamp,
                h.offset,
                h.matches,
                h.snippet.before,
                h.snippet.matched,
                h.snippet.after,
                h.score.to_bits()
            )
        })
        .collect()
}

fn search(ix: &Index, root: &Path, q: &str) -> Vec<String> {
    let req = request(q, 20, vec![], None, None);
    let got = archived::search_indexed(ix, root, &req, now()).expect("answered by the index");
    got.hits.iter().map(|h| h.session_id.clone()).collect()
}

#[test]
fn indexed_archives_answer_as_reading_every_archive() {
    let d = tempfile::tempdir().unwrap();
    let (config, root) = (d.path().join("config"), d.path().join("archive"));
    let mut r = Rng(0x5eed_a4c4_1e5d_0055);
    for n in 0..90 {
        archived_session(&config, &root, n, &mut r);
    }
    let mut ix = Index::new(Limits::default());
    let st = ix.update_archives(&root);
    assert_eq!((st.files_read, st.listings), (90, 1));
    // Saved and loaded with the folder's listing no longer recent: the
    // loaded index answers for the archives without listing them again.
    let old = SystemTime::now() - Duration::from_secs(60);
    std::fs::File::open(&root)
        .unwrap()
        .set_modified(old)
        .unwrap();
    let mut fresh = Index::new(Limits::default());
    fresh.update_archives(&root);
    let p = d.path().join("search.idx");
    fresh.save(&p).unwrap();
    let loaded = Index::load(&p, Limits::default()).unwrap();
    let mut read_fewer = 0;
    for round in 0..150 {
        let q = match r.below(3) {
            0 => r.pick(WORDS).to_string(),
            1 => format!("{} {}", r.pick(WORDS), r.pick(WORDS)),
            _ => format!("\"{} {}\"", r.pick(WORDS), r.pick(WORDS)),
        };
        let roles = if r.below(4) == 0 {
            vec![r.pick(&["user", "assistant", "title", "tool"]).to_string()]
        } else {
            vec![]
        };
        let since = (r.below(5) == 0).then(|| {
            let t = now() - time::Duration::days(r.below(200) as i64);
            t.format(&time::format_description::well_known::Rfc3339)
                .unwrap()
        });
        let cwd = (r.below(4) == 0).then(|| format!("/home/dev/p{}", r.below(4)));
        for limit in [1, 3, 20] {
            let req = request(&q, limit, roles.clone(), since.clone(), cwd.clone());
            let want = archived::search(&root, &req, now());
            for (name, index) in [("built", &ix), ("loaded", &loaded)] {
                let got = archived::search_indexed(index, &root, &req, now())
                    .unwrap_or_else(|| panic!("{name}: not answered by the index"));
                let ctx =
                    format!("round {round}, {name}: {q} limit {limit} {roles:?} {since:?} {cwd:?}");
                assert_eq!(rows(&got), rows(&want), "{ctx}");
                assert_eq!(got.searched, want.searched, "{ctx}");
                if got.stats.files < want.stats.files {
                    read_fewer += 1;
                }
            }
        }
    }
    // The index read fewer archives than there are, not all of them.
    assert!(read_fewer > 300, "fewer archives read {read_fewer} times");
    // A regex has no trigram: the caller reads every archive.
    let re = Request::parse(&SearchParams {
        query: "cr.b".into(),
        regex: true,
        cwd: None,
        since: None,
        scope: SearchScope::All,
        roles: vec![],
        limit: 5,
    })
    .unwrap();
    assert!(archived::search_indexed(&ix, &root, &re, now()).is_none());
}

#[test]
fn archives_added_restored_deleted_or_replaced_are_seen_by_the_next_update() {
    let d = tempfile::tempdir().unwrap();
    let (config, root) = (d.path().join("config"), d.path().join("archive"));
    let mut r = Rng(11);
    let mut ix = Index::new(Limits::default());
    // Built before any archive exists.
    assert_eq!(ix.update_archives(&root).files_read, 0);
    let say = |n: u64, what: &str| {
        let s = sid(n);
        let mut w = TranscriptWriter::create(&config, &s, "/home/dev/q");
        w.line(
            json!({"type":"user","message":{"role":"user","content":what},
            "timestamp":"2026-11-30T10:00:00Z","cwd":"/home/dev/q","sessionId":s}),
        );
        drop(w);
        archive::archive(
            &ClaudeConfigDir::new(&config),
            &root,
            &s,
            &|| None,
            false,
            &|_| {},
        )
        .unwrap();
        s
    };
    let a = say(1, "the wombat invoice");
    let b = say(2, "the wombat invoice again");
    for n in 3..6 {
        archived_session(&config, &root, n, &mut r);
    }
    assert_eq!(ix.update_archives(&root).files_read, 5);
    assert_eq!(search(&ix, &root, "wombat invoice"), [b.clone(), a.clone()]);

    // Added after the index was built.
    let c = say(7, "a wombat invoice, the third");
    ix.update_archives(&root);
    assert_eq!(search(&ix, &root, "wombat invoice").len(), 3);
    assert!(search(&ix, &root, "wombat invoice").contains(&c));

    // Restored (put back in place): no longer an archived hit.
    archive::restore(&root, &a).unwrap();
    ix.update_archives(&root);
    assert!(!search(&ix, &root, "wombat invoice").contains(&a));
    // Deleted.
    std::fs::remove_dir_all(root.join(&b)).unwrap();
    let st = ix.update_archives(&root);
    assert_eq!(st.dropped, 1);
    assert_eq!(search(&ix, &root, "wombat invoice"), [c.as_str()]);

    // Replaced: restored, changed, archived again under the same id.
    archive::restore(&root, &c).unwrap();
    std::fs::remove_file(
        ccd_claude::transcript::find_by_session_id(&config.join("projects"), &c).unwrap(),
    )
    .unwrap();
    assert_eq!(say(7, "now about a platypus"), c);
    ix.update_archives(&root);
    assert!(search(&ix, &root, "wombat invoice").is_empty());
    assert_eq!(search(&ix, &root, "platypus"), [c.as_str()]);

    // Nothing came or went, the listing no longer recent: one stat.
    let old = SystemTime::now() - Duration::from_secs(60);
    std::fs::File::open(&root)
        .unwrap()
        .set_modified(old)
        .unwrap();
    assert_eq!(ix.update_archives(&root).listings, 1);
    assert_eq!(ix.update_archives(&root).listings, 0);

    // A change that leaves the folder's mtime as it was (the same clock
    // tick as the listing): seen, since that listing was recent.
    let now_ish = SystemTime::now();
    std::fs::File::open(&root)
        .unwrap()
        .set_modified(now_ish)
        .unwrap();
    ix.update_archives(&root);
    let e = say(8, "an echidna receipt");
    std::fs::File::open(&root)
        .unwrap()
        .set_modified(now_ish)
        .unwrap();
    ix.update_archives(&root);
    assert_eq!(search(&ix, &root, "echidna receipt"), [e]);
}
