//! Watches Claude Code's registry folder and turns its changes into events
//! about every session on the machine, ccd's or not.
//!
//! Two things change the view: a registry file (created, rewritten,
//! removed) and a process ending (whose file may stay: a crash, `kill -9`).
//! Both are waited for, not polled: the folder through [`DirWatch`]
//! (inotify with a mask of changes only, so reads — the scans' own
//! included — wake nothing), and every process in the view through a pidfd
//! ([`crate::exit_watch`]: readable when it ends). Each wake-up re-reads the
//! registry and re-validates liveness — presence of a file proves nothing —
//! then diffs against the previous view, by pid: a process is not a
//! conversation, so an entry whose pid stays while its session id changes
//! (`/clear`, a conversation resumed inside the TUI) is one
//! `session.id_changed`, not a disappearance and an appearance.
//!
//! Periodic rescans are the fallback only: every [`RESCAN`] where either
//! watch is not available (no inotify, no pidfds, a watch that broke), and
//! a safety net every [`RESCAN_NET`] where both are (a pid reused in the
//! instant between two scans is the one case the watches cannot see).
//! While the folder is missing, its nearest existing ancestor is watched
//! for it to appear.
//!
//! Each process is matched to the holder that runs it when first seen (the
//! holder's child pid, else the pid's parent is a holder): `held` and
//! `holder` in events say which processes ccd runs, whatever id they write.

use crate::events::dir_watch::DirWatch;
use crate::events::{now_ms, EventHub};
use crate::exit_watch::ExitWatch;
use crate::holders::{HolderPids, HolderTable};
use ccd_claude::context::ContextWindows;
use ccd_claude::liveness::{self, Liveness};
use ccd_claude::registry;
use ccd_claude::ClaudeConfigDir;
use ccd_protocol::methods::events::{Event, EventKind, LiveWriter};
use ccd_protocol::methods::session::Lifecycle;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Rescan period where the folder or the processes cannot be watched.
pub const RESCAN: Duration = Duration::from_secs(2);

/// Rescan period where both are watched: a safety net, not the way
/// changes are seen.
pub const RESCAN_NET: Duration = Duration::from_secs(60);

/// Rescan period while the folder is missing and cannot be watched for.
const MISSING_POLL: Duration = Duration::from_millis(100);

/// How long a burst of file events may go on before the one scan it causes.
const SETTLE: Duration = Duration::from_millis(15);

/// What the watcher remembers of one live registry entry (by pid).
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    session: String,
    cwd: Option<String>,
    status: Option<Lifecycle>,
    waiting_for: Option<String>,
    liveness: Liveness,
    /// The holder that runs this process, if ccd does.
    holder: Option<String>,
}

/// The holder running `pid`: its child, or a child of its process.
fn holder_of(pid: u32, holders: &[HolderPids]) -> Option<String> {
    if let Some(h) = holders.iter().find(|h| h.child_pid == Some(pid)) {
        return Some(h.id.clone());
    }
    let parent = liveness::parent_pid(pid)?;
    holders
        .iter()
        .find(|h| h.holder_pid == Some(parent))
        .map(|h| h.id.clone())
}

/// The registry now. A pid seen before (same session start: liveness
/// already checked it) keeps the holder it was matched to; a new one is
/// matched now.
///
/// For every process in the new view not in `watched`, a pidfd is opened
/// *before* its liveness is checked: a check that finds the entry's own
/// process running then proves the pidfd names that process, not an
/// earlier holder of the pid (see [`crate::exit_watch`]).
fn scan(
    dir: &Path,
    old: &HashMap<u32, Seen>,
    holders: &[HolderPids],
    watched: &HashSet<u32>,
) -> (HashMap<u32, Seen>, Opened) {
    let probe = liveness::system_probe();
    let mut exits = Vec::new();
    let seen = registry::read_all(dir)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|e| {
            let exit = (!watched.contains(&e.pid)).then(|| ExitWatch::open(e.pid));
            let l = liveness::check(&e, probe.as_ref()).liveness;
            if !l.may_be_running() {
                return None;
            }
            if let Some(x) = exit {
                exits.push((e.pid, x));
            }
            let holder = match old.get(&e.pid) {
                Some(o) if o.holder.is_some() => o.holder.clone(),
                _ => holder_of(e.pid, holders),
            };
            Some((
                e.pid,
                Seen {
                    session: e.session_id,
                    cwd: e.cwd,
                    status: e.status.map(Lifecycle::from),
                    waiting_for: e.waiting_for,
                    liveness: l,
                    holder,
                },
            ))
        })
        .collect();
    (seen, exits)
}

