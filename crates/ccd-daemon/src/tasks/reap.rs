//! Stopping held sessions to free the machine, by two opt-in rules served
//! by one task:
//! - **idle** (`reap_idle_minutes`): a session idle with no client for
//!   longer than the limit is stopped;
//! - **memory budget** (`memory_budget`): when the memory of the sessions
//!   ccd holds (as the cost sampler last measured it, `crate::cost`) goes
//!   over the budget, the eligible sessions that free the most are stopped
//!   first ([`next_to_stop`]) until the total is under it. Eligible: idle
//!   for at least `reap_min_idle` (default 10 min).
//!
//! Either way a session is only ever stopped *at rest*: Claude Code's
//! status `idle` (never `busy`, never `waiting`, never behind a dialog), no
//! client attached, not pinned, and no background work pending in its
//! transcript (`ccd_claude::transcript::background`, read whole: the task
//! keeps a [`Tracker`] per held session, so each check reads only what the
//! transcript gained since the last; an unreadable transcript counts as
//! work pending); right before the
//! stop the holder is asked again, and its screen must show the prompt
//! with nothing typed in it (a draft not sent lives only there). A stopped session stays resumable (its
//! transcript is the history; `ccd attach` resumes it in its cwd); `ccd ls`
//! shows it `reaped`. Each stop is a `session.reaped` event (the reason,
//! the bytes freed) and an `info` line in the daemon's log.

use crate::cost::CostBoard;
use crate::events::EventHub;
use crate::holders::rpc::HolderError;
use crate::holders::{self, HolderEntry, HolderTable};
use ccd_claude::transcript;
use ccd_claude::transcript::background::Tracker;
use ccd_protocol::methods::events::{Event, EventKind};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the reaper enforces (at least one rule is on).
#[derive(Debug, Clone, Copy)]
pub struct Rules {
    /// Stop sessions at rest longer than this.
    pub idle_limit: Option<Duration>,
    /// Keep the held sessions' memory under this many bytes.
    pub budget: Option<u64>,
    /// The budget stops only sessions at rest at least this long.
    pub min_idle: Duration,
}

impl Rules {
    pub fn any(&self) -> bool {
        self.idle_limit.is_some() || self.budget.is_some()
    }
}

/// A session the budget may stop, and what it holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub holder: String,
    pub memory_bytes: u64,
}

/// The budget's choice, sans IO: while `total` is over `budget`, the
/// candidate that frees the most (ties: the holder id, so the choice is
/// stable), leaving out those already `tried`. `None`: under budget, or
/// nothing left to stop.
pub fn next_to_stop<'a>(
    total: u64,
    budget: u64,
    candidates: &'a [Candidate],
    tried: &HashSet<String>,
) -> Option<&'a Candidate> {
    if total <= budget {
        return None;
    }
    candidates
        .iter()
        .filter(|c| !tried.contains(&c.holder))
        .max_by(|a, b| {
            a.memory_bytes
                .cmp(&b.memory_bytes)
                .then_with(|| b.holder.cmp(&a.holder))
        })
}

/// Why a session is being stopped.
enum Why {
    Idle {
        idle: Duration,
    },
    Budget {
        idle: Duration,
        total: u64,
        budget: u64,
    },
}

impl Why {
    fn word(&self) -> &'static str {
        match self {
            Why::Idle { .. } => "idle",
            Why::Budget { .. } => "memory_budget",
        }
    }

    /// What `ccd ls` shows as the reason the session ended.
    fn sentence(&self, freed: Option<u64>) -> String {
        match self {
            Why::Idle { idle } => format!(
                "stopped after {} s idle with no client (resumable)",
                idle.as_secs()
            ),
            Why::Budget { idle, total, budget } => format!(
                "stopped to keep held sessions under the memory budget ({} MiB held, budget {} MiB; it freed {} MiB after {} s idle; resumable)",
                total >> 20,
                budget >> 20,
                freed.unwrap_or(0) >> 20,
                idle.as_secs()
            ),
        }
    }
}

/// How long after the last input written to a session (a client's keys, a
/// `session.send`, an answer: the holder's `last_input_at`) it is not at
/// rest. A prompt just submitted leaves an empty prompt on the screen at
/// once, but Claude Code says `busy` only ~0.2 s later (more on a loaded
/// machine): a stop in that gap loses the prompt's turn.
pub const INPUT_QUIET: Duration = Duration::from_secs(5);

/// Whether no input reached the session in the last [`INPUT_QUIET`] before
/// `now_ms` (unix ms); a holder too old to say counts as quiet.
fn input_quiet(i: &ccd_protocol::holder::InfoResult, now_ms: i64) -> bool {
    i.last_input_at
        .is_none_or(|at| now_ms.saturating_sub(at) >= INPUT_QUIET.as_millis() as i64)
}

