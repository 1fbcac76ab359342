//! The attach loop: the session's stream to the terminal, the keyboard to
//! the session.
//!
//! The stream is direct when the daemon can hand one over (a session ccd
//! holds): `session.attach` with `direct` passes a connection to the
//! session's holder, already attached there for this client, so output and
//! keys skip the daemon (and a daemon that dies leaves the attachment
//! alone). Otherwise (observing a session outside ccd) the stream comes
//! through the daemon connection.
//!
//! On a direct stream, once the first frame is drawn, the terminal itself
//! is handed to the holder ([`hand_off`], `holder.terminal`): the holder
//! reads the keys and writes the output, so neither crosses this process.
//! This process then keeps the terminal's mode, its size (`SIGWINCH`) and
//! the signals, and waits on the connection for the end: the session's
//! exit, the holder's release (the detach key), or a signal, after which
//! it closes its side and waits until the holder has let the terminal go
//! ([`RELEASE_WAIT`]) before restoring it.
//!
//! Focus (interactive only): the daemon is told whether this terminal
//! has the focus ([`super::focus`] says from where).

use super::focus::{self, FocusTeller, KeyWatch};
use super::keys::{DetachFilter, DetachKey, Filtered};
use super::raw::{self, RawMode};
use ccd_claude::transcript::render::{render_line, Rendered, RenderedKind};
use ccd_client::client::{Reader, Writer};
use ccd_client::{Client, ClientError, Sent};
use ccd_protocol::holder::{self as h, TerminalParams, TerminalResult};
use ccd_protocol::methods::attach::{
    AttachMode, AttachParams, AttachResult, InputParams, ResizeParams, SessionAttach, SessionInput,
    SessionResize,
};
use ccd_protocol::methods::session::{Progress, ResumeStep, SessionProgress};
use ccd_protocol::methods::{Method, NotificationKind, TermSize};
use ccd_protocol::stream::RESYNC_PREFIX;
use ccd_protocol::stream::{
    Exited, OutputChunk, Resync, SessionExited, SessionOutput, SessionResync, SessionTranscript,
    StreamLineRef, TranscriptItem, TranscriptItems,
};
use ccd_protocol::{parse_incoming, ErrorCode, Incoming, Notification};
use std::collections::VecDeque;
use std::io::Write;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Interactive (keys go to the session) or observe (keys ignored but the
/// detach key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Interactive,
    Observe,
}

/// How an attachment ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Detached,
    Exited {
        code: Option<i64>,
        signal: Option<i64>,
    },
    DaemonGone,
    /// A direct stream ended without the session's exit: its holder is gone.
    HolderGone,
    Signalled(i32),
}

/// Why the loop is ending, set by the input and signal threads.
const RUNNING: u8 = 0;
const DETACH: u8 = 1;
/// The stream ended (the session exited, the connection closed).
const ENDED: u8 = 2;
const SIGNAL_BASE: u8 = 100;

/// What a command adds to the `session.attach` params that
/// [`attach_loop`] sends.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AttachExtra {
    /// `fresh_on_failure` (`ccd attach --fresh-on-failure`).
    pub fresh_on_failure: bool,
    /// `last` (`ccd observe --last`).
    pub last: Option<u32>,
}

/// The connection an attachment starts from.
pub enum Opening {
    /// Connected: [`attach_loop`] sends `session.attach` first thing.
    Connected(Client),
    /// `session.attach` with [`attach_params`] went out right behind
    /// `hello` (`ccd_client::connect_or_start_sending`): its reply is next.
    Sent(Client, Sent),
}

impl From<Client> for Opening {
    fn from(c: Client) -> Self {
        Opening::Connected(c)
    }
}

/// The `session.attach` params [`attach_loop`] sends (or expects sent,
/// [`Opening::Sent`]) for `session` in `mode`, from a client on another
/// machine (`remote`) or this one.
pub fn attach_params(session: &str, mode: Mode, extra: AttachExtra, remote: bool) -> AttachParams {
    AttachParams {
        session: session.to_string(),
        mode: match mode {
            Mode::Interactive => AttachMode::Interactive,
            Mode::Observe => AttachMode::Observe,
        },
        size: raw::size().map(|(cols, rows)| TermSize { cols, rows }),
        fresh_on_failure: extra.fresh_on_failure,
        last: extra.last,
        // A descriptor cannot cross ssh: a remote daemon relays the stream.
        direct: !remote,
    }
}

