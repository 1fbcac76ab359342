//! Refreshing one holder's entry ([`HolderTable::refresh`]: `holder.info`
//! on a kept connection), publishing what changed (lifecycle, attention,
//! permission events), and collecting a session that ended
//! ([`HolderTable::collect`]), which retires its entry to `finished`.
//! When to refresh is `pacing`'s.

use super::rpc::{self, HolderConn, HolderError};
use super::spec::HolderMeta;
use super::{attention_text, lifecycle_of, pacing, permission_prompt_id, permission_tool};
use super::{Finished, HolderEntry, HolderTable, FINISHED_KEPT};
use ccd_protocol::holder::{self as h, CollectResult, InfoResult};
use ccd_protocol::methods::events::EventKind;
use ccd_protocol::methods::session::Lifecycle;
use ccd_protocol::methods::Empty;
use std::time::Instant;

/// What a refresh compares to tell a still session from a changing one:
/// everything `holder.info` reports that moves when something happens
/// (output, a client, a size, a state, the registry status).
pub(super) fn activity_of(i: &InfoResult) -> impl PartialEq + '_ {
    (
        i.state.as_str(),
        i.needs_attention.is_some(),
        i.permission.as_ref(),
        i.exit.is_some(),
        i.status.as_ref().and_then(|s| s.status.as_deref()),
        i.session_id.as_deref(),
        (i.size.rows, i.size.cols),
        i.output_bytes,
        i.clients.iter().map(|c| c.id).collect::<Vec<_>>(),
    )
}

impl HolderTable {
    /// `holder.info` of `entry`, on its idle connection when there is one.
    async fn ask_info(&self, entry: &HolderEntry) -> Result<InfoResult, HolderError> {
        let idle = self
            .info_conns
            .lock()
            .ok()
            .and_then(|mut m| m.remove(&entry.id));
        if let Some(mut conn) = idle {
            match conn.call::<h::Info>(&Empty {}).await {
                Ok(info) => {
                    self.keep_info_conn(&entry.id, conn);
                    return Ok(info);
                }
                // Slow (a flood) or stopped: no second connection on top.
                Err(e @ (HolderError::Timeout | HolderError::Stopped { .. })) => return Err(e),
                Err(error) => {
                    tracing::debug!(holder = %entry.id, %error, "idle info connection broken; reconnecting");
                }
            }
        }
        // A new kept connection says hello once: the holder's version
        // for the table.
        let mut conn = HolderConn::connect_hello(&entry.socket).await?;
        if entry.protocol != conn.protocol {
            self.update(&entry.id, |e| e.protocol = conn.protocol);
        }
        let info = conn.call::<h::Info>(&Empty {}).await?;
        self.keep_info_conn(&entry.id, conn);
        Ok(info)
    }

    fn keep_info_conn(&self, id: &str, conn: HolderConn) {
        // Checked without copying the entry (its info holds screens).
        let live = self.live.lock().is_ok_and(|m| m.contains_key(id));
        if !live {
            return;
        }
        if let Ok(mut m) = self.info_conns.lock() {
            m.entry(id.to_string()).or_insert(conn);
        }
    }

    /// Lifecycle and attention events for a holder whose info changed from
    /// `old` to `info`.
    fn publish_changes(&self, meta: &HolderMeta, old: Option<&InfoResult>, info: &InfoResult) {
        use crate::events::now_ms;
        use ccd_protocol::methods::events::Event;
        let session = info.session_id.clone().or_else(|| meta.session_id.clone());
        if session.is_none() {
            // A fork before the registry tells its id: every event names a
            // session, so this step is not published.
            return;
        }
        if old.is_none_or(|o| {
            o.session_id != info.session_id || o.permission_mode != info.permission_mode
        }) {
            // A new conversation or permission mode (or the first info):
            // the restore record follows it.
            self.changed.notify_one();
        }
        self.publish_permission(meta, old, info, session.clone());
        let new = lifecycle_of(info);
        let old = old.map(lifecycle_of);
        if old.as_ref() == Some(&new) {
            return;
        }
        let mut e = Event::new(EventKind::Lifecycle, session.clone(), now_ms());
        e.pid = Some(info.child_pid);
        e.held = Some(true);
        e.status = Some(new.clone());
        e.previous = old;
        self.events.publish(e);
        if new == Lifecycle::NeedsAttention {
            let mut a = Event::new(EventKind::Attention, session, now_ms());
            a.pid = Some(info.child_pid);
            a.held = Some(true);
            a.reason = info
                .needs_attention
                .as_ref()
                .map(|n| attention_text(&n.reason));
            self.events.publish(a);
        }
    }