/// Whether `h` is at rest: idle at its prompt, no client, not pinned, not
/// ended, nothing typed into it lately.
fn at_rest(h: &HolderEntry) -> bool {
    let now_ms = crate::events::now_ms();
    !h.meta.pinned
        && h.info.as_ref().is_some_and(|i| {
            i.exit.is_none()
                && i.clients.is_empty()
                && holders::lifecycle_of(i) == ccd_protocol::methods::session::Lifecycle::Idle
                && input_quiet(i, now_ms)
        })
}

/// What the reaper works with, handed to it by the server.
pub struct Reaper {
    pub holders: Arc<HolderTable>,
    /// The cost sampler's board (memory per session, and its ticks).
    pub costs: Arc<CostBoard>,
    /// Where `session.reaped` is published.
    pub events: EventHub,
    /// Claude Code's `projects/` (the transcripts).
    pub projects: std::path::PathBuf,
    /// The daemon's shutdown flag.
    pub shutdown: tokio::sync::watch::Receiver<bool>,
    /// Set the moment `daemon.stop` is accepted (before `shutdown`).
    pub stopping: Arc<std::sync::atomic::AtomicBool>,
}

impl Reaper {
    fn is_stopping(&self) -> bool {
        *self.shutdown.borrow() || self.stopping.load(std::sync::atomic::Ordering::Acquire)
    }
}

/// Runs until the daemon stops.
pub async fn run(reaper: Reaper, rules: Rules) {
    let tick = rules
        .idle_limit
        .map(|l| (l / 4).clamp(Duration::from_millis(200), Duration::from_secs(15)))
        .unwrap_or(Duration::from_secs(15));
    let mut idle_since: HashMap<String, Instant> = HashMap::new();
    // The background-work scan of each held session's transcript, by
    // session id (one per held session: dropped with it).
    let mut scans: HashMap<String, Tracker> = HashMap::new();
    let mut stop = reaper.shutdown.clone();
    let mut sampled = reaper.costs.ticks();
    let mut warned_over = false;
    tracing::info!(
        idle_limit_secs = rules.idle_limit.map(|l| l.as_secs()),
        memory_budget = rules.budget,
        min_idle_secs = rules.min_idle.as_secs(),
        "reaping on"
    );
    loop {
        tokio::select! {
            _ = tokio::time::sleep(tick) => {}
            // The budget acts right after each cost sample.
            r = sampled.changed(), if rules.budget.is_some() => {
                if r.is_err() {
                    return;
                }
            }
            _ = stop.changed() => return,
        }
        if reaper.is_stopping() {
            return;
        }
        let now = Instant::now();
        let holders = reaper.holders.snapshot();
        idle_since.retain(|id, _| holders.iter().any(|h| &h.id == id));
        scans.retain(|sid, _| holders.iter().any(|h| h.session_id() == Some(sid.as_str())));
        for h in &holders {
            if at_rest(h) {
                idle_since.entry(h.id.clone()).or_insert(now);
            } else {
                idle_since.remove(&h.id);
            }
        }
        let idle_for = |id: &str| {
            idle_since
                .get(id)
                .map(|s| now.duration_since(*s))
                .unwrap_or_default()
        };
        let mut stopped: HashSet<String> = HashSet::new();
        if let Some(limit) = rules.idle_limit {
            for h in holders.iter().filter(|h| at_rest(h)) {
                let idle = idle_for(&h.id);
                if idle >= limit && stop_one(&reaper, &mut scans, h, Why::Idle { idle }, None).await
                {
                    stopped.insert(h.id.clone());
                }
            }
        }
        if let Some(budget) = rules.budget {
            let live: Vec<&HolderEntry> = holders
                .iter()
                .filter(|h| !stopped.contains(&h.id))
                .filter(|h| h.info.as_ref().is_some_and(|i| i.exit.is_none()))
                .collect();
            let costs = reaper.costs.get(
                live.iter()
                    .filter_map(|h| h.info.as_ref().map(|i| i.child_pid)),
            );
            let memory_of = |h: &HolderEntry| {
                h.info
                    .as_ref()
                    .and_then(|i| costs.get(&i.child_pid))
                    .map(|c| c.memory_bytes)
            };
            let mut total: u64 = live.iter().filter_map(|h| memory_of(h)).sum();
            let candidates: Vec<Candidate> = live
                .iter()
                .filter(|h| at_rest(h) && idle_for(&h.id) >= rules.min_idle)
                .filter_map(|h| {
                    Some(Candidate {
                        holder: h.id.clone(),
                        memory_bytes: memory_of(h)?,
                    })
                })
                .collect();
            let mut tried = HashSet::new();
            while let Some(c) = next_to_stop(total, budget, &candidates, &tried) {
                tried.insert(c.holder.clone());
                let Some(h) = live.iter().find(|h| h.id == c.holder) else {
                    continue;
                };
                let why = Why::Budget {
                    idle: idle_for(&h.id),
                    total,
                    budget,
                };
                if stop_one(&reaper, &mut scans, h, why, Some(c.memory_bytes)).await {
                    total = total.saturating_sub(c.memory_bytes);
                }
            }
            let over = total > budget;
            if over && !warned_over {
                tracing::warn!(
                    total_bytes = total,
                    budget_bytes = budget,
                    "held sessions are over the memory budget and none more can be stopped (busy, attached, pinned, with background work, or idle less than reap_min_idle)"
                );
            }
            warned_over = over;
        }
        for id in &stopped {
            idle_since.remove(id);
        }
    }
}

