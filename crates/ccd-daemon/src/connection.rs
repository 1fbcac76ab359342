//! One client connection: its reader loop and writer task (the
//! connection's context, what a request sees of it, is [`ConnCtx`]).
//!
//! Invariants:
//! - The reader loop never waits on a handler: each request runs in its own
//!   task and replies through `out`, so a long `session.new` does not stall
//!   input typed on the same connection. Replies may thus come out of order
//!   (JSON-RPC matches them by id).
//! - `out` is bounded in bytes ([`out_queue`]): a client that stops
//!   reading eventually stalls the tasks writing to it — its attachment forwarders included, which makes
//!   the holder drop *that* attachment's queue and resync it later. Nothing
//!   else waits on this client.
//! - At most [`MAX_IN_FLIGHT`] requests of one connection run at once:
//!   the reader takes a permit per line before it handles it and stops
//!   reading the socket while none is left (a request task returns its
//!   permit once its reply is queued). A client that pipelines requests
//!   and reads no reply thus pins the out queue's 8 MiB, 32 requests (each
//!   ≤ 1 MiB, the line limit) with their replies, and the read buffer —
//!   not one task per request it manages to send. The permit wait never
//!   deadlocks: a task waits only on the out queue, which the writer
//!   drains while the client reads and closes when it leaves.
//! - Before a successful `hello`, every method but `hello` fails with
//!   `handshake_required`; a connection that has not said `hello` within
//!   [`HELLO_DEADLINE`] gets one error line and is closed (idle connections
//!   would otherwise hold client slots and descriptors for ever).
//! - Per-connection resources (attachments, transcript followers, the
//!   event subscription) live in [`ConnCtx`] and are released by drop
//!   (`conn_slots`): their tasks hold the out queue, never the
//!   context, so when the reader loop ends and the last request task
//!   finishes, the context drops and every task it owns is aborted.
//! - A descriptor a handler passes with its reply (a direct stream's holder
//!   connection, [`ConnCtx::pass_with_reply`]) travels in the same queue
//!   item as the reply line and is sent with that line's first byte, so
//!   the client finds it in the read that brings the reply.
//! - Shutdown (the daemon's side: the server's accept loop): once
//!   `Daemon::shutdown` is set, the reader stops reading and tears the
//!   connection's streams down, and the writer closes `out` (no line is
//!   queued after that) but still writes every line queued before, then
//!   ends; [`handle`] returns once the writer has. `daemon.stop` sets the
//!   flag only after its own reply is queued, so that reply is among the
//!   lines written. Both wait on the flag's value, not its change, so a
//!   connection accepted just as the daemon stops ends too.
//! - A client that shuts its write side may still read the replies to
//!   what it sent (a half-close), so its request tasks run on. Once its
//!   end of the socket is closed altogether (the socket hangs up), a
//!   request that only waits on its behalf stops waiting
//!   ([`ConnCtx::hung_up`]): a task watches for the hang-up from the
//!   client's EOF on, on a duplicate of the socket's descriptor (one more
//!   descriptor, only while such a connection's tasks finish; none when
//!   the duplicate cannot be had), and ends with the context.

use crate::conn_ctx::ConnCtx;
use crate::out_queue::{self, OUT_BUDGET};
use crate::state::Daemon;
use ccd_protocol::methods::attach::{SessionFocus, SessionInput, SessionResize};
use ccd_protocol::methods::daemon::Hello;
use ccd_protocol::{
    parse_incoming, ErrorCode, Id, Incoming, LineDecoder, Method, Response, RpcError,
};
use serde_json::Value;
use std::os::fd::OwnedFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt, Interest};
use tokio::net::unix::OwnedWriteHalf;
use tokio::net::UnixStream;

/// How long a new connection has to say `hello`.
pub const HELLO_DEADLINE: Duration = Duration::from_secs(5);

/// Requests of one connection handled at once (see the module doc).
pub const MAX_IN_FLIGHT: usize = 32;

/// Serves one connection until the client leaves or the daemon stops.
/// The accept loop has counted it in `daemon.clients` (its slot under the
/// connection cap); this gives the slot back when the connection ends.
pub async fn handle(daemon: Arc<Daemon>, stream: UnixStream) {
    let (mut rd, mut wr) = stream.into_split();
    let (tx, mut rx) = out_queue::channel(OUT_BUDGET);
    let mut stopping = daemon.shutdown.subscribe();
    let writer = tokio::spawn(async move {
        let mut closed = false;
        loop {
            let next = tokio::select! {
                next = rx.recv() => next,
                // The daemon stops: what is queued still goes out.
                _ = until_stopping(&mut stopping), if !closed => {
                    rx.close();
                    closed = true;
                    continue;
                }
            };
            let Some((line, permit)) = next else { break };
            let written = match line.fd {
                Some(fd) => write_with_fd(&mut wr, &line.bytes, &fd).await,
                None => wr.write_all(&line.bytes).await,
            };
            if written.is_err() {
                break;
            }
            drop(permit);
        }
    });
    let ctx = Arc::new(ConnCtx::new(daemon.clone(), tx));
    let mut stop = daemon.shutdown.subscribe();
    let mut decoder = LineDecoder::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut lines = Vec::new();
    let in_flight = Arc::new(tokio::sync::Semaphore::new(MAX_IN_FLIGHT));
    let hello_by = tokio::time::Instant::now() + HELLO_DEADLINE;
    'conn: loop {
        let waiting_hello = !ctx.handshaken();
        let n = tokio::select! {
            r = rd.read(&mut buf) => match r {
                Ok(0) => {
                    ctx.watch_hangup(rd.as_ref());
                    break;
                }
                Err(_) => {
                    ctx.mark_hung_up();
                    break;
                }
                Ok(n) => n,
            },
            _ = until_stopping(&mut stop) => break,
            _ = tokio::time::sleep_until(hello_by), if waiting_hello => {
                tracing::debug!("no hello within the deadline; closing the connection");
                let e = RpcError::new(
                    ErrorCode::HandshakeRequired,
                    format!("no hello within {} s; closing", HELLO_DEADLINE.as_secs()),
                );
                reply(&ctx, Response::error(None, e)).await;
                break;
            }
        };
        lines.clear();
        decoder.push_into(&buf[..n], &mut lines);
        for line in lines.drain(..) {
            // Not reading on while MAX_IN_FLIGHT requests are pending.
            let permit = tokio::select! {
                p = in_flight.clone().acquire_owned() => match p {
                    Ok(p) => p,
                    Err(_) => break 'conn,
                },
                _ = until_stopping(&mut stop) => break 'conn,
            };
            match line {
                Ok(text) => on_line(&ctx, &text, permit).await,
                Err(e) => {
                    tracing::debug!(error = %e, "bad frame from client");
                    let err = e
                        .to_rpc_error()
                        .unwrap_or_else(|| RpcError::internal(e.to_string()));
                    reply(&ctx, Response::error(None, err)).await;
                }
            }
        }
    }
    // Leaving detaches every attachment of this connection and ends its
    // followers and subscription: they go with the context, dropped here
    // or by the last request task still running.
    drop(ctx);
    let _ = writer.await;
    daemon.clients.fetch_sub(1, Ordering::Relaxed);
    tracing::debug!("client disconnected");
}

