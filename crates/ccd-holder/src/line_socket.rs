//! A connection's socket as a sink of whole lines, shared by the
//! connection's replies, its output pump and the PTY reader's direct
//! deliveries (see the fan-out module).
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
//!
//! # A handed-off terminal
//!
//! Once the client hands its terminal over (`holder.terminal`,
//! [`crate::terminal`]), the stream's output and redraws go to the
//! terminal as raw bytes ([`LineSocket::write_output`],
//! [`LineSocket::try_output`], [`LineSocket::write_resync`]) and only the
//! replies and notices (the exit, the release) to the socket. Both sinks
//! are written under the same mutex, so a notice written after the last
//! output follows it. A tail left by a non-blocking try belongs to the
//! sink that was tried: it is finished before the terminal is taken and
//! dropped with the terminal when it is released.

use std::cell::OnceCell;
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex, MutexGuard};

use ccd_protocol::methods::NotificationKind;
use ccd_protocol::stream::{encode_output_line, Resync, SessionResync, RESYNC_PREFIX};
use ccd_protocol::{encode, Notification};

use crate::terminal::TtyOut;

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
    /// The unsent end of a line begun by [`LineSocket::try_line`] (or of
    /// output begun on the terminal).
    tail: Vec<u8>,
    /// The client's terminal, while it is handed to the holder.
    tty: Option<TtyOut>,
    /// The stream offset just past the output written so far (or the
    /// position of the last redraw), tails included.
    end: u64,
}

/// One chunk of output, ready for either sink: its `session.output` line
/// is encoded on first use, once for every client that needs it.
pub struct OutputLine<'a> {
    label: &'a str,
    seq: u64,
    chunk: &'a [u8],
    line: OnceCell<Vec<u8>>,
}

impl<'a> OutputLine<'a> {
    /// The chunk at stream offset `seq` of the session labelled `label`.
    pub fn new(label: &'a str, seq: u64, chunk: &'a [u8]) -> Self {
        Self {
            label,
            seq,
            chunk,
            line: OnceCell::new(),
        }
    }

    fn line(&self) -> &[u8] {
        self.line
            .get_or_init(|| encode_output_line(self.label, self.seq, self.chunk))
    }

    fn end(&self) -> u64 {
        self.seq + self.chunk.len() as u64
    }
}

impl LineSocket {
    /// Wrap a connection's write side.
    pub fn new(stream: UnixStream) -> Self {
        Self {
            stream,
            tail: Vec::new(),
            tty: None,
            end: 0,
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
            match &mut self.tty {
                Some(t) => t.write_all(&tail, self.stream.as_fd())?,
                None => self.stream.write_all(&tail)?,
            }
        }
        Ok(())
    }

    /// The stream offset just past what this connection's client was sent.
    pub fn end(&self) -> u64 {
        self.end
    }

    /// Write `lines` (replies, the attach's first redraw) whose last
    /// stream position is `end` (the redraw's `seq`).
    pub fn write_lines_at(&mut self, lines: &[u8], end: u64) -> std::io::Result<()> {
        self.write_line(lines)?;
        self.end = end;
        Ok(())
    }

    /// Output (blocking): raw to a handed-off terminal, else as a
    /// `session.output` line.
    pub fn write_output(&mut self, out: &OutputLine<'_>) -> std::io::Result<()> {
        self.finish()?;
        match &mut self.tty {
            Some(t) => t.write_all(out.chunk, self.stream.as_fd())?,
            None => self.stream.write_all(out.line())?,
        }
        self.end = out.end();
        Ok(())
    }

    /// A full redraw (blocking): to a handed-off terminal as the bytes a
    /// terminal client writes for it (home, clear, the redraw), else as a
    /// `session.resync` line.
    pub fn write_resync(&mut self, r: &Resync) -> std::io::Result<()> {
        self.finish()?;
        match &mut self.tty {
            Some(t) => {
                let mut bytes = Vec::with_capacity(r.data.len() + 8);
                bytes.extend_from_slice(RESYNC_PREFIX);
                bytes.extend_from_slice(&r.data);
                t.write_all(&bytes, self.stream.as_fd())?;
            }
            None => self
                .stream
                .write_all(&notification_line(SessionResync::NAME, r)?)?,
        }
        self.end = r.seq;
        Ok(())
    }

    /// Output without waiting ([`LineSocket::try_line`]'s rules), to the
    /// terminal or the socket.
    pub fn try_output(&mut self, out: &OutputLine<'_>) -> Tried {
        let tried = if self.tty.is_some() {
            self.try_with(out.chunk, |tty, _, bytes| {
                tty.as_mut().map_or(0, |t| t.try_write(bytes))
            })
        } else {
            self.try_line(out.line())
        };
        if tried != Tried::Nothing {
            self.end = out.end();
        }
        tried
    }

    /// Takes the client's terminal: output from here on goes to it. A
    /// line still half-sent on the socket is finished first (blocking).
    pub fn take_terminal(&mut self, tty: TtyOut) -> std::io::Result<()> {
        self.finish()?;
        self.tty = Some(tty);
        Ok(())
    }

    /// Lets the terminal go (its descriptor closes here); a tail meant
    /// for it is dropped. Output from here on goes to the socket.
    pub fn release_terminal(&mut self) {
        if self.tty.take().is_some() {
            self.tail.clear();
        }
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
        use nix::sys::socket::{send, MsgFlags};
        self.try_with(line, |_, stream, line| loop {
            match send(
                stream.as_raw_fd(),
                line,
                // nix names MSG_NOSIGNAL for Linux only; libc has it for macOS too.
                MsgFlags::MSG_DONTWAIT | MsgFlags::from_bits_retain(libc::MSG_NOSIGNAL),
            ) {
                Ok(n) => break n,
                Err(nix::errno::Errno::EINTR) => {}
                // EAGAIN, or an error the next blocking write meets too.
                Err(_) => break 0,
            }
        })
    }

    /// The rules of every try: nothing while a tail waits; `write` makes
    /// one non-blocking attempt (the bytes taken, 0 for none or an error);
    /// what it left of `bytes` becomes the tail.
    fn try_with(
        &mut self,
        bytes: &[u8],
        write: impl FnOnce(&mut Option<TtyOut>, &UnixStream, &[u8]) -> usize,
    ) -> Tried {
        if !self.tail.is_empty() || bytes.is_empty() {
            return Tried::Nothing;
        }
        match write(&mut self.tty, &self.stream, bytes) {
            0 => Tried::Nothing,
            n if n < bytes.len() => {
                self.tail = bytes[n..].to_vec();
                Tried::Partial
            }
            _ => Tried::Sent,
        }
    }
}

/// A notification's line: `method` with `params`.
pub(crate) fn notification_line<P: serde::Serialize>(
    method: &str,
    params: &P,
) -> std::io::Result<Vec<u8>> {
    let params = serde_json::to_value(params).map_err(std::io::Error::other)?;
    encode(&Notification::new(method, Some(params))).map_err(std::io::Error::other)
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
