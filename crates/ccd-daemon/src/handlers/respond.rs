//! `session.respond`: answering the tool permission prompt a held session
//! shows, on a person's request.
//!
//! Nothing is pressed blind: the walk ([`ccd_holder::walk::respond`]) reads
//! the screen first — no permission dialog, or another one than the caller
//! named (`prompt`), and nothing is typed — finds the option by its label,
//! moves the pointer one arrow at a time, each move seen on the screen
//! before the next, presses Enter only with the pointer on that option,
//! then waits for the prompt to go.
//!
//! Who walks: a holder of protocol [`h::WALK_VERSION`] walks it itself
//! (`holder.respond`: one connection, one call; it reads its own screen
//! model and knows how long the prompt has been showing). A holder of an
//! older protocol — started by an older ccd, it outlives the upgrade — is
//! walked from here with the same walk, over `holder.screen` and
//! `holder.input`, polling ([`over_rpc`]).

use crate::conn_ctx::ConnCtx;
use crate::handlers::lifecycle::{held, text_screen, text_within_bound, type_bytes};
use crate::holders::rpc::HolderConn;
use crate::holders::HolderEntry;
use ccd_holder::walk::{
    self, RespondTiming, RespondWalk, Seen, Step, SubmitTiming, SubmitWalk, WalkError,
    PROMPT_BACK_WAIT,
};
use ccd_protocol::holder as h;
use ccd_protocol::methods::session::{RespondChoice, RespondParams, RespondResult};
use ccd_protocol::RpcError;
use std::time::{Duration, Instant};

/// How long a holder may take to walk a dialog and answer (its walk's
/// worst case, and the refusal's message, fit in it; within a client's 30 s
/// for a slow call).
pub(crate) const WALK_TIMEOUT: Duration = Duration::from_secs(28);
/// How often the screen is read while the daemon walks an older holder.
const POLL: Duration = Duration::from_millis(30);

/// `session.respond` (see the module doc).
pub async fn respond(ctx: &ConnCtx, p: RespondParams) -> Result<RespondResult, RpcError> {
    if p.message.is_some() && p.choice != RespondChoice::No {
        return Err(RpcError::invalid_params(
            "message goes with choice \"no\" (what Claude should do instead)",
        ));
    }
    if let Some(m) = &p.message {
        text_within_bound("message", m)?;
    }
    let entry = held(ctx, &p.session).await?;
    let sid = entry.session_id().unwrap_or(&entry.id).to_string();
    let mut conn = HolderConn::connect_hello(&entry.socket)
        .await
        .map_err(|e| entry.rpc_error(e))?;
    if conn.protocol.is_some_and(|v| v >= h::WALK_VERSION) {
        let r = conn
            .call_within::<h::Respond, h::RespondResult>(
                &h::RespondParams {
                    prompt: p.prompt,
                    choice: p.choice,
                    message: p.message,
                },
                WALK_TIMEOUT,
            )
            .await
            .map_err(|e| entry.rpc_error(e))?;
        tracing::info!(holder = %entry.id, session = %sid, prompt = %r.prompt, choice = ?p.choice, option = %r.option, arrows = r.arrows, enters = r.enters, walked_by = "holder", "session.respond");
        return Ok(RespondResult {
            session: sid,
            prompt: r.prompt,
            choice: p.choice,
            option: r.option,
            message_submitted: r.message_submitted,
        });
    }
    drop(conn);
    let mut walk = RespondWalk::new(p.prompt, p.choice, RespondTiming::default());
    over_rpc(&entry, &sid, |seen| walk.step(seen)).await?;
    let Some(done) = walk.answered().cloned() else {
        return Err(RpcError::internal("the walk ended without an answer"));
    };
    tracing::info!(holder = %entry.id, session = %sid, prompt = %done.prompt, choice = ?p.choice, option = %done.option, arrows = done.arrows, enters = done.enters, walked_by = "daemon", "session.respond");
    let message_submitted = match p.message {
        Some(text) => Some(submit_when_back(&entry, &sid, text).await?),
        None => None,
    };
    Ok(RespondResult {
        session: sid,
        prompt: done.prompt,
        choice: p.choice,
        option: done.option,
        message_submitted,
    })
}

/// Runs a walk against a holder that cannot walk it itself: each look is
/// a `holder.screen`, each key a `holder.input`, each wait a poll. The
/// walk counts the prompt's settle time from the daemon's first look.
pub(crate) async fn over_rpc(
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
async fn submit_when_back(entry: &HolderEntry, sid: &str, text: String) -> Result<bool, RpcError> {
    let until = Instant::now() + PROMPT_BACK_WAIT;
    over_rpc(entry, sid, |seen| walk::prompt_back(seen, until)).await?;
    let mut walk = SubmitWalk::new(text, false, SubmitTiming::default());
    over_rpc(entry, sid, |seen| walk.step(seen)).await?;
    Ok(walk.submitted().and_then(|d| d.submitted).unwrap_or(false))
}
