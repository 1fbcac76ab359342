//! A bounded read of one transcript: what `ccd ls` and the index need.
//!
//! Transcripts reach hundreds of MB, so the file is never read whole: the
//! head is walked forwards (for the original cwd, the first prompt, the
//! creation time) and the tail backwards (for the latest activity, model,
//! usage and `last-prompt`), [`CHUNK`] bytes at a time, each walk stopping
//! once it has what it looks for or has read [`MAX_SCAN`] bytes. A partial
//! line where a walk stops is ignored, and so is a half-written last line.
//!
//! Memory is bounded whatever the lines: one chunk and one line of at most
//! [`MAX_LINE`] bytes. A longer line (a tool result holding a whole file)
//! is stepped over without being held or parsed; what it would have said
//! is lost: its timestamp (when it is the newest record the last activity
//! is the file's mtime instead), its model and context figure when it is
//! an assistant record (those of the newest assistant record that fits are
//! shown), its prompt when it is the first one. Files up to [`SMALL_FILE`]
//! are read in one go.

use super::record::Record;
use memchr::memmem;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::SystemTime;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// Files up to this size are read in one go.
pub const SMALL_FILE: u64 = 16 * 1024;
/// Bytes read at a time by the head and tail walks.
pub const CHUNK: usize = 64 * 1024;
/// The longest line parsed: a longer one is stepped over, never held.
pub const MAX_LINE: usize = 1024 * 1024;
/// The most bytes one walk (head or tail) reads.
pub const MAX_SCAN: u64 = 16 * 1024 * 1024;

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
        let mut line = Vec::new();
        let mut head = HeadFinds::default();
        s.bytes_read += walk_forward(&file, size, buf, &mut line, |l| {
            if let Some(l) = l {
                note_head_line(l, &mut head);
            }
            head.complete()
        })?;
        let mut tail = TailFinds::default();
        s.bytes_read += walk_backward(&file, size, buf, &mut line, |l, last| {
            note_tail_line(l, last, &mut tail);
            tail.complete()
        })?;
        (head, tail)
    };
    s.cwd = head.cwd.or(tail.cwd);
    s.title = head.first_prompt.or(tail.last_prompt);
    s.created = head.first_timestamp;
    let mtime = || meta.modified().ok().map(to_datetime);
    s.last_activity = if tail.newest_skipped {
        mtime()
    } else {
        tail.newest_timestamp.or_else(mtime)
    };
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

/// Reads the chunk at `offset` (at most [`CHUNK`] bytes, fewer at `end`)
/// into `buf`; returns how many bytes were read.
fn read_chunk(file: &File, offset: u64, end: u64, buf: &mut Vec<u8>) -> std::io::Result<u64> {
    let len = (end.saturating_sub(offset)).min(CHUNK as u64);
    read_at(file, offset, len, buf)?;
    Ok(buf.len() as u64)
}

/// The line at `start..end` of the file: a slice of `chunk` (which holds
/// the bytes from `chunk_at`) when it lies inside it, else read into
/// `line`; `None` when it is longer than [`MAX_LINE`] (nothing is read).
/// Adds what it reads to `read`.
fn line_at<'b>(
    file: &File,
    start: u64,
    end: u64,
    chunk: &'b [u8],
    chunk_at: u64,
    line: &'b mut Vec<u8>,
    read: &mut u64,
) -> std::io::Result<Option<&'b [u8]>> {
    let len = end - start;
    if len > MAX_LINE as u64 {
        return Ok(None);
    }
    let chunk_end = chunk_at + chunk.len() as u64;
    if start >= chunk_at && end <= chunk_end {
        let a = (start - chunk_at) as usize;
        return Ok(Some(&chunk[a..a + len as usize]));
    }
    // Capacity never above MAX_LINE: no doubling past the bound.
    if line.capacity() < len as usize {
        line.clear();
        line.reserve_exact(len as usize);
    }
    read_at(file, start, len, line)?;
    *read += line.len() as u64;
    Ok(Some(&line[..]))
}

