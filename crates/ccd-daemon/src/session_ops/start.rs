//! Starting a session under a new holder ([`start`]): the holder is
//! spawned (`holders::spawn`) and, when the client waits, followed until
//! its start settles, with `session.progress` on each step; and the
//! working directory a start may use ([`checked_cwd`]).

use super::drive::text_screen;
use crate::conn_ctx::ConnCtx;
use crate::holders::spawn::{spawn_holder, Launch};
use crate::holders::spec::HolderMeta;
use crate::holders::HolderEntry;
use crate::views;
use ccd_protocol::error_data::{CwdMissingData, SpawnFailedData};
use ccd_protocol::methods::session::{Lifecycle, NewResult, Progress, SessionProgress};
use ccd_protocol::methods::TermSize;
use ccd_protocol::{ErrorCode, RpcError};
use std::path::Path;
use std::time::{Duration, Instant};

/// Normalizes `cwd` and checks it is an existing directory. A relative
/// path is refused: it would name a place relative to the daemon's own
/// current directory, which means nothing to the client.
pub fn checked_cwd(cwd: &str) -> Result<std::path::PathBuf, RpcError> {
    if !Path::new(cwd).is_absolute() {
        return Err(RpcError::new(
            ErrorCode::CwdMissing,
            format!("{cwd} is not an absolute path: the working directory must be absolute"),
        )
        .with_data_of(&CwdMissingData {
            session: None,
            cwd: Some(cwd.to_string()),
            transcript: None,
        }));
    }
    let p = ccd_claude::paths::normalize(Path::new(cwd));
    if !p.is_dir() {
        return Err(RpcError::new(
            ErrorCode::CwdMissing,
            format!("{} is not an existing directory", p.display()),
        )
        .with_data_of(&CwdMissingData {
            session: None,
            cwd: Some(p.to_string_lossy().into_owned()),
            transcript: None,
        }));
    }
    Ok(p)
}

/// How long `session.new` with `wait` waits for a settled start.
const START_WAIT: Duration = Duration::from_secs(90);

/// Starts a holder and, with `wait`, follows it until its start settles,
/// sending `session.progress` on each step (until the client hangs up:
/// then it answers at once, to nobody).
pub async fn start(
    ctx: &ConnCtx,
    meta: HolderMeta,
    args: Vec<String>,
    cwd: std::path::PathBuf,
    size: TermSize,
    auto_trust: bool,
    wait: bool,
) -> Result<NewResult, RpcError> {
    let id = meta.id.clone();
    let forked_from = meta.forked_from.clone();
    spawn_holder(
        &ctx.daemon.holders,
        &ctx.daemon.options,
        Launch {
            args,
            cwd: cwd.clone(),
            rows: size.rows,
            cols: size.cols,
            auto_trust,
            meta,
        },
    )
    .await?;
    let deadline = Instant::now() + START_WAIT;
    let mut last: Option<Lifecycle> = None;
    let entry = loop {
        let entry = ctx
            .daemon
            .holders
            .refresh(&id)
            .await
            .and_then(|_| ctx.daemon.holders.get(&id));
        let Some(entry) = entry else {
            // Collected already (it ended quickly) or died.
            let f = ctx.daemon.holders.finished_for_holder(&id);
            return Err(start_failed(f));
        };
        let l = entry.lifecycle();
        if wait && last.as_ref() != Some(&l) {
            let p = Progress {
                holder: id.clone(),
                session: entry.session_id().map(String::from),
                lifecycle: l.clone(),
                reason: None,
                step: None,
                cwd: None,
                pid: None,
            };
            ctx.notify::<SessionProgress>(&p).await;
            last = Some(l);
        }
        if !wait || views::start_settled(&entry) || Instant::now() > deadline {
            break entry;
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(50)) => {}
            // Nobody to tell: the holder starts on, followed by the
            // daemon's own refresh like any other.
            _ = ctx.hung_up() => {
                tracing::debug!(holder = %id, "the client left: no longer following the start");
                break entry;
            }
        }
    };
    let info = entry.info.as_ref();
    let lifecycle = entry.lifecycle();
    let reason = info.and_then(|i| {
        i.needs_attention
            .as_ref()
            .map(|a| views::attention_text(&a.reason))
            .or_else(|| i.failure.clone())
    });
    let screen = if matches!(
        lifecycle,
        Lifecycle::NeedsAttention | Lifecycle::Failed | Lifecycle::Exited
    ) {
        screen_rows(&entry).await
    } else {
        None
    };
    Ok(NewResult {
        session: entry.session_id().map(String::from),
        holder: id,
        pid: info.map(|i| i.child_pid),
        cwd: cwd.to_string_lossy().into_owned(),
        lifecycle,
        reason,
        screen,
        forked_from,
    })
}

fn start_failed(f: Option<crate::holders::Finished>) -> RpcError {
    let (reason, screen, exit) = match f {
        Some(f) => (
            f.failure
                .unwrap_or_else(|| format!("claude {} before it was ready", f.state)),
            f.screen,
            f.exit,
        ),
        None => (
            "the session ended before it was ready".into(),
            String::new(),
            None,
        ),
    };
    let data = SpawnFailedData {
        reason: reason.clone(),
        exit_code: exit.as_ref().and_then(|e| e.code),
        signal: exit.as_ref().and_then(|e| e.signal),
        screen: Some(screen.lines().map(|l| l.trim_end().to_string()).collect()),
        session: None,
        cwd: None,
        transcript: None,
        transcript_bytes: None,
    };
    RpcError::new(ErrorCode::SpawnFailed, reason).with_data_of(&data)
}

async fn screen_rows(e: &HolderEntry) -> Option<Vec<String>> {
    let s = text_screen(e).await.ok()?;
    Some(
        s.rows
            .into_iter()
            .map(|r| r.trim_end().to_string())
            .collect(),
    )
}
