//! `session.attach` in `observe` mode for a session running outside ccd:
//! there is no screen to mirror, so the daemon follows its transcript
//! (bounded reads, never the whole file) and sends `session.transcript`
//! notifications, then `session.exited` once no process holds the session.
//! And `session.tail`: the same items, the last ones, once (any session
//! with a transcript, held or not, live or dead).

use crate::conn_ctx::{notify, ConnCtx};
use crate::conn_slots::TaskGuard;
use crate::session_ops::resolve::resolve;
use crate::state::Daemon;
use ccd_claude::transcript::{Follower, Rendered};
use ccd_protocol::methods::attach::{AttachMode, AttachResult};
use ccd_protocol::methods::session::{SessionInfo, TailParams};
use ccd_protocol::methods::TermSize;
use ccd_protocol::stream::{
    Exited, SessionExited, SessionTranscript, TranscriptItem, TranscriptItems,
};
use ccd_protocol::{ErrorCode, Id, RpcError};
use std::sync::Arc;
use std::time::Duration;

/// How often the transcript and the process are looked at.
const POLL: Duration = Duration::from_millis(250);

fn items(session: &str, rendered: Vec<Rendered>) -> TranscriptItems {
    TranscriptItems {
        session: session.to_string(),
        items: rendered
            .into_iter()
            .map(|r| TranscriptItem {
                kind: serde_json::to_value(r.kind)
                    .ok()
                    .and_then(|v| v.as_str().map(String::from))
                    .unwrap_or_default(),
                text: r.text,
                timestamp: r.timestamp,
            })
            .collect(),
    }
}

/// `session.tail`: the transcript's last items (a bounded tail window is
/// read, never the whole file), as `session.transcript` carries them.
pub async fn tail(ctx: &ConnCtx, p: TailParams) -> Result<TranscriptItems, RpcError> {
    let (info, _) = resolve(&ctx.daemon, &p.session).await?;
    let sid = info.session_id.clone();
    let Some(path) = info.transcript.clone() else {
        return Err(RpcError::new(
            ErrorCode::TranscriptMissing,
            format!("session {sid} has no transcript yet (nothing was said in it)"),
        ));
    };
    let n = p.count();
    let file = std::path::PathBuf::from(&path);
    let (_, last) = tokio::task::spawn_blocking(move || Follower::open(&file, n))
        .await
        .map_err(|e| RpcError::internal(e.to_string()))?
        .map_err(|e| RpcError::new(ErrorCode::TranscriptMissing, format!("{path}: {e}")))?;
    Ok(items(&sid, last))
}

/// Starts following `info`'s transcript for this connection.
pub async fn follow(
    ctx: &Arc<ConnCtx>,
    id: Option<Id>,
    info: &SessionInfo,
    last: u32,
    size: Option<TermSize>,
) -> Result<AttachResult, RpcError> {
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
    let out = ctx.out();
    let daemon = ctx.daemon.clone();
    let session = sid.clone();
    let slot = ctx.followers.key(&sid);
    let own = slot.clone();
    let task = tokio::spawn(async move {
        if let Some(r) = replied {
            let _ = r.await;
        }
        if !first.is_empty() && !notify::<SessionTranscript>(&out, &items(&session, first)).await {
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
            if !new.is_empty() && !notify::<SessionTranscript>(&out, &items(&session, new)).await {
                return;
            }
            if !still_held(&daemon, &session).await {
                let exited = Exited {
                    session: session.clone(),
                    exit_code: None,
                    signal: None,
                };
                notify::<SessionExited>(&out, &exited).await;
                break;
            }
        }
        own.release();
    });
    // Replaces (and so ends) an earlier follower of the same session.
    ctx.followers.put(&slot, TaskGuard::new(task));
    tracing::info!(session = %sid, "observing a session outside ccd through its transcript");
    Ok(AttachResult {
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
    })
}

/// Whether some process may still be running the session (re-read now).
async fn still_held(daemon: &Daemon, sid: &str) -> bool {
    let dir = daemon.options.claude_config.sessions_dir();
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
