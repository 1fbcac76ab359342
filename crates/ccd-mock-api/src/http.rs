//! A minimal HTTP/1.1 server side: one request at a time per connection
//! (keep-alive), bodies by `Content-Length` or `Transfer-Encoding: chunked`,
//! responses with a length or chunked (for server-sent events).
//!
//! Everything read from the socket is untrusted: sizes are capped and every
//! parse failure is an error, never a panic.

use std::io::{self, BufRead, Read, Write};

/// Caps on what a client may send.
const MAX_LINE: usize = 64 * 1024;
const MAX_HEADERS: usize = 200;
const MAX_BODY: usize = 256 * 1024 * 1024;

pub struct Request {
    pub method: String,
    /// The request target as sent, query included.
    pub target: String,
    pub version: String,
    /// Names lower-cased, in order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The path without the query string.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }

    /// Whether the client wants the connection kept open after this one.
    pub fn keep_alive(&self) -> bool {
        let conn = self.header("connection").map(str::to_ascii_lowercase);
        match conn.as_deref() {
            Some(c) if c.split(',').any(|t| t.trim() == "close") => false,
            Some(c) if c.split(',').any(|t| t.trim() == "keep-alive") => true,
            _ => self.version != "HTTP/1.0",
        }
    }
}

fn bad(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

/// Reads one CRLF- (or LF-) terminated line, without its terminator.
/// `Ok(None)` at a clean end of stream before any byte.
fn read_line(r: &mut impl BufRead) -> io::Result<Option<String>> {
    let mut buf = Vec::new();
    let n = r
        .by_ref()
        .take(MAX_LINE as u64 + 1)
        .read_until(b'\n', &mut buf)?;
    if n == 0 {
        return Ok(None);
    }
    if buf.len() > MAX_LINE {
        return Err(bad("line too long"));
    }
    if buf.last() != Some(&b'\n') {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "connection closed mid-line",
        ));
    }
    buf.pop();
    if buf.last() == Some(&b'\r') {
        buf.pop();
    }
    String::from_utf8(buf)
        .map(Some)
        .map_err(|_| bad("non-UTF-8 header line"))
}

/// Reads the next request; `Ok(None)` when the client closed the connection
/// between requests. `w` receives `100 Continue` when the client asks for it.
pub fn read_request(r: &mut impl BufRead, w: &mut impl Write) -> io::Result<Option<Request>> {
    // Tolerate stray empty lines between requests (RFC 9112 §2.2).
    let line = loop {
        match read_line(r)? {
            None => return Ok(None),
            Some(l) if l.is_empty() => continue,
            Some(l) => break l,
        }
    };
    let mut parts = line.split_whitespace();
    let (method, target, version) = match (parts.next(), parts.next(), parts.next()) {
        (Some(m), Some(t), Some(v)) if v.starts_with("HTTP/1.") => {
            (m.to_string(), t.to_string(), v.to_string())
        }
        _ => return Err(bad(format!("bad request line: {line:?}"))),
    };
    let mut headers = Vec::new();
    loop {
        let l = read_line(r)?.ok_or_else(|| bad("connection closed in headers"))?;
        if l.is_empty() {
            break;
        }
        if headers.len() >= MAX_HEADERS {
            return Err(bad("too many headers"));
        }
        let (k, v) = l
            .split_once(':')
            .ok_or_else(|| bad(format!("bad header line: {l:?}")))?;
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
    }
    let mut req = Request {
        method,
        target,
        version,
        headers,
        body: Vec::new(),
    };
    if req
        .header("expect")
        .is_some_and(|e| e.eq_ignore_ascii_case("100-continue"))
    {
        w.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
        w.flush()?;
    }
    let chunked = req
        .header("transfer-encoding")
        .is_some_and(|t| t.to_ascii_lowercase().contains("chunked"));
    if chunked {
        req.body = read_chunked(r)?;
    } else if let Some(len) = req.header("content-length") {
        let len: usize = len
            .trim()
            .parse()
            .map_err(|_| bad(format!("bad content-length: {len:?}")))?;
        if len > MAX_BODY {
            return Err(bad("body too large"));
        }
        let mut body = vec![0; len];
        r.read_exact(&mut body)?;
        req.body = body;
    }
    Ok(Some(req))
}

