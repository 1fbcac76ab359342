//! Signal delivery through a self-pipe: the handler only records the signal and writes one
//! byte; all the work (cleanup, exit codes) happens in the event loop.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};

use nix::fcntl::OFlag;
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
        // SAFETY: errno is saved and restored; write(2) is async-signal-safe.
        unsafe {
            let errno = *libc::__errno_location();
            let byte = 1u8;
            libc::write(fd, std::ptr::addr_of!(byte).cast(), 1);
            *libc::__errno_location() = errno;
        }
    }
}

/// The read end of the self-pipe; readable when a signal arrived.
pub struct Signals {
    read: OwnedFd,
    _write: OwnedFd,
}

impl Signals {
    pub fn install() -> io::Result<Signals> {
        let (read, write) = nix::unistd::pipe2(OFlag::O_NONBLOCK | OFlag::O_CLOEXEC)?;
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
