//! `ccd kill`: end a session ccd holds and report how it ended.

use crate::cli::{GlobalArgs, KillArgs};
use ccd_claude::display::line;
use ccd_protocol::methods::session::{KillParams, KillSignal, SessionKill};
use std::process::ExitCode;

pub fn run(global: &GlobalArgs, args: &KillArgs) -> anyhow::Result<ExitCode> {
    let signal = match args.signal.as_str() {
        "term" => KillSignal::Term,
        "hup" => KillSignal::Hup,
        "kill" => KillSignal::Kill,
        _ => anyhow::bail!("--signal must be term, hup or kill (got {:?})", args.signal),
    };
    let mut c = crate::shared::connect::connect(global)?;
    let r = match c.call::<SessionKill>(&KillParams {
        session: args.session.clone(),
        signal,
        grace_ms: Some(args.grace_ms),
    }) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("ccd kill: {}", line(&e.to_string()));
            return Ok(ExitCode::FAILURE);
        }
    };
    let how = match (r.exit_code, r.exit_signal) {
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(s)) => format!("killed by signal {s}"),
        _ if r.exited => "exited".to_string(),
        _ => "signalled; not gone yet".to_string(),
    };
    println!("{}: {how}", line(&args.session));
    Ok(ExitCode::SUCCESS)
}
