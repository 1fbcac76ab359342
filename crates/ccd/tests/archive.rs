//! `ccd archive` end to end with the fake claude (issue 56 item 5): a dead
//! conversation moved into the state dir and back byte for byte; `ccd
//! attach` of an archived one puts it back and resumes it in its own
//! folder; a live one refused; `--older-than`; a full disk (a 64 KiB tmpfs
//! as the archive folder) leaves the original in place and says so;
//! search finds archived conversations, through the daemon's index too.

mod common;

use common::external::external;
use common::pty::PtyRun;
use common::{ls_json, wait_for, Sandbox};
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

const T: Duration = Duration::from_secs(20);

/// A session the fake ran outside ccd, then killed: dead, with a turn.
fn dead_session(sb: &Sandbox, name: &str) -> (String, PathBuf, PathBuf) {
    let (sid, dir) = common::external::dead_session(sb, name);
    let transcript =
        ccd_claude::transcript::find_by_session_id(&sb.config.join("projects"), &sid).unwrap();
    (sid, dir, transcript)
}

fn fails(sb: &Sandbox, args: &[&str]) -> String {
    let o = sb.run(args);
    assert!(
        !o.status.success(),
        "ccd {args:?} succeeded: {}",
        String::from_utf8_lossy(&o.stdout)
    );
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn archive_and_restore_are_byte_equal_and_attach_resumes_in_its_folder() {
    let sb = Sandbox::new();
    let (sid, dir, transcript) = dead_session(&sb, "kept");
    let side = transcript
        .with_file_name(&sid)
        .join("subagents/agent-x.jsonl");
    fs::create_dir_all(side.parent().unwrap()).unwrap();
    fs::write(&side, "{\"sub\":1}\n").unwrap();
    let before = fs::read(&transcript).unwrap();

    let said = sb.ok_stderr(&["archive", &sid[..8]]);
    assert!(said.contains(&format!("archived {sid} (2 files")), "{said}");
    assert!(!transcript.exists() && !side.exists());
    assert!(
        !transcript.with_file_name(&sid).exists(),
        "sidecar folder left"
    );
    let list = sb.ok(&["archive", "--list"]);
    assert!(
        list.contains(&sid) && list.contains(dir.to_str().unwrap()),
        "{list}"
    );
    // Listed as archived, in its folder; not with --live.
    let rows = ls_json(&sb);
    let r = rows
        .iter()
        .find(|r| r["session_id"] == sid.as_str())
        .expect("ccd ls lists the archived conversation");
    assert_eq!(r["state"], "archived", "{r}");
    assert_eq!(r["cwd"], dir.to_str().unwrap(), "{r}");
    assert_eq!(r["transcript_bytes"], before.len() + 10, "{r}");
    let table = sb.ok(&["ls"]);
    assert!(
        table
            .lines()
            .any(|l| l.contains(&sid[..8]) && l.contains("archived")),
        "{table}"
    );
    assert!(!sb.ok(&["ls", "--live"]).contains(&sid[..8]));

    // Back without resuming: byte for byte.
    sb.ok_stderr(&["archive", "--restore", &sid[..8]]);
    assert_eq!(fs::read(&transcript).unwrap(), before);
    assert_eq!(fs::read(&side).unwrap(), b"{\"sub\":1}\n");
    assert_eq!(sb.ok(&["archive", "--list"]), "");

    // Archived again, then attached from elsewhere: put back first, resumed
    // in its own folder, the conversation as it was.
    sb.ok_stderr(&["archive", &sid]);
    let elsewhere = sb.project("elsewhere");
    let a = PtyRun::start(&sb, &["attach", &sid[..8]], Some(&elsewhere));
    a.wait_text("hello from outside", T);
    let rows = ls_json(&sb);
    let r = rows
        .iter()
        .find(|r| r["session_id"] == sid.as_str())
        .expect("listed again");
    assert_eq!(r["state"], "live", "{r}");
    assert_eq!(r["writers"][0]["cwd"], dir.to_str().unwrap(), "{r}");
    let now = fs::read(&transcript).unwrap();
    assert!(
        now.starts_with(&before),
        "the resumed transcript does not start with the archived bytes"
    );
}

#[test]
fn a_live_session_is_not_archived() {
    let sb = Sandbox::new();
    let dir = sb.project("live");
    let ext = external(&sb, &dir);
    let transcript =
        ccd_claude::transcript::find_by_session_id(&sb.config.join("projects"), &ext.sid).unwrap();
    let before = fs::read(&transcript).unwrap();
    let said = fails(&sb, &["archive", &ext.sid]);
    assert!(said.contains("may be running"), "{said}");
    assert_eq!(fs::read(&transcript).unwrap(), before);
    assert_eq!(sb.ok(&["archive", "--list"]), "");
}

/// A dead conversation's transcript last written `days` ago, of `bytes`
/// incompressible bytes.
fn plant(sb: &Sandbox, sid: &str, days: u32, bytes: usize) -> PathBuf {
    let cwd = sb.project("planted");
    let dir = sb
        .config
        .join("projects")
        .join(ccd_claude::slug::slug(cwd.to_str().unwrap()));
    fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{sid}.jsonl"));
    // xorshift noise, hex: does not compress below half.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let noise: String = (0..bytes / 2)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            format!("{:02x}", x as u8)
        })
        .collect();
    let record = serde_json::json!({
        "type": "user", "sessionId": sid, "cwd": cwd, "uuid": "u1", "parentUuid": null,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "message": {"role": "user", "content": noise},
    });
    fs::write(&path, format!("{record}\n")).unwrap();
    File::open(&path)
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(86_400) * days)
        .unwrap();
    path
}

