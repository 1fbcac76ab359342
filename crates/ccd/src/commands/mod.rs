//! One module per subcommand.

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
mod observe;
mod respond;
mod screen;
mod send;
mod trim;

use crate::cli::{Cli, Command, GlobalArgs};
use ccd_client::{
    connect_or_start, connect_or_start_sending, Client, ClientError, DaemonCommand, SocketDir,
};
use ccd_protocol::methods::attach::SessionAttach;
use ccd_protocol::methods::session::RespondChoice;
use std::process::ExitCode;

pub fn run(mut cli: Cli) -> anyhow::Result<ExitCode> {
    let command = match cli.command.take() {
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
        // Its machines are `--host` (several), resolved by the dashboard.
        Command::Ui { key } => crate::ui::app::run(&cli.global, &key),
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
        Command::DialStdio => {
            crate::logging::init_client();
            this_machine_only(&cli.global, "ccd dial-stdio")?;
            dial_stdio::run(&cli.global)
        }
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
            if !matches!(other, Command::Ls(_)) {
                crate::hosts::single(&cli.global)?;
            }
            match other {
                Command::Ls(args) => ls::run(&cli.global, &args),
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
                Command::Completions { shell } => {
                    use clap::CommandFactory;
                    let mut cmd = Cli::command();
                    clap_complete::generate(shell, &mut cmd, "ccd", &mut std::io::stdout());
                    Ok(ExitCode::SUCCESS)
                }
                Command::New(args) => new::run(&cli.global, &args),
                Command::Kill(args) => kill::run(&cli.global, &args),
                Command::Screen(args) => screen::run(&cli.global, &args),
                Command::Trim(args) => trim::run(&cli.global, &args),
                Command::Daemon(_) | Command::Holder | Command::DialStdio | Command::Ui { .. } => {
                    unreachable!("handled above")
                }
            }
        }
    }
}

/// The client name sent in `hello`.
pub const CLIENT_NAME: &str = concat!("ccd-cli/", env!("CARGO_PKG_VERSION"));

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

/// Connects to the daemon of the host this command names (`--host`):
/// through ssh for another machine, else the local one, starting it (with
/// this invocation's options) when none answers.
pub fn connect(global: &GlobalArgs) -> anyhow::Result<Client> {
    match crate::hosts::single(global)? {
        crate::hosts::Target::Remote(r) => Ok(ccd_client::ssh::connect(r, CLIENT_NAME)?),
        crate::hosts::Target::Local => connect_local(global),
    }
}

/// [`connect`] for an attachment to `session` in `mode`: on this machine,
/// its `session.attach` ([`crate::term::attach_params`]) goes out right
/// behind `hello`, in the same write (one round trip fewer before the
/// first frame); through ssh it is sent once connected.
pub fn connect_attaching(
    global: &GlobalArgs,
    session: &str,
    mode: crate::term::Mode,
    extra: crate::term::AttachExtra,
) -> anyhow::Result<crate::term::Opening> {
    match crate::hosts::single(global)? {
        crate::hosts::Target::Remote(r) => Ok(ccd_client::ssh::connect(r, CLIENT_NAME)?.into()),
        crate::hosts::Target::Local => {
            let (dir, cmd) = local_daemon(global)?;
            let params = crate::term::attach_params(session, mode, extra, false);
            let (client, sent) =
                connect_or_start_sending::<SessionAttach>(&dir, &cmd, CLIENT_NAME, &params)?;
            Ok(crate::term::Opening::Sent(client, sent))
        }
    }
}

/// Connects to this machine's daemon, starting one (with this
/// invocation's options) when none answers.
pub fn connect_local(global: &GlobalArgs) -> anyhow::Result<Client> {
    let (dir, cmd) = local_daemon(global)?;
    Ok(connect_or_start(&dir, &cmd, CLIENT_NAME)?)
}

/// This machine's socket directory, and how to start its daemon with this
/// invocation's options.
fn local_daemon(global: &GlobalArgs) -> anyhow::Result<(SocketDir, DaemonCommand)> {
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
    Ok((dir, cmd))
}

/// Connects only if a daemon is already running: `Ok(None)` when none
/// answers. A socket directory or socket that is not private is an error
/// (`ClientError::SocketDir(SocketDirError::NotPrivate)`), never "no daemon".
pub fn connect_existing(global: &GlobalArgs) -> Result<Option<Client>, ClientError> {
    // Another machine: its dial-stdio starts its daemon as needed.
    if let Ok(crate::hosts::Target::Remote(r)) = crate::hosts::single(global) {
        return ccd_client::ssh::connect(r, CLIENT_NAME).map(Some);
    }
    connect_existing_local(global)
}

/// [`connect_existing`] on this machine whatever `--host` says.
pub fn connect_existing_local(global: &GlobalArgs) -> Result<Option<Client>, ClientError> {
    let dir = SocketDir::resolve(global.socket_dir.as_deref());
    Client::connect_if_running(&dir, CLIENT_NAME)
}

/// The first 8 characters of a session id.
pub fn short_id(sid: &str) -> &str {
    sid.get(..8).unwrap_or(sid)
}