/// Attaches `client` to `session` and runs until detached or ended.
/// `extra` goes into the `session.attach` params ([`attach_params`]);
/// `on_attached` sees the reply before the terminal switches to raw mode.
pub fn attach_loop(
    client: impl Into<Opening>,
    session: &str,
    mode: Mode,
    key: DetachKey,
    extra: AttachExtra,
    on_attached: &mut dyn FnMut(&AttachResult),
) -> Result<(Outcome, AttachResult), ClientError> {
    let opening = client.into();
    let remote = match &opening {
        Opening::Connected(c) | Opening::Sent(c, _) => c.is_remote(),
    };
    let params = attach_params(session, mode, extra, remote);
    let (attached, direct, (mut reader, writer, queued), daemon) =
        open_stream(opening, params, on_attached)?;
    let sid = attached.session.clone();
    let writer = Arc::new(Mutex::new(writer));
    let why = Arc::new(AtomicU8::new(RUNNING));

    // This thread writes the session's output (its scheduling follows
    // how much it moves: `Terminal`); the input thread sends keys.
    let guard = RawMode::enter().map_err(ClientError::Io)?;
    let mut out = Terminal::new().map_err(ClientError::Io)?;
    // Our own screen, like tmux: the shell's screen comes back on leaving.
    // Written with the first frame when it came with the attach reply, so
    // the screen fills in one write, before the helper threads start.
    out.put(b"\x1b[?1049h\x1b[H\x1b[2J");
    let mut outcome = None;
    for n in queued {
        if let Some(o) = show(&mut out, &n) {
            outcome = Some(o);
        }
    }
    while outcome.is_none() && reader.has_buffered_line() {
        match next_shown(&mut reader, &mut out) {
            Ok(o) => outcome = o,
            Err(_) => break, // the loop below meets it again
        }
    }
    out.flush();
    // The daemon connection a direct stream came through, closed once the
    // first frame is out (closing it wakes the daemon: not before), unless
    // it tells the daemon of this terminal's focus.
    let focus = focus::teller(mode == Mode::Interactive, daemon, &writer, &sid);
    let wants_handoff = outcome.is_none() && direct && handoff_wanted(attached.holder_protocol);
    let focus_reports = wants_handoff && focus::reports_wanted(&focus, attached.holder_protocol);
    if focus_reports {
        // Asked before the holder reads the keys: a report comes to it.
        out.put(focus::REPORTS_ON);
        out.flush();
    }
    out.focus = focus.clone();

    let handed = wants_handoff
        && hand_off(
            &mut reader,
            &writer,
            &mut out,
            key,
            focus_reports,
            &mut outcome,
        )
        .unwrap_or_else(|e| {
            // The connection failed under the hand-off: the holder is gone.
            tracing::debug!(error = %e, "the terminal hand-off failed");
            out.flush();
            outcome.get_or_insert(Outcome::HolderGone);
            false
        });
    let input = if handed {
        None
    } else {
        spawn_input(
            writer.clone(),
            why.clone(),
            sid.clone(),
            mode,
            key,
            focus.clone(),
        )
    };
    let signals = spawn_signals(writer.clone(), why.clone(), sid.clone(), mode, handed);
    let outcome = match outcome {
        Some(o) => o,
        None => loop {
            match next_shown(&mut reader, &mut out) {
                Ok(None) => {
                    // Draw once nothing more is waiting: one terminal write
                    // for a run of chunks, never a wait with output held.
                    if !reader.has_buffered_line() || out.is_full() {
                        out.flush();
                    }
                }
                Ok(Some(o)) => break o,
                Err(_) => {
                    break match why.load(Ordering::Acquire) {
                        DETACH => Outcome::Detached,
                        s if s >= SIGNAL_BASE => Outcome::Signalled(i32::from(s - SIGNAL_BASE)),
                        _ if direct => Outcome::HolderGone,
                        _ => Outcome::DaemonGone,
                    };
                }
            }
        },
    };
    out.flush();
    drop(out);
    // Invariant: when this returns, no thread of this attachment reads
    // stdin or takes signals (the dashboard reads the keyboard next), and
    // no holder holds the terminal.
    let _ = why.compare_exchange(RUNNING, ENDED, Ordering::AcqRel, Ordering::Acquire);
    if handed {
        await_release(&mut reader, &writer);
    }
    if let Some((thread, wake)) = input {
        let _ = nix::unistd::write(&wake, b"x");
        let _ = thread.join();
    }
    if let Some(h) = signals {
        h.close();
    }
    drop(guard); // restores the terminal
    if let Ok(w) = writer.lock() {
        let _ = w.shutdown_both();
    }
    Ok((outcome, attached))
}

