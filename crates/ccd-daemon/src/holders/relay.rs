//! Relays an attachment's notification lines from its holder connection to
//! the client, in whole-line batches, without decoding them.
//!
//! The holder writes `session.output` lines of up to ~88 KB (a 64 KiB chunk
//! in base64) plus the odd resync, exit notice, and replies to the
//! input/resize requests the daemon sent on the same connection. Splitting
//! every read into one `String` per line (UTF-8 check, copy, one queue item
//! and one await each) cost the daemon time on every chunk of a flood and
//! kept its workers busy in long runs, delaying other sessions' keystrokes.
//! [`Relay`] instead hands out, per read, the complete lines it holds as one
//! buffer (replies removed); the framing (the unfinished line, the line
//! limit) is the protocol's own [`LineDecoder`], taken over from the
//! control reader with whatever it had read ahead.
//!
//! Lines stay whole: a batch ends on a newline, and the client connection's
//! queue takes it as one item, so nothing interleaves inside a line.

use super::rpc::{HolderError, LineReader};
use ccd_protocol::LineDecoder;
use tokio::io::AsyncReadExt;
use tokio::net::unix::OwnedReadHalf;

/// Bytes per socket read.
const READ_BUF: usize = 256 * 1024;

/// The relaying end of an attachment's holder connection.
pub struct Relay {
    rd: OwnedReadHalf,
    /// The control reader's decoder, with the unfinished line it holds.
    decoder: LineDecoder,
    /// Lines already split off by the control reader.
    first: Vec<u8>,
    buf: Vec<u8>,
}

impl Relay {
    /// Takes over a holder connection's reader after the attach call, with
    /// whatever it had read ahead.
    pub fn new(reader: LineReader) -> Self {
        let (rd, lines, decoder) = reader.into_parts();
        let mut first = Vec::new();
        for l in lines {
            keep_notification(&mut first, Ok(l.as_bytes()));
        }
        Self {
            rd,
            decoder,
            first,
            buf: vec![0; READ_BUF],
        }
    }

    /// The next batch of whole notification lines (never empty); `None` at
    /// end of stream.
    pub async fn next_batch(&mut self) -> Result<Option<Vec<u8>>, HolderError> {
        if !self.first.is_empty() {
            return Ok(Some(std::mem::take(&mut self.first)));
        }
        loop {
            let n = self.rd.read(&mut self.buf).await?;
            if n == 0 {
                return Ok(None);
            }
            let mut batch = Vec::new();
            self.decoder
                .push_with(&self.buf[..n], |line| keep_notification(&mut batch, line));
            if !batch.is_empty() {
                return Ok(Some(batch));
            }
        }
    }
}

/// Appends `line` and its newline to `batch` if it is a notification; the
/// holder's replies (to the input/resize requests sent on the connection)
/// and over-long lines are left out.
fn keep_notification(batch: &mut Vec<u8>, line: Result<&[u8], ccd_protocol::FrameError>) {
    match line {
        Ok(l) if is_notification(l) => {
            batch.extend_from_slice(l);
            batch.push(b'\n');
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "bad line from a holder dropped"),
    }
}

/// Notifications are serialized `{"jsonrpc":"2.0","method":...`; replies
/// carry an `id` instead.
fn is_notification(line: &[u8]) -> bool {
    line.starts_with(br#"{"jsonrpc":"2.0","method""#)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn relay_over(chunks: &[&[u8]]) -> Vec<Vec<u8>> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let (a, b) = tokio::net::UnixStream::pair().expect("pair");
            let (rd, _wr) = a.into_split();
            let mut relay = Relay::new(LineReader::for_tests(rd));
            let (_brd, mut bwr) = b.into_split();
            let chunks: Vec<Vec<u8>> = chunks.iter().map(|c| c.to_vec()).collect();
            let writer = tokio::spawn(async move {
                use tokio::io::AsyncWriteExt;
                for c in chunks {
                    bwr.write_all(&c).await.expect("write");
                    bwr.flush().await.expect("flush");
                    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                }
            });
            let mut got = Vec::new();
            while let Some(b) = relay.next_batch().await.expect("read") {
                got.push(b);
            }
            writer.await.expect("writer");
            got
        })
    }

    const N1: &[u8] = br#"{"jsonrpc":"2.0","method":"session.output","params":{"seq":0}}"#;
    const R1: &[u8] = br#"{"jsonrpc":"2.0","id":3,"result":{}}"#;

    #[test]
    fn lines_split_across_reads_come_out_whole_and_replies_are_dropped() {
        let mut stream = Vec::new();
        for _ in 0..3 {
            stream.extend_from_slice(N1);
            stream.push(b'\n');
            stream.extend_from_slice(R1);
            stream.push(b'\n');
        }
        let (a, b) = stream.split_at(N1.len() / 2);
        let (b, c) = b.split_at(N1.len() + 10);
        let got = relay_over(&[a, b, c]).concat();
        let want: Vec<u8> = (0..3).flat_map(|_| [N1, b"\n"].concat()).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn an_over_long_line_is_dropped_and_the_next_one_kept() {
        let mut long = br#"{"jsonrpc":"2.0","method":"x","p":""#.to_vec();
        long.resize(ccd_protocol::MAX_LINE_BYTES + 300_000, b'a');
        long.push(b'\n');
        let got = relay_over(&[&long, N1, b"\n"]).concat();
        assert_eq!(got, [N1, b"\n"].concat());
    }
}
