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
/// ccd-search, as the daemon will keep it): the index answers for the
/// files it has seen as they are now (the log says so: no file scanned),
/// a file grown since is scanned, the hits equal those without an index,
/// and a damaged index file is passed over.
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
        Command::new(env!("CARGO_BIN_EXE_ccd"))
            .args(["search", q, "--json", "--claude-config-dir"])
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

    // Grown since the index saw it: that file is scanned, its new text found.
    a.turn("a brand new phrase", 1000, 10);
    let grown = run(&state, "brand new");
    assert!(String::from_utf8_lossy(&grown.stderr).contains("scanned=1"));
    assert_eq!(ids(&rows(&grown)), ["sess-a"]);

    // A damaged index: not used, the scan answers.
    std::fs::write(state.join("search.idx"), b"not an index").unwrap();
    let damaged = run(&state, "oauth");
    assert!(!String::from_utf8_lossy(&damaged.stderr).contains("search index used"));
    assert_eq!(rows(&damaged).len(), 2);
}
