//! A blocking connection to the daemon.
//!
//! One connection carries requests, their responses and notifications, in
//! any interleaving. [`Client::call`] sends a request and reads until its
//! response arrives, queueing notifications met on the way for
//! [`Client::next_notification`]. For a terminal stream, [`Client::split`]
//! gives a writer half (requests whose responses are not awaited) and a
//! reader half (every message as it arrives), usable from two threads.
//!
//! [`Client::connect_sending`] sends a connection's first request right
//! behind `hello`, in the same write (the daemon handles `hello` before it
//! reads the next line), and [`Client::wait_sent_watching`] reads its
//! reply: one round trip fewer for a command that makes one call first
//! (`ccd attach`).
//!
//! A direct stream (`session.attach` with `direct`) arrives as a descriptor
//! passed with the reply ([`Client::take_passed_fd`]), already attached;
//! [`Client::direct_stream`] reads the attach's reply and gives the same
//! halves.

use crate::deadline::{self, NotAnswering, Peer};
use crate::passed_fd::RecvStream;
use crate::socket_dir::{SocketDir, SocketDirError};
use ccd_protocol::methods::attach::DIRECT_ATTACH_ID;
use ccd_protocol::methods::daemon::{Hello, HelloParams, HelloResult};
use ccd_protocol::{
    parse_incoming, read_line_resumable, FrameError, Id, Incoming, Method, Notification,
    ProtocolRange, Request, RpcError, MAX_LINE_BYTES,
};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::collections::VecDeque;
use std::io::{BufReader, Write};
use std::os::fd::AsFd;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What can go wrong talking to the daemon.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("no ccd daemon answers at {path}: {source}")]
    NotRunning {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// The daemon is running but closed the connection before answering
    /// `hello` (at its connection limit, most often); not "not running".
    #[error("the ccd daemon (pid {pid}, {path}) is running but closed the connection before answering ({source}): it may be at its connection or descriptor limit. Try again in a moment; its log says more")]
    Dropped {
        pid: u32,
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    SocketDir(#[from] SocketDirError),
    #[error("connection to the ccd daemon: {0}")]
    Io(#[from] std::io::Error),
    #[error("the ccd daemon closed the connection")]
    Closed,
    #[error("{}", .0.message)]
    Rpc(RpcError),
    #[error("unexpected message from the ccd daemon: {0}")]
    Protocol(String),
    #[error("could not start the ccd daemon: {0}")]
    Start(String),
    /// The daemon (or a holder) accepted the connection but did not
    /// answer within the deadline ([`crate::deadline`]), or is stopped.
    #[error("{0}")]
    NotAnswering(NotAnswering),
    /// A ccd on another machine could not be reached ([`crate::ssh`]).
    #[error(transparent)]
    Remote(crate::ssh::RemoteError),
}

impl ClientError {
    /// True when no daemon is there to answer (a missing socket, or one
    /// nobody listens on): starting one is the remedy.
    pub fn nobody_answers(&self) -> bool {
        matches!(
            self,
            ClientError::NotRunning { source, .. }
                if source.kind() == std::io::ErrorKind::NotFound
                    || source.kind() == std::io::ErrorKind::ConnectionRefused
                    || GONE.contains(&source.kind())
        )
    }

    /// The refusal to talk through a socket directory or socket that is
    /// not private, if that is what this is.
    pub fn not_private(&self) -> Option<&SocketDirError> {
        match self {
            ClientError::SocketDir(e @ SocketDirError::NotPrivate { .. }) => Some(e),
            _ => None,
        }
    }

    /// The peer that did not answer, if that is what this is.
    pub fn not_answering(&self) -> Option<&NotAnswering> {
        match self {
            ClientError::NotAnswering(n) => Some(n),
            _ => None,
        }
    }

    /// The JSON-RPC error, when the daemon answered with one.
    pub fn rpc(&self) -> Option<&RpcError> {
        match self {
            ClientError::Rpc(e) => Some(e),
            _ => None,
        }
    }
}

/// How a connection to a daemon that went away before answering fails.
const GONE: [std::io::ErrorKind; 3] = [
    std::io::ErrorKind::ConnectionReset,
    std::io::ErrorKind::BrokenPipe,
    std::io::ErrorKind::UnexpectedEof,
];

/// A request that went out right behind `hello` ([`Client::connect_sending`]),
/// its reply not read yet: [`Client::wait_sent_watching`] reads it.
#[derive(Debug)]
#[must_use = "the request's reply is read with Client::wait_sent_watching"]
pub struct Sent {
    id: Id,
    method: &'static str,
    /// The call's deadline (the method's deadline ([`deadline::deadline_for`])).
    within: Duration,
}

/// A connection that has completed `hello`.
pub struct Client {
    reader: Reader,
    writer: Writer,
    queued: VecDeque<Notification>,
    /// What the daemon said in `hello`.
    pub hello: HelloResult,
    /// Who is at the other end, for [`ClientError::NotAnswering`].
    peer: PeerInfo,
}

/// The other end of a connection.
#[derive(Debug, Clone)]
struct PeerInfo {
    kind: Peer,
    /// The daemon's socket (its `daemon.lock` is next to it).
    socket: Option<PathBuf>,
    /// From `SO_PEERCRED`; for a remote, the local ssh's.
    pid: Option<u32>,
    /// A remote host's name ([`Peer::Remote`]).
    host: Option<String>,
}

impl PeerInfo {
    fn not_answering(&self, during: &str, waited: Duration) -> ClientError {
        ClientError::NotAnswering(match (self.kind, &self.socket) {
            (Peer::Remote, _) => NotAnswering::remote(
                self.host.as_deref().unwrap_or("?"),
                self.pid,
                during,
                waited,
            ),
            (Peer::Daemon, Some(socket)) => NotAnswering::daemon(socket, self.pid, during, waited),
            _ => NotAnswering::holder(self.pid, during, waited),
        })
    }

    fn stopped(&self) -> bool {
        let pid = match (self.kind, &self.socket) {
            (Peer::Daemon, Some(socket)) => {
                NotAnswering::daemon(socket, self.pid, "", Duration::ZERO).pid
            }
            _ => self.pid,
        };
        pid.is_some_and(deadline::is_stopped)
    }
}

/// The sending half of a connection.
pub struct Writer {
    stream: UnixStream,
    next_id: i64,
}

/// The receiving half of a connection.
pub struct Reader {
    stream: BufReader<RecvStream>,
    /// The line being read: a read timeout mid-line keeps what came of it.
    buf: ccd_protocol::PartialLine,
    /// The ssh under a remote connection: ended with the reader.
    _ssh: Option<std::sync::Arc<crate::ssh::SshProcess>>,
}

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
            stream: BufReader::with_capacity(READ_BUF, RecvStream::new(stream)),
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
    /// `hello`, waiting at most [`crate::ssh::SSH_CONNECT_TIMEOUT`] (a
    /// person may be answering ssh's password prompt). Used by
    /// [`crate::ssh::connect`].
    pub(crate) fn over_ssh(
        stream: UnixStream,
        host: String,
        ssh: std::sync::Arc<crate::ssh::SshProcess>,
        client_name: &str,
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
        c.hello = c.call_within::<Hello>(&params, crate::ssh::SSH_CONNECT_TIMEOUT, None)?;
        Ok(c)
    }

    /// True when this connection goes to a ccd on another machine: a
    /// direct stream (a passed descriptor) cannot come over it.
    pub fn is_remote(&self) -> bool {
        self.peer.kind == Peer::Remote
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

    /// Calls a typed method and waits for its result.
    /// The wait is bounded by the method's deadline ([`deadline::deadline_for`]).
    pub fn call<M: Method>(&mut self, params: &M::Params) -> Result<M::Result, ClientError> {
        self.call_as::<M, M::Result>(params)
    }

    /// Calls a typed method and reads its result as `R` rather than
    /// `M::Result`: for a caller that passes the result on as received
    /// (`serde_json::Map`, to print it with fields this client does not
    /// know).
    pub fn call_as<M: Method, R: DeserializeOwned>(
        &mut self,
        params: &M::Params,
    ) -> Result<R, ClientError> {
        let within = deadline::deadline_for::<M>(params);
        let params = to_params::<M>(params)?;
        let v = self.call_value_within(M::NAME, params, within, None)?;
        from_result::<M, R>(v)
    }

    /// [`Client::call`], waiting at most `within` for the reply
    /// ([`ClientError::NotAnswering`] after that, or as soon as the peer
    /// is seen stopped); notifications meanwhile go to `on_note` (else the
    /// queue).
    pub fn call_within<M: Method>(
        &mut self,
        params: &M::Params,
        within: Duration,
        on_note: Option<&mut dyn FnMut(&Notification)>,
    ) -> Result<M::Result, ClientError> {
        let params = to_params::<M>(params)?;
        let v = self.call_value_within(M::NAME, params, within, on_note)?;
        from_result::<M, M::Result>(v)
    }

    /// [`Client::call`], handing every notification that arrives meanwhile
    /// to `on_note` (instead of queueing it).
    pub fn call_with<M: Method>(
        &mut self,
        params: &M::Params,
        on_note: &mut dyn FnMut(&Notification),
    ) -> Result<M::Result, ClientError> {
        let params = to_params::<M>(params)?;
        let v = self.call_value_with(M::NAME, params, on_note)?;
        from_result::<M, M::Result>(v)
    }

    /// [`Client::call`], showing every notification that arrives meanwhile
    /// to `watch` and queueing it too (see [`Client::call_value_watching`]).
    pub fn call_watching<M: Method>(
        &mut self,
        params: &M::Params,
        watch: &mut dyn FnMut(&Notification),
    ) -> Result<M::Result, ClientError> {
        let params = to_params::<M>(params)?;
        let v = self.call_value_watching(M::NAME, params, watch)?;
        from_result::<M, M::Result>(v)
    }

    /// Calls `method` with raw params and waits for its result.
    /// The wait is bounded by the method's deadline ([`deadline::deadline_for`]).
    /// Untyped: for tests and benchmarks that send what no typed client
    /// would (the CLI calls by type, [`Client::call`]).
    pub fn call_value(&mut self, method: &str, params: Value) -> Result<Value, ClientError> {
        let within = deadline::deadline_of(method, &params);
        self.call_value_within(method, params, within, None)
    }

    /// Calls `method` and waits at most `within` for its reply
    /// ([`ClientError::NotAnswering`] after that, or as soon as the peer
    /// is seen stopped); notifications meanwhile go to `on_note` (else the
    /// queue).
    fn call_value_within(
        &mut self,
        method: &str,
        params: Value,
        within: Duration,
        on_note: Option<&mut dyn FnMut(&Notification)>,
    ) -> Result<Value, ClientError> {
        let id = self.send(method, params)?;
        self.wait_within(&id, on_note, false, within, method)
    }

    /// Sends a request; a write that times out is [`ClientError::NotAnswering`].
    fn send(&mut self, method: &str, params: Value) -> Result<Id, ClientError> {
        match self.writer.send(method, params) {
            Err(ClientError::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                Err(self.peer.not_answering(method, deadline::CALL_TIMEOUT))
            }
            r => r,
        }
    }

    /// Waits for the reply to the call [`Client::connect_sending`] sent
    /// behind `hello`, within that call's deadline, showing every
    /// notification that arrives meanwhile to `watch` and queueing it
    /// too ([`Client::call_watching`]'s wait).
    pub fn wait_sent_watching<M: Method>(
        &mut self,
        sent: Sent,
        watch: &mut dyn FnMut(&Notification),
    ) -> Result<M::Result, ClientError> {
        if sent.method != M::NAME {
            return Err(ClientError::Protocol(format!(
                "waiting for {} as {}",
                sent.method,
                M::NAME
            )));
        }
        let v = self.wait_within(&sent.id, Some(watch), true, sent.within, sent.method)?;
        from_result::<M, M::Result>(v)
    }

    /// Calls `method`, handing every notification that arrives meanwhile
    /// to `on_note` (instead of queueing it).
    fn call_value_with(
        &mut self,
        method: &str,
        params: Value,
        on_note: &mut dyn FnMut(&Notification),
    ) -> Result<Value, ClientError> {
        let within = deadline::deadline_of(method, &params);
        self.call_value_within(method, params, within, Some(on_note))
    }

    /// Calls `method`, showing every notification that arrives meanwhile
    /// to `watch` and queueing it as [`Client::call_value`] does (for a
    /// request whose progress a caller reports while what follows the
    /// reply still reads the stream).
    pub fn call_value_watching(
        &mut self,
        method: &str,
        params: Value,
        watch: &mut dyn FnMut(&Notification),
    ) -> Result<Value, ClientError> {
        let within = deadline::deadline_of(method, &params);
        let id = self.send(method, params)?;
        self.wait_within(&id, Some(watch), true, within, method)
    }

    /// [`Self::wait_for_keeping`] bounded by `within`, the peer's state
    /// checked every [`deadline::STOPPED_CHECK`]; the socket's read
    /// timeout is cleared again on the way out.
    fn wait_within(
        &mut self,
        id: &Id,
        on_note: Option<&mut dyn FnMut(&Notification)>,
        keep: bool,
        within: Duration,
        during: &str,
    ) -> Result<Value, ClientError> {
        let until = Instant::now() + within;
        let r = self.wait_for_keeping(id, on_note, keep, Some((until, within, during)));
        self.reader.stream.get_mut().set_read_timeout(None)?;
        r
    }

    /// Before reading with a deadline: waits until a line (or part of one)
    /// is there, the deadline passes, or the peer is seen stopped; then
    /// bounds the read itself by what is left (a peer stopped mid-line).
    fn before_read(
        &mut self,
        until: Instant,
        within: Duration,
        during: &str,
    ) -> Result<(), ClientError> {
        loop {
            if self.reader.has_buffered_line() {
                return Ok(());
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(self.peer.not_answering(during, within));
            }
            let socket = self.reader.stream.get_ref().socket();
            if deadline::readable(socket.as_fd(), left.min(deadline::STOPPED_CHECK))? {
                let bound = left.max(Duration::from_millis(1));
                self.reader.stream.get_mut().set_read_timeout(Some(bound))?;
                return Ok(());
            }
            if self.peer.stopped() {
                return Err(self.peer.not_answering(during, within));
            }
        }
    }

    /// Waits for the reply to `id`; each notification meanwhile goes to
    /// `on_note` and, with `keep` or without `on_note`, to the queue.
    fn wait_for_keeping(
        &mut self,
        id: &Id,
        mut on_note: Option<&mut dyn FnMut(&Notification)>,
        keep: bool,
        bound: Option<(Instant, Duration, &str)>,
    ) -> Result<Value, ClientError> {
        let id = id.clone();
        loop {
            let next = match bound {
                Some((until, within, during)) => {
                    self.before_read(until, within, during)?;
                    match self.reader.next() {
                        Err(ClientError::Io(e))
                            if matches!(
                                e.kind(),
                                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                            ) =>
                        {
                            return Err(self.peer.not_answering(during, within))
                        }
                        r => r?,
                    }
                }
                None => self.reader.next()?,
            };
            match next {
                Incoming::Response(r) if r.id.as_ref() == Some(&id) => {
                    return r.outcome.map_err(ClientError::Rpc);
                }
                Incoming::Response(r) if r.id.is_none() => {
                    if let Err(e) = r.outcome {
                        return Err(ClientError::Rpc(e));
                    }
                }
                Incoming::Response(_) => {} // an answer to a request not awaited
                Incoming::Notification(n) => {
                    if let Some(f) = on_note.as_mut() {
                        f(&n);
                        if !keep {
                            continue;
                        }
                    }
                    self.queued.push_back(n);
                }
                Incoming::Request(r) => {
                    return Err(ClientError::Protocol(format!(
                        "request {} from the daemon",
                        r.method
                    )))
                }
            }
        }
    }

    /// The next notification: queued ones first, then from the socket.
    /// `timeout` bounds the wait (`None` waits forever); `Ok(None)` on timeout.
    pub fn next_notification(
        &mut self,
        timeout: Option<Duration>,
    ) -> Result<Option<Notification>, ClientError> {
        if let Some(n) = self.queued.pop_front() {
            return Ok(Some(n));
        }
        self.reader.stream.get_mut().set_read_timeout(timeout)?;
        let result = loop {
            match self.reader.next() {
                Ok(Incoming::Notification(n)) => break Ok(Some(n)),
                Ok(_) => continue,
                Err(ClientError::Io(e))
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    break Ok(None)
                }
                Err(e) => break Err(e),
            }
        };
        self.reader.stream.get_mut().set_read_timeout(None)?;
        result
    }

    /// Splits into independent halves (queued notifications are lost: call
    /// this right after the request that starts a stream).
    /// The halves wait without a deadline (an attached session may be
    /// silent for hours).
    pub fn split(mut self) -> (Reader, Writer, VecDeque<Notification>) {
        let stream = self.reader.stream.get_mut();
        let _ = stream.set_read_timeout(None);
        let _ = stream.socket().set_write_timeout(None);
        (self.reader, self.writer, self.queued)
    }
}

/// Appends the request line `id` `method` `params` to `out`.
fn encode_request(
    id: &Id,
    method: &str,
    params: Value,
    out: &mut Vec<u8>,
) -> Result<(), ClientError> {
    let req = Request::new(id.clone(), method, Some(params));
    serde_json::to_writer(&mut *out, &req).map_err(|e| ClientError::Protocol(e.to_string()))?;
    out.push(b'\n');
    Ok(())
}

/// A method's params as sent (also what [`deadline::deadline_of`] reads).
fn to_params<M: Method>(params: &M::Params) -> Result<Value, ClientError> {
    serde_json::to_value(params).map_err(|e| ClientError::Protocol(format!("{}: {e}", M::NAME)))
}

/// A method's result, read as `R`.
fn from_result<M: Method, R: DeserializeOwned>(v: Value) -> Result<R, ClientError> {
    serde_json::from_value(v).map_err(|e| ClientError::Protocol(format!("{}: {e}", M::NAME)))
}

impl Writer {
    /// Sends a typed request without waiting; returns its id.
    pub fn send_typed<M: Method>(&mut self, params: &M::Params) -> Result<Id, ClientError> {
        let params = to_params::<M>(params)?;
        self.send(M::NAME, params)
    }

    /// Sends a typed method as a notification: the daemon does it and
    /// sends no reply (keys and resizes of a terminal client).
    pub fn notify_typed<M: Method>(&mut self, params: &M::Params) -> Result<(), ClientError> {
        let params = to_params::<M>(params)?;
        self.notify(M::NAME, params)
    }

    /// Sends a request without waiting; returns its id. Untyped: for
    /// tests; clients use [`Writer::send_typed`].
    pub fn send(&mut self, method: &str, params: Value) -> Result<Id, ClientError> {
        let id = Id::Number(self.next_id);
        self.next_id += 1;
        let mut line = Vec::new();
        encode_request(&id, method, params, &mut line)?;
        self.stream.write_all(&line)?;
        Ok(id)
    }

    /// Sends a typed request with descriptors passed along its first
    /// bytes (`SCM_RIGHTS`: a terminal handed to a holder); returns its id.
    pub fn send_typed_passing<M: Method>(
        &mut self,
        params: &M::Params,
        fds: &[std::os::fd::BorrowedFd<'_>],
    ) -> Result<Id, ClientError> {
        let id = Id::Number(self.next_id);
        self.next_id += 1;
        let mut line = Vec::new();
        encode_request(&id, M::NAME, to_params::<M>(params)?, &mut line)?;
        let sent = ccd_fdpass::send_with_fds(self.stream.as_fd(), &line, fds)?;
        self.stream.write_all(&line[sent..])?;
        Ok(id)
    }

    /// Sends a notification (a request that gets no reply). Untyped: for
    /// tests; clients use [`Writer::notify_typed`].
    pub fn notify(&mut self, method: &str, params: Value) -> Result<(), ClientError> {
        let n = Notification::new(method, Some(params));
        let mut line = serde_json::to_vec(&n).map_err(|e| ClientError::Protocol(e.to_string()))?;
        line.push(b'\n');
        self.stream.write_all(&line)?;
        Ok(())
    }

    /// Closes the sending direction (the daemon sees end of input).
    pub fn shutdown(&self) -> std::io::Result<()> {
        self.stream.shutdown(std::net::Shutdown::Write)
    }

    /// Closes both directions: a thread blocked reading this connection
    /// wakes up with end of stream.
    pub fn shutdown_both(&self) -> std::io::Result<()> {
        self.stream.shutdown(std::net::Shutdown::Both)
    }
}

/// The socket reader's buffer.
const READ_BUF: usize = 256 * 1024;

impl Reader {
    /// The next line's bytes as received (without its newline), not checked
    /// for UTF-8: for callers whose decoder checks the strings it reads
    /// (serde_json does). Over-long lines are skipped with a warning.
    pub fn next_line_bytes(&mut self) -> Result<&[u8], ClientError> {
        loop {
            match read_line_resumable(&mut self.stream, MAX_LINE_BYTES, &mut self.buf) {
                Ok(true) => return Ok(self.buf.line()),
                Ok(false) => return Err(ClientError::Closed),
                Err(FrameError::Io(e)) => return Err(ClientError::Io(e)),
                Err(e) => tracing::warn!(error = %e, "skipping a bad line from the daemon"),
            }
        }
    }

    /// Bounds each read from here on (`None`: no bound).
    pub fn set_read_timeout(&mut self, timeout: Option<Duration>) -> std::io::Result<()> {
        self.stream.get_mut().set_read_timeout(timeout)
    }

    /// True when a whole line is already buffered (the next read will not
    /// wait).
    pub fn has_buffered_line(&self) -> bool {
        memchr::memchr(b'\n', self.stream.buffer()).is_some()
    }

    /// The next message of any kind.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Incoming, ClientError> {
        loop {
            match std::str::from_utf8(self.next_line_bytes()?) {
                Ok(line) => {
                    return parse_incoming(line).map_err(|e| ClientError::Protocol(e.error.message))
                }
                Err(e) => tracing::warn!(error = %e, "skipping a non-UTF-8 line from the daemon"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccd_protocol::methods::daemon::DaemonStatus;
    use ccd_protocol::methods::Empty;
    use std::io::{BufRead, Write};
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::net::UnixListener;

    /// A private socket directory with a listener in it.
    fn listening() -> (tempfile::TempDir, SocketDir, UnixListener) {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = SocketDir::new(tmp.path().join("sock"));
        dir.create_private().expect("socket dir");
        let listener = UnixListener::bind(dir.socket()).expect("bind");
        std::fs::set_permissions(dir.socket(), std::fs::Permissions::from_mode(0o600))
            .expect("chmod");
        (tmp, dir, listener)
    }

    /// The peer's side of the next connection: a reader (10 s timeout) and
    /// the stream to answer on.
    fn accept_peer(listener: &UnixListener) -> (std::io::BufReader<UnixStream>, UnixStream) {
        let (s, _) = listener.accept().expect("accept");
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        (std::io::BufReader::new(s.try_clone().expect("clone")), s)
    }

    /// Reads lines until `n` have come, answering none: a peer that sees
    /// the request behind `hello` only if it came without waiting for
    /// `hello`'s reply.
    fn read_lines(r: &mut impl BufRead, n: usize) -> Vec<serde_json::Value> {
        (0..n)
            .map(|_| {
                let mut line = String::new();
                r.read_line(&mut line).expect("a line");
                serde_json::from_str(&line).expect("json")
            })
            .collect()
    }

    /// A `daemon.status` reply to `id` naming `pid`.
    fn status_reply(id: u64, pid: u32) -> String {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"daemon_version":"9","protocol":1,"pid":{pid},"started_at":0,"socket":"s","sessions":0,"clients":1}}}}"#
        )
    }

    const HELLO_REPLY: &str =
        r#"{"jsonrpc":"2.0","id":1,"result":{"daemon_version":"9","protocol":1,"server":"ccd"}}"#;

    #[test]
    fn the_first_call_goes_out_behind_hello_before_its_reply() {
        let (_tmp, dir, listener) = listening();
        let peer = std::thread::spawn(move || {
            let (mut r, s) = accept_peer(&listener);
            let got = read_lines(&mut r, 2);
            let mut w = s;
            let note = r#"{"jsonrpc":"2.0","method":"session.progress","params":{"step":"x"}}"#;
            let status = status_reply(2, 7);
            writeln!(w, "{HELLO_REPLY}\n{note}\n{status}").expect("write");
            let third = read_lines(&mut r, 1);
            writeln!(w, "{}", status_reply(3, 8)).expect("write");
            (got, third)
        });
        let (mut c, sent) =
            Client::connect_sending::<DaemonStatus>(&dir, "test/0", &Empty {}).expect("connect");
        assert_eq!(c.hello.daemon_version, "9");
        let mut seen = Vec::new();
        let status = c
            .wait_sent_watching::<DaemonStatus>(sent, &mut |n| seen.push(n.method.clone()))
            .expect("status");
        assert_eq!(status.pid, 7);
        assert_eq!(seen, ["session.progress"]);
        // Watched and queued, as `call_watching` does.
        let queued = c.next_notification(Some(Duration::ZERO)).expect("queue");
        assert_eq!(queued.map(|n| n.method), Some("session.progress".into()));
        // The next call takes the next id.
        assert_eq!(c.call::<DaemonStatus>(&Empty {}).expect("status").pid, 8);
        let (got, third) = peer.join().expect("peer");
        assert_eq!(got[0]["method"], "hello");
        assert_eq!(got[0]["id"], 1);
        assert_eq!(got[1]["method"], "daemon.status");
        assert_eq!(got[1]["id"], 2);
        assert_eq!(third[0]["id"], 3);
    }

    #[test]
    fn a_refused_hello_is_the_error_not_the_call_behind_it() {
        let (_tmp, dir, listener) = listening();
        let peer = std::thread::spawn(move || {
            let (mut r, s) = accept_peer(&listener);
            read_lines(&mut r, 2);
            let mut w = s;
            let refused = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"no common protocol version"}}"#;
            let after =
                r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32002,"message":"say hello first"}}"#;
            // One write: the client hangs up once it read the refusal, so
            // a second write (`writeln!` writes piece by piece) could meet
            // a broken pipe.
            w.write_all(format!("{refused}\n{after}\n").as_bytes())
                .expect("write");
        });
        let e = Client::connect_sending::<DaemonStatus>(&dir, "test/0", &Empty {})
            .err()
            .expect("refused");
        assert_eq!(e.rpc().map(|r| r.code), Some(-32001), "{e}");
        peer.join().expect("peer");
    }

    /// A daemon going away as we connect (it removes its socket first)
    /// answers nothing: nobody answers.
    #[test]
    fn a_peer_gone_before_hello_is_nobody_answering() {
        let (_tmp, dir, listener) = listening();
        let socket = dir.socket();
        let peer = std::thread::spawn(move || {
            let (mut r, _s) = accept_peer(&listener);
            read_lines(&mut r, 2);
            std::fs::remove_file(&socket).expect("the socket goes");
        });
        let e = Client::connect_sending::<DaemonStatus>(&dir, "test/0", &Empty {})
            .err()
            .expect("gone");
        // What makes `connect_or_start_sending` start a daemon.
        assert!(e.nobody_answers(), "{e:?}");
        peer.join().expect("peer");
    }

    /// A daemon still there (its process alive, its socket in place) that
    /// drops the connection before `hello` (at its connection cap, the
    /// refusal lost to the reset) is running, not "not running".
    #[test]
    fn a_peer_that_drops_us_but_stays_is_running() {
        let (_tmp, dir, listener) = listening();
        let peer = std::thread::spawn(move || {
            let (mut r, _s) = accept_peer(&listener);
            read_lines(&mut r, 2);
            listener
        });
        let e = Client::connect_sending::<DaemonStatus>(&dir, "test/0", &Empty {})
            .err()
            .expect("dropped");
        let _listener = peer.join().expect("peer");
        assert!(!e.nobody_answers(), "{e:?}");
        assert!(
            matches!(&e, ClientError::Dropped { pid, .. } if *pid == std::process::id()),
            "{e:?}"
        );
        assert!(
            e.to_string()
                .contains("is running but closed the connection"),
            "{e}"
        );
    }
}
