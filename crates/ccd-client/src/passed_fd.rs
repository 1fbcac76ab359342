//! The receiving side of a connection, read with `recvmsg` so that a
//! descriptor the daemon passes along with a reply (`SCM_RIGHTS`: a direct
//! stream's holder connection) is kept instead of being closed by the
//! kernel, as a plain `read` would.

use nix::sys::socket::{recvmsg, ControlMessageOwned, MsgFlags};
use std::io::{IoSliceMut, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

/// A stream socket's reading end that keeps passed descriptors.
#[derive(Debug)]
pub struct RecvStream {
    stream: UnixStream,
    passed: Vec<OwnedFd>,
}

impl RecvStream {
    pub fn new(stream: UnixStream) -> Self {
        Self {
            stream,
            passed: Vec::new(),
        }
    }

    /// The socket (for timeouts).
    pub fn socket(&self) -> &UnixStream {
        &self.stream
    }

    /// The oldest descriptor received and not yet taken.
    pub fn take_passed(&mut self) -> Option<OwnedFd> {
        if self.passed.is_empty() {
            None
        } else {
            Some(self.passed.remove(0))
        }
    }
}

impl Read for RecvStream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let mut space = nix::cmsg_space!([RawFd; 4]);
        let mut iov = [IoSliceMut::new(buf)];
        loop {
            let msg = match recvmsg::<()>(
                self.stream.as_raw_fd(),
                &mut iov,
                Some(&mut space),
                MsgFlags::MSG_CMSG_CLOEXEC,
            ) {
                Ok(m) => m,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(e.into()),
            };
            if msg.flags.contains(MsgFlags::MSG_CTRUNC) {
                tracing::warn!("passed descriptors were truncated");
            }
            let n = msg.bytes;
            for c in msg.cmsgs()? {
                if let ControlMessageOwned::ScmRights(fds) = c {
                    for fd in fds {
                        // SAFETY: the kernel just installed `fd` in this
                        // process for us; nothing else owns it.
                        self.passed.push(unsafe { OwnedFd::from_raw_fd(fd) });
                    }
                }
            }
            return Ok(n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::sys::socket::{sendmsg, ControlMessage};
    use std::io::{IoSlice, Write};

    #[test]
    fn a_descriptor_sent_with_bytes_is_kept_and_the_bytes_read() {
        let (a, b) = UnixStream::pair().expect("pair");
        let (mut x, y) = UnixStream::pair().expect("pair");
        let fds = [y.as_raw_fd()];
        sendmsg::<()>(
            a.as_raw_fd(),
            &[IoSlice::new(b"reply\n")],
            &[ControlMessage::ScmRights(&fds)],
            MsgFlags::empty(),
            None,
        )
        .expect("sendmsg");
        drop(y);
        (&a).write_all(b"more\n").expect("write");
        let mut r = RecvStream::new(b);
        let mut buf = [0u8; 64];
        let mut got = Vec::new();
        while got.len() < 11 {
            let n = r.read(&mut buf).expect("read");
            got.extend_from_slice(&buf[..n]);
        }
        assert_eq!(got, b"reply\nmore\n");
        let passed = r.take_passed().expect("a passed descriptor");
        assert!(r.take_passed().is_none());
        // It is the other end of `x`.
        let mut passed = UnixStream::from(passed);
        x.write_all(b"ping").expect("write");
        let mut four = [0u8; 4];
        passed.read_exact(&mut four).expect("read");
        assert_eq!(&four, b"ping");
    }
}
