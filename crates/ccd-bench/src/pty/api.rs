//! A minimal socket-API client with read timeouts everywhere: requests,
//! notifications sent as such (`session.input` the way `ccd attach` sends
//! it), and the terminal stream decoded straight from borrowed JSON.

use anyhow::Context;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

#[derive(Debug)]
pub enum Note {
    Output { seq: u64, data: Vec<u8> },
    Resync { seq: u64, data: Vec<u8> },
    Exited,
    Other,
}

enum Msg {
    Reply(i64, Result<Value, Value>),
    Note(Note),
}

#[derive(Deserialize)]
struct RawMsg<'a> {
    #[serde(borrow, default)]
    method: Option<&'a str>,
    #[serde(default)]
    id: Option<Value>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
    #[serde(default)]
    result: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct StreamParams<'a> {
    #[serde(default)]
    seq: u64,
    #[serde(borrow, default)]
    data: Option<&'a str>,
}

pub struct Api {
    r: BufReader<UnixStream>,
    w: UnixStream,
    next_id: i64,
    queue: VecDeque<Note>,
    line: Vec<u8>,
    timeout: Option<Duration>,
}

impl Api {
    pub fn connect(sock: &Path) -> anyhow::Result<Self> {
        let s = UnixStream::connect(sock).with_context(|| format!("connect {}", sock.display()))?;
        let mut a = Self {
            r: BufReader::with_capacity(256 * 1024, s.try_clone()?),
            w: s,
            next_id: 1,
            queue: VecDeque::new(),
            line: Vec::with_capacity(128 * 1024),
            timeout: None,
        };
        a.call(
            "hello",
            json!({"client": "ccd-bench/pty", "protocol": {"min": 1, "max": 1}}),
        )?;
        Ok(a)
    }

    /// Sends a request and waits (at most 60 s) for its reply; notifications
    /// met meanwhile are queued.
    pub fn call(&mut self, method: &str, params: Value) -> anyhow::Result<Value> {
        let id = self.send(method, params)?;
        self.wait_reply(id, Duration::from_secs(60))
    }

    pub fn send(&mut self, method: &str, params: Value) -> anyhow::Result<i64> {
        let id = self.next_id;
        self.next_id += 1;
        let mut line = serde_json::to_vec(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        )?;
        line.push(b'\n');
        self.w.write_all(&line)?;
        Ok(id)
    }

    pub fn wait_reply(&mut self, id: i64, limit: Duration) -> anyhow::Result<Value> {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            anyhow::ensure!(!left.is_zero(), "no reply to request {id}");
            match self.read_msg(left)? {
                Some(Msg::Reply(i, r)) if i == id => {
                    return r.map_err(|e| anyhow::anyhow!("daemon error: {e}"))
                }
                Some(Msg::Reply(..)) | None => {}
                Some(Msg::Note(n)) => self.queue.push_back(n),
            }
        }
    }

    pub fn notify(&mut self, method: &str, params: Value) -> anyhow::Result<()> {
        let mut line =
            serde_json::to_vec(&json!({"jsonrpc": "2.0", "method": method, "params": params}))?;
        line.push(b'\n');
        self.w.write_all(&line)?;
        Ok(())
    }

    /// The next notification within `timeout` (`Ok(None)` on timeout).
    pub fn next_note(&mut self, timeout: Duration) -> anyhow::Result<Option<Note>> {
        if let Some(n) = self.queue.pop_front() {
            return Ok(Some(n));
        }
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            match self.read_msg(left)? {
                Some(Msg::Note(n)) => return Ok(Some(n)),
                Some(Msg::Reply(..)) => {}
                None => return Ok(None),
            }
        }
    }

    fn read_msg(&mut self, timeout: Duration) -> anyhow::Result<Option<Msg>> {
        let t = Some(timeout.max(Duration::from_micros(100)));
        if self.timeout != t {
            self.r.get_ref().set_read_timeout(t)?;
            self.timeout = t;
        }
        match self.r.read_until(b'\n', &mut self.line) {
            Ok(0) => anyhow::bail!("the daemon closed the connection"),
            Ok(_) if self.line.last() == Some(&b'\n') => {
                let m = parse(&self.line);
                self.line.clear();
                m.map(Some)
            }
            Ok(_) => anyhow::bail!("the daemon closed the connection mid-line"),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) =>
            {
                Ok(None)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Closes both directions.
    pub fn close(&self) {
        let _ = self.w.shutdown(std::net::Shutdown::Both);
    }
}

fn parse(line: &[u8]) -> anyhow::Result<Msg> {
    let m: RawMsg = serde_json::from_slice(line).context("bad line from the daemon")?;
    if let Some(method) = m.method {
        let note = match method {
            "session.output" | "session.resync" => {
                let p: StreamParams =
                    serde_json::from_str(m.params.map(RawValue::get).unwrap_or("{}"))?;
                let data = ccd_protocol::b64::decode(p.data.unwrap_or(""))
                    .map_err(|e| anyhow::anyhow!("base64: {e}"))?;
                if method == "session.output" {
                    Note::Output { seq: p.seq, data }
                } else {
                    Note::Resync { seq: p.seq, data }
                }
            }
            "session.exited" => Note::Exited,
            _ => Note::Other,
        };
        return Ok(Msg::Note(note));
    }
    let id = m.id.as_ref().and_then(Value::as_i64).unwrap_or(-1);
    Ok(Msg::Reply(
        id,
        match m.error {
            Some(e) => Err(e),
            None => Ok(m.result.unwrap_or(Value::Null)),
        },
    ))
}
