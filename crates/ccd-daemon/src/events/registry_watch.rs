//! Watches Claude Code's registry folder and turns its changes into events
//! about every session on the machine, ccd's or not.
//!
//! inotify/kqueue (through `notify`) wakes the watcher at once; a rescan
//! every [`RESCAN`] is the fallback (a missing folder, a lost event). Each
//! wake-up re-reads the registry and re-validates liveness — presence of a
//! file proves nothing — then diffs against the previous view.

use super::{now_ms, EventHub};
use crate::state::Daemon;
use ccd_claude::liveness::{self, Liveness};
use ccd_claude::registry;
use ccd_protocol::methods::events::Event;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Fallback rescan period.
pub const RESCAN: Duration = Duration::from_secs(2);

/// What the watcher remembers of one live registry entry (by pid).
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    session: String,
    cwd: Option<String>,
    status: Option<String>,
    waiting_for: Option<String>,
    liveness: Liveness,
}

fn scan(dir: &Path) -> HashMap<u32, Seen> {
    let probe = liveness::system_probe();
    registry::read_all(dir)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|e| {
            let l = liveness::check(&e, probe.as_ref()).liveness;
            l.may_be_running().then_some((
                e.pid,
                Seen {
                    session: e.session_id,
                    cwd: e.cwd,
                    status: e.status,
                    waiting_for: e.waiting_for,
                    liveness: l,
                },
            ))
        })
        .collect()
}

/// The events between two views.
fn diff(
    old: &HashMap<u32, Seen>,
    new: &HashMap<u32, Seen>,
    held: &dyn Fn(&str) -> bool,
) -> Vec<Event> {
    let at = now_ms();
    let mut out = Vec::new();
    for (pid, s) in new {
        match old.get(pid) {
            None => {
                let mut e = Event::new("session.appeared", Some(s.session.clone()), at);
                e.pid = Some(*pid);
                e.cwd = s.cwd.clone();
                e.state = Some(s.liveness.as_str().into());
                e.held = Some(held(&s.session));
                e.status = s.status.clone();
                out.push(e);
                if s.status.as_deref() == Some("waiting") {
                    out.push(attention(s, *pid, at));
                }
            }
            Some(o) if o.status != s.status || o.waiting_for != s.waiting_for => {
                let mut e = Event::new("session.status", Some(s.session.clone()), at);
                e.pid = Some(*pid);
                e.status = s.status.clone();
                e.previous = o.status.clone();
                e.waiting_for = s.waiting_for.clone();
                out.push(e);
                if s.status.as_deref() == Some("waiting") {
                    out.push(attention(s, *pid, at));
                }
            }
            Some(_) => {}
        }
    }
    for (pid, o) in old {
        if !new.contains_key(pid) {
            let mut e = Event::new("session.disappeared", Some(o.session.clone()), at);
            e.pid = Some(*pid);
            e.cwd = o.cwd.clone();
            out.push(e);
        }
    }
    out
}

fn attention(s: &Seen, pid: u32, at: i64) -> Event {
    let mut e = Event::new("session.attention", Some(s.session.clone()), at);
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
    daemon: &Daemon,
) -> Option<Event> {
    let path = ccd_claude::transcript::find_by_session_id(projects, session)?;
    let s = ccd_claude::transcript::read_summary(&path).ok()?;
    let tokens = s.context_tokens?;
    if last.get(session) == Some(&tokens) {
        return None;
    }
    last.insert(session.to_string(), tokens);
    let w = daemon
        .options
        .context_windows
        .window_for(s.model.as_deref());
    let mut e = Event::new("session.context", Some(session.to_string()), now_ms());
    e.context_tokens = Some(tokens);
    e.context_percent = Some(ccd_claude::context::ContextWindows::percent(tokens, w));
    Some(e)
}

