//! A client connection's attachment to a held session, through the
//! daemon: one connection to the holder, whose notifications a forwarder
//! task relays to the client ([`super::relay`]) and on which the client's
//! input and resizes are written ([`AttachedTo::send`]). Dropping the
//! attachment ends the forwarder and closes the holder connection (which
//! detaches it there). Also the socket plumbing of a direct stream (the
//! holder connection handed to the client instead: [`connect_sending`],
//! and [`read_first_line`], which reads the holder's answer to its hello
//! and nothing past it).
//! `session.attach` itself (which kind, resume first) is
//! `handlers::attach`.

use super::relay::Relay;
use super::rpc::{HolderConn, HolderError};
use super::HolderEntry;
use crate::conn_slots::{Slots, TaskGuard};
use crate::out_queue::OutSender;
use ccd_protocol::holder::HolderMethod;
use ccd_protocol::methods::attach::AttachMode;
use ccd_protocol::{Id, RpcError};
use std::sync::Arc;
use tokio::io::AsyncWriteExt;
use tokio::net::unix::OwnedWriteHalf;

/// One client connection's attachment to one session. Dropping it ends
/// its forwarder and closes its holder connection (which detaches it
/// there).
pub struct Attachment {
    pub holder: HolderEntry,
    pub mode: AttachMode,
    writer: Arc<tokio::sync::Mutex<OwnedWriteHalf>>,
    _forwarder: TaskGuard,
}

impl Attachment {
    /// The attachment made of `conn`, a connection to `holder` on which
    /// the holder's `session.attach` was answered: its forwarder relays the
    /// holder's notifications to `out` once `replied` fires (the client's
    /// reply goes first), and calls `ended` when the holder goes away.
    pub fn relay(
        holder: &HolderEntry,
        mode: AttachMode,
        conn: HolderConn,
        out: OutSender,
        replied: Option<tokio::sync::oneshot::Receiver<()>>,
        ended: impl FnOnce() + Send + 'static,
    ) -> Self {
        let HolderConn { reader, writer, .. } = conn;
        let task = tokio::spawn(async move {
            if let Some(r) = replied {
                let _ = r.await;
            }
            let mut relay = Relay::new(reader);
            while let Ok(Some(batch)) = relay.next_batch().await {
                if !out.send(batch).await {
                    break;
                }
            }
            ended();
        });
        Self {
            holder: holder.clone(),
            mode,
            writer: Arc::new(tokio::sync::Mutex::new(writer)),
            _forwarder: TaskGuard::new(task),
        }
    }
}

/// What input and resize need of an attachment, copied out of the lock.
pub struct AttachedTo {
    pub mode: AttachMode,
    writer: Arc<tokio::sync::Mutex<OwnedWriteHalf>>,
    /// The session and its holder's id, for errors.
    session: String,
    holder: String,
}

/// The attachment among `attachments` (one connection's) to `session`:
/// its key, its holder's id, or a prefix of its key of at least 4
/// characters.
pub fn attachment_of(attachments: &Slots<Attachment>, session: &str) -> Option<AttachedTo> {
    attachments.find_map(
        |k, a| {
            k == session || a.holder.id == session || (session.len() >= 4 && k.starts_with(session))
        },
        |k, a| AttachedTo {
            writer: a.writer.clone(),
            mode: a.mode,
            session: k.to_string(),
            holder: a.holder.id.clone(),
        },
    )
}

impl AttachedTo {
    /// Sends `M` on the attachment's holder connection; its reply is
    /// dropped by the relay.
    pub async fn send<M: HolderMethod>(&self, params: &M::Params) -> Result<(), RpcError> {
        let failed = |e: HolderError| e.into_rpc(&self.session, &self.holder);
        let params = super::rpc::to_params(params).map_err(failed)?;
        let req = ccd_protocol::Request::new(Id::Number(0), M::NAME, Some(params));
        let line = ccd_protocol::encode(&req).map_err(|e| RpcError::internal(e.to_string()))?;
        self.writer
            .lock()
            .await
            .write_all(&line)
            .await
            .map_err(|e| failed(e.into()))
    }
}

/// Connects to the Unix socket at `path` and writes `lines` on the new
/// connection; the connection, non-blocking. A peer that closed the
/// connection before taking all of `lines` is no error here: what it
/// wrote before closing (a holder's refusal) is the caller's to read. A Unix socket's connect
/// completes at once or fails, and a fresh connection's send buffer takes
/// a few short lines, so this is two system calls in the calling task,
/// with no wait on the runtime's reactor (`tokio::net::UnixStream::connect`
/// waits for the new socket's first readiness event: a wake-up of another
/// worker before the first byte goes out). A full listen backlog (the
/// connect would wait) or a short write takes tokio's way.
pub async fn connect_sending(
    path: &std::path::Path,
    lines: &[u8],
) -> std::io::Result<std::os::unix::net::UnixStream> {
    use nix::sys::socket::{connect, UnixAddr};
    use std::io::Write;
    use std::os::fd::AsRawFd;
    let fd = ccd_os::socket::nonblocking_stream_socket()?;
    let addr = UnixAddr::new(path)?;
    let stream = match connect(fd.as_raw_fd(), &addr) {
        Ok(()) => std::os::unix::net::UnixStream::from(fd),
        Err(nix::errno::Errno::EAGAIN) => {
            let mut s = tokio::net::UnixStream::connect(path).await?;
            match s.write_all(lines).await {
                Err(e) if !closed_by_peer(&e) => return Err(e),
                _ => return s.into_std(),
            }
        }
        Err(e) => return Err(e.into()),
    };
    let sent = match (&stream).write(lines) {
        Ok(n) => n,
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => 0,
        Err(e) if closed_by_peer(&e) => return Ok(stream),
        Err(e) => return Err(e),
    };
    if sent == lines.len() {
        return Ok(stream);
    }
    let mut s = tokio::net::UnixStream::from_std(stream)?;
    match s.write_all(&lines[sent..]).await {
        Err(e) if !closed_by_peer(&e) => Err(e),
        _ => s.into_std(),
    }
}

