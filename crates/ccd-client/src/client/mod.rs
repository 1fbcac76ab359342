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
//! (`ccd attach`; `ccd search` through [`Client::connect_if_running_sending`]
//! and [`Client::wait_sent`], never starting a daemon).
//!
//! A direct stream (`session.attach` with `direct`) arrives as a descriptor
//! passed with the reply ([`Client::take_passed_fd`]), already attached;
//! [`Client::direct_stream`] reads the attach's reply and gives the same
//! halves.
//!
//! [`Link`] shares one connection between threads: concurrent calls with
//! ids and deadlines, notifications routed to their subscribers (a front
//! end's connection to each machine it shows).
//!
//! The code is in five parts besides the types here: `connect` (making a
//! connection: checks, `hello`, a remote's, a direct stream's), `call`
//! (calls, the bounded waits for their replies, notifications, `split`),
//! `halves` (the [`Writer`] and [`Reader`] a split gives), `recv_buf`
//! (the reader's buffer, allocated zeroed) and [`link`] (a connection
//! shared by many callers).

mod call;
pub use call::Caller;
mod connect;
mod halves;
pub use halves::Oversized;
mod recv_buf;
use recv_buf::RecvBuf;
pub mod link;
pub use link::{Link, LinkBuilder};

use crate::deadline::{self, NotAnswering, Peer};
use crate::passed_fd::RecvStream;
use crate::socket_dir::SocketDirError;
use ccd_protocol::methods::daemon::HelloResult;
use ccd_protocol::{Id, Method, Notification, Request, RpcError};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::collections::VecDeque;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

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
    /// A [`Link`]'s connection ended (why) before `from` answered
    /// `during`: every call waiting then fails so, and every later one.
    #[error("the connection to {from} ended before it answered `{during}` ({why})")]
    LinkClosed {
        /// Who was asked ("the ccd daemon", "the ccd on HOST").
        from: String,
        during: String,
        why: String,
    },
    /// Where the reply to `during` was awaited, `from` sent a line over
    /// this client's bound ([`ccd_protocol::MAX_LINE_BYTES`]); it was
    /// dropped, not read.
    #[error("{from} sent a reply to `{during}` of {}{} bytes, over this client's bound of {max} bytes (1 MiB) a message: it was dropped unread (is the ccd there another version, or not ccd?)", .len, if *.whole { "" } else { " or more (the deadline passed while it came)" })]
    TooLarge {
        /// Who sent it ("the ccd daemon", "the ccd on HOST").
        from: String,
        during: String,
        /// Its length (when not `whole`: what came before the deadline).
        len: usize,
        whole: bool,
        max: usize,
    },
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

    /// Who this is, for a message ("the ccd on HOST").
    fn name(&self) -> String {
        match self.kind {
            Peer::Daemon => "the ccd daemon".to_string(),
            Peer::Holder => "the session's ccd holder".to_string(),
            Peer::Remote => format!("the ccd on {}", self.host.as_deref().unwrap_or("?")),
        }
    }

    /// The error for a line over the bound met while `during`'s reply was
    /// awaited.
    fn too_large(&self, during: &str, o: Oversized) -> ClientError {
        ClientError::TooLarge {
            from: self.name(),
            during: during.to_string(),
            len: o.len,
            whole: o.whole,
            max: ccd_protocol::MAX_LINE_BYTES,
        }
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
    stream: RecvBuf<RecvStream>,
    /// The line being read: a read timeout mid-line keeps what came of it.
    buf: ccd_protocol::PartialLine,
    /// The ssh under a remote connection: ended with the reader.
    _ssh: Option<std::sync::Arc<crate::ssh::SshProcess>>,
}

