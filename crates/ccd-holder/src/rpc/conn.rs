//! One connection: read requests line by line, answer each, and for an
//! attached client run the output pump on its own thread. A client that
//! hands its terminal over (`holder.terminal`, [`crate::terminal`]) has
//! its keys read here too: the connection thread waits on the socket and
//! the terminal together.
//!
//! Bad input (not JSON, over-long line, unknown method, bad params) gets a
//! JSON-RPC error reply and the connection keeps going. Lines are written
//! whole under a per-connection mutex, so replies and notifications never
//! interleave inside a line.
//!
//! A connection that has not sent its first request (or notification)
//! within [`HELLO_DEADLINE`] gets one error line and is closed: idle
//! connections would otherwise hold slots ([`super::slots`]), threads and
//! descriptors for ever. The first request is its hello: `holder.hello`,
//! or whatever a one-off call comes for (the daemon's screen, kill and
//! collect say no hello), so every connection the daemon makes meets it
//! with its first write — a direct stream and a terminal handed over too:
//! the daemon writes `holder.hello` and `holder.attach` when it connects,
//! before it passes the connection on, and `holder.terminal` comes on an
//! attached connection. From then on a connection may stay silent as long
//! as it likes (an attachment, the daemon's kept connections).
//!
//! A hello that says `direct` (a direct stream the daemon is about to
//! pass on) is refused when the holder already serves its share of
//! connections besides the daemon's own ([`super::slots::admit_direct`]):
//! the error reply (`too_many_connections`) is the connection's last line,
//! and whatever came after the hello (the daemon's attach) is not read.

use std::io::BufReader;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ccd_protocol::methods::{Method, NotificationKind};
use ccd_protocol::stream::{Exited, SessionExited, SessionResync};
use ccd_protocol::{
    encode, parse_incoming, parse_params, read_line_bounded, ErrorCode, FrameError, Id, Incoming,
    Notification, Request, Response, RpcError, MAX_LINE_BYTES, MAX_OUTPUT_CHUNK,
};
use serde::Serialize;
use serde_json::Value;

use crate::config::{signal_number, KillSignal, Size};
use crate::fanout::{AttachMode, ClientQueue, Event};
use crate::keys::DetachKey;
use crate::lifecycle::State;
use crate::line_socket::{self, notification_line, LineSocket, OutputLine};
use crate::session::{Session, SessionError};
use crate::terminal::{self, TtyIn, TtyOut, Wake};
use ccd_protocol::holder::HolderMethodId;
use ccd_protocol::holder::{
    self as h, canonical, AttachParams, AttachResult, CollectParams, CollectResult, Done,
    HelloParams, HelloResult, InputParams, KillParams, KillResult, ReleaseReason, ReleasedParams,
    ScreenParams, TerminalParams, TerminalResult,
};

type Writer = line_socket::Shared;

/// How long a new connection has to send its first request (its hello, see
/// the module doc): the daemon's own socket gives its clients as long.
/// The daemon writes its first request with its connect, so only a
/// connection that says nothing meets it.
pub const HELLO_DEADLINE: Duration = Duration::from_secs(5);

/// How long a collect waits for the attached clients' pumps to write
/// their `session.exited` (a client that stopped reading does not hold
/// the holder longer).
const EXIT_NOTICE_WAIT: Duration = Duration::from_secs(1);

fn write_line(w: &Writer, line: &[u8]) -> std::io::Result<()> {
    line_socket::lock(w).write_line(line)
}

fn send_response(w: &Writer, resp: &Response) -> std::io::Result<()> {
    match encode(resp) {
        Ok(line) => write_line(w, &line),
        Err(e) => {
            tracing::error!(error = %e, "cannot encode a response");
            Ok(())
        }
    }
}

fn send_notification<P: Serialize>(w: &Writer, method: &str, params: &P) -> std::io::Result<()> {
    write_line(w, &notification_line(method, params)?)
}

/// A client's size, refused with `invalid_params` naming the bounds when
/// it is out of range: a direct client reaches the holder without the
/// daemon's check.
fn check_size(size: Size) -> Result<(), RpcError> {
    size.checked()?;
    Ok(())
}