/// The halves of a stream, whether it is direct, and for a direct one the
/// daemon connection it came through (to close once the first frame is
/// drawn).
type Opened = (
    AttachResult,
    bool,
    (Reader, Writer, VecDeque<Notification>),
    Option<Client>,
);

/// `session.attach` with `params` (which ask for a direct stream; already
/// sent with [`Opening::Sent`]), then, when the daemon passed a
/// connection, the holder's reply to the attach the daemon sent on it.
/// `on_attached` sees the daemon's reply first.
fn open_stream(
    opening: Opening,
    mut params: AttachParams,
    on_attached: &mut dyn FnMut(&AttachResult),
) -> Result<Opened, ClientError> {
    let (mut client, attached) = match opening {
        Opening::Connected(mut c) => {
            let a = c.call_watching::<SessionAttach>(&params, &mut say_progress)?;
            (c, a)
        }
        Opening::Sent(mut c, sent) => {
            let a = c.wait_sent_watching::<SessionAttach>(sent, &mut say_progress)?;
            (c, a)
        }
    };
    on_attached(&attached);
    if !attached.direct {
        return Ok((attached, false, client.split(), None));
    }
    let fd = client.take_passed_fd().ok_or_else(|| {
        ClientError::Protocol("a direct stream was promised but no connection came".into())
    })?;
    match Client::direct_stream(fd) {
        Ok(halves) => Ok((attached, true, halves, Some(client))),
        // A daemon that names the holder's version (`holder_protocol`)
        // passes no connection its holder cannot serve. Only an older one
        // may pass one to a holder that predates the direct names (holders
        // outlive upgrades): then go through the daemon.
        Err(e)
            if attached.holder_protocol.is_none()
                && e.rpc().map(|r| r.code) == Some(ErrorCode::MethodNotFound.code()) =>
        {
            tracing::info!("the session's holder predates direct streams");
            params.direct = false;
            params.session = attached.session;
            let attached = client.call::<SessionAttach>(&params)?;
            Ok((attached, false, client.split(), None))
        }
        Err(e) => Err(e),
    }
}

/// Says on stderr what a resume is doing while `session.attach` waits for
/// it (the terminal is not raw yet): which session, where, and when
/// another process took it meanwhile.
fn say_progress(n: &Notification) {
    if let Some(line) = progress_line(n) {
        eprintln!("{}", ccd_claude::display::line(&line));
    }
}

fn progress_line(n: &Notification) -> Option<String> {
    if n.method != SessionProgress::NAME {
        return None;
    }
    let p: Progress = n.params_as().ok()?;
    let sid = p.session.as_deref().unwrap_or("?");
    let short = sid.get(..8).unwrap_or(sid);
    match p.step? {
        ResumeStep::Resuming => Some(format!(
            "ccd: resuming {short} in {}…",
            p.cwd.as_deref().unwrap_or("its original directory")
        )),
        ResumeStep::Stopping => Some(format!(
            "ccd: another process (pid {}) started {short} meanwhile; stopping ccd's copy…",
            p.pid.map(|p| p.to_string()).unwrap_or_else(|| "?".into())
        )),
        _ => None,
    }
}

