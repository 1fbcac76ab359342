//! How long a client waits for the daemon (or a holder) before it says
//! that nobody is answering, and what it then says.
//!
//! A daemon stopped with SIGSTOP, stuck or overloaded still accepts
//! connections (the kernel queues them) but never answers: without a
//! deadline every command would wait forever, silently. Every wait of
//! [`Client`](crate::Client) is bounded:
//!
//! Each method declares its kind of wait on its type
//! (`ccd_protocol::Method::WAIT`, `Method::wait` when the params decide);
//! [`deadline`] turns a kind into a duration:
//!
//! | what | deadline |
//! |---|---|
//! | connecting and `hello` | [`CONNECT_TIMEOUT`] (3 s) |
//! | a plain call, a write | [`CALL_TIMEOUT`] (5 s) |
//! | `session.new` / `session.fork` with `wait`, `session.attach` (may resume) | [`START_TIMEOUT`] (100 s: the daemon's own 90 s start wait, plus margin) |
//! | `session.kill` | its grace (default 3 s) + 2 s collection + [`CALL_TIMEOUT`] |
//! | `session.send`, `daemon.stop` | [`SLOW_CALL_TIMEOUT`] (30 s) |
//! | `session.trim` (reads and writes a transcript of any size) | [`TRIM_TIMEOUT`] (10 min) |
//! | the holder's reply to a direct stream's attach | [`CALL_TIMEOUT`] |
//!
//! A deadline bounds the whole reply: every read of it, mid-line too
//! ([`crate::passed_fd::RecvStream::set_deadline`]), so a peer sending a
//! byte now and then cannot keep restarting the wait. Over ssh, `hello`
//! waits [`crate::ssh::SSH_CONNECT_TIMEOUT`] (20 s in `BatchMode`) for its
//! first bytes and [`crate::ssh::HELLO_REST`] for the rest.
//!
//! While waiting, the peer's process state is looked at every
//! [`STOPPED_CHECK`] (1 s): a stopped process ([`ccd_os::process::is_stopped`])
//! is reported at once, even during a long call. Once a stream is
//! attached nothing times out: a silent session is normal.

use ccd_protocol::methods::{MethodId, Wait};
use ccd_protocol::Method;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Connecting and `hello`.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// A plain call's reply (and any write).
pub const CALL_TIMEOUT: Duration = Duration::from_secs(5);
/// `session.send` (waits for the draft and the submit), `session.respond`
/// (moves through a dialog, maybe sends a message) and `daemon.stop`.
pub const SLOW_CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// A call that may start claude and wait for its prompt.
pub const START_TIMEOUT: Duration = Duration::from_secs(100);
/// `session.trim`: two passes over a transcript (about 2 s a GB measured
/// by `ccd-bench trim`; a slow disk gets a wide margin).
pub const TRIM_TIMEOUT: Duration = Duration::from_secs(600);
/// How often a waiting client checks whether its peer is stopped.
pub const STOPPED_CHECK: Duration = Duration::from_secs(1);

/// The deadline of a kind of wait (each method declares its kind:
/// `ccd_protocol::Method::WAIT` and `Method::wait`).
pub fn deadline(w: Wait) -> Duration {
    match w {
        Wait::Call => CALL_TIMEOUT,
        Wait::Slow => SLOW_CALL_TIMEOUT,
        Wait::Start => START_TIMEOUT,
        Wait::Trim => TRIM_TIMEOUT,
        // The grace, the daemon's collection (2 s), and a call's margin.
        Wait::Grace { ms } => Duration::from_millis(ms.saturating_add(2000)) + CALL_TIMEOUT,
    }
}

/// The deadline of a typed call of `M` with `params`.
pub fn deadline_for<M: Method>(params: &M::Params) -> Duration {
    deadline(M::wait(params))
}

/// The deadline of a call of `method` (by name) with `params`: as the
/// method's type declares it; a method this client does not know gets a
/// plain call's.
pub fn deadline_of(method: &str, params: &serde_json::Value) -> Duration {
    deadline(
        MethodId::from_name(method)
            .map(|m| m.wait(params))
            .unwrap_or(Wait::Call),
    )
}

