//! A client's terminal handed to the holder (`holder.terminal`): the
//! connection thread reads its keys and the output goes straight to it,
//! so a keystroke's echo crosses no `ccd attach` process (see "Terminal
//! hand-off" in `docs/architecture.md`).
//!
//! # Invariant: the holder never holds a terminal its client left
//!
//! The passed descriptors share their open file description with the
//! client's stdin and stdout, whose flags the holder must not change. So
//! each is reopened ([`reopen`]: by a path to the terminal device, with
//! `O_NONBLOCK | O_NOCTTY`) and the passed ones are closed at once. The
//! path is [`os::tty_path`]'s: `/proc/self/fd/N` on Linux, the device's
//! name from `ttyname(3)` on macOS — never `/dev/fd/N`, which on macOS
//! duplicates the descriptor (the client's file description) instead of
//! opening the device anew. The input is owned
//! by the connection thread alone ([`TtyIn`]); it is read only after
//! `poll` says it is readable, never with a wait inside `read`, and the
//! connection's socket is looked at first on every wake, so a client that
//! hangs up (its socket ends) makes the holder close the terminal before
//! it reads another key. The output ([`TtyOut`]) lives in the
//! connection's line socket (`LineSocket`), under its mutex;
//! a writer waiting for a terminal that does not drain wakes at least
//! every [`STUCK_POLL`] and gives up when the release flag is set or the
//! client hung up, so releasing never waits on the terminal.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::keys::{DetachFilter, DetachKey, Filtered};

/// How often a writer blocked on a terminal that does not drain looks at
/// the release flag.
pub const STUCK_POLL: Duration = Duration::from_millis(100);

/// Longest read of keys at once.
const KEYS_BUF: usize = 8192;

/// Opens the terminal `fd` names anew (a file description of our own, so
/// `O_NONBLOCK` stays ours), for writing or reading. Not a terminal:
/// `ENOTTY`.
pub fn reopen(fd: BorrowedFd<'_>, write: bool) -> std::io::Result<File> {
    if !nix::unistd::isatty(fd).unwrap_or(false) {
        return Err(std::io::Error::from_raw_os_error(libc::ENOTTY));
    }
    let path = os::tty_path(fd)?;
    std::fs::OpenOptions::new()
        .read(!write)
        .write(write)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(path)
}

/// The terminal's output side.
#[derive(Debug)]
pub struct TtyOut {
    file: File,
    release: Arc<AtomicBool>,
}

impl TtyOut {
    /// `file` from [`reopen`]; `release` set by whoever lets the terminal
    /// go.
    pub fn new(file: File, release: Arc<AtomicBool>) -> Self {
        Self { file, release }
    }

    /// One non-blocking write; the bytes taken (0 when the terminal is
    /// full or failed: the next [`TtyOut::write_all`] meets the error).
    pub fn try_write(&mut self, bytes: &[u8]) -> usize {
        loop {
            match self.file.write(bytes) {
                Ok(n) => return n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => return 0,
            }
        }
    }

