//! Being attached, for `attach`, `fork`, `new` and `observe`: the terminal
//! client, and the line that says how it ended and how to come back.

use crate::cli::GlobalArgs;
use crate::shared::cells::short_id;
use crate::shared::connect::connect_existing;
use crate::term::{attach_loop, AttachExtra, DetachKey, Mode, Opening, Outcome};
use ccd_claude::display::line;
use ccd_client::{Client, ClientError};
use ccd_protocol::error_data::{LiveElsewhereData, ScreenData, SpawnFailedData};
use ccd_protocol::methods::session::{SessionState, SessionsGet};
use ccd_protocol::methods::SessionRef;
use ccd_protocol::ErrorCode;
use std::process::ExitCode;

/// Attaches and reports; the exit code says how it ended.
pub fn attach_and_report(
    global: &GlobalArgs,
    client: impl Into<Opening>,
    session: &str,
    mode: Mode,
    key: DetachKey,
    extra: AttachExtra,
) -> anyhow::Result<ExitCode> {
    let mut notice = None;
    let r = attach_loop(client, session, mode, key, extra, &mut |attached| {
        if let Some(f) = &attached.fresh_instead_of {
            let text = format!(
                "ccd: RESUMING {} FAILED ({}).\nccd: started a NEW session {} in the same directory instead.\nccd: the original conversation is untouched in {}",
                line(&f.session),
                line(&f.reason),
                line(&attached.session),
                line(f.transcript.as_deref().unwrap_or("its transcript")),
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
    let mut sid = attached.session;
    let ccd = crate::hosts::ccd_on(global);
    let remote = crate::hosts::single(global)
        .ok()
        .and_then(|t| t.remote())
        .map(|r| r.label.clone());
    // Asking again would open a second ssh connection (and maybe prompt).
    if matches!(outcome, Outcome::Detached) && remote.is_none() {
        if let Some(now) = session_now(global, &sid) {
            sid = now;
        }
    }
    let short = line(short_id(&sid));
    match outcome {
        Outcome::Detached => {
            eprintln!("[detached from {short}] come back with: {ccd} attach {short}");
            Ok(ExitCode::SUCCESS)
        }
        Outcome::Exited { code, signal } => {
            let how = match (code, signal) {
                (Some(c), _) => format!("exited with status {c}"),
                (None, Some(s)) => format!("was killed by signal {s}"),
                _ => "ended".into(),
            };
            eprintln!("[session {short} {how}] resume it with: {ccd} attach {short}");
            Ok(ExitCode::SUCCESS)
        }
        Outcome::DaemonGone if remote.is_some() => {
            eprintln!(
                "[lost the connection to {}; the session keeps running there] come back with: {ccd} attach {short}",
                line(remote.as_deref().unwrap_or("?"))
            );
            Ok(ExitCode::from(3))
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
            eprintln!("[ccd ended by signal {s}; the session keeps running] come back with: {ccd} attach {short}");
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
    let mut c = connect_existing(global).ok()??;
    let get = |c: &mut Client, session: &str| {
        c.call::<SessionsGet>(&SessionRef {
            session: session.to_string(),
        })
    };
    let mut info = get(&mut c, sid).ok()?;
    let mut now = None;
    if let Some(s) = info.superseded_by.clone() {
        eprintln!(
            "[claude moved on from {} ({}): it writes {} now]",
            line(short_id(sid)),
            line(&s.reason),
            line(short_id(&s.writes_now))
        );
        if let Ok(v) = get(&mut c, &s.writes_now) {
            info = v;
        }
        now = Some(s.writes_now);
    }
    if info.several_writers {
        let pids: Vec<String> = info.writers.iter().map(|w| w.pid.to_string()).collect();
        eprintln!(
            "ccd: WARNING: session {} is written by {} processes (pids {}): someone resumed it outside ccd; their turns and yours split the conversation",
            line(short_id(now.as_deref().unwrap_or(sid))),
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
    if rpc.code == ErrorCode::SessionLiveElsewhere.code() {
        let data = rpc.data_as::<LiveElsewhereData>();
        let d = data.as_ref();
        let sid = line(d.map(|d| d.session.as_str()).unwrap_or(session));
        let short = short_id(&sid);
        if d.is_some_and(|d| d.started_meanwhile) {
            eprintln!("ccd: another process started session {sid} while ccd was resuming it; ccd stopped its own copy.");
        }
        eprintln!("ccd: session {sid} is {} outside ccd; ccd will not resume it (two writers would split the conversation).",
            if d.is_some_and(|d| d.state == SessionState::Unknown) { "possibly running (its liveness cannot be verified)" } else { "running" });
        let text = |f: fn(&LiveElsewhereData) -> Option<&str>| d.and_then(f).unwrap_or("?");
        eprintln!(
            "  held by: pid {}, kind {}, in {}, since {}",
            d.and_then(|d| d.pid)
                .map(|p| p.to_string())
                .unwrap_or_else(|| "?".into()),
            line(text(|d| d.kind.as_deref())),
            line(text(|d| d.cwd.as_deref())),
            line(text(|d| d.since.as_deref()))
        );
        eprintln!("  safe instead:\n    ccd observe {short}     # watch it, read-only\n    ccd fork {short}        # branch it into a new session");
        return Ok(ExitCode::from(2));
    }
    eprintln!("ccd: {}", line(&rpc.message));
    print_screen(
        rpc.data_as::<ScreenData>()
            .and_then(|d| d.screen)
            .as_deref(),
        "last screen",
    );
    if rpc.code == ErrorCode::SpawnFailed.code()
        && rpc
            .data_as::<SpawnFailedData>()
            .is_some_and(|d| d.transcript.is_some())
    {
        eprintln!("The conversation is untouched. `ccd attach {} --fresh-on-failure` starts a new session in its directory instead.", line(short_id(session)));
    }
    Ok(ExitCode::FAILURE)
}

/// Prints a screen carried in an error or a reply (rows of text) on
/// stderr, without its trailing blank rows, each row made safe to print.
pub fn print_screen(screen: Option<&[String]>, label: &str) {
    let Some(rows) = screen else {
        return;
    };
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
