//! The holder's stop request: a flag every thread checks, and a pipe the
//! accept loop polls beside its listener (readable once the stop is
//! requested), so an idle holder has no thread waking on a timer just to
//! see whether it should stop.

use std::io::{PipeReader, PipeWriter, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::atomic::{AtomicBool, Ordering};

/// Raised once; never lowered.
#[derive(Debug)]
pub(crate) struct StopSignal {
    raised: AtomicBool,
    /// Readable once raised (`None` if no pipe could be made: the accept
    /// loop then falls back to its safety timeout).
    pipe: Option<(PipeReader, PipeWriter)>,
}

impl StopSignal {
    pub fn new() -> Self {
        let pipe = std::io::pipe()
            .inspect_err(|error| tracing::warn!(%error, "no pipe for the stop signal"))
            .ok();
        Self {
            raised: AtomicBool::new(false),
            pipe,
        }
    }

    pub fn raise(&self) {
        // One byte, by the first raise only: the pipe never fills.
        if !self.raised.swap(true, Ordering::SeqCst) {
            if let Some((_, w)) = &self.pipe {
                let mut w: &PipeWriter = w;
                let _ = w.write_all(&[1]);
            }
        }
    }

    pub fn is_raised(&self) -> bool {
        self.raised.load(Ordering::SeqCst)
    }

    /// Readable once raised.
    pub fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.pipe.as_ref().map(|(r, _)| r.as_fd())
    }
}
