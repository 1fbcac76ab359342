//! `ccd events`: the daemon's events as lines, for shell scripts.

use crate::cli::{EventsArgs, GlobalArgs};
use ccd_claude::display::line;
use ccd_claude::display::width::pad;
use ccd_protocol::methods::events::{
    Event, EventKind, EventNotification, EventsSubscribe, SubscribeParams,
};
use ccd_protocol::NotificationKind;
use serde::Serialize;
use std::io::Write;
use std::process::ExitCode;

pub fn run(global: &GlobalArgs, args: &EventsArgs) -> anyhow::Result<ExitCode> {
    let mut c = crate::shared::connect::connect(global)?;
    c.call::<EventsSubscribe>(&SubscribeParams {
        types: (!args.types.is_empty()).then(|| args.types.clone()),
    })?;
    let stdout = std::io::stdout();
    loop {
        let Some(n) = c.next_notification(None)? else {
            continue;
        };
        if n.method != EventNotification::NAME {
            continue;
        }
        let line = if args.json {
            // The event as the daemon sent it, fields this client does not
            // know included (terminal-safe: see `display::json`).
            ccd_claude::display::json::to_string(&n.params.unwrap_or_default())?
        } else {
            match n.params_as::<Event>() {
                Ok(e) => ccd_claude::display::line(&human(&e)).into_owned(),
                Err(e) => {
                    tracing::warn!(error = %e.message, "skipping an event that does not read");
                    continue;
                }
            }
        };
        let mut out = stdout.lock();
        if writeln!(out, "{line}").and_then(|_| out.flush()).is_err() {
            return Ok(ExitCode::SUCCESS); // the reader went away
        }
    }
}

