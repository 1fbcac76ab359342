use super::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const SID: &str = "0b5e1c2d-1111-4111-8111-000000000001";

struct Fixture {
    _dir: tempfile::TempDir,
    config: ClaudeConfigDir,
    root: PathBuf,
    transcript: PathBuf,
}

/// A conversation with a sidecar folder and file history; `lines` records
/// in the transcript.
fn fixture(lines: usize) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let config = ClaudeConfigDir::new(dir.path().join("claude"));
    let proj = config.projects_dir().join("-w-p");
    fs::create_dir_all(proj.join(SID).join("subagents")).unwrap();
    let mut text = String::new();
    for i in 0..lines {
        text.push_str(&format!(
            "{{\"type\":\"user\",\"cwd\":\"/w/p\",\"sessionId\":\"{SID}\",\"uuid\":\"u{i}\",\"message\":{{\"content\":\"line {i} {}\"}}}}\n",
            "x".repeat(i % 97)
        ));
    }
    let transcript = proj.join(format!("{SID}.jsonl"));
    fs::write(&transcript, &text).unwrap();
    fs::write(
        proj.join(SID).join("subagents/agent-a.jsonl"),
        "{\"a\":1}\n",
    )
    .unwrap();
    let fh = config.root().join("file-history").join(SID);
    fs::create_dir_all(&fh).unwrap();
    fs::write(fh.join("abc@v1"), "old content").unwrap();
    let root = dir.path().join("state/archive");
    Fixture {
        _dir: dir,
        config,
        root,
        transcript,
    }
}

fn dead() -> Option<String> {
    None
}

fn no_hook(_: &str) {}

fn snapshot(f: &Fixture) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = vec![];
    for p in members(&f.config, SID).unwrap() {
        let bytes = fs::read(&p).unwrap();
        out.push((p, bytes));
    }
    out
}

#[test]
fn archive_then_restore_is_byte_equal_and_leaves_nothing_behind() {
    let f = fixture(2000);
    let before = snapshot(&f);
    let m = archive(&f.config, &f.root, SID, &dead, false, &no_hook).unwrap();
    assert_eq!(m.files.len(), 3);
    assert_eq!(m.cwd.as_deref(), Some("/w/p"));
    assert!(m.stored_bytes < m.bytes(), "compressed: {m:?}");
    // Gone from Claude Code's folder, sidecars too.
    for (p, _) in &before {
        assert!(!p.exists(), "{} left behind", p.display());
    }
    assert!(!f.transcript.with_file_name(SID).exists());
    assert!(!f.config.root().join("file-history").join(SID).exists());
    // Readable where it is.
    assert_eq!(read_transcript(&f.root, SID).unwrap(), before[0].1);
    assert_eq!(list(&f.root).len(), 1);
    // Back, byte for byte, and the archive gone.
    restore(&f.root, SID).unwrap();
    assert_eq!(snapshot(&f), before);
    assert!(manifest(&f.root, SID).unwrap().is_none());
    assert!(fs::read_dir(&f.root).unwrap().next().is_none());
}

#[test]
fn a_live_session_is_never_archived_even_when_it_starts_during_the_move() {
    let f = fixture(10);
    let before = snapshot(&f);
    let e = archive(
        &f.config,
        &f.root,
        SID,
        &|| Some("pid 42".into()),
        false,
        &no_hook,
    );
    assert!(matches!(e, Err(ArchiveError::Live(..))), "{e:?}");
    // Dead at first, live by the time the originals would go.
    let calls = std::cell::Cell::new(0);
    let live = || {
        calls.set(calls.get() + 1);
        (calls.get() > 1).then(|| "started meanwhile".to_string())
    };
    let e = archive(&f.config, &f.root, SID, &live, false, &no_hook);
    assert!(matches!(e, Err(ArchiveError::Live(..))), "{e:?}");
    assert_eq!(snapshot(&f), before);
    assert!(list(&f.root).is_empty());
    assert!(
        fs::read_dir(&f.root).unwrap().next().is_none(),
        "no partial archive"
    );
}

