//! The holder's driver of a walk (`holder.respond`, `holder.submit`): runs
//! on the connection's thread that asked, reads the screen model itself
//! (everything read from the PTY before the look is parsed first), takes
//! the prompt's first appearance from the lifecycle driver's record, types
//! through the PTY writer, and sleeps until new output or the walk's next
//! deadline — no polling, no connection per look.
//!
//! What may block: this connection's thread only (the other connections,
//! the reader, the parser and the lifecycle thread go on); each look takes
//! the session lock, then the model lock, briefly, in the crate's order.
//! While a walk runs it holds the session's input gate
//! ([`Session::hold_input`]): other writers' input waits for its end (on
//! their own threads), so the walk's keys act on the screen it saw and the
//! option it reports is the one taken.

use std::time::Instant;

use ccd_protocol::holder as h;
use ccd_protocol::RpcError;
use ccd_screen::{classify_screen, ScreenState};

use super::{
    RespondTiming, RespondWalk, Seen, Step, SubmitTiming, SubmitWalk, WalkError, PROMPT_BACK_WAIT,
};
use crate::rpc::permission_info;
use crate::session::{Session, SessionError};

/// How long a walk waits after the last input anyone wrote before its first
/// look (only when that input is this recent): keys in flight reach the
/// screen first. The real CLI takes a typed key within a few ms; a walk
/// right after someone typed starts up to this much later.
pub const INPUT_SETTLE: std::time::Duration = std::time::Duration::from_millis(150);

/// Why a driven walk stopped.
enum Stop {
    Walk(WalkError),
    Session(SessionError),
}

impl From<WalkError> for Stop {
    fn from(e: WalkError) -> Self {
        Stop::Walk(e)
    }
}

/// One look at the session: the verdict and the modes of the screen as
/// parsed up to everything read before it, and the stream offset it was
/// taken at (new output is what comes after).
struct Look {
    verdict: ScreenState,
    application_cursor: bool,
    bracketed_paste: bool,
    stream_at: u64,
}

fn look(session: &Session) -> Result<Look, SessionError> {
    let stream_at = {
        let g = session.lock();
        if g.exit.is_some() {
            return Err(SessionError::Exited);
        }
        g.seq
    };
    session.catch_up();
    let m = session.model();
    Ok(Look {
        verdict: classify_screen(&m.screen),
        application_cursor: m.screen.application_cursor(),
        bracketed_paste: m.screen.modes().bracketed_paste,
        stream_at,
    })
}

fn prompt_since(session: &Session, verdict: &ScreenState) -> Option<Instant> {
    match verdict {
        ScreenState::PermissionDialog(d) => session.prompt_since(&permission_info(d)),
        _ => None,
    }
}

/// Runs `step` on each look until it says done; a stop is what the client
/// gets (`session_error`: a refused session operation on the wire).
fn drive(
    session: &Session,
    session_error: fn(SessionError) -> RpcError,
    step: impl FnMut(&Seen) -> Result<Step, WalkError>,
) -> Result<(), RpcError> {
    drive_looks(session, step).map_err(|e| into_rpc(session, e, session_error))
}

fn drive_looks(
    session: &Session,
    mut step: impl FnMut(&Seen) -> Result<Step, WalkError>,
) -> Result<(), Stop> {
    // Nobody else types while the walk does: what it saw on the screen is
    // what its keys act on (an arrow from an attached terminal between a
    // look and Enter would make Enter take another option).
    let _held = session.hold_input();
    // Keys another writer sent just before are in flight: let the CLI take
    // them before the first look, so the screen shows what they did.
    if let Some(at) = session.last_input_at() {
        let since = crate::session::unix_ms().saturating_sub(at);
        let settle = INPUT_SETTLE.as_millis() as i64;
        if (0..settle).contains(&since) {
            std::thread::sleep(std::time::Duration::from_millis((settle - since) as u64));
        }
    }
    loop {
        let l = look(session).map_err(Stop::Session)?;
        let now = Instant::now();
        let seen = Seen {
            now,
            verdict: &l.verdict,
            application_cursor: l.application_cursor,
            bracketed_paste: l.bracketed_paste,
            prompt_since: prompt_since(session, &l.verdict),
            changed_at: None,
        };
        match step(&seen)? {
            Step::Send(bytes) => session.send_walk_input(bytes).map_err(Stop::Session)?,
            Step::Wait(at) => {
                let left = at.saturating_duration_since(now);
                if !left.is_zero() {
                    session.wait_output(l.stream_at, left);
                }
            }
            Step::Done => return Ok(()),
        }
    }
}

