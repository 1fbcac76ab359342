//! macOS (and any system without `SOCK_NONBLOCK`/`SOCK_CLOEXEC`):
//! `socket(2)`, then `fcntl(2)` for both flags.

use std::os::fd::OwnedFd;

pub(super) fn nonblocking_stream_socket() -> std::io::Result<OwnedFd> {
    use nix::sys::socket::{socket, AddressFamily, SockFlag, SockType};
    let fd = socket(
        AddressFamily::Unix,
        SockType::Stream,
        SockFlag::empty(),
        None,
    )?;
    super::set_cloexec_nonblocking(&fd)?;
    Ok(fd)
}