#[test]
fn a_write_during_the_move_leaves_the_original_whole() {
    // Deterministic: an append at the point the copy is done.
    let f = fixture(100);
    let hook = |step: &str| {
        if step == "copied" {
            let mut t = fs::OpenOptions::new()
                .append(true)
                .open(&f.transcript)
                .unwrap();
            t.write_all(b"{\"type\":\"assistant\",\"late\":true}\n")
                .unwrap();
        }
    };
    let e = archive(&f.config, &f.root, SID, &dead, false, &hook);
    assert!(matches!(e, Err(ArchiveError::Changed(_))), "{e:?}");
    assert!(fs::read_to_string(&f.transcript)
        .unwrap()
        .ends_with("\"late\":true}\n"));
    assert!(
        fs::read_dir(&f.root).unwrap().next().is_none(),
        "no partial archive"
    );
    // A file added to the sidecar folder meanwhile counts as a write too.
    let side = f
        .transcript
        .with_file_name(SID)
        .join("subagents/agent-b.jsonl");
    let hook = |step: &str| {
        if step == "copied" {
            fs::write(&side, "{}\n").unwrap();
        }
    };
    let e = archive(&f.config, &f.root, SID, &dead, false, &hook);
    assert!(matches!(e, Err(ArchiveError::Changed(_))), "{e:?}");
    assert!(side.exists() && f.transcript.exists());
}

