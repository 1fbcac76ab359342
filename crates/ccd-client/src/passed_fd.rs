//! The receiving side of a connection, read with `recvmsg` so that a
//! descriptor the daemon passes along with a reply (`SCM_RIGHTS`: a direct
//! stream's holder connection) is kept instead of being closed by the
//! kernel, as a plain `read` would.
//!
//! A read without a timeout waits in `poll(POLLIN)` before `recvmsg`: a
//! Unix stream socket's readers share its wait queue with its write space,
//! so a thread blocked in `recvmsg` is woken each time the peer takes what
//! this side wrote. On an attached terminal that was the output thread
//! woken by every keystroke the holder read, preempting the holder's
//! connection thread on the way to the PTY; `poll` filters those wakeups
//! out (only `POLLIN` wakes it).

use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;

/// A stream socket's reading end that keeps passed descriptors.
#[derive(Debug)]
pub struct RecvStream {
    stream: UnixStream,
    passed: Vec<OwnedFd>,
    /// The socket's read timeout as last set through
    /// [`RecvStream::set_read_timeout`] (`None`: reads wait in `poll` first).
    timeout: Option<Duration>,
}

impl RecvStream {
    pub fn new(stream: UnixStream) -> Self {
        Self {
            stream,
            passed: Vec::new(),
            timeout: None,
        }
    }

    /// The socket (to wait on it).
    pub fn socket(&self) -> &UnixStream {
        &self.stream
    }

    /// Bounds each read (`SO_RCVTIMEO`); `None` waits without bound.
    pub fn set_read_timeout(&mut self, timeout: Option<Duration>) -> std::io::Result<()> {
        self.stream.set_read_timeout(timeout)?;
        self.timeout = timeout;
        Ok(())
    }

    /// Without a timeout: waits until the socket has something to read
    /// (data, its end, an error), in `poll`, not in `recvmsg` (module doc).
    fn wait_readable(&self) -> std::io::Result<()> {
        if self.timeout.is_some() {
            return Ok(()); // `recvmsg` itself is bounded: keep its timeout
        }
        crate::deadline::until_readable(self.stream.as_fd())
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
        self.wait_readable()?;
        ccd_fdpass::recv_keeping_fds(self.stream.as_fd(), buf, &mut self.passed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_descriptor_sent_with_bytes_is_kept_and_the_bytes_read() {
        let (a, b) = UnixStream::pair().expect("pair");
        let (mut x, y) = UnixStream::pair().expect("pair");
        ccd_fdpass::send_with_fds(a.as_fd(), b"reply\n", &[y.as_fd()]).expect("sendmsg");
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

    /// A reader waiting without a timeout is not woken when the peer takes
    /// what this side writes: 2,000 lines written and read meanwhile once
    /// woke a reader blocked in `recvmsg` about once each. Counted from
    /// `/proc` ([`ccd_testkit::threads`]): Linux only.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_waiting_reader_sleeps_while_the_peer_reads_what_this_side_wrote() {
        let (a, b) = UnixStream::pair().expect("pair");
        let writer = a.try_clone().expect("clone");
        let reader = std::thread::Builder::new()
            .name("waiting-reader".into())
            .spawn(move || {
                let mut r = RecvStream::new(a);
                let mut buf = [0u8; 16];
                r.read(&mut buf).expect("read")
            })
            .expect("spawn");
        let switches = || -> u64 {
            ccd_testkit::threads::thread_switches(|name| name == "waiting-reader")
                .values()
                .map(|(_, n)| n)
                .sum()
        };
        std::thread::sleep(Duration::from_millis(100)); // it waits by now
        let before = switches();
        let mut peer = b.try_clone().expect("clone");
        let taker = std::thread::spawn(move || {
            let mut line = [0u8; 8];
            for _ in 0..2000 {
                peer.read_exact(&mut line).expect("peer read");
            }
        });
        for _ in 0..2000 {
            (&writer).write_all(b"keypress").expect("write");
            std::thread::sleep(Duration::from_micros(50)); // one at a time
        }
        taker.join().expect("taker");
        let woken = switches() - before;
        (&b).write_all(b"x").expect("end the read");
        assert_eq!(reader.join().expect("reader"), 1);
        assert!(woken <= 20, "the waiting reader was woken {woken} times");
    }
}
