//! [`Input`]: what the rules see of a session, and [`Input::from_event`],
//! the socket's `event` notifications turned into inputs (the daemon feeds
//! its hub's events, `ccd notify` the events of each machine it
//! subscribed to).

use ccd_protocol::methods::events::{Event, EventKind};
use ccd_protocol::methods::session::Lifecycle;

/// Claude Code's own status of a session (`session.status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activity {
    Idle,
    Busy,
    Waiting,
    /// A status this version does not know.
    Other,
}

/// One thing the rules learn about a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// What names the session: its folder, its title (`None`: unchanged).
    Seen {
        session: String,
        cwd: Option<String>,
        title: Option<String>,
    },
    /// Claude Code's status changed.
    Status { session: String, activity: Activity },
    /// A permission dialog: for a held session with the prompt's id, the
    /// tool, the command or path, the options; from the registry of a
    /// session ccd does not hold, none of those.
    Permission {
        session: String,
        prompt: Option<String>,
        tool: Option<String>,
        detail: Option<String>,
        options: Option<Vec<String>>,
    },
    /// Any other wait for a person (`detail`: what it waits for).
    Question {
        session: String,
        detail: Option<String>,
    },
    /// The dialog went (answered either way).
    Cleared { session: String },
    /// A session ccd held ended (`failed`: it could not start or ended in
    /// error).
    Ended {
        session: String,
        failed: bool,
        detail: Option<String>,
    },
    /// A second process writes the session.
    SecondWriter { session: String, pids: Vec<u32> },
    /// ccd stopped a held session: for the memory budget (`budget`) or
    /// because it was idle.
    Reaped { session: String, budget: bool },
    /// No process holds the session any more.
    Gone { session: String },
    /// Whether an attached client's terminal has the focus (focus reports,
    /// `CSI I` / `CSI O`): the `session.focus` event, which the daemon
    /// publishes from its attached clients' `session.focus`.
    Focus { session: String, focused: bool },
}

impl Input {
    /// The session it is about.
    pub fn session(&self) -> &str {
        match self {
            Input::Seen { session, .. }
            | Input::Status { session, .. }
            | Input::Permission { session, .. }
            | Input::Question { session, .. }
            | Input::Cleared { session }
            | Input::Ended { session, .. }
            | Input::SecondWriter { session, .. }
            | Input::Reaped { session, .. }
            | Input::Gone { session }
            | Input::Focus { session, .. } => session,
        }
    }

