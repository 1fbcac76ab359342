//! Waiting for a process to end without looking at it again and again.
//!
//! On Linux a pidfd (`pidfd_open`, 5.3+) becomes readable when its
//! process terminates — a zombie counts, so a holder's child is seen
//! ending before the holder reaps it — whether or not the process is ours.
//! [`ExitWatch::exited`] waits for that through the runtime's reactor: no
//! thread and no timer per watched process, nothing wakes until the
//! process ends. Elsewhere (or on an older kernel) [`ExitWatch::open`]
//! fails and callers keep their periodic checks.
//!
//! A pidfd names one process, not a pid: once open, a reused pid cannot
//! fool it. Opening it by pid can race the pid's reuse, so callers open it
//! *before* they check who the pid is (see `registry_watch::scan`), or for
//! a pid that cannot be reused meanwhile (a holder's unreaped child).

use std::io;

/// An open handle on one process, to wait for its end.
#[derive(Debug)]
pub struct ExitWatch {
    #[cfg(target_os = "linux")]
    fd: std::os::fd::OwnedFd,
}

impl ExitWatch {
    /// A handle on the process `pid` is now. Err: no such process
    /// (`ESRCH`: it has ended, or never was), or no pidfds here.
    #[cfg(target_os = "linux")]
    pub fn open(pid: u32) -> io::Result<Self> {
        use std::os::fd::{FromRawFd, OwnedFd};
        let pid =
            libc::pid_t::try_from(pid).map_err(|_| io::Error::from_raw_os_error(libc::ESRCH))?;
        if pid <= 0 {
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
        // SAFETY: pidfd_open takes a pid and flags and returns a new
        // descriptor or -1; no pointers.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let fd = i32::try_from(fd).map_err(|_| io::Error::other("pidfd out of range"))?;
        // SAFETY: a descriptor the kernel just gave us, owned by nobody else.
        Ok(Self {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// Not available outside Linux.
    #[cfg(not(target_os = "linux"))]
    pub fn open(_pid: u32) -> io::Result<Self> {
        Err(io::Error::new(io::ErrorKind::Unsupported, "no pidfd here"))
    }

    /// Whether the process has ended (no wait).
    #[cfg(target_os = "linux")]
    pub fn has_exited(&self) -> bool {
        use std::os::fd::AsRawFd;
        let mut p = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one pollfd we own, no wait.
        let r = unsafe { libc::poll(&mut p, 1, 0) };
        r == 1 && p.revents & libc::POLLIN != 0
    }

    #[cfg(not(target_os = "linux"))]
    pub fn has_exited(&self) -> bool {
        false
    }

    /// Resolves when the process ends (at once if it has). Err: the
    /// runtime cannot watch the descriptor (the caller falls back to
    /// looking periodically).
    #[cfg(target_os = "linux")]
    pub async fn exited(self) -> io::Result<()> {
        // SAFETY: the AsyncFd owns the OwnedFd, which stays open and is
        // never replaced until the AsyncFd is dropped.
        let fd = unsafe {
            tokio::io::unix::AsyncFd::register_with_interest(self.fd, tokio::io::Interest::READABLE)
        }?;
        let _ready = fd.readable().await?;
        Ok(())
    }

    #[cfg(not(target_os = "linux"))]
    pub async fn exited(self) -> io::Result<()> {
        Err(io::Error::new(io::ErrorKind::Unsupported, "no pidfd here"))
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_process_ending_is_seen_and_a_running_one_is_not() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep");
        let w = ExitWatch::open(child.id()).expect("a pidfd");
        assert!(!w.has_exited());
        let waiting = tokio::spawn(w.exited());
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!waiting.is_finished(), "resolved while the process runs");
        child.kill().expect("kill");
        // Not reaped yet: a zombie has ended too.
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
