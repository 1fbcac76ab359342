//! What each live session costs (memory and CPU of its process tree), kept
//! on a board that `sessions.list` / `sessions.get` read and the memory
//! budget (the reaper, `tasks::reap`) acts on.
//!
//! One sampler task (`tasks::cost_sampler`) refreshes the board while any session on the machine
//! is live: the roots are the children ccd holds and every process the
//! registry watcher sees writing a session. It samples every
//! `cost_interval` (5 s by default) while the memory budget is on or a
//! client asked for costs in the last [`WATCHED`] (the dashboard asks every
//! 5 s), else every [`SLOW_INTERVAL`]: the figures are always there, and an
//! idle daemon nobody looks at costs little. A client's ask after a quiet
//! spell wakes it at once. With no live session it samples nothing and
//! wakes on the next event. A list that finds a live row the board does
//! not have yet (a session that appeared since the last tick) samples the
//! board at once.
//!
//! Locks: `probe` is held for one sample, on a blocking thread only (it
//! reads `/proc`); `costs` only to copy from or write into the map, never
//! across a sample or an `.await`. So a list never waits on a sample it
//! does not need.

use crate::events::EventHub;
use crate::holders::HolderTable;
use ccd_cost::{CostProbe, MemoryKind, TreeCost};
use ccd_protocol::methods::session::{self, SessionCost, SessionInfo, SessionState};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;
use tokio::sync::watch;

/// The sampler's period while sessions are live (config-free; tests
/// shorten it with `CCD_COST_INTERVAL_MS`).
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(5);

/// How long one ask keeps the sampler fast.
pub use crate::demand::WATCHED;

/// The period when no budget is on and nobody asked lately.
pub const SLOW_INTERVAL: Duration = Duration::from_secs(60);

/// The costs of live sessions by `claude` pid, as last sampled.
#[derive(Default)]
pub struct CostBoard {
    /// `None` until the first sample, and where the platform's process
    /// table cannot be read (then every cost is absent).
    probe: Mutex<Option<ProbeState>>,
    costs: Mutex<Figures>,
    /// Bumped after every sampler tick (the budget acts on it).
    generation: watch::Sender<u64>,
    /// Whether clients ask for costs (paces the sampler).
    demand: crate::demand::Demand,
}

/// What the last samples found.
#[derive(Default)]
struct Figures {
    by_pid: HashMap<u32, SessionCost>,
    /// Pids asked for since the last tick that had no process (not asked
    /// again until the next tick, so a stale pid costs one sample, not one
    /// per call).
    absent: std::collections::HashSet<u32>,
}

enum ProbeState {
    Ready(Box<CostProbe>),
    Unavailable,
}

impl CostBoard {
    /// The cost of each of `pids` on the board now (pids it has no figure
    /// for are left out).
    pub fn get(&self, pids: impl IntoIterator<Item = u32>) -> HashMap<u32, SessionCost> {
        let costs = self.costs.lock().unwrap_or_else(|p| p.into_inner());
        pids.into_iter()
            .filter_map(|pid| costs.by_pid.get(&pid).map(|c| (pid, c.clone())))
            .collect()
    }

    /// Those of `pids` the board knows nothing about (neither a figure nor
    /// found absent since the last tick).
    fn unknown(&self, pids: &[u32]) -> Vec<u32> {
        let costs = self.costs.lock().unwrap_or_else(|p| p.into_inner());
        pids.iter()
            .copied()
            .filter(|p| !costs.by_pid.contains_key(p) && !costs.absent.contains(p))
            .collect()
    }

    /// Samples the trees under `roots` now (blocking: call it on a
    /// blocking thread). `replace`: the board becomes exactly this sample
    /// (the sampler's tick over every live root); else the sample is added
    /// to it.
    pub fn sample_blocking(&self, roots: &[u32], replace: bool) {
        let sampled = {
            let mut probe = self.probe.lock().unwrap_or_else(|p| p.into_inner());
            let state = probe.get_or_insert_with(|| match CostProbe::new() {
                Ok(p) => ProbeState::Ready(Box::new(p)),
                Err(error) => {
                    tracing::warn!(%error, "process costs cannot be read on this machine; sessions show none");
                    ProbeState::Unavailable
                }
            });
            match state {
                ProbeState::Ready(p) => p.sample(roots),
                ProbeState::Unavailable => HashMap::new(),
            }
        };
        let at = OffsetDateTime::now_utc()
            .format(&Rfc3339)
            .unwrap_or_default();
        let mut costs = self.costs.lock().unwrap_or_else(|p| p.into_inner());
        if replace {
            costs.by_pid.clear();
            costs.absent.clear();
        } else {
            costs
                .absent
                .extend(roots.iter().filter(|p| !sampled.contains_key(p)));
        }
        for (pid, c) in sampled {
            costs.by_pid.insert(pid, on_the_wire(c, &at));
        }
    }

