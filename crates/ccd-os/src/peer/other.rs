//! Other systems: not supported (no connection is served without a uid
//! to check).

use super::PeerCred;
use std::io;
use std::os::unix::net::UnixStream;

pub(super) fn credentials(_stream: &UnixStream) -> io::Result<PeerCred> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "peer credentials are read on Linux and macOS only",
    ))
}
