//! Being attached, for `attach`, `fork`, `new` and `observe`: the terminal
//! client, and the line that says how it ended and how to come back.

use crate::cli::{DetachKeyArg, GlobalArgs};
use crate::settings::Settings;
use crate::term::{attach_loop, DetachKey, Mode, Outcome};
use ccd_claude::display::line;
use ccd_client::{Client, ClientError};
use ccd_protocol::ErrorCode;
use serde_json::Value;
use std::io::IsTerminal;
use std::process::ExitCode;

/// The detach key: flag, config file, else `ctrl-\`.
pub fn detach_key(global: &GlobalArgs, arg: &DetachKeyArg) -> anyhow::Result<DetachKey> {
    let configured = match &arg.detach_key {
        Some(k) => Some(k.clone()),
        None => Settings::load(global.config.as_deref())?.detach_key,
    };
    match configured {
        Some(k) => k.parse().map_err(|e: String| anyhow::anyhow!(e)),
        None => Ok(DetachKey::default()),
    }
}

pub fn require_terminal(what: &str) -> anyhow::Result<()> {
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        anyhow::bail!("{what} needs a terminal (use `ccd screen` or the socket API from scripts)");
    }
    Ok(())
}

/// Attaches and reports; the exit code says how it ended.
pub fn attach_and_report(
    global: &GlobalArgs,
    client: Client,
    session: &str,
    mode: Mode,
    key: DetachKey,
    extra: Value,
) -> anyhow::Result<ExitCode> {
    let mut notice = None;
    let r = attach_loop(client, session, mode, key, extra, &mut |attached| {
        if let Some(f) = attached.get("fresh_instead_of").filter(|f| !f.is_null()) {
            let text = format!(
                "ccd: RESUMING {} FAILED ({}).\nccd: started a NEW session {} in the same directory instead.\nccd: the original conversation is untouched in {}",
                line(f["session"].as_str().unwrap_or("?")),
                line(f["reason"].as_str().unwrap_or("?")),
                line(attached["session"].as_str().unwrap_or("?")),
                line(f["transcript"].as_str().unwrap_or("its transcript")),
            );
            eprintln!("{text}");
            notice = Some(text);
            std::thread::sleep(std::time::Duration::from_millis(1500));
        }
    });
    let (outcome, attached) = match r {
        Ok(v) => v,
        Err(e) => return report_error(session, &e),
    };
    if let Some(n) = notice {
        eprintln!("{n}");
    }
    let mut sid = attached["session"].as_str().unwrap_or(session).to_string();
    if matches!(outcome, Outcome::Detached) {
        if let Some(now) = session_now(global, &sid) {
            sid = now;
        }
    }
    let short = line(super::short_id(&sid));
    match outcome {
        Outcome::Detached => {
            eprintln!("[detached from {short}] come back with: ccd attach {short}");
            Ok(ExitCode::SUCCESS)
        }
        Outcome::Exited { code, signal } => {
            let how = match (code, signal) {
                (Some(c), _) => format!("exited with status {c}"),
                (None, Some(s)) => format!("was killed by signal {s}"),
                _ => "ended".into(),
            };
            eprintln!("[session {short} {how}] resume it with: ccd attach {short}");
            Ok(ExitCode::SUCCESS)
        }
        Outcome::DaemonGone => {
            eprintln!("[the ccd daemon went away; the session keeps running] come back with: ccd attach {short}");
            Ok(ExitCode::from(3))
        }
        Outcome::HolderGone => {
            eprintln!("[lost the connection to session {short}: its ccd holder is gone] `ccd ls` shows where it stands; `ccd attach {short}` resumes it");
            Ok(ExitCode::from(3))
        }
        Outcome::Signalled(s) => {
            eprintln!("[ccd ended by signal {s}; the session keeps running] come back with: ccd attach {short}");
            Ok(ExitCode::from(3))
        }
    }
}

