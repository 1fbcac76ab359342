//! Terminal output for attached and observing clients.
//!
//! Encoding (see "Terminal streams" in `docs/protocol.md`):
//!
//! - Output travels as `session.output` notifications, each carrying a whole
//!   chunk as read from the PTY (coalesced, at most [`MAX_OUTPUT_CHUNK`]
//!   bytes), base64-encoded: never one message per byte. 64 KiB of output
//!   becomes one ~87 KiB line; base64 characters need no JSON escaping, so
//!   encoding is a straight copy.
//! - `seq` is the byte offset of the chunk's first byte in the session's
//!   output stream. A client expects `seq == previous seq + previous length`;
//!   anything else means bytes were dropped ([`SeqTracker`]).
//! - The daemon never blocks on a slow client: when a client's queue
//!   overflows, its queued output is dropped and it gets a `session.resync`
//!   instead: a full redraw of the screen from the screen model (terminal
//!   modes included), after which output resumes at the resync's `seq`.
//!   A resync is also the first thing sent after `session.attach`.
//! - `session.exited` ends the stream when the `claude` process exits.

use serde::{Deserialize, Serialize};

use crate::jsonrpc::{Notification, RpcError};
use crate::methods::{NotificationKind, TermSize};

/// The most output bytes one `session.output` notification carries.
/// Base64 of it is ~87 KiB, far below [`crate::MAX_LINE_BYTES`].
pub const MAX_OUTPUT_CHUNK: usize = 64 * 1024;

/// `session.output`: a chunk of terminal output.
pub struct SessionOutput;

impl NotificationKind for SessionOutput {
    const NAME: &'static str = "session.output";
    type Params = OutputChunk;
}

/// `session.resync`: a full redraw, replacing whatever the client showed.
pub struct SessionResync;

impl NotificationKind for SessionResync {
    const NAME: &'static str = "session.resync";
    type Params = Resync;
}

/// `session.transcript`: new conversation items of a session observed
/// through its transcript (a session running outside ccd).
pub struct SessionTranscript;

impl NotificationKind for SessionTranscript {
    const NAME: &'static str = "session.transcript";
    type Params = TranscriptItems;
}

/// Params of `session.transcript`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TranscriptItems {
    /// Full session id.
    pub session: String,
    /// Items in transcript order.
    pub items: Vec<TranscriptItem>,
}

/// One readable line of a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TranscriptItem {
    /// `user`, `assistant`, `tool`, `tool_result` or `system`.
    pub kind: String,
    /// One line of text (already cut to a few hundred characters).
    pub text: String,
    /// RFC 3339, when the record has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

/// `session.exited`: the session's process ended; the attachment is over.
pub struct SessionExited;

impl NotificationKind for SessionExited {
    const NAME: &'static str = "session.exited";
    type Params = Exited;
}

/// Params of `session.output`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputChunk {
    /// Full session id.
    pub session: String,
    /// Offset of `data[0]` in the session's output stream, in bytes.
    pub seq: u64,
    /// Raw terminal bytes (base64 on the wire). May split a UTF-8 character
    /// or an escape sequence: feed it to a terminal or parser as a stream.
    #[serde(with = "crate::b64")]
    pub data: Vec<u8>,
}

impl OutputChunk {
    /// A chunk.
    pub fn new(session: impl Into<String>, seq: u64, data: impl Into<Vec<u8>>) -> Self {
        Self {
            session: session.into(),
            seq,
            data: data.into(),
        }
    }

    /// Offset just past this chunk: the `seq` the next chunk should carry.
    pub fn end_seq(&self) -> u64 {
        self.seq.saturating_add(self.data.len() as u64)
    }

    /// As a [`Notification`] value.
    pub fn to_notification(&self) -> serde_json::Result<Notification> {
        Notification::typed::<SessionOutput>(self)
    }

    /// Read a `session.output` notification's params.
    pub fn from_notification(n: &Notification) -> Result<Self, RpcError> {
        n.params_as()
    }

