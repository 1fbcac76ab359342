//! macOS: `getpeereid` for the uid, `LOCAL_PEERPID` for the pid.

use super::PeerCred;
use std::io;
use std::os::unix::net::UnixStream;

pub(super) fn credentials(stream: &UnixStream) -> io::Result<PeerCred> {
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