fn ok<T: Serialize>(v: &T) -> Result<Value, RpcError> {
    serde_json::to_value(v).map_err(|e| RpcError::internal(format!("encoding result: {e}")))
}

fn session_error(e: SessionError) -> RpcError {
    match e {
        SessionError::Exited => RpcError::new(ErrorCode::InvalidRequest, "the child has exited")
            .with_data(serde_json::json!({ "reason": "exited" })),
        other => RpcError::internal(other.to_string()),
    }
}

/// The highest holder protocol version this holder agrees to: the
/// crate's, or less when `CCD_HOLDER_PROTOCOL_MAX` says so — a test hook
/// (read only with `ccd-test-hooks`' feature) that makes a current holder
/// behave as one started by an older ccd (the daemon then serves it by the
/// older path).
fn protocol_cap() -> u32 {
    static CAP: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *CAP.get_or_init(|| {
        ccd_test_hooks::Hook::HolderProtocolMax
            .parse::<u32>()
            .map_or(h::HOLDER_PROTOCOL_VERSION, |v| {
                v.clamp(h::MIN_HOLDER_PROTOCOL_VERSION, h::HOLDER_PROTOCOL_VERSION)
            })
    })
}

/// Per-connection state.
struct Conn<'a> {
    session: &'a Arc<Session>,
    /// How many connections the holder serves now, this one included.
    open: &'a dyn Fn() -> usize,
    /// Set by a refused direct hello: the connection ends after the reply.
    close_after_reply: bool,
    writer: Writer,
    attached: Option<Arc<ClientQueue>>,
    /// The size this connection's client last asked for (attach, resize):
    /// applied again before its input when another client changed it
    /// meanwhile (the most recently active client sets the size).
    size: Option<Size>,
    /// Set by `holder.collect` once the final reply is out.
    stop_after_reply: bool,
    /// The holder protocol version of this connection: negotiated by
    /// `holder.hello`, [`h::MIN_HOLDER_PROTOCOL_VERSION`] until then.
    protocol: u32,
    /// The client's terminal, while it is handed over: its input (read by
    /// this thread) and the flag that stops a writer waiting on its output.
    terminal: Option<(TtyIn, Arc<AtomicBool>)>,
    /// A terminal was handed over on this connection: its end shuts the
    /// socket, so a client waiting for the release sees it.
    had_terminal: bool,
}

/// Descriptors passed on a connection and not yet claimed by a
/// `holder.terminal` (the newest are kept; older ones are closed).
pub const MAX_PASSED_FDS: usize = 2;

