//! `ccd`: the user-facing binary. Every command but `ls` talks to the daemon
//! through the same socket API editors use; `ccd daemon` is the daemon.

mod cli;
mod commands;
mod hosts;
mod logging;
mod settings;
mod term;
mod ui;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let _ = ui::app::STARTED.set(std::time::Instant::now());
    let args = cli::Cli::parse();
    match commands::run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("ccd: {}", ccd_claude::display::line(&chain(&e)));
            ExitCode::FAILURE
        }
    }
}

/// `e` and its causes, joined by ": ", each cause left out when the text
/// so far already ends with it (errors whose message quotes their source,
/// like "cannot check /x: Permission denied", would name it twice).
fn chain(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.ends_with(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_cause_quoted_by_its_error_is_named_once() {
        #[derive(Debug)]
        struct Check {
            source: std::io::Error,
        }
        impl std::fmt::Display for Check {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "cannot check /x: {}", self.source)
            }
        }
        impl std::error::Error for Check {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.source)
            }
        }
        let io = std::io::Error::from_raw_os_error(2);
        let e = anyhow::Error::new(Check { source: io }).context("starting");
        let text = super::chain(&e);
        assert_eq!(
            text.matches("No such file or directory").count(),
            1,
            "{text}"
        );
        assert!(text.starts_with("starting: cannot check /x: "), "{text}");
    }
}
