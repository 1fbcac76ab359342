//! The `[notify]` table of ccd's config (`~/.config/ccd/config.toml`):
//! which reasons notify, the delays and bounds of the rules, and the sinks.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// How long a prompt link (`crate::link`) answers its prompt, unless
/// `web_link_secs` says.
pub const DEFAULT_TTL_SECS: u64 = 15 * 60;
/// The longest a prompt link may live (`web_link_secs` is cut to it).
pub const MAX_TTL_SECS: u64 = 24 * 60 * 60;

/// Why a person is told (the `reason` of a [`crate::Notification`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// A tool permission dialog (held sessions: with tool, detail, prompt
    /// id), or Claude Code's registry saying it waits for a permission.
    Permission,
    /// Any other wait for a person: a question, a trust or API-key dialog,
    /// a failed resume.
    Question,
    /// A turn ended (busy → idle) after at least `turn_done_after_secs`.
    TurnDone,
    /// A session ccd held ended normally.
    Exited,
    /// A session ccd held failed (could not start, or ended in error).
    Failed,
    /// A second process writes the session (the conversation splits).
    SecondWriter,
    /// ccd stopped an idle held session (`reap_idle_minutes`).
    Reaped,
    /// ccd stopped a held session because the held sessions were over
    /// `memory_budget`.
    Budget,
    /// The rate bound's summary: how many were dropped (never filtered by
    /// `reasons`).
    Dropped,
}

impl Reason {
    /// The reasons a config may list (all but [`Reason::Dropped`]).
    pub const CONFIGURABLE: [Reason; 8] = [
        Reason::Permission,
        Reason::Question,
        Reason::TurnDone,
        Reason::Exited,
        Reason::Failed,
        Reason::SecondWriter,
        Reason::Reaped,
        Reason::Budget,
    ];

    /// The wire name (`turn_done`, ...).
    pub fn as_str(&self) -> &'static str {
        match self {
            Reason::Permission => "permission",
            Reason::Question => "question",
            Reason::TurnDone => "turn_done",
            Reason::Exited => "exited",
            Reason::Failed => "failed",
            Reason::SecondWriter => "second_writer",
            Reason::Reaped => "reaped",
            Reason::Budget => "budget",
            Reason::Dropped => "dropped",
        }
    }

    /// Whether a person can answer it (a newer state of the session makes
    /// a pending one moot).
    pub fn answerable(self) -> bool {
        matches!(
            self,
            Reason::Permission | Reason::Question | Reason::TurnDone
        )
    }
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The `[notify]` table. Every key is optional; an absent table notifies
/// on the desktop only (when a session bus is reachable).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NotifyConfig {
    /// The reasons that notify (default: all).
    pub reasons: Vec<Reason>,
    /// `turn_done` only after the session was busy at least this long.
    pub turn_done_after_secs: u64,
    /// A notification waits this long and is dropped if what it tells was
    /// answered or changed meanwhile (0: sent at once).
    pub quiet_secs: u64,
    /// Desktop notifications (freedesktop on Linux, Notification Center on
    /// macOS) when a session bus is reachable.
    pub desktop: bool,
    /// An argv run per notification: the notification as JSON on stdin
    /// and as `CCD_NOTIFY_*` environment variables.
    pub command: Option<Vec<String>>,
    /// An `https://` URL the notification is POSTed to as JSON.
    pub webhook: Option<String>,
    /// A PEM file of extra CAs the webhook's server may be signed by (a
    /// private CA; the system's roots are trusted too).
    pub webhook_ca: Option<PathBuf>,
    /// The timeout of one send (a command is killed after it; a webhook
    /// request is abandoned and retried).
    pub send_timeout_secs: u64,
    /// At most this many notifications a minute; the excess is dropped and
    /// counted, and one summary says how many.
    pub rate_per_minute: u32,
    /// Notify about a session whose attached client's terminal is focused.
    pub notify_when_focused: bool,
    /// Where `ccd web` is reachable from the person's devices: a
    /// notification then carries a link to the session's page, and one
    /// about a permission prompt a link that can answer that prompt once
    /// (`crate::link`).
    pub web_public_url: Option<String>,
    /// How long a prompt link answers its prompt (seconds; at most
    /// [`MAX_TTL_SECS`]).
    pub web_link_secs: u64,
}

impl Default for NotifyConfig {
    fn default() -> Self {
        Self {
            reasons: Reason::CONFIGURABLE.to_vec(),
            turn_done_after_secs: 60,
            quiet_secs: 5,
            desktop: true,
            command: None,
            webhook: None,
            webhook_ca: None,
            send_timeout_secs: 10,
            rate_per_minute: 12,
            notify_when_focused: false,
            web_public_url: None,
            web_link_secs: DEFAULT_TTL_SECS,
        }
    }
}

impl NotifyConfig {
    /// Whether `r` notifies ([`Reason::Dropped`] always does).
    pub fn wants(&self, r: Reason) -> bool {
        r == Reason::Dropped || self.reasons.contains(&r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_parses_with_defaults_for_what_it_omits() {
        let c: NotifyConfig = serde_json::from_value(serde_json::json!({
            "reasons": ["permission", "turn_done"],
            "command": ["ntfy", "publish", "me"],
            "quiet_secs": 0
        }))
        .unwrap();
        assert_eq!(c.reasons, [Reason::Permission, Reason::TurnDone]);
        assert_eq!(c.quiet_secs, 0);
        assert_eq!(c.turn_done_after_secs, 60);
        assert!(c.wants(Reason::Dropped));
        assert!(!c.wants(Reason::Exited));
        let bad = serde_json::from_value::<NotifyConfig>(serde_json::json!({"reasons": ["nope"]}));
        assert!(bad.is_err());
        let bad = serde_json::from_value::<NotifyConfig>(serde_json::json!({"quiet": 1}));
        assert!(bad.is_err(), "an unknown key is refused");
    }
}
