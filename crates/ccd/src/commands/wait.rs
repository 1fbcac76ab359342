//! `ccd wait`: block until a session needs you, is idle, or has exited,
//! for scripts. Follows the session through the socket API, not by
//! polling: `events.subscribe` first, then `sessions.get`; each event
//! about the session (or `events.lagged`) asks `sessions.get` again, and
//! the answer is judged by [`crate::shared::activity`]. A process that
//! moves on to another conversation (`session.id_changed`, `/clear`) is
//! followed to its new id. Works for any session the daemon sees, held or
//! not, on this machine or `--host`'s.
//!
//! `needs-you` returns only once what is needed is known ([`told`]): for a
//! session ccd holds, the permission dialog with its prompt id (Claude
//! Code's registry says `waiting` ~0.1 s before the dialog is drawn, and
//! the screen is read after that), or the attention reason; so a script
//! can `ccd approve --prompt` right after. A dialog the screen never names
//! (one ccd does not recognize) is waited for at most [`DETAIL_GRACE`],
//! then the wait returns without it and says so. On return it prints one
//! line ([`reached_line`]): the state, the session's full id, and for a
//! permission dialog `prompt <id> <tool and command>`.
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
use std::time::Duration;
use std::time::Instant;

/// The state held: exit status 0.
pub const REACHED: u8 = 0;
/// The session ended (no process) before the state was reached.
pub const ENDED: u8 = 3;
/// `--timeout` passed first.
pub const TIMED_OUT: u8 = 124;

/// How long `needs-you` waits, once a held session needs someone, for its
/// screen to say what (a prompt id, an attention reason) before returning
/// without it.
pub const DETAIL_GRACE: Duration = Duration::from_secs(3);

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
    // Since when the session needs someone without saying what yet.
    let mut untold_since: Option<Instant> = None;
    loop {
        let now = activity::of(&info);
        tracing::debug!(session = %sid, ?now, until = ?args.until, "ccd wait looks");
        let mut verdict = judge(args.until, now);
        let mut grace_end = None;
        if verdict == Verdict::Reached && args.until == UntilState::NeedsYou && !told(&info) {
            let since = *untold_since.get_or_insert_with(Instant::now);
            if since.elapsed() < DETAIL_GRACE {
                verdict = Verdict::Pending;
                grace_end = since.checked_add(DETAIL_GRACE);
            } else {
                eprintln!(
                    "ccd wait: {} needs you, but its screen did not say what within {} s (no prompt id)",
                    line(&sid),
                    DETAIL_GRACE.as_secs()
                );
            }
        } else if now != Activity::NeedsYou {
            untold_since = None;
        }
        match verdict {
            Verdict::Reached => {
                println!("{}", reached_line(args.until, &info));
                return Ok(ExitCode::from(REACHED));
            }
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
        let wake = match (deadline, grace_end) {
            (Some(d), Some(g)) => Some(d.min(g)),
            (d, g) => d.or(g),
        };
        match next_change(&mut c, &mut sid, wake)? {
            Some(()) => info = get(&mut c, &sid)?,
            None if deadline.is_some_and(|d| Instant::now() >= d) => {
                eprintln!(
                    "ccd wait: {} is still {} after --timeout",
                    line(&sid),
                    word(now)
                );
                return Ok(ExitCode::from(TIMED_OUT));
            }
            // The grace ended: look once more.
            None => info = get(&mut c, &sid)?,
        }
    }
}

/// Whether what `info`'s session needs is known: for a session ccd holds,
/// the permission dialog with its prompt id, or the attention reason; any
/// other says no more than Claude Code's status.
fn told(info: &SessionInfo) -> bool {
    match info.ccd.as_ref().filter(|c| !c.lifecycle.ended()) {
        Some(c) => c.permission_prompt.is_some() || c.attention.is_some(),
        None => true,
    }
}

/// The line printed on return: `needs-you <sid> prompt <id> <tool and
/// command>` for a permission dialog with its id, `needs-you <sid>
/// <what>` for another wait (the attention reason or the registry's
/// `waitingFor`, possibly nothing), `idle <sid>`, `exited <sid>`;
/// sanitized, one line.
fn reached_line(until: UntilState, info: &SessionInfo) -> String {
    let sid = &info.session_id;
    let mut words = match until {
        UntilState::NeedsYou => "needs-you",
        UntilState::Idle => "idle",
        UntilState::Exited => "exited",
    }
    .to_string();
    words.push(' ');
    words.push_str(sid);
    if until == UntilState::NeedsYou {
        let held = info.ccd.as_ref().filter(|c| !c.lifecycle.ended());
        let what = match held {
            Some(c) => match (&c.permission_prompt, &c.permission) {
                (Some(id), p) => Some(format!("prompt {id} {}", p.as_deref().unwrap_or(""))),
                (None, _) => c.attention.clone().or_else(|| info.waiting_for.clone()),
            },
            None => info.waiting_for.clone(),
        };
        if let Some(w) = what.filter(|w| !w.trim().is_empty()) {
            words.push(' ');
            words.push_str(w.trim());
        }
    }
    line(&words).into_owned()
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

    fn info(ccd: serde_json::Value, waiting_for: Option<&str>) -> SessionInfo {
        serde_json::from_value(serde_json::json!({
            "session_id": "9b1d4c2e-7a3f", "state": "live", "pid": 1, "cwd": null,
            "status": "waiting", "waiting_for": waiting_for, "kind": null, "name": null,
            "version": null, "started_at": null, "last_activity": null, "title": null,
            "model": null, "context_tokens": null, "context_percent": null,
            "context_window": null, "transcript": null, "transcript_bytes": null, "ccd": ccd
        }))
        .expect("a SessionInfo")
    }

    #[test]
    fn a_held_session_s_need_is_told_by_its_prompt_id_or_its_attention() {
        let held = |extra: serde_json::Value| {
            let mut c = serde_json::json!({"holder": "h", "lifecycle": "waiting", "attached": 0, "pinned": false});
            for (k, v) in extra.as_object().into_iter().flatten() {
                c[k] = v.clone();
            }
            c
        };
        // The registry said `waiting`; the screen has not shown the dialog.
        let early = info(held(serde_json::json!({})), Some("permission prompt"));
        assert!(!told(&early));
        assert_eq!(
            reached_line(UntilState::NeedsYou, &early),
            "needs-you 9b1d4c2e-7a3f permission prompt"
        );
        let drawn = info(
            held(
                serde_json::json!({"permission": "Bash command rm x\u{1b}[2J",
                "permission_prompt": "0123456789abcdef"}),
            ),
            Some("permission prompt"),
        );
        assert!(told(&drawn));
        assert_eq!(
            reached_line(UntilState::NeedsYou, &drawn),
            "needs-you 9b1d4c2e-7a3f prompt 0123456789abcdef Bash command rm x",
            "sanitized"
        );
        let asked = info(
            held(
                serde_json::json!({"lifecycle": "needs-attention", "attention": "the API-key dialog"}),
            ),
            None,
        );
        assert!(told(&asked));
        assert_eq!(
            reached_line(UntilState::NeedsYou, &asked),
            "needs-you 9b1d4c2e-7a3f the API-key dialog"
        );
        // Not held: its status is all there is.
        let outside = info(serde_json::Value::Null, Some("permission prompt"));
        assert!(told(&outside));
        assert_eq!(
            reached_line(UntilState::Idle, &outside),
            "idle 9b1d4c2e-7a3f"
        );
        assert_eq!(
            reached_line(UntilState::Exited, &outside),
            "exited 9b1d4c2e-7a3f"
        );
    }
}
