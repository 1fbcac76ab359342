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
    // `ccd events`, human lines and JSON, from before the session appears.
    let (mut ev, printed) = events(&sb, &["events"]);
    let (mut ev_json, printed_json) = events(&sb, &["events", "--json"]);
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

    // `--json`: escaped (no raw bidi control), and the exact cwd back.
    let appeared = wait_for(T, "session.appeared in `ccd events --json`", || {
        let s = String::from_utf8_lossy(&printed_json.lock().unwrap()).into_owned();
        s.lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .find(|e| e["type"] == "session.appeared" && e["session"] == ext.sid.as_str())
            .map(|e| (s, e))
    });
    let _ = ev_json.kill();
    let _ = ev_json.wait();
    let (text, e) = appeared;
    assert!(!text.chars().any(raw_control), "{text:?}");
    assert!(text.contains("\\u202e"), "{text}");
    assert_eq!(e["cwd"], dir.to_str().unwrap(), "{e}");

    let mut a = PtyRun::start(&sb, &["attach", &ext.sid[..8]], None);
    assert_eq!(a.wait_exit(T), 2);
    let out = a.raw_text();
    assert!(out.contains("held by: pid"), "{out}");
    assert_defused(&out, "the attach refusal");
    assert!(out.contains("⏎fake-row"), "{out}");
}

/// Runs `ccd <args>` (an events stream); what it prints, as it comes.
fn events(sb: &Sandbox, args: &[&str]) -> (std::process::Child, Arc<Mutex<Vec<u8>>>) {
    let mut ev = sb
        .cmd(args)
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
    (ev, printed)
}

/// What serde_json alone writes raw: DEL, C1 controls (a CSI, an OSC and
/// its string terminator, a next-line), bidi and invisible format
/// controls, the line and paragraph separators.
const C1_AND_BIDI: &str =
    "p\u{9b}2J\u{9d}0;pwned\u{9c}\u{85}\u{7f}\u{202e}\u{2066}\u{200f}\u{61c}\u{2028}\u{2029}q";

/// True for a character that must never reach a terminal raw.
fn raw_control(c: char) -> bool {
    ccd_claude::display::is_unsafe(c) && c != '\n'
}

#[test]
fn json_output_escapes_c1_and_bidi_controls_and_reads_back_exactly() {
    let sb = Sandbox::new();
    let sid = ccd_testkit::gen::sid(8);
    let cwd = format!("/home/dev/{C1_AND_BIDI}");
    let title = format!("title {C1_AND_BIDI}");
    let mut w = TranscriptWriter::create(&sb.config, &sid, &cwd);
    w.turn(&title, 1000, 10);
    drop(w);

    let out = sb.ok(&["ls", "--json"]);
    let raw: Vec<char> = out.chars().filter(|&c| raw_control(c)).collect();
    assert!(raw.is_empty(), "raw {raw:?} in {out:?}");
    assert!(out.contains("\\u009b") && out.contains("\\u202e") && out.contains("\\u2028"));
    let rows: serde_json::Value = serde_json::from_str(&out).unwrap();
    let r = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["session_id"] == sid.as_str())
        .unwrap();
    assert_eq!(r["cwd"], cwd.as_str(), "{r}");
    assert_eq!(r["title"], title.as_str(), "{r}");

    // The table shows them defused.
    let table = sb.ok(&["ls"]);
    assert!(!table.chars().any(raw_control), "{table:?}");
    assert!(table.contains("/home/dev/p⏎⏎q"), "{table}");
}

/// clap's errors quote the command line: an unknown option or subcommand
/// carrying escape sequences or a bidi override is shown defused, with
/// clap's exit code (2); help and version still print as they did.
#[test]
fn usage_errors_show_what_was_typed_defused() {
    let sb = Sandbox::new();
    for (args, says) in [
        (
            vec!["ls", "--bo\u{1b}]0;pwned\u{7}gus\u{202e}\u{9b}2J\nfake-row"],
            "unexpected argument '--bogus⏎fake-row'",
        ),
        (
            vec!["at\u{202e}ta\u{1b}[2Jch\nfake-row"],
            "unrecognized subcommand",
        ),
    ] {
        let o = sb.run(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.chars().any(raw_control), "{args:?}: {err:?}");
        assert!(!err.lines().any(|l| l.starts_with("fake-row")), "{err}");
    }
    let v = sb.run(&["--version"]);
    assert_eq!(v.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&v.stdout).starts_with("ccd "));
    let h = sb.run(&["ls", "--help"]);
    assert_eq!(h.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&h.stdout).contains("--json"));
}

/// Log lines on stderr quote paths: a hostile config directory's name
/// reaches the terminal defused (`CCD_LOG=debug`: the registry reader
/// logs the entry it skips, with its path).
#[test]
fn log_lines_on_stderr_are_sanitized() {
    let sb = Sandbox::new();
    let config = sb.work.join(format!("cfg{DIR}"));
    std::fs::create_dir_all(config.join("sessions")).unwrap();
    std::fs::write(config.join("sessions/77.json"), b"{garbage").unwrap();
    let o = sb.run(&["ls", "--claude-config-dir", config.to_str().unwrap()]);
    assert!(o.status.success() || o.status.code() == Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("registry: entry skipped"), "{err}");
    assert_defused(&err, "stderr logs");
    assert!(err.contains("⏎fake-row"), "{err}");
}

/// The binaries are position-independent, so the kernel randomizes where
/// the executable itself is mapped (ASLR) for the long-lived daemon and
/// holders (a position-dependent build saved ~0.3 ms of start-up and gave
/// that up: docs/architecture.md, "Process start"). ELF `e_type` is
/// `ET_DYN` (3) for a PIE, `ET_EXEC` (2) for a fixed-address executable.
#[cfg(target_os = "linux")]
#[test]
fn the_binaries_are_position_independent() {
    for bin in [common::ccd_bin(), common::fake_claude()] {
        let head = std::fs::read(&bin).expect("the binary");
        assert_eq!(&head[..4], b"\x7fELF", "{}", bin.display());
        let e_type = u16::from_le_bytes([head[16], head[17]]);
        assert_eq!(
            e_type,
            3,
            "{} is not a PIE (e_type {e_type})",
            bin.display()
        );
    }
}
