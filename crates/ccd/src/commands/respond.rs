//! `ccd approve` / `ccd deny`: answer the tool permission prompt of a
//! session ccd holds (`session.respond`).

use crate::cli::GlobalArgs;
use crate::cli::RespondArgs;
use ccd_claude::display::line;
use ccd_protocol::methods::session::{RespondChoice, RespondParams, SessionRespond};
use std::process::ExitCode;

/// Runs `ccd approve` (`choice` yes or always) or `ccd deny` (no).
pub fn run(
    global: &GlobalArgs,
    args: &RespondArgs,
    choice: RespondChoice,
    message: Option<String>,
) -> anyhow::Result<ExitCode> {
    let verb = match choice {
        RespondChoice::No => "deny",
        _ => "approve",
    };
    let mut c = crate::shared::connect::connect(global)?;
    let params = RespondParams {
        session: args.session.clone(),
        choice,
        message,
        prompt: args.prompt.clone(),
    };
    match c.call::<SessionRespond>(&params) {
        Ok(r) => {
            let sid = line(&r.session);
            eprintln!(
                "{} prompt {} of {sid}: {}",
                if choice == RespondChoice::No {
                    "denied"
                } else {
                    "approved"
                },
                line(&r.prompt),
                line(&r.option)
            );
            if r.message_submitted == Some(false) {
                eprintln!(
                    "ccd {verb}: typed the message into {sid}, but its prompt still shows it: Enter did not take it (see `ccd screen {sid}`)"
                );
                return Ok(ExitCode::FAILURE);
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("ccd {verb}: {}", line(&e.to_string()));
            Ok(ExitCode::FAILURE)
        }
    }
}