    /// Writes all of `bytes`, waiting while the terminal is full; fails
    /// once the terminal is released or the client hung up (`socket`, the
    /// connection's: a writer waiting on the terminal stops then).
    pub fn write_all(&mut self, mut bytes: &[u8], socket: BorrowedFd<'_>) -> std::io::Result<()> {
        while !bytes.is_empty() {
            if self.release.load(Ordering::Acquire) {
                return Err(released());
            }
            match self.file.write(bytes) {
                Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    bytes = &bytes[n..];
                    // Taken in part: the terminal was full. Wait for room
                    // now rather than meet EAGAIN on the next write (a
                    // flood into a slow terminal took three calls a
                    // round, not two).
                    if !bytes.is_empty() {
                        self.wait_room(socket)?;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => self.wait_room(socket)?,
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Waits until the terminal takes bytes, the client hangs up (on
    /// `socket`) or [`STUCK_POLL`] passes.
    fn wait_room(&self, socket: BorrowedFd<'_>) -> std::io::Result<()> {
        use nix::poll::{poll, PollFd, PollFlags};
        let mut fds = [
            PollFd::new(self.file.as_fd(), PollFlags::POLLOUT),
            PollFd::new(socket, os::HANGUP_EVENTS),
        ];
        let r = poll(&mut fds, stuck_poll());
        // `any` is None for bits nix does not name (`POLLRDHUP`): set.
        if r.is_ok_and(|n| n > 0) && fds[1].any().unwrap_or(true) {
            // Bits nix does not name read as a hang-up.
            let revents = fds[1].revents().unwrap_or(PollFlags::POLLHUP);
            if os::hung_up(socket, revents) {
                return Err(std::io::ErrorKind::BrokenPipe.into());
            }
            // A request is waiting, not a hang-up: wait for room alone,
            // so a request left unread does not make this loop spin.
            let _ = poll(&mut fds[..1], stuck_poll());
        }
        Ok(())
    }
}

/// [`STUCK_POLL`] as `poll` takes it.
fn stuck_poll() -> nix::poll::PollTimeout {
    nix::poll::PollTimeout::try_from(STUCK_POLL).unwrap_or(nix::poll::PollTimeout::MAX)
}

fn released() -> std::io::Error {
    std::io::Error::other("the terminal was released")
}

/// What woke a connection that holds a terminal.
#[derive(Debug, PartialEq, Eq)]
pub enum Wake {
    /// The socket has something (a request, its end): read it.
    Socket,
    /// Keys for the session (the detach key filtered out).
    Keys(Vec<u8>),
    /// The detach key: these keys before it go first.
    Detach(Vec<u8>),
    /// The terminal hung up.
    Hangup,
}

/// The terminal's input side, owned by the connection thread.
#[derive(Debug)]
pub struct TtyIn {
    file: File,
    filter: DetachFilter,
}

impl TtyIn {
    /// `file` from [`reopen`].
    pub fn new(file: File, key: DetachKey) -> Self {
        Self {
            file,
            filter: DetachFilter::new(key),
        }
    }

    /// Waits for the socket or the terminal. The socket comes first: when
    /// both are ready, no key is read (module invariant).
    pub fn wait(&mut self, socket: BorrowedFd<'_>) -> std::io::Result<Wake> {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        loop {
            let now = Instant::now();
            if self.filter.expired(now) {
                return Ok(Wake::Detach(Vec::new()));
            }
            // Only a half-typed detach has a deadline.
            let timeout = self
                .filter
                .wait_hint(now)
                .map(|d| i32::try_from(d.as_millis() + 1).unwrap_or(i32::MAX))
                .and_then(|ms| PollTimeout::try_from(ms).ok())
                .unwrap_or(PollTimeout::NONE);
            let mut fds = [
                PollFd::new(socket, PollFlags::POLLIN),
                PollFd::new(self.file.as_fd(), PollFlags::POLLIN),
            ];
            match poll(&mut fds, timeout) {
                Ok(_) => {}
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(e.into()),
            }
            // `any` is None for bits nix does not name: set.
            let woke = |fd: &PollFd<'_>| fd.any().unwrap_or(true);
            if woke(&fds[0]) {
                return Ok(Wake::Socket);
            }
            if !woke(&fds[1]) {
                continue; // the detach deadline: looked at above
            }
            let mut buf = [0u8; KEYS_BUF];
            match self.file.read(&mut buf) {
                Ok(0) => return Ok(Wake::Hangup),
                Ok(n) => {
                    return Ok(match self.filter.feed(&buf[..n], Instant::now()) {
                        Filtered::Send(b) if b.is_empty() => continue,
                        Filtered::Send(b) => Wake::Keys(b),
                        Filtered::Detach(b) => Wake::Detach(b),
                    })
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::Interrupted | std::io::ErrorKind::WouldBlock
                    ) => {}
                Err(_) => return Ok(Wake::Hangup),
            }
        }
    }
}

impl AsFd for TtyIn {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }
}

/// The two descriptors a `holder.terminal` request passed, reopened:
/// (input, output). Closes the passed ones.
pub fn open_passed(passed: Vec<OwnedFd>) -> Result<(File, File), String> {
    let [input, output]: [OwnedFd; 2] = passed.try_into().map_err(|v: Vec<OwnedFd>| {
        format!(
            "holder.terminal needs the terminal's input and output descriptors passed with it \
             (SCM_RIGHTS); {} came",
            v.len()
        )
    })?;
    let i = reopen(input.as_fd(), false)
        .map_err(|e| format!("cannot open the terminal's input: {e}"))?;
    let o = reopen(output.as_fd(), true)
        .map_err(|e| format!("cannot open the terminal's output: {e}"))?;
    Ok((i, o))
}

/// The two things the terminal hand-off asks of the OS: a path that opens
/// the passed terminal anew, and whether the client's socket hung up.
pub mod os {
    use nix::poll::PollFlags;
    use std::os::fd::BorrowedFd;
    use std::path::PathBuf;

    /// A path naming the terminal `fd` is open on: `/proc/self/fd/N`,
    /// which opens the file `fd` names as a new file description.
    #[cfg(target_os = "linux")]
    pub fn tty_path(fd: BorrowedFd<'_>) -> std::io::Result<PathBuf> {
        use std::os::fd::AsRawFd;
        Ok(PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd())))
    }

    /// A path naming the terminal `fd` is open on: its device's name
    /// (`ttyname(3)`, e.g. `/dev/ttys003`). The device itself, never the
    /// `/dev/tty` alias: macOS's `poll` (kqueue underneath) refuses that
    /// one (`POLLNVAL`; tokio-rs/mio#1377), while a pseudo-terminal's own
    /// device polls as on Linux.
    #[cfg(not(target_os = "linux"))]
    pub fn tty_path(fd: BorrowedFd<'_>) -> std::io::Result<PathBuf> {
        device_name(fd)
    }

    /// The terminal device's name (`ttyname(3)`). The mechanism of
    /// [`tty_path`] outside Linux; compiled everywhere so that Linux tests
    /// check it opens a description of its own.
    pub fn device_name(fd: BorrowedFd<'_>) -> std::io::Result<PathBuf> {
        nix::unistd::ttyname(fd).map_err(std::io::Error::from)
    }

    /// `poll` events that report the client's socket hanging up: Linux
    /// has `POLLRDHUP` (the peer shut its writing side; a bit nix's
    /// `PollFlags` does not name, so `revents` reads `None` when it is set).
    #[cfg(target_os = "linux")]
    pub const HANGUP_EVENTS: PollFlags = PollFlags::from_bits_retain(libc::POLLRDHUP);

    /// `poll` events that report the client's socket hanging up: without
    /// `POLLRDHUP`, readability (an end of file is readable; so is a
    /// request, which [`hung_up`] tells apart).
    #[cfg(not(target_os = "linux"))]
    pub const HANGUP_EVENTS: PollFlags = PollFlags::POLLIN;

    /// Whether `revents` (non-zero, for [`HANGUP_EVENTS`]) on `socket`
    /// means its peer hung up.
    #[cfg(target_os = "linux")]
    pub fn hung_up(_socket: BorrowedFd<'_>, _revents: PollFlags) -> bool {
        true
    }

    /// Whether `revents` (non-zero, for [`HANGUP_EVENTS`]) on `socket`
    /// means its peer hung up: an error or hang-up flag, or an end of file
    /// where a request would be (one byte peeked, nothing consumed).
    #[cfg(not(target_os = "linux"))]
    pub fn hung_up(socket: BorrowedFd<'_>, revents: PollFlags) -> bool {
        revents.intersects(PollFlags::POLLHUP | PollFlags::POLLERR | PollFlags::POLLNVAL)
            || peer_closed(socket)
    }

    /// Whether reading `socket` would meet its end (`recv` with
    /// `MSG_PEEK | MSG_DONTWAIT` returns 0). Compiled everywhere so that
    /// Linux tests check it.
    pub fn peer_closed(socket: BorrowedFd<'_>) -> bool {
        use nix::sys::socket::{recv, MsgFlags};
        use std::os::fd::AsRawFd;
        let mut byte = [0u8; 1];
        loop {
            match recv(
                socket.as_raw_fd(),
                &mut byte,
                MsgFlags::MSG_PEEK | MsgFlags::MSG_DONTWAIT,
            ) {
                Ok(n) => return n == 0,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(nix::errno::Errno::EAGAIN) => return false,
                Err(_) => return true,
            }
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use std::io::{Read, Write};
        use std::os::fd::AsFd;
        use std::os::unix::fs::OpenOptionsExt;
        use std::os::unix::net::UnixStream;

        #[test]
        fn the_device_name_opens_a_description_of_its_own() {
            let pty = nix::pty::openpty(None, None).expect("openpty");
            let path = device_name(pty.slave.as_fd()).expect("ttyname");
            let ours = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
                .open(&path)
                .expect("open the device");
            let flags = |fd: BorrowedFd<'_>| {
                nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_GETFL).expect("F_GETFL")
            };
            assert_ne!(flags(ours.as_fd()) & libc::O_NONBLOCK, 0);
            assert_eq!(
                flags(pty.slave.as_fd()) & libc::O_NONBLOCK,
                0,
                "the passed descriptor's description keeps its flags"
            );
            let (a, _b) = UnixStream::pair().expect("pair");
            assert!(device_name(a.as_fd()).is_err(), "a socket is no terminal");
        }

        #[test]
        fn a_pending_request_is_no_hang_up_and_an_end_is() {
            let (a, mut b) = UnixStream::pair().expect("pair");
            assert!(!peer_closed(a.as_fd()), "nothing yet");
            b.write_all(b"{}\n").expect("write");
            assert!(!peer_closed(a.as_fd()), "a request waits");
            let (c, d) = UnixStream::pair().expect("pair");
            drop(d);
            assert!(peer_closed(c.as_fd()), "the peer hung up");
            let mut buf = [0u8; 3];
            (&a).read_exact(&mut buf)
                .expect("the request was not consumed");
            assert_eq!(&buf, b"{}\n");
        }
    }
}