/// Resolves once the daemon is stopping: at once if it already is (a
/// connection accepted as the flag is set must not miss it).
pub(crate) async fn until_stopping(flag: &mut tokio::sync::watch::Receiver<bool>) {
    // An error means the daemon (the sender) is gone: stopping as well.
    let _ = flag.wait_for(|stop| *stop).await;
}

async fn reply(ctx: &ConnCtx, r: Response) {
    reply_with(ctx, r, None).await;
}

async fn reply_with(ctx: &ConnCtx, r: Response, fd: Option<OwnedFd>) {
    match (ccd_protocol::encode(&r), fd) {
        (Ok(line), None) => {
            ctx.send_line(line).await;
        }
        (Ok(line), Some(fd)) => {
            ctx.send_line_with_fd(line, fd).await;
        }
        (Err(error), _) => tracing::error!(%error, "cannot encode a reply"),
    }
}

/// Writes `line`, passing `fd` (`SCM_RIGHTS`) with its first bytes.
async fn write_with_fd(wr: &mut OwnedWriteHalf, line: &[u8], fd: &OwnedFd) -> std::io::Result<()> {
    use std::os::fd::AsFd;
    let sock: &UnixStream = wr.as_ref();
    let sent = loop {
        sock.writable().await?;
        let r = sock.try_io(Interest::WRITABLE, || {
            ccd_os::fdpass::send_with_fds(sock.as_fd(), line, &[fd.as_fd()])
        });
        match r {
            Ok(n) => break n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        }
    };
    wr.write_all(&line[sent..]).await
}

/// Handles one line; `permit` (a [`MAX_IN_FLIGHT`] slot) is held until
/// the line's reply is queued.
async fn on_line(ctx: &Arc<ConnCtx>, text: &str, permit: tokio::sync::OwnedSemaphorePermit) {
    let req = match parse_incoming(text) {
        Ok(Incoming::Request(r)) => r,
        Ok(Incoming::Notification(n)) => {
            // Client notifications: input, resize and focus may come this
            // way (no reply, less traffic); anything else is ignored.
            let allowed = [SessionInput::NAME, SessionResize::NAME, SessionFocus::NAME]
                .contains(&n.method.as_str());
            if ctx.handshaken() && allowed {
                let _ = crate::router::dispatch(ctx.clone(), None, &n.method, n.params).await;
            }
            return;
        }
        Ok(Incoming::Response(_)) => return, // the daemon sends no requests
        Err(invalid) => {
            reply(ctx, invalid.into_response()).await;
            return;
        }
    };
    let id = req.id.clone().unwrap_or(Id::Number(0));
    let is_notification = req.id.is_none();
    if req.method == Hello::NAME {
        let result = crate::router::dispatch(ctx.clone(), None, Hello::NAME, req.params).await;
        if result.is_ok() {
            ctx.mark_handshaken();
        }
        if !is_notification {
            reply(ctx, to_response(id, result)).await;
        }
        return;
    }
    if !ctx.handshaken() {
        let e = RpcError::new(ErrorCode::HandshakeRequired, "say hello first");
        reply(ctx, Response::error(Some(id), e)).await;
        return;
    }
    if ctx.daemon.is_stopping() {
        let e = RpcError::new(ErrorCode::ShuttingDown, "the ccd daemon is stopping");
        reply(ctx, Response::error(Some(id), e)).await;
        return;
    }
    let ctx = ctx.clone();
    tokio::spawn(async move {
        let method = req.method.clone();
        let result =
            crate::router::dispatch(ctx.clone(), req.id.clone(), &method, req.params).await;
        if let Err(e) = &result {
            tracing::debug!(%method, code = e.code, message = %e.message, "request failed");
        }
        if !is_notification {
            let fd = ctx.take_reply_fd(&id);
            reply_with(&ctx, to_response(id.clone(), result), fd).await;
            ctx.mark_replied(&id);
        }
        drop(permit);
    });
}

fn to_response(id: Id, result: Result<Value, RpcError>) -> Response {
    match result {
        Ok(v) => Response::success(id, v),
        Err(e) => Response::error(Some(id), e),
    }
}
