//! Line framing: one JSON message per `\n`-terminated line, UTF-8.
//!
//! Two readers share the same rules, so the daemon (which receives byte
//! chunks from an async socket) and a blocking client (which holds a
//! [`BufRead`]) see the same lines:
//!
//! - a line is the bytes before a `\n`; one trailing `\r` is dropped, so
//!   `\r\n` works too;
//! - empty lines are skipped (handy when typing into `socat` by hand);
//! - a line longer than the limit (default [`MAX_LINE_BYTES`]) yields exactly
//!   one [`FrameError::LineTooLong`]; its bytes are dropped as they arrive, so
//!   memory stays bounded by the limit, and decoding resumes cleanly at the
//!   next line;
//! - a line that is not UTF-8 yields [`FrameError::InvalidUtf8`] for that line
//!   only.
//!
//! The writer side is [`encode`]: compact JSON plus `\n`. Compact `serde_json`
//! output never holds a raw newline (newlines inside strings are escaped), so
//! one message is always exactly one line.

use std::io::{self, BufRead};

use serde::Serialize;
use thiserror::Error;

use crate::error_code::ErrorCode;
use crate::jsonrpc::RpcError;

/// The largest line (excluding its `\n`) either side sends or accepts: 1 MiB.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// Why one line could not be delivered. The connection stays usable after
/// every variant except [`FrameError::Io`].
#[derive(Debug, Error)]
pub enum FrameError {
    /// The line held `len` bytes (excluding `\n`), more than the limit. It was
    /// discarded; the next line decodes normally.
    #[error("line of {len} bytes exceeds the limit")]
    LineTooLong {
        /// Total length of the discarded line, in bytes, excluding `\n`.
        len: usize,
    },
    /// The line is not valid UTF-8. It was discarded.
    #[error("line is not valid UTF-8 (first bad byte at offset {valid_up_to})")]
    InvalidUtf8 {
        /// Offset of the first byte that is not valid UTF-8.
        valid_up_to: usize,
    },
    /// Reading from the underlying stream failed ([`read_line_bounded`] only).
    #[error("i/o error: {0}")]
    Io(#[from] io::Error),
}

impl FrameError {
    /// The JSON-RPC error to send back for this line (with a `null` id, since
    /// the message could not be read). `None` for [`FrameError::Io`], which
    /// ends the connection instead.
    pub fn to_rpc_error(&self) -> Option<RpcError> {
        match self {
            FrameError::LineTooLong { len } => Some(
                RpcError::new(
                    ErrorCode::LineTooLong,
                    format!("line of {len} bytes exceeds the limit of {MAX_LINE_BYTES} bytes"),
                )
                .with_data(serde_json::json!({ "len": len, "max": MAX_LINE_BYTES })),
            ),
            FrameError::InvalidUtf8 { valid_up_to } => Some(RpcError::new(
                ErrorCode::ParseError,
                format!("line is not valid UTF-8 (first bad byte at offset {valid_up_to})"),
            )),
            FrameError::Io(_) => None,
        }
    }
}

/// One decoded line, or the reason it was dropped.
pub type LineResult = Result<String, FrameError>;

/// Incremental line decoder over arbitrary byte chunks.
///
/// Feed it whatever the socket returned with [`push`](LineDecoder::push);
/// it returns every line completed by that chunk, in order. Memory held is at
/// most the limit: once a line grows past it, its bytes are counted and
/// dropped until the next `\n`.
#[derive(Debug)]
pub struct LineDecoder {
    max: usize,
    buf: Vec<u8>,
    /// `Some(n)`: inside an over-long line, `n` bytes of it seen so far.
    discarding: Option<usize>,
}

impl Default for LineDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl LineDecoder {
    /// A decoder with the protocol limit, [`MAX_LINE_BYTES`].
    pub fn new() -> Self {
        Self::with_max(MAX_LINE_BYTES)
    }

    /// A decoder with a custom limit (bytes per line, excluding `\n`).
    pub fn with_max(max: usize) -> Self {
        Self {
            max,
            buf: Vec::new(),
            discarding: None,
        }
    }

    /// The limit this decoder enforces.
    pub fn max(&self) -> usize {
        self.max
    }

    /// Bytes of the current, unfinished line that are held (0 while
    /// discarding an over-long line).
    pub fn pending_len(&self) -> usize {
        self.buf.len()
    }

    /// True while the decoder is dropping the rest of an over-long line.
    pub fn is_discarding(&self) -> bool {
        self.discarding.is_some()
    }