/// After a detach, the id that reaches the same process now (claude may
/// have moved to another conversation while attached: `/clear`, `/resume`),
/// saying so, and a warning when another process writes it too (two
/// writers split a conversation). Printed after the terminal is restored,
/// never into claude's screen. `None`: the id is unchanged or unknown.
fn session_now(global: &GlobalArgs, sid: &str) -> Option<String> {
    let mut c = super::connect_existing(global).ok()??;
    let info = c
        .call_value("sessions.get", serde_json::json!({"session": sid}))
        .ok()?;
    let mut now = None;
    let mut info = info;
    if let Some(to) = info["superseded_by"]["writes_now"].as_str() {
        eprintln!(
            "[claude moved on from {} ({}): it writes {} now]",
            line(super::short_id(sid)),
            line(
                info["superseded_by"]["reason"]
                    .as_str()
                    .unwrap_or("unknown")
            ),
            line(super::short_id(to))
        );
        now = Some(to.to_string());
        if let Ok(v) = c.call_value("sessions.get", serde_json::json!({"session": to})) {
            info = v;
        }
    }
    if info["several_writers"] == true {
        let pids: Vec<String> = info["writers"]
            .as_array()
            .map(|w| {
                w.iter()
                    .filter_map(|w| w["pid"].as_u64())
                    .map(|p| p.to_string())
                    .collect()
            })
            .unwrap_or_default();
        eprintln!(
            "ccd: WARNING: session {} is written by {} processes (pids {}): someone resumed it outside ccd; their turns and yours split the conversation",
            line(super::short_id(now.as_deref().unwrap_or(sid))),
            pids.len(),
            pids.join(", ")
        );
    }
    now
}

/// Explains a refused or failed attach.
pub fn report_error(session: &str, e: &ClientError) -> anyhow::Result<ExitCode> {
    let Some(rpc) = e.rpc() else {
        if e.not_answering().is_some() {
            eprintln!(
                "ccd: cannot attach to {}: {}",
                line(session),
                line(&e.to_string())
            );
            return Ok(ExitCode::FAILURE);
        }
        eprintln!("ccd: {}", line(&e.to_string()));
        return Ok(ExitCode::FAILURE);
    };
    let data = rpc.data.clone().unwrap_or(Value::Null);
    if rpc.code == ErrorCode::SessionLiveElsewhere.code() {
        let sid = line(data["session"].as_str().unwrap_or(session));
        let short = super::short_id(&sid);
        if data["started_meanwhile"] == true {
            eprintln!("ccd: another process started session {sid} while ccd was resuming it; ccd stopped its own copy.");
        }
        eprintln!("ccd: session {sid} is {} outside ccd; ccd will not resume it (two writers would split the conversation).",
            if data["state"] == "unknown" { "possibly running (its liveness cannot be verified)" } else { "running" });
        eprintln!(
            "  held by: pid {}, kind {}, in {}, since {}",
            data["pid"]
                .as_u64()
                .map(|p| p.to_string())
                .unwrap_or_else(|| "?".into()),
            line(data["kind"].as_str().unwrap_or("?")),
            line(data["cwd"].as_str().unwrap_or("?")),
            line(data["since"].as_str().unwrap_or("?"))
        );
        eprintln!("  safe instead:\n    ccd observe {short}     # watch it, read-only\n    ccd fork {short}        # branch it into a new session");
        return Ok(ExitCode::from(2));
    }
    eprintln!("ccd: {}", line(&rpc.message));
    print_screen(data.get("screen"), "last screen");
    if rpc.code == ErrorCode::SpawnFailed.code() && data.get("transcript").is_some() {
        eprintln!("The conversation is untouched. `ccd attach {} --fresh-on-failure` starts a new session in its directory instead.", line(super::short_id(session)));
    }
    Ok(ExitCode::FAILURE)
}

/// Prints a screen carried in an error or a reply (rows of text) on
/// stderr, without its trailing blank rows, each row made safe to print.
pub fn print_screen(screen: Option<&Value>, label: &str) {
    let Some(rows) = screen.and_then(Value::as_array) else {
        return;
    };
    let rows: Vec<&str> = rows.iter().filter_map(Value::as_str).collect();
    let last = rows
        .iter()
        .rposition(|r| !r.trim().is_empty())
        .map(|i| i + 1)
        .unwrap_or(0);
    if last == 0 {
        return;
    }
    eprintln!("--- {label} ---");
    for r in &rows[..last] {
        eprintln!("{}", line(r));
    }
    eprintln!("{}", "-".repeat(label.len() + 8));
}