    /// `session.attention` (reason `permission`) when a permission dialog
    /// appears or another replaces it, `session.attention_cleared` when it
    /// goes; a moved pointer is the same dialog.
    fn publish_permission(
        &self,
        meta: &HolderMeta,
        old: Option<&InfoResult>,
        info: &InfoResult,
        session: Option<String>,
    ) {
        use crate::events::now_ms;
        use ccd_protocol::methods::events::Event;
        let before = old.and_then(|o| o.permission.as_ref());
        let now = info.permission.as_ref().filter(|_| info.exit.is_none());
        match (before, now) {
            (Some(b), Some(n)) if b.same_dialog(n) => {}
            (None, None) => {}
            (_, Some(n)) => {
                let mut a = Event::new(EventKind::Attention, session, now_ms());
                a.pid = Some(info.child_pid);
                a.held = Some(true);
                a.holder = Some(meta.id.clone());
                // What names the session, for a subscriber that did not
                // see it appear (a notifier started later).
                a.cwd = Some(meta.cwd.clone());
                a.title = meta.name.clone();
                a.reason = Some("permission".into());
                a.tool = Some(permission_tool(n));
                a.detail = n.detail.clone();
                a.options = Some(n.options.clone());
                a.prompt = Some(permission_prompt_id(n));
                self.events.publish(a);
            }
            (Some(_), None) => {
                let mut c = Event::new(EventKind::AttentionCleared, session, now_ms());
                c.pid = Some(info.child_pid);
                c.held = Some(true);
                c.holder = Some(meta.id.clone());
                self.events.publish(c);
            }
        }
    }

    fn retire(&self, id: &str, finished: Finished) {
        let was_live = self
            .live
            .lock()
            .map(|mut m| m.remove(id).is_some())
            .unwrap_or(false);
        if !was_live {
            return; // retired already (two collectors raced)
        }
        {
            use ccd_protocol::methods::events::Event;
            let mut e = Event::new(
                EventKind::Exited,
                finished.session_id.clone(),
                crate::events::now_ms(),
            );
            e.held = Some(true);
            e.holder = Some(finished.meta.id.clone());
            e.cwd = Some(finished.meta.cwd.clone());
            e.title = finished.meta.name.clone();
            e.pid = finished.child_pid;
            e.exit_code = finished.exit.as_ref().and_then(|x| x.code);
            e.exit_signal = finished.exit.as_ref().and_then(|x| x.signal);
            e.reason = finished.failure.clone();
            e.status = Some(finished.state.clone());
            self.events.publish(e);
        }
        if let Ok(mut m) = self.live.lock() {
            m.remove(id);
        }
        self.remove_records(id);
        self.changed.notify_one();
        if let Ok(mut f) = self.finished.lock() {
            f.push_back(finished);
            while f.len() > FINISHED_KEPT {
                f.pop_front();
            }
        }
    }

