//! `ccd events`: the daemon's events as lines, for shell scripts.

use crate::cli::{EventsArgs, GlobalArgs};
use serde_json::{json, Value};
use std::io::Write;
use std::process::ExitCode;

pub fn run(global: &GlobalArgs, args: &EventsArgs) -> anyhow::Result<ExitCode> {
    let mut c = super::connect(global)?;
    let mut params = json!({});
    if !args.types.is_empty() {
        params["types"] = json!(args.types);
    }
    c.call_value("events.subscribe", params)?;
    let stdout = std::io::stdout();
    loop {
        let Some(n) = c.next_notification(None)? else {
            continue;
        };
        if n.method != "event" {
            continue;
        }
        let e = n.params.unwrap_or(Value::Null);
        let mut out = stdout.lock();
        let r = if args.json {
            writeln!(out, "{e}")
        } else {
            writeln!(out, "{}", ccd_claude::display::line(&human(&e)))
        };
        if r.and_then(|_| out.flush()).is_err() {
            return Ok(ExitCode::SUCCESS); // the reader went away
        }
    }
}

/// One line for a person; [`ccd_claude::display::line`] makes it safe to
/// print (cwds and reasons come from files).
fn human(e: &Value) -> String {
    let kind = e["type"].as_str().unwrap_or("?");
    let sid = e["session"]
        .as_str()
        .map(|s| super::short_id(s).to_string())
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
        "session.context" => format!("{} tokens ({}%)", e["context_tokens"], e["context_percent"]),
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
