//! Reading a transcript's complete lines, and later only what was appended.
//!
//! Shared by search (issue 55) and every other reader that follows a
//! transcript's growth (issue 56). Two pieces:
//!
//! - [`ReadMark`]: what was read of one file — its identity (inode), the
//!   length seen and the offset just past the last *complete* line. With
//!   the file's stamp now, [`ReadMark::plan`] says where to read from: at
//!   the mark when the same file only grew, from the start when it was
//!   replaced or shrank (a trim rewrites it: a new inode, or a shorter
//!   length), nothing when it is unchanged.
//! - [`Lines`]: sans-IO splitting of bytes into complete lines with their
//!   offsets. A half-written last line is kept back until its newline
//!   arrives (it is never handed out, and the mark stays before it). A line
//!   longer than its bound ([`MAX_RECORD_BYTES`] by default) is skipped
//!   whole and counted: memory stays within the bound whatever a file holds.
//!
//! [`read_appended`] is the IO edge: it reads a file from its mark in
//! [`CHUNK_BYTES`] chunks through [`Lines`].

use ccd_claude::transcript::summary_cache::FileStamp;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// The longest record (one line) read; longer ones are skipped whole and
/// counted in [`Lines::oversized`]. The real CLI's records are bounded by
/// what it sends the API (a pasted image or a large tool result is a few
/// MB); 32 MiB leaves room and bounds a reader's memory.
pub const MAX_RECORD_BYTES: usize = 32 << 20;

/// How much [`read_appended`] reads at a time.
pub const CHUNK_BYTES: usize = 1 << 20;

/// What was read of one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadMark {
    /// The file's inode (0 where the platform has none).
    pub ino: u64,
    /// The file's length when it was last read.
    pub len: u64,
    /// Just past the last complete line read: where the next read starts.
    pub offset: u64,
}

/// Where to read a file from, given its mark and its stamp now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadPlan {
    /// Nothing new.
    Unchanged,
    /// The same file grew: read from this offset on.
    From(u64),
    /// Another file, or a shorter one (trimmed, rewritten): everything read
    /// before is stale; read from the start.
    Restart,
}

impl ReadMark {
    /// Where to read from now that the file's stamp is `now`.
    pub fn plan(&self, now: &FileStamp) -> ReadPlan {
        if now.ino != self.ino || now.size < self.offset || now.size < self.len {
            ReadPlan::Restart
        } else if now.size == self.len {
            ReadPlan::Unchanged
        } else {
            ReadPlan::From(self.offset)
        }
    }
}

/// Splits bytes into complete lines (sans-IO). Feed chunks in file order
/// with [`Lines::push`]; each complete line is handed out once, with the
/// file offset of its first byte, without its `\n`.
#[derive(Debug)]
pub struct Lines {
    /// The partial line held back (empty while skipping one).
    buf: Vec<u8>,
    /// The file offset of the current (incomplete) line's first byte.
    line_start: u64,
    /// The file offset of the next byte pushed.
    next: u64,
    skipping: bool,
    max: usize,
    oversized: u64,
}

impl Lines {
    /// Lines of a file read from `start` (a line boundary), each at most
    /// `max` bytes.
    pub fn new(start: u64, max: usize) -> Self {
        Self {
            buf: Vec::new(),
            line_start: start,
            next: start,
            skipping: false,
            max,
            oversized: 0,
        }
    }

    /// Feeds the next bytes; `f(offset, line)` is called for each line
    /// completed by them.
    pub fn push(&mut self, chunk: &[u8], mut f: impl FnMut(u64, &[u8])) {
        let base = self.next;
        self.next += chunk.len() as u64;
        let mut pos = 0;
        while pos < chunk.len() {
            let Some(i) = memchr::memchr(b'\n', &chunk[pos..]) else {
                let rest = &chunk[pos..];
                if !self.skipping {
                    if self.buf.len() + rest.len() > self.max {
                        self.start_skipping();
                    } else {
                        self.buf.extend_from_slice(rest);
                    }
                }
                return;
            };
            let end = pos + i;
            let piece = &chunk[pos..end];
            if self.skipping {
                self.skipping = false;
            } else if self.buf.is_empty() {
                if piece.len() > self.max {
                    self.oversized += 1;
                } else {
                    f(self.line_start, piece);
                }
            } else if self.buf.len() + piece.len() > self.max {
                self.oversized += 1;
                self.buf.clear();
            } else {
                self.buf.extend_from_slice(piece);
                f(self.line_start, &self.buf);
                self.buf.clear();
            }
            self.line_start = base + end as u64 + 1;
            pos = end + 1;
        }
    }

    fn start_skipping(&mut self) {
        self.skipping = true;
        self.oversized += 1;
        self.buf = Vec::new();
    }

    /// Just past the last complete line: where a later read resumes (the
    /// held-back partial line is read again then, whole).
    pub fn complete_upto(&self) -> u64 {
        self.line_start
    }

    /// Lines skipped because they were longer than the bound (one still
    /// being skipped included).
    pub fn oversized(&self) -> u64 {
        self.oversized
    }
}

/// What one [`read_appended`] call did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadOutcome {
    /// The mark to pass next time.
    pub mark: ReadMark,
    /// True when the file was read from the start although a mark was
    /// given (it was replaced or shrank): what was taken from it before is
    /// stale.
    pub restarted: bool,
    /// Lines skipped for their length.
    pub oversized: u64,
    /// Bytes read.
    pub bytes: u64,
}

