//! `ccd dial-stdio`: this machine's daemon socket on stdin/stdout, for a
//! ccd elsewhere that runs `ssh host -- ccd dial-stdio` (`--host`).
//!
//! The daemon is started first if none answers (as any client does); then
//! the bytes are copied both ways unchanged, so the client on the other
//! end says `hello` and speaks the protocol itself: one protocol, nothing
//! here decodes it. A stream asked over it is relayed by the daemon (the
//! remote client does not ask for `direct`: a descriptor cannot cross ssh).
//! End of stdin closes the sending direction to the daemon; the daemon
//! closing its side (or stdout failing: ssh gone) ends the process.

use crate::cli::GlobalArgs;
use ccd_client::deadline;
use ccd_client::{ClientError, SocketDir};
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::process::ExitCode;

/// The copy buffer of each direction.
const BUF: usize = 64 * 1024;

pub fn run(global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let dir = SocketDir::resolve(global.socket_dir.as_deref());
    let sock = match raw_connect(&dir) {
        Ok(s) => s,
        Err(_) => {
            // Start (or wait for) the daemon as any client would, then
            // connect again: this connection's `hello` is the peer's own.
            drop(crate::shared::connect::connect_local(global)?);
            raw_connect(&dir)?
        }
    };
    let stdin = std::fs::File::from(std::io::stdin().as_fd().try_clone_to_owned()?);
    let stdout = std::fs::File::from(std::io::stdout().as_fd().try_clone_to_owned()?);
    let to_daemon = sock.try_clone()?;
    std::thread::Builder::new()
        .name("dial-stdio-in".into())
        .spawn(move || {
            let r = copy(stdin, &to_daemon);
            tracing::debug!(result = ?r, "stdin ended");
            let _ = to_daemon.shutdown(std::net::Shutdown::Write);
        })?;
    let r = copy(&sock, stdout);
    tracing::debug!(result = ?r, "the daemon's side ended");
    Ok(ExitCode::SUCCESS)
}

/// Connects to the daemon's socket after the same privacy checks as every
/// client (`SocketDir::verify_with_socket`), without saying anything.
fn raw_connect(dir: &SocketDir) -> Result<UnixStream, ClientError> {
    dir.verify_with_socket()?;
    deadline::connect(&dir.socket(), deadline::CONNECT_TIMEOUT).map_err(|source| {
        ClientError::NotRunning {
            path: dir.socket().display().to_string(),
            source,
        }
    })
}

/// Copies until end of input or a failed write; each read is written at
/// once (no buffering: keystrokes are small and late ones matter).
fn copy(mut from: impl Read, mut to: impl Write) -> std::io::Result<u64> {
    let mut buf = vec![0u8; BUF];
    let mut total = 0u64;
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        to.write_all(&buf[..n])?;
        to.flush()?;
        total += n as u64;
    }
}
