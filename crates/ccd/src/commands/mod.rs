//! One module per subcommand.

mod attach;
pub mod attached;
mod daemon;
mod doctor;
mod events;
mod fork;
mod holder;
mod kill;
pub mod ls;
mod new;
mod observe;
mod respond;
mod screen;
mod send;

use crate::cli::{Cli, Command, GlobalArgs};
use ccd_client::{connect_or_start, Client, ClientError, DaemonCommand, SocketDir};
use ccd_protocol::methods::session::RespondChoice;
use std::process::ExitCode;

pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let command = match cli.command {
        Some(c) => c,
        None if crate::ui::app::on_terminal() => Command::Ui {
            key: crate::cli::DetachKeyArg { detach_key: None },
        },
        None => {
            use clap::CommandFactory;
            Cli::command().print_help()?;
            return Ok(ExitCode::from(2));
        }
    };
    match command {
        // Nothing may write on the dashboard's screen: no log on stderr.
        Command::Ui { key } => crate::ui::app::run(&cli.global, &key),
        Command::Daemon(args) => daemon::run(&cli.global, &args),
        Command::Holder => holder::run(),
        other => {
            crate::logging::init_client();
            match other {
                Command::Ls(args) => ls::run(&cli.global, &args),
                Command::Attach(args) => attach::run(&cli.global, &args),
                Command::Fork(args) => fork::run(&cli.global, &args),
                Command::Observe(args) => observe::run(&cli.global, &args),
                Command::Send(args) => send::run(&cli.global, &args),
                Command::Doctor { json, sample } => doctor::run(&cli.global, json, sample),
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
                Command::Completions { shell } => {
                    use clap::CommandFactory;
                    let mut cmd = Cli::command();
                    clap_complete::generate(shell, &mut cmd, "ccd", &mut std::io::stdout());
                    Ok(ExitCode::SUCCESS)
                }
                Command::New(args) => new::run(&cli.global, &args),
                Command::Kill(args) => kill::run(&cli.global, &args),
                Command::Screen(args) => screen::run(&cli.global, &args),
                Command::Daemon(_) | Command::Holder | Command::Ui { .. } => {
                    unreachable!("handled above")
                }
            }
        }
    }
}

/// The client name sent in `hello`.
pub const CLIENT_NAME: &str = concat!("ccd-cli/", env!("CARGO_PKG_VERSION"));

/// Connects to the daemon, starting one (with this invocation's options)
/// when none answers.
pub fn connect(global: &GlobalArgs) -> anyhow::Result<Client> {
    let dir = SocketDir::resolve(global.socket_dir.as_deref());
    let mut args: Vec<std::ffi::OsString> = vec!["daemon".into(), "--background".into()];
    args.push("--socket-dir".into());
    args.push(dir.path().into());
    if let Some(c) = &global.claude_config_dir {
        args.push("--claude-config-dir".into());
        args.push(c.into());
    }
    if let Some(c) = &global.config {
        args.push("--config".into());
        args.push(c.into());
    }
    if let Some(c) = &global.claude_bin {
        args.push("--claude-bin".into());
        args.push(c.into());
    }
    let cmd = DaemonCommand {
        program: std::env::current_exe()?,
        args,
    };
    Ok(connect_or_start(&dir, &cmd, CLIENT_NAME)?)
}

/// Connects only if a daemon is already running: `Ok(None)` when none
/// answers. A socket directory or socket that is not private is an error
/// (`ClientError::SocketDir(SocketDirError::NotPrivate)`), never "no daemon".
pub fn connect_existing(global: &GlobalArgs) -> Result<Option<Client>, ClientError> {
    let dir = SocketDir::resolve(global.socket_dir.as_deref());
    Client::connect_if_running(&dir, CLIENT_NAME)
}

/// The first 8 characters of a session id.
pub fn short_id(sid: &str) -> &str {
    sid.get(..8).unwrap_or(sid)
}
