//! Making a connection: the socket directory's checks, `hello` (with a
//! first call behind it in the same write), a connection over ssh to a
//! remote ccd, and a direct stream's connection to a holder.

use super::{
    encode_request, from_result, to_params, Client, ClientError, PeerInfo, Reader, RecvBuf, Sent,
    Writer, GONE, READ_BUF, READ_BUF_FIRST,
};
use crate::deadline::{self, Peer};
use crate::passed_fd::RecvStream;
use crate::socket_dir::{SocketDir, SocketDirError};
use ccd_protocol::methods::attach::DIRECT_ATTACH_ID;
use ccd_protocol::methods::daemon::{Hello, HelloParams, HelloResult};
use ccd_protocol::{Id, Method, Notification, ProtocolRange};
use serde_json::Value;
use std::collections::VecDeque;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

impl Client {
    /// Connects to the daemon of `dir` and says `hello` as `client_name`,
    /// after checking the directory and its socket are private
    /// ([`SocketDir::verify_with_socket`]): when they are not, the error is
    /// [`ClientError::SocketDir`] with [`SocketDirError::NotPrivate`], and
    /// nothing was sent. A missing directory or socket is
    /// [`ClientError::NotRunning`].
    pub fn connect(dir: &SocketDir, client_name: &str) -> Result<Self, ClientError> {
        Self::verify(dir)?;
        Self::connect_socket(&dir.socket(), client_name)
    }

    /// [`Client::connect`], sending a call of `M` with `params` in the
    /// same write as `hello`, right behind it: the daemon reads lines in
    /// order and handles `hello` before it reads the next one, so the
    /// call is served as if it had been sent after `hello`'s reply (and
    /// refused with `handshake_required`, never served, when `hello`
    /// fails). Errors are [`Client::connect`]'s, and a daemon that drops
    /// the connection before answering `hello` never served the call.
    /// The call's reply is read with [`Client::wait_sent_watching`].
    pub fn connect_sending<M: Method>(
        dir: &SocketDir,
        client_name: &str,
        params: &M::Params,
    ) -> Result<(Self, Sent), ClientError> {
        Self::verify(dir)?;
        let within = deadline::deadline_for::<M>(params);
        let params = to_params::<M>(params)?;
        let (c, id) =
            Self::connect_socket_with(&dir.socket(), client_name, Some((M::NAME, params)))?;
        let id = id.ok_or_else(|| ClientError::Protocol(format!("{}: not sent", M::NAME)))?;
        Ok((
            c,
            Sent {
                id,
                method: M::NAME,
                within,
            },
        ))
    }