/// Walks the file's lines from the start, handing each to `f` (`None` for
/// one over [`MAX_LINE`]) until `f` says it has enough, the end (the last
/// line is handed over even without a newline) or [`MAX_SCAN`] bytes read
/// (the line cut there is left out). Returns the bytes read.
fn walk_forward(
    file: &File,
    size: u64,
    chunk: &mut Vec<u8>,
    line: &mut Vec<u8>,
    mut f: impl FnMut(Option<&[u8]>) -> bool,
) -> std::io::Result<u64> {
    let mut read = 0u64;
    let mut pos = 0u64;
    let mut line_start = 0u64;
    while pos < size && read < MAX_SCAN {
        let n = read_chunk(file, pos, size, chunk)?;
        if n == 0 {
            break; // the file shrank
        }
        read += n;
        for i in memchr::memchr_iter(b'\n', chunk) {
            let nl = pos + i as u64;
            let l = line_at(file, line_start, nl, chunk, pos, line, &mut read)?;
            if f(l) {
                return Ok(read);
            }
            line_start = nl + 1;
        }
        pos += n;
    }
    if pos >= size && line_start < pos {
        let l = line_at(
            file,
            line_start,
            pos,
            chunk,
            pos - chunk.len() as u64,
            line,
            &mut read,
        )?;
        f(l);
    }
    Ok(read)
}

/// Walks the file's lines from the end, newest first, handing each to `f`
/// (`None` for one over [`MAX_LINE`]; `true` with the text after the last
/// newline, the file's unfinished last line, however empty) until `f` says
/// it has enough, the start, or [`MAX_SCAN`] bytes read (the line cut
/// there is left out). Returns the bytes read.
fn walk_backward(
    file: &File,
    size: u64,
    chunk: &mut Vec<u8>,
    line: &mut Vec<u8>,
    mut f: impl FnMut(Option<&[u8]>, bool) -> bool,
) -> std::io::Result<u64> {
    let mut read = 0u64;
    let mut pos = size;
    let mut line_end = size;
    let mut last = true;
    while pos > 0 && read < MAX_SCAN {
        let at = pos.saturating_sub(CHUNK as u64);
        let n = read_chunk(file, at, pos, chunk)?;
        read += n;
        if n < pos - at {
            // The file shrank under the read: what is left is not a line.
            return Ok(read);
        }
        for i in memchr::memrchr_iter(b'\n', chunk) {
            let nl = at + i as u64;
            let l = line_at(file, nl + 1, line_end, chunk, at, line, &mut read)?;
            if f(l, last) {
                return Ok(read);
            }
            last = false;
            line_end = nl;
        }
        pos = at;
    }
    if pos == 0 && line_end > 0 {
        let l = line_at(file, 0, line_end, chunk, 0, line, &mut read)?;
        f(l, last);
    }
    Ok(read)
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
        note_head_line(line, f);
        if f.complete() {
            return;
        }
    }
}

fn note_head_line(line: &[u8], f: &mut HeadFinds) {
    let Some(rec) = Record::parse(line) else {
        return;
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
    /// A line over [`MAX_LINE`] came before any timestamp: the newest
    /// record's time is unknown (the file's mtime stands for it).
    newest_skipped: bool,
}

impl TailFinds {
    /// The tail window stops growing once the last assistant record and a
    /// timestamp are found (`last-prompt` is optional: older CLIs lack it).
    fn complete(&self) -> bool {
        self.assistant_seen && self.has_time()
    }

    /// The newest record's time is known, or known to be the mtime's.
    fn has_time(&self) -> bool {
        self.newest_timestamp.is_some() || self.newest_skipped
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
    // The text after the last newline is the file's unfinished last line.
    for (i, line) in body.rsplit(|&b| b == b'\n').enumerate() {
        if note_tail_line(Some(line), i == 0, f) {
            break;
        }
    }
}

/// One line of the tail, newest first (`last`: the text after the last
/// newline; `None`: a line over [`MAX_LINE`], stepped over). True once
/// the tail has what it looks for.
fn note_tail_line(line: Option<&[u8]>, last: bool, f: &mut TailFinds) -> bool {
    let Some(line) = line else {
        // Its timestamp is unknown: if it is the newest record, the file's
        // mtime says when it was written.
        if f.newest_timestamp.is_none() {
            f.newest_skipped = true;
        }
        return f.complete();
    };
    if last {
        if !line.is_empty() {
            match Record::parse(line) {
                Some(rec) => note_tail_record(&rec, f),
                None => f.half_written = true,
            }
        }
        return f.complete();
    }
    // With timestamp and last-prompt known, only assistant lines matter.
    let cheap_done = f.has_time() && f.last_prompt.is_some();
    if line.is_empty() || (cheap_done && memmem::find(line, b"\"assistant\"").is_none()) {
        return f.complete();
    }
    if let Some(rec) = Record::parse(line) {
        note_tail_record(&rec, f);
    }
    f.complete()
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
