//! Walking a dialog of the CLI, sans IO: answering the permission prompt
//! ([`respond::RespondWalk`], `holder.respond`), submitting a prompt
//! ([`submit::SubmitWalk`], `holder.submit`) and the trust step at startup
//! ([`trust::TrustWalk`], run by the holder's lifecycle), all on one
//! discipline: nothing is pressed blind, each key's effect is seen on the
//! screen before the next, Enter only on a verified option.
//!
//! Each walk is a state machine with no clock, processes or I/O: each
//! [`Seen`] (the verdict on the screen, the time, when the prompt first
//! showed, when the screen last changed) goes in, a [`Step`] comes out
//! (keys to type, a time to look again at the latest, done) or a
//! [`WalkError`]; each has its timing type (`*Timing`) and, once done, its
//! outcome (`answered()`, `submitted()`, `trusted()`). Drivers run them:
//!
//! - in the holder (`ccd_holder::walk::driver`, holder protocol
//!   [`WALK_VERSION`]): on the connection's thread, reading the screen model
//!   itself and waking on new output, knowing when the prompt appeared —
//!   one call from the daemon;
//! - in the daemon, for a holder of an older protocol (which outlives an
//!   upgrade): over `holder.screen` and `holder.input`, polling, knowing
//!   only when it first saw the prompt;
//! - the trust step in the holder's lifecycle thread
//!   (`ccd_holder::lifecycle`), stepped on each of its ticks beside the
//!   startup's other observations (the registry entry, the exit), which
//!   knows when the screen last changed.
//!
//! This crate depends on the screen classifier and the protocol types
//! only, so the daemon drives the walks without the holder crate.
//!
//! [`WALK_VERSION`]: ccd_protocol::holder::WALK_VERSION

#![forbid(unsafe_code)]

mod error;
pub mod respond;
pub mod submit;
pub mod trust;

use std::time::Instant;

use ccd_screen::ScreenState;

pub use error::WalkError;
pub use respond::{Answered, RespondTiming, RespondWalk};
pub use submit::{SubmitTiming, SubmitWalk, Submitted};
pub use trust::{TrustTiming, TrustWalk, Trusted};

/// One look at the session.
#[derive(Debug, Clone, Copy)]
pub struct Seen<'a> {
    /// Now.
    pub now: Instant,
    /// The classifier's verdict on the screen as parsed now.
    pub verdict: &'a ScreenState,
    /// DECCKM: arrows are sent as `ESC O x`.
    pub application_cursor: bool,
    /// Bracketed paste is on: typed text goes inside paste markers.
    pub bracketed_paste: bool,
    /// When the permission prompt on the screen first showed, if the
    /// driver knows (the holder does; the daemon knows only when it first
    /// saw it, which the walk takes when this is `None`).
    pub prompt_since: Option<Instant>,
    /// When the screen's text last changed, if the driver knows (the
    /// holder's lifecycle does; the trust step takes `now`, a screen that
    /// just changed, when this is `None`).
    pub changed_at: Option<Instant>,
}

/// What the driver does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Type these bytes, then look again.
    Send(Vec<u8>),
    /// Look again on new output, at this instant at the latest.
    Wait(Instant),
    /// The walk is over; its outcome is ready.
    Done,
}

/// The draft in the input box, `None` when the input prompt is not showing.
pub fn draft_of(verdict: &ScreenState) -> Option<&str> {
    match verdict {
        ScreenState::Ready(p) => Some(&p.input),
        _ => None,
    }
}

/// How long a refusal's message waits for the input prompt to come back.
pub const PROMPT_BACK_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The step of a wait for the input prompt (a refused tool brings it back
/// before its message is submitted), given up at `until`.
pub fn prompt_back(seen: &Seen, until: Instant) -> Result<Step, WalkError> {
    if matches!(seen.verdict, ScreenState::Ready(_)) {
        Ok(Step::Done)
    } else if seen.now >= until {
        Err(WalkError::NotBack {
            waited_secs: PROMPT_BACK_WAIT.as_secs(),
            shows: seen.verdict.shows(),
        })
    } else {
        Ok(Step::Wait(until))
    }
}
