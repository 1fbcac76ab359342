//! Driving a held session's screen: reading it as text, typing bytes,
//! and the walks that act on it only as far as the screen confirms
//! (`ccd_walk`) — submitting a prompt ([`submit`]: `session.send`)
//! and, for a holder too old to walk one itself, running any walk from
//! here over `holder.screen` and `holder.input` ([`over_rpc`]).

use crate::holders::rpc::{call_once, HolderConn};
use crate::holders::HolderEntry;
use ccd_claude::typing;
use ccd_protocol::holder as h;
use ccd_protocol::methods::session::{RefusedReason, ScreenFormat, TextRefused, TextTooLong};
use ccd_protocol::RpcError;
use ccd_walk::{self as walk, Seen, Step, SubmitTiming, SubmitWalk, WalkError, PROMPT_BACK_WAIT};
use std::time::{Duration, Instant};

/// How long a holder may take to walk a dialog and answer (its walk's
/// worst case, and the refusal's message, fit in it; within a client's 30 s
/// for a slow call).
pub(crate) const WALK_TIMEOUT: Duration = Duration::from_secs(28);
/// How often the screen is read while the daemon walks an older holder.
const POLL: Duration = Duration::from_millis(30);

/// The holder's screen as text, with its verdict.
pub(crate) async fn text_screen(
    entry: &HolderEntry,
) -> Result<ccd_protocol::holder::ScreenResult, RpcError> {
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

/// Refuses text over [`MAX_TYPED_TEXT`] before any work (`field` names
/// the param).
pub(crate) fn text_within_bound(field: &'static str, text: &str) -> Result<(), RpcError> {
    TextTooLong::check(field, text)
        .map_err(|e| RpcError::invalid_params(e.to_string()).with_data_of(&e))
}

/// The text to type for a client's `text` (the param `field`) asked for
/// as `intent`, or the refusal (`-32602`, nothing typed), decided before
/// anything is read or typed (`ccd_claude::typing::for_prompt`): never a
/// shell command nobody asked for, never a slash command where words were
/// asked for, never a submit of nothing. Done here, not in the holder, so
/// a holder started by an older ccd types the same.
pub(crate) fn typed_for(
    field: &'static str,
    text: String,
    intent: typing::Intent,
) -> Result<String, RpcError> {
    let refused = |reason, removed| {
        let e = TextRefused {
            field: field.to_string(),
            reason,
            removed,
        };
        RpcError::invalid_params(e.to_string()).with_data_of(&e)
    };
    match typing::for_prompt(&text, intent) {
        Ok(std::borrow::Cow::Borrowed(_)) => Ok(text),
        Ok(std::borrow::Cow::Owned(t)) => Ok(t),
        Err(typing::Refused::Empty { removed }) => Err(refused(RefusedReason::Empty, removed)),
        Err(typing::Refused::Prefix(typing::Leading::Shell)) => {
            Err(refused(RefusedReason::Shell, 0))
        }
        Err(typing::Refused::Prefix(typing::Leading::Command)) => {
            Err(refused(RefusedReason::Command, 0))
        }
    }
}

/// Types `text` into `entry`'s prompt and submits it, only at the prompt
/// (`session.send`). Each step is confirmed on the screen, never assumed
/// ([`ccd_walk::submit`]). A holder of protocol
/// [`h::WALK_VERSION`] walks it itself (`holder.submit`, one call); an
/// older one is walked from here over `holder.screen` and `holder.input`.
pub async fn submit(
    entry: &HolderEntry,
    text: String,
    force: bool,
) -> Result<h::SubmitResult, RpcError> {
    let sid = entry.session_id().unwrap_or(&entry.id).to_string();
    let mut conn = HolderConn::connect_hello(&entry.socket)
        .await
        .map_err(|e| entry.rpc_error(e))?;
    let r = if conn.protocol.is_some_and(|v| v >= h::WALK_VERSION) {
        conn.call_within::<h::Submit, h::SubmitResult>(
            &h::SubmitParams { text, force },
            WALK_TIMEOUT,
        )
        .await
        .map_err(|e| entry.rpc_error(e))?
    } else {
        drop(conn);
        let mut walk = SubmitWalk::new(text, force, SubmitTiming::default());
        over_rpc(entry, &sid, |seen| walk.step(seen)).await?;
        let Some(done) = walk.submitted() else {
            return Err(RpcError::internal("the walk ended without an outcome"));
        };
        if done.removed > 0 {
            tracing::info!(holder = %entry.id, session = %sid, removed = done.removed, "session.send: escape sequences and controls removed from the text");
        }
        if done.submitted == Some(false) {
            tracing::warn!(holder = %entry.id, session = %sid, enters = done.enters, "session.send: the draft stayed in the box");
        }
        done.on_the_wire()
    };
    Ok(r)
}

/// Runs a walk against a holder that cannot walk it itself: each look is
/// a `holder.screen`, each key a `holder.input`, each wait a poll. The
/// walk counts the prompt's settle time from the daemon's first look.
pub async fn over_rpc(
    entry: &HolderEntry,
    sid: &str,
    mut step: impl FnMut(&Seen) -> Result<Step, WalkError>,
) -> Result<(), RpcError> {
    loop {
        let s = text_screen(entry).await?;
        let now = Instant::now();
        let seen = Seen {
            now,
            verdict: &s.verdict,
            application_cursor: s.modes.application_cursor,
            bracketed_paste: s.modes.bracketed_paste,
            prompt_since: None,
            changed_at: None,
        };
        match step(&seen).map_err(|e| e.into_rpc(sid, &s.rows))? {
            Step::Send(bytes) => type_bytes(entry, &bytes).await?,
            Step::Wait(at) => tokio::time::sleep(at.saturating_duration_since(now).min(POLL)).await,
            Step::Done => return Ok(()),
        }
    }
}

/// After a refusal, for an older holder: waits for the input prompt, then
/// submits `text`. Whether it was submitted.
pub async fn submit_when_back(
    entry: &HolderEntry,
    sid: &str,
    text: String,
) -> Result<bool, RpcError> {
    let until = Instant::now() + PROMPT_BACK_WAIT;
    over_rpc(entry, sid, |seen| walk::prompt_back(seen, until)).await?;
    let mut walk = SubmitWalk::new(text, false, SubmitTiming::default());
    over_rpc(entry, sid, |seen| walk.step(seen)).await?;
    Ok(walk.submitted().and_then(|d| d.submitted).unwrap_or(false))
}