/// Who did not answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    Daemon,
    /// A session's holder (a direct stream).
    Holder,
    /// A ccd on another machine, through ssh (`pid`: the local ssh).
    Remote,
}

/// A peer that did not answer in time: who (its pid when known), whether
/// it is stopped, what was asked and how long the client waited. Its
/// message says what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotAnswering {
    pub peer: Peer,
    pub pid: Option<u32>,
    /// The daemon's lock file the pid was read from.
    pub lock: Option<PathBuf>,
    /// The process was stopped (SIGSTOP, job control) when last checked.
    pub stopped: bool,
    /// What was waited for (`hello`, a method name, "the attach").
    pub during: String,
    pub waited: Duration,
    /// The remote host's name ([`Peer::Remote`]).
    pub host: Option<String>,
}

impl NotAnswering {
    /// The daemon of the socket at `socket`: its pid from `daemon.lock`
    /// next to it (else `peer_pid`), and its state now.
    pub fn daemon(socket: &Path, peer_pid: Option<u32>, during: &str, waited: Duration) -> Self {
        let lock = socket.parent().map(|d| d.join("daemon.lock"));
        let from_lock = lock
            .as_deref()
            .and_then(|l| std::fs::read_to_string(l).ok())
            .and_then(|s| s.trim().parse::<u32>().ok());
        let pid = from_lock.or(peer_pid);
        Self {
            peer: Peer::Daemon,
            pid,
            lock: lock.filter(|_| from_lock.is_some()),
            stopped: pid.is_some_and(is_stopped),
            during: during.to_string(),
            waited,
            host: None,
        }
    }

    /// The ccd of `host`, reached through the local ssh process `ssh_pid`.
    pub fn remote(host: &str, ssh_pid: Option<u32>, during: &str, waited: Duration) -> Self {
        Self {
            peer: Peer::Remote,
            pid: ssh_pid,
            lock: None,
            stopped: ssh_pid.is_some_and(is_stopped),
            during: during.to_string(),
            waited,
            host: Some(host.to_string()),
        }
    }

    /// A holder whose pid is `pid`.
    pub fn holder(pid: Option<u32>, during: &str, waited: Duration) -> Self {
        Self {
            peer: Peer::Holder,
            pid,
            lock: None,
            stopped: pid.is_some_and(is_stopped),
            during: during.to_string(),
            waited,
            host: None,
        }
    }
}

impl std::fmt::Display for NotAnswering {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let secs = format_secs(self.waited);
        let pid = self.pid.map(|p| p.to_string());
        let who = match (self.peer, &pid, &self.lock) {
            (Peer::Daemon, Some(p), Some(lock)) => {
                format!("the ccd daemon (pid {p}, from {})", lock.display())
            }
            (Peer::Daemon, Some(p), None) => format!("the ccd daemon (pid {p})"),
            (Peer::Daemon, None, _) => "the ccd daemon".to_string(),
            (Peer::Holder, Some(p), _) => format!("the session's ccd holder (pid {p})"),
            (Peer::Holder, None, _) => "the session's ccd holder".to_string(),
            (Peer::Remote, _, _) => format!(
                "the ccd on {}",
                self.host.as_deref().unwrap_or("the remote host")
            ),
        };
        let during = match self.during.as_str() {
            "" => "".to_string(),
            d if d.contains(' ') => format!(" {d}"),
            d => format!(" `{d}`"),
        };
        // A stopped peer is named as such at once: how long was waited says
        // nothing then (often nothing at all: the stop is seen first).
        if self.stopped && self.peer != Peer::Remote {
            write!(f, "{who} is stopped, so it cannot answer{during}")?;
        } else {
            write!(f, "{who} did not answer{during} within {secs}")?;
        }
        let p = pid.as_deref().unwrap_or("<pid>");
        match (self.peer, self.stopped) {
            (Peer::Daemon, true) => write!(
                f,
                " (process state T). Resume it with `kill -CONT {p}`, or end it with `kill {p}` (sessions keep running; the next ccd command starts a daemon that adopts them)"
            ),
            (Peer::Daemon, false) => write!(
                f,
                ": it is running but not answering (overloaded or stuck). Try again in a moment, or restart it: `ccd daemon stop`, or `kill {p}` if that does not answer either (sessions keep running; the next ccd command starts a daemon that adopts them)"
            ),
            (Peer::Holder, true) => write!(
                f,
                " (process state T). Resume it with `kill -CONT {p}`, then attach again"
            ),
            (Peer::Holder, false) => write!(
                f,
                ": it is running but not answering (overloaded or stuck). Try again in a moment; `ccd ls` shows where the session stands"
            ),
            (Peer::Remote, true) => write!(
                f,
                ": the local ssh (pid {p}) is stopped. Resume it with `kill -CONT {p}`"
            ),
            (Peer::Remote, false) => write!(
                f,
                ": the connection or the daemon there is slow or stuck. Try again in a moment; `ssh <host> ccd daemon status` shows the daemon there"
            ),
        }
    }
}