    /// The whole framed line (`{"jsonrpc":"2.0","method":"session.output",
    /// "params":{...}}\n`), encoded straight from the bytes.
    pub fn encode_line(&self) -> Vec<u8> {
        encode_output_line(&self.session, self.seq, &self.data)
    }

    /// Split `data` (starting at stream offset `seq`) into chunks of at
    /// most `max` bytes (`max` 0 is taken as [`MAX_OUTPUT_CHUNK`]).
    pub fn split(session: &str, seq: u64, data: &[u8], max: usize) -> Vec<OutputChunk> {
        let max = if max == 0 { MAX_OUTPUT_CHUNK } else { max };
        let mut off = seq;
        data.chunks(max)
            .map(|c| {
                let chunk = OutputChunk::new(session, off, c);
                off += c.len() as u64;
                chunk
            })
            .collect()
    }
}

/// Encode one `session.output` line (with `\n`) from borrowed parts: what
/// the daemon's per-client writer calls for each coalesced PTY read.
/// Callers keep `data` at most [`MAX_OUTPUT_CHUNK`] bytes.
pub fn encode_output_line(session: &str, seq: u64, data: &[u8]) -> Vec<u8> {
    // Written by hand: the base64 goes straight into the line, where serde
    // would build a String and then scan every character of it for escapes
    // (base64 has none). Same bytes as serializing the notification.
    let b64_len = data.len().div_ceil(3) * 4;
    let mut out = Vec::with_capacity(96 + session.len() + b64_len);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","method":"session.output","params":{"session":"#);
    // A string into a Vec: serializing cannot fail.
    let _ = serde_json::to_writer(&mut out, session);
    out.extend_from_slice(br#","seq":"#);
    out.extend_from_slice(seq.to_string().as_bytes());
    out.extend_from_slice(br#","data":""#);
    crate::b64::encode_append(data, &mut out);
    out.extend_from_slice(b"\"}}\n");
    out
}

/// A `session.output` or `session.resync` line seen without building a
/// JSON tree: the method and the base64 `data`, borrowed from the line.
/// What a terminal client needs per chunk; anything else (or a line whose
/// strings carry escapes) is `None`, for the general decoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamLineRef<'a> {
    /// True for `session.resync` (a full redraw), false for output.
    pub resync: bool,
    /// The session the line belongs to.
    pub session: &'a str,
    /// Base64 of the bytes.
    pub data: &'a str,
    /// The stream offset: of the chunk's first byte (output), or the one
    /// the redraw stands for (resync). `None` when the line has none.
    pub seq: Option<u64>,
}

impl<'a> StreamLineRef<'a> {
    /// Reads a line's bytes; serde_json checks the UTF-8 of the strings
    /// it borrows, so the line needs no check of its own.
    pub fn parse(line: &'a [u8]) -> Option<Self> {
        #[derive(Deserialize)]
        struct Line<'a> {
            #[serde(borrow)]
            method: &'a str,
            #[serde(borrow)]
            params: Params<'a>,
        }
        #[derive(Deserialize)]
        struct Params<'a> {
            #[serde(borrow)]
            session: &'a str,
            #[serde(borrow)]
            data: &'a str,
            #[serde(default)]
            seq: Option<u64>,
        }
        let l: Line<'a> = serde_json::from_slice(line).ok()?;
        let resync = match l.method {
            SessionOutput::NAME => false,
            SessionResync::NAME => true,
            _ => return None,
        };
        Some(Self {
            resync,
            session: l.params.session,
            data: l.params.data,
            seq: l.params.seq,
        })
    }

    /// Decodes the data into `out` (appended); false if it is not base64.
    pub fn decode_into(&self, out: &mut Vec<u8>) -> bool {
        crate::b64::decode_into(self.data, out).is_ok()
    }
}

/// What a terminal client writes before a `session.resync`'s data
/// (cursor home, clear the screen).
pub const RESYNC_PREFIX: &[u8] = b"\x1b[H\x1b[2J";

