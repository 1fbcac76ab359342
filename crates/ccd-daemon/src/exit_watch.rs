//! Waiting for a process to end without looking at it again and again.
//!
//! On Linux a pidfd (`pidfd_open`, 5.3+) becomes readable when its
//! process terminates — a zombie counts, so a holder's child is seen
//! ending before the holder reaps it — whether or not the process is ours.
//! [`ExitWatch::exited`] waits for that through the runtime's reactor: no
//! thread and no timer per watched process, nothing wakes until the
//! process ends. On macOS a kqueue of its own per process holds an
//! `EVFILT_PROC`/`NOTE_EXIT` event on it (kqueue(2)): the kqueue
//! descriptor becomes readable once the process has exited, and is waited
//! for the same way. One difference: a process that has ended but is not
//! reaped yet (a zombie) cannot be registered there, so `open` answers
//! `ESRCH` ("it has ended") instead of a handle that is readable at once —
//! callers take both the same way. Elsewhere (or on an older Linux
//! kernel) [`ExitWatch::open`] fails and callers keep their periodic
//! checks.
//!
//! A pidfd, like a kqueue event, names one process, not a pid: once open,
//! a reused pid cannot fool it. Opening it by pid can race the pid's
//! reuse, so callers open it *before* they check who the pid is (see
//! `registry_watch::scan`), or for a pid that cannot be reused meanwhile
//! (a holder's unreaped child).

use std::io;

/// An open handle on one process, to wait for its end.
/// Its descriptor (a pidfd on Linux, a kqueue on macOS) is readable once
/// the process has ended.
#[derive(Debug)]
pub struct ExitWatch {
    #[cfg(any(target_os = "linux", target_os = "macos"))]
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
        #[allow(unsafe_code)] // reason: pidfd_open has no wrapper in nix 0.30 or std
        //
        // SAFETY: pidfd_open takes a pid and flags (no pointers) and returns
        // a new descriptor or -1; a new one is owned by nobody else, so it
        // becomes an OwnedFd at once.
        let fd = unsafe {
            let fd = libc::syscall(libc::SYS_pidfd_open, pid, 0);
            i32::try_from(fd)
                .ok()
                .filter(|fd| *fd >= 0)
                .map(|fd| OwnedFd::from_raw_fd(fd))
        };
        match fd {
            Some(fd) => Ok(Self { fd }),
            None => Err(io::Error::last_os_error()),
        }
    }

    /// A handle on the process `pid` is now: a new kqueue holding one
    /// `EVFILT_PROC` event for `NOTE_EXIT` on it. Err: no such process
    /// (`ESRCH`: it has ended, a zombie included, or never was).
    #[cfg(target_os = "macos")]
    pub fn open(pid: u32) -> io::Result<Self> {
        use nix::sys::event::{EvFlags, EventFilter, FilterFlag, KEvent, Kqueue};
        let pid =
            libc::pid_t::try_from(pid).map_err(|_| io::Error::from_raw_os_error(libc::ESRCH))?;
        if pid <= 0 {
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
        let kq = Kqueue::new()?;
        let event = KEvent::new(
            pid as usize,
            EventFilter::EVFILT_PROC,
            EvFlags::EV_ADD,
            FilterFlag::NOTE_EXIT,
            0,
            0,
        );
        // Registration only (no room for events): an error comes back as
        // the call's own (`ESRCH` for a pid that names no live process).
        kq.kevent(&[event], &mut [], None)?;
        Ok(Self { fd: kq.into() })
    }

    /// Not available here.
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    pub fn open(_pid: u32) -> io::Result<Self> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "no process exit watch here",
        ))
    }

    /// Whether the process has ended (no wait).
    #[cfg(any(target_os = "linux", target_os = "macos"))]
    pub fn has_exited(&self) -> bool {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        use std::os::fd::AsFd;
        let mut p = [PollFd::new(self.fd.as_fd(), PollFlags::POLLIN)];
        poll(&mut p, PollTimeout::ZERO).is_ok_and(|n| n == 1)
            && p[0]
                .revents()
                .is_some_and(|r| r.contains(PollFlags::POLLIN))
    }

    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    pub fn has_exited(&self) -> bool {
        false
    }

    /// Resolves when the process ends (at once if it has). Err: the
    /// runtime cannot watch the descriptor (the caller falls back to
    /// looking periodically).
    #[cfg(any(target_os = "linux", target_os = "macos"))]
    pub async fn exited(self) -> io::Result<()> {
        let fd = crate::reactor::Watched::new(self.fd, tokio::io::Interest::READABLE)?;
        let _ready = fd.readable().await?;
        Ok(())
    }

    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    pub async fn exited(self) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "no process exit watch here",
        ))
    }
}

#[cfg(all(test, any(target_os = "linux", target_os = "macos")))]
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
