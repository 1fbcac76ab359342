//! `protocol_decoder`: the socket's line framing and message parsing.

use std::fmt::Debug;
use std::io::{self, BufRead, Read};

use ccd_protocol::methods::{
    attach, daemon, events, session, Empty, SessionRef, TermSize, MAX_COLS, MAX_ROWS,
};
use ccd_protocol::stream::{OutputChunk, Resync, TranscriptItems};
use ccd_protocol::{
    encode, handshake, parse_incoming, parse_params, read_line_bounded, ErrorCode, FrameError,
    Incoming, LineDecoder, MAX_LINE_BYTES,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::steer::{split, Steer};

/// What the framing makes of one line.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Framed {
    Line(String),
    TooLong(usize),
    InvalidUtf8(usize),
}

fn framed(r: Result<String, FrameError>) -> Framed {
    match r {
        Ok(s) => Framed::Line(s),
        Err(FrameError::LineTooLong { len }) => Framed::TooLong(len),
        Err(FrameError::InvalidUtf8 { valid_up_to }) => Framed::InvalidUtf8(valid_up_to),
        Err(FrameError::Io(e)) => panic!("i/o error from an in-memory stream: {e}"),
    }
}

/// The framing rules of `ccd_protocol::framing`, one whole line at a time:
/// the reference both decoders must agree with, whatever the chunking.
fn reference(stream: &[u8], max: usize) -> Vec<Framed> {
    let mut out = Vec::new();
    let mut segments: Vec<&[u8]> = stream.split(|&b| b == b'\n').collect();
    // The bytes after the last `\n` (maybe none) are the unterminated tail,
    // delivered at end of stream like any line.
    let tail = segments.pop().unwrap_or_default();
    for seg in segments.into_iter().chain(std::iter::once(tail)) {
        if seg.len() > max {
            out.push(Framed::TooLong(seg.len()));
            continue;
        }
        let line = seg.strip_suffix(b"\r").unwrap_or(seg);
        if line.is_empty() {
            continue;
        }
        out.push(match std::str::from_utf8(line) {
            Ok(s) => Framed::Line(s.to_owned()),
            Err(e) => Framed::InvalidUtf8(e.valid_up_to()),
        });
    }
    out
}

/// Feed `chunks` to a decoder with limit `max`; every line, then the end of
/// stream.
fn decode(chunks: &[&[u8]], max: usize) -> Vec<Framed> {
    let mut d = LineDecoder::with_max(max);
    assert_eq!(d.max(), max);
    let mut out = Vec::new();
    for chunk in chunks {
        out.extend(d.push(chunk).into_iter().map(framed));
        // Memory stays bounded by the limit.
        assert!(
            d.pending_len() <= max,
            "decoder holds {} bytes, limit {max}",
            d.pending_len()
        );
        if d.is_discarding() {
            assert_eq!(d.pending_len(), 0, "a discarding decoder holds nothing");
        }
    }
    out.extend(d.finish().map(framed));
    // `finish` resets the decoder.
    assert_eq!(d.pending_len(), 0);
    assert!(!d.is_discarding());
    assert!(d.finish().is_none());
    out
}

/// A `BufRead` that hands out exactly the given chunks, like a socket would.
struct Chunked<'a> {
    chunks: &'a [&'a [u8]],
    pos: usize,
}

impl Read for Chunked<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let avail = self.fill_buf()?;
        let n = avail.len().min(buf.len());
        buf[..n].copy_from_slice(&avail[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for Chunked<'_> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        while let Some(first) = self.chunks.first() {
            if self.pos < first.len() {
                return Ok(&first[self.pos..]);
            }
            self.chunks = &self.chunks[1..];
            self.pos = 0;
        }
        Ok(&[])
    }

    fn consume(&mut self, amt: usize) {
        self.pos += amt;
    }
}

fn read_bounded(chunks: &[&[u8]], max: usize) -> Vec<Framed> {
    let mut r = Chunked { chunks, pos: 0 };
    let mut buf = Vec::new();
    let mut out = Vec::new();
    loop {
        match read_line_bounded(&mut r, max, &mut buf) {
            Ok(Some(s)) => out.push(Framed::Line(s.to_owned())),
            Ok(None) => break,
            Err(e) => out.push(framed(Err(e))),
        }
        assert!(
            buf.len() <= max,
            "read_line_bounded held {} bytes",
            buf.len()
        );
    }
    out
}

