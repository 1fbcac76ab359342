//! `ccd attach`: the one safe thing for whatever state the session is in.

use super::attached::{attach_and_report, report_error};
use crate::cli::{AttachArgs, GlobalArgs};
use crate::settings::Settings;
use crate::shared::terminal::{parse_detach_key, require_terminal};
use crate::term::{AttachExtra, Mode};
use std::process::ExitCode;

pub fn run(global: &GlobalArgs, args: &AttachArgs) -> anyhow::Result<ExitCode> {
    // The config file, read once, when a flag leaves something to it.
    let settings = if args.key.detach_key.is_none() || !args.fresh_on_failure {
        Some(Settings::load(global.config.as_deref())?)
    } else {
        None
    };
    let key = parse_detach_key(
        args.key
            .detach_key
            .clone()
            .or_else(|| settings.as_ref().and_then(|s| s.detach_key.clone())),
    )?;
    require_terminal("ccd attach")?;
    // An archived conversation goes back where it was first.
    super::archive::restore_if_archived(global, &args.session)?;
    let fresh = args.fresh_on_failure
        || settings
            .as_ref()
            .and_then(|s| s.fresh_on_failure)
            .unwrap_or(false);
    let extra = AttachExtra {
        fresh_on_failure: fresh,
        last: None,
    };
    if args.fork {
        let mut client = crate::shared::connect::connect(global)?;
        let session = match super::fork::fork(&mut client, &args.session) {
            Ok(new) => new,
            Err(e) => return report_error(&args.session, &e),
        };
        return attach_and_report(global, client, &session, Mode::Interactive, key, extra);
    }
    let opening =
        crate::shared::connect::connect_attaching(global, &args.session, Mode::Interactive, extra)?;
    attach_and_report(
        global,
        opening,
        &args.session,
        Mode::Interactive,
        key,
        extra,
    )
}