    /// A client asks for costs: keeps the sampler fast for [`WATCHED`],
    /// and wakes it if it was slow.
    pub fn asked(&self) {
        self.demand.asked()
    }

    /// Whether a client asked within [`WATCHED`].
    pub(crate) fn watched(&self) -> bool {
        self.demand.watched()
    }

    /// A receiver that sees a new value after every sampler tick.
    pub fn ticks(&self) -> watch::Receiver<u64> {
        self.generation.subscribe()
    }

    pub(crate) fn ticked(&self) {
        self.generation.send_modify(|g| *g = g.wrapping_add(1));
    }

    /// Resolves when a client asks after a quiet spell (see [`asked`](Self::asked)).
    pub(crate) async fn asked_again(&self) {
        self.demand.asked_again().await
    }
}

/// One tree's cost as the wire shows it, sampled at `at` (RFC 3339).
pub fn on_the_wire(c: TreeCost, at: &str) -> SessionCost {
    SessionCost {
        memory_bytes: c.memory_bytes,
        memory_kind: match c.memory_kind {
            MemoryKind::Pss => session::MemoryKind::Pss,
            MemoryKind::Rss => session::MemoryKind::Rss,
        },
        cpu_percent: c.cpu_percent.map(|p| (p * 10.0).round() / 10.0),
        cpu_interval_ms: c.cpu_interval.map(|d| d.as_millis() as u64),
        processes: c.processes,
        measured_at: at.to_string(),
    }
}

/// The cost of each of `pids`, sampling first the ones the board does not
/// have yet (a pid that is gone is left out).
pub async fn costs_of(board: &Arc<CostBoard>, pids: &[u32]) -> HashMap<u32, SessionCost> {
    board.asked();
    let missing = board.unknown(pids);
    if missing.is_empty() {
        return board.get(pids.iter().copied());
    }
    let b = board.clone();
    match tokio::task::spawn_blocking(move || b.sample_blocking(&missing, false)).await {
        Ok(()) => {}
        Err(error) => tracing::warn!(%error, "a cost sample failed"),
    }
    board.get(pids.iter().copied())
}

/// The pids of the live rows of `rows` (what a cost is asked for).
pub fn live_pids(rows: &[SessionInfo]) -> Vec<u32> {
    rows.iter()
        .filter(|r| r.state == SessionState::Live)
        .filter_map(|r| r.pid)
        .collect()
}

/// Each live row's cost from `costs` (by pid); a row with no figure keeps
/// what it had.
pub fn put_costs(rows: &mut [SessionInfo], costs: &HashMap<u32, SessionCost>) {
    for r in rows.iter_mut().filter(|r| r.state == SessionState::Live) {
        if let Some(c) = r.pid.and_then(|p| costs.get(&p)) {
            r.cost = Some(c.clone());
        }
    }
}

/// Fills `cost` in every live row of `rows` that has a pid.
pub async fn fill(board: &Arc<CostBoard>, rows: &mut [SessionInfo]) {
    let pids = live_pids(rows);
    if pids.is_empty() {
        return;
    }
    let found = costs_of(board, &pids).await;
    put_costs(rows, &found);
}

/// Every live session's process now: the children ccd holds and every
/// process the registry watcher sees writing a session.
pub fn live_roots(holders: &HolderTable, events: &EventHub) -> Vec<u32> {
    let mut pids: Vec<u32> = holders
        .snapshot()
        .iter()
        .filter_map(|h| h.info.as_ref())
        .filter(|i| i.exit.is_none())
        .map(|i| i.child_pid)
        .chain(events.view().iter().map(|w| w.pid))
        .collect();
    pids.sort_unstable();
    pids.dedup();
    pids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_board_keeps_what_a_sample_found_and_remembers_what_it_did_not() {
        let board = CostBoard::default();
        let me = std::process::id();
        // A pid far above any pid_max: never a process.
        let nobody = u32::MAX - 7;
        assert_eq!(board.unknown(&[me, nobody]), [me, nobody]);
        board.sample_blocking(&[me, nobody], false);
        let got = board.get([me, nobody]);
        let mine = got.get(&me).expect("this process is sampled");
        assert!(mine.memory_bytes > 0 && mine.processes >= 1, "{mine:?}");
        assert!(!got.contains_key(&nobody));
        // Neither is asked again before the next tick.
        assert!(board.unknown(&[me, nobody]).is_empty());
        // A tick replaces the board: only its roots remain, and the pid
        // found gone may be asked again.
        let ticks = board.ticks();
        board.sample_blocking(&[], true);
        board.ticked();
        assert!(ticks.has_changed().unwrap_or(false));
        assert!(board.get([me]).is_empty());
        assert_eq!(board.unknown(&[nobody]), [nobody]);
    }
}
