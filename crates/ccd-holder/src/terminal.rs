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
//!
//! # Focus reports
//!
//! A client that asked for them (`holder.terminal` with `focus`) has
//! turned its terminal's focus reports on: [`TtyIn`] finds them in the
//! keys ([`crate::focus::FocusFilter`]), leaves them in only while the
//! program turned focus reporting on itself, and keeps the last change
//! for the connection to tell the client ([`TtyIn::take_focus`]). The
//! output is not looked at: a program that turns focus reporting off
//! (`?1004l`; Claude Code 2.1.332 does around its trust dialog) turns the
//! terminal's off too, until it turns it on again, and the last focus
//! told stands meanwhile.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::focus::FocusFilter;
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
    /// Focus reports looked for (the client asked).
    focus: Option<FocusFilter>,
    /// The last focus change read and not yet taken.
    focus_change: Option<bool>,
}

impl TtyIn {
    /// `file` from [`reopen`]; `focus`: the client turned focus reports
    /// on (see the module doc).
    pub fn new(file: File, key: DetachKey, focus: bool) -> Self {
        Self {
            file,
            filter: DetachFilter::new(key),
            focus: focus.then(FocusFilter::new),
            focus_change: None,
        }
    }

    /// The last focus change read since the last call (true: in).
    pub fn take_focus(&mut self) -> Option<bool> {
        self.focus_change.take()
    }

    /// Keys after the focus filter, through the detach filter.
    fn detach_filtered(&mut self, keys: &[u8], now: Instant) -> Option<Wake> {
        match self.filter.feed(keys, now) {
            Filtered::Send(b) if b.is_empty() => None,
            Filtered::Send(b) => Some(Wake::Keys(b)),
            Filtered::Detach(b) => Some(Wake::Detach(b)),
        }
    }

    /// Waits for the socket or the terminal. The socket comes first: when
    /// both are ready, no key is read (module invariant). `program_focus`
    /// says whether the program turned focus reporting on (its reports are
    /// then left in the keys).
    pub fn wait(
        &mut self,
        socket: BorrowedFd<'_>,
        program_focus: &dyn Fn() -> bool,
    ) -> std::io::Result<Wake> {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        loop {
            let now = Instant::now();
            if self.filter.expired(now) {
                return Ok(Wake::Detach(Vec::new()));
            }
            if let Some(f) = self.focus.as_mut().filter(|f| f.expired(now)) {
                // The beginning of a report that never ended: keys.
                let held = f.flush();
                if let Some(w) = self.detach_filtered(&held, now) {
                    return Ok(w);
                }
                continue;
            }
            // Only a half-typed detach or report has a deadline.
            let hint = match (
                self.filter.wait_hint(now),
                self.focus.as_ref().and_then(|f| f.wait_hint(now)),
            ) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            let timeout = hint
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
                    let now = Instant::now();
                    let keys = match self.focus.as_mut() {
                        Some(f) => {
                            let seen = f.feed(&buf[..n], now, program_focus());
                            if seen.focused.is_some() {
                                self.focus_change = seen.focused;
                            }
                            seen.keys
                        }
                        None => buf[..n].to_vec(),
                    };
                    match self.detach_filtered(&keys, now) {
                        Some(w) => return Ok(w),
                        // Nothing for the session; a focus change is
                        // told now.
                        None if self.focus_change.is_some() => return Ok(Wake::Keys(Vec::new())),
                        None => continue,
                    }
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

/// The two things the terminal hand-off asks of the OS (`ccd_os::tty`):
/// a path that opens the passed terminal anew, and whether the client's
/// socket hung up.
pub use ccd_os::tty as os;