/// A value as JSON text (`null` when absent): numbers as the daemon
/// wrote them.
fn json<T: Serialize>(v: &Option<T>) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// One line for a person; [`ccd_claude::display::line`] makes it safe to
/// print (cwds and reasons come from files).
fn human(e: &Event) -> String {
    let kind = e.kind.as_str();
    let sid = e
        .session
        .as_deref()
        .map(|s| crate::shared::cells::short_id(s).to_string())
        .unwrap_or_default();
    let detail = match e.kind {
        EventKind::Appeared => format!(
            "pid {} in {}{}",
            json(&e.pid),
            e.cwd.as_deref().unwrap_or("?"),
            if e.held == Some(true) { " (ccd)" } else { "" }
        ),
        EventKind::Disappeared => format!("pid {}", json(&e.pid)),
        EventKind::Status | EventKind::Lifecycle => format!(
            "{} -> {}{}",
            e.previous.as_ref().map_or("-", |s| s.as_str()),
            e.status.as_ref().map_or("?", |s| s.as_str()),
            e.waiting_for
                .as_deref()
                .map(|w| format!(" ({w})"))
                .unwrap_or_default()
        ),
        EventKind::Attention => match (e.reason.as_deref(), e.tool.as_deref()) {
            // A held session's permission dialog: what asks, and how to
            // answer exactly that prompt.
            (Some("permission"), Some(tool)) => {
                let what = match e.detail.as_deref().filter(|d| !d.is_empty()) {
                    Some(d) => format!("{tool}: {d}"),
                    None => tool.to_string(),
                };
                match &e.prompt {
                    Some(p) => format!(
                        "permission ({what}); `ccd approve {sid} --prompt {p}` or `ccd deny {sid} --prompt {p}`"
                    ),
                    None => format!("permission ({what})"),
                }
            }
            (reason, _) => reason.unwrap_or("needs attention").to_string(),
        },
        EventKind::Context => format!(
            "{} tokens ({}%)",
            json(&e.context_tokens),
            json(&e.context_percent)
        ),
        EventKind::Exited => match (e.exit_code, e.exit_signal) {
            (Some(c), _) => format!("status {c}"),
            (None, Some(s)) => format!("signal {s}"),
            _ => e.reason.clone().unwrap_or_default(),
        },
        EventKind::Lagged => format!("{} events missed", json(&e.missed)),
        EventKind::Focus if e.focused == Some(true) => {
            "a terminal attached to it has the focus".into()
        }
        EventKind::Focus => "no attached terminal has the focus".into(),
        _ => String::new(),
    };
    let at = time::OffsetDateTime::from_unix_timestamp(e.at / 1000)
        .map(|t| format!("{:02}:{:02}:{:02}", t.hour(), t.minute(), t.second()))
        .unwrap_or_default();
    // Columns by display width: kind and id come from the daemon.
    let kind = pad(&line(kind), 20);
    let sid = pad(&line(&sid), 8);
    format!("{at} {kind} {sid} {detail}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// The line as read from the untyped params (how `ccd events` read
    /// them before they were typed): the typed reading must print the
    /// same bytes.
    fn untyped(e: &Value) -> String {
        let kind = e["type"].as_str().unwrap_or("?");
        let sid = e["session"]
            .as_str()
            .map(|s| crate::shared::cells::short_id(s).to_string())
            .unwrap_or_default();
        let detail = match kind {
            "session.appeared" => format!(
                "pid {} in {}{}",
                e["pid"],
                e["cwd"].as_str().unwrap_or("?"),
                if e["held"] == true { " (ccd)" } else { "" }
            ),
            "session.disappeared" => format!("pid {}", e["pid"]),
            "session.status" | "session.lifecycle" => format!(
                "{} -> {}{}",
                e["previous"].as_str().unwrap_or("-"),
                e["status"].as_str().unwrap_or("?"),
                e["waiting_for"]
                    .as_str()
                    .map(|w| format!(" ({w})"))
                    .unwrap_or_default()
            ),
            "session.attention" => e["reason"]
                .as_str()
                .unwrap_or("needs attention")
                .to_string(),
            "session.context" => {
                format!("{} tokens ({}%)", e["context_tokens"], e["context_percent"])
            }
            "session.exited" => match (e["exit_code"].as_i64(), e["exit_signal"].as_i64()) {
                (Some(c), _) => format!("status {c}"),
                (None, Some(s)) => format!("signal {s}"),
                _ => e["reason"].as_str().unwrap_or("").to_string(),
            },
            "events.lagged" => format!("{} events missed", e["missed"]),
            _ => String::new(),
        };
        let at = e["at"]
            .as_i64()
            .and_then(|ms| time::OffsetDateTime::from_unix_timestamp(ms / 1000).ok())
            .map(|t| format!("{:02}:{:02}:{:02}", t.hour(), t.minute(), t.second()))
            .unwrap_or_default();
        format!("{at} {kind:<20} {sid:<8} {detail}")
    }

    #[test]
    fn a_permission_prompt_says_what_asks_and_how_to_answer_it() {
        let mut e = Event::new(
            EventKind::Attention,
            Some("3c5e7a9b-1d2f-4a6c-8e0b-2d4f6a8c0e1f".into()),
            1_795_977_273_050,
        );
        e.reason = Some("permission".into());
        e.tool = Some("Bash command".into());
        e.detail = Some("npm test".into());
        e.prompt = Some("5f1c09a2b7e4d3c8".into());
        let line = human(&e);
        assert!(
            line.ends_with(
                "permission (Bash command: npm test); `ccd approve 3c5e7a9b --prompt 5f1c09a2b7e4d3c8` or `ccd deny 3c5e7a9b --prompt 5f1c09a2b7e4d3c8`"
            ),
            "{line}"
        );
        e.prompt = None;
        e.detail = None;
        assert!(
            human(&e).ends_with("permission (Bash command)"),
            "{}",
            human(&e)
        );
    }

    #[test]
    fn a_focus_event_says_whether_a_terminal_has_the_focus() {
        let mut e = Event::new(EventKind::Focus, Some("3c5e7a9b-1d2f".into()), 0);
        e.focused = Some(true);
        assert!(human(&e).ends_with("a terminal attached to it has the focus"));
        e.focused = Some(false);
        assert!(human(&e).ends_with("no attached terminal has the focus"));
    }

    #[test]
    fn typed_lines_are_the_untyped_lines() {
        let sid = "3c5e7a9b-1d2f-4a6c-8e0b-2d4f6a8c0e1f";
        let at = 1_795_977_273_050_i64;
        let mut events = Vec::new();
        let mut e = Event::new(EventKind::Appeared, Some(sid.into()), at);
        e.pid = Some(4120);
        e.cwd = Some("/home/me/p".into());
        e.held = Some(true);
        events.push(e.clone());
        e.held = None;
        e.cwd = None;
        events.push(e);
        events.push(Event::new(EventKind::Disappeared, Some(sid.into()), at));
        let mut e = Event::new(EventKind::Status, Some(sid.into()), at);
        e.status = Some("waiting".into());
        e.previous = Some("busy".into());
        e.waiting_for = Some("permission prompt".into());
        events.push(e);
        events.push(Event::new(EventKind::Lifecycle, Some(sid.into()), at));
        let mut e = Event::new(EventKind::Attention, Some(sid.into()), at);
        events.push(e.clone());
        e.reason = Some("permission".into());
        events.push(e);
        let mut e = Event::new(EventKind::Context, Some(sid.into()), at);
        events.push(e.clone());
        e.context_tokens = Some(48211);
        e.context_percent = Some(24.1);
        events.push(e.clone());
        e.context_percent = Some(50.0);
        events.push(e);
        let mut e = Event::new(EventKind::Exited, Some(sid.into()), at);
        events.push(e.clone());
        e.reason = Some("killed".into());
        events.push(e.clone());
        e.exit_signal = Some(9);
        events.push(e.clone());
        e.exit_code = Some(0);
        events.push(e);
        let mut e = Event::new(EventKind::Lagged, None, -5);
        e.missed = Some(12);
        events.push(e);
        events.push(Event::new(
            EventKind::Other("session.something_new".into()),
            Some("ab".into()),
            at,
        ));
        for e in events {
            let wire: Value = serde_json::from_str(&json!(e).to_string()).unwrap();
            assert_eq!(human(&e), untyped(&wire), "{wire}");
        }
    }
}
