//! `ccd search` end to end through the built binary, on generated config
//! dirs in temp folders (HOME is a temp dir too): state and folder of each
//! hit from the session index, the filters, --json, --limit's bounds, and
//! snippets sanitized for the terminal.

use ccd_testkit::gen::{registry_entry, write_registry_entry, TranscriptWriter};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Child, Command, Output};

fn ccd(home: &Path, config: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ccd"))
        .arg("search")
        .args(args)
        .arg("--claude-config-dir")
        .arg(config)
        .env("HOME", home)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CCD_CONFIG")
        .env_remove("CCD_HOST")
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_STATE_HOME", home.join(".state"))
        .env("CCD_SOCKET_DIR", home.join("sock"))
        .output()
        .unwrap()
}

fn rows(out: &Output) -> Vec<Value> {
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice::<Value>(&out.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn ids(rows: &[Value]) -> Vec<&str> {
    rows.iter()
        .map(|r| r["session_id"].as_str().unwrap())
        .collect()
}

struct Reaped(Child);
impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn hits_carry_state_and_folder_and_filters_apply() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("claude");
    let mut dead = TranscriptWriter::create(&config, "dead-sess", "/home/dev/api");
    dead.turn("fix the oauth token refresh", 1000, 10);
    let mut live = TranscriptWriter::create(&config, "live-sess", "/home/dev/web");
    live.turn("the OAuth login page", 1000, 10);
    let child = Reaped(Command::new("sleep").arg("60").spawn().unwrap());
    let pid = child.0.id();
    let start = ccd_claude::liveness::current_proc_start(pid).unwrap();
    write_registry_entry(
        &config,
        &registry_entry(pid, "live-sess", "/home/dev/web", &start, None),
    );

    let all = rows(&ccd(home.path(), &config, &["oauth", "--json"]));
    let mut got = ids(&all);
    got.sort();
    assert_eq!(got, ["dead-sess", "live-sess"]);
    for r in &all {
        let (state, folder) = match r["session_id"].as_str().unwrap() {
            "dead-sess" => ("dead", "/home/dev/api"),
            _ => ("live", "/home/dev/web"),
        };
        assert_eq!(r["state"], state);
        assert_eq!(r["folder"], folder);
        assert_eq!(r["host"], "local");
        assert_eq!(r["role"], "user");
        assert!(r["snippet"]["matched"]
            .as_str()
            .unwrap()
            .eq_ignore_ascii_case("oauth"));
    }
    let live_only = rows(&ccd(home.path(), &config, &["oauth", "--json", "--live"]));
    assert_eq!(ids(&live_only), ["live-sess"]);
    let dead_only = rows(&ccd(home.path(), &config, &["oauth", "--json", "--dead"]));
    assert_eq!(ids(&dead_only), ["dead-sess"]);
    let api = rows(&ccd(
        home.path(),
        &config,
        &["oauth", "--json", "--cwd", "/home/dev/api"],
    ));
    assert_eq!(ids(&api), ["dead-sess"]);
    let phrase = rows(&ccd(home.path(), &config, &["\"token refresh\"", "--json"]));
    assert_eq!(ids(&phrase), ["dead-sess"]);
    let limited = rows(&ccd(
        home.path(),
        &config,
        &["oauth", "--json", "--limit", "1"],
    ));
    assert_eq!(limited.len(), 1);
    // The generator's records are dated November 2026.
    let recent = ccd(
        home.path(),
        &config,
        &["oauth", "--json", "--since", "2027-01-01"],
    );
    assert!(!recent.status.success());
    // No hit: an empty array, and exit status 1 (as grep).
    let none = ccd(
        home.path(),
        &config,
        &["oauth", "--json", "--role", "assistant"],
    );
    assert_eq!(none.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&none.stdout).trim(), "[]");
}