    /// One refresh of one holder: info, and collection once it has exited.
    pub async fn refresh(&self, id: &str) -> Option<InfoResult> {
        let entry = self.get(id)?;
        let asked = self.next_ask();
        // Before the request: a thread that comes or goes while it is
        // answered shows at the next check ([`pacing`]).
        let threads = entry.holder_pid().and_then(pacing::threads);
        match self.ask_info(&entry).await {
            Ok(info) => {
                let done = info.exit.is_some() || info.state == h::State::Failed;
                // What this reply replaced, when it is newer than what the
                // table holds (concurrent refreshes may answer out of order).
                let mut replaced: Option<Option<InfoResult>> = None;
                // A still session that moved: the refresh watch may be asleep until
                // its next quiet check, and should go to the fast pace now.
                let mut woke = false;
                let now = Instant::now();
                self.update(id, |e| {
                    e.failed_calls = 0;
                    if asked > e.info_asked {
                        e.info_asked = asked;
                        let changed = e
                            .info
                            .as_ref()
                            .is_none_or(|old| activity_of(old) != activity_of(&info));
                        if changed {
                            woke = !e.fast(now);
                            e.changed_at = now;
                        }
                        e.refreshed_at = Some(now);
                        e.threads = threads;
                        e.dirty = false;
                        replaced = Some(e.info.replace(info.clone()));
                        e.exited_ticks = if done { e.exited_ticks + 1 } else { 0 };
                    }
                });
                if woke {
                    self.wake();
                }
                if let Some(old) = &replaced {
                    self.publish_changes(&entry.meta, old.as_ref(), &info);
                }
                if done && entry.exited_ticks >= 1 && !entry.collecting {
                    if let Err(error) = self.collect(&entry, 0).await {
                        tracing::debug!(holder = %entry.id, %error, "collect failed");
                    }
                }
                Some(info)
            }
            // Being collected (it may vanish any moment), or not yet
            // listening (spawn_holder waits for that and handles failure):
            // neither is a death.
            Err(_)
                if self
                    .get(id)
                    .is_none_or(|e| e.collecting || e.info.is_none()) =>
            {
                None
            }
            Err(error) => {
                // Only a holder that is really gone is declared dead: one
                // that is slow to answer (a flood, a loaded machine) is not.
                let gone = !holder_alive(&entry);
                self.update(id, |e| e.failed_calls += 1);
                if !gone && entry.failed_calls >= 3 {
                    tracing::warn!(holder = %id, %error, failed = entry.failed_calls + 1, "holder is slow to answer");
                }
                if gone {
                    tracing::warn!(holder = %id, %error, "holder process is gone");
                    let _ = std::fs::remove_file(&entry.socket);
                    self.retire(
                        id,
                        Finished {
                            session_id: entry.session_id().map(String::from),
                            child_pid: entry.info.as_ref().map(|i| i.child_pid),
                            meta: entry.meta.clone(),
                            exit: None,
                            state: Lifecycle::Failed,
                            failure: Some(super::HOLDER_DIED.into()),
                            screen: String::new(),
                        },
                    );
                }
                None
            }
        }
    }

    /// Asks the holder for the session's exit (waiting up to `wait_ms`);
    /// once collected the holder exits and the entry moves to `finished`.
    pub async fn collect(
        &self,
        entry: &HolderEntry,
        wait_ms: u64,
    ) -> Result<CollectResult, HolderError> {
        self.collect_as(entry, wait_ms, None).await
    }

    /// [`Self::collect`], recording `state` (e.g. `reaped`) instead of the
    /// holder's own final state.
    pub async fn collect_as(
        &self,
        entry: &HolderEntry,
        wait_ms: u64,
        state: Option<(Lifecycle, String)>,
    ) -> Result<CollectResult, HolderError> {
        // While a collect is in flight the holder may vanish at any moment:
        // that is not a death (see `refresh`).
        self.update(&entry.id, |e| e.collecting = true);
        let r = async {
            let mut conn = rpc::HolderConn::connect(&entry.socket).await?;
            conn.call::<h::Collect>(&h::CollectParams { wait_ms }).await
        }
        .await;
        let c = match r {
            Ok(c) => c,
            Err(e) => {
                self.update(&entry.id, |e| e.collecting = false);
                return Err(e);
            }
        };
        if !c.collected {
            self.update(&entry.id, |e| e.collecting = false);
            return Ok(c);
        }
        tracing::info!(holder = %entry.id, session = ?entry.session_id(), exit = ?c.exit, state = c.state.as_str(), "session ended; holder collected");
        let (state, failure) = match state {
            Some((s, why)) => (s, Some(why)),
            None => (Lifecycle::from(c.state.as_str()), c.failure.clone()),
        };
        self.retire(
            &entry.id,
            Finished {
                session_id: c
                    .session_id
                    .clone()
                    .or_else(|| entry.session_id().map(String::from)),
                child_pid: entry.info.as_ref().map(|i| i.child_pid),
                meta: entry.meta.clone(),
                exit: c.exit.clone(),
                state,
                failure,
                screen: c.screen.clone(),
            },
        );
        Ok(c)
    }
}

/// Whether the holder is still there: its process exists when its pid is
/// known (a busy holder may be slow to accept), else its socket accepts.
fn holder_alive(e: &HolderEntry) -> bool {
    match e.info.as_ref().map(|i| i.holder_pid) {
        Some(pid) => !matches!(
            ccd_claude::liveness::system_probe().process(pid),
            ccd_claude::liveness::ProcessState::Gone
        ),
        None => std::os::unix::net::UnixStream::connect(&e.socket).is_ok(),
    }
}
