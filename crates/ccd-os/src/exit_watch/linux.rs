//! Linux: a pidfd (`pidfd_open`, through rustix).

use std::os::fd::OwnedFd;

pub(super) fn open(pid: libc::pid_t) -> std::io::Result<OwnedFd> {
    use rustix::process::{pidfd_open, Pid, PidfdFlags};
    let pid = Pid::from_raw(pid).ok_or_else(|| std::io::Error::from_raw_os_error(libc::ESRCH))?;
    Ok(pidfd_open(pid, PidfdFlags::empty())?)
}
