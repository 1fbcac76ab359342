//! The reading half's buffer: [`std::io::BufReader`]'s, but allocated
//! zeroed, never filled with zeros by hand, and small until a read fills
//! it.
//!
//! A `BufReader` over a reader without `read_buf` (the standard library's
//! `BorrowedCursor` is unstable, so [`crate::passed_fd::RecvStream`] has
//! none) writes zeros over its whole buffer before the first read. For
//! the 256 KiB a connection may use (an output line is up to ~88 KB) that
//! was a 256 KiB `memset` and 64 page faults on every connection, the
//! largest cost of a one-call client like `ccd search` after the process
//! start. Here the buffer starts at [`RecvBuf::new`]'s `initial` bytes,
//! allocated zeroed (from the heap, no `mmap` and `munmap` for a client
//! whose replies are short), and the first read that fills it moves it to
//! its `max` (allocated zeroed too: fresh pages from the kernel, touched
//! only where the kernel writes), which it keeps. Bounded by `max`.

use std::io::{BufRead, Read};

/// A buffered reader whose buffer is allocated zeroed and grows once
/// (see the module header). Holds at most `max` bytes.
pub(crate) struct RecvBuf<R> {
    inner: R,
    buf: Box<[u8]>,
    /// What the buffer grows to once a read fills it.
    max: usize,
    /// The unread bytes are `buf[pos..filled]`.
    pos: usize,
    filled: usize,
}

impl<R: Read> RecvBuf<R> {
    /// `initial` bytes of buffer, `max` once a read fills them.
    pub(crate) fn new(initial: usize, max: usize, inner: R) -> Self {
        let initial = initial.clamp(1, max.max(1));
        Self {
            inner,
            buf: vec![0u8; initial].into_boxed_slice(),
            max: max.max(initial),
            pos: 0,
            filled: 0,
        }
    }

    pub(crate) fn get_ref(&self) -> &R {
        &self.inner
    }

    pub(crate) fn get_mut(&mut self) -> &mut R {
        &mut self.inner
    }

    /// The bytes read from the inner reader and not consumed yet.
    pub(crate) fn buffer(&self) -> &[u8] {
        &self.buf[self.pos..self.filled]
    }
}

impl<R: Read> Read for RecvBuf<R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        // Nothing buffered and a read at least as large as the buffer:
        // straight into `out`, as `BufReader` does.
        if self.pos == self.filled && out.len() >= self.buf.len() {
            return self.inner.read(out);
        }
        let n = {
            let avail = self.fill_buf()?;
            let n = avail.len().min(out.len());
            out[..n].copy_from_slice(&avail[..n]);
            n
        };
        self.consume(n);
        Ok(n)
    }
}

impl<R: Read> BufRead for RecvBuf<R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        if self.pos >= self.filled {
            // Set before the read: an error leaves the buffer empty.
            self.pos = 0;
            self.filled = 0;
            let n = self.inner.read(&mut self.buf)?;
            self.filled = n.min(self.buf.len());
            if self.filled == self.buf.len() && self.buf.len() < self.max {
                // Long lines come: the whole buffer from the next read on.
                let mut grown = vec![0u8; self.max].into_boxed_slice();
                grown[..self.filled].copy_from_slice(&self.buf[..self.filled]);
                self.buf = grown;
            }
        }
        Ok(&self.buf[self.pos..self.filled])
    }

    fn consume(&mut self, amt: usize) {
        self.pos = (self.pos + amt).min(self.filled);
    }
}

#[cfg(test)]
mod tests {
    use super::RecvBuf;
    use std::io::{BufRead, Read};

    /// Hands out its bytes a few at a time, then an error once, then the rest.
    struct Trickle {
        data: Vec<u8>,
        at: usize,
        step: usize,
        fail_at: Option<usize>,
    }

    impl Read for Trickle {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.fail_at == Some(self.at) {
                self.fail_at = None;
                return Err(std::io::ErrorKind::TimedOut.into());
            }
            let n = self.step.min(buf.len()).min(self.data.len() - self.at);
            buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }

    #[test]
    fn lines_come_whole_across_reads_and_an_error() {
        let data = b"first line\nsecond, longer line\n\nthird\n".to_vec();
        let mut r = RecvBuf::new(
            8,
            8,
            Trickle {
                data: data.clone(),
                at: 0,
                step: 5,
                fail_at: Some(15),
            },
        );
        let mut got = Vec::new();
        loop {
            let avail = match r.fill_buf() {
                Ok(a) => a,
                Err(e) => {
                    assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
                    assert!(r.buffer().is_empty());
                    continue;
                }
            };
            if avail.is_empty() {
                break;
            }
            assert!(avail.len() <= 8);
            let n = avail.len().min(3);
            got.extend_from_slice(&avail[..n]);
            r.consume(n);
        }
        assert_eq!(got, data);
    }

    #[test]
    fn read_takes_buffered_bytes_first() {
        let mut r = RecvBuf::new(
            4,
            4,
            Trickle {
                data: b"abcdefghij".to_vec(),
                at: 0,
                step: 3,
                fail_at: None,
            },
        );
        assert_eq!(r.fill_buf().unwrap(), b"abc");
        r.consume(1);
        assert_eq!(r.buffer(), b"bc");
        let mut out = [0u8; 16];
        let n = r.read(&mut out).unwrap();
        assert_eq!(&out[..n], b"bc");
        let mut rest = Vec::new();
        r.read_to_end(&mut rest).unwrap();
        assert_eq!(rest, b"defghij");
    }

    #[test]
    fn a_read_that_fills_the_buffer_grows_it_to_its_max_once() {
        let data: Vec<u8> = (0..100u8).collect();
        let mut r = RecvBuf::new(
            4,
            32,
            Trickle {
                data: data.clone(),
                at: 0,
                step: 1000,
                fail_at: None,
            },
        );
        assert_eq!(r.buf.len(), 4);
        let mut got = Vec::new();
        let mut reads = Vec::new();
        loop {
            let avail = r.fill_buf().unwrap();
            if avail.is_empty() {
                break;
            }
            reads.push(avail.len());
            got.extend_from_slice(avail);
            let n = avail.len();
            r.consume(n);
        }
        assert_eq!(got, data);
        // 4 (which filled it), then 32 at a time.
        assert_eq!(reads, [4, 32, 32, 32]);
        assert_eq!(r.buf.len(), 32);
    }
}