#[test]
fn no_hit_is_exit_1_and_bad_arguments_are_refused() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("claude");
    TranscriptWriter::create(&config, "s1", "/home/dev/x").turn("hello", 1000, 10);
    let out = ccd(home.path(), &config, &["nowhere-to-be-found"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no session matches"));
    for bad in [
        &["hello", "--limit", "0"][..],
        &["hello", "--limit", "1001"],
        &["hello", "--role", "robot"],
        &["hello", "--since", "soon"],
        &["--regex", "(unclosed"],
        &["\"unbalanced"],
    ] {
        let out = ccd(home.path(), &config, bad);
        assert!(!out.status.success(), "{bad:?}");
    }
}

#[test]
fn snippets_are_sanitized_and_the_match_marked() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("claude");
    let mut w = TranscriptWriter::create(&config, "hostile", "/home/dev/\u{1b}]0;owned\u{7}x");
    w.line(json!({"type":"user","timestamp":"2026-11-20T10:00:00.000Z","cwd":"/home/dev/x",
        "message":{"role":"user","content":"\u{1b}]52;c;ZXZpbA==\u{7}clear \u{1b}[2J the needle\r\nforged row \u{202e}rtl"}}));
    let out = ccd(home.path(), &config, &["needle"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 1, "{text:?}");
    assert!(!text.contains('\u{1b}') && !text.contains('\u{7}') && !text.contains('\r'));
    assert!(!text.contains('\u{202e}'));
    assert!(text.contains("«needle»"), "{text:?}");
    assert!(text.contains("hostile"));
}

/// A stand-in for ssh: runs the remote command (the words after `--`) as
/// a local shell would, in `far_home`'s environment; host `gone` refuses.
fn stand_in_ssh(dir: &Path, far_home: &Path, far_config: &Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let q = |p: &Path| format!("'{}'", p.to_str().unwrap().replace('\'', "'\\''"));
    let script = format!(
        "#!/bin/sh\ncase \" $* \" in *\" gone \"*) echo 'ssh: connect to host gone port 22: Connection refused' >&2; exit 255;; esac\n\
         while [ \"$1\" != -- ]; do shift; done; shift\n\
         eval \"exec env HOME={h} CLAUDE_CONFIG_DIR={c} XDG_STATE_HOME={h}/.state XDG_CONFIG_HOME={h}/.config $*\"\n",
        h = q(far_home),
        c = q(far_config),
    );
    let p = dir.join("fake-ssh");
    std::fs::write(&p, script).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

#[test]
fn several_machines_merge_and_an_unreachable_one_is_named() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("claude");
    TranscriptWriter::create(&config, "near-sess", "/home/dev/near").turn(
        "deploy the canary",
        1000,
        10,
    );
    let far = tempfile::tempdir().unwrap();
    let far_config = far.path().join("claude");
    let mut w = TranscriptWriter::create(&far_config, "far-sess", "/srv/far");
    w.turn("deploy the canary on the far side", 1000, 10);
    w.line(json!({"type":"ai-title","aiTitle":"canary \u{1b}]0;owned\u{7}deploy"}));
    let ssh = stand_in_ssh(home.path(), far.path(), &far_config);
    let run = |extra: &[&str]| {
        let mut args = vec!["--remote-ccd", env!("CARGO_BIN_EXE_ccd")];
        args.extend_from_slice(extra);
        Command::new(env!("CARGO_BIN_EXE_ccd"))
            .arg("search")
            .args(&args)
            .arg("--claude-config-dir")
            .arg(&config)
            .env("HOME", home.path())
            .env("CCD_SSH_COMMAND", &ssh)
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CCD_CONFIG")
            .env_remove("CCD_HOST")
            .env("XDG_CONFIG_HOME", home.path().join(".config"))
            .env("XDG_STATE_HOME", home.path().join(".state"))
            .env("CCD_SOCKET_DIR", home.path().join("sock"))
            .output()
            .unwrap()
    };
    let out = run(&[
        "--host",
        "local",
        "--host",
        "ssh://far",
        "--json",
        "deploy",
        "canary",
    ]);
    let all = rows(&out);
    let mut got: Vec<(String, String)> = all
        .iter()
        .map(|r| {
            (
                r["host"].as_str().unwrap().to_string(),
                r["session_id"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    got.sort();
    assert_eq!(got.len(), 2, "{all:#?}");
    assert_eq!(got[1], ("local".to_string(), "near-sess".to_string()));
    assert_eq!(got[0].1, "far-sess");
    assert_ne!(got[0].0, "local");
    // The far title ranks first (a title outweighs a prompt).
    assert_eq!(all[0]["session_id"], "far-sess");
    assert_eq!(all[0]["folder"], "/srv/far");

    // An unreachable machine is named; the others still answer.
    let out = run(&[
        "--host",
        "local",
        "--host",
        "ssh://far",
        "--host",
        "ssh://gone",
        "canary",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("near-ses"), "{text}");
    assert!(text.contains("far-sess"), "{text}");
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{7}'),
        "{text:?}"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("host gone") && err.contains("Connection refused"),
        "{err}"
    );
}

/// `ccd search` with a search index in the state dir (built here through
/// ccd-search): the index answers for the files it has seen as they are
/// now (the log says so: no file scanned), the hits equal those of
/// `--no-index` (which neither uses nor writes it), a file grown since is
/// taken in, and a damaged index file never costs an answer.
#[test]
fn an_index_in_the_state_dir_is_used_and_never_required() {
    use ccd_search::index::{Index, Limits};
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("claude");
    let mut a = TranscriptWriter::create(&config, "sess-a", "/home/dev/api");
    a.turn("fix the oauth token refresh", 1000, 10);
    let mut b = TranscriptWriter::create(&config, "sess-b", "/home/dev/web");
    b.turn("the OAuth login page", 1000, 10);
    let state = home.path().join("state-with-index");
    let empty = home.path().join("state-empty");
    let srcs: Vec<ccd_search::Source> = ccd_claude::transcript::list_all(&config.join("projects"))
        .into_iter()
        .map(|f| ccd_search::Source {
            session_id: f.session_id,
            path: f.path,
        })
        .collect();
    let mut ix = Index::new(Limits::default());
    ix.update(&srcs);
    ix.save(&state.join("search.idx")).unwrap();
    let run = |state: &Path, q: &str| {
        let mut words = vec!["search", q, "--json"];
        if state == empty {
            words.push("--no-index");
        }
        Command::new(env!("CARGO_BIN_EXE_ccd"))
            .args(words)
            .arg("--claude-config-dir")
            .arg(&config)
            .env("HOME", home.path())
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CCD_CONFIG")
            .env_remove("CCD_HOST")
            .env("XDG_CONFIG_HOME", home.path().join(".config"))
            .env("CCD_STATE_DIR", state)
            .env("CCD_SOCKET_DIR", home.path().join("sock"))
            .env("CCD_LOG", "ccd=debug")
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    };
    let with = run(&state, "oauth");
    let log = String::from_utf8_lossy(&with.stderr).into_owned();
    assert!(
        log.contains("search index used") && log.contains("scanned=0"),
        "{log}"
    );
    // Equal rows (the score aside: its recency moves with the clock).
    let unscored = |o: &Output| {
        let mut r = rows(o);
        r.iter_mut().for_each(|v| {
            v.as_object_mut().unwrap().remove("score");
        });
        r
    };
    assert_eq!(unscored(&with), unscored(&run(&empty, "oauth")));
    assert_eq!(unscored(&with).len(), 2);
    assert!(!String::from_utf8_lossy(&run(&empty, "oauth").stderr).contains("search index used"));
    assert!(
        !empty.join("search.idx").exists(),
        "--no-index wrote an index"
    );

    // Grown since the index saw it: taken in, its new text found.
    a.turn("a brand new phrase", 1000, 10);
    let grown = run(&state, "brand new");
    assert!(String::from_utf8_lossy(&grown.stderr).contains("scanned=0"));
    assert_eq!(ids(&rows(&grown)), ["sess-a"]);

    // A damaged index: the search still answers.
    std::fs::write(state.join("search.idx"), b"not an index").unwrap();
    let damaged = run(&state, "oauth");
    assert_eq!(rows(&damaged).len(), 2);
}

/// `ccd search` in a given state dir, logging at debug level.
fn kept(home: &Path, config: &Path, state: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ccd"))
        .arg("search")
        .args(args)
        .arg("--json")
        .arg("--claude-config-dir")
        .arg(config)
        .env("HOME", home)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CCD_CONFIG")
        .env_remove("CCD_HOST")
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("CCD_STATE_DIR", state)
        .env("CCD_SOCKET_DIR", home.join("sock"))
        .env("CCD_LOG", "ccd=debug")
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

/// The `key=value` of the log line holding `msg`, as a number.
fn logged(out: &Output, msg: &str, key: &str) -> u64 {
    let log = String::from_utf8_lossy(&out.stderr);
    let line = log
        .lines()
        .find(|l| l.contains(msg))
        .unwrap_or_else(|| panic!("no {msg:?} in: {log}"));
    let at = line
        .find(&format!("{key}="))
        .unwrap_or_else(|| panic!("no {key} in: {line}"));
    line[at + key.len() + 1..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

fn loaded(state: &Path) -> ccd_search::index::Index {
    ccd_search::index::Index::load(
        &state.join("search.idx"),
        ccd_search::index::Limits::default(),
    )
    .expect("a loadable index")
}

/// Issue 55 item 4: the searches keep the index. The first creates
/// search.idx; a transcript appended to after it is found by the next,
/// which reads only the appended bytes (the log's `bytes`) and saves a
/// larger index; a deleted transcript is dropped from it and never
/// returned; `--rebuild-index` reads everything again.
#[test]
fn searches_keep_the_index_from_the_transcripts_growth() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("claude");
    let state = home.path().join("state");
    let mut a = TranscriptWriter::create(&config, "sess-a", "/home/dev/api");
    a.turn("fix the oauth token refresh", 1000, 10);
    let mut b = TranscriptWriter::create(&config, "sess-b", "/home/dev/web");
    b.turn("the OAuth login page", 1000, 10);
    let a_path = ccd_claude::transcript::list_all(&config.join("projects"))
        .into_iter()
        .find(|f| f.session_id == "sess-a")
        .unwrap()
        .path;

    let first = kept(home.path(), &config, &state, &["oauth"]);
    assert_eq!(rows(&first).len(), 2);
    assert!(state.join("search.idx").exists(), "no index kept");
    assert_eq!(logged(&first, "search index updated", "files_read"), 2);
    let before = loaded(&state).records_len();
    assert!(before >= 2);

    // Unchanged: nothing read, nothing saved.
    let again = kept(home.path(), &config, &state, &["oauth"]);
    assert_eq!(logged(&again, "search index updated", "files_read"), 0);
    assert!(!String::from_utf8_lossy(&again.stderr).contains("search index saved"));

    let len = std::fs::metadata(&a_path).unwrap().len();
    a.turn("a brand new phrase about kerberos", 1000, 10);
    let appended = std::fs::metadata(&a_path).unwrap().len() - len;
    let grown = kept(home.path(), &config, &state, &["kerberos"]);
    assert_eq!(ids(&rows(&grown)), ["sess-a"]);
    assert_eq!(logged(&grown, "search index updated", "files_read"), 1);
    assert_eq!(logged(&grown, "search index updated", "bytes"), appended);
    assert_eq!(logged(&grown, "search index used", "scanned"), 0);
    let after = loaded(&state).records_len();
    assert!(after > before, "{after} records, {before} before");

    // Deleted: dropped from the index, never returned.
    let b_path = ccd_claude::transcript::list_all(&config.join("projects"))
        .into_iter()
        .find(|f| f.session_id == "sess-b")
        .unwrap()
        .path;
    std::fs::remove_file(&b_path).unwrap();
    let gone = kept(home.path(), &config, &state, &["oauth"]);
    assert_eq!(ids(&rows(&gone)), ["sess-a"]);
    assert_eq!(logged(&gone, "search index updated", "dropped"), 1);
    let left = loaded(&state).records_len();
    assert!(left < after);

    // Filters narrow what is searched, never what the index keeps.
    let filtered = kept(
        home.path(),
        &config,
        &state,
        &["oauth", "--cwd", "/elsewhere"],
    );
    assert!(!filtered.status.success());
    assert_eq!(logged(&filtered, "search index updated", "dropped"), 0);
    assert_eq!(loaded(&state).records_len(), left);

    let rebuilt = kept(
        home.path(),
        &config,
        &state,
        &["kerberos", "--rebuild-index"],
    );
    assert_eq!(ids(&rows(&rebuilt)), ["sess-a"]);
    assert_eq!(logged(&rebuilt, "search index updated", "files_read"), 1);
    assert_eq!(
        logged(&rebuilt, "search index updated", "bytes"),
        std::fs::metadata(&a_path).unwrap().len()
    );
}

/// A damaged index file (and one of another format) is replaced by a
/// rebuilt one, said in the log, and the search still answers.
#[test]
fn a_damaged_index_is_replaced_and_the_search_answers() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("claude");
    let state = home.path().join("state");
    let mut a = TranscriptWriter::create(&config, "sess-a", "/home/dev/api");
    a.turn("fix the oauth token refresh", 1000, 10);
    std::fs::create_dir_all(&state).unwrap();
    for bad in [&b"not an index"[..], b"CCDSIDX\n\x63\0\0\0rest"] {
        std::fs::write(state.join("search.idx"), bad).unwrap();
        let out = kept(home.path(), &config, &state, &["oauth"]);
        assert_eq!(ids(&rows(&out)), ["sess-a"]);
        assert!(String::from_utf8_lossy(&out.stderr).contains("search index unreadable: rebuilt"));
        assert!(loaded(&state).records_len() > 0);
    }
}

/// Concurrent searches (one holds the lock, the others answer from the
/// index as saved) leave a loadable index that covers every transcript,
/// and all answer the same.
#[test]
fn concurrent_searches_leave_a_loadable_index() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("claude");
    let state = home.path().join("state");
    let mut writers = Vec::new();
    for i in 0..40 {
        let mut w = TranscriptWriter::create(&config, &format!("sess-{i:02}"), "/home/dev/api");
        w.turn(&format!("oauth token refresh number {i}"), 20_000, 10);
        writers.push(w);
    }
    for round in 0..3 {
        let runs: Vec<_> = (0..4)
            .map(|_| {
                let (h, c, s) = (home.path().to_owned(), config.clone(), state.clone());
                std::thread::spawn(move || kept(&h, &c, &s, &["oauth", "--limit", "100"]))
            })
            .collect();
        for r in runs {
            assert_eq!(rows(&r.join().unwrap()).len(), 40 + round);
        }
        // As many records as an index built here from every transcript.
        let srcs: Vec<ccd_search::Source> =
            ccd_claude::transcript::list_all(&config.join("projects"))
                .into_iter()
                .map(|f| ccd_search::Source {
                    session_id: f.session_id,
                    path: f.path,
                })
                .collect();
        let mut fresh = ccd_search::index::Index::new(ccd_search::index::Limits::default());
        fresh.update(&srcs);
        assert_eq!(loaded(&state).records_len(), fresh.records_len());
        let mut w = TranscriptWriter::create(&config, &format!("new-{round}"), "/home/dev/web");
        w.turn("oauth added between rounds", 20_000, 10);
    }

    // While another holds the lock: answered (the file added since is
    // scanned), the index left as it was.
    let lock = std::fs::File::open(state.join("search.idx.lock")).unwrap();
    let held = nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusiveNonblock).unwrap();
    let saved = std::fs::read(state.join("search.idx")).unwrap();
    let busy = kept(home.path(), &config, &state, &["oauth", "--limit", "100"]);
    assert_eq!(rows(&busy).len(), 43);
    assert!(String::from_utf8_lossy(&busy.stderr).contains("search index busy"));
    assert_eq!(logged(&busy, "search index used", "scanned"), 1);
    assert_eq!(std::fs::read(state.join("search.idx")).unwrap(), saved);
    // A transcript the index holds, grown since it was saved: the index
    // as saved is not trusted for it (a stat says it changed; only an
    // index this search updated is trusted without a second stat).
    writers[0].turn("zebra grown while the index is busy", 20_000, 10);
    let grown = kept(home.path(), &config, &state, &["zebra"]);
    assert_eq!(ids(&rows(&grown)), ["sess-00"]);
    assert_eq!(logged(&grown, "search index used", "scanned"), 2);
    drop(held);
    let free = kept(home.path(), &config, &state, &["oauth", "--limit", "100"]);
    assert_eq!(logged(&free, "search index updated", "files_read"), 2);
    // Updated by this search: the grown transcript found through its
    // records, nothing scanned.
    let again = kept(home.path(), &config, &state, &["zebra"]);
    assert_eq!(ids(&rows(&again)), ["sess-00"]);
    assert_eq!(logged(&again, "search index used", "scanned"), 0);
}