/// The pidfds a scan opened, by pid (an error: none could be opened).
type Opened = Vec<(u32, std::io::Result<ExitWatch>)>;

/// A task per process in the view, waiting for its end (then a rescan).
struct ExitWatches {
    tasks: HashMap<u32, tokio::task::JoinHandle<()>>,
    /// Pidfds are not available here (or the runtime cannot watch them):
    /// rescans every [`RESCAN`] instead.
    unavailable: bool,
}

impl ExitWatches {
    fn new() -> Self {
        Self {
            tasks: HashMap::new(),
            unavailable: false,
        }
    }

    /// The processes still watched (their task waits).
    fn watched(&self) -> HashSet<u32> {
        self.tasks
            .iter()
            .filter(|(_, t)| !t.is_finished())
            .map(|(p, _)| *p)
            .collect()
    }

    /// Watches the new processes of `view` (`opened`: what [`scan`] opened
    /// for them) and forgets those no longer in it.
    fn update(
        &mut self,
        view: &HashMap<u32, Seen>,
        opened: Opened,
        wake: &tokio::sync::mpsc::Sender<()>,
    ) {
        self.tasks.retain(|pid, t| {
            let keep = view.contains_key(pid) && !t.is_finished();
            if !keep {
                t.abort();
            }
            keep
        });
        for (pid, w) in opened {
            match w {
                Ok(w) => {
                    let wake = wake.clone();
                    let task = tokio::spawn(async move {
                        if let Err(error) = w.exited().await {
                            tracing::debug!(pid, %error, "cannot wait for a registry process's end");
                        }
                        let _ = wake.try_send(());
                    });
                    if let Some(old) = self.tasks.insert(pid, task) {
                        old.abort();
                    }
                }
                // Gone before the check: not in the view.
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
                Err(error) => {
                    if !self.unavailable {
                        tracing::info!(%error, "cannot watch registry processes for their end; rescanning every {} s", RESCAN.as_secs());
                    }
                    self.unavailable = true;
                }
            }
        }
    }
}

/// Waits for a change in the folder (never, without a watch). A watch
/// that breaks is dropped, and rescans take over.
async fn folder_changed(fs: &mut Option<DirWatch>) {
    let Some(w) = fs.as_mut() else {
        return std::future::pending().await;
    };
    if let Err(error) = w.changed().await {
        tracing::warn!(%error, "the registry folder watch broke; rescanning every {} s", RESCAN.as_secs());
        *fs = None;
    }
}

/// The view as subscribers get it.
fn view_of(seen: &HashMap<u32, Seen>) -> Vec<LiveWriter> {
    let mut v: Vec<LiveWriter> = seen
        .iter()
        .map(|(pid, s)| LiveWriter {
            session: s.session.clone(),
            pid: *pid,
            state: s.liveness.as_str().into(),
            holder: s.holder.clone(),
        })
        .collect();
    v.sort_by_key(|w| w.pid);
    v
}

