//! A connection's socket as a sink of whole lines, shared by the
//! connection's replies, its output pump and the PTY reader's direct
//! deliveries ([`crate::fanout`]).
//!
//! # Invariant: lines never interleave
//!
//! Every write happens under the one mutex around [`LineSocket`]. A
//! blocking writer (a reply, the pump) writes whole lines. The PTY reader
//! may only *try* a line ([`LineSocket::try_line`]: one non-blocking
//! `send`, never a wait); if the socket takes only part of it, the rest is
//! kept here as the `tail`, and whoever writes next — the pump, woken for
//! it, or a reply that comes first — writes that tail before anything else
//! ([`LineSocket::write_line`], [`LineSocket::finish`]). So the peer
//! always reads whole lines in the order they were begun.

use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex, MutexGuard};

/// A socket shared by the threads that write to one connection.
pub type Shared = Arc<Mutex<LineSocket>>;

/// Lock a shared socket (a poisoned lock is still a socket).
pub fn lock(s: &Shared) -> MutexGuard<'_, LineSocket> {
    s.lock().unwrap_or_else(|p| p.into_inner())
}

/// What [`LineSocket::try_line`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tried {
    /// The whole line went.
    Sent,
    /// Part of it went; the rest waits in the socket's tail for the next
    /// writer ([`LineSocket::finish`]).
    Partial,
    /// Nothing went (a full buffer, an unfinished tail, an error): the
    /// caller still has the line to give to a blocking writer.
    Nothing,
}

/// The write side of one connection.
#[derive(Debug)]
pub struct LineSocket {
    stream: UnixStream,
    /// The unsent end of a line begun by [`LineSocket::try_line`].
    tail: Vec<u8>,
}

impl LineSocket {
    /// Wrap a connection's write side.
    pub fn new(stream: UnixStream) -> Self {
        Self {
            stream,
            tail: Vec::new(),
        }
    }

    /// A shared one.
    pub fn shared(stream: UnixStream) -> Shared {
        Arc::new(Mutex::new(Self::new(stream)))
    }

    /// Write what is left of a line begun earlier (blocking).
    pub fn finish(&mut self) -> std::io::Result<()> {
        if !self.tail.is_empty() {
            let tail = std::mem::take(&mut self.tail);
            self.stream.write_all(&tail)?;
        }
        Ok(())
    }

    /// Write one whole line (blocking), after any unfinished one.
    pub fn write_line(&mut self, line: &[u8]) -> std::io::Result<()> {
        self.finish()?;
        self.stream.write_all(line)
    }

    /// True while a begun line waits to be finished.
    pub fn has_tail(&self) -> bool {
        !self.tail.is_empty()
    }

    /// One non-blocking `send` of `line` (retried on EINTR). Never waits.
    pub fn try_line(&mut self, line: &[u8]) -> Tried {
        if !self.tail.is_empty() || line.is_empty() {
            return Tried::Nothing;
        }
        let sent = loop {
            // SAFETY: a valid fd we own, and a buffer of `line.len()` bytes.
            let r = unsafe {
                libc::send(
                    self.stream.as_raw_fd(),
                    line.as_ptr().cast(),
                    line.len(),
                    libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
                )
            };
            if r >= 0 {
                break usize::try_from(r).unwrap_or(0);
            }
            if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                // EAGAIN, or an error the next blocking write meets too.
                break 0;
            }
        };
        if sent == 0 {
            Tried::Nothing
        } else if sent < line.len() {
            self.tail = line[sent..].to_vec();
            Tried::Partial
        } else {
            Tried::Sent
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn a_partial_line_is_finished_before_the_next_one() {
        let (a, mut b) = UnixStream::pair().unwrap();
        let mut s = LineSocket::new(a);
        // Fill the socket until a try sends only part or nothing.
        let line = vec![b'x'; 50_000];
        let mut lines = 0;
        let outcome = loop {
            match s.try_line(&line) {
                Tried::Sent => lines += 1,
                other => break other,
            }
        };
        assert!(lines > 0);
        assert_ne!(outcome, Tried::Sent);
        // While a tail waits, nothing else is tried.
        if outcome == Tried::Partial {
            assert!(s.has_tail());
            assert_eq!(s.try_line(b"y\n"), Tried::Nothing);
        }
        let reader = std::thread::spawn(move || {
            let mut all = Vec::new();
            b.read_to_end(&mut all).unwrap();
            all
        });
        s.write_line(b"end\n").unwrap();
        drop(s);
        let all = reader.join().unwrap();
        let partial = usize::from(outcome == Tried::Partial);
        let xs = (lines + partial) * 50_000;
        assert_eq!(all.len(), xs + 4);
        assert!(all[..xs].iter().all(|&c| c == b'x'));
        assert_eq!(&all[xs..], b"end\n");
    }
}
