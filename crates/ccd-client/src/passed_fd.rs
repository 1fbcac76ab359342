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
//!
//! A read may also have a deadline ([`RecvStream::set_deadline`]): an
//! instant after which every read fails with `TimedOut`, however the bytes
//! came before it. A per-read timeout (`SO_RCVTIMEO`) restarts with each
//! read, so a peer sending one byte a second held a reader mid-line
//! forever; the deadline bounds the whole line (a reply, `hello`).

use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

/// A stream socket's reading end that keeps passed descriptors.
#[derive(Debug)]
pub struct RecvStream {
    stream: UnixStream,
    passed: Vec<OwnedFd>,
    /// The socket's read timeout as last set through
    /// [`RecvStream::set_read_timeout`] (`None`: reads wait in `poll` first).
    timeout: Option<Duration>,
    /// No read succeeds after this ([`RecvStream::set_deadline`]).
    deadline: Option<Instant>,
}

impl RecvStream {
    pub fn new(stream: UnixStream) -> Self {
        Self {
            stream,
            passed: Vec::new(),
            timeout: None,
            deadline: None,
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

    /// Bounds every read from here on by `deadline` (`None`: no bound):
    /// a read waits for bytes at most until then and fails with
    /// `TimedOut` once it has passed, even while bytes keep coming.
    pub fn set_deadline(&mut self, deadline: Option<Instant>) {
        self.deadline = deadline;
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
        if let Some(deadline) = self.deadline {
            // `poll` counts whole milliseconds: it may end a little early.
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        "the deadline passed",
                    ));
                }
                if crate::deadline::readable(self.stream.as_fd(), left)? {
                    break;
                }
            }
        } else {
            self.wait_readable()?;
        }
        ccd_os::fdpass::recv_keeping_fds(self.stream.as_fd(), buf, &mut self.passed)
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
        ccd_os::fdpass::send_with_fds(a.as_fd(), b"reply\n", &[y.as_fd()]).expect("sendmsg");
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

    /// A deadline bounds reads however the bytes come: a peer sending a
    /// byte every 20 ms (each read gets one, within any per-read
    /// timeout) meets `TimedOut` once the deadline has passed.
    #[test]
    fn a_deadline_ends_reads_of_a_trickling_peer() {
        let (a, b) = UnixStream::pair().expect("pair");
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopping = stop.clone();
        let peer = std::thread::spawn(move || {
            while !stopping.load(std::sync::atomic::Ordering::Relaxed) {
                if (&b).write_all(b"x").is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        let mut r = RecvStream::new(a);
        r.set_read_timeout(Some(Duration::from_millis(200)))
            .expect("timeout");
        let started = Instant::now();
        r.set_deadline(Some(started + Duration::from_millis(300)));
        let mut buf = [0u8; 1];
        let mut got = 0;
        let e = loop {
            match r.read(&mut buf) {
                Ok(n) => got += n,
                Err(e) => break e,
            }
            assert!(started.elapsed() < Duration::from_secs(5), "still reading");
        };
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut, "{e}");
        assert!(got > 0, "bytes came before the deadline");
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(300) && took < Duration::from_millis(600),
            "{took:?}"
        );
        // Cleared, reads go on.
        r.set_deadline(None);
        assert_eq!(r.read(&mut buf).expect("read"), 1);
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        drop(r);
        peer.join().expect("peer");
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