/// The terminal (fd 1), written in whole batches: output decoded from
/// several lines that arrived together goes out in one write.
struct Terminal {
    /// Our own descriptor of stdout: written directly, not through
    /// `Stdout`'s line buffering (which splits a batch at its last newline).
    fd: std::fs::File,
    pending: Vec<u8>,
    /// The stream offset drawn up to, counting what is pending
    /// ([`UNKNOWN_POSITION`] after a line without one).
    drawn: u64,
    /// The writing thread's scheduling: interactive, or bulk while the
    /// session floods.
    sched: ccd_sched::Adaptive,
    /// Who tells the daemon of a focus change the holder reports.
    focus: Option<Arc<FocusTeller>>,
}

/// A drawn position no stream has: the holder redraws on a hand-off.
const UNKNOWN_POSITION: u64 = u64::MAX;

/// Batch size at which the terminal is written even with more lines waiting.
const TERM_BATCH: usize = 256 * 1024;

impl Terminal {
    fn new() -> std::io::Result<Self> {
        let fd = std::io::stdout().as_fd().try_clone_to_owned()?;
        Ok(Self {
            fd: fd.into(),
            pending: Vec::with_capacity(TERM_BATCH),
            drawn: UNKNOWN_POSITION,
            sched: ccd_sched::Adaptive::start(),
            focus: None,
        })
    }

    fn put(&mut self, bytes: &[u8]) {
        self.pending.extend_from_slice(bytes);
    }

    fn is_full(&self) -> bool {
        self.pending.len() >= TERM_BATCH
    }

    fn flush(&mut self) {
        if !self.pending.is_empty() {
            self.sched.moved(self.pending.len());
            // A terminal that is gone ends the loop through the input side.
            let _ = self.fd.write_all(&self.pending);
            self.pending.clear();
        }
    }
}

/// Reads one line and shows it: output and redraws decoded straight from
/// the line ([`StreamLineRef`]), anything else through the general decoder.
/// `Some` when it ends the loop.
fn next_shown(r: &mut Reader, out: &mut Terminal) -> Result<Option<Outcome>, ClientError> {
    Ok(match next_line(r, out)? {
        Line::Ended(o) => Some(o),
        Line::Shown | Line::Reply(_) => None,
    })
}

/// What [`next_line`] read.
enum Line {
    /// Output, a redraw or a notification that goes on: shown.
    Shown,
    /// A notification that ends the attachment (shown first).
    Ended(Outcome),
    /// A reply to a request of this client's.
    Reply(ccd_protocol::Response),
}

/// Reads one line, shows what it shows, and says what it was.
fn next_line(r: &mut Reader, out: &mut Terminal) -> Result<Line, ClientError> {
    let line = r.next_line_bytes()?;
    if let Some(l) = StreamLineRef::parse(line) {
        show_stream(out, l.resync, l.seq, |buf| l.decode_into(buf));
        return Ok(Line::Shown);
    }
    let Ok(line) = std::str::from_utf8(line) else {
        tracing::warn!("skipping a non-UTF-8 line from the daemon");
        return Ok(Line::Shown);
    };
    match parse_incoming(line) {
        Ok(Incoming::Notification(n)) => Ok(show(out, &n).map_or(Line::Shown, Line::Ended)),
        Ok(Incoming::Response(resp)) => Ok(Line::Reply(resp)),
        Ok(_) => Ok(Line::Shown),
        Err(e) => Err(ClientError::Protocol(e.error.message)),
    }
}

/// Queues a chunk of output (at stream offset `seq`) or a redraw (standing
/// for offset `seq`) for the terminal; bytes that do not decode are left
/// out.
fn show_stream(
    out: &mut Terminal,
    resync: bool,
    seq: Option<u64>,
    decode: impl FnOnce(&mut Vec<u8>) -> bool,
) {
    let mark = out.pending.len();
    if resync {
        out.put(RESYNC_PREFIX);
    }
    if !decode(&mut out.pending) {
        out.pending.truncate(mark);
        return;
    }
    let len = (out.pending.len() - mark) as u64;
    out.drawn = match seq {
        Some(seq) if resync => seq,
        Some(seq) => seq + len,
        None => UNKNOWN_POSITION,
    };
}