/// Bytes in: the layout is one byte for a small line limit (0..=255), chunk
/// lengths ([`Steer`]), then the byte stream.
///
/// Property: no panic; both decoders (the chunked [`LineDecoder`] with the
/// small limit and with [`MAX_LINE_BYTES`], and [`read_line_bounded`] over
/// the same chunks) yield exactly the reference framing — in particular
/// each over-long line is exactly one `LineTooLong` with its full length
/// and the next line decodes normally. Every decoded line is parsed as a
/// message and as each method's params; whatever parses re-encodes to one
/// line that parses back the same.
pub fn protocol_decoder(data: &[u8]) {
    let mut steer = Steer::new(data);
    let small = usize::from(steer.byte());
    let lens = steer.chunk_lens();
    let stream = steer.rest();
    let chunks = split(stream, &lens);

    for max in [small, MAX_LINE_BYTES] {
        let want = reference(stream, max);
        assert_eq!(decode(&chunks, max), want, "LineDecoder, limit {max}");
        assert_eq!(
            read_bounded(&chunks, max),
            want,
            "read_line_bounded, limit {max}"
        );
        if max == MAX_LINE_BYTES {
            for item in want {
                if let Framed::Line(line) = item {
                    message(&line);
                }
            }
        }
    }
    // The frame errors map to protocol errors (never for i/o).
    for e in [
        FrameError::LineTooLong { len: stream.len() },
        FrameError::InvalidUtf8 { valid_up_to: small },
    ] {
        let rpc = e.to_rpc_error().expect("frame errors have an rpc error");
        encode(&rpc).expect("rpc error encodes");
    }
}

/// One decoded line through the message parser and the typed params.
fn message(line: &str) {
    let inc = match parse_incoming(line) {
        Ok(inc) => inc,
        Err(invalid) => {
            let code = invalid.error.error_code();
            assert!(
                matches!(
                    code,
                    Some(ErrorCode::ParseError | ErrorCode::InvalidRequest)
                ),
                "unexpected code {code:?}"
            );
            let reply = encode(&invalid.into_response()).expect("error response encodes");
            assert_single_line(&reply);
            return;
        }
    };
    let reencoded = match &inc {
        Incoming::Request(r) => {
            assert!(!r.is_notification());
            params(&r.method, r.params.clone());
            encode(r)
        }
        Incoming::Notification(n) => {
            params(&n.method, n.params.clone());
            encode(n)
        }
        Incoming::Response(r) => {
            let _ = r.clone().result_as::<Value>();
            encode(r)
        }
    }
    .expect("a parsed message encodes");
    assert_single_line(&reencoded);
    let text = std::str::from_utf8(&reencoded).expect("encoded JSON is UTF-8");
    let back = parse_incoming(text.trim_end_matches('\n'))
        .unwrap_or_else(|e| panic!("re-encoded message does not parse: {e}: {text}"));
    match (&inc, &back) {
        (Incoming::Request(a), Incoming::Request(b)) => {
            assert_eq!((&a.id, &a.method), (&b.id, &b.method));
        }
        (Incoming::Notification(a), Incoming::Notification(b)) => {
            assert_eq!(a.method, b.method);
        }
        (Incoming::Response(a), Incoming::Response(b)) => {
            assert_eq!(a.id, b.id);
            assert_eq!(a.outcome.is_ok(), b.outcome.is_ok());
        }
        _ => panic!("re-encoded message changed kind: {inc:?} -> {back:?}"),
    }
}

fn assert_single_line(bytes: &[u8]) {
    assert_eq!(bytes.last(), Some(&b'\n'));
    assert_eq!(
        bytes.iter().filter(|&&b| b == b'\n').count(),
        1,
        "an encoded message is exactly one line"
    );
}

