//! A client's terminal handed to the holder (`holder.terminal`): the
//! connection thread reads its keys and the output goes straight to it,
//! so a keystroke's echo crosses no `ccd attach` process (see "Terminal
//! hand-off" in `docs/architecture.md`).
//!
//! # Invariant: the holder never holds a terminal its client left
//!
//! The passed descriptors share their open file description with the
//! client's stdin and stdout, whose flags the holder must not change. So
//! each is reopened ([`reopen`]: `/proc/self/fd/N`, `O_NONBLOCK |
//! O_NOCTTY`) and the passed ones are closed at once. The input is owned
//! by the connection thread alone ([`TtyIn`]); it is read only after
//! `poll` says it is readable, never with a wait inside `read`, and the
//! connection's socket is looked at first on every wake, so a client that
//! hangs up (its socket ends) makes the holder close the terminal before
//! it reads another key. The output ([`TtyOut`]) lives in the
//! connection's [`crate::line_socket::LineSocket`], under its mutex;
//! a writer waiting for a terminal that does not drain wakes at least
//! every [`STUCK_POLL`] and gives up when the release flag is set or the
//! client hung up, so releasing never waits on the terminal.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
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
    // SAFETY: isatty on a descriptor we borrow.
    if unsafe { libc::isatty(fd.as_raw_fd()) } != 1 {
        return Err(std::io::Error::from_raw_os_error(libc::ENOTTY));
    }
    let path = format!("/proc/self/fd/{}", fd.as_raw_fd());
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
    /// The client's socket: a writer waiting on the terminal stops when
    /// the client hangs up.
    socket: RawFd,
    release: Arc<AtomicBool>,
}

impl TtyOut {
    /// `file` from [`reopen`]; `socket` the connection's (it outlives this
    /// value: both belong to the connection); `release` set by whoever
    /// lets the terminal go.
    pub fn new(file: File, socket: RawFd, release: Arc<AtomicBool>) -> Self {
        Self {
            file,
            socket,
            release,
        }
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
    /// once the terminal is released or the client hung up.
    pub fn write_all(&mut self, mut bytes: &[u8]) -> std::io::Result<()> {
        while !bytes.is_empty() {
            if self.release.load(Ordering::Acquire) {
                return Err(released());
            }
            match self.file.write(bytes) {
                Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
                Ok(n) => bytes = &bytes[n..],
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => self.wait_room()?,
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Waits until the terminal takes bytes, the client hangs up or
    /// [`STUCK_POLL`] passes.
    fn wait_room(&self) -> std::io::Result<()> {
        let mut fds = [
            libc::pollfd {
                fd: self.file.as_raw_fd(),
                events: libc::POLLOUT,
                revents: 0,
            },
            libc::pollfd {
                fd: self.socket,
                events: libc::POLLRDHUP,
                revents: 0,
            },
        ];
        // SAFETY: two pollfds we own, for descriptors open while `self` is.
        let r = unsafe { libc::poll(fds.as_mut_ptr(), 2, STUCK_POLL.as_millis() as i32) };
        if r > 0 && fds[1].revents != 0 {
            return Err(std::io::ErrorKind::BrokenPipe.into());
        }
        Ok(())
    }
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
                .unwrap_or(-1);
            let mut fds = [
                libc::pollfd {
                    fd: socket.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: self.file.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            // SAFETY: two pollfds we own, for descriptors open while we run.
            let r = unsafe { libc::poll(fds.as_mut_ptr(), 2, timeout) };
            if r < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if fds[0].revents != 0 {
                return Ok(Wake::Socket);
            }
            if fds[1].revents == 0 {
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
