//! `session.respond`: answering the tool permission prompt a held session
//! shows, on a person's request.
//!
//! Nothing is pressed blind: the walk ([`ccd_walk::respond`]) reads
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
//! `holder.input`, polling (`session_ops::drive::over_rpc`).

use crate::conn_ctx::ConnCtx;
use crate::holders::rpc::HolderConn;
use crate::session_ops::drive::{
    over_rpc, submit_when_back, text_within_bound, typed_for, WALK_TIMEOUT,
};
use crate::session_ops::resolve::held;
use ccd_claude::typing;
use ccd_protocol::holder as h;
use ccd_protocol::methods::session::{RespondChoice, RespondParams, RespondResult};
use ccd_protocol::RpcError;
use ccd_walk::{RespondTiming, RespondWalk};

/// `session.respond` (see the module doc).
pub async fn respond(ctx: &ConnCtx, p: RespondParams) -> Result<RespondResult, RpcError> {
    if p.message.is_some() && p.choice != RespondChoice::No {
        return Err(RpcError::invalid_params(
            "message goes with choice \"no\" (what Claude should do instead)",
        ));
    }
    // A deny message is words for the model: it can never start a shell
    // or a slash command, and an empty one is refused before anything is
    // answered.
    let message = match p.message {
        Some(m) => {
            text_within_bound("message", &m)?;
            Some(typed_for("message", m, typing::Intent::Literal)?)
        }
        None => None,
    };
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
                    message,
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
    let message_submitted = match message {
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
