//! Socket flags: a new Unix stream socket that is non-blocking and
//! close-on-exec. Linux sets both in `socket(2)` itself (`linux`); macOS's
//! `socket` takes no such flags, so `fcntl(2)` sets them right after
//! (`macos`, as the standard library does for its sockets there). The one
//! helper of the daemon (a holder connection it registers with tokio) and
//! the client (a connect with a deadline).
//!
//! On macOS a child started from another thread between the two calls
//! would inherit the socket; the callers start their children (the daemon,
//! `ssh`, holders) on the thread that then connects, or not while they
//! connect.

use std::os::fd::OwnedFd;

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
use linux as imp;
#[cfg(not(target_os = "linux"))]
mod macos;
#[cfg(not(target_os = "linux"))]
use macos as imp;

/// A new Unix stream socket, non-blocking and close-on-exec (see the
/// module doc).
pub fn nonblocking_stream_socket() -> std::io::Result<OwnedFd> {
    imp::nonblocking_stream_socket()
}

/// Makes `fd` close-on-exec and non-blocking with `fcntl(2)`: the flags a
/// system without `SOCK_NONBLOCK`/`SOCK_CLOEXEC` sets after `socket`.
/// Compiled everywhere so that Linux tests check it.
pub fn set_cloexec_nonblocking(fd: &OwnedFd) -> std::io::Result<()> {
    use nix::fcntl::{fcntl, FcntlArg, FdFlag, OFlag};
    fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC))?;
    fcntl(fd, FcntlArg::F_SETFL(OFlag::O_NONBLOCK))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::fcntl::{fcntl, FcntlArg, FdFlag, OFlag};

    fn flags(fd: &OwnedFd) -> (bool, bool) {
        let fd_flags = FdFlag::from_bits_truncate(fcntl(fd, FcntlArg::F_GETFD).expect("F_GETFD"));
        let fl = OFlag::from_bits_truncate(fcntl(fd, FcntlArg::F_GETFL).expect("F_GETFL"));
        (
            fd_flags.contains(FdFlag::FD_CLOEXEC),
            fl.contains(OFlag::O_NONBLOCK),
        )
    }

    #[test]
    fn the_socket_is_nonblocking_and_close_on_exec() {
        let fd = nonblocking_stream_socket().expect("socket");
        assert_eq!(flags(&fd), (true, true));
    }

    #[test]
    fn the_fcntl_path_sets_both_flags_on_a_plain_socket() {
        use nix::sys::socket::{socket, AddressFamily, SockFlag, SockType};
        let fd = socket(
            AddressFamily::Unix,
            SockType::Stream,
            SockFlag::empty(),
            None,
        )
        .expect("socket");
        assert_eq!(flags(&fd), (false, false));
        set_cloexec_nonblocking(&fd).expect("fcntl");
        assert_eq!(flags(&fd), (true, true));
    }
}