/// Shows one notification on the terminal; `Some` when it ends the loop.
fn show(out: &mut Terminal, n: &Notification) -> Option<Outcome> {
    match n.method.as_str() {
        SessionOutput::NAME => {
            if let Ok(c) = n.params_as::<OutputChunk>() {
                show_stream(out, false, Some(c.seq), |buf| {
                    buf.extend_from_slice(&c.data);
                    true
                });
            }
            None
        }
        SessionResync::NAME => {
            if let Ok(r) = n.params_as::<Resync>() {
                show_stream(out, true, Some(r.seq), |buf| {
                    buf.extend_from_slice(&r.data);
                    true
                });
            }
            None
        }
        // The holder let a handed-off terminal go: the detach key (or the
        // terminal hung up).
        h::Released::NAME => Some(Outcome::Detached),
        // The handed-off terminal's focus changed.
        h::Focus::NAME => focus::from_holder(out.focus.as_deref(), n),
        SessionTranscript::NAME => {
            let width = raw::size().map(|(c, _)| c as usize).unwrap_or(100);
            let items = n
                .params_as::<TranscriptItems>()
                .map(|t| t.items)
                .unwrap_or_default();
            for r in items.into_iter().filter_map(rendered) {
                let line = render_line(&r, width);
                out.put(line.as_bytes());
                out.put(b"\r\n");
            }
            None
        }
        SessionExited::NAME => {
            let p = n.params_as::<Exited>().ok();
            Some(Outcome::Exited {
                code: p.as_ref().and_then(|p| p.exit_code).map(i64::from),
                signal: p.as_ref().and_then(|p| p.signal).map(i64::from),
            })
        }
        _ => None,
    }
}

/// A transcript item as the renderer takes it; `None` for a kind this
/// client does not know.
pub(crate) fn rendered(item: TranscriptItem) -> Option<Rendered> {
    let kind = match item.kind.as_str() {
        "user" => RenderedKind::User,
        "assistant" => RenderedKind::Assistant,
        "tool" => RenderedKind::Tool,
        "tool_result" => RenderedKind::ToolResult,
        "system" => RenderedKind::System,
        _ => return None,
    };
    Some(Rendered {
        kind,
        text: item.text,
        timestamp: item.timestamp,
    })
}

/// Sends `params` of method `M` without awaiting a reply; false when the
/// connection is gone.
pub(super) fn send<M: Method>(writer: &Mutex<Writer>, params: &M::Params) -> bool {
    let Ok(mut w) = writer.lock() else {
        return false;
    };
    w.notify_typed::<M>(params).is_ok()
}

/// Ends the attachment for `reason`: closes the connection, so the main
/// thread's read ends. While the holder holds the terminal (`handed`),
/// only this side's sending is closed first, so the holder lets the
/// terminal go before the connection ends; one that does not within
/// [`RELEASE_WAIT`] is cut off.
fn stop(writer: &Mutex<Writer>, why: &AtomicU8, reason: u8, handed: bool) {
    why.store(reason, Ordering::Release);
    if handed {
        if let Ok(w) = writer.lock() {
            let _ = w.shutdown();
        }
        std::thread::sleep(RELEASE_WAIT);
    }
    if let Ok(w) = writer.lock() {
        let _ = w.shutdown_both();
    }
}

/// How long a client waits for its holder to let the terminal go.
const RELEASE_WAIT: Duration = Duration::from_secs(1);

/// The terminal hand-off is tried: `CCD_TERMINAL_HANDOFF=0` turns it off
/// (the output and keys then cross this process, as with an older holder).
const HANDOFF_ENV: &str = "CCD_TERMINAL_HANDOFF";

/// Whether to hand the terminal to a holder speaking `holder_protocol`:
/// both stdin and stdout must be terminals.
fn handoff_wanted(holder_protocol: Option<u32>) -> bool {
    use std::io::IsTerminal;
    holder_protocol.is_some_and(|v| v >= h::TERMINAL_VERSION)
        && std::env::var(HANDOFF_ENV).map_or(true, |v| v != "0")
        && std::io::stdin().is_terminal()
        && std::io::stdout().is_terminal()
}

