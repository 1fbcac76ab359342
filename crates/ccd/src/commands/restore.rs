//! `ccd restore`: bring back the sessions lost when the machine went down
//! (`sessions.restore`), and print the daemon's one report of what came
//! back and what did not.

use crate::cli::GlobalArgs;
use ccd_claude::display::line;
use ccd_protocol::methods::session::{RestoreParams, SessionsRestore};
use std::process::ExitCode;

pub fn run(global: &GlobalArgs, sessions: &[String], json: bool) -> anyhow::Result<ExitCode> {
    let mut c = crate::shared::connect::connect(global)?;
    let r = match c.call::<SessionsRestore>(&RestoreParams {
        sessions: sessions.to_vec(),
    }) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("ccd restore: {}", line(&e.to_string()));
            return Ok(ExitCode::FAILURE);
        }
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else if r.restored.is_empty() && r.failed.is_empty() {
        println!("no lost session to restore");
    } else {
        for s in &r.restored {
            println!("restored {}  {}", line(&s.session), line(&s.cwd));
        }
        for s in &r.failed {
            let kept = if s.kept {
                "still listed as lost"
            } else {
                "forgotten"
            };
            println!(
                "not restored {}  {}: {} ({kept})",
                line(&s.session),
                line(&s.cwd),
                line(&s.reason)
            );
        }
        println!(
            "{} restored, {} not restored",
            r.restored.len(),
            r.failed.len()
        );
    }
    Ok(if r.failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
