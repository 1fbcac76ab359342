//! [`HolderClient`]: a small blocking client for one holder socket, used by
//! tests and benchmarks (`ccd-bench`), not by the daemon (which talks to its
//! holders through its own async client, `ccd-daemon`'s `holders::rpc`).
//! Std `UnixStream`; every call waits for its reply until a deadline.
//!
//! Notifications that arrive while waiting for a reply (an attached
//! connection) are kept, in order, for [`HolderClient::next_event`].

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use ccd_protocol::stream::{Exited, OutputChunk, Resync};
use ccd_protocol::{
    encode, parse_incoming, Id, Incoming, LineDecoder, Notification, Request, RpcError,
};
use serde_json::Value;
use thiserror::Error;

use crate::config::{KillSignal, Size};
use crate::fanout::AttachMode;
use ccd_protocol::holder::HolderMethod;
use ccd_protocol::holder::{
    self as h, AttachParams, AttachResult, CollectParams, CollectResult, InfoResult, InputParams,
    KillParams, ScreenFormat, ScreenParams, ScreenResult,
};
use ccd_protocol::methods::Empty;

/// Default timeout of every read.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// What went wrong talking to a holder.
#[derive(Debug, Error)]
pub enum ClientError {
    /// Socket error.
    #[error("holder socket: {0}")]
    Io(#[from] std::io::Error),
    /// No answer in time.
    #[error("holder did not answer in time")]
    Timeout,
    /// The holder closed the connection.
    #[error("holder closed the connection")]
    Closed,
    /// The holder answered with an error.
    #[error("holder error: {0}")]
    Rpc(RpcError),
    /// The holder sent something unreadable.
    #[error("holder protocol error: {0}")]
    Protocol(String),
}

/// A notification on an attached connection.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// `session.output`.
    Output(OutputChunk),
    /// `session.resync`.
    Resync(Resync),
    /// `session.exited`.
    Exited(Exited),
    /// Anything else.
    Other(Notification),
}

/// A blocking connection to one holder.
pub struct HolderClient {
    stream: UnixStream,
    decoder: LineDecoder,
    lines: VecDeque<String>,
    pending: VecDeque<Notification>,
    next_id: i64,
    timeout: Duration,
}

impl HolderClient {
    /// Connect with [`DEFAULT_TIMEOUT`].
    pub fn connect(path: &Path) -> Result<Self, ClientError> {
        Self::connect_with_timeout(path, DEFAULT_TIMEOUT)
    }

    /// Connect; every call waits at most `timeout` for its reply.
    pub fn connect_with_timeout(path: &Path, timeout: Duration) -> Result<Self, ClientError> {
        let stream = UnixStream::connect(path)?;
        stream.set_write_timeout(Some(timeout))?;
        Ok(Self {
            stream,
            // Output lines carry ≤ 64 KiB base64-encoded; redraws are far smaller
            // than the limit too.
            decoder: LineDecoder::with_max(ccd_protocol::MAX_LINE_BYTES * 4),
            lines: VecDeque::new(),
            pending: VecDeque::new(),
            next_id: 0,
            timeout,
        })
    }

    /// Change the timeout.
    pub fn set_timeout(&mut self, timeout: Duration) -> Result<(), ClientError> {
        self.stream.set_write_timeout(Some(timeout))?;
        self.timeout = timeout;
        Ok(())
    }

    /// Write raw bytes (tests of bad input).
    pub fn send_raw(&mut self, bytes: &[u8]) -> Result<(), ClientError> {
        self.stream.write_all(bytes)?;
        Ok(())
    }

    /// Next line, waiting until `deadline`.
    fn read_line(&mut self, deadline: Instant) -> Result<String, ClientError> {
        let mut chunk = [0u8; 64 * 1024];
        loop {
            if let Some(l) = self.lines.pop_front() {
                return Ok(l);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(ClientError::Timeout);
            }
            self.stream.set_read_timeout(Some(left))?;
            let n = match self.stream.read(&mut chunk) {
                Ok(0) => return Err(ClientError::Closed),
                Ok(n) => n,
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    return Err(ClientError::Timeout)
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            };
            for item in self.decoder.push(&chunk[..n]) {
                match item {
                    Ok(l) => self.lines.push_back(l),
                    Err(e) => return Err(ClientError::Protocol(e.to_string())),
                }
            }
        }
    }

    /// Read the next message (response or notification) as it arrives.
    fn read_message(&mut self, deadline: Instant) -> Result<Incoming, ClientError> {
        let line = self.read_line(deadline)?;
        parse_incoming(&line).map_err(|e| ClientError::Protocol(e.to_string()))
    }

    /// Call `M` and decode its result.
    pub fn call<M: HolderMethod>(&mut self, params: &M::Params) -> Result<M::Result, ClientError> {
        let params = serde_json::to_value(params)
            .map_err(|e| ClientError::Protocol(format!("{}: {e}", M::NAME)))?;
        let v = self.call_value(M::NAME, Some(params))?;
        serde_json::from_value(v).map_err(|e| ClientError::Protocol(format!("{}: {e}", M::NAME)))
    }

