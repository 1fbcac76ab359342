//! An async connection to one holder, speaking the holder protocol
//! ([`ccd_protocol::holder`]) over ccd-protocol's line framing: typed calls
//! (`conn.call::<holder::Resize>(&size)`), the `holder.hello` negotiation
//! ([`HolderConn::hello`]), and what a failed call becomes for the client
//! that caused it ([`HolderError::into_rpc`]: a holder's own error keeps
//! its code, message and data; a holder gone or silent gets a clear one).

use ccd_protocol::holder::HolderMethod;
use ccd_protocol::holder::{self as h, PRE_VERSIONING};
use ccd_protocol::{parse_incoming, ErrorCode, Id, Incoming, LineDecoder, Request, RpcError};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::path::Path;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::UnixStream;

/// What can go wrong talking to a holder.
#[derive(Debug, thiserror::Error)]
pub enum HolderError {
    #[error("holder connection: {0}")]
    Io(#[from] std::io::Error),
    #[error("holder closed the connection")]
    Closed,
    #[error("holder did not answer in time")]
    Timeout,
    /// The holder process is stopped (SIGSTOP, job control): it accepts
    /// connections but cannot answer until continued.
    #[error("holder (pid {pid}) is stopped")]
    Stopped { pid: u32 },
    #[error("holder error {}: {}", .0.code, .0.message)]
    Rpc(RpcError),
    #[error("unexpected holder reply: {0}")]
    Decode(String),
}

impl HolderError {
    /// What the request that made the call gets when it failed on holder
    /// `holder` (of session `session`): the holder's own JSON-RPC error
    /// unchanged (code, message, data), except its "the child has exited"
    /// (`invalid_request` with `data.reason = "exited"`, a code the public
    /// protocol means otherwise), which is `session_not_running` like a
    /// holder gone (connection refused, closed, reset); no answer in time,
    /// or a reply that does not decode, is `internal_error` saying so.
    /// `data` of the errors made here names the session and the holder.
    pub fn into_rpc(self, session: &str, holder: &str) -> RpcError {
        let data = json!({"session": session, "holder": holder});
        match self {
            HolderError::Rpc(e) if child_exited(&e) => RpcError::new(
                ErrorCode::SessionNotRunning,
                format!(
                    "session {session} has exited (its holder {holder} is waiting to be collected)"
                ),
            )
            .with_data(data),
            HolderError::Rpc(e) => e,
            HolderError::Closed => RpcError::new(
                ErrorCode::SessionNotRunning,
                format!(
                    "session {session}: its holder {holder} closed the connection (it has exited)"
                ),
            )
            .with_data(data),
            HolderError::Io(e) => RpcError::new(
                ErrorCode::SessionNotRunning,
                format!("session {session}: its holder {holder} cannot be reached ({e})"),
            )
            .with_data(data),
            HolderError::Timeout => RpcError::new(
                ErrorCode::InternalError,
                format!(
                    "session {session}: its holder {holder} did not answer in time ({} s for a control call, longer for a dialog's walk)",
                    CALL_TIMEOUT.as_secs()
                ),
            )
            .with_data(data),
            HolderError::Decode(e) => RpcError::new(
                ErrorCode::InternalError,
                format!("session {session}: unexpected reply from its holder {holder}: {e}"),
            )
            .with_data(data),
            HolderError::Stopped { pid } => RpcError::new(
                ErrorCode::InternalError,
                format!(
                    "session {session}: its ccd holder {holder} (pid {pid}) is stopped (process state T), so it cannot answer; the daemon is fine. Resume the holder with `kill -CONT {pid}`"
                ),
            )
            .with_data(json!({"session": session, "holder": holder, "holder_pid": pid, "stopped": true})),
        }
    }
}

/// A holder's refusal because its child has exited.
fn child_exited(e: &RpcError) -> bool {
    e.code == ErrorCode::InvalidRequest.code()
        && e.data
            .as_ref()
            .and_then(|d| d.get("reason"))
            .and_then(Value::as_str)
            == Some("exited")
}

/// Reads whole lines (bounded by the protocol's line limit).
pub struct LineReader {
    rd: OwnedReadHalf,
    decoder: LineDecoder,
    ready: VecDeque<String>,
    buf: Vec<u8>,
}

impl LineReader {
    fn new(rd: OwnedReadHalf) -> Self {
        Self {
            rd,
            decoder: LineDecoder::new(),
            ready: VecDeque::new(),
            buf: vec![0; 64 * 1024],
        }
    }

