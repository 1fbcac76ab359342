//! The terminal hand-off (`holder.terminal`): a path that opens a passed
//! terminal anew, as a file description of the holder's own (so the
//! client's never gets `O_NONBLOCK`), and whether the client's socket
//! hung up while the holder holds its terminal.
//!
//! - Linux (`linux`): `/proc/self/fd/N`; `POLLRDHUP`.
//! - macOS (`macos`, also any system without `/proc` or `POLLRDHUP`): the
//!   device's own name (`ttyname`); readability, then a `MSG_PEEK` read
//!   on wake (an end of file is a hang-up).
//!
//! [`device_name`] and [`peer_closed`], the macOS side's mechanisms, are
//! compiled everywhere so that Linux tests check them.

use std::os::fd::BorrowedFd;
use std::path::PathBuf;

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub use linux::{hung_up, tty_path, HANGUP_EVENTS};
#[cfg(not(target_os = "linux"))]
mod macos;
#[cfg(not(target_os = "linux"))]
pub use macos::{hung_up, tty_path, HANGUP_EVENTS};

/// The terminal device's name (`ttyname(3)`). The mechanism of
/// `tty_path` outside Linux; compiled everywhere so that Linux tests
/// check it opens a description of its own.
pub fn device_name(fd: BorrowedFd<'_>) -> std::io::Result<PathBuf> {
    nix::unistd::ttyname(fd).map_err(std::io::Error::from)
}

/// Whether reading `socket` would meet its end (`recv` with
/// `MSG_PEEK | MSG_DONTWAIT` returns 0). Compiled everywhere so that
/// Linux tests check it.
pub fn peer_closed(socket: BorrowedFd<'_>) -> bool {
    use nix::sys::socket::{recv, MsgFlags};
    use std::os::fd::AsRawFd;
    let mut byte = [0u8; 1];
    loop {
        match recv(
            socket.as_raw_fd(),
            &mut byte,
            MsgFlags::MSG_PEEK | MsgFlags::MSG_DONTWAIT,
        ) {
            Ok(n) => return n == 0,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(nix::errno::Errno::EAGAIN) => return false,
            Err(_) => return true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::fd::AsFd;
    use std::os::unix::fs::OpenOptionsExt;
    use std::os::unix::net::UnixStream;

    #[test]
    fn the_device_name_opens_a_description_of_its_own() {
        let pty = nix::pty::openpty(None, None).expect("openpty");
        let path = device_name(pty.slave.as_fd()).expect("ttyname");
        let ours = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(&path)
            .expect("open the device");
        let flags = |fd: BorrowedFd<'_>| {
            nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_GETFL).expect("F_GETFL")
        };
        assert_ne!(flags(ours.as_fd()) & libc::O_NONBLOCK, 0);
        assert_eq!(
            flags(pty.slave.as_fd()) & libc::O_NONBLOCK,
            0,
            "the passed descriptor's description keeps its flags"
        );
        let (a, _b) = UnixStream::pair().expect("pair");
        assert!(device_name(a.as_fd()).is_err(), "a socket is no terminal");
    }

    #[test]
    fn a_pending_request_is_no_hang_up_and_an_end_is() {
        let (a, mut b) = UnixStream::pair().expect("pair");
        assert!(!peer_closed(a.as_fd()), "nothing yet");
        b.write_all(b"{}\n").expect("write");
        assert!(!peer_closed(a.as_fd()), "a request waits");
        let (c, d) = UnixStream::pair().expect("pair");
        drop(d);
        assert!(peer_closed(c.as_fd()), "the peer hung up");
        let mut buf = [0u8; 3];
        (&a).read_exact(&mut buf)
            .expect("the request was not consumed");
        assert_eq!(&buf, b"{}\n");
    }
}