#[test]
fn a_racing_writer_never_loses_a_line() {
    // A writer appending as the CLI does (open, append, close) while
    // archive is tried again and again: every attempt is refused, or, if
    // one lands between two appends, the archive holds every line written
    // before and the writer's next line starts a new file. No line is lost.
    let f = fixture(5_000);
    let stop = Arc::new(AtomicBool::new(false));
    let path = f.transcript.clone();
    let s2 = stop.clone();
    let writer = std::thread::spawn(move || {
        let mut n = 0u64;
        while !s2.load(Ordering::Relaxed) {
            let mut t = fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(&path)
                .unwrap();
            t.write_all(format!("{{\"w\":{n}}}\n").as_bytes()).unwrap();
            n += 1;
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
        n
    });
    let mut refused = 0;
    let mut archived = 0;
    for _ in 0..5 {
        match archive(&f.config, &f.root, SID, &dead, false, &no_hook) {
            Err(ArchiveError::Changed(_)) => refused += 1,
            Ok(_) => {
                archived += 1;
                break;
            }
            Err(e) => panic!("{e}"),
        }
    }
    stop.store(true, Ordering::Relaxed);
    let written = writer.join().unwrap();
    assert!(
        refused > 0,
        "the writer was never caught ({archived} archived)"
    );
    // Every line the writer wrote is in the transcript or in the archive
    // (then followed by the rest in a new transcript).
    let mut all = if archived > 0 {
        read_transcript(&f.root, SID).unwrap()
    } else {
        vec![]
    };
    all.extend(fs::read(&f.transcript).unwrap_or_default());
    let text = String::from_utf8(all).unwrap();
    for n in 0..written {
        assert!(
            text.contains(&format!("{{\"w\":{n}}}\n")),
            "line {n} of {written} lost"
        );
    }
}

#[test]
fn bad_input_leaves_the_original_and_says_so() {
    let f = fixture(10);
    let e = archive(
        &f.config,
        &f.root,
        "no-such-session",
        &dead,
        false,
        &no_hook,
    );
    assert!(matches!(e, Err(ArchiveError::NotFound(..))), "{e:?}");
    // The archive folder cannot be made (a file is in the way).
    fs::create_dir_all(f.root.parent().unwrap()).unwrap();
    fs::write(&f.root, "not a folder").unwrap();
    let before = snapshot(&f);
    let e = archive(&f.config, &f.root, SID, &dead, false, &no_hook);
    let msg = e.unwrap_err().to_string();
    assert!(msg.contains("the original is left in place"), "{msg}");
    assert_eq!(snapshot(&f), before);
    fs::remove_file(&f.root).unwrap();
    // A restore over a transcript that is back is refused.
    archive(&f.config, &f.root, SID, &dead, false, &no_hook).unwrap();
    fs::write(&f.transcript, "new\n").unwrap();
    let e = restore(&f.root, SID);
    assert!(matches!(e, Err(ArchiveError::Exists(_))), "{e:?}");
    assert_eq!(fs::read(&f.transcript).unwrap(), b"new\n");
    assert!(manifest(&f.root, SID).unwrap().is_some());
}

#[test]
fn a_damaged_archive_is_refused_not_restored_short() {
    let f = fixture(500);
    let before = snapshot(&f);
    archive(&f.config, &f.root, SID, &dead, false, &no_hook).unwrap();
    let mut m = manifest(&f.root, SID).unwrap().unwrap();
    // The manifest claims more than the stored frame holds.
    m.files[0].len += 10;
    fs::write(
        f.root.join(SID).join("manifest.json"),
        serde_json::to_vec(&m).unwrap(),
    )
    .unwrap();
    let e = restore(&f.root, SID);
    assert!(matches!(e, Err(ArchiveError::Corrupt(..))), "{e:?}");
    assert!(!before[0].0.exists(), "nothing half-restored");
    assert!(fs::read_dir(before[0].0.parent().unwrap())
        .unwrap()
        .flatten()
        .all(|e| !e.file_name().to_string_lossy().contains("ccd-restoring")));
    // A manifest past its bound is not read.
    fs::write(
        f.root.join(SID).join("manifest.json"),
        vec![b' '; MAX_MANIFEST_BYTES as usize + 1],
    )
    .unwrap();
    assert!(matches!(
        manifest(&f.root, SID),
        Err(ArchiveError::Corrupt(..))
    ));
}

#[test]
fn past_the_bounds_nothing_is_written() {
    // MAX_FILES: one more file than allowed in the sidecar folder.
    let f = fixture(3);
    let many = f.transcript.with_file_name(SID).join("tool-results");
    fs::create_dir_all(&many).unwrap();
    for i in 0..MAX_FILES {
        fs::write(many.join(format!("{i}.txt")), "").unwrap();
    }
    let e = archive(&f.config, &f.root, SID, &dead, false, &no_hook);
    assert!(matches!(e, Err(ArchiveError::TooLarge { .. })), "{e:?}");
    assert!(f.transcript.exists() && !f.root.exists());
    fs::remove_dir_all(&many).unwrap();
    // MAX_BYTES: a sparse transcript one byte past it (no disk used).
    File::options()
        .write(true)
        .open(&f.transcript)
        .unwrap()
        .set_len(MAX_BYTES + 1)
        .unwrap();
    let e = archive(&f.config, &f.root, SID, &dead, false, &no_hook);
    assert!(matches!(e, Err(ArchiveError::TooLarge { .. })), "{e:?}");
    assert_eq!(fs::metadata(&f.transcript).unwrap().len(), MAX_BYTES + 1);
    assert!(!f.root.exists());
}

#[test]
fn auto_archives_only_past_the_margin_and_never_the_live() {
    let f = fixture(3);
    let old = |days: u64| SystemTime::now() - std::time::Duration::from_secs(days * 86_400);
    File::options()
        .write(true)
        .open(&f.transcript)
        .unwrap()
        .set_modified(old(26))
        .unwrap();
    // Live: kept where it is.
    let r = auto(
        &f.config,
        &f.root,
        &|_| Some("pid 1".into()),
        SystemTime::now(),
    );
    assert!(
        matches!(r.as_slice(), [(_, Err(ArchiveError::Live(..)))]),
        "{r:?}"
    );
    assert!(f.transcript.exists());
    // 24 days: inside the margin (30 - 5), kept.
    File::options()
        .write(true)
        .open(&f.transcript)
        .unwrap()
        .set_modified(old(24))
        .unwrap();
    assert!(auto(&f.config, &f.root, &|_| None, SystemTime::now()).is_empty());
    // A longer setting moves the horizon: 26 days is kept under 60.
    fs::write(
        f.config.root().join("settings.json"),
        r#"{"cleanupPeriodDays": 60}"#,
    )
    .unwrap();
    let later = SystemTime::now() + std::time::Duration::from_secs(2 * 86_400);
    assert!(auto(&f.config, &f.root, &|_| None, later).is_empty());
    // Past it (26 days with the default): archived.
    fs::remove_file(f.config.root().join("settings.json")).unwrap();
    let r = auto(&f.config, &f.root, &|_| None, later);
    assert!(matches!(r.as_slice(), [(s, Ok(_))] if s == SID), "{r:?}");
    assert!(!f.transcript.exists());
}
