//! The process at the other end of a connection, as the kernel tells it
//! (never as the peer says): its uid, and its pid where the system gives
//! it. The one home of these calls (the holders check who connects; the
//! client names the daemon or holder it waits on): Linux's `SO_PEERCRED`
//! (`linux`), macOS's `getpeereid` and `LOCAL_PEERPID` (`macos`), through
//! nix; the shape tokio gives its `ucred`. They give the credentials the
//! peer had when the connection was made: for a server, the process that
//! connected (a connection passed on to another process keeps its
//! maker's); for a client, the process that listened.

use std::io;
use std::os::unix::net::UnixStream;

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
use linux as imp;
#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
use macos as imp;
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
mod other;
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
use other as imp;

/// Who connected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerCred {
    pub uid: u32,
    /// `None` where the system does not say.
    pub pid: Option<u32>,
}

/// The credentials of the process at the other end of `stream`.
pub fn credentials(stream: &UnixStream) -> io::Result<PeerCred> {
    imp::credentials(stream)
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
