//! Waiting for a process to end without looking at it again and again,
//! through the runtime's reactor.
//!
//! The handle is `ccd_os::exit_watch::ExitWatch` (a pidfd on Linux, a
//! kqueue holding `EVFILT_PROC`/`NOTE_EXIT` on macOS; see it for the two
//! sides, and why a macOS zombie answers `ESRCH` at `open`): one
//! descriptor, readable once the process has ended. [`ExitWatch::exited`]
//! waits for that through the reactor ([`crate::reactor::Watched`]): no
//! thread and no timer per watched process, nothing wakes until the
//! process ends. Where no such handle exists, [`ExitWatch::open`] fails
//! and callers keep their periodic checks.
//!
//! A handle names one process, not a pid: once open, a reused pid cannot
//! fool it. Opening it by pid can race the pid's reuse, so callers open
//! it *before* they check who the pid is (see `registry_watch::scan`), or
//! for a pid that cannot be reused meanwhile (a holder's unreaped child).

use std::io;

/// An open handle on one process, to wait for its end.
#[derive(Debug)]
pub struct ExitWatch(ccd_os::exit_watch::ExitWatch);

impl ExitWatch {
    /// A handle on the process `pid` is now. Err: no such process
    /// (`ESRCH`: it has ended, or never was), or no such handle here.
    pub fn open(pid: u32) -> io::Result<Self> {
        ccd_os::exit_watch::ExitWatch::open(pid).map(Self)
    }

    /// Whether the process has ended (no wait).
    pub fn has_exited(&self) -> bool {
        self.0.has_exited()
    }

    /// Resolves when the process ends (at once if it has). Err: the
    /// runtime cannot watch the descriptor (the caller falls back to
    /// looking periodically).
    pub async fn exited(self) -> io::Result<()> {
        let fd = crate::reactor::Watched::new(self.0.into_fd(), tokio::io::Interest::READABLE)?;
        let _ready = fd.readable().await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_process_ending_is_seen_and_a_running_one_is_not() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep");
        let w = ExitWatch::open(child.id()).expect("a watch");
        assert!(!w.has_exited());
        let waiting = tokio::spawn(w.exited());
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!waiting.is_finished(), "resolved while the process runs");
        child.kill().expect("kill");
        // Not reaped yet: a zombie has ended too (it was registered while
        // it ran).
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("seen within 5 s")
            .expect("the task")
            .expect("watched");
        child.wait().expect("reaped");
    }

    #[test]
    fn a_pid_that_names_no_process_is_refused() {
        assert!(ExitWatch::open(0).is_err());
        assert!(ExitWatch::open(u32::MAX).is_err());
    }
}
