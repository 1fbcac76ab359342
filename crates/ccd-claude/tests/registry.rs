//! Registry listing against real files: every kind of bad file is skipped
//! on its own, never failing the listing.

use ccd_claude::registry::{read_all, read_entry, EntryError, MAX_ENTRY_BYTES};
use ccd_testkit::gen::{registry_entry, write_registry_entry};
use std::fs;

#[test]
fn bad_files_are_skipped_one_by_one() {
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path();
    write_registry_entry(config, &registry_entry(101, "good-1", "/a", "1", None));
    write_registry_entry(config, &registry_entry(102, "good-2", "/b", "2", None));
    let dir = config.join("sessions");
    fs::write(dir.join("200.json"), b"not json at all").unwrap();
    fs::write(dir.join("201.json"), br#"{"pid":201,"sessionId":"trunc"#).unwrap();
    fs::write(dir.join("202.json"), b"").unwrap();
    let mut big = br#"{"pid":203,"sessionId":"big","pad":""#.to_vec();
    big.resize(MAX_ENTRY_BYTES as usize + 10, b'a');
    big.extend_from_slice(b"\"}");
    fs::write(dir.join("203.json"), big).unwrap();
    // symlink to a valid entry: not followed
    std::os::unix::fs::symlink(dir.join("101.json"), dir.join("204.json")).unwrap();
    // misnamed: holds pid 101 under the name 205
    fs::copy(dir.join("101.json"), dir.join("205.json")).unwrap();
    // a directory and a FIFO with entry names (a FIFO must not block us)
    fs::create_dir(dir.join("206.json")).unwrap();
    nix_mkfifo(&dir.join("207.json"));
    // valid JSON with the wrong shape
    fs::write(dir.join("208.json"), br#"[{"pid":208}]"#).unwrap();
    fs::write(dir.join("209.json"), br#"{"pid":"209","sessionId":"s"}"#).unwrap();
    // names that are not entries at all
    fs::write(dir.join("notes.txt"), b"x").unwrap();
    fs::write(
        dir.join("210.json.tmp"),
        br#"{"pid":210,"sessionId":"tmp"}"#,
    )
    .unwrap();

    let entries = read_all(&dir).unwrap();
    let ids: Vec<_> = entries.iter().map(|e| e.session_id.as_str()).collect();
    assert_eq!(ids, ["good-1", "good-2"]);
    assert!(
        entries.iter().all(|e| e.session_id != "secret"),
        ".key content leaked"
    );

    assert!(matches!(
        read_entry(&dir.join("203.json")),
        Err(EntryError::TooLarge(_))
    ));
    assert!(matches!(
        read_entry(&dir.join("204.json")),
        Err(EntryError::NotRegular)
    ));
    assert!(matches!(
        read_entry(&dir.join("205.json")),
        Err(EntryError::PidMismatch {
            file: 205,
            inner: 101
        })
    ));
    assert!(matches!(
        read_entry(&dir.join("207.json")),
        Err(EntryError::NotRegular)
    ));
    assert!(matches!(
        read_entry(&dir.join("999.json")),
        Err(EntryError::Vanished)
    ));
}

fn nix_mkfifo(path: &std::path::Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn keeps_the_documented_fields() {
    let fixture = ccd_testkit::fixtures::read("registry-2.1.332.json");
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("2244.json");
    fs::write(&p, fixture).unwrap();
    let e = read_entry(&p).unwrap();
    assert_eq!(e.pid, 2244);
    assert_eq!(e.session_id, "ff0beea3-c767-41f8-a763-c6d5ed1addea");
    assert_eq!(e.cwd.as_deref(), Some("/home/dev/proj1"));
    assert_eq!(e.proc_start.as_deref(), Some("9989"));
    assert_eq!(e.status.as_deref(), Some("idle"));
    assert_eq!(e.kind.as_deref(), Some("interactive"));
    assert_eq!(e.name.as_deref(), Some("proj1-b7"));
    assert_eq!(e.version.as_deref(), Some("2.1.332"));
    assert_eq!(e.started_at, Some(1_795_977_273_050));
    assert_eq!(e.updated_at, Some(1_795_977_273_110));
    assert!(e.extra.contains_key("messagingSocketPath"));
}

#[test]
fn files_deleted_mid_listing_are_simply_absent() {
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().to_path_buf();
    let dir = config.join("sessions");
    for pid in 1000..1400u32 {
        write_registry_entry(
            &config,
            &registry_entry(pid, &format!("s{pid}"), "/a", "1", None),
        );
    }
    let deleter = {
        let dir = dir.clone();
        std::thread::spawn(move || {
            for pid in (1000..1400u32).rev() {
                let _ = fs::remove_file(dir.join(format!("{pid}.json")));
            }
        })
    };
    // Listing races the deleter: every call must succeed.
    for _ in 0..50 {
        let entries = read_all(&dir).unwrap();
        assert!(entries.len() <= 400);
    }
    deleter.join().unwrap();
    assert!(read_all(&dir).unwrap().is_empty());
    assert!(read_all(&config.join("no-such-dir")).unwrap().is_empty());
}