    /// Feed a chunk; returns the lines it completed, in order.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<LineResult> {
        let mut out = Vec::new();
        self.push_into(chunk, &mut out);
        out
    }

    /// Like [`push`](Self::push), appending to `out` (no allocation per call).
    pub fn push_into(&mut self, chunk: &[u8], out: &mut Vec<LineResult>) {
        self.push_with(chunk, |line| match line {
            Ok(bytes) => out.extend(finish_line(bytes.to_vec())),
            Err(e) => out.push(Err(e)),
        });
    }

    /// The framing itself: calls `on_line` with each line `chunk` completes
    /// (raw bytes, without the `\n`; no UTF-8 check, no `\r` stripping) or
    /// with the reason one was dropped. For callers that pass lines on
    /// without decoding them.
    pub fn push_with(&mut self, chunk: &[u8], mut on_line: impl FnMut(Result<&[u8], FrameError>)) {
        let mut rest = chunk;
        while !rest.is_empty() {
            match memchr::memchr(b'\n', rest) {
                Some(i) => {
                    let part = &rest[..i];
                    rest = &rest[i + 1..];
                    if let Some(seen) = self.discarding.take() {
                        on_line(Err(FrameError::LineTooLong {
                            len: seen + part.len(),
                        }));
                    } else if self.buf.len() + part.len() > self.max {
                        let len = self.buf.len() + part.len();
                        self.reset_buf();
                        on_line(Err(FrameError::LineTooLong { len }));
                    } else if self.buf.is_empty() {
                        on_line(Ok(part));
                    } else {
                        self.buf.extend_from_slice(part);
                        on_line(Ok(&self.buf));
                        self.reset_buf();
                    }
                }
                None => {
                    if let Some(seen) = self.discarding.as_mut() {
                        *seen += rest.len();
                    } else if self.buf.len() + rest.len() > self.max {
                        self.discarding = Some(self.buf.len() + rest.len());
                        self.reset_buf();
                    } else {
                        self.buf.extend_from_slice(rest);
                    }
                    break;
                }
            }
        }
    }

    /// End of stream: returns the unterminated last line, if any (an
    /// over-long one as [`FrameError::LineTooLong`]), and resets the decoder.
    pub fn finish(&mut self) -> Option<LineResult> {
        if let Some(seen) = self.discarding.take() {
            self.reset_buf();
            return Some(Err(FrameError::LineTooLong { len: seen }));
        }
        let line = std::mem::take(&mut self.buf);
        finish_line(line)
    }

    fn reset_buf(&mut self) {
        // Drop the allocation too: an attacker's near-limit line should not
        // pin a megabyte per idle connection.
        self.buf = Vec::new();
    }
}

/// Strip one trailing `\r`, skip empty lines, check UTF-8.
fn finish_line(mut line: Vec<u8>) -> Option<LineResult> {
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    if line.is_empty() {
        return None;
    }
    Some(
        String::from_utf8(line).map_err(|e| FrameError::InvalidUtf8 {
            valid_up_to: e.utf8_error().valid_up_to(),
        }),
    )
}

/// Read one line from a [`BufRead`] into `buf` (cleared first), holding at
/// most `max` bytes in memory.
///
/// Returns `Ok(None)` at end of stream, `Ok(Some(line))` for a line (without
/// `\n` or a trailing `\r`; empty lines are skipped). An over-long line is
/// consumed up to and including its `\n` and reported as
/// [`FrameError::LineTooLong`]; an invalid UTF-8 line as
/// [`FrameError::InvalidUtf8`]: in both cases the next call reads the next
/// line. An unterminated last line before end of stream counts as a line.
pub fn read_line_bounded<'a, R: BufRead + ?Sized>(
    reader: &mut R,
    max: usize,
    buf: &'a mut Vec<u8>,
) -> Result<Option<&'a str>, FrameError> {
    if !read_line_bytes(reader, max, buf)? {
        return Ok(None);
    }
    match std::str::from_utf8(buf) {
        Ok(s) => Ok(Some(s)),
        Err(e) => Err(FrameError::InvalidUtf8 {
            valid_up_to: e.valid_up_to(),
        }),
    }
}

