//! `session.new`, `session.kill`, `session.screen`: starting, ending and
//! looking at sessions ccd holds.

use crate::conn_ctx::ConnCtx;
use crate::handlers::respond::{over_rpc, WALK_TIMEOUT};
use crate::handlers::sessions::resolve;
use crate::holders::rpc::{call_once, HolderConn};
use crate::holders::spawn::{new_holder_id, spawn_holder, Launch};
use crate::holders::spec::{HolderMeta, Origin};
use crate::holders::HolderEntry;
use crate::views;
use ccd_holder::walk::{SubmitTiming, SubmitWalk};
use ccd_protocol::error_data::{
    CwdMissingData, LiveElsewhereData, NotRunningData, SpawnFailedData, TranscriptMissingData,
};
use ccd_protocol::holder as h;
use ccd_protocol::methods::session::{
    Cursor, ForkParams, KillParams, KillResult, Lifecycle, NewParams, NewResult, PinParams,
    PinResult, Progress, ScreenFormat, ScreenParams, ScreenResult, SendParams, SendResult,
    SessionProgress, TextTooLong,
};
use ccd_protocol::methods::TermSize;
use ccd_protocol::{ErrorCode, RpcError};
use std::path::Path;
use std::time::{Duration, Instant};

/// How long `session.new` with `wait` waits for a settled start.
const START_WAIT: Duration = Duration::from_secs(90);