/// Hands stdin and stdout to the holder (`holder.terminal`); true when it
/// took them. Until its reply, lines keep coming: what they would draw is
/// held back and dropped once the holder has the terminal (it redraws
/// when the client had not drawn everything it sent), or drawn when it
/// refused. A session exit meanwhile lands in `outcome`.
fn hand_off(
    reader: &mut Reader,
    writer: &Mutex<Writer>,
    out: &mut Terminal,
    key: DetachKey,
    focus: bool,
    outcome: &mut Option<Outcome>,
) -> Result<bool, ClientError> {
    let params = TerminalParams {
        drawn: out.drawn,
        detach_key: key.0,
        focus,
    };
    let (stdin, stdout) = (std::io::stdin(), std::io::stdout());
    let id = {
        let Ok(mut w) = writer.lock() else {
            return Ok(false);
        };
        w.send_typed_passing::<h::Terminal>(&params, &[stdin.as_fd(), stdout.as_fd()])?
    };
    let mark = out.pending.len();
    reader
        .set_read_timeout(Some(ccd_client::deadline::CALL_TIMEOUT))
        .map_err(ClientError::Io)?;
    let answer = loop {
        match next_line(reader, out)? {
            Line::Reply(r) if r.id.as_ref() == Some(&id) => break r.outcome,
            Line::Ended(o) => *outcome = Some(o),
            Line::Shown | Line::Reply(_) => {}
        }
    };
    reader.set_read_timeout(None).map_err(ClientError::Io)?;
    match answer {
        Ok(v) => {
            // Held back until the reply: output the holder replaces with a
            // redraw. When the exit notice came meanwhile, the holder's
            // writer is done and draws nothing more: draw it here.
            let redraw = serde_json::from_value::<TerminalResult>(v).map_or(true, |r| r.redraw);
            if redraw && outcome.is_some() {
                out.flush();
            } else {
                out.pending.truncate(mark);
            }
            Ok(true)
        }
        Err(e) => {
            tracing::info!(error = %e.message, "the holder did not take the terminal; relaying it");
            out.flush();
            Ok(false)
        }
    }
}

/// After a handed-off attachment ends: closes this side's sending and
/// reads until the holder ends the connection (it does so once it let the
/// terminal go), for at most [`RELEASE_WAIT`].
fn await_release(reader: &mut Reader, writer: &Mutex<Writer>) {
    if let Ok(w) = writer.lock() {
        let _ = w.shutdown();
    }
    if reader.set_read_timeout(Some(RELEASE_WAIT)).is_err() {
        return;
    }
    let deadline = Instant::now() + RELEASE_WAIT;
    while Instant::now() < deadline && reader.next_line_bytes().is_ok() {}
}

/// Longest wait of an idle input thread (a safety net, not a poll: keys,
/// a pending detach's deadline and the wake pipe end it sooner), so an
/// attachment nobody types into wakes nobody.
const INPUT_IDLE_SAFETY: Duration = Duration::from_secs(30);

/// The input thread and the write end of the pipe that wakes it to leave.
type Input = (std::thread::JoinHandle<()>, std::os::fd::OwnedFd);

