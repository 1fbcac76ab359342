//! The holder's stop request: a flag every thread checks, and an eventfd
//! the accept loop polls beside its listener, so an idle holder has no
//! thread waking on a timer just to see whether it should stop.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};

/// Raised once; never lowered.
#[derive(Debug)]
pub(crate) struct StopSignal {
    raised: AtomicBool,
    /// Readable once raised (`None` if the kernel refused an eventfd: the
    /// accept loop then falls back to its safety timeout).
    event: Option<OwnedFd>,
}

impl StopSignal {
    pub fn new() -> Self {
        // SAFETY: plain system call; the result is checked.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        let event = if fd >= 0 {
            // SAFETY: a descriptor we just opened and own.
            Some(unsafe { OwnedFd::from_raw_fd(fd) })
        } else {
            tracing::warn!(error = %std::io::Error::last_os_error(), "no eventfd for the stop signal");
            None
        };
        Self {
            raised: AtomicBool::new(false),
            event,
        }
    }

    pub fn raise(&self) {
        self.raised.store(true, Ordering::SeqCst);
        if let Some(fd) = &self.event {
            let one: u64 = 1;
            // SAFETY: writes 8 bytes from a live u64 to our eventfd. A full
            // counter (EAGAIN) is already readable, which is all we need.
            unsafe { libc::write(fd.as_raw_fd(), std::ptr::addr_of!(one).cast(), 8) };
        }
    }

    pub fn is_raised(&self) -> bool {
        self.raised.load(Ordering::SeqCst)
    }

    /// Readable once raised.
    pub fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.event.as_ref().map(AsFd::as_fd)
    }
}
