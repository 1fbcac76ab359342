//! Line framing: chunk-split independence, over-long lines, invalid UTF-8,
//! and agreement between `LineDecoder` and `read_line_bounded`.

use std::io::{BufReader, Cursor, Read};

use ccd_protocol::{read_line_bounded, FrameError, LineDecoder, MAX_LINE_BYTES};

/// A comparable summary of one decoder output.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Item {
    Line(String),
    TooLong(usize),
    BadUtf8(usize),
}

fn item(r: Result<String, FrameError>) -> Item {
    match r {
        Ok(s) => Item::Line(s),
        Err(FrameError::LineTooLong { len }) => Item::TooLong(len),
        Err(FrameError::InvalidUtf8 { valid_up_to }) => Item::BadUtf8(valid_up_to),
        Err(FrameError::Io(e)) => panic!("unexpected io error: {e}"),
    }
}

fn decode_chunks(max: usize, chunks: &[&[u8]]) -> Vec<Item> {
    let mut d = LineDecoder::with_max(max);
    let mut out = Vec::new();
    for c in chunks {
        out.extend(d.push(c).into_iter().map(item));
        assert!(d.pending_len() <= max, "decoder holds more than its limit");
    }
    out.extend(d.finish().map(item));
    out
}

fn decode_with_reader<R: Read>(max: usize, r: R, cap: usize) -> Vec<Item> {
    let mut r = BufReader::with_capacity(cap, r);
    let mut buf = Vec::new();
    let mut out = Vec::new();
    loop {
        match read_line_bounded(&mut r, max, &mut buf) {
            Ok(None) => break,
            Ok(Some(line)) => out.push(Item::Line(line.to_owned())),
            Err(e) => out.push(item(Err(e))),
        }
        assert!(buf.len() <= max);
    }
    out
}

/// Tiny deterministic PRNG (xorshift64*), so the test needs no dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn sample_input() -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"hello\"}\n");
    v.extend_from_slice("héllo wörld ✓ 🦀\r\n".as_bytes());
    v.extend_from_slice(b"\n\r\n");
    v.extend_from_slice(&[b'x'; 40]); // over the 32-byte limit used below
    v.push(b'\n');
    v.extend_from_slice(b"ok\n");
    v.extend_from_slice(b"bad \xff\xfe utf8\n");
    v.extend_from_slice(&[b'y'; 33]); // just over
    v.extend_from_slice(b"\n");
    v.extend_from_slice(&[b'z'; 32]); // exactly at the limit
    v.extend_from_slice(b"\n");
    v.extend_from_slice(b"tail without newline");
    v
}

#[test]
fn expected_items_for_sample() {
    let input = sample_input();
    let got = decode_chunks(32, &[&input]);
    assert_eq!(
        got,
        vec![
            Item::TooLong(41),
            Item::Line("héllo wörld ✓ 🦀".into()),
            Item::TooLong(40),
            Item::Line("ok".into()),
            Item::BadUtf8(4),
            Item::TooLong(33),
            Item::Line("z".repeat(32)),
            Item::Line("tail without newline".into()),
        ]
    );
}

#[test]
fn any_chunk_split_gives_the_same_lines() {
    let input = sample_input();
    let whole = decode_chunks(32, &[&input]);

    // Every single split point.
    for i in 0..=input.len() {
        let (a, b) = input.split_at(i);
        assert_eq!(decode_chunks(32, &[a, b]), whole, "split at {i}");
    }
    // Byte by byte.
    let bytes: Vec<&[u8]> = input.chunks(1).collect();
    assert_eq!(decode_chunks(32, &bytes), whole);
    // Random splits.
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for _ in 0..500 {
        let mut chunks = Vec::new();
        let mut rest = &input[..];
        while !rest.is_empty() {
            let n = 1 + rng.below(rest.len().min(20));
            let (a, b) = rest.split_at(n);
            chunks.push(a);
            rest = b;
        }
        assert_eq!(decode_chunks(32, &chunks), whole);
    }
    // The BufRead helper agrees, whatever its buffer size.
    for cap in [1, 2, 3, 7, 16, 64, 8192] {
        assert_eq!(
            decode_with_reader(32, Cursor::new(&input), cap),
            whole,
            "cap {cap}"
        );
    }
}

