//! The holder's socket: bind (0600), accept (peer uid checked), one thread
//! per connection ([`super::conn`]).
//!
//! A connection thread whose connection ended waits for the next one
//! (at most [`SPARES`] wait): a new connection is handed to it instead of
//! a thread being started for it, which keeps the thread's start (about a
//! tenth of a millisecond, most of it on the attach path) out of the way
//! of an attach's first frame. A waiting thread sleeps until handed a
//! connection or the holder stops (no periodic wakeup but the
//! [`IDLE_SAFETY`] check).
//!
//! Bounds: at most [`MAX_CONNECTIONS`] connections (so at most that many
//! connection threads, plus one output pump per attached one, plus
//! [`SPARES`] waiting), the last [`DAEMON_RESERVE`] of them kept for the
//! daemon's ([`super::slots`]), which direct streams do not take (their
//! hello says what they are: [`super::conn`]); a connection beyond them
//! gets one error line and is closed. One that sends no request within
//! [`super::conn::HELLO_DEADLINE`] is closed by its thread. An `accept`
//! that fails for want of descriptors (or memory) pauses the loop, 50 ms
//! doubling to 1 s, and is logged at most once a minute, not per
//! failure ([`ccd_os::accept`]). The stop waits at most [`STOP_GRACE`]
//! for the connections to end ([`Registry::stop`]).

