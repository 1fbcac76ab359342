//! `ccd screen`: the current screen of a session ccd holds.

use crate::cli::{GlobalArgs, ScreenArgs};
use ccd_claude::display::line;
use ccd_protocol::methods::session::{ScreenFormat, ScreenParams, SessionScreen};
use std::io::Write;
use std::process::ExitCode;

pub fn run(global: &GlobalArgs, args: &ScreenArgs) -> anyhow::Result<ExitCode> {
    let mut c = crate::shared::connect::connect(global)?;
    let format = if args.ansi {
        ScreenFormat::Ansi
    } else {
        ScreenFormat::Text
    };
    let r = match c.call::<SessionScreen>(&ScreenParams {
        session: args.session.clone(),
        format,
    }) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("ccd screen: {}", line(&e.to_string()));
            return Ok(ExitCode::FAILURE);
        }
    };
    let mut out = std::io::stdout().lock();
    if args.ansi {
        if let Some(bytes) = &r.data {
            out.write_all(bytes)?;
            writeln!(out, "\x1b[0m")?;
            return Ok(ExitCode::SUCCESS);
        }
    }
    let rows = r.lines.unwrap_or_default();
    let last = rows
        .iter()
        .rposition(|l| !l.is_empty())
        .map(|i| i + 1)
        .unwrap_or(0);
    // `--ansi` is the screen's own bytes, by request; text rows are made
    // safe to print.
    for l in &rows[..last] {
        writeln!(out, "{}", line(l))?;
    }
    Ok(ExitCode::SUCCESS)
}
