//! `ccd attach`: the one safe thing for whatever state the session is in.

use super::attached::{attach_and_report, detach_key, report_error, require_terminal};
use crate::cli::{AttachArgs, GlobalArgs};
use crate::settings::Settings;
use crate::term::{AttachExtra, Mode};
use std::process::ExitCode;

pub fn run(global: &GlobalArgs, args: &AttachArgs) -> anyhow::Result<ExitCode> {
    let key = detach_key(global, &args.key)?;
    require_terminal("ccd attach")?;
    let mut client = super::connect(global)?;
    let mut session = args.session.clone();
    if args.fork {
        match super::fork::fork(&mut client, &args.session) {
            Ok(new) => session = new,
            Err(e) => return report_error(&args.session, &e),
        }
    }
    let fresh = args.fresh_on_failure
        || Settings::load(global.config.as_deref())?
            .fresh_on_failure
            .unwrap_or(false);
    attach_and_report(
        global,
        client,
        &session,
        Mode::Interactive,
        key,
        AttachExtra {
            fresh_on_failure: fresh,
            last: None,
        },
    )
}
