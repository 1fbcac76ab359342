//! `ccd fork`: branch a session into a new one, then attach to it.

use super::attached::{attach_and_report, detach_key, report_error, require_terminal};
use crate::cli::{ForkArgs, GlobalArgs};
use crate::term::Mode;
use ccd_claude::display::line;
use ccd_client::{Client, ClientError};
use serde_json::{json, Value};
use std::process::ExitCode;

pub fn run(global: &GlobalArgs, args: &ForkArgs) -> anyhow::Result<ExitCode> {
    let key = detach_key(global, &args.key)?;
    if !args.detach {
        require_terminal("ccd fork (without --detach)")?;
    }
    let mut client = super::connect(global)?;
    let new = match fork(&mut client, &args.session) {
        Ok(n) => n,
        Err(e) => return report_error(&args.session, &e),
    };
    println!("{}", line(&new));
    if args.detach {
        return Ok(ExitCode::SUCCESS);
    }
    attach_and_report(global, client, &new, Mode::Interactive, key, json!({}))
}

/// Forks `session` and returns the new session id.
pub fn fork(client: &mut Client, session: &str) -> Result<String, ClientError> {
    eprintln!("ccd: forking {}…", line(session));
    let r = client.call_value_with("session.fork", json!({"session": session}), &mut |_| {})?;
    match (r["session"].as_str(), r["lifecycle"].as_str()) {
        (Some(s), Some(l)) if !matches!(l, "failed" | "exited" | "needs-attention") => {
            eprintln!(
                "ccd: forked {} into {}",
                line(r["forked_from"].as_str().unwrap_or(session)),
                line(s)
            );
            Ok(s.to_string())
        }
        _ => Err(ClientError::Rpc(
            ccd_protocol::RpcError::new(
                ccd_protocol::ErrorCode::SpawnFailed,
                format!(
                    "the fork did not start: {}",
                    r["reason"]
                        .as_str()
                        .unwrap_or(r["lifecycle"].as_str().unwrap_or("?"))
                ),
            )
            .with_data(json!({"screen": r.get("screen").cloned().unwrap_or(Value::Null)})),
        )),
    }
}
