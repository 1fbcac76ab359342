//! A bounded read of one transcript: what `ccd ls` and the index need.
//!
//! Transcripts reach hundreds of MB, so the file is never read whole: a head
//! window (for the original cwd, the first prompt, the creation time) and a
//! tail window (for the latest activity, model, usage and `last-prompt`).
//! Each window starts small and grows only while what it looks for is
//! missing, up to [`MAX_WINDOW`]. A partial line at a window's edge, or a
//! half-written last line, is ignored.

use super::record::Record;
use memchr::memmem;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::SystemTime;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// First size of the head window (the first prompt is near the top).
pub const FIRST_HEAD_WINDOW: u64 = 4 * 1024;
/// First size of the tail window (room for a typical last reply).
pub const FIRST_TAIL_WINDOW: u64 = 16 * 1024;
/// Files up to this size are read in one go.
pub const SMALL_FILE: u64 = FIRST_TAIL_WINDOW;
/// Largest a window grows to.
pub const MAX_WINDOW: u64 = 8 * 1024 * 1024;

/// What a bounded read of one transcript yields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TranscriptSummary {
    pub path: PathBuf,
    /// The file stem: the id `--resume` takes. (Records are not trusted for
    /// it: a fork's copied history carries the original id.)
    pub session_id: String,
    /// The `cwd` of the first record that has one.
    pub cwd: Option<String>,
    /// The first prompt a person typed, else the newest `last-prompt`.
    pub title: Option<String>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub created: Option<OffsetDateTime>,
    /// The newest record timestamp in the tail, else the file's mtime.
    #[serde(with = "time::serde::rfc3339::option")]
    pub last_activity: Option<OffsetDateTime>,
    /// The model of the last assistant record.
    pub model: Option<String>,
    /// Context in use after the last turn (the three input figures of the
    /// last assistant `message.usage`).
    pub context_tokens: Option<u64>,
    pub size: u64,
    /// The last line has no newline yet and does not parse.
    pub half_written_tail: bool,
    /// No record parsed in what was read (a 0-byte file, or nothing but
    /// a half-written line or garbage): not a session anyone can resume.
    #[serde(default)]
    pub empty: bool,
    /// How many bytes this read took from the file (bounded by the windows;
    /// 0 for a summary taken from the cache).
    #[serde(skip)]
    pub bytes_read: u64,
}

/// Reads the summary of the transcript at `path`.
pub fn read_summary(path: &Path) -> std::io::Result<TranscriptSummary> {
    read_summary_with(path, &mut Vec::new())
}

/// [`read_summary`] reusing `buf` for the reads (one per thread when
/// summarizing many files).
pub fn read_summary_with(path: &Path, buf: &mut Vec<u8>) -> std::io::Result<TranscriptSummary> {
    let file = File::open(path)?;
    let meta = file.metadata()?;
    let size = meta.len();
    let stem_id = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut s = TranscriptSummary {
        path: path.to_path_buf(),
        session_id: stem_id,
        cwd: None,
        title: None,
        created: None,
        last_activity: None,
        model: None,
        context_tokens: None,
        size,
        half_written_tail: false,
        empty: false,
        bytes_read: 0,
    };
    let (head, tail) = if size <= SMALL_FILE {
        // Small enough to read once and scan from both ends.
        read_at(&file, 0, size, buf)?;
        s.bytes_read = buf.len() as u64;
        let mut head = HeadFinds::default();
        scan_head(buf, true, &mut head);
        let mut tail = TailFinds::default();
        scan_tail(buf, true, &mut tail);
        (head, tail)
    } else {
        let mut window = FIRST_HEAD_WINDOW;
        let head = loop {
            let len = window.min(size);
            read_at(&file, 0, len, buf)?;
            s.bytes_read += buf.len() as u64;
            let mut head = HeadFinds::default();
            scan_head(buf, len == size, &mut head);
            if head.complete() || len == size || window >= MAX_WINDOW {
                break head;
            }
            window *= 4;
        };
        let mut window = FIRST_TAIL_WINDOW;
        let tail = loop {
            let len = window.min(size);
            read_at(&file, size - len, len, buf)?;
            s.bytes_read += buf.len() as u64;
            let mut tail = TailFinds::default();
            scan_tail(buf, len == size, &mut tail);
            if tail.complete() || len == size || window >= MAX_WINDOW {
                break tail;
            }
            window *= 4;
        };
        (head, tail)
    };
    s.cwd = head.cwd.or(tail.cwd);
    s.title = head.first_prompt.or(tail.last_prompt);
    s.created = head.first_timestamp;
    s.last_activity = tail
        .newest_timestamp
        .or_else(|| meta.modified().ok().map(to_datetime));
    s.model = tail.model;
    s.context_tokens = tail.context_tokens;
    s.half_written_tail = tail.half_written;
    s.empty = !head.any_record && !tail.any_record;
    Ok(s)
}

fn to_datetime(t: SystemTime) -> OffsetDateTime {
    OffsetDateTime::from(t)
}

