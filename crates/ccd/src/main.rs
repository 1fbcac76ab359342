//! `ccd`: the user-facing binary (client, and later the daemon).

mod cli;
mod commands;
mod settings;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    init_tracing();
    match commands::run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("ccd: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Diagnostics go to stderr, filtered by `CCD_LOG` (default: warnings).
fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("CCD_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}