/// The events between two views; `reason(to, cwd)` says why a process
/// moved to conversation `to`.
fn diff(
    old: &HashMap<u32, Seen>,
    new: &HashMap<u32, Seen>,
    reason: &dyn Fn(&str, Option<&str>) -> &'static str,
) -> Vec<Event> {
    let at = now_ms();
    let mut out = Vec::new();
    // Pids in a stable order, so one scan's events are too.
    let mut pids: Vec<&u32> = new.keys().collect();
    pids.sort();
    for pid in pids {
        let s = &new[pid];
        match old.get(pid) {
            None => {
                let mut e = Event::new(EventKind::Appeared, Some(s.session.clone()), at);
                e.pid = Some(*pid);
                e.cwd = s.cwd.clone();
                e.state = Some(s.liveness.as_str().into());
                e.held = Some(s.holder.is_some());
                e.holder = s.holder.clone();
                e.status = s.status.clone();
                out.push(e);
                out.extend(several_writers(new, *pid, s, at));
                if wants_attention(s) {
                    out.push(attention(s, *pid, at));
                }
            }
            Some(o) if o.session != s.session => {
                let mut e = Event::new(EventKind::IdChanged, Some(s.session.clone()), at);
                e.pid = Some(*pid);
                e.cwd = s.cwd.clone();
                e.state = Some(s.liveness.as_str().into());
                e.held = Some(s.holder.is_some());
                e.holder = s.holder.clone();
                e.from = Some(o.session.clone());
                e.to = Some(s.session.clone());
                e.reason = Some(reason(&s.session, s.cwd.as_deref()).into());
                e.status = s.status.clone();
                out.push(e);
                out.extend(several_writers(new, *pid, s, at));
                if wants_attention(s) {
                    out.push(attention(s, *pid, at));
                }
            }
            Some(o) if o.status != s.status || o.waiting_for != s.waiting_for => {
                let mut e = Event::new(EventKind::Status, Some(s.session.clone()), at);
                e.pid = Some(*pid);
                e.status = s.status.clone();
                e.previous = o.status.clone();
                e.waiting_for = s.waiting_for.clone();
                out.push(e);
                if wants_attention(s) {
                    out.push(attention(s, *pid, at));
                }
            }
            Some(_) => {}
        }
    }
    let mut gone: Vec<(&u32, &Seen)> = old.iter().filter(|(p, _)| !new.contains_key(p)).collect();
    gone.sort_by_key(|(p, _)| **p);
    for (pid, o) in gone {
        let mut e = Event::new(EventKind::Disappeared, Some(o.session.clone()), at);
        e.pid = Some(*pid);
        e.cwd = o.cwd.clone();
        e.held = Some(o.holder.is_some());
        e.holder = o.holder.clone();
        out.push(e);
    }
    out
}

/// `session.writers` and an attention event when `pid`, which just started
/// writing `s.session`, is not its only writer (someone resumed a running
/// session by hand: the conversation splits).
fn several_writers(new: &HashMap<u32, Seen>, pid: u32, s: &Seen, at: i64) -> Vec<Event> {
    let mut pids: Vec<u32> = new
        .iter()
        .filter(|(_, o)| o.session == s.session)
        .map(|(p, _)| *p)
        .collect();
    if pids.len() < 2 {
        return Vec::new();
    }
    pids.sort_unstable();
    let holder = new
        .iter()
        .filter(|(_, o)| o.session == s.session)
        .find_map(|(_, o)| o.holder.clone());
    let mut w = Event::new(EventKind::Writers, Some(s.session.clone()), at);
    w.pid = Some(pid);
    w.pids = Some(pids.clone());
    w.held = Some(holder.is_some());
    w.holder = holder.clone();
    let mut a = Event::new(EventKind::Attention, Some(s.session.clone()), at);
    a.pid = Some(pid);
    a.held = Some(holder.is_some());
    a.holder = holder;
    a.reason = Some("second_writer".into());
    a.pids = Some(pids);
    vec![w, a]
}

/// Whether `s` needs a registry-based `session.attention`: it waits, and
/// not on a tool permission prompt of a session ccd holds — the holder
/// reads that one off the screen and its own attention event says more
/// (tool, command, options, prompt id). Its `session.status` (waiting,
/// `waiting_for`) is still published.
fn wants_attention(s: &Seen) -> bool {
    let permission = s
        .waiting_for
        .as_deref()
        .is_some_and(|w| w.to_ascii_lowercase().contains("permission"));
    s.status == Some(Lifecycle::Waiting) && !(s.holder.is_some() && permission)
}