/// Reads `len` bytes at `offset` into `buf` (replacing its contents; fewer
/// if the file shrank).
fn read_at(file: &File, offset: u64, len: u64, buf: &mut Vec<u8>) -> std::io::Result<()> {
    buf.resize(len as usize, 0);
    let mut filled = 0usize;
    while filled < buf.len() {
        #[cfg(unix)]
        let n =
            std::os::unix::fs::FileExt::read_at(file, &mut buf[filled..], offset + filled as u64)?;
        #[cfg(windows)]
        let n = std::os::windows::fs::FileExt::seek_read(
            file,
            &mut buf[filled..],
            offset + filled as u64,
        )?;
        if n == 0 {
            break; // the file shrank
        }
        filled += n;
    }
    buf.truncate(filled);
    Ok(())
}

#[derive(Default)]
struct HeadFinds {
    any_record: bool,
    cwd: Option<String>,
    first_prompt: Option<String>,
    first_timestamp: Option<OffsetDateTime>,
}

impl HeadFinds {
    fn complete(&self) -> bool {
        self.cwd.is_some() && self.first_prompt.is_some()
    }
}

/// Walks the head window forwards. When the window is not the whole file,
/// the last (possibly cut) line is left out.
fn scan_head(buf: &[u8], whole_file: bool, f: &mut HeadFinds) {
    let end = if whole_file {
        buf.len()
    } else {
        match memchr::memrchr(b'\n', buf) {
            Some(i) => i,
            None => return,
        }
    };
    for line in buf[..end].split(|&b| b == b'\n') {
        let Some(rec) = Record::parse(line) else {
            continue;
        };
        f.any_record = true;
        if f.cwd.is_none() {
            f.cwd = rec.cwd.clone();
        }
        if f.first_timestamp.is_none() {
            f.first_timestamp = rec.timestamp.as_deref().and_then(parse_time);
        }
        if f.first_prompt.is_none() {
            f.first_prompt = rec.human_prompt().map(|t| one_line(&t));
        }
        if f.complete() {
            return;
        }
    }
}

#[derive(Default)]
struct TailFinds {
    any_record: bool,
    cwd: Option<String>,
    newest_timestamp: Option<OffsetDateTime>,
    last_prompt: Option<String>,
    model: Option<String>,
    context_tokens: Option<u64>,
    assistant_seen: bool,
    half_written: bool,
}

impl TailFinds {
    /// The tail window stops growing once the last assistant record and a
    /// timestamp are found (`last-prompt` is optional: older CLIs lack it).
    fn complete(&self) -> bool {
        self.assistant_seen && self.newest_timestamp.is_some()
    }
}

/// Walks the tail window backwards. When the window is not the whole file,
/// its first (possibly cut) line is left out.
fn scan_tail(buf: &[u8], whole_file: bool, f: &mut TailFinds) {
    let start = if whole_file {
        0
    } else {
        match memchr::memchr(b'\n', buf) {
            Some(i) => i + 1,
            None => return,
        }
    };
    let body = &buf[start..];
    let assistant_marker = memmem::Finder::new(b"\"assistant\"");
    let mut lines = body.rsplit(|&b| b == b'\n');
    // The text after the last newline is the file's unfinished last line.
    if let Some(last) = lines.next() {
        if !last.is_empty() {
            match Record::parse(last) {
                Some(rec) => note_tail_record(&rec, f),
                None => f.half_written = true,
            }
        }
    }
    for line in lines {
        if f.complete() {
            break;
        }
        // With timestamp and last-prompt known, only assistant lines matter.
        let cheap_done = f.newest_timestamp.is_some() && f.last_prompt.is_some();
        if line.is_empty() || (cheap_done && assistant_marker.find(line).is_none()) {
            continue;
        }
        if let Some(rec) = Record::parse(line) {
            note_tail_record(&rec, f);
        }
    }
}

fn note_tail_record(rec: &Record<'_>, f: &mut TailFinds) {
    f.any_record = true;
    if f.cwd.is_none() {
        f.cwd = rec.cwd.clone();
    }
    if f.newest_timestamp.is_none() {
        f.newest_timestamp = rec.timestamp.as_deref().and_then(parse_time);
    }
    if f.last_prompt.is_none() && rec.is("last-prompt") {
        f.last_prompt = rec.last_prompt.as_deref().map(one_line);
    }
    if !f.assistant_seen && rec.is("assistant") {
        let Some(msg) = rec.message() else { return };
        if msg.model.as_deref() == Some("<synthetic>") {
            return;
        }
        if let Some(u) = msg.usage {
            f.assistant_seen = true;
            f.model = msg.model;
            f.context_tokens = Some(u.context_tokens());
        }
    }
}

fn parse_time(s: &str) -> Option<OffsetDateTime> {
    OffsetDateTime::parse(s, &Rfc3339).ok()
}

/// The first line of `text`, at most 200 characters.
fn one_line(text: &str) -> String {
    let first = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    match first.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &first[..i]),
        None => first.to_string(),
    }
}