#[test]
fn ten_mib_line_gives_one_error_then_recovers() {
    let big = vec![b'a'; 10 << 20];
    let mut d = LineDecoder::new();
    let mut out = Vec::new();
    out.extend(d.push(b"{\"first\":1}\n").into_iter().map(item));
    for c in big.chunks(64 * 1024) {
        out.extend(d.push(c).into_iter().map(item));
        assert!(d.pending_len() <= MAX_LINE_BYTES);
    }
    assert!(d.is_discarding());
    assert_eq!(d.pending_len(), 0, "over-long bytes are not buffered");
    out.extend(d.push(b"\n{\"next\":2}\n").into_iter().map(item));
    assert_eq!(
        out,
        vec![
            Item::Line("{\"first\":1}".into()),
            Item::TooLong(10 << 20),
            Item::Line("{\"next\":2}".into()),
        ]
    );
    assert!(d.finish().is_none());

    // The same through read_line_bounded, in one go.
    let mut input = big;
    input.extend_from_slice(b"\n{\"next\":2}\n");
    let got = decode_with_reader(MAX_LINE_BYTES, Cursor::new(input), 8192);
    assert_eq!(
        got,
        vec![Item::TooLong(10 << 20), Item::Line("{\"next\":2}".into())]
    );
}

#[test]
fn line_at_limit_is_accepted_one_more_is_not() {
    let mut at = vec![b'a'; MAX_LINE_BYTES];
    at.push(b'\n');
    let mut over = vec![b'b'; MAX_LINE_BYTES + 1];
    over.push(b'\n');
    let got = decode_chunks(MAX_LINE_BYTES, &[&at, &over, b"c\n"]);
    assert_eq!(got.len(), 3);
    assert!(matches!(&got[0], Item::Line(s) if s.len() == MAX_LINE_BYTES));
    assert_eq!(got[1], Item::TooLong(MAX_LINE_BYTES + 1));
    assert_eq!(got[2], Item::Line("c".into()));
}

#[test]
fn frame_errors_map_to_rpc_errors() {
    let e = FrameError::LineTooLong { len: 5 << 20 }
        .to_rpc_error()
        .expect("has an rpc error");
    assert_eq!(e.code, -32000);
    assert_eq!(
        e.data.as_ref().and_then(|d| d.get("max")),
        Some(&serde_json::json!(MAX_LINE_BYTES))
    );
    let e = FrameError::InvalidUtf8 { valid_up_to: 3 }
        .to_rpc_error()
        .expect("has an rpc error");
    assert_eq!(e.code, -32700);
    assert!(FrameError::Io(std::io::Error::other("x"))
        .to_rpc_error()
        .is_none());
}

#[test]
fn read_line_bounded_reports_io_errors() {
    struct Failing;
    impl Read for Failing {
        fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("boom"))
        }
    }
    let mut r = BufReader::new(Failing);
    let mut buf = Vec::new();
    assert!(matches!(
        read_line_bounded(&mut r, 10, &mut buf),
        Err(FrameError::Io(_))
    ));
}

/// A reader that gives `chunks` in turn, with a timeout between them.
struct Stuttering {
    chunks: std::collections::VecDeque<Vec<u8>>,
    timeout_next: bool,
}

impl std::io::Read for Stuttering {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.timeout_next {
            self.timeout_next = false;
            return Err(std::io::ErrorKind::WouldBlock.into());
        }
        let Some(c) = self.chunks.pop_front() else {
            return Ok(0);
        };
        self.timeout_next = true;
        let n = c.len().min(out.len());
        out[..n].copy_from_slice(&c[..n]);
        if n < c.len() {
            self.chunks.push_front(c[n..].to_vec());
        }
        Ok(n)
    }
}

#[test]
fn a_read_timeout_mid_line_loses_nothing_with_the_resumable_reader() {
    use ccd_protocol::{read_line_resumable, FrameError, PartialLine};
    let first = br#"{"jsonrpc":"2.0","method":"session.output","params":{"data":"AAAA"#.to_vec();
    let rest = b"BBBB\"}}\n{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n".to_vec();
    let mut r = std::io::BufReader::with_capacity(
        16,
        Stuttering {
            chunks: [first, rest].into(),
            timeout_next: false,
        },
    );
    let mut line = PartialLine::default();
    let mut lines = Vec::new();
    let mut timeouts = 0;
    loop {
        match read_line_resumable(&mut r, 1 << 20, &mut line) {
            Ok(true) => lines.push(String::from_utf8(line.line().to_vec()).unwrap()),
            Ok(false) => break,
            Err(FrameError::Io(e)) if e.kind() == std::io::ErrorKind::WouldBlock => timeouts += 1,
            Err(e) => panic!("{e}"),
        }
    }
    assert!(timeouts >= 2, "{timeouts}");
    assert_eq!(
        lines,
        [
            r#"{"jsonrpc":"2.0","method":"session.output","params":{"data":"AAAABBBB"}}"#,
            r#"{"jsonrpc":"2.0","method":"x"}"#
        ]
    );
    for l in &lines {
        serde_json::from_str::<serde_json::Value>(l).expect("whole JSON lines");
    }
}