    /// The inputs one event carries (none for an event without a session
    /// or of no interest).
    pub fn from_event(e: &Event) -> Vec<Input> {
        let Some(session) = e.session.clone() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        if e.cwd.is_some() || e.title.is_some() {
            out.push(Input::Seen {
                session: session.clone(),
                cwd: e.cwd.clone(),
                title: e.title.clone(),
            });
        }
        match &e.kind {
            EventKind::Appeared | EventKind::IdChanged | EventKind::Status => {
                if let Some(s) = &e.status {
                    let activity = match s {
                        Lifecycle::Idle => Activity::Idle,
                        Lifecycle::Busy => Activity::Busy,
                        Lifecycle::Waiting => Activity::Waiting,
                        _ => Activity::Other,
                    };
                    out.push(Input::Status { session, activity });
                }
            }
            EventKind::Attention => {
                let reason = e.reason.as_deref().unwrap_or("");
                if reason == "second_writer" {
                    out.push(Input::SecondWriter {
                        session,
                        pids: e.pids.clone().unwrap_or_default(),
                    });
                } else if reason == "permission" || e.prompt.is_some() {
                    out.push(Input::Permission {
                        session,
                        prompt: e.prompt.clone(),
                        tool: e.tool.clone(),
                        detail: e.detail.clone(),
                        options: e.options.clone(),
                    });
                } else if reason.to_ascii_lowercase().contains("permission") {
                    out.push(Input::Permission {
                        session,
                        prompt: None,
                        tool: None,
                        detail: None,
                        options: None,
                    });
                } else {
                    out.push(Input::Question {
                        session,
                        detail: e.reason.clone().or_else(|| e.waiting_for.clone()),
                    });
                }
            }
            EventKind::AttentionCleared => out.push(Input::Cleared { session }),
            EventKind::Exited => {
                // A reaped or discarded session has its own event (or none).
                let state = e.status.clone().unwrap_or(Lifecycle::Exited);
                if matches!(state, Lifecycle::Reaped | Lifecycle::Discarded) {
                    return out;
                }
                let failed = state == Lifecycle::Failed;
                let detail = match (&e.reason, e.exit_code, e.exit_signal) {
                    (Some(r), _, _) => Some(r.clone()),
                    (None, Some(c), _) => Some(format!("exit code {c}")),
                    (None, None, Some(s)) => Some(format!("signal {s}")),
                    _ => None,
                };
                out.push(Input::Ended {
                    session,
                    failed,
                    detail,
                });
            }
            EventKind::Reaped => out.push(Input::Reaped {
                session,
                budget: e.reason.as_deref() == Some("memory_budget"),
            }),
            EventKind::Disappeared => out.push(Input::Gone { session }),
            EventKind::Focus => out.push(Input::Focus {
                session,
                focused: e.focused.unwrap_or(false),
            }),
            _ => {}
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(v: serde_json::Value) -> Event {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_focus_event_is_the_sessions_focus() {
        let f = ev(serde_json::json!({"type":"session.focus","session":"s","at":1,"focused":true}));
        assert_eq!(
            Input::from_event(&f),
            [Input::Focus {
                session: "s".into(),
                focused: true
            }]
        );
        let f =
            ev(serde_json::json!({"type":"session.focus","session":"s","at":2,"focused":false}));
        assert_eq!(
            Input::from_event(&f),
            [Input::Focus {
                session: "s".into(),
                focused: false
            }]
        );
    }

    #[test]
    fn the_documented_events_become_inputs() {
        let p = ev(
            serde_json::json!({"type":"session.attention","session":"s","at":1,"held":true,
            "holder":"h","reason":"permission","tool":"Bash command","detail":"echo hi",
            "options":["Yes","No"],"prompt":"p1"}),
        );
        assert_eq!(
            Input::from_event(&p),
            [Input::Permission {
                session: "s".into(),
                prompt: Some("p1".into()),
                tool: Some("Bash command".into()),
                detail: Some("echo hi".into()),
                options: Some(vec!["Yes".into(), "No".into()]),
            }]
        );
        let r = ev(
            serde_json::json!({"type":"session.attention","session":"s","at":1,
            "status":"waiting","waiting_for":"permission prompt","reason":"permission prompt"}),
        );
        assert!(matches!(
            &Input::from_event(&r)[..],
            [Input::Permission { prompt: None, .. }]
        ));
        let q = ev(
            serde_json::json!({"type":"session.attention","session":"s","at":1,"reason":"trust dialog"}),
        );
        assert!(matches!(
            &Input::from_event(&q)[..],
            [Input::Question { .. }]
        ));
        let w = ev(
            serde_json::json!({"type":"session.attention","session":"s","at":1,"reason":"second_writer","pids":[1,2]}),
        );
        assert!(matches!(
            &Input::from_event(&w)[..],
            [Input::SecondWriter { .. }]
        ));
        let a = ev(
            serde_json::json!({"type":"session.appeared","session":"s","at":1,"pid":3,"cwd":"/p","state":"live","held":false,"status":"busy"}),
        );
        assert_eq!(
            Input::from_event(&a),
            [
                Input::Seen {
                    session: "s".into(),
                    cwd: Some("/p".into()),
                    title: None
                },
                Input::Status {
                    session: "s".into(),
                    activity: Activity::Busy
                }
            ]
        );
        let x = ev(
            serde_json::json!({"type":"session.exited","session":"s","at":1,"exit_code":0,"status":"exited"}),
        );
        assert!(matches!(
            &Input::from_event(&x)[..],
            [Input::Ended { failed: false, .. }]
        ));
        let f = ev(
            serde_json::json!({"type":"session.exited","session":"s","at":1,"status":"failed","reason":"could not start"}),
        );
        assert!(matches!(
            &Input::from_event(&f)[..],
            [Input::Ended { failed: true, .. }]
        ));
        let rx =
            ev(serde_json::json!({"type":"session.exited","session":"s","at":1,"status":"reaped"}));
        assert!(Input::from_event(&rx).is_empty());
        let rp = ev(
            serde_json::json!({"type":"session.reaped","session":"s","at":1,"reason":"memory_budget","cwd":"/p"}),
        );
        assert!(matches!(
            &Input::from_event(&rp)[..],
            [Input::Seen { .. }, Input::Reaped { budget: true, .. }]
        ));
        let l = ev(serde_json::json!({"type":"events.lagged","at":1,"missed":3}));
        assert!(Input::from_event(&l).is_empty());
    }
}