/// Serve one connection until it closes; `open` counts the connections
/// the holder serves, this one included (for a direct stream's hello).
pub fn handle(session: &Arc<Session>, stream: UnixStream, open: &dyn Fn() -> usize) {
    crate::sched::short_slice();
    let writer = match stream.try_clone() {
        Ok(w) => LineSocket::shared(w),
        Err(e) => {
            // Debug: out of descriptors, this would log per connection.
            tracing::debug!(error = %e, "cannot clone connection");
            return;
        }
    };
    let mut conn = Conn {
        session,
        open,
        close_after_reply: false,
        writer,
        attached: None,
        size: None,
        stop_after_reply: false,
        protocol: h::MIN_HOLDER_PROTOCOL_VERSION,
        terminal: None,
        had_terminal: false,
    };
    let mut reader = BufReader::new(PollFirst {
        stream,
        passed: Vec::new(),
        hello_by: Some(Instant::now() + HELLO_DEADLINE),
    });
    let mut buf = Vec::new();
    loop {
        // With a terminal held, wait on it beside the socket until a line
        // can be read (one already buffered is read at once). A line that
        // arrives in parts is then read to its end before the next key:
        // only the client that sent it can stall its own keys that way
        // (`ccd attach` writes whole lines).
        if let Some((tty, _)) = conn.terminal.as_mut() {
            if !reader.buffer().contains(&b'\n') {
                let program_focus = || session.model().screen.modes().focus_events;
                let wake = tty.wait(reader.get_ref().stream.as_fd(), &program_focus);
                if let Some(focused) = tty.take_focus() {
                    conn.tell_focus(focused);
                }
                match wake {
                    Ok(Wake::Socket) => {}
                    Ok(Wake::Keys(keys)) => {
                        conn.terminal_keys(keys);
                        continue;
                    }
                    Ok(Wake::Detach(keys)) => {
                        conn.terminal_keys(keys);
                        conn.release_terminal(Some(ReleaseReason::DetachKey));
                        continue;
                    }
                    Ok(Wake::Hangup) | Err(_) => {
                        conn.release_terminal(Some(ReleaseReason::Hangup));
                        continue;
                    }
                }
            }
        }
        let reply = match read_line_bounded(&mut reader, MAX_LINE_BYTES, &mut buf) {
            Ok(None) => break,
            Ok(Some(line)) => {
                let incoming = parse_incoming(line);
                if matches!(
                    incoming,
                    Ok(Incoming::Request(_) | Incoming::Notification(_))
                ) {
                    // Its hello (see the module doc): no deadline from now on.
                    reader.get_mut().hello_by = None;
                }
                match incoming {
                    Ok(Incoming::Request(req)) => conn.dispatch(req, &mut reader.get_mut().passed),
                    Ok(Incoming::Notification(n)) => {
                        conn.on_notification(n);
                        None
                    }
                    Ok(Incoming::Response(_)) => None,
                    Err(invalid) => Some(invalid.into_response()),
                }
            }
            Err(FrameError::Io(e)) if e.kind() == std::io::ErrorKind::TimedOut => {
                tracing::debug!("no request within the hello deadline; closing the connection");
                let e = RpcError::new(
                    ErrorCode::HandshakeRequired,
                    format!("no request within {} s; closing", HELLO_DEADLINE.as_secs()),
                );
                let _ = send_response(&conn.writer, &Response::error(None, e));
                break;
            }
            Err(FrameError::Io(e)) => {
                tracing::debug!(error = %e, "connection read failed");
                break;
            }
            Err(e) => e.to_rpc_error().map(|err| Response::error(None, err)),
        };
        if let Some(resp) = reply {
            if send_response(&conn.writer, &resp).is_err() {
                break;
            }
        }
        if conn.stop_after_reply {
            session.request_stop();
        }
        if conn.close_after_reply {
            break;
        }
    }
    conn.release_terminal(None);
    if let Some(q) = conn.attached.take() {
        q.close();
    }
    if conn.had_terminal {
        // The socket's other holders (the pump, the queue) may outlive
        // this thread: end it now, so the client sees the release.
        let _ = reader.get_ref().stream.shutdown(std::net::Shutdown::Both);
    }
}

/// A connection's read side that sleeps in `poll(POLLIN)`, then reads. A
/// thread blocked in `read` on a Unix stream socket shares the socket's
/// wait queue with its write space, so it would wake each time the client
/// takes output sent on this socket: about 4,000 times a second in a
/// flood, each wakeup a short-slice thread preempting the parser (the
/// parser was preempted 14,000 times a second). `poll` wakes for input,
/// end of stream and errors only.
///
/// It reads with `recvmsg` ([`ccd_os::fdpass`]), keeping descriptors passed
/// with the bytes (`SCM_RIGHTS`: a terminal handed over) for the
/// `holder.terminal` they came with; at most [`MAX_PASSED_FDS`] wait,
/// older ones are closed (and a message's beyond [`ccd_os::fdpass::MAX_FDS`]
/// by the kernel).
///
/// Until the connection's hello, its wait ends at `hello_by`: a read
/// then fails with `TimedOut` (the hello deadline, see the module doc).
struct PollFirst {
    stream: UnixStream,
    passed: Vec<OwnedFd>,
    hello_by: Option<Instant>,
}

