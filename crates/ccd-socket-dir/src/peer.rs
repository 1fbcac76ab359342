//! The process at the other end of a connection, as the kernel tells it
//! (never as the peer says): its uid, and its pid where the system gives
//! it. The one home of these calls (the holders check who connects; the
//! client names the daemon or holder it waits on): Linux's `SO_PEERCRED`,
//! macOS's `getpeereid` and `LOCAL_PEERPID`, through nix. They give the
//! credentials the peer had when the connection was made: for a server,
//! the process that connected (a connection passed on to another process
//! keeps its maker's); for a client, the process that listened.

use std::io;
use std::os::unix::net::UnixStream;

/// Who connected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerCred {
    pub uid: u32,
    /// `None` where the system does not say.
    pub pid: Option<u32>,
}

/// The credentials of the process at the other end of `stream`
/// (`SO_PEERCRED`).
#[cfg(target_os = "linux")]
pub fn credentials(stream: &UnixStream) -> io::Result<PeerCred> {
    use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};
    let cred = getsockopt(stream, PeerCredentials).map_err(io::Error::from)?;
    Ok(PeerCred {
        uid: cred.uid(),
        pid: u32::try_from(cred.pid()).ok().filter(|&p| p > 0),
    })
}

/// The credentials of the process at the other end of `stream`
/// (`getpeereid`, and `LOCAL_PEERPID` for the pid).
#[cfg(target_os = "macos")]
pub fn credentials(stream: &UnixStream) -> io::Result<PeerCred> {
    use nix::sys::socket::{getsockopt, sockopt::LocalPeerPid};
    let (uid, _gid) = nix::unistd::getpeereid(stream).map_err(io::Error::from)?;
    Ok(PeerCred {
        uid: uid.as_raw(),
        pid: getsockopt(stream, LocalPeerPid)
            .ok()
            .and_then(|p| u32::try_from(p).ok())
            .filter(|&p| p > 0),
    })
}

/// Other systems: not supported (no connection is served without a uid
/// to check).
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub fn credentials(_stream: &UnixStream) -> io::Result<PeerCred> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "peer credentials are read on Linux and macOS only",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_socket_pair_is_this_process() {
        let (a, _b) = UnixStream::pair().expect("pair");
        let c = credentials(&a).expect("credentials");
        assert_eq!(c.uid, nix::unistd::getuid().as_raw());
        assert_eq!(c.pid, Some(std::process::id()));
    }
}
