//! Connect to the daemon, starting one first when none answers.
//!
//! Racing clients start exactly one daemon: the starter holds an exclusive
//! lock on `start.lock` in the socket directory from its second connection
//! attempt until the new daemon answers, and every client tries to connect
//! again once it holds the lock. (The daemon's own lock on `daemon.lock`
//! guards the single instance independently.)
//!
//! A socket directory or socket that is not private stops it at once with
//! [`SocketDirError::NotPrivate`](crate::SocketDirError::NotPrivate): no
//! daemon is started around it and nothing is repaired.

use crate::client::{Client, ClientError, Sent};
use crate::socket_dir::SocketDir;
use ccd_protocol::Method;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How to start a daemon in the background.
#[derive(Debug, Clone)]
pub struct DaemonCommand {
    pub program: PathBuf,
    pub args: Vec<OsString>,
}

/// How long a client waits for a daemon it started.
pub const START_TIMEOUT: Duration = Duration::from_secs(10);

/// Connects to the daemon of `dir`, starting it with `cmd` if none answers.
pub fn connect_or_start(
    dir: &SocketDir,
    cmd: &DaemonCommand,
    client_name: &str,
) -> Result<Client, ClientError> {
    start_and(dir, cmd, || Client::connect(dir, client_name))
}

/// [`connect_or_start`] with a call of `M` sent right behind `hello`
/// ([`Client::connect_sending`]): on every attempt, so the daemon that
/// answers is the one that serves it (one that did not answer `hello`
/// never served it).
pub fn connect_or_start_sending<M: Method>(
    dir: &SocketDir,
    cmd: &DaemonCommand,
    client_name: &str,
    params: &M::Params,
) -> Result<(Client, Sent), ClientError> {
    start_and(dir, cmd, || {
        Client::connect_sending::<M>(dir, client_name, params)
    })
}

/// Connects with `connect`, starting a daemon with `cmd` first if none
/// answers.
fn start_and<T>(
    dir: &SocketDir,
    cmd: &DaemonCommand,
    connect: impl Fn() -> Result<T, ClientError>,
) -> Result<T, ClientError> {
    if let Some(c) = attempt(&connect)? {
        return Ok(c);
    }
    dir.create_private()?;
    let lock_file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.start_lock())?;
    let _lock = lock_exclusive(lock_file, START_TIMEOUT)?;
    // Someone may have started it while we waited for the lock.
    if let Some(c) = attempt(&connect)? {
        return Ok(c);
    }
    tracing::debug!(program = %cmd.program.display(), "starting the ccd daemon");
    let mut command = Command::new(&cmd.program);
    command
        .args(&cmd.args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // Its own session: the daemon outlives this terminal.
    #[cfg(unix)]
    ccd_sched::session::own_session(&mut command, None);
    let mut child = command
        .spawn()
        .map_err(|e| ClientError::Start(format!("{}: {e}", cmd.program.display())))?;
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if let Some(c) = attempt(&connect)? {
            // Reap the daemon if it ever exits while we live.
            std::thread::spawn(move || {
                let _ = child.wait();
            });
            return Ok(c);
        }
        if let Some(status) = child.try_wait()? {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                use std::io::Read;
                let _ = e.read_to_string(&mut err);
            }
            let err = err.trim();
            return Err(ClientError::Start(if err.is_empty() {
                format!("the daemon exited with {status}")
            } else {
                err.to_string()
            }));
        }
        if Instant::now() >= deadline {
            return Err(ClientError::Start(format!(
                "no answer on {} after {:?}",
                dir.socket().display(),
                START_TIMEOUT
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One connection attempt: a directory or socket that is not private is
/// an error (nothing is started around it, nothing repaired), and so is a
/// daemon that accepts but does not answer (stopped, stuck: starting
/// another beside it would fail on its lock); any other failure is "not
/// yet" (`None`).
fn attempt<T>(connect: &impl Fn() -> Result<T, ClientError>) -> Result<Option<T>, ClientError> {
    match connect() {
        Ok(c) => Ok(Some(c)),
        Err(e) if e.not_private().is_some() || e.not_answering().is_some() => Err(e),
        Err(_) => Ok(None),
    }
}

fn lock_exclusive(
    file: std::fs::File,
    timeout: Duration,
) -> Result<nix::fcntl::Flock<std::fs::File>, ClientError> {
    let deadline = Instant::now() + timeout;
    let mut file = file;
    loop {
        match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock) {
            Ok(l) => return Ok(l),
            Err((f, nix::errno::Errno::EWOULDBLOCK)) if Instant::now() < deadline => {
                file = f;
                std::thread::sleep(Duration::from_millis(20));
            }
            Err((_, e)) => return Err(ClientError::Start(format!("start lock: {e}"))),
        }
    }
}