fn attention(s: &Seen, pid: u32, at: i64) -> Event {
    let mut e = Event::new(EventKind::Attention, Some(s.session.clone()), at);
    e.pid = Some(pid);
    e.status = s.status.clone();
    e.waiting_for = s.waiting_for.clone();
    e.reason = Some(s.waiting_for.clone().unwrap_or_else(|| "waiting".into()));
    e
}

/// Context after a turn, published when it changed.
fn context_event(
    projects: &Path,
    session: &str,
    last: &mut HashMap<String, u64>,
    holders: &HolderTable,
    windows: &ContextWindows,
) -> Option<Event> {
    let path = ccd_claude::transcript::find_by_session_id(projects, session)?;
    let s = ccd_claude::transcript::read_summary(&path).ok()?;
    let tokens = s.context_tokens?;
    if last.get(session) == Some(&tokens) {
        return None;
    }
    last.insert(session.to_string(), tokens);
    // The window the CLI states (a held session's banner) before an
    // assumed one, as in the listing.
    let stated = holders
        .snapshot()
        .into_iter()
        .find(|h| h.session_id() == Some(session))
        .and_then(|h| h.info.as_ref().and_then(|i| i.context_window));
    let w = match stated {
        Some(tokens) => ccd_claude::context::Window {
            tokens,
            source: ccd_claude::context::WindowSource::Screen,
        },
        None => windows.window_for(s.model.as_deref()),
    };
    let mut e = Event::new(EventKind::Context, Some(session.to_string()), now_ms());
    e.context_tokens = Some(tokens);
    e.context_percent = Some(ccd_claude::context::ContextWindows::percent(tokens, w));
    Some(e)
}

