//! A client connection's attachment to a held session, through the
//! daemon: one connection to the holder, whose notifications a forwarder
//! task relays to the client ([`super::relay`]) and on which the client's
//! input and resizes are written ([`AttachedTo::send`]). Dropping the
//! attachment ends the forwarder and closes the holder connection (which
//! detaches it there). Also the socket plumbing of a direct stream (the
//! holder connection handed to the client instead: [`connect_sending`]).
//! `session.attach` itself (which kind, resume first) is
//! `handlers::attach`.

use super::relay::Relay;
use super::rpc::{HolderConn, HolderError};
use super::HolderEntry;
use crate::conn_slots::{Slots, TaskGuard};
use crate::out_queue::OutSender;
use ccd_protocol::methods::attach::AttachMode;
use ccd_protocol::methods::Method;
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
    pub async fn send<M: Method>(&self, params: &M::Params) -> Result<(), RpcError> {
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
/// connection; the connection, non-blocking. A Unix socket's connect
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
    let fd = nonblocking_stream_socket()?;
    let addr = UnixAddr::new(path)?;
    let stream = match connect(fd.as_raw_fd(), &addr) {
        Ok(()) => std::os::unix::net::UnixStream::from(fd),
        Err(nix::errno::Errno::EAGAIN) => {
            let mut s = tokio::net::UnixStream::connect(path).await?;
            s.write_all(lines).await?;
            return s.into_std();
        }
        Err(e) => return Err(e.into()),
    };
    let sent = match (&stream).write(lines) {
        Ok(n) => n,
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => 0,
        Err(e) => return Err(e),
    };
    if sent == lines.len() {
        return Ok(stream);
    }
    let mut s = tokio::net::UnixStream::from_std(stream)?;
    s.write_all(&lines[sent..]).await?;
    s.into_std()
}

/// A new Unix stream socket, non-blocking and close-on-exec: both flags
/// set by `socket(2)` itself on Linux.
#[cfg(target_os = "linux")]
fn nonblocking_stream_socket() -> std::io::Result<std::os::fd::OwnedFd> {
    use nix::sys::socket::{socket, AddressFamily, SockFlag, SockType};
    Ok(socket(
        AddressFamily::Unix,
        SockType::Stream,
        SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC,
        None,
    )?)
}

/// A new Unix stream socket, non-blocking and close-on-exec: macOS's
/// `socket(2)` takes no such flags, so `fcntl(2)` sets them right after
/// (as the standard library does for its sockets there).
#[cfg(not(target_os = "linux"))]
fn nonblocking_stream_socket() -> std::io::Result<std::os::fd::OwnedFd> {
    use nix::fcntl::{fcntl, FcntlArg, FdFlag, OFlag};
    use nix::sys::socket::{socket, AddressFamily, SockFlag, SockType};
    let fd = socket(
        AddressFamily::Unix,
        SockType::Stream,
        SockFlag::empty(),
        None,
    )?;
    fcntl(&fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC))?;
    fcntl(&fd, FcntlArg::F_SETFL(OFlag::O_NONBLOCK))?;
    Ok(fd)
}
