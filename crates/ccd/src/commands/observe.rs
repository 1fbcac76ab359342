//! `ccd observe`: read-only. A live mirror of a session ccd holds; for a
//! session running elsewhere, its transcript as it grows.

use super::attached::attach_and_report;
use crate::cli::{GlobalArgs, ObserveArgs};
use crate::shared::terminal::{detach_key, require_terminal};
use crate::term::{AttachExtra, Mode};
use std::process::ExitCode;

pub fn run(global: &GlobalArgs, args: &ObserveArgs) -> anyhow::Result<ExitCode> {
    let key = detach_key(global, &args.key)?;
    require_terminal("ccd observe")?;
    let extra = AttachExtra {
        fresh_on_failure: false,
        last: Some(u32::try_from(args.last).unwrap_or(u32::MAX)),
    };
    let opening =
        crate::shared::connect::connect_attaching(global, &args.session, Mode::Observe, extra)?;
    attach_and_report(global, opening, &args.session, Mode::Observe, key, extra)
}