/// [`read_line_bounded`] without the UTF-8 check, for a caller whose
/// decoder checks the strings it reads anyway: `Ok(true)` when `buf` holds
/// the next line, `Ok(false)` at end of stream. An I/O error (a read
/// timeout) mid-line loses the part read so far: a reader with timeouts
/// uses [`read_line_resumable`].
pub fn read_line_bytes<R: BufRead + ?Sized>(
    reader: &mut R,
    max: usize,
    buf: &mut Vec<u8>,
) -> Result<bool, FrameError> {
    let mut line = PartialLine {
        buf: std::mem::take(buf),
        ..PartialLine::default()
    };
    line.buf.clear();
    let r = read_line_resumable(reader, max, &mut line);
    *buf = line.buf;
    r
}

/// A line being read by [`read_line_resumable`]: what was read of it so
/// far survives an I/O error (a read timeout), so the next call goes on
/// with the same line instead of starting in its middle.
#[derive(Debug, Default)]
pub struct PartialLine {
    buf: Vec<u8>,
    /// Bytes of the line seen so far (over-long ones are not kept).
    total: usize,
    too_long: bool,
    /// The last call ended the line (the next one starts a new line).
    complete: bool,
}

impl PartialLine {
    /// The line the last `Ok(true)` of [`read_line_resumable`] gave.
    pub fn line(&self) -> &[u8] {
        &self.buf
    }

    /// While a line over the limit is being read (its end not come yet):
    /// how many bytes of it came so far.
    pub fn over_limit(&self) -> Option<usize> {
        (self.too_long && !self.complete).then_some(self.total)
    }
}

/// Where the first `\n` in `bytes` is: what a blocking client looks for
/// in what it read ([`read_line_resumable`], and whether a line is
/// buffered). On x86_64 through SSE2, which every x86_64 CPU has:
/// `memchr::memchr` first asks the CPU whether it has AVX2
/// (`is_x86_feature_detected!`, about ten CPUID instructions, each a trap
/// to the hypervisor on a VM: ~30 µs measured, once per process), which a
/// one-call client like `ccd search` paid for one short line.
pub fn find_newline(bytes: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    if let Some(sse2) = memchr::arch::x86_64::sse2::memchr::One::new(b'\n') {
        return sse2.find(bytes);
    }
    memchr::memchr(b'\n', bytes)
}

/// [`read_line_bytes`] that can be called again after an I/O error: the
/// part of the line read before the error stays in `line` and the next
/// call continues it. `Ok(true)`: [`PartialLine::line`] is the next line.
pub fn read_line_resumable<R: BufRead + ?Sized>(
    reader: &mut R,
    max: usize,
    line: &mut PartialLine,
) -> Result<bool, FrameError> {
    if line.complete {
        line.buf.clear();
        line.total = 0;
        line.too_long = false;
        line.complete = false;
    }
    loop {
        let avail = match reader.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(FrameError::Io(e)),
        };
        let eof = avail.is_empty();
        let (part_len, found) = match find_newline(avail) {
            Some(i) => (i, true),
            None => (avail.len(), false),
        };
        line.total += part_len;
        if !line.too_long {
            if line.total > max {
                line.too_long = true;
                line.buf = Vec::new();
            } else {
                line.buf.extend_from_slice(&avail[..part_len]);
            }
        }
        reader.consume(part_len + usize::from(found));

        if !(found || eof) {
            continue;
        }
        if line.too_long {
            line.complete = true;
            return Err(FrameError::LineTooLong { len: line.total });
        }
        if line.buf.last() == Some(&b'\r') {
            line.buf.pop();
        }
        if line.buf.is_empty() {
            if eof {
                line.complete = true;
                return Ok(false);
            }
            // Blank line: skip it.
            line.total = 0;
            continue;
        }
        line.complete = true;
        return Ok(true);
    }
}

/// Serialize `msg` as one compact JSON line, `\n` included.
///
/// Fails only if `msg`'s `Serialize` impl fails (e.g. a map with non-string
/// keys); none of this crate's types do.
pub fn encode<T: Serialize + ?Sized>(msg: &T) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(128);
    encode_into(msg, &mut out)?;
    Ok(out)
}

