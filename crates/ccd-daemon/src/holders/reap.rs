//! Idle reaping (opt-in: `reap_idle_minutes`): stops sessions ccd holds
//! that have been idle with no client attached for longer than the limit.
//! They stay resumable (the transcript is the history); `ccd ls` shows them
//! `reaped`.
//!
//! Never while Claude Code's status is `busy` or `waiting`, never while a
//! client is attached, never a pinned session, and never while the
//! transcript shows background work still running (see
//! `ccd_claude::transcript::background`). Each reap is logged with the idle
//! time and the context tokens at reap.

use crate::state::Daemon;
use ccd_claude::transcript;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Runs until the daemon stops.
pub async fn run(daemon: Arc<Daemon>, limit: Duration) {
    let tick = (limit / 4).clamp(Duration::from_millis(200), Duration::from_secs(15));
    let mut idle_since: HashMap<String, Instant> = HashMap::new();
    let mut stop = daemon.shutdown.subscribe();
    tracing::info!(limit_secs = limit.as_secs(), "idle reaping on");
    loop {
        tokio::select! {
            _ = tokio::time::sleep(tick) => {}
            _ = stop.changed() => return,
        }
        let now = Instant::now();
        let holders = daemon.holders.snapshot();
        idle_since.retain(|id, _| holders.iter().any(|h| &h.id == id));
        let reapable = |h: &super::HolderEntry| {
            !h.meta.pinned
                && h.info.as_ref().is_some_and(|i| {
                    i.exit.is_none() && i.clients.is_empty() && super::lifecycle_of(i) == "idle"
                })
        };
        for h in holders {
            let eligible = reapable(&h);
            if !eligible {
                idle_since.remove(&h.id);
                continue;
            }
            let since = *idle_since.entry(h.id.clone()).or_insert(now);
            let idle = now.duration_since(since);
            if idle < limit {
                continue;
            }
            let Some(sid) = h.session_id().map(String::from) else {
                continue;
            };
            let projects = daemon.options.claude_config.projects_dir();
            let s = sid.clone();
            let (pending, context) = tokio::task::spawn_blocking(move || {
                let Some(path) = transcript::find_by_session_id(&projects, &s) else {
                    return (false, None);
                };
                let pending = transcript::background::pending(&path)
                    .map(|p| p.any())
                    .unwrap_or(true);
                let context = transcript::read_summary(&path)
                    .ok()
                    .and_then(|s| s.context_tokens);
                (pending, context)
            })
            .await
            .unwrap_or((true, None));
            if pending {
                tracing::debug!(session = %sid, "idle but background work is pending: not reaped");
                continue;
            }
            // The table may be a few seconds old (a still session is
            // refreshed slowly): ask the holder itself before stopping it.
            let fresh = daemon.holders.refresh(&h.id).await;
            let still = daemon.holders.get(&h.id).filter(|_| fresh.is_some());
            if !still.as_ref().is_some_and(reapable) {
                tracing::debug!(session = %sid, "no longer idle when checked: not reaped");
                idle_since.remove(&h.id);
                continue;
            }
            tracing::info!(
                session = %sid,
                holder = %h.id,
                idle_secs = idle.as_secs(),
                context_tokens = ?context,
                "reaping an idle session"
            );
            let killed = super::rpc::call_once::<ccd_protocol::holder::Kill>(
                &h.socket,
                &ccd_protocol::holder::KillParams {
                    signal: ccd_protocol::holder::KillSignal::Term,
                    grace_ms: Some(5000),
                },
            )
            .await;
            if let Err(error) = killed {
                tracing::warn!(session = %sid, %error, "reaping failed");
                continue;
            }
            let why = format!(
                "stopped after {} s idle with no client (resumable)",
                idle.as_secs()
            );
            if let Err(error) = daemon
                .holders
                .collect_as(&h, 7000, Some(("reaped", why)))
                .await
            {
                tracing::warn!(session = %sid, %error, "collecting a reaped session failed");
            }
            idle_since.remove(&h.id);
        }
    }
}
