//! `transcript_parser`: transcript lines, rendering, the background-work
//! scan and the bounded summary read.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use ccd_claude::transcript::background;
use ccd_claude::transcript::record::Record;
use ccd_claude::transcript::render::{MAX_TEXT_CHARS, MAX_TOOL_CHARS};
use ccd_claude::transcript::summary::SMALL_FILE;
use ccd_claude::transcript::{read_summary, render_line, render_record};

/// Bytes in: a transcript (JSON lines).
///
/// Property: no panic in the record parser, its accessors, the renderer or
/// the background scan; every rendered item is one clean line of bounded
/// length and [`render_line`] respects its width; the summary of the bytes
/// written to a file reports the file's size and stem, and reads a small
/// file exactly once; [`background::pending`] on that file agrees with
/// [`background::scan`] on the bytes, and so does a
/// [`background::Scanner`] fed them in pieces (cut where the bytes say),
/// and a [`background::Tracker`] that looked at the file's first part
/// before the rest was appended. The bytes are also written twice
/// around a filler, so the summary's windowed path (files over
/// [`SMALL_FILE`]) sees them at both ends.
pub fn transcript_parser(data: &[u8]) {
    for line in data.split(|&b| b == b'\n') {
        record(line);
    }
    let scanned = background::scan(data);
    for id in scanned.shells.iter().chain(&scanned.subagents) {
        assert!(!id.is_empty(), "pending work with an empty id");
    }
    assert_eq!(
        scanned.any(),
        !(scanned.shells.is_empty() && scanned.subagents.is_empty() && scanned.untracked == 0)
    );
    // The same answer however the bytes are cut.
    let cut = data.first().map_or(0, |&b| b as usize * data.len() / 256);
    let mut pieces = background::Scanner::default();
    for piece in [&data[..cut / 2], &data[cut / 2..cut], &data[cut..]] {
        pieces.feed(piece);
    }
    assert_eq!(pieces.pending(), scanned, "scanned in pieces cut at {cut}");

    // Fresh files each time (rewriting one in place makes some file systems
    // flush on close, which costs milliseconds per run).
    let path = temp_file("small");
    std::fs::write(&path, data).expect("write the transcript");
    summary(&path, data.len(), true);
    assert_eq!(
        background::pending(&path).expect("read the transcript"),
        scanned,
        "pending() on the file differs from scan() on its bytes"
    );
    // A tracker that saw the first part, then the whole.
    let grown = temp_file("grown");
    std::fs::write(&grown, &data[..cut]).expect("write the transcript");
    let mut tracker = background::Tracker::default();
    assert_eq!(
        tracker.look(&grown).expect("read the transcript"),
        background::scan(&data[..cut])
    );
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&grown)
            .expect("open the transcript");
        f.write_all(&data[cut..]).expect("append to the transcript");
    }
    assert_eq!(
        tracker.look(&grown).expect("read the transcript"),
        scanned,
        "a tracker across an append differs from scan() on the bytes"
    );
    let _ = std::fs::remove_file(&grown);

    if !data.is_empty() {
        let filler_len = SMALL_FILE as usize + 1;
        let mut big = Vec::with_capacity(2 * data.len() + filler_len + 2);
        big.extend_from_slice(data);
        big.push(b'\n');
        big.resize(big.len() + filler_len - 1, b' ');
        big.push(b'\n');
        big.extend_from_slice(data);
        let big_path = temp_file("big");
        std::fs::write(&big_path, &big).expect("write the transcript");
        summary(&big_path, big.len(), false);
        let _ = std::fs::remove_file(&big_path);
    }
    let _ = std::fs::remove_file(&path);
}

fn record(line: &[u8]) {
    if let Some(rec) = Record::parse(line) {
        let _ = rec.is("user");
        if let Some(prompt) = rec.human_prompt() {
            assert!(!prompt.is_empty());
            assert_eq!(prompt.trim(), prompt, "a prompt is trimmed");
        }
        if let Some(msg) = rec.message() {
            if let Some(usage) = msg.usage {
                let total = usage.context_tokens();
                assert!(total >= usage.input_tokens);
            }
            let _ = msg.model;
            let _ = msg.content.map(|c| c.get().len());
        }
    }
    for item in render_record(line) {
        let chars = item.text.chars().count();
        // Text: at most MAX_TEXT_CHARS; a tool call: a name of at most 60
        // chars around its argument; a result may gain `error: `.
        let bound = MAX_TEXT_CHARS.max(60 + 2 + MAX_TOOL_CHARS) + "error: ".len();
        assert!(chars <= bound, "rendered text of {chars} chars: {item:?}");
        assert!(
            !item.text.chars().any(char::is_control),
            "rendered text holds a control character: {item:?}"
        );
        for width in [0, 1, 2, 5, 80] {
            let shown = render_line(&item, width);
            assert!(
                shown.chars().count() <= width,
                "render_line({width}) gave {} chars",
                shown.chars().count()
            );
        }
        serde_json::to_vec(&item).expect("a rendered item serializes");
    }
}

fn summary(path: &Path, len: usize, small: bool) {
    let s = read_summary(path).expect("read the summary");
    assert_eq!(s.size, len as u64);
    assert_eq!(
        Some(s.session_id.as_str()),
        path.file_stem().and_then(|s| s.to_str())
    );
    if small {
        assert_eq!(s.bytes_read, len as u64, "a small file is read once, whole");
    }
    if let Some(title) = &s.title {
        assert!(!title.is_empty());
    }
    // Timestamps out of RFC 3339's range may refuse to serialize; never panic.
    let _ = serde_json::to_vec(&s);
}

/// A file of this thread's own in this process's own temporary folder.
fn temp_file(name: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SLOT: usize = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    let slot = SLOT.with(|s| *s);
    temp_dir().join(format!("{name}-{slot}.jsonl"))
}

/// This process's folder: in `/dev/shm` (memory, no journal: several
/// times faster per run) where there is one and `TMPDIR` is not set, else in
/// the temporary folder.
fn dir_path() -> PathBuf {
    let shm = Path::new("/dev/shm");
    let base = if std::env::var_os("TMPDIR").is_none() && shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    base.join(format!("ccd-fuzz-targets.{}", std::process::id()))
}

fn temp_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = dir_path();
        std::fs::create_dir_all(&dir).expect("create the temporary folder");
        dir
    })
}

/// Remove this process's temporary folder (the corpus test calls it when
/// done; a fuzzer process leaves one empty folder behind).
pub fn remove_temp_dir() {
    let _ = std::fs::remove_dir_all(dir_path());
}
