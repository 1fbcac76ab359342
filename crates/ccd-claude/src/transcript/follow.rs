//! Following a growing transcript, for `ccd observe`.
//!
//! A transcript is appended one record (one line) at a time and can reach
//! hundreds of MB, so the file is never read whole. [`Follower::open`] reads
//! a tail window that starts at [`FIRST_WINDOW`] and grows ×4 up to
//! [`MAX_WINDOW`] until it holds enough rendered items; [`Follower::poll`]
//! then reads what was appended since, at most [`POLL_CHUNK`] per call.
//!
//! The last line may be half-written: it is kept aside until its newline
//! arrives, then rendered exactly once. A file that shrinks or is replaced
//! by another (a new inode on Unix) is followed again from its new end,
//! with a [`RenderedKind::System`] notice.

use super::render::{render_record, Rendered, RenderedKind};
use memchr::{memchr, memrchr};
use std::collections::VecDeque;
use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// First size of the tail window [`Follower::open`] reads.
pub const FIRST_WINDOW: u64 = 64 * 1024;
/// Largest the tail window grows to.
pub const MAX_WINDOW: u64 = 8 * 1024 * 1024;
/// Most bytes one [`Follower::poll`] reads.
pub const POLL_CHUNK: u64 = 1024 * 1024;
/// Longest unfinished line kept aside; a longer one is dropped (its end is
/// skipped up to the next newline) rather than held in memory.
pub const MAX_PENDING: usize = 64 * 1024 * 1024;

/// The text of the notice [`Follower::poll`] returns when the file shrank
/// or was replaced.
pub const TRUNCATED_NOTICE: &str = "transcript was truncated or replaced";

/// Which file a handle is, to notice a replacement (also the background
/// scan's tracker's, [`super::background::Tracker`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Identity {
    #[cfg(unix)]
    dev: u64,
    #[cfg(unix)]
    ino: u64,
}

impl Identity {
    #[cfg(unix)]
    pub(crate) fn of(meta: &fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        Identity {
            dev: meta.dev(),
            ino: meta.ino(),
        }
    }

    #[cfg(not(unix))]
    pub(crate) fn of(_meta: &fs::Metadata) -> Self {
        Identity {}
    }
}

/// Follows one transcript file: where it stopped, and the unfinished line.
#[derive(Debug)]
pub struct Follower {
    path: PathBuf,
    file: File,
    identity: Identity,
    /// File offset up to which bytes were read (the pending ones included).
    offset: u64,
    /// The bytes of an unfinished last line, read but not rendered yet.
    pending: Vec<u8>,
    /// Skip everything up to the next newline (positioned inside a line).
    discard_partial: bool,
    /// The file size last seen.
    seen_size: u64,
    bytes_read: u64,
}

/// Where a tail read leaves a follower.
struct Tail {
    items: Vec<Rendered>,
    /// End of the last complete line in the window (or where to resume).
    end: u64,
    /// `end` is inside a line: skip to the next newline first.
    discard_partial: bool,
}

impl Follower {
    /// Opens the transcript at `path` and returns the last `last_messages`
    /// rendered items, with a follower positioned at the end of the last
    /// complete line (a half-written last line is rendered by a later
    /// [`poll`](Self::poll) once finished).
    ///
    /// Reads a tail window only: [`FIRST_WINDOW`] growing ×4 up to
    /// [`MAX_WINDOW`] while fewer than `last_messages` items are found and
    /// the start of the file is not reached. So fewer items than asked come
    /// back when the file has fewer, or when they lie further back.
    pub fn open(path: &Path, last_messages: usize) -> io::Result<(Follower, Vec<Rendered>)> {
        let file = File::open(path)?;
        let meta = file.metadata()?;
        let mut bytes_read = 0;
        let tail = read_tail(&file, meta.len(), last_messages, &mut bytes_read)?;
        let follower = Follower {
            path: path.to_path_buf(),
            file,
            identity: Identity::of(&meta),
            offset: tail.end,
            pending: Vec::new(),
            discard_partial: tail.discard_partial,
            seen_size: meta.len(),
            bytes_read,
        };
        Ok((follower, tail.items))
    }

    /// Reads what was appended since the last call (at most [`POLL_CHUNK`]
    /// bytes; see [`is_behind`](Self::is_behind)) and returns the items of
    /// every line completed by it, in order. An unfinished last line is
    /// kept until its newline arrives.
    ///
    /// When the file shrank below what was read, or the path now names
    /// another file, following restarts at the end of the new file and the
    /// only item returned is a [`RenderedKind::System`] notice
    /// ([`TRUNCATED_NOTICE`]). A missing file yields nothing (it may be
    /// replaced in a moment). A file that is truncated and then grows past
    /// the old offset between two calls, in place, goes unnoticed.
    pub fn poll(&mut self) -> io::Result<Vec<Rendered>> {
        let meta = match fs::metadata(&self.path) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        if Identity::of(&meta) != self.identity || meta.len() < self.offset {
            return self.restart();
        }
        let size = meta.len();
        self.seen_size = size;
        if size == self.offset {
            return Ok(Vec::new());
        }
        let len = (size - self.offset).min(POLL_CHUNK);
        let chunk = read_range(&self.file, self.offset, len)?;
        self.bytes_read += chunk.len() as u64;
        self.offset += chunk.len() as u64;
        Ok(self.consume(&chunk))
    }

