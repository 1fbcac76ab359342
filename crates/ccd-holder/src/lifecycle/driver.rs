//! The lifecycle thread: every tick, observe the session (screen verdict,
//! when the screen text last changed, the registry entry of the child, the
//! exit status), step the [`Lifecycle`] core and apply its actions; record
//! what the screen shows beside the verdict (the permission dialog, the
//! welcome banner, the permission mode under the input box — taken only
//! from a settled read, `ccd_screen::classify::mode::ModeReader`: the
//! same on two changed screens in a row, or a screen that stayed as read
//! for `mode::SETTLE`, never from one read of a frame half painted).

use std::path::Path;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ccd_claude::liveness::{self, ProcessProbe};
use ccd_screen::{classify_screen, ScreenState};

use super::core::{Action, CoreConfig, Lifecycle, Observation, State};
use crate::session::Session;

/// What the driver remembers between ticks.
struct Seen {
    seq: u64,
    text: String,
    changed_at: Instant,
    verdict: ScreenState,
    /// The text changed since the footer's mode was last read.
    mode_unread: bool,
}

/// The session id of a live registry entry for `pid` at `path`, if any.
fn registry_session(path: &Path, probe: &dyn ProcessProbe) -> Option<String> {
    let entry = ccd_claude::registry::read_entry(path).ok()?;
    let verdict = liveness::check(&entry, probe);
    // Unknown counts as live: the pid is our unreaped child, it cannot have
    // been recycled; Dead means a stale file from an earlier process.
    if verdict.liveness.may_be_running() {
        tracing::info!(session_id = %entry.session_id, liveness = verdict.liveness.as_str(), reason = ?verdict.reason, "registry entry for the child is live");
        Some(entry.session_id)
    } else {
        tracing::debug!(reason = ?verdict.reason, "registry entry present but not live");
        None
    }
}

/// Start the lifecycle thread.
pub fn spawn_driver(
    session: Arc<Session>,
    cfg: CoreConfig,
    tick: Duration,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("holder-lifecycle".into())
        .spawn(move || run(&session, cfg, tick))
}

