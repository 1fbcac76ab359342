//! Resuming a dead session (`claude --resume <id>` in its original cwd,
//! under a new holder: [`resume`]; a session lost when the machine went
//! down with the flags the restore record kept) and what it needs ([`resumable`]); the
//! refusals when another process holds the session, before the resume or
//! while it settles; and, when the client consents, a fresh session in the
//! same cwd after a failed resume ([`fresh_instead`]).

use super::resolve::empty_transcript_error;
use super::start::{checked_cwd, start};
use crate::conn_ctx::ConnCtx;
use crate::events::now_ms;
use crate::holders::rpc::call_once;
use crate::holders::spawn::new_holder_id;
use crate::holders::spec::{HolderMeta, Origin};
use crate::holders::HolderEntry;
use ccd_protocol::error_data::{
    CwdMissingData, LiveElsewhereData, ScreenData, SpawnFailedData, TranscriptMissingData,
};
use ccd_protocol::holder as h;
use ccd_protocol::methods::attach::FreshStart;
use ccd_protocol::methods::session::{
    Lifecycle, Progress, ResumeStep, SessionInfo, SessionProgress, SessionState,
};
use ccd_protocol::methods::TermSize;
use ccd_protocol::{ErrorCode, RpcError};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The cwd and transcript a resume or fork of `info` needs, or the error
/// naming exactly what is missing.
pub fn resumable(
    info: &ccd_protocol::methods::session::SessionInfo,
) -> Result<(std::path::PathBuf, String), RpcError> {
    let sid = &info.session_id;
    let Some(transcript) = info.transcript.clone() else {
        return Err(RpcError::new(
            ErrorCode::TranscriptMissing,
            format!("session {sid} has no transcript (it never had a turn, or the file was deleted): nothing to resume"),
        )
        .with_data_of(&TranscriptMissingData {
            session: sid.clone(),
            transcript: None,
            registry_entry: None,
        }));
    };
    if !Path::new(&transcript).is_file() {
        return Err(RpcError::new(
            ErrorCode::TranscriptMissing,
            format!("session {sid}'s transcript {transcript} is gone"),
        )
        .with_data_of(&TranscriptMissingData {
            session: sid.clone(),
            transcript: Some(transcript),
            registry_entry: None,
        }));
    }
    // A bounded read (head and tail windows), so cheap even for a big file.
    if ccd_claude::transcript::summary::read_summary(Path::new(&transcript)).is_ok_and(|s| s.empty)
    {
        return Err(empty_transcript_error(sid, &transcript));
    }
    let Some(cwd) = info.cwd.clone() else {
        return Err(RpcError::new(
            ErrorCode::CwdMissing,
            format!("session {sid}'s transcript {transcript} records no working directory"),
        )
        .with_data_of(&CwdMissingData {
            session: Some(sid.clone()),
            cwd: None,
            transcript: Some(transcript),
        }));
    };
    if !Path::new(&cwd).is_absolute() {
        // Resolving it would pick a directory relative to the daemon's own.
        tracing::warn!(session = %sid, cwd = %cwd, transcript = %transcript, "relative cwd: not resumable");
        return Err(RpcError::new(
            ErrorCode::CwdMissing,
            format!("session {sid}'s transcript {transcript} records a relative working directory {cwd}: not a place to resume"),
        )
        .with_data_of(&CwdMissingData {
            session: Some(sid.clone()),
            cwd: Some(cwd),
            transcript: Some(transcript),
        }));
    }
    let p = ccd_claude::paths::normalize(Path::new(&cwd));
    if !p.is_dir() {
        return Err(RpcError::new(
            ErrorCode::CwdMissing,
            format!("session {sid}'s original directory {cwd} is gone; ccd never resumes a session in another directory"),
        )
        .with_data_of(&CwdMissingData {
            session: Some(sid.clone()),
            cwd: Some(cwd),
            transcript: Some(transcript),
        }));
    }
    Ok((p, transcript))
}

pub fn live_elsewhere(info: &SessionInfo) -> RpcError {
    let since = info.writers.first().and_then(|w| w.started_at.clone());
    live_elsewhere_since(info, since)
}

fn live_elsewhere_since(info: &SessionInfo, since: Option<String>) -> RpcError {
    let short = info.session_id.get(..8).unwrap_or(&info.session_id);
    RpcError::new(
        ErrorCode::SessionLiveElsewhere,
        format!(
            "session {} is {} outside ccd (pid {}); ccd will not resume it. Use `ccd observe {short}` or `ccd fork {short}`",
            info.session_id,
            if info.state == SessionState::Unknown { "possibly running" } else { "running" },
            info.pid.map(|p| p.to_string()).unwrap_or_else(|| "?".into()),
        ),
    )
    .with_data_of(&elsewhere_data(info, since))
}