use std::collections::HashMap;
use std::io::{self, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use ccd_os::accept::{classify_accept_error, AcceptAction, Backoff};
use ccd_protocol::error_data::CapRefusedData;

use super::slots::{admit, Admission, DaemonLock};
use crate::session::{Session, IDLE_SAFETY};

pub use super::slots::{DAEMON_RESERVE, MAX_CONNECTIONS, MAX_OTHER_CONNECTIONS};

/// Connection threads kept waiting for a next connection (see the module
/// doc).
pub const SPARES: usize = 1;

/// A connection to serve: its stream and its id in the registry.
type Job = (u64, UnixStream);

/// How long the stop waits for connections to end after their read sides
/// are shut: a request being answered when the holder stops gets its
/// reply within it (a client that does not read its reply holds the stop
/// no longer than this).
pub const STOP_GRACE: Duration = Duration::from_secs(1);

/// A clone of every open connection, by id: it counts them for
/// [`MAX_CONNECTIONS`] and lets the stop shut them.
///
/// Invariant: a connection's thread removes it when it ends (and
/// notifies `ended`); the stop shuts every read side first, so a thread
/// answering a request writes its reply, reads the end and removes its
/// connection; only what is left after [`STOP_GRACE`] is shut both ways.
#[derive(Default)]
struct Registry {
    open: Mutex<HashMap<u64, UnixStream>>,
    ended: Condvar,
}

impl Registry {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, UnixStream>> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn remove(&self, id: u64) {
        self.lock().remove(&id);
        self.ended.notify_all();
    }

    /// Ends every connection: no further request is read, the ones being
    /// answered get their replies (within [`STOP_GRACE`]), then whatever
    /// is left is shut both ways.
    fn stop(&self) {
        let mut open = self.lock();
        for c in open.values() {
            let _ = c.shutdown(std::net::Shutdown::Read);
        }
        let deadline = Instant::now() + STOP_GRACE;
        while !open.is_empty() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                tracing::debug!(
                    connections = open.len(),
                    "connections still open after the stop's grace; shut"
                );
                break;
            }
            open = self
                .ended
                .wait_timeout(open, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        for c in std::mem::take(&mut *open).into_values() {
            let _ = c.shutdown(std::net::Shutdown::Both);
        }
    }
}

/// The connection threads waiting for a connection ([`SPARES`] at most).
///
/// Invariant: `waiting` counts the threads in [`Spares::wait`] that no
/// connection was handed to yet; [`Spares::hand`] gives a connection only
/// when one such thread exists and no handed connection is still
/// untaken, so every handed connection has a thread to take it.
#[derive(Default)]
struct Spares {
    state: Mutex<SpareState>,
    handed: Condvar,
}

#[derive(Default)]
struct SpareState {
    waiting: usize,
    job: Option<Job>,
    stopping: bool,
}

impl Spares {
    fn lock(&self) -> std::sync::MutexGuard<'_, SpareState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Hands `job` to a waiting thread; gives it back when none waits.
    fn hand(&self, job: Job) -> Option<Job> {
        let mut g = self.lock();
        if g.waiting == 0 || g.job.is_some() {
            return Some(job);
        }
        g.waiting -= 1;
        g.job = Some(job);
        drop(g);
        self.handed.notify_one();
        None
    }

    /// Waits for a connection, when fewer than [`SPARES`] threads wait;
    /// `None`: this thread ends (enough wait, or the holder stops).
    fn wait(&self, session: &Session) -> Option<Job> {
        let mut g = self.lock();
        if g.stopping || g.waiting >= SPARES {
            return None;
        }
        g.waiting += 1;
        loop {
            if let Some(job) = g.job.take() {
                return Some(job);
            }
            if g.stopping || session.stopping() {
                g.waiting -= 1;
                return None;
            }
            g = self
                .handed
                .wait_timeout(g, IDLE_SAFETY)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Ends every waiting thread.
    fn stop(&self) {
        self.lock().stopping = true;
        self.handed.notify_all();
    }
}

/// Sent (best effort) to a connection refused beyond [`MAX_CONNECTIONS`],
/// or beyond [`MAX_OTHER_CONNECTIONS`] when it is not the daemon's.
fn refusal_line(why: Admission) -> Vec<u8> {
    let (message, limit) = match why {
        Admission::Reserved => (
            format!(
                "the holder serves at most {MAX_OTHER_CONNECTIONS} connections besides the \
                 daemon's; try again later"
            ),
            MAX_OTHER_CONNECTIONS,
        ),
        _ => (
            format!("the holder serves at most {MAX_CONNECTIONS} connections; try again later"),
            MAX_CONNECTIONS,
        ),
    };
    let e = CapRefusedData::connections(limit).into_error(message);
    ccd_protocol::encode(&ccd_protocol::Response::error(None, e)).unwrap_or_default()
}

/// The reply to a direct stream's hello when the connections besides the
/// daemon's are taken ([`super::slots::admit_direct`]): the reason and
/// limit of [`refusal_line`]'s.
pub fn direct_refusal() -> ccd_protocol::RpcError {
    CapRefusedData::connections(MAX_OTHER_CONNECTIONS).into_error(format!(
        "the holder serves at most {MAX_OTHER_CONNECTIONS} connections besides the daemon's, \
         direct streams included; close one and try again"
    ))
}

/// Bind the holder socket at `path` with mode 0600. An existing socket is
/// replaced only if nothing answers on it.
pub fn bind(path: &Path) -> anyhow::Result<UnixListener> {
    if path.exists() {
        if UnixStream::connect(path).is_ok() {
            anyhow::bail!("{} is in use by a live holder", path.display());
        }
        std::fs::remove_file(path)
            .with_context(|| format!("removing stale socket {}", path.display()))?;
    }
    let listener =
        UnixListener::bind(path).with_context(|| format!("binding {}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .with_context(|| format!("chmod 0600 {}", path.display()))?;
    Ok(listener)
}

/// Wait until the listener is readable or a stop is requested; true if a
/// connection may be waiting. With the stop's pipe there is no timeout:
/// both are descriptors, and poll cannot miss a level that is already
/// there. Without it (no pipe could be made), the stop flag is looked at
/// every [`IDLE_SAFETY`].
fn wait_for_connection(listener: &UnixListener, session: &Session) -> bool {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let stop = session.stop_fd();
    let timeout = match stop {
        Some(_) => PollTimeout::NONE,
        None => PollTimeout::try_from(IDLE_SAFETY).unwrap_or(PollTimeout::MAX),
    };
    let listener = listener.as_fd();
    let mut fds = [
        PollFd::new(listener, PollFlags::POLLIN),
        // Not polled without a stop pipe (only the first entry is).
        PollFd::new(stop.unwrap_or(listener), PollFlags::POLLIN),
    ];
    let n = if stop.is_some() { 2 } else { 1 };
    let rc = poll(&mut fds[..n], timeout);
    rc.is_ok_and(|n| n > 0) && fds[0].any().unwrap_or(true)
}

/// Accept connections until the session is asked to stop; `daemon` says
/// which peer is the daemon (for the slots kept for it).
pub fn accept_loop(
    session: &Arc<Session>,
    listener: &UnixListener,
    daemon: &DaemonLock,
) -> anyhow::Result<()> {
    listener
        .set_nonblocking(true)
        .context("listener nonblocking")?;
    let my_uid = nix::unistd::getuid().as_raw();
    let conns = Arc::new(Registry::default());
    let spares = Arc::new(Spares::default());
    let mut next_id = 0u64;
    let mut backoff = Backoff::new("holder");
    // Refusals beyond the cap since the last one logged.
    let mut refused = 0u64;
    while !session.stopping() {
        if !wait_for_connection(listener, session) {
            continue;
        }
        let stream = match listener.accept() {
            Ok((s, _)) => s,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) => match classify_accept_error(&e) {
                AcceptAction::Retry => continue,
                AcceptAction::Pause => {
                    std::thread::sleep(backoff.failed(&e));
                    continue;
                }
                AcceptAction::Fatal => {
                    tracing::error!(error = %e, "the holder socket is unusable; no more connections");
                    break;
                }
            },
        };
        let peer = match ccd_socket_dir::peer::credentials(&stream) {
            Ok(p) if p.uid == my_uid => p,
            Ok(p) => {
                tracing::warn!(uid = p.uid, pid = ?p.pid, "connection from another uid refused");
                continue;
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot read peer credentials; connection refused");
                continue;
            }
        };
        // Only this loop adds connections, so the count holds until the
        // connection is registered below.
        let open = conns.lock().len();
        let admission = admit(open, || daemon.is_daemon(peer.pid));
        if admission != Admission::Serve {
            // Best effort: a fresh socket's buffer takes one short line.
            let _ = stream.set_nonblocking(true);
            let _ = (&stream).write_all(&refusal_line(admission));
            if refused == 0 {
                tracing::warn!(
                    limit = MAX_CONNECTIONS,
                    kept_for_the_daemon = DAEMON_RESERVE,
                    open,
                    pid = ?peer.pid,
                    "connection refused: too many connections (logged once per run of refusals)"
                );
            }
            refused += 1;
            continue;
        }
        // Served below the reserve: the run of refusals is over (the
        // daemon's connections served in the reserve do not end it).
        if refused > 0 && open < MAX_OTHER_CONNECTIONS {
            tracing::info!(refused, "accepting connections again");
            refused = 0;
        }
        if let Err(e) = stream.set_nonblocking(false) {
            tracing::warn!(error = %e, "connection setup failed");
            continue;
        }
        next_id += 1;
        let id = next_id;
        // The registry counts connections for the cap: one that cannot be
        // registered is not served.
        match stream.try_clone() {
            Ok(clone) => {
                conns.lock().insert(id, clone);
            }
            // Out of descriptors as well: closed, and a pause as for a
            // failed accept (else accept and close would alternate at
            // full speed).
            Err(e) => {
                std::thread::sleep(backoff.failed(&e));
                continue;
            }
        }
        backoff.succeeded();
        session.count_connection();
        let Some(job) = spares.hand((id, stream)) else {
            continue;
        };
        let s = Arc::clone(session);
        let registry = Arc::clone(&conns);
        let waiting = Arc::clone(&spares);
        let spawned = std::thread::Builder::new()
            .name("holder-conn".into())
            .spawn(move || {
                let mut job = Some(job);
                let open = || registry.lock().len();
                while let Some((id, stream)) = job.take() {
                    super::conn::handle(&s, stream, &open);
                    registry.remove(id);
                    job = waiting.wait(&s);
                }
            });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "cannot start a connection thread");
            conns.remove(id);
        }
    }
    spares.stop();
    conns.stop();
    Ok(())
}
