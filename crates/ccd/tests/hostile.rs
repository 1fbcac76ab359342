//! Hostile text in Claude Code's files (titles, cwds) never reaches the
//! terminal raw: every human-readable output goes through
//! `ccd_claude::display`, while `--json` keeps the exact data.

mod common;

use ccd_testkit::gen::TranscriptWriter;
use common::external::external;
use common::pty::PtyRun;
use common::{ls_json, wait_for, Sandbox};
use std::io::Read;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const T: Duration = Duration::from_secs(20);

/// A title (one line: a transcript's title is its prompt's first line).
const TITLE: &str =
    "title\u{1b}]0;pwned\u{7}\u{1b}]52;c;aGVsbG8=\u{7}\u{1b}[2J\u{202e}evil\rfake-row";
/// A directory name with a line break too.
const DIR: &str = "dir\u{1b}]0;pwned\u{7}\u{1b}]52;c;aGVsbG8=\u{7}\u{1b}[2J\nfake-row\u{202e}x";

/// None of the hostile sequences, raw, in `out`; no line of it starts with
/// the forged row.
fn assert_defused(out: &str, what: &str) {
    for bad in [
        "\u{1b}]0;pwned",
        "\u{1b}]52;",
        "\u{1b}[2J",
        "\u{202e}",
        "\u{7}",
    ] {
        assert!(!out.contains(bad), "{what}: {bad:?} raw in {out:?}");
    }
    for l in out.split(['\n', '\r']) {
        assert!(
            !l.starts_with("fake-row"),
            "{what}: a forged row in {out:?}"
        );
    }
}

#[test]
fn ls_shows_a_hostile_title_and_cwd_defused_and_json_keeps_them() {
    let sb = Sandbox::new();
    let sid = ccd_testkit::gen::sid(7);
    let cwd = format!("/home/dev/{DIR}");
    let mut w = TranscriptWriter::create(&sb.config, &sid, &cwd);
    w.turn(TITLE, 1000, 10);
    drop(w);

    let out = sb.ok(&["ls"]);
    assert_defused(&out, "ccd ls");
    let row = out
        .lines()
        .find(|l| l.starts_with(&sid[..8]))
        .unwrap_or_else(|| panic!("no row for {sid} in {out}"));
    assert!(row.contains("title"), "{row}");
    assert!(row.contains("⏎fake-row"), "{row}");
    assert_eq!(out.lines().count(), 2, "{out}");

    let r = common::row(&sb, &sid);
    assert_eq!(r["title"], TITLE, "{r}");
    assert_eq!(r["cwd"], cwd.as_str(), "{r}");
}

#[test]
fn events_and_the_attach_refusal_show_a_hostile_cwd_defused() {
    let sb = Sandbox::new();
    let _ = sb.client_or_start();
    // `ccd events`, human lines, from before the session appears.
    let mut ev = sb
        .cmd(&["events"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let printed = Arc::new(Mutex::new(Vec::new()));
    {
        let printed = printed.clone();
        let mut stdout = ev.stdout.take().unwrap();
        std::thread::spawn(move || {
            let mut b = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut b) {
                if n == 0 {
                    break;
                }
                printed.lock().unwrap().extend_from_slice(&b[..n]);
            }
        });
    }
    std::thread::sleep(Duration::from_millis(500)); // subscribed
    let dir = sb.project(DIR);
    let ext = external(&sb, &dir);
    let rows = ls_json(&sb);
    let r = rows
        .iter()
        .find(|r| r["session_id"] == ext.sid.as_str())
        .unwrap();
    assert_eq!(r["cwd"], dir.to_str().unwrap(), "{r}");

    let events = wait_for(T, "session.appeared in `ccd events`", || {
        let s = String::from_utf8_lossy(&printed.lock().unwrap()).into_owned();
        (s.contains("session.appeared") && s.contains(&ext.sid[..8])).then_some(s)
    });
    let _ = ev.kill();
    let _ = ev.wait();
    assert_defused(&events, "ccd events");
    assert!(events.contains("⏎fake-row"), "{events}");

    let mut a = PtyRun::start(&sb, &["attach", &ext.sid[..8]], None);
    assert_eq!(a.wait_exit(T), 2);
    let out = a.raw_text();
    assert!(out.contains("held by: pid"), "{out}");
    assert_defused(&out, "the attach refusal");
    assert!(out.contains("⏎fake-row"), "{out}");
}
