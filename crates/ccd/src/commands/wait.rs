//! `ccd wait`: block until a session needs you, is idle, or has exited,
//! for scripts. Follows the session through the socket API, not by
//! polling: `events.subscribe` first, then `sessions.get`; each event
//! about the session (or `events.lagged`) asks `sessions.get` again, and
//! the answer is judged by [`crate::shared::activity`]. A process that
//! moves on to another conversation (`session.id_changed`, `/clear`) is
//! followed to its new id. Works for any session the daemon sees, held or
//! not, on this machine or `--host`'s.
//!
//! Exit status (also in `ccd wait --help` and the README): 0 reached (at
//! once if it already held), 1 an error, 2 a usage error (clap's), 3 the
//! session ended before reaching it, 124 `--timeout` passed first (as
//! coreutils' `timeout`).

use crate::cli::{GlobalArgs, UntilState, WaitArgs};
use crate::shared::activity::{self, Activity};
use ccd_claude::display::line;
use ccd_client::Client;
use ccd_protocol::methods::events::{
    Event, EventKind, EventNotification, EventsSubscribe, SubscribeParams,
};
use ccd_protocol::methods::session::{SessionInfo, SessionsGet};
use ccd_protocol::methods::SessionRef;
use ccd_protocol::NotificationKind;
use std::process::ExitCode;
use std::time::Instant;

/// The state held: exit status 0.
pub const REACHED: u8 = 0;
/// The session ended (no process) before the state was reached.
pub const ENDED: u8 = 3;
/// `--timeout` passed first.
pub const TIMED_OUT: u8 = 124;

/// The events that can change what a session is doing (`session.context`
/// cannot; `events.lagged` always comes).
const TYPES: &[EventKind] = &[
    EventKind::Appeared,
    EventKind::Disappeared,
    EventKind::IdChanged,
    EventKind::Status,
    EventKind::Attention,
    EventKind::AttentionCleared,
    EventKind::Lifecycle,
    EventKind::Exited,
    EventKind::Reaped,
];

/// Where a wait stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Reached,
    Ended,
    Pending,
}

/// Whether `now` is the state waited for, or can no longer become it.
fn judge(until: UntilState, now: Activity) -> Verdict {
    match (until, now) {
        (UntilState::Exited, Activity::Exited) => Verdict::Reached,
        (_, Activity::Exited) => Verdict::Ended,
        (UntilState::NeedsYou, Activity::NeedsYou) | (UntilState::Idle, Activity::Idle) => {
            Verdict::Reached
        }
        _ => Verdict::Pending,
    }
}

pub fn run(global: &GlobalArgs, args: &WaitArgs) -> anyhow::Result<ExitCode> {
    let deadline = args.timeout.and_then(|t| Instant::now().checked_add(t));
    let mut c = crate::shared::connect::connect(global)?;
    // Subscribed before the first look: a change after it is an event.
    c.call::<EventsSubscribe>(&SubscribeParams {
        types: Some(TYPES.iter().map(|k| k.as_str().to_string()).collect()),
    })?;
    let mut info = get(&mut c, &args.session)?;
    let mut sid = info.session_id.clone();
    loop {
        let now = activity::of(&info);
        tracing::debug!(session = %sid, ?now, until = ?args.until, "ccd wait looks");
        match judge(args.until, now) {
            Verdict::Reached => return Ok(ExitCode::from(REACHED)),
            Verdict::Ended => {
                eprintln!(
                    "ccd wait: {} has no process: it ended before it {}",
                    line(&sid),
                    match args.until {
                        UntilState::NeedsYou => "needed you",
                        _ => "was idle",
                    }
                );
                return Ok(ExitCode::from(ENDED));
            }
            Verdict::Pending => {}
        }
        match next_change(&mut c, &mut sid, deadline)? {
            Some(()) => info = get(&mut c, &sid)?,
            None => {
                eprintln!(
                    "ccd wait: {} is still {} after --timeout",
                    line(&sid),
                    word(now)
                );
                return Ok(ExitCode::from(TIMED_OUT));
            }
        }
    }
}

/// The session as the daemon sees it now.
fn get(c: &mut Client, session: &str) -> anyhow::Result<SessionInfo> {
    Ok(c.call::<SessionsGet>(&SessionRef {
        session: session.to_string(),
    })?)
}

/// Waits for an event that may change what `sid` is doing (`Some`), or
/// the deadline (`None`). A `session.id_changed` away from `sid` moves
/// `sid` to the new id.
fn next_change(
    c: &mut Client,
    sid: &mut String,
    deadline: Option<Instant>,
) -> anyhow::Result<Option<()>> {
    loop {
        let left = match deadline {
            Some(d) => match d.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => Some(left),
                _ => return Ok(None),
            },
            None => None,
        };
        let Some(n) = c.next_notification(left)? else {
            continue; // the deadline is checked above
        };
        if n.method != EventNotification::NAME {
            continue;
        }
        let e: Event = match n.params_as::<Event>() {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!(error = %e.message, "skipping an event that does not read");
                continue;
            }
        };
        if e.kind == EventKind::Lagged {
            return Ok(Some(())); // something may have been missed
        }
        if e.kind == EventKind::IdChanged && e.from.as_deref() == Some(sid.as_str()) {
            if let Some(to) = e.to.or(e.session) {
                tracing::debug!(from = %sid, %to, "the session's process moved on");
                *sid = to;
            }
            return Ok(Some(()));
        }
        if e.session.as_deref() == Some(sid.as_str()) {
            return Ok(Some(()));
        }
    }
}

/// How the timeout message names a state.
fn word(a: Activity) -> &'static str {
    match a {
        Activity::NeedsYou => "waiting for you",
        Activity::Busy => "busy",
        Activity::Idle => "idle",
        Activity::Other => "starting",
        Activity::Exited => "ended",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_state_is_reached_or_ended_or_still_awaited() {
        use Activity::*;
        use UntilState as U;
        for (until, now, want) in [
            (U::NeedsYou, NeedsYou, Verdict::Reached),
            (U::NeedsYou, Busy, Verdict::Pending),
            (U::NeedsYou, Idle, Verdict::Pending),
            (U::NeedsYou, Exited, Verdict::Ended),
            (U::Idle, Idle, Verdict::Reached),
            (U::Idle, NeedsYou, Verdict::Pending),
            (U::Idle, Other, Verdict::Pending),
            (U::Idle, Exited, Verdict::Ended),
            (U::Exited, Exited, Verdict::Reached),
            (U::Exited, Idle, Verdict::Pending),
            (U::Exited, NeedsYou, Verdict::Pending),
        ] {
            assert_eq!(judge(until, now), want, "{until:?} {now:?}");
        }
    }
}
