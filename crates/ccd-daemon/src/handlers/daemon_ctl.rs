//! `hello`, `daemon.status`, `daemon.stop`.

use crate::connection::ConnCtx;
use ccd_protocol::methods::daemon::{HelloParams, HelloResult};
use ccd_protocol::{handshake, parse_params, RpcError, PROTOCOL_VERSION};
use serde_json::{json, Value};
use std::sync::atomic::Ordering;

pub fn hello(params: Option<Value>) -> Result<Value, RpcError> {
    let p: HelloParams = parse_params(params)?;
    let v = handshake::negotiate(
        p.protocol.min,
        p.protocol.max,
        ccd_protocol::MIN_PROTOCOL_VERSION,
        PROTOCOL_VERSION,
    )?;
    tracing::debug!(client = %p.client, protocol = v, "hello");
    let r = HelloResult {
        daemon_version: env!("CARGO_PKG_VERSION").into(),
        protocol: v,
        server: handshake::SERVER_NAME.into(),
    };
    serde_json::to_value(r).map_err(|e| RpcError::internal(e.to_string()))
}

pub async fn status(ctx: &ConnCtx) -> Result<Value, RpcError> {
    let d = &ctx.daemon;
    let started = d
        .started_at
        .duration_since(std::time::UNIX_EPOCH)
        .map(|t| t.as_millis() as u64)
        .unwrap_or(0);
    Ok(json!({
        "daemon_version": env!("CARGO_PKG_VERSION"),
        "protocol": PROTOCOL_VERSION,
        "pid": std::process::id(),
        "started_at": started,
        "socket": d.options.socket_dir.socket(),
        "sessions": d.holders.snapshot().len(),
        "clients": d.clients.load(Ordering::Relaxed),
        "refused_connections": d.refused.load(Ordering::Relaxed),
        "claude_bin": d.options.claude_bin,
        "claude_config_dir": d.options.claude_config.root(),
        "state_dir": d.options.state_dir,
    }))
}

pub async fn stop(ctx: &ConnCtx, params: Option<Value>) -> Result<Value, RpcError> {
    #[derive(serde::Deserialize, Default)]
    struct P {
        #[serde(default)]
        kill_sessions: bool,
    }
    let p: P = parse_params(params)?;
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
    let daemon = ctx.daemon.clone();
    tokio::spawn(async move {
        // Reply first, then stop.
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        let _ = daemon.shutdown.send(true);
    });
    Ok(json!({"stopping": true}))
}