    /// The socket, the lines read ahead and the decoder (holding the
    /// unfinished line): for `Relay` (`holders::relay`), which relays the rest
    /// without decoding it.
    pub fn into_parts(self) -> (OwnedReadHalf, VecDeque<String>, LineDecoder) {
        (self.rd, self.ready, self.decoder)
    }

    #[cfg(test)]
    pub(crate) fn for_tests(rd: OwnedReadHalf) -> Self {
        Self::new(rd)
    }

    /// The next line, without its newline; `None` at end of stream.
    pub async fn next_line(&mut self) -> Result<Option<String>, HolderError> {
        loop {
            if let Some(l) = self.ready.pop_front() {
                return Ok(Some(l));
            }
            let n = self.rd.read(&mut self.buf).await?;
            if n == 0 {
                return Ok(None);
            }
            for r in self.decoder.push(&self.buf[..n]) {
                match r {
                    Ok(l) => self.ready.push_back(l),
                    Err(e) => tracing::warn!(error = %e, "bad line from a holder skipped"),
                }
            }
        }
    }
}

/// One connection to a holder.
pub struct HolderConn {
    pub reader: LineReader,
    pub writer: OwnedWriteHalf,
    next_id: i64,
    /// The holder protocol version of this connection, once
    /// [`Self::hello`] said hello.
    pub protocol: Option<u32>,
    /// The holder's pid (the socket's peer credentials), watched for a
    /// stop while a call waits.
    peer_pid: Option<u32>,
    /// The last call's request was written whole to the socket, so the
    /// holder may have acted on it even if no reply came: such a call is
    /// never sent again (`HolderTable::call_serialized`; a key typed
    /// twice is not the same key).
    written: bool,
}

/// How long a control call may take.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// How often a waiting call looks whether the holder is stopped: well
/// within a client's own deadline (5 s for a plain call), so the client
/// hears "the holder is stopped" from the daemon, not "the daemon did not
/// answer".
pub const STOPPED_CHECK: Duration = Duration::from_millis(500);

impl HolderConn {
    pub async fn connect(path: &Path) -> Result<Self, HolderError> {
        let s = tokio::time::timeout(Duration::from_secs(2), UnixStream::connect(path))
            .await
            .map_err(|_| HolderError::Timeout)??;
        let peer_pid = s
            .peer_cred()
            .ok()
            .and_then(|c| c.pid())
            .and_then(|p| u32::try_from(p).ok());
        let (rd, wr) = s.into_split();
        Ok(Self {
            reader: LineReader::new(rd),
            writer: wr,
            next_id: 1,
            protocol: None,
            peer_pid,
            written: false,
        })
    }

    /// [`Self::connect`], then [`Self::hello`].
    pub async fn connect_hello(path: &Path) -> Result<Self, HolderError> {
        let mut conn = Self::connect(path).await?;
        conn.hello().await?;
        Ok(conn)
    }

    /// `holder.hello`: negotiates this connection's holder protocol version
    /// (kept in `protocol`). A holder that answers `method_not_found`
    /// predates versioning: version [`PRE_VERSIONING`].
    pub async fn hello(&mut self) -> Result<u32, HolderError> {
        let v = match self
            .call::<h::Hello>(&h::HelloParams {
                protocol: h::HOLDER_PROTOCOL_RANGE,
                direct: false,
            })
            .await
        {
            Ok(r) => r.protocol,
            Err(HolderError::Rpc(e)) if e.code == ErrorCode::MethodNotFound.code() => {
                PRE_VERSIONING
            }
            Err(e) => return Err(e),
        };
        self.protocol = Some(v);
        Ok(v)
    }

