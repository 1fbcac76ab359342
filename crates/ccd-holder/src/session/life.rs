//! The session's lifecycle record: `holder.info`, the registry entry of
//! the child followed as the conversation it writes changes, recorded
//! transitions, attention, the permission prompt on screen (and since
//! when), the welcome banner, the permission mode the footer shows.

use super::*;
use ccd_protocol::holder::TransitionState;

impl Session {
    /// `holder.info`.
    pub fn info(&self) -> InfoResult {
        let status = self.follow_registry();
        let mut g = self.lock();
        let clients = g.fanout.stats();
        InfoResult {
            holder_pid: std::process::id(),
            child_pid: self.fixed.pid,
            session_id: g.life.session_id.clone(),
            earlier_ids: g.life.earlier_ids.iter().cloned().collect(),
            cwd: self.fixed.cwd.to_string_lossy().into_owned(),
            argv: self.fixed.argv.clone(),
            state: g.life.state,
            failure: g.life.failure.clone(),
            needs_attention: g.life.attention.clone(),
            permission: g.life.permission.clone(),
            model: g.life.banner.as_ref().and_then(|b| b.model.clone()),
            context_window: g.life.banner.as_ref().and_then(|b| b.context_window),
            permission_mode: g.life.permission_mode.clone(),
            status,
            exit: g.exit.clone(),
            started_at: self.fixed.started_at,
            size: g.size,
            clients,
            transitions: g.life.transitions.iter().cloned().collect(),
            output_bytes: g.seq,
            connections: Some(self.connections.load(Ordering::Relaxed)),
            last_input_at: self.last_input_at(),
        }
    }

    /// The child's registry entry read now, following the conversation it
    /// names: once the session is ready, an entry of the child's (its pid,
    /// its start time) naming another id than the recorded one means the
    /// child moved on (`/clear`, a conversation resumed inside the TUI) —
    /// the new id becomes the session's and the old one is kept among
    /// `earlier_ids`, with why. Before ready the lifecycle learns the id;
    /// an entry that is not the child's (a stale file of an earlier process
    /// with the same pid) changes nothing. Returns the entry's status.
    pub fn follow_registry(&self) -> Option<RegistryStatus> {
        let e = ccd_claude::registry::read_entry(&self.fixed.registry_path).ok()?;
        let status = RegistryStatus {
            status: e.status.clone(),
            waiting_for: e.waiting_for.clone(),
            session_id: e.session_id.clone(),
        };
        let (known, seen_at) = {
            let g = self.lock();
            if g.life.state != State::Ready || g.exit.is_some() {
                return Some(status);
            }
            (g.life.session_id.clone(), g.life.session_seen_at)
        };
        let now = unix_ms();
        let ours = e.pid == self.fixed.pid
            && ccd_claude::liveness::check(&e, probe())
                .liveness
                .may_be_running();
        if !ours {
            return Some(status);
        }
        if known.as_deref() == Some(e.session_id.as_str()) {
            self.lock().life.session_seen_at = now;
            return Some(status);
        }
        let Some(from) = known else {
            // Learned, not switched (a fork's id before the lifecycle saw it).
            let mut g = self.lock();
            g.life.session_id = Some(e.session_id.clone());
            g.life.session_seen_at = now;
            return Some(status);
        };
        // The new id's transcript decides the reason (file reads: no lock).
        let cwd = self.fixed.cwd.to_string_lossy();
        let reason = ccd_claude::id_switch::reason(
            &self.fixed.projects_dir,
            &e.session_id,
            Some(&cwd),
            if seen_at > 0 { seen_at } else { now },
            now,
        );
        let mut g = self.lock();
        if g.life.session_id.as_deref() != Some(from.as_str()) {
            // Another thread recorded this switch meanwhile.
            return Some(status);
        }
        tracing::info!(from = %from, to = %e.session_id, reason = reason.as_str(), "the child writes another conversation now");
        if g.life.earlier_ids.len() == EARLIER_IDS_KEPT {
            g.life.earlier_ids.pop_front();
        }
        g.life.earlier_ids.push_back(EarlierId {
            session_id: from,
            until: now,
            superseded_by: e.session_id.clone(),
            reason,
        });
        g.life.session_id = Some(e.session_id);
        g.life.session_seen_at = now;
        drop(g);
        self.notify();
        Some(status)
    }

