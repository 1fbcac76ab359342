//! [`Notification`]: what a person is told, one JSON shape for every sink
//! (the command's stdin, the webhook's body, the desktop's text), and its
//! `CCD_NOTIFY_*` environment variables for the command sink.

use crate::config::Reason;
use serde::{Deserialize, Serialize};

/// One notification (docs/notify.md, "The notification").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Notification {
    /// The machine the session runs on (its host name, or the `--host`
    /// name `ccd notify` reached it by).
    pub machine: String,
    /// The full session id (empty for a [`Reason::Dropped`] summary).
    pub session: String,
    /// A short human line naming the session: its title when known, else
    /// its folder's name, else the id's first 8 characters.
    pub title: String,
    /// The session's folder, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    pub reason: Reason,
    /// For a prompt: what asks (e.g. `Bash command`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// For a prompt: the command or the path, as shown; for others, a
    /// short detail (the exit code, the reason a session was stopped, how
    /// many notifications were dropped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// For a permission dialog of a held session: the prompt's id, for
    /// `session.respond` (answers only this dialog).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_id: Option<String>,
    /// For a permission dialog: the option labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<String>>,
    /// A page that opens the session (from `web_public_url`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
    /// Unix milliseconds when the rules decided it.
    pub at: i64,
}

impl Notification {
    /// One line for a person: "<title>: <what>".
    pub fn summary(&self) -> String {
        let what = match self.reason {
            Reason::Permission => match (&self.tool, &self.detail) {
                (Some(t), Some(d)) => format!("permission: {t}: {d}"),
                (Some(t), None) => format!("permission: {t}"),
                _ => "waits for a permission".into(),
            },
            Reason::Question => match &self.detail {
                Some(d) => format!("needs you: {d}"),
                None => "needs you".into(),
            },
            Reason::TurnDone => "turn done".into(),
            Reason::Exited => "exited".into(),
            Reason::Failed => "failed".into(),
            Reason::SecondWriter => "a second process writes this session".into(),
            Reason::Reaped => "stopped (idle)".into(),
            Reason::Budget => "stopped (memory budget)".into(),
            Reason::Dropped => self.detail.clone().unwrap_or_default(),
        };
        format!("{} on {}: {what}", self.title, self.machine)
    }

    /// The environment variables the command sink sets: `CCD_NOTIFY_`
    /// and the field's name in capitals (`CCD_NOTIFY_PROMPT_ID`), absent
    /// fields unset; `options` joined by newlines; and
    /// `CCD_NOTIFY_SUMMARY`, [`Notification::summary`].
    pub fn env(&self) -> Vec<(String, String)> {
        let mut v = vec![
            ("CCD_NOTIFY_MACHINE".to_string(), self.machine.clone()),
            ("CCD_NOTIFY_SESSION".to_string(), self.session.clone()),
            ("CCD_NOTIFY_TITLE".to_string(), self.title.clone()),
            ("CCD_NOTIFY_REASON".to_string(), self.reason.to_string()),
            ("CCD_NOTIFY_AT".to_string(), self.at.to_string()),
            ("CCD_NOTIFY_SUMMARY".to_string(), self.summary()),
        ];
        let opt = [
            ("CCD_NOTIFY_CWD", &self.cwd),
            ("CCD_NOTIFY_TOOL", &self.tool),
            ("CCD_NOTIFY_DETAIL", &self.detail),
            ("CCD_NOTIFY_PROMPT_ID", &self.prompt_id),
            ("CCD_NOTIFY_LINK", &self.link),
        ];
        for (k, val) in opt {
            if let Some(val) = val {
                v.push((k.to_string(), val.clone()));
            }
        }
        if let Some(o) = &self.options {
            v.push(("CCD_NOTIFY_OPTIONS".to_string(), o.join("\n")));
        }
        v
    }
}

/// A Bash permission prompt on `box` (the unit tests' one notification,
/// here and in the desktop sink's).
#[cfg(test)]
pub(crate) fn sample_prompt() -> Notification {
    Notification {
        machine: "box".into(),
        session: "9b1d4c2e-7a3f".into(),
        title: "proj".into(),
        cwd: Some("/home/me/proj".into()),
        reason: Reason::Permission,
        tool: Some("Bash command".into()),
        detail: Some("rm -rf build".into()),
        prompt_id: Some("5f1c".into()),
        options: Some(vec!["Yes".into(), "No".into()]),
        link: None,
        at: 1_795_977_306_010,
    }
}

#[cfg(test)]
mod tests {
    use super::sample_prompt as prompt;
    use super::*;

    #[test]
    fn its_json_is_the_documented_shape() {
        let v = serde_json::to_value(prompt()).unwrap();
        assert_eq!(
            v,
            serde_json::json!({
                "machine": "box", "session": "9b1d4c2e-7a3f", "title": "proj",
                "cwd": "/home/me/proj", "reason": "permission", "tool": "Bash command",
                "detail": "rm -rf build", "prompt_id": "5f1c", "options": ["Yes", "No"],
                "at": 1_795_977_306_010_i64
            })
        );
        let back: Notification = serde_json::from_value(v).unwrap();
        assert_eq!(back, prompt());
    }

    #[test]
    fn env_names_every_present_field() {
        let env = prompt().env();
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("CCD_NOTIFY_REASON"), Some("permission"));
        assert_eq!(get("CCD_NOTIFY_PROMPT_ID"), Some("5f1c"));
        assert_eq!(get("CCD_NOTIFY_OPTIONS"), Some("Yes\nNo"));
        assert_eq!(get("CCD_NOTIFY_LINK"), None);
        assert_eq!(
            get("CCD_NOTIFY_SUMMARY"),
            Some("proj on box: permission: Bash command: rm -rf build")
        );
    }
}
