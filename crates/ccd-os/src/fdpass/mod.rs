//! Descriptor passing over a Unix stream socket (`SCM_RIGHTS`).
//!
//! Three places pass descriptors: the daemon passes a holder connection to
//! a client with `session.attach`'s reply (a direct stream), the client
//! hands its terminal to the holder with `holder.terminal`, and both
//! receiving sides keep what came. Each uses the same two calls (libc,
//! and nix for `sendmsg` and `fcntl`):
//!
//! - [`send_with_fds`]: one `sendmsg` carrying the descriptors with the
//!   message's first bytes; the caller writes whatever did not go.
//! - [`recv_keeping_fds`]: one `recvmsg`, the descriptors that came
//!   appended to a list the caller bounds.
//!
//! # Invariant: a received descriptor is never leaked
//!
//! The receiver makes room for at most [`MAX_FDS`] descriptors per
//! message. The kernel closes a message's others and sets `MSG_CTRUNC`;
//! the ones it did install are described by the (truncated) header all the
//! same, and are read from it: nix's iterator refuses a truncated header,
//! so with it those would stay open and unowned, one set per message (a
//! peer passing three at a time left a holder with 40 after 20 requests).
//! Every installed descriptor becomes an [`OwnedFd`] before this returns.
//! That is why the receiving side calls `recvmsg` itself: the crate's only
//! unsafe code (the sending side is nix's `sendmsg`).
//!
//! # Close-on-exec
//!
//! Linux installs received descriptors close-on-exec (`MSG_CMSG_CLOEXEC`,
//! `linux`). macOS (`macos`) has no such flag: there each one is made close-on-exec
//! (`fcntl(F_SETFD, FD_CLOEXEC)`) as soon as `recvmsg` returns, before
//! [`recv_keeping_fds`] does. A program started from another thread
//! inside that window would inherit it; none is: the receivers are the
//! holder, which starts its one child before it listens (and
//! portable-pty closes every descriptor ≥ 3 in the child before `exec`
//! besides), and the client, which starts the daemon or `ssh` before it
//! connects, never while a connection is being read.

use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
use linux as imp;
#[cfg(not(target_os = "linux"))]
mod macos;
#[cfg(not(target_os = "linux"))]
use macos as imp;

/// The most descriptors one received message may bring (room for more is
/// not made: the kernel closes the rest).
pub const MAX_FDS: usize = 4;

const FD: usize = std::mem::size_of::<libc::c_int>();

/// Sends `bytes` on the stream socket `sock` with `fds` passed along
/// their first byte (`MSG_NOSIGNAL`; `EINTR` retried). Returns how many
/// bytes went: the descriptors went with the first of them, so the rest
/// is written plainly. A non-blocking socket that takes nothing is
/// `WouldBlock`, nothing passed.
pub fn send_with_fds(
    sock: BorrowedFd<'_>,
    bytes: &[u8],
    fds: &[BorrowedFd<'_>],
) -> std::io::Result<usize> {
    if fds.len() > MAX_FDS {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "at most {MAX_FDS} descriptors per message, not {}",
                fds.len()
            ),
        ));
    }
    let mut raw = [0 as libc::c_int; MAX_FDS];
    for (r, fd) in raw.iter_mut().zip(fds) {
        *r = fd.as_raw_fd();
    }
    send_raw(sock, bytes, &raw[..fds.len()])
}