/// `data` of `session_live_elsewhere`.
fn elsewhere_data(info: &SessionInfo, since: Option<String>) -> LiveElsewhereData {
    LiveElsewhereData {
        session: info.session_id.clone(),
        state: info.state,
        pid: info.pid,
        cwd: info.cwd.clone(),
        since,
        kind: info.kind.clone(),
        started_meanwhile: false,
    }
}

/// A process whose registry entry holds a session and that may be running.
struct OtherWriter {
    entry: ccd_claude::registry::RegistryEntry,
    liveness: ccd_claude::Liveness,
}

impl OtherWriter {
    /// `info` as this process makes it: running (or possibly running), by
    /// its pid, in its cwd, of its kind; and since when (RFC 3339).
    fn as_info(&self, info: &SessionInfo) -> (SessionInfo, Option<String>) {
        let mut now = info.clone();
        now.state = crate::views::state_of(self.liveness);
        now.pid = Some(self.entry.pid);
        if self.entry.cwd.is_some() {
            now.cwd = self.entry.cwd.clone();
        }
        if self.entry.kind.is_some() {
            now.kind = self.entry.kind.clone();
        }
        (now, self.entry.started_at.and_then(crate::views::millis))
    }
}

/// Processes whose registry entries hold `sid` and may be running (live or
/// unknown), read now, but `ours` (the child ccd started).
async fn writers_now(ctx: &ConnCtx, sid: &str, ours: Option<u32>) -> Vec<OtherWriter> {
    let dir = ctx.daemon.options.claude_config.sessions_dir();
    let sid = sid.to_string();
    tokio::task::spawn_blocking(move || {
        let probe = ccd_claude::liveness::system_probe();
        ccd_claude::index::entries_writing(&dir, &sid, probe.as_ref())
            .into_iter()
            .filter(|(e, _)| Some(e.pid) != ours)
            .map(|(entry, liveness)| OtherWriter { entry, liveness })
            .collect()
    })
    .await
    .unwrap_or_default()
}

/// How long a resumed session must stay up after `ready` to count as
/// resumed (an exit within this is a failed resume), unless the daemon's
/// options say otherwise.
pub const SETTLE_AFTER_READY: Duration = Duration::from_millis(1500);

/// How long ccd's own copy of a session another process took meanwhile
/// gets to end after SIGTERM before SIGKILL.
const STOP_COPY_GRACE_MS: u64 = 2000;

/// `session.progress` of a resume step (see [`SessionProgress`]).
///
/// [`SessionProgress`]: ccd_protocol::methods::session::SessionProgress
async fn resume_step(ctx: &ConnCtx, step: StepReport<'_>, detail: StepDetail) {
    let p = Progress {
        holder: step.holder.to_string(),
        session: Some(step.session.to_string()),
        lifecycle: step.lifecycle.clone(),
        reason: None,
        step: Some(step.step),
        cwd: detail.cwd,
        pid: detail.pid,
    };
    ctx.notify::<SessionProgress>(&p).await;
}

/// Which resume step [`resume_step`] reports.
struct StepReport<'a> {
    holder: &'a str,
    session: &'a str,
    lifecycle: Lifecycle,
    step: ResumeStep,
}

/// What a resume step adds ([`Progress`]'s `cwd` and `pid`).
#[derive(Default)]
struct StepDetail {
    cwd: Option<String>,
    pid: Option<u32>,
}

/// `claude --resume <sid>` in the session's original cwd, under a new
/// holder. Never in another directory; never while another process holds
/// the id (checked right before spawning and again until it has settled).
pub async fn resume(
    ctx: &Arc<ConnCtx>,
    info: &SessionInfo,
    size: Option<TermSize>,
) -> Result<HolderEntry, RpcError> {
    resume_in_slot(ctx, info, size, None).await
}