/// Reads `path`'s complete lines after `mark` (all of them without one),
/// calling `on_line(offset, line)` for each, with at most `max_record`
/// bytes a line held in memory. `buf` is a reusable read buffer.
pub fn read_appended(
    path: &Path,
    mark: Option<&ReadMark>,
    max_record: usize,
    buf: &mut Vec<u8>,
    mut on_line: impl FnMut(u64, &[u8]),
) -> std::io::Result<ReadOutcome> {
    let mut file = std::fs::File::open(path)?;
    let stamp = FileStamp::of(&file.metadata()?);
    let (start, restarted) = match mark.map(|m| m.plan(&stamp)) {
        None => (0, false),
        Some(ReadPlan::Restart) => (0, true),
        Some(ReadPlan::Unchanged) => {
            let m = mark.copied().unwrap_or(ReadMark {
                ino: stamp.ino,
                len: stamp.size,
                offset: 0,
            });
            return Ok(ReadOutcome {
                mark: m,
                restarted: false,
                oversized: 0,
                bytes: 0,
            });
        }
        Some(ReadPlan::From(off)) => (off, false),
    };
    if start > 0 {
        file.seek(SeekFrom::Start(start))?;
    }
    let mut lines = Lines::new(start, max_record);
    buf.resize(CHUNK_BYTES, 0);
    let mut end = start;
    loop {
        let n = match file.read(buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        end += n as u64;
        lines.push(&buf[..n], &mut on_line);
    }
    Ok(ReadOutcome {
        mark: ReadMark {
            ino: stamp.ino,
            len: end,
            offset: lines.complete_upto(),
        },
        restarted,
        oversized: lines.oversized(),
        bytes: end - start,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(chunks: &[&[u8]], max: usize) -> (Vec<(u64, Vec<u8>)>, u64, u64) {
        let mut l = Lines::new(0, max);
        let mut out = Vec::new();
        for c in chunks {
            l.push(c, |o, line| out.push((o, line.to_vec())));
        }
        (out, l.complete_upto(), l.oversized())
    }

    #[test]
    fn lines_across_chunks_and_half_written_tail() {
        let (out, upto, _) = split(&[b"ab", b"c\nde\nf", b"g\nhalf"], 100);
        assert_eq!(
            out,
            vec![
                (0, b"abc".to_vec()),
                (4, b"de".to_vec()),
                (7, b"fg".to_vec())
            ]
        );
        // The half-written "half" is not handed out; a later read resumes
        // at its start.
        assert_eq!(upto, 10);
    }

    #[test]
    fn an_oversized_line_is_skipped_whole_and_counted() {
        // In one chunk, and spread over several.
        let (out, upto, n) = split(&[b"0123456789\nok\n"], 5);
        assert_eq!(out, vec![(11, b"ok".to_vec())]);
        assert_eq!((upto, n), (14, 1));
        let (out, upto, n) = split(&[b"012", b"345", b"678", b"9\nok\n"], 5);
        assert_eq!(out, vec![(11, b"ok".to_vec())]);
        assert_eq!((upto, n), (14, 1));
        // Exactly the bound passes.
        let (out, _, n) = split(&[b"01234\n"], 5);
        assert_eq!((out.len(), n), (1, 0));
    }

    #[test]
    fn plan_follows_growth_and_notices_replacement() {
        let m = ReadMark {
            ino: 7,
            len: 100,
            offset: 90,
        };
        let st = |ino, size| FileStamp {
            size,
            mtime_ns: 0,
            ino,
        };
        assert_eq!(m.plan(&st(7, 100)), ReadPlan::Unchanged);
        assert_eq!(m.plan(&st(7, 150)), ReadPlan::From(90));
        assert_eq!(m.plan(&st(8, 150)), ReadPlan::Restart);
        assert_eq!(m.plan(&st(7, 95)), ReadPlan::Restart);
    }

    #[test]
    fn read_appended_reads_only_new_complete_lines() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.jsonl");
        std::fs::write(&p, b"one\ntwo\nhal").unwrap();
        let mut buf = Vec::new();
        let mut seen = Vec::new();
        let r = read_appended(&p, None, 100, &mut buf, |o, l| seen.push((o, l.to_vec()))).unwrap();
        assert_eq!(seen, vec![(0, b"one".to_vec()), (4, b"two".to_vec())]);
        assert_eq!((r.mark.offset, r.mark.len), (8, 11));
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        std::io::Write::write_all(&mut f, b"f\nthree\n").unwrap();
        seen.clear();
        let r2 = read_appended(&p, Some(&r.mark), 100, &mut buf, |o, l| {
            seen.push((o, l.to_vec()))
        })
        .unwrap();
        assert_eq!(seen, vec![(8, b"half".to_vec()), (13, b"three".to_vec())]);
        assert_eq!(r2.bytes, 11);
        assert!(!r2.restarted);
        // Rewritten shorter (a trim): read again from the start.
        std::fs::write(&p, b"x\n").unwrap();
        seen.clear();
        let r3 = read_appended(&p, Some(&r2.mark), 100, &mut buf, |o, l| {
            seen.push((o, l.to_vec()))
        })
        .unwrap();
        assert!(r3.restarted);
        assert_eq!(seen, vec![(0, b"x".to_vec())]);
    }
}
