//! An async connection to one holder, speaking the holder's `holder.*`
//! methods over ccd-protocol's line framing.

use ccd_protocol::{parse_incoming, Id, Incoming, LineDecoder, Request, RpcError};
use serde::de::DeserializeOwned;
use serde_json::Value;
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
    #[error("holder error {}: {}", .0.code, .0.message)]
    Rpc(RpcError),
    #[error("unexpected holder reply: {0}")]
    Decode(String),
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
    /// unfinished line): for [`super::relay::Relay`], which relays the rest
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
}

/// How long a control call may take.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(10);

impl HolderConn {
    pub async fn connect(path: &Path) -> Result<Self, HolderError> {
        let s = tokio::time::timeout(Duration::from_secs(2), UnixStream::connect(path))
            .await
            .map_err(|_| HolderError::Timeout)??;
        let (rd, wr) = s.into_split();
        Ok(Self {
            reader: LineReader::new(rd),
            writer: wr,
            next_id: 1,
        })
    }

    /// Sends a request; returns its id.
    pub async fn send(&mut self, method: &str, params: Value) -> Result<Id, HolderError> {
        let id = Id::Number(self.next_id);
        self.next_id += 1;
        let line = ccd_protocol::encode(&Request::new(id.clone(), method, Some(params)))
            .map_err(|e| HolderError::Decode(e.to_string()))?;
        self.writer.write_all(&line).await?;
        Ok(id)
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

    /// Calls `method` and decodes its result.
    pub async fn call<T: DeserializeOwned>(
        &mut self,
        method: &str,
        params: Value,
    ) -> Result<T, HolderError> {
        let fut = async {
            let id = self.send(method, params).await?;
            self.wait(&id).await
        };
        let v = tokio::time::timeout(CALL_TIMEOUT, fut)
            .await
            .map_err(|_| HolderError::Timeout)??;
        serde_json::from_value(v).map_err(|e| HolderError::Decode(format!("{method}: {e}")))
    }
}

/// One call on a fresh connection.
pub async fn call_once<T: DeserializeOwned>(
    socket: &Path,
    method: &str,
    params: Value,
) -> Result<T, HolderError> {
    HolderConn::connect(socket)
        .await?
        .call(method, params)
        .await
}