/// [`resume`], holding `slot` (a restore's turn, `Restore::turns`) only
/// while the session is *starting*: it is let go once the start has
/// settled (at its prompt, or failed), before the settle check. What the
/// bound spares the machine is many `claude`s starting at once; a
/// session past its start waits at its prompt, and its settle check is a
/// `holder.info` and a registry read every 100 ms.
pub async fn resume_in_slot(
    ctx: &Arc<ConnCtx>,
    info: &SessionInfo,
    size: Option<TermSize>,
    slot: Option<tokio::sync::OwnedSemaphorePermit>,
) -> Result<HolderEntry, RpcError> {
    let sid = info.session_id.as_str();
    let (cwd, transcript) = resumable(info)?;
    let transcript_bytes = std::fs::metadata(&transcript).map(|m| m.len()).unwrap_or(0);
    if let Some(w) = writers_now(ctx, sid, None).await.first() {
        let (now, since) = w.as_info(info);
        return Err(live_elsewhere_since(&now, since));
    }
    // A session lost when the machine went down comes back as it was:
    // its recorded flags, name and pin (the restore record's).
    let lost = ctx.daemon.restore.lost_entry(sid);
    let args = match &lost {
        Some(e) => crate::restore::record::resume_args(e),
        None => vec!["--resume".into(), sid.into()],
    };
    let meta = HolderMeta {
        id: new_holder_id(),
        session_id: Some(sid.to_string()),
        name: lost
            .as_ref()
            .and_then(|e| e.name.clone())
            .or_else(|| info.name.clone()),
        cwd: cwd.to_string_lossy().into_owned(),
        origin: Origin::Resume,
        forked_from: None,
        created_at: now_ms(),
        pinned: lost.as_ref().is_some_and(|e| e.pinned),
        holder_pid: None,
    };
    let hid = meta.id.clone();
    tracing::info!(session = sid, cwd = %cwd.display(), transcript = %transcript, transcript_bytes, ?args, restoring = lost.is_some(), "resuming");
    let step = |lifecycle, step| StepReport {
        holder: &hid,
        session: sid,
        lifecycle,
        step,
    };
    resume_step(
        ctx,
        step(Lifecycle::Starting, ResumeStep::Resuming),
        StepDetail {
            cwd: Some(cwd.to_string_lossy().into_owned()),
            pid: None,
        },
    )
    .await;
    let size = size.unwrap_or(TermSize {
        cols: 120,
        rows: 40,
    });
    let failed = |reason: String, screen: Option<Vec<String>>| {
        tracing::warn!(session = sid, cwd = %cwd.display(), transcript = %transcript, transcript_bytes, %reason, "resume failed");
        RpcError::new(
            ErrorCode::SpawnFailed,
            format!("resuming {sid} failed: {reason}"),
        )
        .with_data_of(&SpawnFailedData {
            reason,
            exit_code: None,
            signal: None,
            screen,
            session: Some(sid.to_string()),
            cwd: Some(cwd.to_string_lossy().into_owned()),
            transcript: Some(transcript.clone()),
            transcript_bytes: Some(transcript_bytes),
        })
    };
    let started = start(
        ctx,
        meta,
        args,
        cwd.clone(),
        size,
        ctx.daemon.options.auto_trust_default,
        true,
    )
    .await;
    // Started (or failed): no longer one of the starting `claude`s the
    // restore's bound counts.
    if slot.is_some() {
        tracing::debug!(session = sid, holder = %hid, "start settled; restore slot let go");
    }
    drop(slot);
    let r = match started {
        Ok(r) => r,
        Err(e) => {
            let screen = e.data_as::<ScreenData>().and_then(|d| d.screen);
            return Err(failed(e.message, screen));
        }
    };
    let lifecycle = r.lifecycle;
    if matches!(lifecycle, Lifecycle::Failed | Lifecycle::Exited) {
        let reason = r.reason.unwrap_or_else(|| lifecycle.to_string());
        return Err(failed(reason, r.screen));
    }
    resume_step(
        ctx,
        step(lifecycle.clone(), ResumeStep::Settling),
        StepDetail::default(),
    )
    .await;
    // An exit within the first moments is a failed resume too; someone may
    // start the same session by hand meanwhile (checked on every round, so
    // the refusal comes as soon as it is known).
    let deadline = tokio::time::Instant::now() + ctx.daemon.options.resume_settle;
    loop {
        let ours = match ctx.daemon.holders.refresh(&hid).await {
            Some(i) if i.exit.is_none() => i.child_pid,
            _ => {
                let f = ctx.daemon.holders.finished_for_holder(&hid);
                let screen = f
                    .as_ref()
                    .map(|f| f.screen.lines().map(String::from).collect::<Vec<_>>());
                let reason = f
                    .and_then(|f| {
                        f.failure
                            .or(f.exit.map(|e| format!("claude exited at once ({e:?})")))
                    })
                    .unwrap_or_else(|| "claude exited at once".into());
                return Err(failed(reason, screen));
            }
        };
        if let Some(other) = writers_now(ctx, sid, Some(ours)).await.into_iter().next() {
            return Err(refuse_late(ctx, info, &hid, &lifecycle, other).await);
        }
        if tokio::time::Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let entry = ctx
        .daemon
        .holders
        .get(&hid)
        .ok_or_else(|| failed("the session ended at once".into(), None))?;
    if lost.is_some() {
        // Held again: no longer listed as lost (the record follows).
        ctx.daemon.holders.unlist_lost(sid);
        ctx.daemon.holders.changed.notify_one();
    }
    Ok(entry)
}

/// Another process started the session ccd was resuming: ccd's copy
/// (holder `hid`) is stopped, collected and forgotten, so that nothing
/// later reports it, and the refusal names the other process.
async fn refuse_late(
    ctx: &ConnCtx,
    info: &SessionInfo,
    hid: &str,
    lifecycle: &Lifecycle,
    other: OtherWriter,
) -> RpcError {
    let sid = info.session_id.as_str();
    let pid = other.entry.pid;
    tracing::warn!(
        session = sid,
        other = pid,
        holder = hid,
        "another process resumed the same session meanwhile; stopping ours"
    );
    let step = StepReport {
        holder: hid,
        session: sid,
        lifecycle: lifecycle.clone(),
        step: ResumeStep::Stopping,
    };
    let detail = StepDetail {
        cwd: None,
        pid: Some(pid),
    };
    resume_step(ctx, step, detail).await;
    if let Some(entry) = ctx.daemon.holders.get(hid) {
        // Out of the table first: no request resolves to it from now on,
        // and its exit leaves no finished record.
        ctx.daemon.holders.discard(hid);
        let killed = call_once::<h::Kill>(
            &entry.socket,
            &h::KillParams {
                signal: h::KillSignal::Term,
                grace_ms: Some(STOP_COPY_GRACE_MS),
                ..Default::default()
            },
        )
        .await;
        // Collected as soon as it has exited (at once for a claude that
        // honours SIGTERM), so that its registry entry is gone before the
        // reply; SIGKILL after the grace bounds the wait.
        match killed {
            Ok(_) => {
                let c = ctx
                    .daemon
                    .holders
                    .collect(&entry, STOP_COPY_GRACE_MS + 1000)
                    .await;
                tracing::info!(holder = hid, collected = ?c.as_ref().map(|c| c.collected), "ccd's copy stopped");
            }
            Err(error) => {
                tracing::warn!(holder = hid, %error, "stopping ccd's copy failed");
            }
        }
        // A collect that raced the discard may have recorded it.
        ctx.daemon.holders.discard(hid);
    }
    let (now, since) = other.as_info(info);
    let short = sid.get(..8).unwrap_or(sid);
    let mut data = elsewhere_data(&now, since);
    data.started_meanwhile = true;
    RpcError::new(
        ErrorCode::SessionLiveElsewhere,
        format!(
            "another process (pid {pid}{}) started session {sid} while ccd was resuming it; ccd stopped its own copy and will not resume it. Use `ccd observe {short}` or `ccd fork {short}`",
            now.cwd.as_deref().map(|c| format!(", in {c}")).unwrap_or_default(),
        ),
    )
    .with_data_of(&data)
}

/// After a failed resume, with the user's consent (`fresh_on_failure`): a
/// new session in the same cwd. Says so, naming the original.
pub async fn fresh_instead(
    ctx: &Arc<ConnCtx>,
    info: &SessionInfo,
    reason: &str,
    size: Option<TermSize>,
) -> Result<(HolderEntry, FreshStart), RpcError> {
    let cwd = info.cwd.as_deref().ok_or_else(|| {
        RpcError::new(ErrorCode::CwdMissing, "no cwd to start a fresh session in")
    })?;
    let cwd = checked_cwd(cwd)?;
    let new_id = uuid::Uuid::new_v4().to_string();
    let meta = HolderMeta {
        id: new_holder_id(),
        session_id: Some(new_id.clone()),
        name: None,
        cwd: cwd.to_string_lossy().into_owned(),
        origin: Origin::New,
        forked_from: None,
        created_at: now_ms(),
        pinned: false,
        holder_pid: None,
    };
    let hid = meta.id.clone();
    let size = size.unwrap_or(TermSize {
        cols: 120,
        rows: 40,
    });
    let r = start(
        ctx,
        meta,
        vec!["--session-id".into(), new_id.clone()],
        cwd,
        size,
        ctx.daemon.options.auto_trust_default,
        true,
    )
    .await?;
    tracing::warn!(old = %info.session_id, new = %new_id, %reason, "resume failed; started a fresh session as asked");
    let entry = ctx.daemon.holders.get(&hid).ok_or_else(|| {
        RpcError::new(
            ErrorCode::SpawnFailed,
            format!(
                "the fresh session ended at once: {}",
                r.reason.as_deref().unwrap_or("no reason given")
            ),
        )
    })?;
    Ok((
        entry,
        FreshStart {
            session: info.session_id.clone(),
            transcript: info.transcript.clone(),
            reason: reason.to_string(),
        },
    ))
}
