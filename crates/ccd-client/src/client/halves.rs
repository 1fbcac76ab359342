//! The two halves of a split connection: the [`Writer`] (requests and
//! notifications sent without waiting, descriptors passed along) and the
//! [`Reader`] (every message as it arrives).
//!
//! A line over [`MAX_LINE_BYTES`] is never kept: [`Reader::next`] skips it
//! with a warning (a stream goes on), [`Reader::next_or_oversized`] says
//! it came ([`Oversized`]: a caller awaiting a reply, which that line
//! most likely was, reports it as too large rather than as a timeout).

use super::{encode_request, to_params, ClientError, Reader, Writer};
use ccd_protocol::{
    parse_incoming, read_line_resumable, FrameError, Id, Incoming, Method, Notification,
    MAX_LINE_BYTES,
};
use serde_json::Value;
use std::io::Write;
use std::os::fd::AsFd;
use std::time::Duration;

impl Writer {
    /// The id the next request sent will carry (a [`super::Link`]
    /// registers it before the write, so its reply cannot come first).
    pub fn peek_id(&self) -> Id {
        Id::Number(self.next_id)
    }

    /// Sends a typed request without waiting; returns its id.
    pub fn send_typed<M: Method>(&mut self, params: &M::Params) -> Result<Id, ClientError> {
        let params = to_params::<M>(params)?;
        self.send(M::NAME, params)
    }

    /// Sends a typed method as a notification: the daemon does it and
    /// sends no reply (keys and resizes of a terminal client).
    pub fn notify_typed<M: Method>(&mut self, params: &M::Params) -> Result<(), ClientError> {
        let params = to_params::<M>(params)?;
        self.notify(M::NAME, params)
    }

    /// Sends a request without waiting; returns its id. Untyped: for
    /// tests; clients use [`Writer::send_typed`].
    pub fn send(&mut self, method: &str, params: Value) -> Result<Id, ClientError> {
        let id = Id::Number(self.next_id);
        self.next_id += 1;
        let mut line = Vec::new();
        encode_request(&id, method, params, &mut line)?;
        self.stream.write_all(&line)?;
        Ok(id)
    }

    /// Sends a typed request with descriptors passed along its first
    /// bytes (`SCM_RIGHTS`: a terminal handed to a holder); returns its id.
    pub fn send_typed_passing<M: Method>(
        &mut self,
        params: &M::Params,
        fds: &[std::os::fd::BorrowedFd<'_>],
    ) -> Result<Id, ClientError> {
        let id = Id::Number(self.next_id);
        self.next_id += 1;
        let mut line = Vec::new();
        encode_request(&id, M::NAME, to_params::<M>(params)?, &mut line)?;
        let sent = ccd_os::fdpass::send_with_fds(self.stream.as_fd(), &line, fds)?;
        self.stream.write_all(&line[sent..])?;
        Ok(id)
    }

    /// Sends a notification (a request that gets no reply). Untyped: for
    /// tests; clients use [`Writer::notify_typed`].
    pub fn notify(&mut self, method: &str, params: Value) -> Result<(), ClientError> {
        let n = Notification::new(method, Some(params));
        let mut line = serde_json::to_vec(&n).map_err(|e| ClientError::Protocol(e.to_string()))?;
        line.push(b'\n');
        self.stream.write_all(&line)?;
        Ok(())
    }

    /// Bounds each write from here on (`None`: no bound): a peer that
    /// stops reading fails the write with `WouldBlock`/`TimedOut` instead
    /// of blocking the writer forever.
    pub fn set_write_timeout(&self, timeout: Option<Duration>) -> std::io::Result<()> {
        self.stream.set_write_timeout(timeout)
    }

    /// Closes the sending direction (the daemon sees end of input).
    pub fn shutdown(&self) -> std::io::Result<()> {
        self.stream.shutdown(std::net::Shutdown::Write)
    }

    /// Closes both directions: a thread blocked reading this connection
    /// wakes up with end of stream.
    pub fn shutdown_both(&self) -> std::io::Result<()> {
        self.stream.shutdown(std::net::Shutdown::Both)
    }
}

impl Reader {
    /// The next line's bytes as received (without its newline), not checked
    /// for UTF-8: for callers whose decoder checks the strings it reads
    /// (serde_json does). Over-long lines are skipped with a warning.
    pub fn next_line_bytes(&mut self) -> Result<&[u8], ClientError> {
        loop {
            match read_line_resumable(&mut self.stream, MAX_LINE_BYTES, &mut self.buf) {
                Ok(true) => return Ok(self.buf.line()),
                Ok(false) => return Err(ClientError::Closed),
                Err(FrameError::Io(e)) => return Err(ClientError::Io(e)),
                Err(e) => tracing::warn!(error = %e, "skipping a bad line from the daemon"),
            }
        }
    }

    /// The next message, or the line over [`MAX_LINE_BYTES`] met first
    /// (dropped as it came: memory stays bounded). A line over the bound
    /// still coming when a read timed out is [`Oversized`] too (not
    /// whole); the rest of it is dropped by the next read.
    pub fn next_or_oversized(&mut self) -> Result<Result<Incoming, Oversized>, ClientError> {
        loop {
            match read_line_resumable(&mut self.stream, MAX_LINE_BYTES, &mut self.buf) {
                Ok(true) => {}
                Ok(false) => return Err(ClientError::Closed),
                Err(FrameError::LineTooLong { len }) => {
                    return Ok(Err(Oversized { len, whole: true }))
                }
                Err(FrameError::Io(e)) => {
                    let timed_out = matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    );
                    return match self.buf.over_limit() {
                        Some(len) if timed_out => Ok(Err(Oversized { len, whole: false })),
                        _ => Err(ClientError::Io(e)),
                    };
                }
                Err(e) => {
                    tracing::warn!(error = %e, "skipping a bad line from the daemon");
                    continue;
                }
            }
            match std::str::from_utf8(self.buf.line()) {
                Ok(line) => {
                    return parse_incoming(line)
                        .map(Ok)
                        .map_err(|e| ClientError::Protocol(e.error.message))
                }
                Err(e) => tracing::warn!(error = %e, "skipping a non-UTF-8 line from the daemon"),
            }
        }
    }

    /// Bounds each read from here on (`None`: no bound).
    pub fn set_read_timeout(&mut self, timeout: Option<Duration>) -> std::io::Result<()> {
        self.stream.get_mut().set_read_timeout(timeout)
    }

    /// True when a whole line is already buffered (the next read will not
    /// wait).
    pub fn has_buffered_line(&self) -> bool {
        ccd_protocol::find_newline(self.stream.buffer()).is_some()
    }

    /// The next message of any kind.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Incoming, ClientError> {
        loop {
            match std::str::from_utf8(self.next_line_bytes()?) {
                Ok(line) => {
                    return parse_incoming(line).map_err(|e| ClientError::Protocol(e.error.message))
                }
                Err(e) => tracing::warn!(error = %e, "skipping a non-UTF-8 line from the daemon"),
            }
        }
    }
}

/// A line over this client's bound ([`MAX_LINE_BYTES`]) that came where a
/// message was read ([`Reader::next_or_oversized`]); it was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Oversized {
    /// Its length; when not `whole`, what came of it before the read
    /// timed out.
    pub len: usize,
    /// Its end came.
    pub whole: bool,
}
