//! One client connection.
//!
//! Invariants:
//! - The reader loop never waits on a handler: each request runs in its own
//!   task and replies through `out`, so a long `session.new` does not stall
//!   input typed on the same connection. Replies may thus come out of order
//!   (JSON-RPC matches them by id).
//! - `out` is bounded in bytes ([`crate::out_queue`]): a client that stops
//!   reading eventually stalls the tasks writing to it — its attachment forwarders included, which makes
//!   the holder drop *that* attachment's queue and resync it later. Nothing
//!   else waits on this client.
//! - Before a successful `hello`, every method but `hello` fails with
//!   `handshake_required`.

use crate::handlers::attach::Attachment;
use crate::out_queue::{self, OutSender, OUT_BUDGET};
use crate::state::Daemon;
use ccd_protocol::{parse_incoming, ErrorCode, Id, Incoming, LineDecoder, Response, RpcError};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;

/// What a request handler can see of its connection.
pub struct ConnCtx {
    pub daemon: Arc<Daemon>,
    out: OutSender,
    handshaken: AtomicBool,
    /// Session id → this connection's attachment to it.
    pub attachments: Mutex<HashMap<String, Attachment>>,
    /// Session id → the task following its transcript (observe of a
    /// session running outside ccd).
    pub followers: Mutex<HashMap<String, tokio::task::JoinHandle<()>>>,
    /// The task forwarding events to this connection, once subscribed.
    pub subscription: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Fired once the reply to a request (by id) is queued: streams a
    /// request starts wait for it, so the reply precedes their output.
    replied: Mutex<HashMap<String, tokio::sync::oneshot::Sender<()>>>,
}

impl ConnCtx {
    /// Queues one encoded line (waits while the client's queue is full).
    pub async fn send_line(&self, line: Vec<u8>) -> bool {
        self.out.send(line).await
    }

    /// Queues a notification.
    pub async fn notify(&self, method: &str, params: Value) -> bool {
        let n = ccd_protocol::Notification::new(method, Some(params));
        match ccd_protocol::encode(&n) {
            Ok(line) => self.send_line(line).await,
            Err(_) => false,
        }
    }

    /// A sender for tasks that outlive one request (attach forwarders).
    pub fn out(&self) -> OutSender {
        self.out.clone()
    }

    /// A signal that fires once the reply to request `id` is queued.
    pub fn after_reply(&self, id: &Id) -> tokio::sync::oneshot::Receiver<()> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        if let Ok(mut m) = self.replied.lock() {
            m.insert(id_key(id), tx);
        }
        rx
    }

    fn mark_replied(&self, id: &Id) {
        let tx = self
            .replied
            .lock()
            .ok()
            .and_then(|mut m| m.remove(&id_key(id)));
        if let Some(tx) = tx {
            let _ = tx.send(());
        }
    }
}

fn id_key(id: &Id) -> String {
    serde_json::to_string(id).unwrap_or_default()
}

/// Serves one connection until the client leaves or the daemon stops.
pub async fn handle(daemon: Arc<Daemon>, stream: UnixStream) {
    daemon.clients.fetch_add(1, Ordering::Relaxed);
    let (mut rd, mut wr) = stream.into_split();
    let (tx, mut rx) = out_queue::channel(OUT_BUDGET);
    let writer = tokio::spawn(async move {
        while let Some((line, permit)) = rx.recv().await {
            if wr.write_all(&line).await.is_err() {
                break;
            }
            drop(permit);
        }
    });
    let ctx = Arc::new(ConnCtx {
        daemon: daemon.clone(),
        out: tx,
        handshaken: AtomicBool::new(false),
        attachments: Mutex::new(HashMap::new()),
        followers: Mutex::new(HashMap::new()),
        subscription: Mutex::new(None),
        replied: Mutex::new(HashMap::new()),
    });
    let mut stop = daemon.shutdown.subscribe();
    let mut decoder = LineDecoder::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut lines = Vec::new();
    loop {
        let n = tokio::select! {
            r = rd.read(&mut buf) => match r {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            },
            _ = stop.changed() => break,
        };
        lines.clear();
        decoder.push_into(&buf[..n], &mut lines);
        for line in lines.drain(..) {
            match line {
                Ok(text) => on_line(&ctx, &text).await,
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
    // Leaving detaches every attachment of this connection.
    let gone: Vec<Attachment> = match ctx.attachments.lock() {
        Ok(mut m) => m.drain().map(|(_, a)| a).collect(),
        Err(_) => Vec::new(),
    };
    for a in gone {
        a.stop();
    }
    if let Ok(mut f) = ctx.followers.lock() {
        for (_, t) in f.drain() {
            t.abort();
        }
    }
    if let Some(t) = ctx.subscription.lock().ok().and_then(|mut s| s.take()) {
        t.abort();
    }
    drop(ctx);
    let _ = writer.await;
    daemon.clients.fetch_sub(1, Ordering::Relaxed);
    tracing::debug!("client disconnected");
}

async fn reply(ctx: &ConnCtx, r: Response) {
    match ccd_protocol::encode(&r) {
        Ok(line) => {
            ctx.send_line(line).await;
        }
        Err(error) => tracing::error!(%error, "cannot encode a reply"),
    }
}

async fn on_line(ctx: &Arc<ConnCtx>, text: &str) {
    let req = match parse_incoming(text) {
        Ok(Incoming::Request(r)) => r,
        Ok(Incoming::Notification(n)) => {
            // Client notifications: input and resize may come this way (no
            // reply, less traffic); anything else is ignored.
            let allowed = matches!(n.method.as_str(), "session.input" | "session.resize");
            if ctx.handshaken.load(Ordering::Acquire) && allowed {
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
    if req.method == "hello" {
        let result = crate::handlers::daemon_ctl::hello(req.params);
        if result.is_ok() {
            ctx.handshaken.store(true, Ordering::Release);
        }
        if !is_notification {
            reply(ctx, to_response(id, result)).await;
        }
        return;
    }
    if !ctx.handshaken.load(Ordering::Acquire) {
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
            reply(&ctx, to_response(id.clone(), result)).await;
            ctx.mark_replied(&id);
        }
    });
}

fn to_response(id: Id, result: Result<Value, RpcError>) -> Response {
    match result {
        Ok(v) => Response::success(id, v),
        Err(e) => Response::error(Some(id), e),
    }
}
