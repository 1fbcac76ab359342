//! `ccd`: the user-facing binary. Every command but `ls` talks to the daemon
//! through the same socket API editors use; `ccd daemon` is the daemon.

mod cli;
mod commands;
mod logging;
mod settings;
mod term;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    match commands::run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("ccd: {}", ccd_claude::display::line(&format!("{e:#}")));
            ExitCode::FAILURE
        }
    }
}
