//! `hello`, `daemon.status`, `daemon.stop`.
//!
//! `daemon.stop` replies, then stops the daemon: it sets
//! `Daemon::stopping` at once (requests arriving later are refused with
//! `shutting_down`) and `Daemon::shutdown` once its reply is queued
//! ([`ConnCtx::after_reply`]), which the connection's writer then still
//! writes (see the server's module doc for the whole shutdown). A reply that
//! cannot be queued within [`crate::state::DRAIN_BOUND`] (its client
//! reads nothing and its queue is full) does not hold the stop up.

use crate::conn_ctx::ConnCtx;
use ccd_protocol::methods::daemon::{
    DaemonStatusResult, DaemonStopParams, DaemonStopResult, HelloParams, HelloResult,
};
use ccd_protocol::{handshake, Id, RpcError, PROTOCOL_VERSION};
use std::sync::atomic::Ordering;

pub fn hello(p: HelloParams) -> Result<HelloResult, RpcError> {
    let v = handshake::negotiate(
        p.protocol.min,
        p.protocol.max,
        ccd_protocol::MIN_PROTOCOL_VERSION,
        PROTOCOL_VERSION,
    )?;
    tracing::debug!(client = %p.client, protocol = v, "hello");
    Ok(HelloResult {
        daemon_version: env!("CARGO_PKG_VERSION").into(),
        protocol: v,
        server: handshake::SERVER_NAME.into(),
    })
}

pub async fn status(ctx: &ConnCtx) -> Result<DaemonStatusResult, RpcError> {
    let d = &ctx.daemon;
    let started = d
        .started_at
        .duration_since(std::time::UNIX_EPOCH)
        .map(|t| t.as_millis() as u64)
        .unwrap_or(0);
    let text = |p: &std::path::Path| p.to_string_lossy().into_owned();
    Ok(DaemonStatusResult {
        daemon_version: env!("CARGO_PKG_VERSION").into(),
        protocol: PROTOCOL_VERSION,
        pid: std::process::id(),
        started_at: started,
        socket: text(&d.options.socket_dir.socket()),
        sessions: d.holders.snapshot().len() as u32,
        clients: d.clients.load(Ordering::Relaxed) as u32,
        refused_connections: Some(d.refused.load(Ordering::Relaxed)),
        claude_bin: Some(text(&d.options.claude_bin)),
        claude_config_dir: Some(text(d.options.claude_config.root())),
        state_dir: Some(text(&d.options.state_dir)),
    })
}

pub async fn stop(
    ctx: &ConnCtx,
    id: Option<Id>,
    p: DaemonStopParams,
) -> Result<DaemonStopResult, RpcError> {
    ctx.daemon
        .stopping
        .store(true, std::sync::atomic::Ordering::Release);
    if p.kill_sessions {
        // Signal them all, then collect every exit: a holder whose exit
        // nobody collects would wait for a daemon forever.
        let holders = ctx.daemon.holders.snapshot();
        for e in &holders {
            let _ = crate::holders::rpc::call_once::<ccd_protocol::holder::Kill>(
                &e.socket,
                &ccd_protocol::holder::KillParams {
                    signal: ccd_protocol::holder::KillSignal::Hup,
                    grace_ms: Some(3000),
                    ..Default::default()
                },
            )
            .await;
        }
        // The grace periods run concurrently already: collect in turn.
        for e in &holders {
            if let Err(error) = ctx.daemon.holders.collect(e, 5000).await {
                tracing::warn!(holder = %e.id, %error, "could not collect a session while stopping");
            }
        }
    }
    tracing::info!(kill_sessions = p.kill_sessions, "daemon.stop requested");
    // Reply first, then stop: the signal is the reply being queued.
    let replied = id.map(|id| ctx.after_reply(&id));
    let daemon = ctx.daemon.clone();
    tokio::spawn(async move {
        if let Some(replied) = replied {
            if tokio::time::timeout(crate::state::DRAIN_BOUND, replied)
                .await
                .is_err()
            {
                tracing::warn!("the daemon.stop reply could not be queued; stopping anyway");
            }
        }
        let _ = daemon.shutdown.send(true);
    });
    Ok(DaemonStopResult { stopping: true })
}