#[test]
fn older_than_archives_only_the_old_ones() {
    let sb = Sandbox::new();
    let old = plant(&sb, "0000aaaa-0000-4000-8000-000000000040", 40, 1000);
    let fresh = plant(&sb, "0000bbbb-0000-4000-8000-000000000002", 2, 1000);
    let dry = sb.ok(&["archive", "--older-than", "25d", "--dry-run"]);
    assert_eq!(dry.trim(), "0000aaaa-0000-4000-8000-000000000040");
    assert!(old.exists());
    sb.ok_stderr(&["archive", "--older-than", "25d"]);
    assert!(!old.exists() && fresh.exists());
    // Nothing left at risk: the retention notice is gone from ccd ls.
    let o = sb.run(&["ls"]);
    assert!(!String::from_utf8_lossy(&o.stderr).contains("deletes"));
    let bad = fails(&sb, &["archive", "--older-than", "3m"]);
    assert!(bad.contains("d, h or w"), "{bad}");
}

/// Mounts a tmpfs of `size` at `at`; false when this machine will not
/// (not root): the test is skipped then, unless `$CI` is set.
fn mount_tmpfs(at: &Path, size: &str) -> bool {
    fs::create_dir_all(at).unwrap();
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
        .arg(at)
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "mounting a tmpfs failed under CI"
        );
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: cannot mount a tmpfs (not root?)"
        );
    }
    ok
}

struct Unmount(PathBuf);
impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_leaves_the_original_in_place_and_says_so() {
    let sb = Sandbox::new();
    let root = sb.state.join("archive");
    if !mount_tmpfs(&root, "64k") {
        return;
    }
    let _unmount = Unmount(root.clone());
    let sid = "0000cccc-0000-4000-8000-000000000001";
    let path = plant(&sb, sid, 1, 1 << 20);
    let before = fs::read(&path).unwrap();
    let said = fails(&sb, &["archive", sid]);
    assert!(
        said.contains("No space left on device") && said.contains("the original is left in place"),
        "{said}"
    );
    assert_eq!(fs::read(&path).unwrap(), before);
    let left: Vec<_> = fs::read_dir(&root).unwrap().flatten().collect();
    assert!(left.is_empty(), "partial archive left: {left:?}");
}

#[test]
fn archive_auto_moves_what_the_sweep_would_reach_within_five_days() {
    let sb = Sandbox::new();
    let config_file = sb
        .env
        .iter()
        .find(|(k, _)| k == "CCD_CONFIG")
        .map(|(_, v)| PathBuf::from(v))
        .unwrap();
    fs::write(&config_file, "archive = \"auto\"\n").unwrap();
    let near = plant(&sb, "0000dddd-0000-4000-8000-000000000026", 26, 1000);
    let fresh = plant(&sb, "0000eeee-0000-4000-8000-000000000020", 20, 1000);
    let _c = sb.client_or_start();
    wait_for(T, "the daemon to archive the 26-day-old one", || {
        (!near.exists()).then_some(())
    });
    assert!(fresh.exists(), "inside the margin: kept");
    let list = sb.ok(&["archive", "--list"]);
    assert!(
        list.contains("0000dddd-0000-4000-8000-000000000026"),
        "{list}"
    );
    assert!(sb.logs().contains("archived before the retention sweep"));
}