/// Decode `params` as the named method's (or notification's) params type;
/// an unknown name tries a couple of types, so mutated names still reach
/// the typed decoders.
fn params(method: &str, p: Option<Value>) {
    let _ = ccd_protocol::methods::is_known_method(method);
    let _ = match method {
        "hello" => typed::<daemon::HelloParams>(&p).map(|h| {
            let _ = handshake::negotiate_current(h.protocol);
        }),
        "daemon.status" => typed::<Empty>(&p).map(drop),
        "daemon.stop" => typed::<daemon::DaemonStopParams>(&p).map(drop),
        "sessions.list" => typed::<session::ListParams>(&p).map(drop),
        "sessions.get" | "session.detach" => typed::<SessionRef>(&p).map(drop),
        "session.new" => typed::<session::NewParams>(&p).map(|p| p.size.map_or((), size_bounds)),
        "session.fork" => typed::<session::ForkParams>(&p).map(|p| p.size.map_or((), size_bounds)),
        "session.kill" => typed::<session::KillParams>(&p).map(drop),
        "session.screen" => typed::<session::ScreenParams>(&p).map(drop),
        "session.send" => typed::<session::SendParams>(&p).map(drop),
        "session.pin" => typed::<session::PinParams>(&p).map(drop),
        "session.progress" => typed::<session::Progress>(&p).map(drop),
        "session.attach" => {
            typed::<attach::AttachParams>(&p).map(|p| p.size.map_or((), size_bounds))
        }
        "session.input" => typed::<attach::InputParams>(&p).map(drop),
        "session.resize" => typed::<attach::ResizeParams>(&p).map(|p| {
            size_bounds(TermSize {
                cols: p.cols,
                rows: p.rows,
            })
        }),
        "events.subscribe" => typed::<events::SubscribeParams>(&p).map(drop),
        "session.resync" => typed::<Resync>(&p).map(|r| size_bounds(r.size)),
        "session.transcript" => typed::<TranscriptItems>(&p).map(drop),
        "session.output" => typed::<OutputChunk>(&p).map(|chunk| {
            // The hand-rolled encoder says the same as serde.
            let fast = chunk.encode_line();
            assert_single_line(&fast);
            let a: Value = serde_json::from_slice(&fast).expect("encode_line is JSON");
            let b = serde_json::to_value(chunk.to_notification().expect("notification"))
                .expect("notification is a value");
            assert_eq!(a, b, "encode_line differs from serde's encoding");
        }),
        // Holds an f64: decoded and re-encoded, not compared.
        "event" => parse_params::<events::Event>(p)
            .map(|ev| {
                encode(&ev).expect("event encodes");
            })
            .map_err(drop),
        _ => typed::<session::ListParams>(&p)
            .and(typed::<attach::AttachParams>(&p))
            .map(drop),
    };
}

/// The size bounds: whatever size a client sends, validation yields a size
/// within `1..=MAX_COLS` × `1..=MAX_ROWS` or `invalid_params` naming the
/// bounds (never an out-of-range size), and clamping always lands inside.
fn size_bounds(size: TermSize) {
    let inside = |s: TermSize| (1..=MAX_COLS).contains(&s.cols) && (1..=MAX_ROWS).contains(&s.rows);
    match size.checked() {
        Ok(s) => {
            assert!(inside(s), "checked let {s:?} through");
            assert_eq!(s, size, "checked changed an in-range size");
        }
        Err(e) => {
            assert!(!inside(size), "checked refused {size:?}");
            let rpc = ccd_protocol::RpcError::from(e);
            assert_eq!(rpc.error_code(), Some(ErrorCode::InvalidParams));
            assert!(rpc.message.contains("1..=1000"), "{}", rpc.message);
        }
    }
    let c = size.clamped();
    assert!(inside(c), "clamped {size:?} to {c:?}");
    if inside(size) {
        assert_eq!(c, size, "clamping changed an in-range size");
    }
}

/// Decode as `T`; on success, `T` re-encodes to one line that decodes to
/// an equal `T`. Params are named only: an array never decodes.
fn typed<T>(p: &Option<Value>) -> Result<T, ()>
where
    T: Serialize + DeserializeOwned + PartialEq + Debug,
{
    let v: T = parse_params(p.clone()).map_err(|e| {
        assert_eq!(e.error_code(), Some(ErrorCode::InvalidParams));
    })?;
    assert!(
        !matches!(p, Some(Value::Array(_))),
        "{} decoded from positional params",
        std::any::type_name::<T>()
    );
    let bytes = encode(&v).expect("params encode");
    assert_single_line(&bytes);
    let value: Value = serde_json::from_slice(&bytes).expect("encoded params are JSON");
    let back: T = parse_params(Some(value)).unwrap_or_else(|e| {
        panic!(
            "{} re-encoded does not decode: {e}: {}",
            std::any::type_name::<T>(),
            String::from_utf8_lossy(&bytes)
        )
    });
    assert_eq!(
        back,
        v,
        "{} does not round-trip",
        std::any::type_name::<T>()
    );
    Ok(v)
}