fn format_secs(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

/// True when `pid` is stopped ([`ccd_os::process::is_stopped`]).
pub fn is_stopped(pid: u32) -> bool {
    ccd_os::process::is_stopped(pid)
}

/// The pid of the process at the other end of `stream`: whoever listened
/// on the socket it was connected to (`ccd_socket_dir::peer`; `None`
/// where the system does not say).
pub fn peer_pid(stream: &UnixStream) -> Option<u32> {
    ccd_socket_dir::peer::credentials(stream).ok()?.pid
}

/// Connects to the socket at `path`, giving up after `timeout` (a listener
/// whose queue is full, because nobody accepts, makes a plain connect
/// wait forever). The stream returned is blocking.
pub fn connect(path: &Path, timeout: Duration) -> std::io::Result<UnixStream> {
    use nix::sys::socket::{connect, UnixAddr};
    let addr = UnixAddr::new(path).map_err(std::io::Error::from)?;
    let deadline = Instant::now() + timeout;
    loop {
        // Non-blocking and close-on-exec (`ccd_os::socket`: in one call on
        // Linux, `fcntl` right after on macOS; the client starts its
        // children, the daemon and `ssh`, on the thread that then connects,
        // before it does).
        let fd: OwnedFd = ccd_os::socket::nonblocking_stream_socket()?;
        match connect(fd.as_raw_fd(), &addr) {
            Ok(()) => {
                let s = UnixStream::from(fd);
                s.set_nonblocking(false)?;
                return Ok(s);
            }
            // A full queue: nobody accepts. Try again until the deadline.
            Err(nix::errno::Errno::EAGAIN) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(nix::errno::Errno::EAGAIN) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "its connection queue stayed full",
                ))
            }
            Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// Waits until `fd` is readable (or closed) for at most `timeout`: `true`
/// when it is.
pub fn readable(fd: BorrowedFd<'_>, timeout: Duration) -> std::io::Result<bool> {
    let ms = i32::try_from(timeout.as_millis())
        .unwrap_or(i32::MAX)
        .max(1);
    poll_in(fd, ms)
}

/// Waits until `fd` is readable (or closed), without bound.
pub(crate) fn until_readable(fd: BorrowedFd<'_>) -> std::io::Result<()> {
    poll_in(fd, -1).map(drop)
}

/// `poll(POLLIN)` on `fd` for `ms` milliseconds (-1: no bound), again
/// after a signal: `true` when it is readable.
fn poll_in(fd: BorrowedFd<'_>, ms: i32) -> std::io::Result<bool> {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let timeout = PollTimeout::try_from(ms).unwrap_or(PollTimeout::NONE);
    let mut p = [PollFd::new(fd, PollFlags::POLLIN)];
    loop {
        match poll(&mut p, timeout) {
            Ok(n) => return Ok(n > 0),
            Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_peer_of_a_listener_in_this_process_is_this_process() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let stream = connect(&path, CONNECT_TIMEOUT).unwrap();
        let _accepted = listener.accept().unwrap();
        assert_eq!(peer_pid(&stream), Some(std::process::id()));
        // Handed back blocking, as the doc says.
        let fl = nix::fcntl::fcntl(&stream, nix::fcntl::FcntlArg::F_GETFL).unwrap();
        assert!(!nix::fcntl::OFlag::from_bits_truncate(fl).contains(nix::fcntl::OFlag::O_NONBLOCK));
    }

    #[test]
    fn deadlines_by_method() {
        use serde_json::json;
        assert_eq!(deadline_of("daemon.status", &json!({})), CALL_TIMEOUT);
        assert_eq!(deadline_of("no.such.method", &json!({})), CALL_TIMEOUT);
        assert_eq!(
            deadline_of("session.new", &json!({"cwd": "/p"})),
            START_TIMEOUT
        );
        assert_eq!(
            deadline_of("session.new", &json!({"cwd": "/p", "wait": false})),
            CALL_TIMEOUT
        );
        // Params the daemon refuses at once: the method's usual wait.
        assert_eq!(deadline_of("session.new", &json!({})), START_TIMEOUT);
        assert_eq!(
            deadline_of("session.kill", &json!({"session": "s", "grace_ms": 10000})),
            Duration::from_secs(17)
        );
        assert_eq!(
            deadline_of("session.trim", &json!({"session": "s"})),
            TRIM_TIMEOUT
        );
        assert_eq!(
            deadline_of("session.attach", &json!({"session": "s"})),
            START_TIMEOUT
        );
        assert_eq!(deadline_of("daemon.stop", &json!({})), SLOW_CALL_TIMEOUT);
    }

    /// The typed calls hand `deadline_of` their params serialized: the
    /// fields it reads keep their wire names.
    #[test]
    fn deadlines_of_typed_params() {
        use ccd_protocol::methods::session::{KillParams, KillSignal, NewParams, SessionKill};
        use ccd_protocol::methods::session::{SessionNew, SessionSend};
        use ccd_protocol::Method;
        let of = |name, v: serde_json::Result<serde_json::Value>| {
            deadline_of(name, &v.expect("serializes"))
        };
        let mut new = NewParams {
            cwd: "/p".into(),
            args: Vec::new(),
            name: None,
            size: None,
            auto_trust: true,
            wait: true,
            session_id: None,
        };
        assert_eq!(
            of(SessionNew::NAME, serde_json::to_value(&new)),
            START_TIMEOUT
        );
        new.wait = false;
        assert_eq!(
            of(SessionNew::NAME, serde_json::to_value(&new)),
            CALL_TIMEOUT
        );
        let mut kill = KillParams {
            session: "s".into(),
            signal: KillSignal::Term,
            grace_ms: None,
        };
        assert_eq!(
            of(SessionKill::NAME, serde_json::to_value(&kill)),
            Duration::from_secs(10)
        );
        kill.grace_ms = Some(10_000);
        assert_eq!(
            of(SessionKill::NAME, serde_json::to_value(&kill)),
            Duration::from_secs(17)
        );
        assert_eq!(
            of(SessionSend::NAME, Ok(serde_json::json!({}))),
            SLOW_CALL_TIMEOUT
        );
        // The typed path reads the params as they are, no round trip.
        assert_eq!(deadline_for::<SessionKill>(&kill), Duration::from_secs(17));
        new.wait = true;
        assert_eq!(deadline_for::<SessionNew>(&new), START_TIMEOUT);
    }

    /// A stopped peer is named as stopped, with what to do, and never as
    /// "did not answer within 0s" (the stop is often seen before any wait).
    #[test]
    fn a_stopped_peer_is_named_without_a_wait() {
        for peer in [Peer::Daemon, Peer::Holder] {
            let n = NotAnswering {
                peer,
                pid: Some(42),
                lock: None,
                stopped: true,
                during: "sessions.list".into(),
                waited: Duration::ZERO,
                host: None,
            };
            let msg = n.to_string();
            assert!(
                msg.contains("(pid 42) is stopped, so it cannot answer `sessions.list`"),
                "{msg}"
            );
            assert!(msg.contains("kill -CONT 42"), "{msg}");
            assert!(!msg.contains("within"), "{msg}");
        }
        let slow = NotAnswering::holder(Some(42), "the attach", CALL_TIMEOUT).to_string();
        assert!(
            slow.contains("did not answer the attach within 5s"),
            "{slow}"
        );
    }
}