    /// Record a lifecycle transition with the screen at that moment.
    pub(crate) fn record_transition(&self, state: TransitionState, detail: Option<String>) {
        let screen = self.screen_text();
        let mut g = self.lock();
        let t = &mut g.life.transitions;
        if t.len() == TRANSITIONS_KEPT {
            t.pop_front();
        }
        // Also in the holder's log, so a detection that went wrong can be
        // diagnosed after the holder is gone.
        tracing::info!(state = state.as_str(), detail = ?detail, screen = %screen.trim_end(), "lifecycle transition: screen at this moment");
        t.push_back(Transition {
            state,
            at: unix_ms(),
            detail,
            screen,
        });
    }

    /// Update the lifecycle state.
    pub(crate) fn set_state(&self, state: State, detail: Option<String>) {
        {
            let mut g = self.lock();
            g.life.state = state;
            if state == State::Failed {
                g.life.failure = detail.clone();
            }
        }
        self.record_transition(state.into(), detail);
        self.notify();
    }

    /// Update needs_attention.
    pub(crate) fn set_attention(&self, reason: Option<AttentionReason>) {
        let detail = reason.as_ref().map(|r| format!("{r:?}"));
        {
            let screen = self.screen_text();
            let mut g = self.lock();
            g.life.attention = reason.map(|reason| Attention {
                reason,
                screen,
                since: unix_ms(),
            });
        }
        let name = if detail.is_some() {
            TransitionState::NeedsAttention
        } else {
            TransitionState::AttentionCleared
        };
        self.record_transition(name, detail);
    }

    /// Record the permission dialog the screen shows (None: none).
    pub(crate) fn set_permission(&self, p: Option<PermissionInfo>) {
        let mut g = self.lock();
        if g.life.permission != p {
            let same_prompt = match (&g.life.permission, &p) {
                (Some(was), Some(now)) => was.same_dialog(now),
                _ => false,
            };
            if !same_prompt {
                g.life.permission_since = p.as_ref().map(|_| Instant::now());
            }
            tracing::info!(permission = ?p, "permission dialog");
            g.life.permission = p;
            drop(g);
            self.notify();
        }
    }

    /// When the permission prompt `p` first showed, if it is the one the
    /// lifecycle driver last saw.
    pub(crate) fn prompt_since(&self, p: &PermissionInfo) -> Option<Instant> {
        let g = self.lock();
        g.life
            .permission
            .as_ref()
            .filter(|seen| seen.same_dialog(p))
            .and(g.life.permission_since)
    }

    /// Whether the welcome banner has been read.
    pub(crate) fn has_banner(&self) -> bool {
        self.lock().life.banner.is_some()
    }

    /// Record what the welcome banner says (once).
    pub(crate) fn set_banner(&self, b: ccd_screen::classify::banner::Banner) {
        let mut g = self.lock();
        if g.life.banner.is_none() {
            tracing::info!(model = ?b.model, context_window = ?b.context_window, "welcome banner");
            g.life.banner = Some(b);
        }
    }

    /// Record the permission mode the footer shows now (`None`: it shows
    /// none, the last one read stays).
    pub(crate) fn set_permission_mode(&self, mode: Option<ccd_screen::PermissionMode>) {
        let Some(mode) = mode else { return };
        let mut g = self.lock();
        if g.life.permission_mode.as_ref() != Some(&mode) {
            tracing::info!(permission_mode = mode.as_str(), was = ?g.life.permission_mode.as_ref().map(|m| m.as_str()), "permission mode on the footer");
            g.life.permission_mode = Some(mode);
            drop(g);
            self.notify();
        }
    }

    /// The session id learned from the registry.
    pub(crate) fn set_session_id(&self, sid: String) {
        let mut g = self.lock();
        g.life.session_id = Some(sid);
        g.life.session_seen_at = unix_ms();
    }
}
