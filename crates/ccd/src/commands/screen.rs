//! `ccd screen`: the current screen of a session ccd holds.

use crate::cli::{GlobalArgs, ScreenArgs};
use ccd_claude::display::line;
use serde_json::{json, Value};
use std::io::Write;
use std::process::ExitCode;

pub fn run(global: &GlobalArgs, args: &ScreenArgs) -> anyhow::Result<ExitCode> {
    let mut c = super::connect(global)?;
    let fmt = if args.ansi { "ansi" } else { "text" };
    let r = match c.call_value(
        "session.screen",
        json!({"session": args.session, "format": fmt}),
    ) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("ccd screen: {}", line(&e.to_string()));
            return Ok(ExitCode::FAILURE);
        }
    };
    let mut out = std::io::stdout().lock();
    if args.ansi {
        if let Some(data) = r["data"].as_str() {
            let bytes = ccd_protocol::b64::decode(data).unwrap_or_default();
            out.write_all(&bytes)?;
            writeln!(out, "\x1b[0m")?;
            return Ok(ExitCode::SUCCESS);
        }
    }
    let rows: Vec<&str> = r["lines"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
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