/// Runs until the daemon stops.
pub async fn run(daemon: Arc<Daemon>) {
    let dir: PathBuf = daemon.options.claude_config.sessions_dir();
    let projects = daemon.options.claude_config.projects_dir();
    let hub: EventHub = daemon.events.clone();
    let (wake_tx, mut wake) = tokio::sync::mpsc::channel::<()>(1);
    let mut stop = daemon.shutdown.subscribe();
    let mut watcher: Option<notify::RecommendedWatcher> = None;
    let mut seen: HashMap<u32, Seen> = {
        let d = dir.clone();
        tokio::task::spawn_blocking(move || scan(&d))
            .await
            .unwrap_or_default()
    };
    let mut contexts: HashMap<String, u64> = HashMap::new();
    loop {
        if watcher.is_none() && dir.is_dir() {
            watcher = watch(&dir, wake_tx.clone());
        }
        tokio::select! {
            _ = wake.recv() => {
                // Let a burst of file events settle into one scan.
                tokio::time::sleep(Duration::from_millis(15)).await;
                while wake.try_recv().is_ok() {}
            }
            // Until the folder exists there is nothing to watch: look often.
            _ = tokio::time::sleep(if watcher.is_some() { RESCAN } else { Duration::from_millis(100) }) => {}
            _ = stop.changed() => return,
        }
        let d = dir.clone();
        let now = match tokio::task::spawn_blocking(move || scan(&d)).await {
            Ok(n) => n,
            Err(_) => continue,
        };
        let held_ids: Vec<String> = daemon
            .holders
            .snapshot()
            .iter()
            .filter_map(|h| h.session_id().map(String::from))
            .collect();
        let events = diff(&seen, &now, &|s| held_ids.iter().any(|h| h == s));
        // A registry entry moved (status, session id, the program's exit):
        // its holder's view is refreshed on the next tick, however still it
        // was.
        let moved: Vec<u32> = now
            .keys()
            .chain(seen.keys())
            .filter(|pid| now.get(pid) != seen.get(pid))
            .copied()
            .collect();
        daemon.holders.mark_dirty(&moved);
        for e in events {
            let turn_ended = e.kind == "session.status"
                && e.previous.as_deref() == Some("busy")
                && e.status.as_deref() != Some("busy");
            let session = e.session.clone();
            hub.publish(e);
            if turn_ended {
                if let Some(s) = session {
                    let p = projects.clone();
                    let d = daemon.clone();
                    let mut c = std::mem::take(&mut contexts);
                    let (ev, c) = tokio::task::spawn_blocking(move || {
                        let ev = context_event(&p, &s, &mut c, &d);
                        (ev, c)
                    })
                    .await
                    .unwrap_or((None, HashMap::new()));
                    contexts = c;
                    if let Some(ev) = ev {
                        hub.publish(ev);
                    }
                }
            }
        }
        seen = now;
    }
}

/// Whether a file event calls for a rescan: a change, or an error (which
/// may hide one). Reads are not changes — and the scan's own reads of the
/// folder and its files raise them: waking on them made the watcher rescan
/// itself about 60 times a second while nothing changed.
fn wakes_a_scan(res: &notify::Result<notify::Event>) -> bool {
    match res {
        Ok(e) => !matches!(e.kind, notify::EventKind::Access(_)),
        Err(_) => true,
    }
}

fn watch(dir: &Path, wake: tokio::sync::mpsc::Sender<()>) -> Option<notify::RecommendedWatcher> {
    use notify::Watcher;
    let mut w = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
        if wakes_a_scan(&res) {
            let _ = wake.try_send(());
        }
    })
    .map_err(|error| tracing::warn!(%error, "cannot watch the registry folder; rescanning instead"))
    .ok()?;
    match w.watch(dir, notify::RecursiveMode::NonRecursive) {
        Ok(()) => {
            tracing::info!(dir = %dir.display(), "watching the registry folder");
            Some(w)
        }
        Err(error) => {
            tracing::warn!(%error, "cannot watch the registry folder; rescanning instead");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reading_the_folder_wakes_no_scan_and_a_change_does() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("1.json"), "{}").expect("write");
        let (tx, mut rx) = tokio::sync::mpsc::channel(1);
        let _w = watch(dir.path(), tx).expect("a watcher");
        // What a scan does: list the folder, read each entry.
        for _ in 0..5 {
            let _ = std::fs::read_dir(dir.path()).map(|d| d.count());
            let _ = std::fs::read(dir.path().join("1.json"));
        }
        std::thread::sleep(Duration::from_millis(300));
        assert!(rx.try_recv().is_err(), "woken by reads");
        std::fs::write(dir.path().join("2.json"), "{}").expect("write");
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while rx.try_recv().is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "a new file woke nothing"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn seen(session: &str, status: &str) -> Seen {
        Seen {
            session: session.into(),
            cwd: Some("/w".into()),
            status: Some(status.into()),
            waiting_for: None,
            liveness: Liveness::Live,
        }
    }

    #[test]
    fn diffs() {
        let no = |_: &str| false;
        let a: HashMap<u32, Seen> = [(1, seen("s1", "idle"))].into();
        let b: HashMap<u32, Seen> = [(1, seen("s1", "busy")), (2, seen("s2", "idle"))].into();
        let ev = diff(&a, &b, &no);
        let kinds: Vec<_> = ev.iter().map(|e| e.kind.as_str()).collect();
        assert!(kinds.contains(&"session.status"));
        assert!(kinds.contains(&"session.appeared"));
        let mut w = seen("s2", "waiting");
        w.waiting_for = Some("permission prompt".into());
        let c: HashMap<u32, Seen> = [(2, w)].into();
        let ev = diff(&b, &c, &no);
        let kinds: Vec<_> = ev.iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(
            kinds
                .iter()
                .filter(|k| **k == "session.disappeared")
                .count(),
            1
        );
        let att = ev.iter().find(|e| e.kind == "session.attention").unwrap();
        assert_eq!(att.reason.as_deref(), Some("permission prompt"));
        assert!(diff(&c, &c, &no).is_empty());
    }
}