    /// Sends a request; returns its id.
    pub async fn send_value(&mut self, method: &str, params: Value) -> Result<Id, HolderError> {
        let id = Id::Number(self.next_id);
        self.next_id += 1;
        let line = ccd_protocol::encode(&Request::new(id.clone(), method, Some(params)))
            .map_err(|e| HolderError::Decode(e.to_string()))?;
        self.written = false;
        self.writer.write_all(&line).await?;
        self.written = true;
        Ok(id)
    }

    /// Whether the last request was written whole to the socket (the
    /// holder may have read it), whatever happened after.
    pub fn request_written(&self) -> bool {
        self.written
    }

    /// Reads until the response to `id`; notifications met are dropped.
    pub async fn wait(&mut self, id: &Id) -> Result<Value, HolderError> {
        loop {
            let Some(line) = self.reader.next_line().await? else {
                return Err(HolderError::Closed);
            };
            if let Ok(Incoming::Response(r)) = parse_incoming(&line) {
                if r.id.as_ref() == Some(id) {
                    return r.outcome.map_err(HolderError::Rpc);
                }
            }
        }
    }

    /// Calls `M` and decodes its result.
    pub async fn call<M: HolderMethod>(
        &mut self,
        params: &M::Params,
    ) -> Result<M::Result, HolderError> {
        self.call_as::<M, M::Result>(params).await
    }

    /// Calls `M` and decodes its result as `R` (a lenient view of a
    /// result, e.g. `serde_json::Value`).
    pub async fn call_as<M: HolderMethod, R: DeserializeOwned>(
        &mut self,
        params: &M::Params,
    ) -> Result<R, HolderError> {
        self.call_within::<M, R>(params, CALL_TIMEOUT).await
    }

    /// Calls `M`, giving the holder `timeout` to answer (a walk of a
    /// dialog takes longer than a control call), and decodes its result
    /// as `R`.
    pub async fn call_within<M: HolderMethod, R: DeserializeOwned>(
        &mut self,
        params: &M::Params,
        timeout: Duration,
    ) -> Result<R, HolderError> {
        let params = to_params(params)?;
        let pid = self.peer_pid;
        let fut = async {
            let id = self.send_value(M::NAME, params).await?;
            self.wait(&id).await
        };
        let stopped = stopped(pid);
        let v = tokio::select! {
            r = tokio::time::timeout(timeout, fut) => r.map_err(|_| HolderError::Timeout)??,
            pid = stopped => return Err(HolderError::Stopped { pid }),
        };
        serde_json::from_value(v).map_err(|e| HolderError::Decode(format!("{}: {e}", M::NAME)))
    }
}

/// Resolves with `pid` once the holder process `pid` is seen stopped
/// (looked at every [`STOPPED_CHECK`]); never without a pid. Raced against
/// a wait for the holder's answer.
pub async fn stopped(pid: Option<u32>) -> u32 {
    let Some(pid) = pid else {
        return std::future::pending().await;
    };
    // First look after one interval: a call answered sooner (all of them,
    // keystrokes included) never reads the process state.
    loop {
        tokio::time::sleep(STOPPED_CHECK).await;
        if ccd_sched::is_stopped(pid) {
            return pid;
        }
    }
}

/// `params` as the JSON a request carries.
pub fn to_params<P: Serialize>(params: &P) -> Result<Value, HolderError> {
    serde_json::to_value(params).map_err(|e| HolderError::Decode(format!("params: {e}")))
}

/// One call of `M` on a fresh connection (no hello: a connection without
/// one speaks the holder's oldest version, all a one-off call needs).
pub async fn call_once<M: HolderMethod>(
    socket: &Path,
    params: &M::Params,
) -> Result<M::Result, HolderError> {
    HolderConn::connect(socket).await?.call::<M>(params).await
}