    /// Call `method` with raw params; the raw result.
    pub fn call_value(
        &mut self,
        method: &str,
        params: Option<Value>,
    ) -> Result<Value, ClientError> {
        self.next_id += 1;
        let id = Id::Number(self.next_id);
        let req = Request::new(id.clone(), method, params);
        let line = encode(&req).map_err(|e| ClientError::Protocol(e.to_string()))?;
        self.stream.write_all(&line)?;
        self.wait_response(&id)
    }

    /// Wait for the response with `id`, keeping notifications.
    pub fn wait_response(&mut self, id: &Id) -> Result<Value, ClientError> {
        let deadline = Instant::now() + self.timeout;
        loop {
            match self.read_message(deadline)? {
                Incoming::Response(r) if r.id.as_ref() == Some(id) || r.id.is_none() => {
                    return r.outcome.map_err(ClientError::Rpc);
                }
                Incoming::Response(r) => {
                    tracing::debug!(id = ?r.id, "unexpected response skipped");
                }
                Incoming::Notification(n) => self.pending.push_back(n),
                Incoming::Request(r) => {
                    tracing::debug!(method = %r.method, "request from holder ignored");
                }
            }
        }
    }

    /// `holder.info`.
    pub fn info(&mut self) -> Result<InfoResult, ClientError> {
        self.call::<h::Info>(&Empty {})
    }

    /// `holder.hello`: the negotiated holder protocol version.
    pub fn hello(&mut self) -> Result<u32, ClientError> {
        let r = self.call::<h::Hello>(&h::HelloParams {
            protocol: h::HOLDER_PROTOCOL_RANGE,
            direct: false,
        })?;
        Ok(r.protocol)
    }

    /// `holder.screen`.
    pub fn screen(&mut self, format: ScreenFormat) -> Result<ScreenResult, ClientError> {
        self.call::<h::Screen>(&ScreenParams { format })
    }

    /// `holder.input`.
    pub fn input(&mut self, data: &[u8]) -> Result<(), ClientError> {
        self.call::<h::Input>(&InputParams {
            data: data.to_vec(),
        })?;
        Ok(())
    }

    /// `holder.resize`.
    pub fn resize(&mut self, rows: u16, cols: u16) -> Result<(), ClientError> {
        self.call::<h::Resize>(&Size { rows, cols })?;
        Ok(())
    }

    /// `holder.kill`. Returns false when the child had already exited.
    pub fn kill(
        &mut self,
        signal: KillSignal,
        grace: Option<Duration>,
    ) -> Result<bool, ClientError> {
        let r = self.call::<h::Kill>(&KillParams {
            signal,
            grace_ms: grace.map(|g| u64::try_from(g.as_millis()).unwrap_or(u64::MAX)),
            ..Default::default()
        })?;
        Ok(r.sent)
    }

    /// `holder.collect`, waiting up to `wait` for the exit (the read
    /// timeout is extended accordingly).
    pub fn collect(&mut self, wait: Duration) -> Result<CollectResult, ClientError> {
        let saved = self.timeout;
        self.timeout = saved + wait + Duration::from_secs(2);
        let r = self.call::<h::Collect>(&CollectParams {
            wait_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
        });
        self.timeout = saved;
        r
    }

    /// `holder.attach`. The `session.resync` follows; read it and the rest
    /// with [`HolderClient::next_event`].
    pub fn attach(&mut self, mode: AttachMode) -> Result<AttachResult, ClientError> {
        self.call::<h::Attach>(&AttachParams { mode, size: None })
    }

    /// `holder.detach`.
    pub fn detach(&mut self) -> Result<(), ClientError> {
        self.call::<h::Detach>(&Empty {})?;
        Ok(())
    }

    /// The next notification, waiting up to `timeout`.
    pub fn next_event(&mut self, timeout: Duration) -> Result<StreamEvent, ClientError> {
        let n = match self.pending.pop_front() {
            Some(n) => n,
            None => {
                let deadline = Instant::now() + timeout;
                loop {
                    match self.read_message(deadline)? {
                        Incoming::Notification(n) => break n,
                        _ => continue,
                    }
                }
            }
        };
        let bad = |e: RpcError| ClientError::Protocol(e.to_string());
        Ok(match n.method.as_str() {
            "session.output" => StreamEvent::Output(n.params_as().map_err(bad)?),
            "session.resync" => StreamEvent::Resync(n.params_as().map_err(bad)?),
            "session.exited" => StreamEvent::Exited(n.params_as().map_err(bad)?),
            _ => StreamEvent::Other(n),
        })
    }

    /// Iterate over notifications, each waited for up to `timeout`; ends at
    /// the first error (timeout, closed connection).
    pub fn events(&mut self, timeout: Duration) -> impl Iterator<Item = StreamEvent> + '_ {
        std::iter::from_fn(move || self.next_event(timeout).ok())
    }
}
