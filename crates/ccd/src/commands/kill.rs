//! `ccd kill`: end a session ccd holds and report how it ended.

use crate::cli::{GlobalArgs, KillArgs};
use ccd_claude::display::line;
use serde_json::json;
use std::process::ExitCode;

pub fn run(global: &GlobalArgs, args: &KillArgs) -> anyhow::Result<ExitCode> {
    if !matches!(args.signal.as_str(), "term" | "hup" | "kill") {
        anyhow::bail!("--signal must be term, hup or kill (got {:?})", args.signal);
    }
    let mut c = super::connect(global)?;
    let r = match c.call_value(
        "session.kill",
        json!({"session": args.session, "signal": args.signal, "grace_ms": args.grace_ms}),
    ) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("ccd kill: {}", line(&e.to_string()));
            return Ok(ExitCode::FAILURE);
        }
    };
    let how = match (r["exit_code"].as_i64(), r["exit_signal"].as_i64()) {
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(s)) => format!("killed by signal {s}"),
        _ if r["exited"] == true => "exited".to_string(),
        _ => "signalled; not gone yet".to_string(),
    };
    println!("{}: {how}", line(&args.session));
    Ok(ExitCode::SUCCESS)
}
