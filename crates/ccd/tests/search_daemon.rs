//! `sessions.search` against a real daemon in a sandbox (issue 55): hits
//! with their state and folder over the socket, the index the daemon keeps
//! open following a transcript's growth and deletion, the same rows as
//! `ccd search --no-index`, a bad regex refused as `invalid_params`,
//! searches past the concurrency bound waiting their turn, `ccd search`
//! answered through the running daemon (never starting one), and the
//! hits' states judged again at every search from the registry (a pid
//! that died, an entry rewritten in place) as `sessions.list` judges them,
//! and searches by state and folder answered with `--no-index`'s rows.

mod common;

use ccd_protocol::methods::session::{
    ListParams, SearchParams, SearchResult, SearchScope, SessionsList, SessionsSearch,
};
use ccd_testkit::gen::{registry_entry, write_registry_entry, TranscriptWriter};
use common::{wait_for, Sandbox};
use std::process::{Child, Command};
use std::time::Duration;

const T: Duration = Duration::from_secs(30);

struct Reaped(Child);
impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A dead session in `/home/dev/api` and a live one (a `sleep` as its
/// process) in `/home/dev/web`, both saying "oauth"; the live one's
/// process.
fn plant(sb: &Sandbox) -> (TranscriptWriter, Reaped) {
    let mut dead = TranscriptWriter::create(&sb.config, "dead-sess", "/home/dev/api");
    dead.turn("fix the oauth token refresh", 1000, 10);
    let mut live = TranscriptWriter::create(&sb.config, "live-sess", "/home/dev/web");
    live.turn("the OAuth login page", 1000, 10);
    let child = Reaped(Command::new("sleep").arg("120").spawn().unwrap());
    let pid = child.0.id();
    let start = ccd_claude::liveness::current_proc_start(pid).unwrap();
    write_registry_entry(
        &sb.config,
        &registry_entry(pid, "live-sess", "/home/dev/web", &start, None),
    );
    (dead, child)
}

fn search(c: &mut ccd_client::Client, params: &SearchParams) -> SearchResult {
    c.call::<SessionsSearch>(params).unwrap()
}

fn ids(r: &SearchResult) -> Vec<String> {
    let mut ids: Vec<String> = r.hits.iter().map(|h| h.session_id.clone()).collect();
    ids.sort();
    ids
}

/// Waits until the daemon answers from its index.
fn indexed(c: &mut ccd_client::Client, query: &str) -> SearchResult {
    wait_for(T, "the daemon's search index", || {
        let r = search(c, &SearchParams::new(query));
        r.indexed.then_some(r)
    })
}

#[test]
fn the_daemon_answers_from_its_index_and_keeps_it_current() {
    let sb = Sandbox::new();
    let (mut dead, mut live) = plant(&sb);
    let mut c = sb.client_or_start();

    let r = indexed(&mut c, "oauth");
    assert_eq!(ids(&r), ["dead-sess", "live-sess"]);
    // The keeper hands back the heap its load (a build here) and its
    // save freed.
    let logs = sb.logs_with(&["search index saved", "freed heap released"]);
    assert!(logs.contains("freed heap released"), "{logs}");
    for h in &r.hits {
        let (state, folder) = match h.session_id.as_str() {
            "dead-sess" => ("dead", "/home/dev/api"),
            _ => ("live", "/home/dev/web"),
        };
        assert_eq!(serde_json::to_value(h.state).unwrap(), state);
        assert_eq!(h.folder.as_deref(), Some(folder));
        assert_eq!(h.host, "local");
    }
    assert_eq!(r.sessions, 2);
    assert!(!r.truncated);
    let mut dead_only = SearchParams::new("oauth");
    dead_only.scope = SearchScope::Dead;
    assert_eq!(ids(&search(&mut c, &dead_only)), ["dead-sess"]);
    let mut limited = SearchParams::new("oauth");
    limited.limit = 1;
    let one = search(&mut c, &limited);
    assert_eq!((one.hits.len(), one.truncated), (1, true));

    // The same rows as a search without the daemon or the index.
    let local = sb.run(&["search", "--no-index", "--json", "oauth"]);
    assert!(local.status.success());
    let mut scanned: Vec<ccd_protocol::search::SearchHit> =
        serde_json::from_slice(&local.stdout).unwrap();
    let mut from_daemon = r.hits.clone();
    scanned.sort_by(|a, b| a.session_id.cmp(&b.session_id));
    from_daemon.sort_by(|a, b| a.session_id.cmp(&b.session_id));
    for (a, b) in scanned.iter_mut().zip(&mut from_daemon) {
        // The score's age part moves with the clock between the two.
        assert!((a.score - b.score).abs() < 1e-3, "{a:?} {b:?}");
        a.score = 0.0;
        b.score = 0.0;
    }
    assert_eq!(scanned, from_daemon);

    // Text appended to a transcript is found by the very next search: the
    // watch's queue is drained before a search answers.
    dead.turn("the zanzibar deployment script", 1000, 10);
    let grown = search(&mut c, &SearchParams::new("zanzibar deployment"));
    assert_eq!(ids(&grown), ["dead-sess"]);
    assert!(grown.indexed);
    assert_eq!(grown.hits[0].snippet.matched.to_lowercase(), "zanzibar");
    // Found through the index's update (only the appended turn read), not
    // by a scan of the stale file.
    let logs = sb.logs_with(&["search index updated"]);
    assert!(
        logs.lines()
            .any(|l| l.contains("search index updated") && l.contains("files_read=1")),
        "{logs}"
    );

    // Answered over the kept session list, the changed file told by the
    // watch (no stat of every transcript).
    let logs = sb.logs_with(&["relisted=false"]);
    assert!(
        logs.lines().any(|l| l.contains("search answered")
            && l.contains("relisted=false")
            && l.contains("watched=true")),
        "{logs}"
    );

    // The live session's process ends: its state is judged again at the
    // next search, though no transcript changed.
    let _ = live.0.kill();
    let _ = live.0.wait();
    wait_for(T, "the ended session to be dead", || {
        (ids(&search(&mut c, &dead_only)) == ["dead-sess", "live-sess"]).then_some(())
    });

    // A deleted transcript's hits are gone.
    std::fs::remove_file(&dead.path).unwrap();
    let gone = wait_for(T, "the deleted transcript's hits to go", || {
        let r = search(&mut c, &SearchParams::new("oauth"));
        (ids(&r) == ["live-sess"]).then_some(r)
    });
    assert_eq!(serde_json::to_value(gone.hits[0].state).unwrap(), "dead");
    assert!(gone.indexed);
    assert!(search(&mut c, &SearchParams::new("zanzibar"))
        .hits
        .is_empty());

    // The daemon saved what it keeps, in the file a daemon-less search reads.
    drop(c);
    sb.ok(&["daemon", "stop"]);
    let saved = ccd_search::index::Index::load(
        &sb.state.join(ccd_search::service::INDEX_FILE),
        ccd_search::index::Limits::default(),
    )
    .unwrap();
    assert!(saved.records_len() > 0);
}

#[test]
fn a_bad_query_is_invalid_params_with_the_reason() {
    let sb = Sandbox::new();
    let _planted = plant(&sb);
    let mut c = sb.client_or_start();
    let mut bad = SearchParams::new("(unclosed");
    bad.regex = true;
    for (p, says) in [
        (bad, "regex"),
        (SearchParams::new("  "), "empty query"),
        (
            SearchParams {
                roles: vec!["robot".into()],
                ..SearchParams::new("oauth")
            },
            "robot",
        ),
        (
            SearchParams {
                limit: 1001,
                ..SearchParams::new("oauth")
            },
            "limit",
        ),
        (
            SearchParams {
                cwd: Some("dev/api".into()),
                ..SearchParams::new("oauth")
            },
            "absolute",
        ),
    ] {
        match c.call::<SessionsSearch>(&p) {
            Err(ccd_client::ClientError::Rpc(e)) => {
                assert_eq!(e.code, -32602, "{p:?}: {e:?}");
                assert!(e.message.contains(says), "{p:?}: {}", e.message);
            }
            other => panic!("{p:?}: {other:?}"),
        }
    }
    // The CLI says the daemon's reason.
    let out = sb.run(&["search", "--regex", "(unclosed"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("regex"));
}

#[test]
fn searches_past_the_bound_wait_for_a_slot_and_all_answer() {
    let sb = Sandbox::new();
    // Enough to read that searches overlap: a regex is never looked up in
    // the index, every file is scanned.
    for i in 0..200 {
        let mut w = TranscriptWriter::create(&sb.config, &format!("s{i:03}"), "/home/dev/many");
        for t in 0..5 {
            w.turn(&format!("step {t} of the migration {i}"), 1000, 4000);
        }
    }
    let _c = sb.client_or_start();
    let n = 3 * ccd_daemon::search::MAX_SEARCHES + 2;
    let answers: Vec<SearchResult> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..n)
            .map(|_| {
                s.spawn(|| {
                    let mut c = sb.client();
                    let mut p = SearchParams::new("migration 1[0-9]{2}");
                    p.regex = true;
                    p.limit = 1000;
                    search(&mut c, &p)
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for a in &answers {
        assert_eq!(a.hits.len(), 100);
        assert_eq!(ids(a), ids(&answers[0]));
    }
    let logs = sb.logs_with(&["search waits for a slot"]);
    assert!(
        logs.contains("search waits for a slot"),
        "no search waited: {logs}"
    );
}

#[test]
fn ccd_search_asks_the_running_daemon_and_never_starts_one() {
    let sb = Sandbox::new();
    let _planted = plant(&sb);
    let traced = |args: &[&str]| {
        let mut cmd = sb.cmd(args);
        cmd.env("CCD_LOG", "ccd=trace");
        cmd.output().unwrap()
    };
    // No daemon: searched here, none started.
    let here = traced(&["search", "--json", "oauth"]);
    assert!(here.status.success());
    assert!(!String::from_utf8_lossy(&here.stderr).contains("search answered by the daemon"));
    assert!(sb.daemon_pid().is_none(), "a search started a daemon");

    let mut c = sb.client_or_start();
    indexed(&mut c, "oauth");
    let there = traced(&["search", "--json", "oauth"]);
    assert!(there.status.success());
    let err = String::from_utf8_lossy(&there.stderr);
    assert!(
        err.contains("search answered by the daemon") && err.contains("indexed=true"),
        "{err}"
    );
    let rows = |o: &std::process::Output| {
        let v: Vec<ccd_protocol::search::SearchHit> = serde_json::from_slice(&o.stdout).unwrap();
        let mut ids: Vec<String> = v.into_iter().map(|h| h.session_id).collect();
        ids.sort();
        ids
    };
    assert_eq!(rows(&here), rows(&there));
    // A relative --cwd is the caller's folder's, not the daemon's.
    let mut cmd = sb.cmd(&["search", "--json", "--cwd", "dev/api", "oauth"]);
    cmd.current_dir("/home").env("CCD_LOG", "ccd=trace");
    let rel = cmd.output().unwrap();
    assert!(String::from_utf8_lossy(&rel.stderr).contains("search answered by the daemon"));
    assert_eq!(rows(&rel), ["dead-sess"]);
    // --no-index and --rebuild-index keep their meaning: searched here.
    for flag in ["--no-index", "--rebuild-index"] {
        let o = traced(&["search", "--json", flag, "oauth"]);
        assert!(o.status.success());
        assert!(!String::from_utf8_lossy(&o.stderr).contains("search answered by the daemon"));
        assert_eq!(rows(&o), rows(&here));
    }
}

/// Each hit's session and state, and `sessions.list`'s state of each.
fn states(c: &mut ccd_client::Client, query: &str) -> Vec<(String, String, String)> {
    let r = search(c, &SearchParams::new(query));
    assert!(r.indexed);
    let list = c.call::<SessionsList>(&ListParams::default()).unwrap();
    let state = |s: ccd_protocol::methods::session::SessionState| {
        serde_json::to_value(s)
            .unwrap()
            .as_str()
            .unwrap()
            .to_string()
    };
    let mut out: Vec<(String, String, String)> = r
        .hits
        .iter()
        .map(|h| {
            let listed = list
                .sessions
                .iter()
                .find(|s| s.session_id == h.session_id)
                .map_or("unlisted".to_string(), |s| state(s.state));
            (h.session_id.clone(), state(h.state), listed)
        })
        .collect();
    out.sort();
    out
}

#[test]
fn hits_states_are_judged_again_at_every_search_as_sessions_list_judges_them() {
    let sb = Sandbox::new();
    let (_dead, live) = plant(&sb);
    let mut other = TranscriptWriter::create(&sb.config, "other-sess", "/home/dev/cli");
    other.turn("the oauth scopes", 1000, 10);
    let mut other_proc = Reaped(Command::new("sleep").arg("120").spawn().unwrap());
    let pid = other_proc.0.id();
    let start = ccd_claude::liveness::current_proc_start(pid).unwrap();
    write_registry_entry(
        &sb.config,
        &registry_entry(pid, "other-sess", "/home/dev/cli", &start, None),
    );
    let live_entry = sb
        .config
        .join("sessions")
        .join(format!("{}.json", live.0.id()));
    let mut c = sb.client_or_start();
    indexed(&mut c, "oauth");
    // The registry's files older than the racy margin: the next search
    // keeps their parse, and must see a rewrite by its stamps alone.
    std::thread::sleep(ccd_claude::registry::RACY_MARGIN + Duration::from_millis(200));
    let row = |sid: &str, st: &str| (sid.to_string(), st.to_string(), st.to_string());
    assert_eq!(
        states(&mut c, "oauth"),
        [
            row("dead-sess", "dead"),
            row("live-sess", "live"),
            row("other-sess", "live")
        ]
    );

    // A pid that died between two searches (no file changed) reads dead.
    let _ = other_proc.0.kill();
    let _ = other_proc.0.wait();
    assert_eq!(
        states(&mut c, "oauth"),
        [
            row("dead-sess", "dead"),
            row("live-sess", "live"),
            row("other-sess", "dead")
        ]
    );

    // The live entry rewritten in place, same length, its procStart now
    // another process's (a reused pid): dead at the very next search.
    let text = std::fs::read_to_string(&live_entry).unwrap();
    let at = text.find("\"procStart\":\"").unwrap() + "\"procStart\":\"".len();
    let end = at + text[at..].find('"').unwrap();
    let last = text.as_bytes()[end - 1] - b'0';
    let reused = format!("{}{}{}", &text[..end - 1], (last + 1) % 10, &text[end..]);
    assert_eq!(reused.len(), text.len());
    std::fs::write(&live_entry, reused).unwrap();
    assert_eq!(
        states(&mut c, "oauth"),
        [
            row("dead-sess", "dead"),
            row("live-sess", "dead"),
            row("other-sess", "dead")
        ]
    );
    // Judged from the kept session list (no transcript came or went).
    let logs = sb.logs_with(&["relisted=false"]);
    assert!(logs.contains("registry_read=1"), "{logs}");

    // An entry that appears (the dead session resumed by a process of
    // its own) is seen by the very next search.
    let resumed = Reaped(Command::new("sleep").arg("120").spawn().unwrap());
    let start = ccd_claude::liveness::current_proc_start(resumed.0.id()).unwrap();
    write_registry_entry(
        &sb.config,
        &registry_entry(resumed.0.id(), "dead-sess", "/home/dev/api", &start, None),
    );
    assert_eq!(
        states(&mut c, "oauth"),
        [
            row("dead-sess", "live"),
            row("live-sess", "dead"),
            row("other-sess", "dead")
        ]
    );
    drop(live);
}

#[test]
fn scoped_and_folder_searches_through_the_daemon_equal_no_index() {
    let sb = Sandbox::new();
    let (_dead, live) = plant(&sb);
    // More sessions: folders under, beside and written oddly (a `//`, a
    // `.` component, a trailing `/`), one named by an entry whose
    // process is gone (dead though named), one live in a nested folder.
    let mut keep = Vec::new();
    for (sid, cwd) in [
        ("under-sess", "/home/dev/api/sub"),
        ("beside-sess", "/home/dev/apix"),
        ("slashes-sess", "/home/dev//api/deep"),
        ("dot-sess", "/home/dev/./api"),
        ("trail-sess", "/home/dev/api/"),
        ("gone-sess", "/home/dev/api"),
        ("nested-live", "/home/dev/web/ui"),
    ] {
        let mut t = TranscriptWriter::create(&sb.config, sid, cwd);
        t.turn(&format!("the oauth flow of {sid}"), 1000, 10);
        keep.push(t);
    }
    let nested = Reaped(Command::new("sleep").arg("120").spawn().unwrap());
    let start = ccd_claude::liveness::current_proc_start(nested.0.id()).unwrap();
    write_registry_entry(
        &sb.config,
        &registry_entry(
            nested.0.id(),
            "nested-live",
            "/home/dev/web/ui",
            &start,
            None,
        ),
    );
    let mut gone = Command::new("true").spawn().unwrap();
    let gone_pid = gone.id();
    let _ = gone.wait();
    write_registry_entry(
        &sb.config,
        &registry_entry(gone_pid, "gone-sess", "/home/dev/api", &start, None),
    );
    let mut c = sb.client_or_start();
    indexed(&mut c, "oauth");
    // Every session, folder and state as a row.
    let rows = |args: &[&str]| {
        let o = sb.ok(args);
        let v: Vec<ccd_protocol::search::SearchHit> = serde_json::from_str(&o).unwrap();
        let mut rows: Vec<(String, String, Option<String>, String)> = v
            .into_iter()
            .map(|h| {
                let st = serde_json::to_value(h.state).unwrap();
                (h.session_id, st.to_string(), h.folder, h.path)
            })
            .collect();
        rows.sort();
        rows
    };
    for filter in [
        &[][..],
        &["--dead"][..],
        &["--live"][..],
        &["--cwd", "/home/dev/api"][..],
        &["--dead", "--cwd", "/home/dev"][..],
        &["--live", "--cwd", "/home/dev/web"][..],
        &["--cwd", "/home/dev/api/sub"][..],
        &["--cwd", "/"][..],
    ] {
        let mut here: Vec<&str> = vec!["search", "--json", "--no-index", "oauth"];
        here.extend(filter);
        let mut there: Vec<&str> = vec!["search", "--json", "oauth"];
        there.extend(filter);
        // Twice: a fresh session list, then the kept one (states judged
        // from the registry).
        for _ in 0..2 {
            let want = rows(&here);
            assert!(!want.is_empty(), "{filter:?}");
            assert_eq!(rows(&there), want, "{filter:?}");
        }
    }
    let logs = sb.logs_with(&["relisted=false"]);
    assert!(logs.contains("relisted=false"), "{logs}");
    drop((live, nested));
}