/// Runs until `stop` turns true (the daemon stops): watches Claude
/// Code's registry under `claude_config`, matches its processes to the
/// `holders` ccd runs, and publishes on `hub`; `windows` sizes the context
/// events of sessions ccd does not hold.
pub async fn run(
    holders: Arc<HolderTable>,
    hub: EventHub,
    claude_config: ClaudeConfigDir,
    windows: ContextWindows,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let dir: PathBuf = claude_config.sessions_dir();
    let projects = claude_config.projects_dir();
    // Woken by a watched process's end.
    let (wake_tx, mut wake) = tokio::sync::mpsc::channel::<()>(1);
    let mut fs = match DirWatch::new(&dir) {
        Ok(w) => {
            tracing::info!(dir = %dir.display(), "watching the registry folder");
            Some(w)
        }
        Err(error) => {
            tracing::warn!(%error, "cannot watch the registry folder; rescanning instead");
            None
        }
    };
    let mut exits = ExitWatches::new();
    let (mut seen, opened) = {
        let d = dir.clone();
        let pids = holders.pids();
        tokio::task::spawn_blocking(move || scan(&d, &HashMap::new(), &pids, &HashSet::new()))
            .await
            .unwrap_or_default()
    };
    exits.update(&seen, opened, &wake_tx);
    hub.publish_view(Vec::new(), view_of(&seen));
    let mut scanned_at = now_ms();
    let mut contexts: HashMap<String, u64> = HashMap::new();
    loop {
        let period = match &fs {
            Some(w) if w.on_target() && !exits.unavailable => RESCAN_NET,
            Some(w) if w.on_target() => RESCAN,
            // Missing: its appearance is an event, or is polled for.
            Some(_) if DirWatch::WATCHES_FOR_CREATION => RESCAN_NET,
            Some(_) => MISSING_POLL,
            None if dir.is_dir() => RESCAN,
            None => MISSING_POLL,
        };
        tokio::select! {
            _ = folder_changed(&mut fs) => {
                // Let a burst of file events settle into one scan.
                tokio::time::sleep(SETTLE).await;
                if let Some(w) = fs.as_mut() {
                    w.drain();
                }
                while wake.try_recv().is_ok() {}
            }
            _ = wake.recv() => {
                tokio::time::sleep(SETTLE).await;
                while wake.try_recv().is_ok() {}
            }
            _ = tokio::time::sleep(period) => {}
            _ = stop.changed() => return,
        }
        let d = dir.clone();
        let p = projects.clone();
        let pids = holders.pids();
        let old = std::mem::take(&mut seen);
        let before = scanned_at;
        scanned_at = now_ms();
        let watched = exits.watched();
        let (old, now, opened, events) = match tokio::task::spawn_blocking(move || {
            let (now, opened) = scan(&d, &old, &pids, &watched);
            let reason = |to: &str, cwd: Option<&str>| {
                ccd_claude::id_switch::reason(&p, to, cwd, before, now_ms()).as_str()
            };
            let events = diff(&old, &now, &reason);
            (old, now, opened, events)
        })
        .await
        {
            Ok(r) => r,
            Err(_) => continue,
        };
        seen = old;
        exits.update(&now, opened, &wake_tx);
        // A registry entry moved (status, session id, the program's exit):
        // its holder's view is refreshed on the next tick, however still it
        // was.
        let moved: Vec<u32> = now
            .keys()
            .chain(seen.keys())
            .filter(|pid| now.get(pid) != seen.get(pid))
            .copied()
            .collect();
        holders.mark_dirty(&moved);
        let ended: Vec<String> = events
            .iter()
            .filter(|e| {
                e.kind == EventKind::Status
                    && e.previous == Some(Lifecycle::Busy)
                    && e.status != Some(Lifecycle::Busy)
            })
            .filter_map(|e| e.session.clone())
            .collect();
        hub.publish_view(events, view_of(&now));
        for s in ended {
            let p = projects.clone();
            let h = holders.clone();
            let w = windows.clone();
            let mut c = std::mem::take(&mut contexts);
            let (ev, c) = tokio::task::spawn_blocking(move || {
                let ev = context_event(&p, &s, &mut c, &h, &w);
                (ev, c)
            })
            .await
            .unwrap_or((None, HashMap::new()));
            contexts = c;
            if let Some(ev) = ev {
                hub.publish(ev);
            }
        }
        seen = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(session: &str, status: &str) -> Seen {
        Seen {
            session: session.into(),
            cwd: Some("/w".into()),
            status: Some(status.into()),
            waiting_for: None,
            liveness: Liveness::Live,
            holder: None,
        }
    }

    fn kinds(ev: &[Event]) -> Vec<EventKind> {
        ev.iter().map(|e| e.kind.clone()).collect()
    }

    #[test]
    fn an_id_change_under_one_pid_is_one_event_naming_both_ids() {
        let a: HashMap<u32, Seen> = [(1, seen("s1", "idle"))].into();
        let mut held = seen("s2", "idle");
        held.holder = Some("h1".into());
        let b: HashMap<u32, Seen> = [(1, held)].into();
        let ev = diff(&a, &b, &|to, _| if to == "s2" { "clear" } else { "resume" });
        assert_eq!(kinds(&ev), [EventKind::IdChanged]);
        let e = &ev[0];
        assert_eq!(e.session.as_deref(), Some("s2"));
        assert_eq!(e.from.as_deref(), Some("s1"));
        assert_eq!(e.to.as_deref(), Some("s2"));
        assert_eq!(e.pid, Some(1));
        assert_eq!(e.holder.as_deref(), Some("h1"));
        assert_eq!(e.held, Some(true));
        assert_eq!(e.reason.as_deref(), Some("clear"));
    }

    #[test]
    fn a_second_writer_on_one_session_is_flagged() {
        let mut ours = seen("s1", "idle");
        ours.holder = Some("h1".into());
        let a: HashMap<u32, Seen> = [(1, ours.clone())].into();
        let b: HashMap<u32, Seen> = [(1, ours), (2, seen("s1", "idle"))].into();
        let ev = diff(&a, &b, &|_, _| "unknown");
        assert_eq!(
            kinds(&ev),
            [
                EventKind::Appeared,
                EventKind::Writers,
                EventKind::Attention
            ]
        );
        assert_eq!(ev[0].held, Some(false), "the newcomer is not ccd's");
        assert_eq!(ev[1].pids.as_deref(), Some(&[1, 2][..]));
        assert_eq!(ev[1].holder.as_deref(), Some("h1"));
        assert_eq!(ev[2].reason.as_deref(), Some("second_writer"));
        // Moving onto a conversation another process writes counts too.
        let c: HashMap<u32, Seen> = [(1, seen("s1", "idle")), (2, seen("s2", "idle"))].into();
        let d: HashMap<u32, Seen> = [(1, seen("s1", "idle")), (2, seen("s1", "idle"))].into();
        let ev = diff(&c, &d, &|_, _| "resume");
        assert_eq!(
            kinds(&ev),
            [
                EventKind::IdChanged,
                EventKind::Writers,
                EventKind::Attention
            ]
        );
    }

    #[test]
    fn diffs() {
        let no = |_: &str, _: Option<&str>| "unknown";
        let a: HashMap<u32, Seen> = [(1, seen("s1", "idle"))].into();
        let b: HashMap<u32, Seen> = [(1, seen("s1", "busy")), (2, seen("s2", "idle"))].into();
        let ev = diff(&a, &b, &no);
        let kinds: Vec<_> = ev.iter().map(|e| e.kind.clone()).collect();
        assert!(kinds.contains(&EventKind::Status));
        assert!(kinds.contains(&EventKind::Appeared));
        let mut w = seen("s2", "waiting");
        w.waiting_for = Some("permission prompt".into());
        let c: HashMap<u32, Seen> = [(2, w)].into();
        let ev = diff(&b, &c, &no);
        let kinds: Vec<_> = ev.iter().map(|e| e.kind.clone()).collect();
        assert_eq!(
            kinds
                .iter()
                .filter(|k| **k == EventKind::Disappeared)
                .count(),
            1
        );
        let att = ev.iter().find(|e| e.kind == EventKind::Attention).unwrap();
        assert_eq!(att.reason.as_deref(), Some("permission prompt"));
        assert!(diff(&c, &c, &no).is_empty());
    }

    #[test]
    fn a_held_session_on_a_permission_prompt_gets_its_attention_from_the_screen() {
        let no = |_: &str, _: Option<&str>| "unknown";
        let mut idle = seen("s1", "idle");
        idle.holder = Some("h1".into());
        let mut asking = idle.clone();
        asking.status = Some("waiting".into());
        asking.waiting_for = Some("permission prompt".into());
        let a: HashMap<u32, Seen> = [(1, idle.clone())].into();
        let b: HashMap<u32, Seen> = [(1, asking.clone())].into();
        // The status still says so; the attention comes from the holder.
        assert_eq!(kinds(&diff(&a, &b, &no)), [EventKind::Status]);
        // Waiting on something else: the registry's attention stands.
        let mut other = asking.clone();
        other.waiting_for = Some("input".into());
        let c: HashMap<u32, Seen> = [(1, other)].into();
        assert_eq!(
            kinds(&diff(&a, &c, &no)),
            [EventKind::Status, EventKind::Attention]
        );
        // Not held: the registry is all there is.
        let mut outside = asking;
        outside.holder = None;
        let d: HashMap<u32, Seen> = [(1, outside)].into();
        let mut idle_outside = idle;
        idle_outside.holder = None;
        let e: HashMap<u32, Seen> = [(1, idle_outside)].into();
        assert_eq!(
            kinds(&diff(&e, &d, &no)),
            [EventKind::Status, EventKind::Attention]
        );
    }
}
