//! `ccd send` (a prompt into a session ccd holds, only at its prompt) and
//! `ccd pin` / `ccd unpin` (idle reaping exemption).

use crate::cli::{GlobalArgs, SendArgs};
use ccd_claude::display::line;
use ccd_protocol::methods::session::{PinParams, SendParams, SessionPin, SessionSend};
use std::process::ExitCode;

pub fn run(global: &GlobalArgs, args: &SendArgs) -> anyhow::Result<ExitCode> {
    let mut c = crate::shared::connect::connect(global)?;
    match c.call::<SessionSend>(&SendParams {
        session: args.session.clone(),
        text: args.text.clone(),
        force: args.force,
        shell: args.shell,
        literal: args.literal,
    }) {
        Ok(r) => {
            let sid = line(&r.session);
            if r.submitted == Some(false) {
                eprintln!(
                    "ccd send: typed into {sid}, but its prompt still shows the text: Enter did not take it (see `ccd screen {sid}`)"
                );
                return Ok(ExitCode::FAILURE);
            }
            if r.removed > 0 {
                eprintln!(
                    "sent to {sid} ({} escape or control character(s) removed: text is typed as text, never as keys)",
                    r.removed
                );
            } else {
                eprintln!("sent to {sid}");
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("ccd send: {}", line(&e.to_string()));
            Ok(ExitCode::FAILURE)
        }
    }
}

/// `ccd pin` / `ccd unpin`.
pub fn pin(global: &GlobalArgs, session: &str, pinned: bool) -> anyhow::Result<ExitCode> {
    let mut c = crate::shared::connect::connect(global)?;
    match c.call::<SessionPin>(&PinParams {
        session: session.to_string(),
        pinned,
    }) {
        Ok(r) => {
            eprintln!(
                "{} {}",
                if pinned { "pinned" } else { "unpinned" },
                line(&r.session)
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!(
                "ccd {}: {}",
                if pinned { "pin" } else { "unpin" },
                line(&e.to_string())
            );
            Ok(ExitCode::FAILURE)
        }
    }
}