fn internal(e: impl std::fmt::Display) -> RpcError {
    RpcError::internal(e.to_string())
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

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

pub async fn new(ctx: &ConnCtx, p: NewParams) -> Result<NewResult, RpcError> {
    let size = p.size.map(TermSize::checked).transpose()?;
    let cwd = checked_cwd(&p.cwd)?;
    if p.args
        .iter()
        .any(|a| a == "--resume" || a == "-r" || a == "--continue" || a == "-c")
    {
        return Err(RpcError::invalid_params(
            "session.new starts fresh sessions; use session.attach (resume) or session.fork",
        ));
    }
    let session_id = match &p.session_id {
        Some(wanted) => fresh_id(ctx, wanted)?,
        None => uuid::Uuid::new_v4().to_string(),
    };
    let mut args = vec!["--session-id".to_string(), session_id.clone()];
    args.extend(p.args.iter().cloned());
    let size = size.unwrap_or(TermSize {
        cols: 120,
        rows: 40,
    });
    let meta = HolderMeta {
        id: new_holder_id(),
        session_id: Some(session_id),
        name: p.name.clone(),
        cwd: cwd.to_string_lossy().into_owned(),
        origin: Origin::New,
        forked_from: None,
        created_at: now_ms(),
        pinned: false,
        holder_pid: None,
    };
    start(ctx, meta, args, cwd, size, p.auto_trust, p.wait).await
}

/// The id a client chose for a new session, checked: a UUID (as
/// claude's `--session-id` wants) that no held session has and no
/// transcript carries.
fn fresh_id(ctx: &ConnCtx, wanted: &str) -> Result<String, RpcError> {
    let id = uuid::Uuid::parse_str(wanted)
        .map_err(|_| RpcError::invalid_params(format!("session_id {wanted:?} is not a UUID")))?
        .hyphenated()
        .to_string();
    let held = ctx
        .daemon
        .holders
        .snapshot()
        .iter()
        .any(|h| h.session_id() == Some(id.as_str()));
    let name = format!("{id}.jsonl");
    let written = std::fs::read_dir(ctx.daemon.options.claude_config.projects_dir())
        .map(|rd| {
            rd.filter_map(Result::ok)
                .any(|d| std::fs::symlink_metadata(d.path().join(&name)).is_ok())
        })
        .unwrap_or(false);
    if held || written {
        return Err(RpcError::invalid_params(format!(
            "session_id {id} is taken: a session with that id exists"
        )));
    }
    Ok(id)
}

/// `session.fork`: `claude --resume <id> --fork-session` in the session's
/// original cwd, whatever its state; the new id comes from the registry
/// entry of the child's pid.
pub async fn fork(ctx: &ConnCtx, p: ForkParams) -> Result<NewResult, RpcError> {
    let size = p.size.map(TermSize::checked).transpose()?;
    let (info, _) = resolve(&ctx.daemon, &p.session).await?;
    let (cwd, _transcript) = resumable(&info)?;
    let meta = HolderMeta {
        id: new_holder_id(),
        session_id: None,
        name: None,
        cwd: cwd.to_string_lossy().into_owned(),
        origin: Origin::Fork,
        forked_from: Some(info.session_id.clone()),
        created_at: now_ms(),
        pinned: false,
        holder_pid: None,
    };
    tracing::info!(original = %info.session_id, cwd = %cwd.display(), "fork");
    let size = size.unwrap_or(TermSize {
        cols: 120,
        rows: 40,
    });
    let args = vec![
        "--resume".to_string(),
        info.session_id.clone(),
        "--fork-session".to_string(),
    ];
    let r = start(
        ctx,
        meta,
        args,
        cwd,
        size,
        ctx.daemon.options.auto_trust_default,
        true,
    )
    .await?;
    if r.session.as_deref() == Some(info.session_id.as_str()) {
        // The registry showed the original id for our child: not a fork.
        return Err(RpcError::new(
            ErrorCode::SpawnFailed,
            "claude kept the original session id: the fork did not happen",
        ));
    }
    Ok(r)
}

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
        return Err(crate::handlers::sessions::empty_transcript_error(
            sid,
            &transcript,
        ));
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

/// The holder of `query`, or the error saying why there is none.
pub async fn held(ctx: &ConnCtx, query: &str) -> Result<HolderEntry, RpcError> {
    let (info, holder) = resolve(&ctx.daemon, query).await?;
    holder.ok_or_else(|| {
        if info.state == ccd_protocol::methods::session::SessionState::Dead {
            return not_running(&info);
        }
        let data = LiveElsewhereData {
            session: info.session_id.clone(),
            state: info.state,
            pid: info.pid,
            cwd: info.cwd.clone(),
            since: None,
            kind: None,
            started_meanwhile: false,
        };
        RpcError::new(
            ErrorCode::SessionLiveElsewhere,
            format!(
                "ccd does not hold session {}: it runs outside ccd{}",
                info.session_id,
                info.pid.map(|p| format!(" (pid {p})")).unwrap_or_default()
            ),
        )
        .with_data_of(&data)
    })
}

/// `session_not_running` for a dead session; one that a held process
/// wrote before says which process moved on from it and the id that
/// reaches that process now.
pub fn not_running(info: &ccd_protocol::methods::session::SessionInfo) -> RpcError {
    let sid = &info.session_id;
    match &info.superseded_by {
        Some(s) => {
            let why = match s.reason.as_str() {
                "clear" => "after `/clear`",
                "resume" => "after resuming another conversation inside claude",
                _ => "since",
            };
            let now = s.writes_now.get(..8).unwrap_or(&s.writes_now);
            RpcError::new(
                ErrorCode::SessionNotRunning,
                format!(
                    "session {sid} is not running: the process ccd holds in {} writes {} {why}; `ccd attach {now}` reaches it, `ccd attach {}` resumes this one",
                    s.holder,
                    s.writes_now,
                    sid.get(..8).unwrap_or(sid),
                ),
            )
            .with_data_of(&NotRunningData {
                session: sid.clone(),
                superseded_by: Some(s.clone()),
            })
        }
        None => RpcError::new(
            ErrorCode::SessionNotRunning,
            format!("session {sid} is not running (`ccd attach` resumes it)"),
        )
        .with_data_of(&NotRunningData {
            session: sid.clone(),
            superseded_by: None,
        }),
    }
}

pub async fn kill(ctx: &ConnCtx, p: KillParams) -> Result<KillResult, RpcError> {
    let entry = held(ctx, &p.session).await?;
    let signal = match p.signal {
        ccd_protocol::methods::session::KillSignal::Hup => "hup",
        ccd_protocol::methods::session::KillSignal::Term => "term",
        ccd_protocol::methods::session::KillSignal::Kill => "kill",
    };
    let grace = p.grace_ms.unwrap_or(3000);
    let k = call_once::<h::Kill>(
        &entry.socket,
        &h::KillParams {
            signal: p.signal,
            grace_ms: Some(grace),
        },
    )
    .await
    .map_err(|e| entry.rpc_error(e))?;
    tracing::info!(holder = %entry.id, session = ?entry.session_id(), signal, "session.kill");
    // Wait for the exit (the grace period plus a margin) and collect it.
    let c = ctx
        .daemon
        .holders
        .collect(&entry, grace + 2000)
        .await
        .map_err(|e| entry.rpc_error(e))?;
    Ok(KillResult {
        signalled: k.sent,
        exited: c.collected,
        exit_code: c.exit.as_ref().and_then(|e| e.code),
        exit_signal: c.exit.as_ref().and_then(|e| e.signal),
    })
}

pub async fn screen(ctx: &ConnCtx, p: ScreenParams) -> Result<ScreenResult, RpcError> {
    let entry = held(ctx, &p.session).await?;
    let s = call_once::<h::Screen>(&entry.socket, &h::ScreenParams { format: p.format })
        .await
        .map_err(|e| entry.rpc_error(e))?;
    Ok(ScreenResult {
        session: entry.session_id().unwrap_or(&entry.id).to_string(),
        size: TermSize {
            cols: s.size.cols,
            rows: s.size.rows,
        },
        cursor: Cursor {
            row: s.cursor.row,
            col: s.cursor.col,
            visible: !s.modes.hide_cursor,
        },
        lines: Some(s.rows.iter().map(|r| r.trim_end().to_string()).collect()),
        data: s.ansi.map(String::into_bytes),
        shows: Some(shows(&s.verdict)),
    })
}

/// A word for what the screen shows: the classifier's tag, with the ready
/// prompt called `prompt`.
pub(crate) fn shows(v: &ccd_screen::ScreenState) -> String {
    v.shows().to_string()
}

/// The holder's screen as text, with its verdict.
pub(crate) async fn text_screen(entry: &HolderEntry) -> Result<ccd_holder::ScreenResult, RpcError> {
    call_once::<h::Screen>(
        &entry.socket,
        &h::ScreenParams {
            format: ScreenFormat::Text,
        },
    )
    .await
    .map_err(|e| entry.rpc_error(e))
}

pub(crate) async fn type_bytes(entry: &HolderEntry, bytes: &[u8]) -> Result<(), RpcError> {
    call_once::<h::Input>(
        &entry.socket,
        &h::InputParams {
            data: bytes.to_vec(),
        },
    )
    .await
    .map_err(|e| entry.rpc_error(e))?;
    Ok(())
}

/// `session.send`: type a prompt and submit it, only at the prompt.
///
/// Each step is confirmed on the screen, never assumed
/// ([`ccd_holder::walk::submit`]). A holder of protocol
/// [`h::WALK_VERSION`] walks it itself (`holder.submit`, one call); an
/// older one is walked from here over `holder.screen` and `holder.input`.
pub async fn send(ctx: &ConnCtx, p: SendParams) -> Result<SendResult, RpcError> {
    text_within_bound("text", &p.text)?;
    let entry = held(ctx, &p.session).await?;
    let sid = entry.session_id().unwrap_or(&entry.id).to_string();
    let mut conn = HolderConn::connect_hello(&entry.socket)
        .await
        .map_err(|e| entry.rpc_error(e))?;
    let r = if conn.protocol.is_some_and(|v| v >= h::WALK_VERSION) {
        conn.call_within::<h::Submit, h::SubmitResult>(
            &h::SubmitParams {
                text: p.text,
                force: p.force,
            },
            WALK_TIMEOUT,
        )
        .await
        .map_err(|e| entry.rpc_error(e))?
    } else {
        drop(conn);
        let mut walk = SubmitWalk::new(p.text, p.force, SubmitTiming::default());
        over_rpc(&entry, &sid, |seen| walk.step(seen)).await?;
        let Some(done) = walk.submitted() else {
            return Err(RpcError::internal("the walk ended without an outcome"));
        };
        if done.removed > 0 {
            tracing::info!(holder = %entry.id, session = %sid, removed = done.removed, "session.send: escape sequences and controls removed from the text");
        }
        if done.submitted == Some(false) {
            tracing::warn!(holder = %entry.id, session = %sid, enters = done.enters, "session.send: the draft stayed in the box");
        }
        h::SubmitResult {
            bytes: done.bytes,
            submitted: done.submitted,
            removed: done.removed,
        }
    };
    tracing::info!(holder = %entry.id, session = %sid, bytes = r.bytes, submitted = ?r.submitted, "session.send");
    Ok(SendResult {
        session: sid,
        bytes: r.bytes,
        submitted: r.submitted,
        removed: r.removed,
    })
}

/// Refuses text over [`MAX_TYPED_TEXT`] before any work (`field` names
/// the param).
pub(crate) fn text_within_bound(field: &'static str, text: &str) -> Result<(), RpcError> {
    TextTooLong::check(field, text)
        .map_err(|e| RpcError::invalid_params(e.to_string()).with_data_of(&e))
}

/// `session.pin`: exempt a held session from idle reaping, or undo it.
pub async fn pin(ctx: &ConnCtx, p: PinParams) -> Result<PinResult, RpcError> {
    let entry = held(ctx, &p.session).await?;
    ctx.daemon
        .holders
        .set_pinned(&entry.id, p.pinned)
        .map_err(internal)?;
    tracing::info!(holder = %entry.id, session = ?entry.session_id(), pinned = p.pinned, "session.pin");
    Ok(PinResult {
        session: entry.session_id().unwrap_or(&entry.id).to_string(),
        pinned: p.pinned,
    })
}
