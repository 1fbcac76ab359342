//! `ccd fork`: branch a session into a new one, then attach to it.

use super::attached::{attach_and_report, report_error};
use crate::cli::{ForkArgs, GlobalArgs};
use crate::shared::terminal::{detach_key, require_terminal};
use crate::term::{AttachExtra, Mode};
use ccd_claude::display::line;
use ccd_client::{Client, ClientError};
use ccd_protocol::error_data::SpawnFailedData;
use ccd_protocol::methods::session::{ForkParams, SessionFork};
use ccd_protocol::{ErrorCode, RpcError};
use std::process::ExitCode;

pub fn run(global: &GlobalArgs, args: &ForkArgs) -> anyhow::Result<ExitCode> {
    let key = detach_key(global, &args.key)?;
    if !args.detach {
        require_terminal("ccd fork (without --detach)")?;
    }
    super::archive::restore_if_archived(global, &args.session)?;
    let mut client = crate::shared::connect::connect(global)?;
    let new = match fork(&mut client, &args.session) {
        Ok(n) => n,
        Err(e) => return report_error(&args.session, &e),
    };
    println!("{}", line(&new));
    if args.detach {
        return Ok(ExitCode::SUCCESS);
    }
    attach_and_report(
        global,
        client,
        &new,
        Mode::Interactive,
        key,
        AttachExtra::default(),
    )
}

/// Forks `session` and returns the new session id.
pub fn fork(client: &mut Client, session: &str) -> Result<String, ClientError> {
    eprintln!("ccd: forking {}…", line(session));
    let params = ForkParams {
        session: session.to_string(),
        size: None,
    };
    let r = client.call_with::<SessionFork>(&params, &mut |_| {})?;
    match r.started().map(str::to_string) {
        Some(s) => {
            eprintln!(
                "ccd: forked {} into {}",
                line(r.forked_from.as_deref().unwrap_or(session)),
                line(&s)
            );
            Ok(s)
        }
        None => {
            let reason = r.reason.unwrap_or_else(|| r.lifecycle.to_string());
            let mut e = RpcError::new(
                ErrorCode::SpawnFailed,
                format!("the fork did not start: {reason}"),
            );
            // Serializing a plain struct does not fail; without it the
            // error still says why, only not the screen.
            e.data = serde_json::to_value(SpawnFailedData {
                reason,
                exit_code: None,
                signal: None,
                screen: r.screen,
                session: None,
                cwd: None,
                transcript: None,
                transcript_bytes: None,
            })
            .ok();
            Err(ClientError::Rpc(e))
        }
    }
}