fn read_chunked(r: &mut impl BufRead) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line = read_line(r)?.ok_or_else(|| bad("closed in chunked body"))?;
        let size = line.split(';').next().unwrap_or("").trim();
        let size =
            usize::from_str_radix(size, 16).map_err(|_| bad(format!("bad chunk size {line:?}")))?;
        if size == 0 {
            // Trailers until an empty line.
            while let Some(t) = read_line(r)? {
                if t.is_empty() {
                    break;
                }
            }
            return Ok(body);
        }
        if body.len() + size > MAX_BODY {
            return Err(bad("body too large"));
        }
        let start = body.len();
        body.resize(start + size, 0);
        r.read_exact(&mut body[start..])?;
        let end = read_line(r)?.ok_or_else(|| bad("closed after chunk"))?;
        if !end.is_empty() {
            return Err(bad("chunk not followed by CRLF"));
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        500 => "Internal Server Error",
        _ => "Unknown",
    }
}

/// Writes a whole response with a `Content-Length`.
pub fn write_response(
    w: &mut impl Write,
    status: u16,
    content_type: &str,
    extra_headers: &[(&str, String)],
    body: &[u8],
    head_only: bool,
    keep_alive: bool,
) -> io::Result<()> {
    let mut h = format!(
        "HTTP/1.1 {status} {}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: {}\r\n",
        reason(status),
        body.len(),
        if keep_alive { "keep-alive" } else { "close" },
    );
    for (k, v) in extra_headers {
        h.push_str(&format!("{k}: {v}\r\n"));
    }
    h.push_str("\r\n");
    w.write_all(h.as_bytes())?;
    if !head_only {
        w.write_all(body)?;
    }
    w.flush()
}

/// A chunked response body in progress (used for `text/event-stream`).
pub struct Chunked<'a, W: Write> {
    w: &'a mut W,
}

impl<'a, W: Write> Chunked<'a, W> {
    pub fn start(
        w: &'a mut W,
        content_type: &str,
        extra_headers: &[(&str, String)],
        keep_alive: bool,
    ) -> io::Result<Self> {
        let mut h = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ntransfer-encoding: chunked\r\ncache-control: no-cache\r\nconnection: {}\r\n",
            if keep_alive { "keep-alive" } else { "close" },
        );
        for (k, v) in extra_headers {
            h.push_str(&format!("{k}: {v}\r\n"));
        }
        h.push_str("\r\n");
        w.write_all(h.as_bytes())?;
        w.flush()?;
        Ok(Self { w })
    }

    pub fn send(&mut self, data: &[u8]) -> io::Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        write!(self.w, "{:x}\r\n", data.len())?;
        self.w.write_all(data)?;
        self.w.write_all(b"\r\n")?;
        self.w.flush()
    }

    pub fn finish(self) -> io::Result<()> {
        self.w.write_all(b"0\r\n\r\n")?;
        self.w.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufReader;

    fn parse(raw: &[u8]) -> io::Result<Option<Request>> {
        let mut r = BufReader::new(raw);
        read_request(&mut r, &mut Vec::new())
    }

    #[test]
    fn content_length_body_and_query() {
        let req = parse(
            b"POST /v1/messages?beta=true HTTP/1.1\r\nContent-Length: 5\r\nX-A: b\r\n\r\nhelloNEXT",
        )
        .unwrap()
        .unwrap();
        assert_eq!(req.path(), "/v1/messages");
        assert_eq!(req.body, b"hello");
        assert_eq!(req.header("x-a"), Some("b"));
        assert!(req.keep_alive());
    }

    #[test]
    fn chunked_body_with_extension_and_trailer() {
        let req = parse(
            b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nT: 1\r\n\r\n",
        )
        .unwrap()
        .unwrap();
        assert_eq!(req.body, b"abcde");
    }

    #[test]
    fn keep_alive_two_requests_then_eof() {
        let raw = b"GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\nConnection: close\r\n\r\n";
        let mut r = BufReader::new(&raw[..]);
        let a = read_request(&mut r, &mut Vec::new()).unwrap().unwrap();
        let b = read_request(&mut r, &mut Vec::new()).unwrap().unwrap();
        assert_eq!((a.path(), b.path()), ("/a", "/b"));
        assert!(!b.keep_alive());
        assert!(read_request(&mut r, &mut Vec::new()).unwrap().is_none());
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(parse(b"NONSENSE\r\n\r\n").is_err());
        assert!(parse(b"POST / HTTP/1.1\r\nContent-Length: zz\r\n\r\n").is_err());
        assert!(parse(b"POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nab").is_err());
        assert!(parse(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nxyz\r\n").is_err());
        assert!(parse(b"GET / HTTP/1.1\r\nno colon\r\n\r\n").is_err());
    }

    #[test]
    fn expect_continue_is_answered() {
        let mut out = Vec::new();
        let raw = b"POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nx";
        read_request(&mut BufReader::new(&raw[..]), &mut out).unwrap();
        assert!(out.starts_with(b"HTTP/1.1 100 Continue"));
    }
}