/// A write refused because the peer closed the connection: a holder that
/// refused it (at its cap) wrote why before closing, and that is still
/// there to read.
fn closed_by_peer(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset
    )
}

/// The longest first line [`read_first_line`] reads: a hello's reply or
/// a refusal is a few hundred bytes.
pub const FIRST_LINE_MAX: usize = 4096;

/// How long [`read_first_line`] waits before it looks again at a line
/// that came in part (peeking does not take the bytes, so readiness stays
/// set: without the pause it would spin).
const PARTIAL_LINE_PAUSE: std::time::Duration = std::time::Duration::from_millis(2);

/// Reads the first line the holder sends on `stream` (a direct stream's
/// connection), without its newline, and nothing past it: what follows
/// (the attach's reply, the first redraw) stays in the socket for the
/// client it is passed to. Peeks (`MSG_PEEK`) until a newline is among the
/// first [`FIRST_LINE_MAX`] bytes, then takes exactly that many. `None`:
/// the holder closed the connection first. No deadline of its own: the
/// caller bounds it.
pub async fn read_first_line(stream: &tokio::net::UnixStream) -> std::io::Result<Option<Vec<u8>>> {
    use std::io::{Error, ErrorKind};
    use std::os::fd::AsRawFd;
    let mut peek = vec![0u8; FIRST_LINE_MAX];
    let len = loop {
        stream.readable().await?;
        let peeked = stream.try_io(tokio::io::Interest::READABLE, || {
            nix::sys::socket::recv(
                stream.as_raw_fd(),
                &mut peek,
                nix::sys::socket::MsgFlags::MSG_PEEK,
            )
            .map_err(Error::from)
        });
        let n = match peeked {
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        };
        if n == 0 {
            return Ok(None);
        }
        if let Some(end) = peek[..n].iter().position(|&b| b == b'\n') {
            break end + 1;
        }
        if n == peek.len() {
            return Err(Error::new(
                ErrorKind::InvalidData,
                format!("the holder's first line is longer than {FIRST_LINE_MAX} bytes"),
            ));
        }
        tokio::time::sleep(PARTIAL_LINE_PAUSE).await;
    };
    let mut line = vec![0u8; len];
    let mut got = 0;
    while got < len {
        match stream.try_read(&mut line[got..]) {
            Ok(0) => return Err(ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => stream.readable().await?,
            Err(e) => return Err(e),
        }
    }
    line.pop();
    Ok(Some(line))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn the_first_line_is_read_and_nothing_past_it() {
        let (mut holder, daemon) = tokio::net::UnixStream::pair().expect("pair");
        holder
            .write_all(b"{\"id\":\"hello\"}\n{\"id\":\"attach\"}\nredraw")
            .await
            .expect("write");
        let line = read_first_line(&daemon).await.expect("read");
        assert_eq!(line.as_deref(), Some(&b"{\"id\":\"hello\"}"[..]));
        // What follows is still there for the client.
        drop(holder);
        let mut rest = Vec::new();
        let mut daemon = daemon;
        daemon.read_to_end(&mut rest).await.expect("rest");
        assert_eq!(rest, b"{\"id\":\"attach\"}\nredraw");
    }

    #[tokio::test]
    async fn a_line_in_parts_is_waited_for() {
        let (mut holder, daemon) = tokio::net::UnixStream::pair().expect("pair");
        holder.write_all(b"{\"id\":").await.expect("write");
        let writer = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(30)).await;
            holder.write_all(b"\"hello\"}\nmore").await.expect("write");
            holder
        });
        let line = read_first_line(&daemon).await.expect("read");
        assert_eq!(line.as_deref(), Some(&b"{\"id\":\"hello\"}"[..]));
        drop(writer.await);
    }

    #[tokio::test]
    async fn a_peer_that_refuses_and_closes_mid_write_is_read_not_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("h.sock");
        let listener = std::os::unix::net::UnixListener::bind(&path).expect("bind");
        let refuser = std::thread::spawn(move || {
            use std::io::Write;
            let (mut s, _) = listener.accept().expect("accept");
            s.write_all(b"{\"error\":\"full\"}\n").expect("write");
            // Closed without reading what was sent.
        });
        // More than a socket's buffers take: the write is still going on
        // when the peer closes.
        let lines = vec![b'x'; 4 << 20];
        let stream = connect_sending(&path, &lines).await.expect("no error");
        refuser.join().expect("refuser");
        let stream = tokio::net::UnixStream::from_std(stream).expect("tokio");
        let line = read_first_line(&stream).await.expect("read");
        assert_eq!(line.as_deref(), Some(&b"{\"error\":\"full\"}"[..]));
    }

    #[tokio::test]
    async fn an_end_before_a_line_and_an_over_long_line_are_told_apart() {
        let (holder, daemon) = tokio::net::UnixStream::pair().expect("pair");
        drop(holder);
        assert_eq!(read_first_line(&daemon).await.expect("end"), None);

        let (mut holder, daemon) = tokio::net::UnixStream::pair().expect("pair");
        holder
            .write_all(&vec![b'x'; FIRST_LINE_MAX + 1])
            .await
            .expect("write");
        let e = read_first_line(&daemon).await.expect_err("too long");
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
        assert!(e.to_string().contains("longer than"), "{e}");
    }
}
