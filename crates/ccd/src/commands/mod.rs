//! One module per subcommand, and [`run`], which picks it (the dashboard,
//! `ccd ui`, is `main`'s: nothing here imports `ui/`). What they share
//! with the dashboard is in `shared/`.

mod archive;
mod attach;
pub mod attached;
mod daemon;
mod dial_stdio;
mod doctor;
mod events;
mod fork;
mod holder;
mod kill;
pub mod ls;
mod new;
mod notify;
mod observe;
mod respond;
mod restore;
mod screen;
mod search;
mod send;
mod service;
mod status;
mod trim;
mod usage;
mod wait;
mod web;

use crate::cli::{Cli, Command, GlobalArgs};
use ccd_protocol::methods::session::RespondChoice;
use std::process::ExitCode;

pub fn run(mut cli: Cli) -> anyhow::Result<ExitCode> {
    let command = match cli.command.take() {
        Some(c) => c,
        // `ccd` alone on a terminal (the dashboard) is `main`'s.
        None => {
            use clap::CommandFactory;
            Cli::command().print_help()?;
            return Ok(ExitCode::from(2));
        }
    };
    match command {
        Command::Holder => holder::run(),
        Command::Daemon(args) => {
            if args.action.is_some() {
                cli.global.targets = crate::hosts::resolve(&cli.global)?;
                crate::hosts::single(&cli.global)?;
            } else {
                this_machine_only(&cli.global, "ccd daemon")?;
            }
            daemon::run(&cli.global, &args)
        }
        Command::Service(args) => {
            crate::logging::init_client();
            this_machine_only(&cli.global, "ccd service")?;
            service::run(&cli.global, &args)
        }
        Command::DialStdio => {
            crate::logging::init_client();
            this_machine_only(&cli.global, "ccd dial-stdio")?;
            dial_stdio::run(&cli.global)
        }
        Command::Ui { .. } => anyhow::bail!("the dashboard is started by `main`"),
        Command::Web(args) => web::run(&cli.global, &args),
        mut other => {
            crate::logging::init_client();
            // `HOST:session` names the host with the id when no --host did.
            if let Some(session) = session_mut(&mut other) {
                if let Some((host, rest)) = crate::hosts::split_session(&cli.global, session)? {
                    cli.global.hosts = vec![host];
                    *session = rest;
                }
            }
            cli.global.targets = crate::hosts::resolve(&cli.global)?;
            // `ls`, `status` and `usage` take several machines.
            if !matches!(
                other,
                Command::Ls(_)
                    | Command::Status(_)
                    | Command::Notify(_)
                    | Command::Usage(_)
                    | Command::Search(_)
            ) {
                crate::hosts::single(&cli.global)?;
            }
            match other {
                Command::Ls(args) => ls::run(&cli.global, &args),
                Command::Search(args) => search::run(&cli.global, &args),
                Command::Usage(args) => usage::run(&cli.global, &args),
                Command::Attach(args) => attach::run(&cli.global, &args),
                Command::Fork(args) => fork::run(&cli.global, &args),
                Command::Observe(args) => observe::run(&cli.global, &args),
                Command::Send(args) => send::run(&cli.global, &args),
                Command::Doctor { json, sample } => {
                    if let Some(r) = crate::hosts::single(&cli.global)?.remote() {
                        anyhow::bail!(
                            "ccd doctor checks this machine only; run it there: ssh {} {} doctor",
                            r.target.host,
                            r.remote_ccd
                        );
                    }
                    doctor::run(&cli.global, json, sample)
                }
                Command::Approve { target, always } => {
                    let choice = if always {
                        RespondChoice::Always
                    } else {
                        RespondChoice::Yes
                    };
                    respond::run(&cli.global, &target, choice, None)
                }
                Command::Deny { target, message } => {
                    respond::run(&cli.global, &target, RespondChoice::No, message)
                }
                Command::Pin { session } => send::pin(&cli.global, &session, true),
                Command::Unpin { session } => send::pin(&cli.global, &session, false),
                Command::Events(args) => events::run(&cli.global, &args),
                Command::Wait(args) => wait::run(&cli.global, &args),
                Command::Status(args) => status::run(&cli.global, &args),
                Command::Notify(args) => notify::run(&cli.global, &args),
                Command::Completions { shell } => {
                    use clap::CommandFactory;
                    let mut cmd = Cli::command();
                    clap_complete::generate(shell, &mut cmd, "ccd", &mut std::io::stdout());
                    Ok(ExitCode::SUCCESS)
                }
                Command::New(args) => new::run(&cli.global, &args),
                Command::Kill(args) => kill::run(&cli.global, &args),
                Command::Restore { sessions, json } => restore::run(&cli.global, &sessions, json),
                Command::Screen(args) => screen::run(&cli.global, &args),
                Command::Trim(args) => trim::run(&cli.global, &args),
                Command::Archive(args) => archive::run(&cli.global, &args),
                Command::Daemon(_)
                | Command::Holder
                | Command::DialStdio
                | Command::Service(_)
                | Command::Ui { .. }
                | Command::Web(_) => {
                    unreachable!("handled above")
                }
            }
        }
    }
}

/// The session argument of a command that takes one.
fn session_mut(cmd: &mut Command) -> Option<&mut String> {
    match cmd {
        Command::Attach(a) => Some(&mut a.session),
        Command::Fork(a) => Some(&mut a.session),
        Command::Observe(a) => Some(&mut a.session),
        Command::Send(a) => Some(&mut a.session),
        Command::Approve { target, .. } | Command::Deny { target, .. } => Some(&mut target.session),
        Command::Pin { session } | Command::Unpin { session } => Some(session),
        Command::Kill(a) => Some(&mut a.session),
        Command::Screen(a) => Some(&mut a.session),
        Command::Trim(a) => Some(&mut a.session),
        Command::Wait(a) => Some(&mut a.session),
        _ => None,
    }
}

/// Refuses `--host` / `$CCD_HOST` naming another machine for a command
/// that is about this one.
fn this_machine_only(global: &GlobalArgs, what: &str) -> anyhow::Result<()> {
    let targets = crate::hosts::resolve(global)?;
    if let Some(r) = targets.iter().find_map(|t| t.remote()) {
        anyhow::bail!(
            "{what} runs on this machine only (--host {} was given); run it there through ssh",
            ccd_claude::display::line(&r.label)
        );
    }
    Ok(())
}

/// `ccd archive --older-than`'s value (`25d`, `36h`, `2w`).
pub fn archive_age(s: &str) -> Result<std::time::Duration, String> {
    archive::parse_age(s)
}