/// The session id and screen rows a walk's error names.
fn into_rpc(
    session: &Session,
    stop: Stop,
    session_error: fn(SessionError) -> RpcError,
) -> RpcError {
    match stop {
        Stop::Session(e) => session_error(e),
        Stop::Walk(e) => {
            let sid = session.lock().life.session_id.clone().unwrap_or_default();
            let rows = session.model().screen.rows_text();
            e.into_rpc(&sid, &rows)
        }
    }
}

/// `holder.respond` (see [`super::respond`]); `session_error` says what a
/// refused session operation is on the wire.
pub fn respond(
    session: &Session,
    p: h::RespondParams,
    session_error: fn(SessionError) -> RpcError,
) -> Result<h::RespondResult, RpcError> {
    let mut walk = RespondWalk::new(p.prompt, p.choice, RespondTiming::default());
    drive(session, session_error, |seen| walk.step(seen))?;
    let Some(done) = walk.answered().cloned() else {
        return Err(RpcError::internal("the walk ended without an answer"));
    };
    tracing::info!(prompt = %done.prompt, choice = ?p.choice, option = %done.option, arrows = done.arrows, enters = done.enters, "holder.respond");
    let message_submitted = match p.message {
        Some(text) => Some(submit_when_back(session, text, session_error)?),
        None => None,
    };
    Ok(h::RespondResult {
        prompt: done.prompt,
        option: done.option,
        arrows: done.arrows,
        enters: done.enters,
        message_submitted,
    })
}

/// After a refusal: waits for the input prompt, then submits `text`.
fn submit_when_back(
    session: &Session,
    text: String,
    session_error: fn(SessionError) -> RpcError,
) -> Result<bool, RpcError> {
    let until = Instant::now() + PROMPT_BACK_WAIT;
    drive(session, session_error, |seen| {
        super::prompt_back(seen, until)
    })?;
    let r = submit(
        session,
        h::SubmitParams { text, force: false },
        session_error,
    )?;
    Ok(r.submitted.unwrap_or(false))
}

/// `holder.submit` (see [`super::submit`]).
pub fn submit(
    session: &Session,
    p: h::SubmitParams,
    session_error: fn(SessionError) -> RpcError,
) -> Result<h::SubmitResult, RpcError> {
    let mut walk = SubmitWalk::new(p.text, p.force, SubmitTiming::default());
    drive(session, session_error, |seen| walk.step(seen))?;
    let Some(done) = walk.submitted().cloned() else {
        return Err(RpcError::internal("the walk ended without an outcome"));
    };
    if done.removed > 0 {
        tracing::info!(
            removed = done.removed,
            "holder.submit: escape sequences and controls removed from the text"
        );
    }
    if !done.draft_shown && done.submitted.is_some() {
        tracing::warn!(
            "holder.submit: the typed text did not show in the draft; Enter was pressed anyway"
        );
    }
    if done.submitted == Some(false) {
        tracing::warn!(
            enters = done.enters,
            "holder.submit: the draft stayed in the box"
        );
    }
    tracing::info!(bytes = done.bytes, enters = done.enters, submitted = ?done.submitted, "holder.submit");
    Ok(done.on_the_wire())
}
