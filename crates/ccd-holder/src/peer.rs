//! The process at the other end of a connection, as the kernel tells it
//! (never as the client says): its uid, and its pid where the system
//! gives it. The only peer-credential calls of the holder: Linux's
//! `SO_PEERCRED`, macOS's `getpeereid` and `LOCAL_PEERPID`. Both give the
//! credentials of the process that connected, as they were then: a
//! connection passed on to another process keeps its maker's.

use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;

/// Who connected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerCred {
    pub uid: u32,
    /// `None` where the system does not say.
    pub pid: Option<u32>,
}

/// The credentials of the process at the other end of `stream`.
#[cfg(target_os = "linux")]
pub fn credentials(stream: &UnixStream) -> io::Result<PeerCred> {
    // SAFETY: zeroed ucred is a valid out-parameter; len matches its size.
    let mut cred: libc::ucred = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: valid fd, pointer and length.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            std::ptr::addr_of_mut!(cred).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(PeerCred {
        uid: cred.uid,
        pid: u32::try_from(cred.pid).ok().filter(|&p| p > 0),
    })
}

/// The credentials of the process at the other end of `stream`.
#[cfg(not(target_os = "linux"))]
pub fn credentials(stream: &UnixStream) -> io::Result<PeerCred> {
    let mut uid: libc::uid_t = 0;
    let mut gid: libc::gid_t = 0;
    // SAFETY: valid fd and out-pointers.
    if unsafe { libc::getpeereid(stream.as_raw_fd(), &mut uid, &mut gid) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(PeerCred {
        uid,
        pid: peer_pid(stream),
    })
}

/// `LOCAL_PEERPID`: the pid of the process that connected.
#[cfg(target_os = "macos")]
fn peer_pid(stream: &UnixStream) -> Option<u32> {
    let mut pid: libc::pid_t = 0;
    let mut len = std::mem::size_of::<libc::pid_t>() as libc::socklen_t;
    // SAFETY: valid fd, pointer and length.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_LOCAL,
            libc::LOCAL_PEERPID,
            std::ptr::addr_of_mut!(pid).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return None;
    }
    u32::try_from(pid).ok().filter(|&p| p > 0)
}

/// No pid on other systems: their connections are never the daemon's
/// (the reserve then serves no one).
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn peer_pid(_stream: &UnixStream) -> Option<u32> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_socket_pair_is_this_process() {
        let (a, _b) = UnixStream::pair().expect("pair");
        let c = credentials(&a).expect("credentials");
        // SAFETY: getuid cannot fail.
        assert_eq!(c.uid, unsafe { libc::getuid() });
        assert_eq!(c.pid, Some(std::process::id()));
    }
}