/// The `sendmsg` of [`send_with_fds`] (which checks [`MAX_FDS`]; a test
/// passes more).
fn send_raw(sock: BorrowedFd<'_>, bytes: &[u8], fds: &[libc::c_int]) -> std::io::Result<usize> {
    use nix::sys::socket::{sendmsg, ControlMessage, MsgFlags, UnixAddr};
    let iov = [std::io::IoSlice::new(bytes)];
    let rights = [ControlMessage::ScmRights(fds)];
    let cmsgs: &[ControlMessage<'_>] = if fds.is_empty() { &[] } else { &rights };
    // nix names MSG_NOSIGNAL for Linux only; libc has it for macOS too.
    let flags = MsgFlags::from_bits_retain(libc::MSG_NOSIGNAL);
    loop {
        match sendmsg::<UnixAddr>(sock.as_raw_fd(), &iov, cmsgs, flags, None) {
            Ok(n) => return Ok(n),
            Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// One `recvmsg` from the stream socket `sock` into `buf` (`EINTR`
/// retried, close-on-exec descriptors); the descriptors passed with the
/// bytes, at most [`MAX_FDS`] per message, are appended to `passed`
/// (module invariant). Returns the bytes read (0: end of stream).
#[allow(unsafe_code)] // reason: nix's recvmsg refuses a truncated header (module doc), leaving descriptors unowned
pub fn recv_keeping_fds(
    sock: BorrowedFd<'_>,
    buf: &mut [u8],
    passed: &mut Vec<OwnedFd>,
) -> std::io::Result<usize> {
    let mut control = Control::new();
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let first_new = passed.len();
    // SAFETY: an all-zero msghdr is valid (no name, no iov, no control);
    // it then points at `iov` (into `buf`) and `control`, both alive and
    // of the lengths given for the duration of the call (CMSG_SPACE only
    // computes a size, within `control`'s 64 bytes).
    let (n, msg) = unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.0.as_mut_ptr().cast();
        msg.msg_controllen = libc::CMSG_SPACE((FD * MAX_FDS) as u32) as _;
        loop {
            let r = libc::recvmsg(sock.as_raw_fd(), &mut msg, imp::RECV_FLAGS);
            if r >= 0 {
                break (r as usize, msg);
            }
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    };
    // SAFETY: walking the control data the kernel wrote, with the libc
    // macros, within `msg_controllen`; an SCM_RIGHTS entry's data is
    // `cmsg_len - CMSG_LEN(0)` bytes of descriptors installed for us, which
    // nothing else owns.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let len = ((*c).cmsg_len as usize).saturating_sub(libc::CMSG_LEN(0) as usize);
                let data = libc::CMSG_DATA(c).cast::<libc::c_int>();
                for i in 0..len / FD {
                    passed.push(OwnedFd::from_raw_fd(std::ptr::read_unaligned(data.add(i))));
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    // Every descriptor is owned already, so an error drops none unowned.
    imp::after_recv(&passed[first_new..])?;
    Ok(n)
}

/// Makes `fd` close-on-exec (where `recvmsg` cannot: module doc).
pub fn set_cloexec(fd: &OwnedFd) -> std::io::Result<()> {
    use nix::fcntl::{fcntl, FcntlArg, FdFlag};
    fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC))?;
    Ok(())
}

/// Control data for [`MAX_FDS`] descriptors, aligned for `cmsghdr`.
struct Control([u64; 8]);

impl Control {
    fn new() -> Self {
        // CMSG_SPACE(4 * 4) is 32 on 64-bit Linux, 28 on macOS: well
        // within 64 bytes.
        Control([0; 8])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::fd::AsFd;
    use std::os::unix::net::UnixStream;

    /// `/dev/fd` lists this process's descriptors on Linux and macOS alike.
    fn open_fds() -> usize {
        std::fs::read_dir("/dev/fd").unwrap().count()
    }

    fn is_cloexec(fd: BorrowedFd<'_>) -> bool {
        use nix::fcntl::{fcntl, FcntlArg, FdFlag};
        let flags = fcntl(fd, FcntlArg::F_GETFD).unwrap();
        FdFlag::from_bits_truncate(flags).contains(FdFlag::FD_CLOEXEC)
    }

    #[test]
    fn received_descriptors_are_close_on_exec() {
        let _one = serial();
        let (a, b) = UnixStream::pair().unwrap();
        // A descriptor that is not close-on-exec where it is sent from.
        let plain = nix::unistd::dup(a.as_fd()).unwrap();
        assert!(!is_cloexec(plain.as_fd()));
        send_with_fds(a.as_fd(), b"x", &[plain.as_fd(), plain.as_fd()]).unwrap();
        let mut passed = Vec::new();
        let mut buf = [0u8; 8];
        recv_keeping_fds(b.as_fd(), &mut buf, &mut passed).unwrap();
        assert_eq!(passed.len(), 2);
        for fd in &passed {
            assert!(
                is_cloexec(fd.as_fd()),
                "received {fd:?} would leak into a child"
            );
        }
    }

    /// The call macOS makes after `recvmsg`, checked here on any system.
    #[test]
    fn set_cloexec_makes_a_plain_descriptor_close_on_exec() {
        let _one = serial();
        let (a, _b) = UnixStream::pair().unwrap();
        let plain = nix::unistd::dup(a.as_fd()).unwrap();
        assert!(!is_cloexec(plain.as_fd()));
        set_cloexec(&plain).unwrap();
        assert!(is_cloexec(plain.as_fd()));
    }

    /// The tests open descriptors: one at a time, so a count is exact.
    fn serial() -> std::sync::MutexGuard<'static, ()> {
        static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
        SERIAL.lock().unwrap_or_else(|p| p.into_inner())
    }

    #[test]
    fn descriptors_sent_with_bytes_arrive_with_them() {
        let _one = serial();
        let (a, b) = UnixStream::pair().unwrap();
        let (mut x, y) = UnixStream::pair().unwrap();
        assert_eq!(
            send_with_fds(a.as_fd(), b"reply\n", &[y.as_fd()]).unwrap(),
            6
        );
        drop(y);
        let mut passed = Vec::new();
        let mut buf = [0u8; 64];
        let n = recv_keeping_fds(b.as_fd(), &mut buf, &mut passed).unwrap();
        assert_eq!(&buf[..n], b"reply\n");
        assert_eq!(passed.len(), 1);
        // It is the other end of `x`.
        let mut passed = UnixStream::from(passed.pop().unwrap());
        x.write_all(b"ping").unwrap();
        let mut four = [0u8; 4];
        passed.read_exact(&mut four).unwrap();
        assert_eq!(&four, b"ping");
    }

    #[test]
    fn a_message_with_too_many_descriptors_leaves_none_unowned() {
        let _one = serial();
        let (a, b) = UnixStream::pair().unwrap();
        let (r, w) = UnixStream::pair().unwrap();
        let before = open_fds();
        // Eight at once: more than a receiver makes room for.
        let eight = [r.as_fd(); 8];
        let raw: Vec<libc::c_int> = eight.iter().map(|f| f.as_raw_fd()).collect();
        // Past the public call's bound.
        assert_eq!(send_raw(a.as_fd(), b"x", &raw).unwrap(), 1);
        let mut passed = Vec::new();
        let mut buf = [0u8; 8];
        assert_eq!(
            recv_keeping_fds(b.as_fd(), &mut buf, &mut passed).unwrap(),
            1
        );
        assert_eq!(passed.len(), MAX_FDS, "the ones that fit are kept");
        drop(passed);
        assert_eq!(open_fds(), before, "every other one was closed");
        drop((r, w));
    }

    #[test]
    fn more_descriptors_than_a_message_carries_are_refused_before_sending() {
        let _one = serial();
        let (a, _b) = UnixStream::pair().unwrap();
        let five = [a.as_fd(); MAX_FDS + 1];
        let e = send_with_fds(a.as_fd(), b"x", &five).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    }
}
