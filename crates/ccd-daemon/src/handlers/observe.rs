//! `session.attach` in `observe` mode for a session running outside ccd:
//! there is no screen to mirror, so the daemon follows its transcript
//! (bounded reads, never the whole file) and sends `session.transcript`
//! notifications, then `session.exited` once no process holds the session.

use crate::connection::ConnCtx;
use ccd_claude::transcript::{Follower, Rendered};
use ccd_protocol::methods::attach::{AttachMode, AttachResult};
use ccd_protocol::methods::session::SessionInfo;
use ccd_protocol::methods::TermSize;
use ccd_protocol::{ErrorCode, Id, RpcError};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// How often the transcript and the process are looked at.
const POLL: Duration = Duration::from_millis(250);

fn items(session: &str, rendered: Vec<Rendered>) -> Value {
    json!({
        "session": session,
        "items": rendered.into_iter().map(|r| json!({
            "kind": serde_json::to_value(r.kind).unwrap_or(Value::Null),
            "text": r.text,
            "timestamp": r.timestamp,
        })).collect::<Vec<_>>(),
    })
}

/// Starts following `info`'s transcript for this connection.
pub async fn follow(
    ctx: &Arc<ConnCtx>,
    id: Option<Id>,
    info: &SessionInfo,
    last: u32,
    size: Option<TermSize>,
) -> Result<Value, RpcError> {
    let sid = info.session_id.clone();
    let Some(path) = info.transcript.clone() else {
        return Err(RpcError::new(
            ErrorCode::TranscriptMissing,
            format!("session {sid} runs outside ccd and has no transcript yet: nothing to observe until its first turn"),
        ));
    };
    let p = std::path::PathBuf::from(&path);
    let opened = tokio::task::spawn_blocking(move || Follower::open(&p, last as usize))
        .await
        .map_err(|e| RpcError::internal(e.to_string()))?
        .map_err(|e| RpcError::new(ErrorCode::TranscriptMissing, format!("{path}: {e}")))?;
    let (mut follower, first) = opened;
    let replied = id.as_ref().map(|id| ctx.after_reply(id));
    let conn = ctx.clone();
    let session = sid.clone();
    let task = tokio::spawn(async move {
        if let Some(r) = replied {
            let _ = r.await;
        }
        if !first.is_empty()
            && !conn
                .notify("session.transcript", items(&session, first))
                .await
        {
            return;
        }
        loop {
            tokio::time::sleep(POLL).await;
            let (f, new) = match tokio::task::spawn_blocking(move || {
                let r = follower.poll();
                (follower, r)
            })
            .await
            {
                Ok((f, Ok(new))) => (f, new),
                _ => break,
            };
            follower = f;
            if !new.is_empty()
                && !conn
                    .notify("session.transcript", items(&session, new))
                    .await
            {
                return;
            }
            if !still_held(&conn, &session).await {
                let _ = conn
                    .notify("session.exited", json!({"session": session}))
                    .await;
                break;
            }
        }
        if let Ok(mut m) = conn.followers.lock() {
            m.remove(&session);
        }
    });
    let old = ctx
        .followers
        .lock()
        .ok()
        .and_then(|mut m| m.insert(sid.clone(), task));
    if let Some(old) = old {
        old.abort();
    }
    tracing::info!(session = %sid, "observing a session outside ccd through its transcript");
    let r = AttachResult {
        session: sid,
        mode: AttachMode::Observe,
        // No screen to size: echo the client's, else the default.
        size: size.unwrap_or(TermSize {
            cols: 120,
            rows: 40,
        }),
        resumed: false,
        fresh_instead_of: None,
        direct: false,
        holder_protocol: None,
    };
    serde_json::to_value(r).map_err(|e| RpcError::internal(e.to_string()))
}

/// Whether some process may still be running the session (re-read now).
async fn still_held(ctx: &ConnCtx, sid: &str) -> bool {
    let dir = ctx.daemon.options.claude_config.sessions_dir();
    let sid = sid.to_string();
    tokio::task::spawn_blocking(move || {
        let probe = ccd_claude::liveness::system_probe();
        ccd_claude::registry::read_all(&dir)
            .map(|entries| {
                entries.iter().any(|e| {
                    e.session_id == sid
                        && ccd_claude::liveness::check(e, probe.as_ref())
                            .liveness
                            .may_be_running()
                })
            })
            .unwrap_or(true)
    })
    .await
    .unwrap_or(true)
}
