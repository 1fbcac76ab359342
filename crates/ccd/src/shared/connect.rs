//! How a command or the dashboard reaches a machine's daemon: the local
//! socket (starting a daemon with this invocation's options when none
//! answers, or only one already running), or another machine's through
//! ssh (`--host`); and the client name sent in `hello`. Each call blocks
//! until connected or its deadline passes (`ccd_client::deadline`).

use crate::cli::GlobalArgs;
use ccd_client::{
    connect_or_start, connect_or_start_sending, Client, ClientError, DaemonCommand, SocketDir,
};
use ccd_protocol::methods::attach::SessionAttach;

/// The client name sent in `hello`.
pub const CLIENT_NAME: &str = concat!("ccd-cli/", env!("CARGO_PKG_VERSION"));

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
pub fn local_daemon(global: &GlobalArgs) -> anyhow::Result<(SocketDir, DaemonCommand)> {
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

/// [`connect_existing_local`] with a call of `M` sent right behind
/// `hello`, in the same write (one round trip: `ccd search` asking a
/// running daemon); its reply is read with [`Client::wait_sent`].
/// `Ok(None)` when no daemon answers (the call was never served).
pub fn sending_existing_local<M: ccd_protocol::Method>(
    global: &GlobalArgs,
    params: &M::Params,
) -> Result<Option<(Client, ccd_client::Sent)>, ClientError> {
    let dir = SocketDir::resolve(global.socket_dir.as_deref());
    Client::connect_if_running_sending::<M>(&dir, CLIENT_NAME, params)
}