/// `ccd search --json QUERY…` rows (as JSON values).
fn search_rows(sb: &Sandbox, args: &[&str]) -> Vec<serde_json::Value> {
    let mut all = vec!["search", "--json"];
    all.extend_from_slice(args);
    let o = sb.run(&all);
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "ccd {all:?}: {e}: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

/// Search still sees an archived conversation (issue 56 item 5), read
/// decompressed, with state `archived` and its folder: without a daemon,
/// through the daemon (`sessions.search`), never with `--live`; put back,
/// it is found once, dead.
#[test]
fn search_finds_an_archived_conversation_with_and_without_the_daemon() {
    use std::io::Write;
    let sb = Sandbox::new();
    let (sid, dir, transcript) = dead_session(&sb, "found");
    let record = serde_json::json!({
        "type": "user",
        "message": {"role": "user", "content": "where did the quokka ledger go"},
        "timestamp": "2026-12-01T10:00:00Z",
        "cwd": dir,
        "sessionId": sid,
    });
    let mut f = fs::OpenOptions::new()
        .append(true)
        .open(&transcript)
        .unwrap();
    writeln!(f, "{record}").unwrap();
    drop(f);
    sb.ok_stderr(&["archive", &sid[..8]]);
    assert!(!transcript.exists());
    assert_eq!(sb.daemon_pid(), None, "searched here, without a daemon");

    let check = |rows: &[serde_json::Value], how: &str| {
        assert_eq!(rows.len(), 1, "{how}: {rows:?}");
        assert_eq!(rows[0]["session_id"], sid.as_str(), "{how}");
        assert_eq!(rows[0]["state"], "archived", "{how}");
        assert_eq!(rows[0]["folder"], dir.to_str().unwrap(), "{how}");
        assert_eq!(rows[0]["snippet"]["matched"], "quokka", "{how}");
    };
    check(&search_rows(&sb, &["quokka ledger"]), "without a daemon");
    assert!(search_rows(&sb, &["--live", "quokka ledger"]).is_empty());

    let mut c = sb.client_or_start();
    let got = c
        .call_value(
            "sessions.search",
            serde_json::json!({"query": "quokka ledger"}),
        )
        .unwrap();
    check(
        got["hits"].as_array().unwrap(),
        "sessions.search over the socket",
    );
    check(
        &search_rows(&sb, &["quokka ledger"]),
        "ccd search through the daemon",
    );
    let scoped = c
        .call_value(
            "sessions.search",
            serde_json::json!({"query": "quokka ledger", "scope": "live"}),
        )
        .unwrap();
    assert_eq!(scoped["hits"], serde_json::json!([]));

    // Put back: found once, where it was, dead.
    sb.ok_stderr(&["archive", "--restore", &sid]);
    assert!(transcript.exists());
    wait_for(T, "the put-back conversation found once, dead", || {
        let rows = search_rows(&sb, &["quokka ledger"]);
        (rows.len() == 1 && rows[0]["state"] == "dead").then_some(())
    });
}

/// The daemon's search index covers archived conversations (issue 55):
/// conversations archived after the index was open are found by the very
/// next search through the daemon, which decompresses only the archive
/// that matches (its "search answered" line says `archives=1` of three);
/// one put back is found once, dead; one whose archive is deleted is no
/// longer found.
#[test]
fn the_daemons_index_covers_archives_made_after_it_opened() {
    use std::io::Write;
    let sb = Sandbox::new();
    let mut planted = Vec::new();
    for (name, word) in [("one", "quokka"), ("two", "numbat"), ("three", "bilby")] {
        let (sid, dir, transcript) = dead_session(&sb, name);
        let record = serde_json::json!({
            "type": "user",
            "message": {"role": "user", "content": format!("where did the {word} ledger go")},
            "timestamp": "2026-12-01T10:00:00Z",
            "cwd": dir,
            "sessionId": sid,
        });
        let mut f = fs::OpenOptions::new()
            .append(true)
            .open(&transcript)
            .unwrap();
        writeln!(f, "{record}").unwrap();
        planted.push((sid, transcript));
    }
    let mut c = sb.client_or_start();
    wait_for(T, "the daemon's search index", || {
        let r = c
            .call_value("sessions.search", serde_json::json!({"query": "ledger"}))
            .unwrap();
        (r["indexed"] == true && r["hits"].as_array().map(Vec::len) == Some(3)).then_some(())
    });
    for (sid, _) in &planted {
        sb.ok_stderr(&["archive", &sid[..8]]);
    }

    let rows = search_rows(&sb, &["quokka ledger"]);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["session_id"], planted[0].0.as_str());
    assert_eq!(rows[0]["state"], "archived");
    let logs = sb.logs_with(&["archives=1"]);
    assert!(
        logs.lines()
            .any(|l| l.contains("search answered") && l.contains("archives=1")),
        "one archive decompressed of three: {logs}"
    );

    // Put back: found once, where it was, dead.
    sb.ok_stderr(&["archive", "--restore", &planted[0].0]);
    assert!(planted[0].1.exists());
    wait_for(T, "the put-back conversation found once, dead", || {
        let rows = search_rows(&sb, &["quokka ledger"]);
        (rows.len() == 1 && rows[0]["state"] == "dead").then_some(())
    });
    // Its archive deleted: not found any more.
    assert_eq!(search_rows(&sb, &["numbat ledger"]).len(), 1);
    fs::remove_dir_all(sb.state.join("archive").join(&planted[1].0)).unwrap();
    assert_eq!(
        search_rows(&sb, &["numbat ledger"]),
        Vec::<serde_json::Value>::new()
    );
    assert_eq!(search_rows(&sb, &["bilby ledger"]).len(), 1);
}