/// The socket reader's buffer: at most this (an output line is up to
/// ~88 KB: read in a few calls, not 11)...
const READ_BUF: usize = 256 * 1024;
/// ...and this until a read fills it: a client whose replies are short
/// never maps (and unmaps) the larger one (`recv_buf`).
const READ_BUF_FIRST: usize = 16 * 1024;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::socket_dir::SocketDir;
    use ccd_protocol::methods::daemon::DaemonStatus;
    use ccd_protocol::methods::Empty;
    use std::io::{BufRead, Write};
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::net::UnixListener;

    /// A private socket directory with a listener in it.
    pub(super) fn listening() -> (tempfile::TempDir, SocketDir, UnixListener) {
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
    /// Accepts a client, answers its `hello` and reads its first call:
    /// the connection, for the test's reply.
    fn accept_call(listener: &UnixListener) -> (std::io::BufReader<UnixStream>, UnixStream) {
        let (mut r, mut s) = accept_peer(listener);
        read_lines(&mut r, 1);
        writeln!(s, "{HELLO_REPLY}").expect("write");
        read_lines(&mut r, 1);
        (r, s)
    }

    fn read_lines(r: &mut impl BufRead, n: usize) -> Vec<serde_json::Value> {
        (0..n)
            .map(|_| {
                let mut line = String::new();
                r.read_line(&mut line).expect("a line");
                serde_json::from_str(&line).expect("json")
            })
            .collect()
    }

    /// A `daemon.status` reply to `id` naming `pid` (also link.rs's tests').
    pub(super) fn status_reply(id: impl std::fmt::Display, pid: u32) -> String {
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

    /// `ccd search`'s way in: nothing listening is `None` (searched
    /// here); a daemon that answers serves the call sent behind `hello`,
    /// its reply read with `wait_sent`; a refused `hello` is the error.
    #[test]
    fn asking_a_running_daemon_in_one_write() {
        let (_tmp, dir, listener) = listening();
        let nobody = SocketDir::new(dir.path().join("none"));
        let got = Client::connect_if_running_sending::<DaemonStatus>(&nobody, "test/0", &Empty {})
            .expect("no daemon is not an error");
        assert!(got.is_none());
        let peer = std::thread::spawn(move || {
            let (mut r, mut w) = accept_peer(&listener);
            // Both lines came before any reply: one write.
            let got = read_lines(&mut r, 2);
            writeln!(w, "{HELLO_REPLY}\n{}", status_reply(2, 7)).expect("write");
            let (mut r, w) = accept_peer(&listener);
            read_lines(&mut r, 2);
            let refused = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"no common protocol version"}}"#;
            (&w).write_all(format!("{refused}\n").as_bytes())
                .expect("write");
            got
        });
        let (mut c, sent) =
            Client::connect_if_running_sending::<DaemonStatus>(&dir, "test/0", &Empty {})
                .expect("connect")
                .expect("a daemon answers");
        assert_eq!(c.wait_sent::<DaemonStatus>(sent).expect("status").pid, 7);
        let e = Client::connect_if_running_sending::<DaemonStatus>(&dir, "test/0", &Empty {})
            .err()
            .expect("refused");
        assert_eq!(e.rpc().map(|r| r.code), Some(-32001), "{e}");
        let got = peer.join().expect("peer");
        assert_eq!(got[0]["method"], "hello");
        assert_eq!(got[1]["method"], "daemon.status");
        assert_eq!(got[1]["id"], 2);
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

    /// Writes `head`, then one byte of `tail` every `every` until the
    /// client hangs up (at most 20 s): a peer trickling its reply.
    fn trickle(mut w: UnixStream, head: &[u8], tail: u8, every: Duration) {
        if w.write_all(head).is_err() {
            return;
        }
        let until = std::time::Instant::now() + Duration::from_secs(20);
        while std::time::Instant::now() < until {
            if w.write_all(&[tail]).is_err() {
                return;
            }
            std::thread::sleep(every);
        }
    }

    /// A daemon that sends part of its `hello` answer and then a byte every
    /// 100 ms (each read gets one, so a per-read timeout never ends the
    /// wait) is given up on at the connect deadline, not held forever.
    #[test]
    fn a_trickled_hello_ends_at_the_connect_deadline() {
        let (_tmp, dir, listener) = listening();
        let peer = std::thread::spawn(move || {
            let (mut r, s) = accept_peer(&listener);
            read_lines(&mut r, 1);
            trickle(
                s,
                br#"{"jsonrpc":"2.0","id":1,"result":{"daemon_version":""#,
                b'9',
                Duration::from_millis(100),
            );
        });
        let started = std::time::Instant::now();
        let e = Client::connect(&dir, "test/0").err().expect("no hello");
        let took = started.elapsed();
        let n = e.not_answering().expect("not answering");
        assert_eq!(n.during, "hello");
        assert_eq!(n.waited, deadline::CONNECT_TIMEOUT);
        assert!(
            took < deadline::CONNECT_TIMEOUT + Duration::from_secs(1),
            "{took:?}"
        );
        peer.join().expect("peer");
    }

    /// The same for a call's reply: its method's deadline bounds it.
    #[test]
    fn a_trickled_reply_ends_at_the_call_deadline() {
        let (_tmp, dir, listener) = listening();
        let peer = std::thread::spawn(move || {
            let (_r, s) = accept_call(&listener);
            trickle(
                s,
                br#"{"jsonrpc":"2.0","id":2,"result":{"daemon_version":""#,
                b'9',
                Duration::from_millis(100),
            );
        });
        let mut c = Client::connect(&dir, "test/0").expect("connect");
        let started = std::time::Instant::now();
        let e = c.call::<DaemonStatus>(&Empty {}).expect_err("no reply");
        let took = started.elapsed();
        assert_eq!(
            e.not_answering().map(|n| n.during.as_str()),
            Some("daemon.status"),
            "{e}"
        );
        assert!(
            took < deadline::CALL_TIMEOUT + Duration::from_secs(1),
            "{took:?}"
        );
        drop(c);
        peer.join().expect("peer");
    }

    /// A reply over the bound (2 MiB here; 64 MiB is the same) is named
    /// as too large, with the bound, at once: not a wait that ends in a
    /// timeout because the line was skipped.
    #[test]
    fn a_reply_over_the_bound_is_too_large_not_a_timeout() {
        let (_tmp, dir, listener) = listening();
        let len = 2 * ccd_protocol::MAX_LINE_BYTES;
        let peer = std::thread::spawn(move || {
            let (_r, mut s) = accept_call(&listener);
            let mut big = br#"{"jsonrpc":"2.0","id":2,"result":{"x":""#.to_vec();
            big.resize(len - 3, b'a');
            big.extend_from_slice(b"\"}}\n");
            let _ = s.write_all(&big);
            std::thread::sleep(Duration::from_secs(1));
        });
        let mut c = Client::connect(&dir, "test/0").expect("connect");
        let started = std::time::Instant::now();
        let e = c.call::<DaemonStatus>(&Empty {}).expect_err("too large");
        assert!(started.elapsed() < Duration::from_secs(2), "waited");
        match &e {
            ClientError::TooLarge {
                during,
                len: got,
                whole,
                max,
                ..
            } => {
                assert_eq!(during, "daemon.status");
                assert_eq!(
                    (*got, *whole, *max),
                    (len, true, ccd_protocol::MAX_LINE_BYTES)
                );
            }
            e => panic!("{e:?}"),
        }
        let text = e.to_string();
        assert!(text.contains(&format!("of {len} bytes")), "{text}");
        assert!(text.contains("bound of 1048576 bytes (1 MiB)"), "{text}");
        drop(c);
        peer.join().expect("peer");
    }

    /// One still coming when the deadline passes is too large as well
    /// (what came so far).
    #[test]
    fn a_reply_over_the_bound_still_coming_at_the_deadline_is_too_large() {
        let (_tmp, dir, listener) = listening();
        let peer = std::thread::spawn(move || {
            let (_r, mut s) = accept_call(&listener);
            let big = vec![b'a'; ccd_protocol::MAX_LINE_BYTES + 10];
            if s.write_all(&big).is_ok() {
                trickle(s, b"", b'a', Duration::from_millis(100));
            }
        });
        let mut c = Client::connect(&dir, "test/0").expect("connect");
        let e = c.call::<DaemonStatus>(&Empty {}).expect_err("too large");
        match &e {
            ClientError::TooLarge { len, whole, .. } => {
                assert!(!whole);
                assert!(*len > ccd_protocol::MAX_LINE_BYTES, "{len}");
            }
            e => panic!("{e:?}"),
        }
        assert!(e.to_string().contains("or more"), "{e}");
        drop(c);
        peer.join().expect("peer");
    }
}
