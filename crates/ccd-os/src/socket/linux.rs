//! Linux: both flags set by `socket(2)` itself.

use std::os::fd::OwnedFd;

pub(super) fn nonblocking_stream_socket() -> std::io::Result<OwnedFd> {
    use nix::sys::socket::{socket, AddressFamily, SockFlag, SockType};
    Ok(socket(
        AddressFamily::Unix,
        SockType::Stream,
        SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC,
        None,
    )?)
}