fn spawn_input(
    writer: Arc<Mutex<Writer>>,
    why: Arc<AtomicU8>,
    sid: String,
    mode: Mode,
    key: DetachKey,
    focus: Option<Arc<FocusTeller>>,
) -> Option<Input> {
    let (wake_r, wake_w) = nix::unistd::pipe().ok()?;
    let thread = std::thread::spawn(move || {
        ccd_sched::short_slice();
        let mut filter = DetachFilter::new(key);
        let mut reports = KeyWatch::new(focus);
        let mut buf = [0u8; 8192];
        loop {
            let now = Instant::now();
            if filter.expired(now) {
                stop(&writer, &why, DETACH, false);
                return;
            }
            // Only a half-typed detach has a deadline; otherwise nothing
            // here is timed (keys and the wake pipe end the wait).
            let timeout = filter.wait_hint(now).unwrap_or(INPUT_IDLE_SAFETY);
            let ready = stdin_ready(timeout, &wake_r);
            if why.load(Ordering::Acquire) != RUNNING {
                return;
            }
            if !ready {
                continue;
            }
            let n = match nix::unistd::read(std::io::stdin().as_fd(), &mut buf) {
                Ok(n) if n > 0 => n,
                _ => {
                    // The terminal is gone: leave.
                    stop(&writer, &why, DETACH, false);
                    return;
                }
            };
            reports.read(&buf[..n]);
            let (send_now, detach) = match filter.feed(&buf[..n], Instant::now()) {
                Filtered::Send(b) => (b, false),
                Filtered::Detach(b) => (b, true),
            };
            if mode == Mode::Interactive && !send_now.is_empty() {
                let params = InputParams {
                    session: sid.clone(),
                    data: send_now,
                };
                if !send::<SessionInput>(&writer, &params) {
                    return;
                }
            }
            if detach {
                stop(&writer, &why, DETACH, false);
                return;
            }
        }
    });
    Some((thread, wake_w))
}

/// Whether stdin has bytes within `timeout`; false at once when `wake`
/// is written.
fn stdin_ready(timeout: Duration, wake: &std::os::fd::OwnedFd) -> bool {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let stdin = std::io::stdin();
    let mut fds = [
        PollFd::new(stdin.as_fd(), PollFlags::POLLIN),
        PollFd::new(wake.as_fd(), PollFlags::POLLIN),
    ];
    let r = poll(
        &mut fds,
        PollTimeout::try_from(timeout).unwrap_or(PollTimeout::MAX),
    );
    // `any` is None for bits nix does not name: set.
    let woke = |fd: &PollFd<'_>| fd.any().unwrap_or(true);
    r.is_ok_and(|n| n > 0) && !woke(&fds[1]) && woke(&fds[0])
}

fn spawn_signals(
    writer: Arc<Mutex<Writer>>,
    why: Arc<AtomicU8>,
    sid: String,
    mode: Mode,
    handed: bool,
) -> Option<signal_hook::iterator::Handle> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM, SIGWINCH};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGWINCH, SIGTERM, SIGHUP, SIGINT])
    else {
        return None;
    };
    let handle = signals.handle();
    std::thread::spawn(move || {
        for s in signals.forever() {
            match s {
                SIGWINCH => {
                    if mode == Mode::Interactive {
                        if let Some((cols, rows)) = raw::size() {
                            send::<SessionResize>(
                                &writer,
                                &ResizeParams {
                                    session: sid.clone(),
                                    cols,
                                    rows,
                                },
                            );
                        }
                    }
                }
                other => {
                    stop(&writer, &why, SIGNAL_BASE + other as u8, handed);
                    return;
                }
            }
        }
    });
    Some(handle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn progress(params: Value) -> Notification {
        Notification::new("session.progress", Some(params))
    }

    #[test]
    fn a_resume_says_where_it_resumes_and_when_it_stops_its_copy() {
        let sid = "3c5e7a9b-1d2f-4a6c-8e0b-2d4f6a8c0e1f";
        let n = progress(
            json!({"holder": "h1", "session": sid, "lifecycle": "starting",
            "step": "resuming", "cwd": "/home/me/old"}),
        );
        assert_eq!(
            progress_line(&n).as_deref(),
            Some("ccd: resuming 3c5e7a9b in /home/me/old…")
        );
        let n = progress(json!({"holder": "h1", "session": sid, "lifecycle": "ready",
            "step": "stopping", "pid": 4120}));
        assert_eq!(
            progress_line(&n).as_deref(),
            Some(
                "ccd: another process (pid 4120) started 3c5e7a9b meanwhile; stopping ccd's copy…"
            )
        );
        // Plain lifecycle steps and other notifications say nothing.
        let n = progress(json!({"holder": "h1", "session": sid, "lifecycle": "trust"}));
        assert_eq!(progress_line(&n), None);
        let n = Notification::new("session.output", Some(json!({"session": sid, "data": ""})));
        assert_eq!(progress_line(&n), None);
    }
}