/// Append `msg` as one compact JSON line (with `\n`) to `out`. On error
/// `out` is left as it was.
pub fn encode_into<T: Serialize + ?Sized>(msg: &T, out: &mut Vec<u8>) -> serde_json::Result<()> {
    let start = out.len();
    if let Err(e) = serde_json::to_writer(&mut *out, msg) {
        out.truncate(start);
        return Err(e);
    }
    debug_assert!(
        !out[start..].contains(&b'\n'),
        "compact JSON never contains a raw newline"
    );
    out.push(b'\n');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_newline_finds_the_first_one_at_every_place() {
        for len in [0usize, 1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 200, 4096] {
            let mut bytes = vec![b'x'; len];
            assert_eq!(find_newline(&bytes), None, "len {len}");
            for at in [0, len / 3, len.saturating_sub(1)] {
                if at >= len {
                    continue;
                }
                bytes[at] = b'\n';
                if at + 1 < len {
                    bytes[len - 1] = b'\n';
                }
                assert_eq!(find_newline(&bytes), Some(at), "len {len} at {at}");
                // From every start: what memchr says.
                for start in 0..len.min(70) {
                    assert_eq!(
                        find_newline(&bytes[start..]),
                        memchr::memchr(b'\n', &bytes[start..]),
                        "len {len} start {start}"
                    );
                }
                bytes.fill(b'x');
            }
        }
    }

    fn lines(items: Vec<LineResult>) -> Vec<String> {
        items
            .into_iter()
            .map(|r| match r {
                Ok(s) => s,
                Err(e) => format!("ERR {e}"),
            })
            .collect()
    }

    /// A reader giving its chunks, then `TimedOut` once they are used up.
    struct Chunks(std::collections::VecDeque<Vec<u8>>);

    impl io::Read for Chunks {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            match self.0.pop_front() {
                Some(c) => {
                    buf[..c.len()].copy_from_slice(&c);
                    Ok(c.len())
                }
                None => Err(io::ErrorKind::TimedOut.into()),
            }
        }
    }

    /// A read that times out in the middle of a line over the limit says
    /// how much of it came ([`PartialLine::over_limit`]); the line's end
    /// then gives its whole length, and the next line is read normally.
    #[test]
    fn a_timeout_inside_an_over_long_line_says_it_is_over_the_limit() {
        let chunks = [b"0123456789".to_vec(), b"abcdef".to_vec()];
        let mut r = io::BufReader::with_capacity(16, Chunks(chunks.into_iter().collect()));
        let mut line = PartialLine::default();
        assert!(matches!(
            read_line_resumable(&mut r, 8, &mut line),
            Err(FrameError::Io(e)) if e.kind() == io::ErrorKind::TimedOut
        ));
        assert_eq!(line.over_limit(), Some(16));
        r.get_mut().0.push_back(b"gh\nok\n".to_vec());
        assert!(matches!(
            read_line_resumable(&mut r, 8, &mut line),
            Err(FrameError::LineTooLong { len: 18 })
        ));
        assert_eq!(line.over_limit(), None);
        assert!(read_line_resumable(&mut r, 8, &mut line).unwrap());
        assert_eq!(line.line(), b"ok");
        assert_eq!(line.over_limit(), None);
    }

    #[test]
    fn splits_lines_and_skips_blank_and_cr() {
        let mut d = LineDecoder::new();
        let out = d.push(b"a\r\n\nb\nc");
        assert_eq!(lines(out), vec!["a", "b"]);
        assert_eq!(d.pending_len(), 1);
        assert_eq!(lines(d.push(b"d\n")), vec!["cd"]);
        assert!(d.finish().is_none());
    }

    #[test]
    fn limit_is_inclusive() {
        let mut d = LineDecoder::with_max(3);
        let out = d.push(b"abc\nabcd\nx\n");
        assert_eq!(out.len(), 3);
        assert_eq!(out[0].as_ref().ok().map(String::as_str), Some("abc"));
        assert!(matches!(out[1], Err(FrameError::LineTooLong { len: 4 })));
        assert_eq!(out[2].as_ref().ok().map(String::as_str), Some("x"));
    }

    #[test]
    fn finish_returns_unterminated_line() {
        let mut d = LineDecoder::new();
        assert!(d.push(b"{\"a\":1}").is_empty());
        assert_eq!(
            d.finish().and_then(|r| r.ok()).as_deref(),
            Some("{\"a\":1}")
        );
        let mut d = LineDecoder::with_max(2);
        assert!(d.push(b"abcdef").is_empty());
        assert!(d.is_discarding());
        assert!(matches!(
            d.finish(),
            Some(Err(FrameError::LineTooLong { len: 6 }))
        ));
        assert!(!d.is_discarding());
    }

    #[test]
    fn encode_appends_newline_and_escapes() {
        let v = serde_json::json!({"s": "a\nb"});
        let out = encode(&v).expect("encodes");
        assert_eq!(out, b"{\"s\":\"a\\nb\"}\n");
        let mut buf = b"x\n".to_vec();
        encode_into(&v, &mut buf).expect("encodes");
        assert_eq!(buf.iter().filter(|&&b| b == b'\n').count(), 2);
    }
}