/// Why the daemon sent a full redraw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResyncReason {
    /// First message after `session.attach`.
    Attach,
    /// This client fell behind; its queued output was dropped.
    Overflow,
    /// The session was resized.
    Resize,
    /// A reason this client does not know.
    #[serde(other)]
    Other,
}

/// Params of `session.resync`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resync {
    /// Full session id.
    pub session: String,
    /// Stream offset the redraw corresponds to: the next `session.output`
    /// starts here.
    pub seq: u64,
    /// Screen size of the redraw.
    pub size: TermSize,
    /// Why it was sent.
    pub reason: ResyncReason,
    /// Bytes that, written to a terminal in any state, reproduce the screen:
    /// reset, terminal modes (bracketed paste, focus events, keyboard
    /// protocol...), contents with attributes, cursor. Base64 on the wire.
    #[serde(with = "crate::b64")]
    pub data: Vec<u8>,
}

/// Params of `session.exited`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exited {
    /// Full session id.
    pub session: String,
    /// Exit status, if it exited normally.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Signal number, if killed by a signal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
}

/// What a client makes of the next `seq` it receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeqCheck {
    /// The chunk continues the stream.
    InOrder,
    /// Bytes `expected..got` were dropped; wait for the `session.resync`
    /// that the daemon sends after an overflow.
    Gap {
        /// The offset that was expected.
        expected: u64,
        /// The offset received.
        got: u64,
    },
    /// The chunk starts before the expected offset (already seen).
    Overlap {
        /// The offset that was expected.
        expected: u64,
        /// The offset received.
        got: u64,
    },
}

/// Client-side continuity check for one session's stream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SeqTracker {
    expected: Option<u64>,
}

impl SeqTracker {
    /// A tracker that accepts whatever comes first.
    pub fn new() -> Self {
        Self::default()
    }

    /// The offset the next chunk should carry, once known.
    pub fn expected(&self) -> Option<u64> {
        self.expected
    }

    /// A resync sets the stream position.
    pub fn on_resync(&mut self, resync: &Resync) {
        self.expected = Some(resync.seq);
    }

