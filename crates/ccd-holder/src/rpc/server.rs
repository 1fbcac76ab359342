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
//! [`SPARES`] waiting); a
//! connection beyond them gets one error line and is closed. An `accept`
//! that fails for want of descriptors (or memory) pauses the loop, 50 ms
//! doubling to 1 s, and is logged once per run of failures, not per
//! failure ([`crate::accept`]). The stop waits at most [`STOP_GRACE`]
//! for the connections to end ([`Registry::stop`]).

use std::collections::HashMap;
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::accept::{classify_accept_error, AcceptAction, Backoff};
use crate::session::{Session, IDLE_SAFETY};

/// The most connections a holder serves at once. The daemon keeps two per
/// holder (`holder.info`, input/resize), one per attachment and one per
/// direct stream, and opens a few short-lived ones (screen, kill,
/// collect): 64 leaves room for dozens of attached terminals while a
/// flood of connections costs the holder at most 64 threads (+ 64 pumps)
/// and 64 descriptors.
pub const MAX_CONNECTIONS: usize = 64;

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

/// Sent (best effort) to a connection refused beyond [`MAX_CONNECTIONS`].
fn refusal_line() -> Vec<u8> {
    let e = ccd_protocol::RpcError::internal(format!(
        "the holder serves at most {MAX_CONNECTIONS} connections; try again later"
    ))
    .with_data(serde_json::json!({"reason": "too_many_connections", "limit": MAX_CONNECTIONS}));
    ccd_protocol::encode(&ccd_protocol::Response::error(None, e)).unwrap_or_default()
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

/// The uid of the process at the other end of `stream`.
fn peer_uid(stream: &UnixStream) -> io::Result<u32> {
    // SAFETY: zeroed ucred is a valid out-parameter; len matches its size.
    let mut cred: libc::ucred = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: valid fd, pointer and length.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            std::ptr::addr_of_mut!(cred).cast(),
            &mut len,
        )
    };
    if rc == 0 {
        Ok(cred.uid)
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Wait until the listener is readable or a stop is requested; true if a
/// connection may be waiting. With the stop's pipe there is no timeout:
/// both are descriptors, and poll cannot miss a level that is already
/// there. Without it (no pipe could be made), the stop flag is looked at
/// every [`IDLE_SAFETY`].
fn wait_for_connection(listener: &UnixListener, session: &Session) -> bool {
    let stop = session.stop_fd().map(|fd| fd.as_raw_fd());
    let mut fds = [
        libc::pollfd {
            fd: listener.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
        // A negative fd is ignored by poll.
        libc::pollfd {
            fd: stop.unwrap_or(-1),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    let ms = match stop {
        Some(_) => -1,
        None => i32::try_from(IDLE_SAFETY.as_millis()).unwrap_or(i32::MAX),
    };
    // SAFETY: two valid pollfd entries.
    let rc = unsafe { libc::poll(fds.as_mut_ptr(), 2, ms) };
    rc > 0 && fds[0].revents != 0
}

/// Accept connections until the session is asked to stop.
pub fn accept_loop(session: &Arc<Session>, listener: &UnixListener) -> anyhow::Result<()> {
    listener
        .set_nonblocking(true)
        .context("listener nonblocking")?;
    // SAFETY: getuid cannot fail.
    let my_uid = unsafe { libc::getuid() };
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
        let open = conns.lock().len();
        if open >= MAX_CONNECTIONS {
            // Best effort: a fresh socket's buffer takes one short line.
            let _ = stream.set_nonblocking(true);
            let _ = (&stream).write_all(&refusal_line());
            if refused == 0 {
                tracing::warn!(
                    limit = MAX_CONNECTIONS,
                    "connection refused: too many connections (logged once per run of refusals)"
                );
            }
            refused += 1;
            continue;
        }
        if refused > 0 {
            tracing::info!(refused, "accepting connections again");
            refused = 0;
        }
        match peer_uid(&stream) {
            Ok(uid) if uid == my_uid => {}
            Ok(uid) => {
                tracing::warn!(uid, "connection from another uid refused");
                continue;
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot read peer credentials; connection refused");
                continue;
            }
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
                while let Some((id, stream)) = job.take() {
                    super::conn::handle(&s, stream);
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
