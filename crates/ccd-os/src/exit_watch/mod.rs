//! Exit watch: waiting for a process to end without looking at it again
//! and again.
//!
//! - Linux (`linux`): a pidfd (`pidfd_open`, 5.3+, through rustix)
//!   becomes readable when its process terminates — a zombie counts, so a
//!   holder's child is seen ending before the holder reaps it — whether or
//!   not the process is ours.
//! - macOS (`macos`): a kqueue of its own per process holds an
//!   `EVFILT_PROC`/`NOTE_EXIT` event on it (kqueue(2), through nix): the
//!   kqueue descriptor becomes readable once the process has exited. One
//!   difference: a process that has ended but is not reaped yet (a zombie)
//!   cannot be registered there, so [`ExitWatch::open`] answers `ESRCH`
//!   ("it has ended") instead of a handle that is readable at once —
//!   callers take both the same way.
//! - Elsewhere (or on an older Linux kernel) [`ExitWatch::open`] fails and
//!   callers keep their periodic checks.
//!
//! Either way the handle is one descriptor, readable once the process has
//! ended: [`ExitWatch::has_exited`] polls it without waiting, and the
//! daemon waits on it through its runtime's reactor
//! ([`ExitWatch::into_fd`]; `ccd-daemon`'s `exit_watch`): no thread and no
//! timer per watched process.
//!
//! A pidfd, like a kqueue event, names one process, not a pid: once open,
//! a reused pid cannot fool it. Opening it by pid can race the pid's
//! reuse, so callers open it *before* they check who the pid is, or for a
//! pid that cannot be reused meanwhile (a holder's unreaped child).
//!
//! For a child of the caller, [`wait_exited_no_reap`] blocks until it has
//! exited without reaping it (`waitid(WEXITED | WNOWAIT)`, through rustix
//! on both systems): the holder records the child gone before it reaps
//! it, so a signal can never reach a recycled pid.

use std::io;

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
use linux as imp;
#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
use macos as imp;
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
mod imp {
    pub(super) fn open(_pid: libc::pid_t) -> std::io::Result<std::os::fd::OwnedFd> {
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "no process exit watch here",
        ))
    }
}

/// An open handle on one process, to wait for its end. Its descriptor (a
/// pidfd on Linux, a kqueue on macOS) is readable once the process has
/// ended.
#[derive(Debug)]
pub struct ExitWatch {
    fd: std::os::fd::OwnedFd,
}

impl ExitWatch {
    /// A handle on the process `pid` is now. Err: no such process
    /// (`ESRCH`: it has ended — on macOS a zombie included — or never
    /// was), or no such watch here.
    pub fn open(pid: u32) -> io::Result<Self> {
        let pid =
            libc::pid_t::try_from(pid).map_err(|_| io::Error::from_raw_os_error(libc::ESRCH))?;
        if pid <= 0 {
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
        Ok(Self {
            fd: imp::open(pid)?,
        })
    }

    /// Whether the process has ended (no wait).
    pub fn has_exited(&self) -> bool {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        use std::os::fd::AsFd;
        let mut p = [PollFd::new(self.fd.as_fd(), PollFlags::POLLIN)];
        poll(&mut p, PollTimeout::ZERO).is_ok_and(|n| n == 1)
            && p[0]
                .revents()
                .is_some_and(|r| r.contains(PollFlags::POLLIN))
    }

    /// The descriptor, readable once the process has ended (to wait on
    /// with a reactor).
    pub fn into_fd(self) -> std::os::fd::OwnedFd {
        self.fd
    }
}

/// Blocks until the child `pid` has exited, without reaping it
/// (`waitid(P_PID, pid, WEXITED | WNOWAIT)`, `EINTR` retried). Returns
/// false if it cannot be waited for this way (then reaping is the wait).
pub fn wait_exited_no_reap(pid: u32) -> bool {
    loop {
        match waitid_exited_no_reap(pid) {
            Ok(()) => return true,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => {
                tracing::debug!(pid, error = %err, "waitid(WNOWAIT) failed");
                return false;
            }
        }
    }
}

/// One `waitid(P_PID, pid, WEXITED | WNOWAIT)`.
fn waitid_exited_no_reap(pid: u32) -> io::Result<()> {
    use rustix::process::{waitid, Pid, WaitId, WaitIdOptions};
    let pid = i32::try_from(pid)
        .ok()
        .filter(|p| *p > 0)
        .and_then(Pid::from_raw)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "pid out of range"))?;
    waitid(
        WaitId::Pid(pid),
        WaitIdOptions::EXITED | WaitIdOptions::NOWAIT,
    )?;
    Ok(())
}

#[cfg(all(test, any(target_os = "linux", target_os = "macos")))]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn a_process_ending_is_seen_and_a_running_one_is_not() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep");
        let w = ExitWatch::open(child.id()).expect("a watch");
        assert!(!w.has_exited());
        child.kill().expect("kill");
        // Not reaped yet: a zombie has ended too (it was registered while
        // it ran).
        let deadline = Instant::now() + Duration::from_secs(5);
        while !w.has_exited() {
            assert!(Instant::now() < deadline, "never seen ending");
            std::thread::sleep(Duration::from_millis(10));
        }
        child.wait().expect("reaped");
    }

    #[test]
    fn a_pid_that_names_no_process_is_refused() {
        assert!(ExitWatch::open(0).is_err());
        assert!(ExitWatch::open(u32::MAX).is_err());
    }

    #[test]
    fn an_exited_child_is_waited_for_and_left_to_reap() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "exit 3"])
            .spawn()
            .expect("sh");
        assert!(wait_exited_no_reap(child.id()));
        // Not reaped: its status is still there to take.
        let status = child.wait().expect("reaped");
        assert_eq!(status.code(), Some(3));
        assert!(!wait_exited_no_reap(child.id()), "nothing left to wait for");
    }
}