    /// Check a chunk and advance past it.
    pub fn on_output(&mut self, chunk: &OutputChunk) -> SeqCheck {
        let got = chunk.seq;
        let check = match self.expected {
            None => SeqCheck::InOrder,
            Some(e) if e == got => SeqCheck::InOrder,
            Some(e) if got > e => SeqCheck::Gap { expected: e, got },
            Some(e) => SeqCheck::Overlap { expected: e, got },
        };
        self.expected = Some(chunk.end_seq());
        check
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_line_matches_serde_encoding() {
        let c = OutputChunk::new("s1", 5, b"\x1b[1mhi\r\n".to_vec());
        let fast = c.encode_line();
        let slow =
            crate::framing::encode(&c.to_notification().expect("notification")).expect("encodes");
        // Same message (key order differs: `Value` maps are sorted).
        let a: serde_json::Value = serde_json::from_slice(&fast).expect("json");
        let b: serde_json::Value = serde_json::from_slice(&slow).expect("json");
        assert_eq!(a, b);
        assert_eq!(fast.last(), Some(&b'\n'));
        let back = crate::parse_incoming(std::str::from_utf8(&fast).expect("utf8"));
        match back {
            Ok(crate::Incoming::Notification(n)) => {
                assert_eq!(OutputChunk::from_notification(&n), Ok(c));
            }
            other => panic!("not a notification: {other:?}"),
        }
    }

    #[test]
    fn tracker() {
        let mut t = SeqTracker::new();
        assert_eq!(
            t.on_output(&OutputChunk::new("s", 10, vec![0; 5])),
            SeqCheck::InOrder
        );
        assert_eq!(
            t.on_output(&OutputChunk::new("s", 15, vec![0; 5])),
            SeqCheck::InOrder
        );
        assert_eq!(
            t.on_output(&OutputChunk::new("s", 30, vec![0; 1])),
            SeqCheck::Gap {
                expected: 20,
                got: 30
            }
        );
        t.on_resync(&Resync {
            session: "s".into(),
            seq: 100,
            size: TermSize { cols: 80, rows: 24 },
            reason: ResyncReason::Overflow,
            data: vec![],
        });
        assert_eq!(t.expected(), Some(100));
        assert_eq!(
            t.on_output(&OutputChunk::new("s", 90, vec![0; 1])),
            SeqCheck::Overlap {
                expected: 100,
                got: 90
            }
        );
    }

    #[test]
    fn split_respects_max_and_offsets() {
        let data: Vec<u8> = (0..200u8).collect();
        let chunks = OutputChunk::split("s", 1000, &data, 64);
        assert_eq!(chunks.len(), 4);
        assert_eq!(chunks[1].seq, 1064);
        assert_eq!(chunks[3].data.len(), 8);
        assert_eq!(chunks[3].end_seq(), 1200);
        let joined: Vec<u8> = chunks.iter().flat_map(|c| c.data.clone()).collect();
        assert_eq!(joined, data);
    }

    #[test]
    fn an_output_line_is_the_serialized_notification() {
        for (session, seq, data) in [
            ("s1", 0u64, &b""[..]),
            ("ff0beea3", u64::MAX, &b"\x00\xff\x1b[0m\"\\\n"[..]),
            ("we\"ird\\", 7, &[1u8, 2][..]),
        ] {
            let line = encode_output_line(session, seq, data);
            assert_eq!(line.last(), Some(&b'\n'));
            let got: serde_json::Value = serde_json::from_slice(&line).unwrap();
            let want = serde_json::json!({"jsonrpc": "2.0", "method": "session.output",
                "params": {"session": session, "seq": seq, "data": crate::b64::encode(data)}});
            assert_eq!(got, want);
            let compact = serde_json::to_vec(&Notification::new(
                SessionOutput::NAME,
                Some(serde_json::to_value(OutputChunk::new(session, seq, data)).unwrap()),
            ))
            .unwrap();
            assert_eq!(line.len(), compact.len() + 1, "no whitespace");
        }
    }

    #[test]
    fn stream_lines_are_read_borrowed_and_others_left_to_the_general_decoder() {
        let line = encode_output_line("s1", 7, b"hi\x1b[0m");
        let l = StreamLineRef::parse(line.trim_ascii_end()).unwrap();
        assert!(!l.resync);
        assert_eq!(l.session, "s1");
        let mut out = b"x".to_vec();
        assert!(l.decode_into(&mut out));
        assert_eq!(out, b"xhi\x1b[0m");
        let resync = r#"{"jsonrpc":"2.0","method":"session.resync","params":{"session":"s1","seq":0,"size":{"cols":2,"rows":1},"data":"aGk="}}"#;
        assert!(StreamLineRef::parse(resync.as_bytes()).unwrap().resync);
        for other in [
            r#"{"jsonrpc":"2.0","method":"session.exited","params":{"session":"s1"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","method":"session.output","params":{"session":"s\u0031","data":"aGk="}}"#,
            "not json",
        ] {
            assert_eq!(StreamLineRef::parse(other.as_bytes()), None, "{other}");
        }
        // Not UTF-8 inside a string: refused, not borrowed unchecked.
        let mut bad_utf8 =
            br#"{"jsonrpc":"2.0","method":"session.output","params":{"session":"s"#.to_vec();
        bad_utf8.extend_from_slice(b"\xff\",\"data\":\"aGk=\"}}");
        assert_eq!(StreamLineRef::parse(&bad_utf8), None);
        let bad = StreamLineRef::parse(
            br#"{"jsonrpc":"2.0","method":"session.output","params":{"session":"s","data":"!!"}}"#,
        )
        .unwrap();
        assert!(!bad.decode_into(&mut Vec::new()));
    }
}