    /// The directory and socket checks of [`Client::connect`].
    fn verify(dir: &SocketDir) -> Result<(), ClientError> {
        match dir.verify_with_socket() {
            Ok(()) => {}
            Err(SocketDirError::Io { path, source })
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                return Err(ClientError::NotRunning {
                    path: path.display().to_string(),
                    source,
                })
            }
            Err(e) => return Err(e.into()),
        }
        Ok(())
    }

    /// Connects to a daemon already running, never starting one: `Ok(None)`
    /// when nothing answers (no directory, no socket, connection refused,
    /// or dropped before `hello` was answered);
    /// any other failure, above all a directory or socket that is not
    /// private, is an error rather than "no daemon".
    pub fn connect_if_running(
        dir: &SocketDir,
        client_name: &str,
    ) -> Result<Option<Self>, ClientError> {
        match Self::connect(dir, client_name) {
            Ok(c) => Ok(Some(c)),
            Err(e) if e.nobody_answers() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// [`Client::connect_if_running`] with a call of `M` sent right behind
    /// `hello` in the same write ([`Client::connect_sending`]): one round
    /// trip for a command that asks a running daemon one thing
    /// (`ccd search`). `Ok(None)` is nobody answering, as there; then the
    /// call was never served. Its reply is read with [`Client::wait_sent`].
    pub fn connect_if_running_sending<M: Method>(
        dir: &SocketDir,
        client_name: &str,
        params: &M::Params,
    ) -> Result<Option<(Self, Sent)>, ClientError> {
        match Self::connect_sending::<M>(dir, client_name, params) {
            Ok(c) => Ok(Some(c)),
            Err(e) if e.nobody_answers() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Connects to the socket at `path` and says `hello`.
    /// Connecting and `hello` together take at most
    /// [`deadline::CONNECT_TIMEOUT`]; a daemon that accepts but does not
    /// answer (stopped, stuck) is [`ClientError::NotAnswering`].
    pub fn connect_socket(path: &Path, client_name: &str) -> Result<Self, ClientError> {
        Self::connect_socket_with(path, client_name, None).map(|(c, _)| c)
    }

    /// [`Client::connect_socket`], with `first` (method, params) sent in
    /// the same write as `hello`, right behind it; its id.
    fn connect_socket_with(
        path: &Path,
        client_name: &str,
        first: Option<(&str, Value)>,
    ) -> Result<(Self, Option<Id>), ClientError> {
        let started = Instant::now();
        // The first write is made before connecting, so that it follows the
        // connect at once: the daemon finds it with the new connection.
        let hello = HelloParams {
            client: client_name.to_string(),
            protocol: ProtocolRange::CURRENT,
        };
        let mut lines = Vec::new();
        let hello_id = Id::Number(1);
        encode_request(
            &hello_id,
            Hello::NAME,
            to_params::<Hello>(&hello)?,
            &mut lines,
        )?;
        let first_id = match first {
            Some((method, params)) => {
                let id = Id::Number(2);
                encode_request(&id, method, params, &mut lines)?;
                Some(id)
            }
            None => None,
        };
        let stream = match deadline::connect(path, deadline::CONNECT_TIMEOUT) {
            Ok(s) => s,
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                let peer = PeerInfo {
                    kind: Peer::Daemon,
                    socket: Some(path.to_path_buf()),
                    pid: None,
                    host: None,
                };
                return Err(peer.not_answering("the connection", deadline::CONNECT_TIMEOUT));
            }
            Err(source) => {
                return Err(ClientError::NotRunning {
                    path: path.display().to_string(),
                    source,
                })
            }
        };
        // As every write on a connection: bounded ([`Client::over`]).
        stream.set_write_timeout(Some(deadline::CALL_TIMEOUT))?;
        let written = (&stream).write_all(&lines);
        let peer = PeerInfo {
            kind: Peer::Daemon,
            socket: Some(path.to_path_buf()),
            pid: deadline::peer_pid(&stream),
            host: None,
        };
        let mut c = Self::over(stream, peer)?;
        c.writer.next_id = if first_id.is_some() { 3 } else { 2 };
        let left = deadline::CONNECT_TIMEOUT.saturating_sub(started.elapsed());
        let hello = match written {
            Ok(()) => c.wait_within(
                &hello_id,
                None,
                false,
                left.max(Duration::from_millis(500)),
                Hello::NAME,
            ),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                Err(c.peer.not_answering(Hello::NAME, deadline::CALL_TIMEOUT))
            }
            Err(e) => Err(e.into()),
        }
        .and_then(from_result::<Hello, HelloResult>)
        .map_err(|e| match e {
            ClientError::NotAnswering(mut n) => {
                n.waited = deadline::CONNECT_TIMEOUT;
                ClientError::NotAnswering(n)
            }
            e => e,
        });
        c.hello = match hello {
            Ok(h) => h,
            // Dropped before `hello` was answered: a daemon that was dying
            // (or was killed) as we connected answers nothing.
            Err(e) => {
                let source = match e {
                    ClientError::Closed => std::io::ErrorKind::UnexpectedEof.into(),
                    ClientError::Io(e) if GONE.contains(&e.kind()) => e,
                    e => return Err(e),
                };
                // A daemon still there (its process alive, its socket in
                // place: a stopping one removes the socket first) dropped
                // us on purpose, e.g. at its connection limit, and its
                // reason was lost to the reset: it is running.
                if let Some(pid) = c.peer.pid.filter(|&p| ccd_sched::run_state::exists(p)) {
                    if path.exists() {
                        return Err(ClientError::Dropped {
                            pid,
                            path: path.display().to_string(),
                            source,
                        });
                    }
                }
                return Err(ClientError::NotRunning {
                    path: path.display().to_string(),
                    source,
                });
            }
        };
        Ok((c, first_id))
    }

    /// A connection over `stream`, before any handshake (`hello` empty).
    fn over(stream: UnixStream, peer: PeerInfo) -> Result<Self, ClientError> {
        // A peer that stops reading must not block a write forever either.
        stream.set_write_timeout(Some(deadline::CALL_TIMEOUT))?;
        let writer = Writer {
            stream: stream.try_clone()?,
            next_id: 1,
        };
        let reader = Reader {
            // An output line is up to ~88 KB: read it in a few calls, not 11.
            stream: RecvBuf::new(READ_BUF_FIRST, READ_BUF, RecvStream::new(stream)),
            buf: ccd_protocol::PartialLine::default(),
            _ssh: None,
        };
        Ok(Self {
            reader,
            writer,
            queued: VecDeque::new(),
            hello: HelloResult {
                daemon_version: String::new(),
                protocol: 0,
                server: String::new(),
            },
            peer,
        })
    }

    /// A connection to a remote ccd over `stream`, whose other end is the
    /// stdin and stdout of `ssh` (running `ccd dial-stdio` there): says
    /// `hello`, waiting at most `within` ([`crate::ssh::Remote::hello_within`]:
    /// a person may be answering ssh's password prompt) for its first
    /// bytes, and at most [`crate::ssh::HELLO_REST`] more for the rest
    /// (ssh has authenticated by then). Used by [`crate::ssh::connect`].
    pub(crate) fn over_ssh(
        stream: UnixStream,
        host: String,
        ssh: std::sync::Arc<crate::ssh::SshProcess>,
        client_name: &str,
        within: Duration,
    ) -> Result<Self, ClientError> {
        let peer = PeerInfo {
            kind: Peer::Remote,
            socket: None,
            pid: Some(ssh.pid()),
            host: Some(host),
        };
        let mut c = Self::over(stream, peer)?;
        c.reader._ssh = Some(ssh);
        let params = HelloParams {
            client: client_name.to_string(),
            protocol: ProtocolRange::CURRENT,
        };
        let id = c.send_typed_request::<Hello>(&params)?;
        let v = c.wait_within_rest(
            &id,
            None,
            false,
            within,
            Some(crate::ssh::HELLO_REST),
            Hello::NAME,
        )?;
        c.hello = from_result::<Hello, HelloResult>(v)?;
        Ok(c)
    }

    /// True when this connection goes to a ccd on another machine: a
    /// direct stream (a passed descriptor) cannot come over it.
    pub fn is_remote(&self) -> bool {
        self.peer.kind == Peer::Remote
    }

    /// The process at the other end: the daemon, or for another machine
    /// the local ssh (from the socket's peer credentials).
    pub fn peer_pid(&self) -> Option<u32> {
        self.peer.pid
    }

    /// The descriptor the daemon passed with a reply (a direct stream's
    /// holder connection), if one came.
    pub fn take_passed_fd(&mut self) -> Option<OwnedFd> {
        self.reader.stream.get_mut().take_passed()
    }

    /// A direct stream's connection (`fd`, from [`Client::take_passed_fd`]),
    /// on which the daemon attached as asked: reads the holder's reply to
    /// that attach (id [`DIRECT_ATTACH_ID`]); the halves then carry the
    /// session's stream as a daemon connection would (see "Direct streams"
    /// in `docs/protocol.md`).
    ///
    /// The holder's reply must come within [`deadline::CALL_TIMEOUT`]: a
    /// stopped or stuck holder is [`ClientError::NotAnswering`] naming
    /// its pid (from the connection's peer credentials). After that
    /// nothing times out (a silent session is normal).
    pub fn direct_stream(
        fd: OwnedFd,
    ) -> Result<(Reader, Writer, VecDeque<Notification>), ClientError> {
        let stream = UnixStream::from(fd);
        let peer = PeerInfo {
            kind: Peer::Holder,
            socket: None,
            pid: deadline::peer_pid(&stream),
            host: None,
        };
        let mut c = Self::over(stream, peer)?;
        c.wait_within(
            &Id::String(DIRECT_ATTACH_ID.into()),
            None,
            false,
            deadline::CALL_TIMEOUT,
            "the attach",
        )?;
        Ok(c.split())
    }
}