fn run(session: &Session, cfg: CoreConfig, tick: Duration) {
    let probe = liveness::system_probe();
    let mut lc = Lifecycle::new(cfg);
    let mut seen = Seen {
        seq: u64::MAX,
        text: String::new(),
        changed_at: Instant::now(),
        verdict: ScreenState::Loading,
        mode_unread: false,
    };
    session.record_transition(State::Starting.into(), None);
    let mut modes = ccd_screen::classify::mode::ModeReader::new();
    loop {
        if session.stopping() {
            return;
        }
        // Typing noted since the last step sets the holder's typing mark
        // here, off the keystroke's path (the echo's output wakes this
        // step; `ccd_sched::typing`).
        session.typing.flush();
        let now = Instant::now();
        let (exit, stream_at) = {
            let g = session.lock();
            (g.exit.clone(), g.seq)
        };
        let mut new_output = false;
        // A changed verdict: the permission dialog it shows (set once the
        // model's lock is released).
        let mut permission = None;
        // The welcome banner, read once while it shows (it scrolls away).
        let mut banner = None;
        // The permission mode the footer shows, once settled (None: no
        // new one taken at this step).
        let mut mode = None;
        // Whether this step read a changed screen's footer.
        let mut read_mode = false;
        let want_banner = !session.has_banner();
        let app_cursor = {
            let m = session.model();
            if m.parsed != seen.seq {
                new_output = true;
                seen.seq = m.parsed;
                let text = m.screen.contents();
                if text != seen.text {
                    seen.mode_unread = true;
                    seen.text = text;
                    seen.changed_at = now;
                    if want_banner {
                        banner = ccd_screen::classify::banner::detect(&m.screen.text());
                    }
                }
                let verdict = classify_screen(&m.screen);
                if verdict != seen.verdict && matches!(lc.state(), State::Starting | State::Trust) {
                    tracing::info!(verdict = ?verdict, state = lc.state().as_str(), "screen verdict");
                }
                if verdict != seen.verdict {
                    permission = Some(match &verdict {
                        ScreenState::PermissionDialog(d) => Some(crate::rpc::permission_info(d)),
                        _ => None,
                    });
                }
                // The permission mode under the input box, once the model
                // has parsed all output read so far, read on each change
                // of the text and taken only once settled (a frame read
                // half painted reads differently at the next change).
                if seen.mode_unread && m.parsed >= stream_at {
                    let read = match &verdict {
                        ScreenState::Ready(r) => r
                            .hint
                            .as_deref()
                            .and_then(ccd_screen::classify::mode::from_footer),
                        _ => None,
                    };
                    mode = modes.read(read, now);
                    read_mode = true;
                    seen.mode_unread = false;
                }
                seen.verdict = verdict;
            }
            m.screen.application_cursor()
        };
        if let Some(p) = permission {
            session.set_permission(p);
        }
        if let Some(b) = banner {
            session.set_banner(b);
        }
        if !read_mode && !seen.mode_unread {
            // The screen stayed as it was read: a mode read there may
            // have settled.
            mode = modes.settle(now);
        }
        session.set_permission_mode(mode);
        let sid = if matches!(lc.state(), State::Starting | State::Trust) && exit.is_none() {
            registry_session(&session.fixed.registry_path, probe.as_ref())
        } else {
            None
        };
        let obs = Observation {
            now,
            verdict: &seen.verdict,
            changed_at: seen.changed_at,
            application_cursor: app_cursor,
            registry_session: sid.as_deref(),
            exit: exit.as_ref(),
        };
        for action in lc.step(&obs) {
            apply(session, action);
        }
        // Once ready, the conversation the child writes is what its entry
        // names now: `/clear` and a resume inside the TUI redraw the
        // screen, so new output is when to look (one small file read per
        // step at most; the daemon's refreshes look too).
        if new_output && lc.state() == State::Ready && exit.is_none() {
            session.follow_registry();
        }
        if exit.is_some() {
            tracing::debug!(state = lc.state().as_str(), "lifecycle driver done");
            return;
        }
        // Once ready, nothing here is timed: only new output (a screen to
        // classify) or the exit can change anything. An idle session's
        // driver sleeps until one comes instead of waking every tick; while
        // output flows it still steps at most once per tick (the wait
        // after a step that saw new output). If the model had not parsed
        // all output read before this step, step again after a tick.
        let caught_up = lc.state() == State::Ready && seen.seq >= stream_at;
        if !caught_up || new_output {
            let (g, _) = session.wait_for(tick, |g| g.exit.is_some());
            drop(g);
        }
        if caught_up {
            // A mode waiting to settle is looked at again when due.
            let wait = modes
                .due(Instant::now())
                .map_or(IDLE_RECHECK, |d| d.min(IDLE_RECHECK));
            session.wait_output(stream_at, wait);
        }
    }
}

/// Longest sleep of a ready session's driver without output (a safety net
/// against a lost wakeup: new output and the exit wake it). A step after
/// it that finds nothing new goes straight back to sleep: one wakeup per
/// period for an idle session.
const IDLE_RECHECK: Duration = Duration::from_secs(30);

fn apply(session: &Session, action: Action) {
    match action {
        Action::Send { bytes, purpose } => {
            tracing::info!(purpose = ?purpose, bytes = ?String::from_utf8_lossy(&bytes), "trust step: key sent");
            // The holder's own walker: not held by a walk's gate (it types
            // only before the prompt, when no walk can run).
            if let Err(e) = session.send_walk_input(bytes) {
                tracing::warn!(error = %e, "trust step: key could not be sent");
            }
        }
        Action::Transition { state, detail } => session.set_state(state, detail),
        Action::SessionId(sid) => session.set_session_id(sid),
        Action::Attention(reason) => session.set_attention(reason),
    }
}
