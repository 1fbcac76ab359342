//! `session.new`, `session.fork`, `session.kill`, `session.screen`,
//! `session.send`, `session.pin`: starting, ending, looking at and typing
//! into sessions ccd holds (the work itself is `session_ops`).

use crate::conn_ctx::ConnCtx;
use crate::events::now_ms;
use crate::holders::rpc::call_once;
use crate::holders::spawn::new_holder_id;
use crate::holders::spec::{HolderMeta, Origin};
use crate::session_ops::drive::{submit, text_within_bound, typed_for};
use crate::session_ops::resolve::{held, resolve_putting_back};
use crate::session_ops::resume::resumable;
use crate::session_ops::start::{checked_cwd, start};
use ccd_claude::typing;
use ccd_protocol::holder as h;
use ccd_protocol::methods::session::{
    Cursor, ForkParams, KillParams, KillResult, NewParams, NewResult, PinParams, PinResult,
    ScreenParams, ScreenResult, SendParams, SendResult,
};
use ccd_protocol::methods::TermSize;
use ccd_protocol::{ErrorCode, RpcError};

fn internal(e: impl std::fmt::Display) -> RpcError {
    RpcError::internal(e.to_string())
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
    // An archived conversation is put back first.
    let (info, _) = resolve_putting_back(&ctx.daemon, &p.session, false).await?;
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
            ..Default::default()
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
        shows: Some(s.verdict.shows().to_string()),
    })
}

/// `session.send`: type a prompt and submit it, only at the prompt
/// (`session_ops::drive::submit`).
pub async fn send(ctx: &ConnCtx, p: SendParams) -> Result<SendResult, RpcError> {
    text_within_bound("text", &p.text)?;
    let intent = match (p.shell, p.literal) {
        (false, false) => typing::Intent::Prompt,
        (true, false) => typing::Intent::Shell,
        (false, true) => typing::Intent::Literal,
        (true, true) => {
            return Err(RpcError::invalid_params(
                "shell and literal exclude each other (a shell command, or words for the model); nothing was typed",
            ))
        }
    };
    let text = typed_for("text", p.text, intent)?;
    let entry = held(ctx, &p.session).await?;
    let sid = entry.session_id().unwrap_or(&entry.id).to_string();
    let r = submit(&entry, text, p.force).await?;
    tracing::info!(holder = %entry.id, session = %sid, bytes = r.bytes, submitted = ?r.submitted, "session.send");
    Ok(SendResult {
        session: sid,
        bytes: r.bytes,
        submitted: r.submitted,
        removed: r.removed,
    })
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
