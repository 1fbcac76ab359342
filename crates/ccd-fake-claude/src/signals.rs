//! Signal delivery through a self-pipe: the handler only records the signal and writes one
//! byte; all the work (cleanup, exit codes) happens in the event loop.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};

use nix::fcntl::{fcntl, FcntlArg, FdFlag, OFlag};
use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};

static PENDING: AtomicU32 = AtomicU32::new(0);
static WAKE_FD: AtomicI32 = AtomicI32::new(-1);

const HANDLED: [Signal; 4] = [
    Signal::SIGTERM,
    Signal::SIGHUP,
    Signal::SIGINT,
    Signal::SIGWINCH,
];

extern "C" fn on_signal(sig: libc::c_int) {
    if (0..32).contains(&sig) {
        PENDING.fetch_or(1 << sig, Ordering::SeqCst);
    }
    let fd = WAKE_FD.load(Ordering::SeqCst);
    if fd >= 0 {
        // errno is saved and restored around the write (nix reads and sets
        // the thread's errno through the platform's own accessor).
        let errno = nix::errno::Errno::last_raw();
        let byte = 1u8;
        // SAFETY: write(2) is async-signal-safe; `byte` outlives the call.
        unsafe { libc::write(fd, std::ptr::addr_of!(byte).cast(), 1) };
        nix::errno::Errno::set_raw(errno);
    }
}

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
    _write: OwnedFd,
}

impl Signals {
    pub fn install() -> io::Result<Signals> {
        let (read, write) = nonblocking_pipe()?;
        WAKE_FD.store(write.as_raw_fd(), Ordering::SeqCst);
        let action = SigAction::new(
            SigHandler::Handler(on_signal),
            SaFlags::empty(),
            SigSet::empty(),
        );
        for sig in HANDLED {
            // SAFETY: the handler only touches atomics and calls write(2).
            unsafe { sigaction(sig, &action) }?;
        }
        Ok(Signals {
            read,
            _write: write,
        })
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.read.as_fd()
    }

    /// Drains the pipe and returns the signals received since the last call.
    pub fn take(&self) -> Vec<Signal> {
        let mut buf = [0u8; 64];
        while matches!(nix::unistd::read(self.read.as_fd(), &mut buf), Ok(n) if n > 0) {}
        let bits = PENDING.swap(0, Ordering::SeqCst);
        HANDLED
            .into_iter()
            .filter(|s| bits & (1 << (*s as i32)) != 0)
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
