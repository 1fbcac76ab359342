//! What a session is doing, in the words of `ccd wait` and `ccd status`:
//! it needs you, it is busy, it is idle, it has exited — judged from one
//! [`SessionInfo`] as the daemon gives it (`sessions.get`,
//! `sessions.list`). A session ccd holds is judged by ccd's lifecycle and
//! the dialog on its screen, any other by Claude Code's registry status:
//! the grouping of the dashboard's order (`ui::model::Row::attention`),
//! except that ccd's own folder-trust step (`trust`, answered by ccd) is
//! not a person's business. Pure: unit-tested here.

use ccd_protocol::methods::session::{ActivityStatus, Lifecycle, SessionInfo, SessionState};

/// What a session is doing now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Activity {
    /// A permission prompt, a question or another dialog waits for a
    /// person (held: `waiting`, `needs-attention` or a permission dialog
    /// on screen; elsewhere: Claude Code's status `waiting`).
    NeedsYou,
    /// A turn is running.
    Busy,
    /// At its prompt, running nothing.
    Idle,
    /// A process runs it but it is none of the above (starting, ccd
    /// answering the trust dialog, a status this version does not know).
    Other,
    /// No process runs it.
    Exited,
}

/// What `info`'s session is doing.
pub fn of(info: &SessionInfo) -> Activity {
    let held = info.ccd.as_ref().filter(|c| !c.lifecycle.ended());
    if let Some(c) = held {
        if c.permission.is_some() {
            return Activity::NeedsYou;
        }
        return match &c.lifecycle {
            Lifecycle::Waiting | Lifecycle::NeedsAttention => Activity::NeedsYou,
            Lifecycle::Busy => Activity::Busy,
            Lifecycle::Idle | Lifecycle::Ready => match info.status {
                // The registry may say it first.
                Some(ActivityStatus::Waiting) => Activity::NeedsYou,
                _ => Activity::Idle,
            },
            Lifecycle::Starting | Lifecycle::Trust => Activity::Other,
            _ => by_status(info.status),
        };
    }
    match info.state {
        SessionState::Dead => Activity::Exited,
        _ => by_status(info.status),
    }
}

/// Claude Code's status as the registry writes it (`idle`, `busy`,
/// `waiting`; another word: `Other`).
pub fn status_of(word: &str) -> ActivityStatus {
    serde_json::from_value(serde_json::Value::from(word)).unwrap_or(ActivityStatus::Other)
}

/// A running session ccd does not hold, by Claude Code's own status.
pub fn of_status(status: Option<ActivityStatus>) -> Activity {
    by_status(status)
}

fn by_status(status: Option<ActivityStatus>) -> Activity {
    match status {
        Some(ActivityStatus::Waiting) => Activity::NeedsYou,
        Some(ActivityStatus::Busy) => Activity::Busy,
        Some(ActivityStatus::Idle) => Activity::Idle,
        _ => Activity::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn info(v: serde_json::Value) -> SessionInfo {
        let mut base = json!({
            "session_id": "s", "state": "live", "pid": 1, "cwd": null, "status": null,
            "waiting_for": null, "kind": null, "name": null, "version": null,
            "started_at": null, "last_activity": null, "title": null, "model": null,
            "context_tokens": null, "context_percent": null, "context_window": null,
            "transcript": null, "transcript_bytes": null, "ccd": null
        });
        if let (Some(b), Some(o)) = (base.as_object_mut(), v.as_object()) {
            for (k, x) in o {
                b.insert(k.clone(), x.clone());
            }
        }
        serde_json::from_value(base).expect("a SessionInfo")
    }

    fn held(lifecycle: &str, permission: Option<&str>) -> serde_json::Value {
        let mut c = json!({"holder": "h", "lifecycle": lifecycle, "attached": 0, "pinned": false});
        if let Some(p) = permission {
            c["permission"] = json!(p);
            c["permission_prompt"] = json!("0123456789abcdef");
        }
        c
    }

    #[test]
    fn a_held_session_is_judged_by_its_lifecycle_and_its_screen() {
        let cases = [
            (held("idle", Some("Bash command ls")), Activity::NeedsYou),
            (held("waiting", None), Activity::NeedsYou),
            (held("needs-attention", None), Activity::NeedsYou),
            (held("busy", None), Activity::Busy),
            (held("idle", None), Activity::Idle),
            (held("ready", None), Activity::Idle),
            (held("starting", None), Activity::Other),
            (held("trust", None), Activity::Other),
        ];
        for (ccd, want) in cases {
            let i = info(json!({"status": "idle", "ccd": ccd}));
            assert_eq!(of(&i), want, "{ccd}");
        }
        // The registry says `waiting` before the screen is read again.
        let i = info(json!({"status": "waiting", "ccd": held("idle", None)}));
        assert_eq!(of(&i), Activity::NeedsYou);
    }

    #[test]
    fn an_ended_holder_or_a_dead_session_has_exited() {
        for l in ["exited", "failed", "reaped", "discarded"] {
            let i = info(json!({"state": "dead", "pid": null, "ccd": held(l, None)}));
            assert_eq!(of(&i), Activity::Exited, "{l}");
        }
        let i = info(json!({"state": "dead", "pid": null}));
        assert_eq!(of(&i), Activity::Exited);
        // Resumed elsewhere after ccd's process ended: by its status.
        let i = info(json!({"status": "busy", "ccd": held("exited", None)}));
        assert_eq!(of(&i), Activity::Busy);
    }

    #[test]
    fn a_session_outside_ccd_is_judged_by_claude_code_s_status() {
        for (status, want) in [
            ("waiting", Activity::NeedsYou),
            ("busy", Activity::Busy),
            ("idle", Activity::Idle),
            ("compacting", Activity::Other),
        ] {
            let i = info(json!({"status": status}));
            assert_eq!(of(&i), want, "{status}");
            let i = info(json!({"state": "unknown", "status": status}));
            assert_eq!(of(&i), want, "unknown liveness, {status}");
        }
        assert_eq!(of(&info(json!({}))), Activity::Other);
        assert_eq!(of_status(Some(status_of("waiting"))), Activity::NeedsYou);
        assert_eq!(status_of("compacting"), ActivityStatus::Other);
    }
}