/// Stops `h` if it is still at rest with no background work pending
/// (asked of its transcript through its tracker in `scans`); `true` when
/// it was stopped and collected.
async fn stop_one(
    reaper: &Reaper,
    scans: &mut HashMap<String, Tracker>,
    h: &HolderEntry,
    why: Why,
    freed: Option<u64>,
) -> bool {
    let Some(sid) = h.session_id().map(String::from) else {
        return false;
    };
    let projects = reaper.projects.clone();
    let mut tracker = scans.remove(&sid).unwrap_or_default();
    let s = sid.clone();
    let looked = tokio::task::spawn_blocking(move || {
        let Some(path) = transcript::find_by_session_id(&projects, &s) else {
            return (false, None, tracker);
        };
        let pending = match tracker.look(&path) {
            Ok(p) => {
                tracing::debug!(
                    session = %s,
                    read_bytes = tracker.last_read(),
                    offset = tracker.offset(),
                    shells = p.shells.len(),
                    subagents = p.subagents.len(),
                    untracked = p.untracked,
                    "background work checked"
                );
                p.any()
            }
            Err(error) => {
                tracing::debug!(session = %s, %error, "cannot read the transcript: counted as work pending");
                true
            }
        };
        let context = transcript::read_summary(&path)
            .ok()
            .and_then(|s| s.context_tokens);
        (pending, context, tracker)
    })
    .await;
    let (pending, context) = match looked {
        Ok((pending, context, tracker)) => {
            scans.insert(sid.clone(), tracker);
            (pending, context)
        }
        Err(_) => (true, None),
    };
    if pending {
        tracing::debug!(session = %sid, "at rest but background work is pending: not stopped");
        return false;
    }
    // The table may be a few seconds old (a still session is refreshed
    // slowly): ask the holder itself before stopping it.
    let fresh = reaper.holders.refresh(&h.id).await;
    let still = reaper.holders.get(&h.id).filter(|_| fresh.is_some());
    if !still.as_ref().is_some_and(at_rest) {
        tracing::debug!(session = %sid, "no longer at rest when checked: not stopped");
        return false;
    }
    // The holder refuses the stop if anything is typed after this look.
    let last_input = still
        .as_ref()
        .and_then(|e| e.info.as_ref())
        .and_then(|i| i.last_input_at)
        .unwrap_or(0);
    // Words typed into the prompt and not sent live only on the screen:
    // a session with a draft (or anything but its prompt on screen) stays.
    match empty_prompt(h).await {
        Ok(true) => {}
        Ok(false) => {
            tracing::info!(session = %sid, holder = %h.id, "idle with a draft in its prompt (or not at its prompt): not stopped");
            return false;
        }
        Err(error) => {
            tracing::warn!(session = %sid, %error, "cannot read the screen: not stopped");
            return false;
        }
    }
    match &why {
        Why::Idle { idle } => tracing::info!(
            session = %sid,
            holder = %h.id,
            idle_secs = idle.as_secs(),
            context_tokens = ?context,
            "reaping an idle session"
        ),
        Why::Budget {
            idle,
            total,
            budget,
        } => tracing::info!(
            session = %sid,
            holder = %h.id,
            idle_secs = idle.as_secs(),
            freed_bytes = freed,
            total_bytes = total,
            budget_bytes = budget,
            context_tokens = ?context,
            "stopping an idle session to keep under the memory budget"
        ),
    }
    let killed = holders::rpc::call_once::<ccd_protocol::holder::Kill>(
        &h.socket,
        &ccd_protocol::holder::KillParams {
            signal: ccd_protocol::holder::KillSignal::Term,
            grace_ms: Some(5000),
            unless_input_after: Some(last_input),
        },
    )
    .await;
    match killed {
        Ok(_) => {}
        Err(HolderError::Rpc(e)) if e.code == ccd_protocol::ErrorCode::NotAtPrompt as i64 => {
            tracing::info!(session = %sid, holder = %h.id, reason = %e.message, "typed into as it was being stopped: not stopped");
            return false;
        }
        Err(error) => {
            tracing::warn!(session = %sid, %error, "stopping failed");
            return false;
        }
    }
    let collected = reaper
        .holders
        .collect_as(
            h,
            7000,
            Some((
                ccd_protocol::methods::session::Lifecycle::Reaped,
                why.sentence(freed),
            )),
        )
        .await;
    if let Err(error) = &collected {
        tracing::warn!(session = %sid, %error, "collecting a stopped session failed");
    }
    let mut e = Event::new(EventKind::Reaped, Some(sid), crate::events::now_ms());
    e.holder = Some(h.id.clone());
    e.pid = h.info.as_ref().map(|i| i.child_pid);
    e.cwd = Some(h.meta.cwd.clone());
    e.reason = Some(why.word().into());
    e.freed_bytes = freed;
    e.context_tokens = context;
    reaper.events.publish(e);
    true
}

