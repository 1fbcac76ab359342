//! `ccd`: the user-facing binary. Every command but `ls` talks to the daemon
//! through the same socket API editors use; `ccd daemon` is the daemon.

// Unsafe code only where an item allows it, with its reason
// (docs/architecture.md, "Unsafe code").
#![deny(unsafe_code)]

mod cli;
mod commands;
mod hosts;
mod logging;
mod settings;
mod shared;
mod term;
mod ui;

use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    let _ = ui::app::STARTED.set(std::time::Instant::now());
    let args = match cli::Cli::parse_args() {
        Ok(args) => args,
        Err(e) => return usage_error(e),
    };
    match run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("ccd: {}", ccd_claude::display::line(&chain(&e)));
            ExitCode::FAILURE
        }
    }
}

/// The dashboard for `ccd ui` (and `ccd` alone on a terminal), else the
/// subcommand named. Nothing may write on the dashboard's screen: no log
/// on stderr; its machines are `--host` (several), resolved by the
/// dashboard.
fn run(args: cli::Cli) -> anyhow::Result<ExitCode> {
    match &args.command {
        Some(cli::Command::Ui { key }) => ui::app::run(&args.global, key),
        None if shared::terminal::on_terminal() => {
            let key = cli::DetachKeyArg { detach_key: None };
            ui::app::run(&args.global, &key)
        }
        _ => commands::run(args),
    }
}

/// Prints what clap says about the command line and returns its exit code
/// (0 for `--help` and `--version`, 2 for a usage error).
///
/// An error quotes what was typed (an unknown subcommand, a bad value: any
/// bytes, escape sequences, bidi controls and line breaks included). Each
/// quoted value goes through [`ccd_claude::display::line`] first, so clap
/// still lays the message out and colours it as it would; a message that
/// still holds a control (clap's own text never does) is printed plain
/// through [`ccd_claude::display::text`].
fn usage_error(mut e: clap::Error) -> ExitCode {
    let code = ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
    defuse_context(&mut e);
    // `render()` shown with `Display` is the text without styles.
    let plain = e.render().to_string();
    if plain
        .chars()
        .any(|c| c != '\n' && ccd_claude::display::is_unsafe(c))
    {
        let text = ccd_claude::display::text(&plain);
        let _ = if e.use_stderr() {
            write!(std::io::stderr().lock(), "{text}")
        } else {
            write!(std::io::stdout().lock(), "{text}")
        };
    } else {
        let _ = e.print();
    }
    code
}

/// The values a clap error quotes, each made one safe line.
fn defuse_context(e: &mut clap::Error) {
    use clap::error::{ContextKind, ContextValue};
    use std::borrow::Cow;
    let changed = |s: &str| match ccd_claude::display::line(s) {
        Cow::Owned(o) => Some(o),
        Cow::Borrowed(_) => None,
    };
    let fixed: Vec<_> = e
        .context()
        // The usage line is ccd's own (and may span lines).
        .filter(|(kind, _)| *kind != ContextKind::Usage)
        .filter_map(|(kind, value)| {
            let value = match value {
                ContextValue::String(s) => ContextValue::String(changed(s)?),
                ContextValue::Strings(v) => {
                    if v.iter().all(|s| changed(s).is_none()) {
                        return None;
                    }
                    ContextValue::Strings(
                        v.iter()
                            .map(|s| ccd_claude::display::line(s).into_owned())
                            .collect(),
                    )
                }
                ContextValue::StyledStr(s) => {
                    ContextValue::StyledStr(changed(&s.to_string())?.into())
                }
                ContextValue::StyledStrs(v) => {
                    if v.iter().all(|s| changed(&s.to_string()).is_none()) {
                        return None;
                    }
                    ContextValue::StyledStrs(
                        v.iter()
                            .map(|s| {
                                ccd_claude::display::line(&s.to_string())
                                    .into_owned()
                                    .into()
                            })
                            .collect(),
                    )
                }
                _ => return None,
            };
            Some((kind, value))
        })
        .collect();
    for (kind, value) in fixed {
        e.insert(kind, value);
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