    /// Whether the last [`poll`](Self::poll) (or [`open`](Self::open)) left
    /// bytes unread that were already in the file: poll again at once.
    pub fn is_behind(&self) -> bool {
        self.seen_size > self.offset
    }

    /// How many bytes this follower has read from files so far, the tail
    /// window of [`open`](Self::open) included.
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read
    }

    /// The file offset read up to (an unfinished last line included).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The followed path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Starts over at the end of whatever the path names now.
    fn restart(&mut self) -> io::Result<Vec<Rendered>> {
        let file = File::open(&self.path)?;
        let meta = file.metadata()?;
        let tail = read_tail(&file, meta.len(), 0, &mut self.bytes_read)?;
        self.file = file;
        self.identity = Identity::of(&meta);
        self.offset = tail.end;
        self.pending.clear();
        self.discard_partial = tail.discard_partial;
        self.seen_size = meta.len();
        Ok(vec![Rendered {
            kind: RenderedKind::System,
            text: TRUNCATED_NOTICE.to_string(),
            timestamp: None,
        }])
    }

    /// Adds freshly read bytes and renders the lines they complete.
    fn consume(&mut self, mut data: &[u8]) -> Vec<Rendered> {
        let mut out = Vec::new();
        if self.discard_partial {
            match memchr(b'\n', data) {
                Some(i) => {
                    data = &data[i + 1..];
                    self.discard_partial = false;
                }
                None => return out,
            }
        }
        let Some(last) = memrchr(b'\n', data) else {
            self.keep_pending(data);
            return out;
        };
        let (complete, rest) = data.split_at(last + 1);
        let mut lines = complete[..last].split(|b| *b == b'\n');
        if !self.pending.is_empty() {
            if let Some(first) = lines.next() {
                let mut line = std::mem::take(&mut self.pending);
                line.extend_from_slice(first);
                render_into(&line, &mut out);
            }
        }
        for line in lines {
            render_into(line, &mut out);
        }
        self.keep_pending(rest);
        out
    }

    fn keep_pending(&mut self, data: &[u8]) {
        if self.pending.len() + data.len() > MAX_PENDING {
            self.pending = Vec::new();
            self.discard_partial = true;
        } else {
            self.pending.extend_from_slice(data);
        }
    }
}

/// Renders one complete line (without its newline) into `out`.
fn render_into(line: &[u8], out: &mut Vec<Rendered>) {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    out.extend(render_record(line));
}

/// Reads a growing tail window of a file of `size` bytes until it holds
/// `last_messages` items and a line end, or reaches the start of the file,
/// or [`MAX_WINDOW`]. Each growth reads only the bytes not read yet.
fn read_tail(
    file: &File,
    size: u64,
    last_messages: usize,
    bytes_read: &mut u64,
) -> io::Result<Tail> {
    let mut window = FIRST_WINDOW;
    let mut start = size;
    let mut buf: Vec<u8> = Vec::new();
    loop {
        let new_start = size - window.min(size);
        if new_start < start {
            let want = start - new_start;
            let mut chunk = read_range(file, new_start, want)?;
            *bytes_read += chunk.len() as u64;
            if (chunk.len() as u64) < want {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "transcript shrank while its tail was read",
                ));
            }
            chunk.extend_from_slice(&buf);
            buf = chunk;
            start = new_start;
        }
        let last_nl = memrchr(b'\n', &buf);
        let mut items: VecDeque<Rendered> = VecDeque::new();
        let mut found = 0usize;
        if let Some(last) = last_nl {
            // Unless the window starts the file, its first line is cut.
            let first = if start == 0 {
                0
            } else {
                memchr(b'\n', &buf).map_or(buf.len(), |i| i + 1)
            };
            if first <= last {
                let mut rendered = Vec::new();
                for line in buf[first..last].split(|b| *b == b'\n') {
                    rendered.clear();
                    render_into(line, &mut rendered);
                    for item in rendered.drain(..) {
                        found += 1;
                        if last_messages == 0 {
                            continue;
                        }
                        if items.len() == last_messages {
                            items.pop_front();
                        }
                        items.push_back(item);
                    }
                }
            }
        }
        let enough = last_nl.is_some() && found >= last_messages;
        if enough || start == 0 || window >= MAX_WINDOW {
            let (end, discard_partial) = match last_nl {
                Some(last) => (start + last as u64 + 1, false),
                // The whole file is one unfinished line: wait for its end.
                None if start == 0 => (0, false),
                // No line end in the largest window: resume past it, inside
                // a line, and skip to the next newline.
                None => (size, true),
            };
            return Ok(Tail {
                items: items.into(),
                end,
                discard_partial,
            });
        }
        window = (window * 4).min(MAX_WINDOW);
    }
}

/// Reads up to `len` bytes at `offset` (fewer if the file is shorter).
fn read_range(file: &File, offset: u64, len: u64) -> io::Result<Vec<u8>> {
    let mut f = file;
    f.seek(SeekFrom::Start(offset))?;
    let mut buf = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    f.take(len).read_to_end(&mut buf)?;
    Ok(buf)
}