/// Whether the session's screen shows its prompt with nothing typed in it.
async fn empty_prompt(h: &HolderEntry) -> Result<bool, HolderError> {
    let s = holders::rpc::call_once::<ccd_protocol::holder::Screen>(
        &h.socket,
        &ccd_protocol::holder::ScreenParams {
            format: ccd_protocol::holder::ScreenFormat::Text,
        },
    )
    .await?;
    Ok(prompt_is_empty(&s.verdict))
}

/// The screen's verdict is the prompt, and its draft is empty.
fn prompt_is_empty(v: &ccd_screen::ScreenState) -> bool {
    matches!(v, ccd_screen::ScreenState::Ready(p) if p.input.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(holder: &str, mib: u64) -> Candidate {
        Candidate {
            holder: holder.into(),
            memory_bytes: mib << 20,
        }
    }

    /// Runs the rule as the task does when every stop succeeds: the order
    /// of stops.
    fn plan(total_mib: u64, budget_mib: u64, cands: &[Candidate]) -> Vec<String> {
        let mut total = total_mib << 20;
        let mut tried = HashSet::new();
        let mut out = Vec::new();
        while let Some(c) = next_to_stop(total, budget_mib << 20, cands, &tried) {
            tried.insert(c.holder.clone());
            out.push(c.holder.clone());
            total -= c.memory_bytes;
        }
        out
    }

    #[test]
    fn under_the_budget_nothing_is_stopped() {
        assert!(plan(800, 800, &[c("a", 500)]).is_empty());
        assert!(plan(100, 800, &[c("a", 50)]).is_empty());
    }

    #[test]
    fn the_biggest_goes_first_and_only_as_many_as_needed() {
        let cands = [c("small", 100), c("big", 600), c("mid", 300)];
        assert_eq!(plan(1500, 1000, &cands), ["big"]);
        assert_eq!(plan(1500, 700, &cands), ["big", "mid"]);
        assert_eq!(plan(1500, 500, &cands), ["big", "mid", "small"]);
    }

    #[test]
    fn when_the_candidates_cannot_reach_the_budget_all_of_them_go_and_then_it_stops() {
        // 2 GiB held by sessions that are not candidates (busy, attached).
        let cands = [c("a", 100), c("b", 200)];
        assert_eq!(plan(2348, 1000, &cands), ["b", "a"]);
    }

    #[test]
    fn a_candidate_that_could_not_be_stopped_is_skipped_for_the_next() {
        let cands = [c("a", 100), c("b", 600)];
        let tried = HashSet::from(["b".to_string()]);
        assert_eq!(
            next_to_stop(1000 << 20, 500 << 20, &cands, &tried).map(|c| c.holder.as_str()),
            Some("a")
        );
    }

    #[test]
    fn only_an_empty_prompt_may_be_stopped() {
        use ccd_screen::{ReadyPrompt, ScreenState};
        let ready = |input: &str| {
            ScreenState::Ready(ReadyPrompt {
                row: 30,
                input: input.into(),
                hint: None,
            })
        };
        assert!(prompt_is_empty(&ready("")));
        assert!(prompt_is_empty(&ready("  ")));
        assert!(!prompt_is_empty(&ready("half a thought")));
        assert!(!prompt_is_empty(&ScreenState::Unknown {
            blocking_hint: None
        }));
    }

    #[test]
    fn ties_are_broken_by_holder_id() {
        let cands = [c("h2", 300), c("h1", 300)];
        assert_eq!(plan(700, 500, &cands), ["h1"]);
    }
}
