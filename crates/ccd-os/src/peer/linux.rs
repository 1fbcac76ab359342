//! Linux: `SO_PEERCRED` (uid and pid of the peer at connect time).

use super::PeerCred;
use std::io;
use std::os::unix::net::UnixStream;

pub(super) fn credentials(stream: &UnixStream) -> io::Result<PeerCred> {
    use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};
    let cred = getsockopt(stream, PeerCredentials).map_err(io::Error::from)?;
    Ok(PeerCred {
        uid: cred.uid(),
        pid: u32::try_from(cred.pid()).ok().filter(|&p| p > 0),
    })
}
