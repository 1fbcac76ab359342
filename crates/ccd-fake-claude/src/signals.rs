//! Signal delivery through a self-pipe: the handler (signal-hook's) only
//! sets the signal's flag and writes one byte; all the work (cleanup, exit
//! codes) happens in the event loop.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use nix::fcntl::{fcntl, FcntlArg, FdFlag, OFlag};
use nix::sys::signal::Signal;

const HANDLED: [Signal; 4] = [
    Signal::SIGTERM,
    Signal::SIGHUP,
    Signal::SIGINT,
    Signal::SIGWINCH,
];

/// A pipe whose ends are both non-blocking and close-on-exec. Set after
/// `pipe` (macOS has no `pipe2`): the pipe is made while the program is
/// starting, before anything could start a child from another thread.
fn nonblocking_pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let (read, write) = nix::unistd::pipe()?;
    for end in [&read, &write] {
        fcntl(end, FcntlArg::F_SETFL(OFlag::O_NONBLOCK))?;
        fcntl(end, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC))?;
    }
    Ok((read, write))
}

/// The read end of the self-pipe; readable when a signal arrived.
pub struct Signals {
    read: OwnedFd,
    /// The write end, which the handlers write to for the program's life.
    _write: OwnedFd,
    /// One flag a signal of [`HANDLED`], set by its handler.
    pending: [Arc<AtomicBool>; 4],
}

impl Signals {
    pub fn install() -> io::Result<Signals> {
        let (read, write) = nonblocking_pipe()?;
        let pending = HANDLED.map(|_| Arc::new(AtomicBool::new(false)));
        for (sig, flag) in HANDLED.iter().zip(&pending) {
            // The flag first: a handler's actions run in the order they
            // were registered, so the byte wakes a loop that finds it set.
            signal_hook::flag::register(*sig as i32, Arc::clone(flag))?;
            // The write end stays open as long as `Signals` (the program).
            signal_hook::low_level::pipe::register_raw(*sig as i32, write.as_raw_fd())?;
        }
        Ok(Signals {
            read,
            _write: write,
            pending,
        })
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.read.as_fd()
    }

    /// Drains the pipe and returns the signals received since the last call.
    pub fn take(&self) -> Vec<Signal> {
        let mut buf = [0u8; 64];
        while matches!(nix::unistd::read(self.read.as_fd(), &mut buf), Ok(n) if n > 0) {}
        HANDLED
            .iter()
            .zip(&self.pending)
            .filter(|(_, flag)| flag.swap(false, Ordering::SeqCst))
            .map(|(sig, _)| *sig)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_self_pipe_is_non_blocking_and_close_on_exec_at_both_ends() {
        let (read, write) = nonblocking_pipe().unwrap();
        for end in [&read, &write] {
            let fl = OFlag::from_bits_truncate(fcntl(end, FcntlArg::F_GETFL).unwrap());
            assert!(fl.contains(OFlag::O_NONBLOCK), "{end:?} blocks");
            let fd = FdFlag::from_bits_truncate(fcntl(end, FcntlArg::F_GETFD).unwrap());
            assert!(
                fd.contains(FdFlag::FD_CLOEXEC),
                "{end:?} leaks into children"
            );
        }
        // Non-blocking: an empty pipe reads as WouldBlock, not a hang.
        let mut buf = [0u8; 1];
        assert_eq!(
            nix::unistd::read(read.as_fd(), &mut buf),
            Err(nix::errno::Errno::EAGAIN)
        );
    }
}