impl PollFirst {
    /// Waits until the socket is readable (or ended); `TimedOut` at
    /// `hello_by`.
    fn wait_readable(&self) -> std::io::Result<()> {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        loop {
            let timeout = match self.hello_by {
                None => PollTimeout::NONE,
                Some(by) => {
                    let left = by.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(std::io::ErrorKind::TimedOut.into());
                    }
                    // Rounded up: poll must not wake just before `by`.
                    let ms = i32::try_from(left.as_micros().div_ceil(1000)).unwrap_or(i32::MAX);
                    PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX)
                }
            };
            let mut p = [PollFd::new(self.stream.as_fd(), PollFlags::POLLIN)];
            match poll(&mut p, timeout) {
                Ok(n) if n > 0 => return Ok(()),
                Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
}

impl std::io::Read for PollFirst {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.wait_readable()?;
        let n = ccd_os::fdpass::recv_keeping_fds(self.stream.as_fd(), buf, &mut self.passed)?;
        if self.passed.len() > MAX_PASSED_FDS {
            let extra = self.passed.len() - MAX_PASSED_FDS;
            self.passed.drain(..extra);
        }
        Ok(n)
    }
}

impl Conn<'_> {
    /// Input and resize may come as notifications (no reply): the daemon's
    /// relay and a direct stream's client send keys that way. Anything
    /// else without an id is ignored.
    fn on_notification(&mut self, n: Notification) {
        let result = match canonical(&n.method) {
            h::Input::NAME => parse_params::<InputParams>(n.params).and_then(|p| self.input(p)),
            h::Resize::NAME => parse_params::<Size>(n.params).and_then(|p| self.resize(p)),
            other => {
                tracing::debug!(method = %other, "client notification ignored");
                return;
            }
        };
        if let Err(e) = result {
            tracing::debug!(method = %n.method, error = %e.message, "notification refused");
        }
    }

    /// Answer one request; `None` when the handler wrote its own reply.
    /// `passed`: the descriptors that came on the connection (taken by a
    /// `holder.terminal`). Every method of the table
    /// ([`HolderMethodId`]) has its arm here.
    fn dispatch(&mut self, req: Request, passed: &mut Vec<OwnedFd>) -> Option<Response> {
        let id = req.id.clone().unwrap_or(Id::Number(0));
        tracing::debug!(method = %req.method, "request");
        let Some(method) = HolderMethodId::from_name(canonical(&req.method)) else {
            let e = RpcError::method_not_found(canonical(&req.method));
            return Some(Response::error(Some(id), e));
        };
        let outcome = match method {
            HolderMethodId::Hello => {
                parse_params::<HelloParams>(req.params).and_then(|p| self.hello(p))
            }
            HolderMethodId::Info => ok(&self.session.info()),
            HolderMethodId::Screen => parse_params::<ScreenParams>(req.params)
                .and_then(|p| ok(&self.session.screen(p.format))),
            HolderMethodId::Terminal => return self.terminal(req, std::mem::take(passed)),
            HolderMethodId::Attach => {
                match parse_params::<AttachParams>(req.params).and_then(|p| self.attach(&id, p)) {
                    Ok(()) => return None,
                    Err(e) => Err(e),
                }
            }
            HolderMethodId::Detach => {
                self.release_terminal(None);
                if let Some(q) = self.attached.take() {
                    q.close();
                }
                ok(&Done { ok: true })
            }
            HolderMethodId::Input => {
                parse_params::<InputParams>(req.params).and_then(|p| self.input(p))
            }
            HolderMethodId::Resize => parse_params::<Size>(req.params).and_then(|p| self.resize(p)),
            HolderMethodId::Kill => {
                parse_params::<KillParams>(req.params).and_then(|p| self.kill(p))
            }
            HolderMethodId::Collect => {
                parse_params::<CollectParams>(req.params).and_then(|p| self.collect(p))
            }
            HolderMethodId::Respond if self.protocol >= h::WALK_VERSION => {
                parse_params::<h::RespondParams>(req.params).and_then(|p| {
                    self.refuse_observer()?;
                    ok(&crate::walk::driver::respond(
                        self.session,
                        p,
                        session_error,
                    )?)
                })
            }
            HolderMethodId::Submit if self.protocol >= h::WALK_VERSION => {
                parse_params::<h::SubmitParams>(req.params).and_then(|p| {
                    self.refuse_observer()?;
                    ok(&crate::walk::driver::submit(
                        self.session,
                        p,
                        session_error,
                    )?)
                })
            }
            // Not on a connection that negotiated less: as an older holder
            // would answer.
            HolderMethodId::Respond | HolderMethodId::Submit => {
                Err(RpcError::method_not_found(method.name()))
            }
        };
        Some(match outcome {
            Ok(v) => Response::success(id, v),
            Err(e) => Response::error(Some(id), e),
        })
    }

    /// `holder.hello`: the version both sides speak, used for the rest of
    /// the connection.
    fn hello(&mut self, p: HelloParams) -> Result<Value, RpcError> {
        if p.direct {
            let besides = (self.open)().saturating_sub(1);
            if super::slots::admit_direct(besides) != super::slots::Admission::Serve {
                self.close_after_reply = true;
                tracing::debug!(
                    open = besides + 1,
                    limit = super::slots::MAX_OTHER_CONNECTIONS,
                    "direct stream refused: the connections besides the daemon's are taken"
                );
                return Err(super::server::direct_refusal());
            }
        }
        self.protocol = h::negotiate_holder(p.protocol)?.min(protocol_cap());
        tracing::debug!(protocol = self.protocol, "holder protocol negotiated");
        ok(&HelloResult {
            protocol: self.protocol,
            holder_version: env!("CARGO_PKG_VERSION").to_string(),
        })
    }

    fn is_observer(&self) -> bool {
        self.attached
            .as_ref()
            .is_some_and(|q| q.mode() == AttachMode::Observe)
    }

    fn refuse_observer(&self) -> Result<(), RpcError> {
        if self.is_observer() {
            return Err(RpcError::new(
                ErrorCode::PermissionDenied,
                "this connection is attached in observe mode",
            ));
        }
        Ok(())
    }

    fn input(&mut self, p: InputParams) -> Result<Value, RpcError> {
        self.refuse_observer()?;
        if let Some(size) = self.size.filter(|s| *s != self.session.size()) {
            self.session.resize(size).map_err(session_error)?;
        }
        self.session.send_input(p.data).map_err(session_error)?;
        self.session.typing.typed();
        ok(&Done { ok: true })
    }

    fn resize(&mut self, p: Size) -> Result<Value, RpcError> {
        self.refuse_observer()?;
        check_size(p)?;
        self.session.resize(p).map_err(session_error)?;
        if self.attached.is_some() {
            self.size = Some(p);
        }
        ok(&Done { ok: true })
    }

    fn kill(&mut self, p: KillParams) -> Result<Value, RpcError> {
        self.refuse_observer()?;
        let grace = match p.signal {
            KillSignal::Kill => None,
            _ => p.grace_ms.map(Duration::from_millis),
        };
        // A conditional stop (the reaper's): with the input gate held no
        // key reaches the PTY between this check and the signal.
        let _held = p.unless_input_after.map(|_| self.session.hold_input());
        if let (Some(after), Some(at)) = (p.unless_input_after, self.session.last_input_at()) {
            if at > after {
                return Err(RpcError::new(
                    ErrorCode::NotAtPrompt,
                    format!(
                        "input reached the session at {at} (unix ms), after {after}: not stopped"
                    ),
                ));
            }
        }
        let sent = self
            .session
            .kill_with_grace(signal_number(p.signal), grace)
            .map_err(session_error)?;
        ok(&KillResult { sent })
    }

    fn collect(&mut self, p: CollectParams) -> Result<Value, RpcError> {
        let (g, exited) = self
            .session
            .wait_for(Duration::from_millis(p.wait_ms), |g| g.exit.is_some());
        drop(g);
        if exited {
            // Give the lifecycle driver a moment to record the final state.
            let (g, _) = self.session.wait_for(Duration::from_secs(1), |g| {
                matches!(g.life.state, State::Exited | State::Failed)
            });
            drop(g);
            // Every attached client's pump writes its `session.exited`
            // before the reply lets the holder stop and shut the sockets;
            // a client that does not take it within the bound loses only
            // the notice (its socket then ends).
            let (g, sent) = self
                .session
                .wait_for(EXIT_NOTICE_WAIT, |g| g.fanout.exit_notices_sent());
            drop(g);
            if !sent {
                tracing::debug!(
                    wait_ms = EXIT_NOTICE_WAIT.as_millis() as u64,
                    "a client did not take its exit notice in time; collected anyway"
                );
            }
        }
        let screen = self.session.screen_text();
        let mut g = self.session.lock();
        let result = CollectResult {
            collected: exited,
            exit: g.exit.clone(),
            state: g.life.state,
            failure: g.life.failure.clone(),
            screen,
            session_id: g.life.session_id.clone(),
        };
        if exited {
            g.collected = true;
            self.stop_after_reply = true;
            tracing::info!(exit = ?g.exit, "collected; holder will exit");
        }
        drop(g);
        ok(&result)
    }

    /// Writes its own reply (then the resync) on success.
    fn attach(&mut self, id: &Id, p: AttachParams) -> Result<(), RpcError> {
        if self.attached.is_some() {
            return Err(RpcError::new(
                ErrorCode::InvalidRequest,
                "this connection is already attached",
            ));
        }
        if p.mode == AttachMode::Other {
            return Err(RpcError::invalid_params(
                "mode must be interactive or observe",
            ));
        }
        if let (AttachMode::Interactive, Some(size)) = (p.mode, p.size) {
            check_size(size)?;
            if size != self.session.size() {
                self.session.resize(size).map_err(session_error)?;
            }
            self.size = Some(size);
        }
        let (q, resync) = self.session.attach(p.mode);
        let result = AttachResult {
            client_id: q.id(),
            seq: resync.seq,
            size: Size {
                rows: resync.size.rows,
                cols: resync.size.cols,
            },
        };
        // The reply, then the resync, then the pump: in that order. The
        // first two in one write, so the client has its first frame in the
        // read that brings the reply.
        let resp = Response::success(id.clone(), ok(&result)?);
        let sent = encode(&resp)
            .map_err(std::io::Error::other)
            .and_then(|mut lines| {
                lines.extend(notification_line(SessionResync::NAME, &resync)?);
                line_socket::lock(&self.writer).write_lines_at(&lines, resync.seq)
            });
        if let Err(e) = sent {
            q.close();
            return Err(RpcError::internal(format!("write failed: {e}")));
        }
        // From here on the reader may write small chunks itself.
        q.enable_direct(Arc::clone(&self.writer));
        let session = Arc::clone(self.session);
        let writer = Arc::clone(&self.writer);
        let pump_q = Arc::clone(&q);
        std::thread::Builder::new()
            .name("holder-pump".into())
            .spawn(move || pump(&session, &writer, &pump_q))
            .map_err(|e| {
                q.close();
                RpcError::internal(format!("cannot start the output pump: {e}"))
            })?;
        self.attached = Some(q);
        Ok(())
    }

    /// `holder.terminal` with the descriptors `passed` on the connection:
    /// writes its own reply. From the reply on, this connection's output
    /// goes to the terminal (after a redraw when the client had not drawn
    /// everything sent) and its keys are read here.
    fn terminal(&mut self, req: Request, passed: Vec<OwnedFd>) -> Option<Response> {
        let id = req.id.clone().unwrap_or(Id::Number(0));
        match parse_params::<TerminalParams>(req.params)
            .and_then(|p| self.take_terminal(&id, p, passed))
        {
            Ok(()) => None,
            Err(e) => Some(Response::error(Some(id), e)),
        }
    }

    fn take_terminal(
        &mut self,
        id: &Id,
        p: TerminalParams,
        passed: Vec<OwnedFd>,
    ) -> Result<(), RpcError> {
        let Some(q) = self.attached.clone() else {
            return Err(RpcError::new(
                ErrorCode::InvalidRequest,
                "holder.terminal: attach this connection first",
            ));
        };
        if self.terminal.is_some() {
            return Err(RpcError::new(
                ErrorCode::InvalidRequest,
                "holder.terminal: this connection already holds a terminal",
            ));
        }
        if p.detach_key >= 0x20 {
            return Err(RpcError::invalid_params(format!(
                "holder.terminal: the detach key must be a control character (0x00-0x1f), not {:#04x}",
                p.detach_key
            )));
        }
        let (input, output) = terminal::open_passed(passed).map_err(RpcError::invalid_params)?;
        let release = Arc::new(AtomicBool::new(false));
        let mut w = line_socket::lock(&self.writer);
        w.take_terminal(TtyOut::new(output, Arc::clone(&release)))
            .map_err(|e| RpcError::internal(format!("write failed: {e}")))?;
        let redraw = w.end() != p.drawn;
        if redraw {
            q.request_redraw();
        }
        let reply = Response::success(id.clone(), ok(&TerminalResult { redraw })?);
        let written = encode(&reply)
            .map_err(std::io::Error::other)
            .and_then(|line| w.write_line(&line));
        if let Err(e) = written {
            w.release_terminal();
            return Err(RpcError::internal(format!("write failed: {e}")));
        }
        drop(w);
        tracing::debug!(client = q.id(), redraw, "terminal handed over");
        self.terminal = Some((TtyIn::new(input, DetachKey(p.detach_key), p.focus), release));
        self.had_terminal = true;
        Ok(())
    }

    /// Tells the client its terminal's focus changed (`holder.focus`); a
    /// client that cannot be told hears of it no more (its end comes).
    fn tell_focus(&mut self, focused: bool) {
        tracing::debug!(focused, "terminal focus");
        let notice = notification_line(h::Focus::NAME, &h::FocusParams { focused });
        let mut w = line_socket::lock(&self.writer);
        if let Err(e) = notice.and_then(|line| w.write_line(&line)) {
            tracing::debug!(error = %e, "cannot tell the client its terminal's focus");
        }
    }

    /// Keys read from the handed-over terminal, for the session (an
    /// observer's are dropped: only its detach key counts).
    fn terminal_keys(&mut self, keys: Vec<u8>) {
        if keys.is_empty() || self.is_observer() {
            return;
        }
        if let Err(e) = self.input(InputParams { data: keys }) {
            tracing::debug!(error = %e.message, "terminal keys refused");
        }
    }

    /// Lets the handed-over terminal go, if one is held: closes its input
    /// here and its output under the socket's mutex (a writer waiting on
    /// it gives up first). With a `reason` the stream ends too and the
    /// client is told ([`h::Released`]).
    fn release_terminal(&mut self, reason: Option<ReleaseReason>) {
        let Some((input, release)) = self.terminal.take() else {
            return;
        };
        drop(input);
        release.store(true, Ordering::Release);
        if reason.is_some() {
            // No more output for this client, to any sink.
            if let Some(q) = self.attached.take() {
                q.close();
            }
        }
        let mut w = line_socket::lock(&self.writer);
        w.release_terminal();
        if let Some(reason) = reason {
            tracing::debug!(?reason, "terminal released");
            let notice = notification_line(h::Released::NAME, &ReleasedParams { reason });
            if let Err(e) = notice.and_then(|line| w.write_line(&line)) {
                tracing::debug!(error = %e, "cannot tell the client its terminal was released");
            }
        }
    }
}

/// Move output from a client's queue to its socket.
fn pump(session: &Session, writer: &Writer, q: &ClientQueue) {
    let mut sched = crate::sched::Adaptive::start();
    loop {
        let res = match q.next(crate::session::IDLE_SAFETY, MAX_OUTPUT_CHUNK) {
            Event::Output { seq, data } => {
                sched.moved(data.len());
                let label = session.label();
                line_socket::lock(writer).write_output(&OutputLine::new(&label, seq, &data))
            }
            Event::Resync => {
                let r = session.resync(q);
                line_socket::lock(writer).write_resync(&r)
            }
            Event::Exited(e) => {
                let ex = Exited {
                    session: session.label(),
                    exit_code: e.code,
                    signal: e.signal,
                };
                let _ = send_notification(writer, SessionExited::NAME, &ex);
                // A collect waits for this (see `Conn::collect`).
                q.exit_sent();
                session.notify();
                break;
            }
            Event::Finish => line_socket::lock(writer).finish(),
            Event::Closed => break,
            Event::Idle => {
                if session.stopping() {
                    break;
                }
                Ok(())
            }
        };
        if let Err(e) = res {
            tracing::debug!(client = q.id(), error = %e, "client write failed; detaching");
            q.close();
            break;
        }
    }
}
