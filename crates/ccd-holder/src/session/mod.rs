//! The session's shared state, behind two mutexes:
//!
//! - the **session lock** ([`Inner`]): stream position, fan-out, the parse
//!   backlog, PTY master, size, exit status and lifecycle record;
//! - the **model lock** ([`Model`]): the screen model and the stream
//!   position it has parsed up to.
//!
//! # The parse runs beside the stream, not in front of it
//!
//! The PTY reader pushes each chunk to the clients and to the *backlog* at
//! once (session lock only); the parser thread ([`Session::parse_step`])
//! feeds backlog items to the model under the model lock alone, so clients
//! get output while the model catches up, and the reader reads on while the
//! model parses. A burst thus passes at relay speed and the parser drains
//! it afterwards. Backlog items are numbered (`Inner::backlog_front` is the
//! number of the first); `Model::applied` counts the items the model has
//! taken, and an item leaves the backlog only after that: under both locks
//! `backlog` holds exactly the stream from `Model::parsed` (past an
//! applied-but-not-yet-removed front) to `Inner::seq`. Any thread may parse
//! a batch ([`Session::catch_up`]: parse on demand): it clones the items
//! past the applied count under the session lock, then applies under the
//! model lock only those the model has not taken meanwhile, so two parsing
//! threads never feed an item twice and never skip one.
//!
//! **Bounds.** The backlog holds at most [`BACKLOG_CAP`] bytes, and at
//! most what the model parses in [`CATCH_UP_GOAL`] at its measured speed (CPU time)
//! (never less than [`BACKLOG_MIN`]), so that catching the model up is
//! bounded in time as well as in bytes; beyond that the reader waits for
//! the parser, which then paces the PTY.
//!
//! **Every reader of the model sees it caught up** to the byte it asks
//! about: `holder.screen` parses on demand up to the stream's position at
//! the request; a redraw for a client (attach, resync) is the model at
//! `parsed` followed in the client's queue by the backlog from there, taken
//! under both locks — the stream lines up exactly — and is taken only once
//! at most [`SEED_CAP`] (and half a client queue) is left unparsed: the
//! redrawing thread parses on demand, and while it waits the reader keeps
//! the backlog within that (so it converges), then the rest is seeded. The
//! lifecycle driver reads the model where it is and steps again until it
//! has seen everything read before its step. A resize reaches the model in
//! stream order (queued in the backlog unless everything in it was applied).
//!
//! The parts: this module holds the state, its locks, the output's intake
//! and the controls; [`parse`] the model's parse beside the stream and the
//! waits on it; [`life`] the lifecycle record (`holder.info`, the registry
//! entry followed, transitions, attention, the permission prompt).
//!
//! Lock order: the session lock, then the model lock, then a client queue's
//! lock. A parsing thread never holds the session and model locks together.
//! Nobody does I/O on a client socket while holding any of them. PTY input
//! goes through the single writer thread ([`crate::pty_io`]), never under a
//! lock.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ccd_protocol::methods::TermSize;
use ccd_protocol::stream::{Resync, ResyncReason};
use ccd_screen::{classify_screen, Screen};
use portable_pty::MasterPty;

use crate::config::Size;
use crate::exit::{self, ExitInfo};
use crate::fanout::{AttachMode, ClientQueue, Fanout};
use crate::lifecycle::{AttentionReason, State};
use crate::stop::StopSignal;
use ccd_protocol::holder::{
    Attention, Cursor, EarlierId, InfoResult, PermissionInfo, RegistryStatus, ScreenFormat,
    ScreenResult, Transition,
};

mod life;
mod parse;

/// Transitions kept for `holder.info`.
const TRANSITIONS_KEPT: usize = 10;

/// Earlier conversation ids kept for `holder.info` (a process that was
/// `/clear`ed more often than this forgets the oldest; their transcripts
/// are still listed, as dead sessions without a successor named).
pub const EARLIER_IDS_KEPT: usize = 32;

/// The backlog's cap by default (defined with the holder's other bounds).
pub use crate::config::BACKLOG_CAP;

/// The backlog's cap never goes below this, however slow the parse.
pub const BACKLOG_MIN: usize = 4 << 20;

/// The backlog holds at most what the model parses in this long at its
/// measured speed (between [`BACKLOG_MIN`] and [`BACKLOG_CAP`]): catching
/// the model up for a redraw or a screen request takes about this at most.
pub const CATCH_UP_GOAL: Duration = Duration::from_secs(1);

/// Most unparsed bytes a redraw seeds into a client's queue (and at most
/// half the queue).
pub const SEED_CAP: usize = 4 << 20;

/// Longest idle wait of a thread that new work, the output's end and a
/// stop all wake anyway (a safety net, not a poll).
pub(crate) const IDLE_SAFETY: Duration = Duration::from_secs(30);

/// Most bytes parsed per model-lock hold (a redraw or a screen request
/// waits at most for this much parsing before it can parse itself), and
/// per turn of the parser thread, which yields the CPU between turns
/// (`pty_io::spawn_parser`): about 0.3 ms of parsing at 100 MB/s.
pub(crate) const PARSE_BATCH: usize = 32 << 10;

/// The parser thread parses once the stream has paused this long (or the
/// backlog is half full): see [`Session::parse_step`].
const DEFER_QUIET: Duration = Duration::from_millis(4);

/// Longest chunk the PTY reader parses itself when it is all the backlog
/// holds and the parser idles (see [`Session::on_output`]).
const INLINE_PARSE_MAX: usize = 1024;

/// The calling thread's CPU time so far.
fn thread_cpu() -> Option<Duration> {
    use nix::time::{clock_gettime, ClockId};
    let ts = clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID).ok()?;
    Some(Duration::new(
        u64::try_from(ts.tv_sec()).unwrap_or(0),
        u32::try_from(ts.tv_nsec()).unwrap_or(0),
    ))
}

/// Output not yet in the model, in stream order.
#[derive(Debug, Clone)]
pub(crate) enum Pending {
    /// Bytes starting at stream offset `.0`.
    Bytes(u64, bytes::Bytes),
    /// The PTY was resized at this point of the stream.
    Resize(Size),
}

/// The screen model and how far into the stream it has parsed.
pub(crate) struct Model {
    pub screen: Screen,
    /// Stream offset the model has parsed up to.
    pub parsed: u64,
    /// Backlog items applied (see the module docs).
    applied: u64,
    /// The parse's speed, from timed batches.
    rate: parse::ParseRate,
}

/// Holds every parse back while alive ([`Session::pause_parse`], tests).
#[doc(hidden)]
pub struct ParsePause<'a>(#[allow(dead_code)] MutexGuard<'a, Model>);

/// A batch of backlog items to parse: the number of the first, the items.
struct Batch(u64, Vec<Pending>);

/// What a turn of the parser thread did ([`Session::parse_step`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ParseStep {
    /// Parsed a batch, taken when the backlog held `backlog` bytes.
    Parsed { backlog: usize },
    /// Nothing left to parse (the wait for work, if any, ran out).
    CaughtUp,
    /// The output ended and all of it is parsed, or the holder stops.
    Done,
}

/// A backlog at least this large when the parser takes a batch means the
/// session floods (a screen's redraw is tens of KiB; the parser parses
/// what came once the stream pauses for [`DEFER_QUIET`], so a backlog this
/// large piled up without a pause): its scheduling group is weighed down
/// until the parser has caught up (`pty_io::spawn_parser`,
/// [`ccd_sched::FloodGroup`]).
pub(crate) const FLOOD_BACKLOG: usize = 1 << 20;

/// The process probe, made once (it reads the machine id).
fn probe() -> &'static dyn ccd_claude::liveness::ProcessProbe {
    static PROBE: std::sync::OnceLock<Box<dyn ccd_claude::liveness::ProcessProbe + Send + Sync>> =
        std::sync::OnceLock::new();
    PROBE
        .get_or_init(ccd_claude::liveness::system_probe)
        .as_ref()
}

/// Unix milliseconds now.
pub fn unix_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// What the lifecycle driver records.
#[derive(Debug)]
pub(crate) struct LifeRecord {
    pub state: State,
    pub failure: Option<String>,
    pub attention: Option<Attention>,
    /// The permission dialog the screen showed when last classified.
    pub permission: Option<PermissionInfo>,
    /// When `permission`'s prompt first showed (its pointer moving does not
    /// make it another prompt): how long it has been on the screen, for a
    /// walk's settle time.
    pub permission_since: Option<Instant>,
    /// The conversation the child writes: the id its registry entry named
    /// when last read (the expected one until the entry exists).
    pub session_id: Option<String>,
    /// When `session_id` was last confirmed by the entry (unix ms).
    pub session_seen_at: i64,
    /// Ids the child wrote before `session_id`, oldest first (at most
    /// [`EARLIER_IDS_KEPT`]).
    pub earlier_ids: VecDeque<EarlierId>,
    pub transitions: VecDeque<Transition>,
    /// What the welcome banner said (read once, while it shows).
    pub banner: Option<ccd_screen::classify::banner::Banner>,
    /// The permission mode the footer showed last (kept while it shows
    /// none).
    pub permission_mode: Option<ccd_screen::PermissionMode>,
}

pub(crate) struct Inner {
    /// Stream offset of the next byte read from the PTY.
    pub seq: u64,
    /// Pushed to clients, not yet removed by the parser (see the module docs).
    backlog: VecDeque<Pending>,
    /// The number of `backlog[0]` (items ever removed).
    backlog_front: u64,
    /// Bytes in `backlog`.
    backlog_bytes: usize,
    /// The reader waits for room in the backlog.
    reader_waits: bool,
    /// The parser thread waits for work, or (`parser_defers`) for the
    /// stream to pause.
    parser_waits: bool,
    parser_defers: bool,
    /// The reader met the backlog's cap since the backlog was last below
    /// half of it: the parser parses beside the stream until it is (and
    /// the pacing is logged once per such run, not per chunk paced).
    paced: bool,
    /// When the reader last pushed a chunk.
    last_chunk: Instant,
    /// Someone waits for new output ([`Session::wait_output`]): the reader
    /// signals `changed` at the next chunk (parse progress signals nobody).
    output_watch: bool,
    /// Redraws waiting for the model to catch up: the reader keeps the
    /// backlog within their seed cap meanwhile.
    redraws_waiting: usize,
    pub fanout: Fanout,
    pub master: Box<dyn MasterPty + Send>,
    pub size: Size,
    /// waitid saw the child exit (not yet reaped): no more signals.
    pub child_gone: bool,
    pub exit: Option<ExitInfo>,
    pub output_eof: bool,
    pub life: LifeRecord,
    pub collected: bool,
}

/// Facts fixed at spawn.
#[derive(Debug, Clone)]
pub struct Fixed {
    /// Child pid.
    pub pid: u32,
    /// Normalized cwd.
    pub cwd: PathBuf,
    /// Program and args.
    pub argv: Vec<String>,
    /// Unix ms.
    pub started_at: i64,
    /// `<config>/sessions/<pid>.json`.
    pub registry_path: PathBuf,
    /// `<config>/projects` (to tell a `/clear` from an in-TUI resume).
    pub projects_dir: PathBuf,
    /// The session id the launcher expects (`--session-id`, `--resume`):
    /// reported and used to label output until the registry says otherwise.
    pub expected_session_id: Option<String>,
}

/// One session, shared by the holder's threads.
pub struct Session {
    inner: Mutex<Inner>,
    model: Mutex<Model>,
    changed: Condvar,
    /// With the session lock: room in the backlog (the reader waits).
    room: Condvar,
    /// With the session lock: work for the parser thread.
    work: Condvar,
    /// `Model::applied` and `Model::parsed`, readable without the model lock
    /// (a lower bound: they only grow).
    applied: AtomicU64,
    parsed: AtomicU64,
    /// The backlog's cap now (from the parse speed, see [`CATCH_UP_GOAL`]).
    backlog_limit: AtomicUsize,
    input: Arc<crate::pty_io::PtyInput>,
    stop: StopSignal,
    /// Fixed facts.
    pub fixed: Fixed,
    queue_cap: usize,
    /// The most the backlog may hold ([`BACKLOG_CAP`] unless configured).
    backlog_max: usize,
    /// The most a redraw seeds into a client queue.
    seed_cap: usize,
    /// Connections served so far (`holder.info`'s `connections`).
    connections: AtomicU64,
    /// This holder's typing mark and its view of the others': typing here
    /// is noted (`holder.input`) and set by the lifecycle step; the parser,
    /// while the session floods, weighs its group down only if another
    /// session was typed into ([`crate::sched::typing`]).
    pub(crate) typing: crate::sched::Typing,
    /// The input gate: see [`Session::hold_input`].
    gate: InputGate,
    /// Unix ms of the last input written to the PTY (any writer), 0 before
    /// the first (`holder.info`'s `last_input_at`).
    last_input_ms: std::sync::atomic::AtomicI64,
}

/// While a walk types (`holder.respond`, `holder.submit`), nobody else's
/// input reaches the PTY: an arrow a person presses in an attached
/// terminal between the walk's look and its Enter would move the pointer
/// under it, so that Enter takes another option than the one the walk saw
/// (and reports). Other writers wait on `open` (their own connection's
/// thread: at most one walk's length, [`crate::walk`] bounds it) and then
/// type in their order; nothing is queued, dropped or reordered.
///
/// Locks: `walks` serializes walks (one types at a time); `walking` is
/// held by a writer across its check and its push to the writer thread, so
/// a walk cannot start between them. Order: `walks`, then `walking`, then
/// the session lock. Neither is held across a look or a wait on output.
#[derive(Default)]
struct InputGate {
    walks: Mutex<()>,
    walking: Mutex<bool>,
    open: Condvar,
}

/// Held while a walk types: other input waits ([`Session::hold_input`]).
pub(crate) struct InputHeld<'a> {
    session: &'a Session,
    _one_walk: MutexGuard<'a, ()>,
}

impl Drop for InputHeld<'_> {
    fn drop(&mut self) {
        let gate = &self.session.gate;
        *gate.walking.lock().unwrap_or_else(|p| p.into_inner()) = false;
        gate.open.notify_all();
    }
}

/// Why an operation on the session was refused.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The child has exited.
    #[error("the child has exited")]
    Exited,
    /// Resizing the PTY failed.
    #[error("resize failed: {0}")]
    Resize(String),
    /// Sending a signal failed.
    #[error("kill failed: {0}")]
    Signal(#[from] std::io::Error),
}

impl Session {
    pub(crate) fn new(
        screen: Screen,
        master: Box<dyn MasterPty + Send>,
        size: Size,
        input: Arc<crate::pty_io::PtyInput>,
        fixed: Fixed,
        queue_cap: usize,
        backlog_max: usize,
    ) -> Self {
        let backlog_max = backlog_max.max(1);
        Self {
            inner: Mutex::new(Inner {
                seq: 0,
                backlog: VecDeque::new(),
                backlog_front: 0,
                backlog_bytes: 0,
                reader_waits: false,
                parser_waits: false,
                parser_defers: false,
                paced: false,
                last_chunk: Instant::now(),
                output_watch: false,
                redraws_waiting: 0,
                fanout: Fanout::default(),
                master,
                size,
                child_gone: false,
                exit: None,
                output_eof: false,
                life: LifeRecord {
                    state: State::Starting,
                    failure: None,
                    attention: None,
                    permission: None,
                    permission_since: None,
                    session_id: fixed.expected_session_id.clone(),
                    session_seen_at: 0,
                    earlier_ids: VecDeque::new(),
                    transitions: VecDeque::new(),
                    banner: None,
                    permission_mode: None,
                },
                collected: false,
            }),
            model: Mutex::new(Model {
                screen,
                parsed: 0,
                applied: 0,
                rate: parse::ParseRate::default(),
            }),
            changed: Condvar::new(),
            room: Condvar::new(),
            work: Condvar::new(),
            applied: AtomicU64::new(0),
            parsed: AtomicU64::new(0),
            backlog_limit: AtomicUsize::new(BACKLOG_MIN.min(backlog_max)),
            input,
            gate: InputGate::default(),
            last_input_ms: std::sync::atomic::AtomicI64::new(0),
            stop: StopSignal::new(),
            fixed,
            queue_cap,
            backlog_max,
            seed_cap: SEED_CAP.min(queue_cap / 2).max(1),
            connections: AtomicU64::new(0),
            typing: crate::sched::Typing::disabled(),
        }
    }

    /// The session with the typing marks of the holder whose socket they
    /// sit beside ([`crate::sched::Typing::for_socket`]).
    pub(crate) fn with_typing(mut self, typing: crate::sched::Typing) -> Self {
        self.typing = typing;
        self
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The model lock (after the session lock, if both are held).
    pub(crate) fn model(&self) -> MutexGuard<'_, Model> {
        self.model.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wake everyone waiting on a change (exit, EOF, collect).
    pub(crate) fn notify(&self) {
        self.changed.notify_all();
    }

    /// Ask every thread to stop.
    pub fn request_stop(&self) {
        self.stop.raise();
        // Threads check the flag under the session lock before they wait:
        // taking it here puts this wakeup after any such check, so none is
        // lost (their waits have long safety timeouts only).
        drop(self.lock());
        self.notify();
        self.room.notify_all();
        self.work.notify_all();
    }

    /// True once the holder is shutting down.
    pub fn stopping(&self) -> bool {
        self.stop.is_raised()
    }

    /// Readable once a stop is requested (for the accept loop's poll).
    pub(crate) fn stop_fd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        self.stop.fd()
    }

    /// The PTY reader: wait for room at the interactive clients that keep
    /// reading (outside the lock, [`crate::fanout`]) and in the backlog, then
    /// advance the stream and hand the chunk to the clients and the parser.
    pub(crate) fn on_output(&self, chunk: bytes::Bytes) {
        let bytes = &chunk[..];
        let interactive = self.lock().fanout.interactive();
        for q in &interactive {
            q.wait_room(bytes.len(), crate::fanout::CLIENT_STALL);
        }
        drop(interactive);
        let mut g = self.lock();
        loop {
            let cap = if g.redraws_waiting > 0 {
                self.seed_cap
            } else {
                self.backlog_limit.load(Ordering::Relaxed)
            };
            if g.backlog_bytes == 0 || g.backlog_bytes + bytes.len() <= cap || self.stopping() {
                break;
            }
            g.reader_waits = true;
            if !std::mem::replace(&mut g.paced, true) {
                tracing::debug!(
                    backlog = g.backlog_bytes,
                    cap,
                    "output outran the parse: the backlog paces the PTY"
                );
            }
            if std::mem::take(&mut g.parser_waits) {
                self.work.notify_one();
            }
            g = self
                .room
                .wait_timeout(g, Duration::from_millis(100))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        g.reader_waits = false;
        let seq = g.seq;
        g.seq += bytes.len() as u64;
        let direct = g.fanout.push_shared(seq, &chunk);
        let label = (!direct.is_empty()).then(|| Self::stream_label(&g));
        g.backlog.push_back(Pending::Bytes(seq, chunk.clone()));
        g.backlog_bytes += bytes.len();
        g.last_chunk = Instant::now();
        // A small chunk alone in the backlog while the parser idles (an
        // echo, a spinner frame) is parsed here, after the clients have it,
        // if the model is free: microseconds, and no parser wakeup per
        // keystroke.
        let inline = (g.parser_waits
            && !g.parser_defers
            && g.backlog_bytes == bytes.len()
            && bytes.len() <= INLINE_PARSE_MAX)
            .then(|| self.take_batch(&g))
            .flatten();
        // A deferring parser is left to the stream's pause, or to the
        // backlog's cap (the wait above wakes it).
        let wake = inline.is_none() && g.parser_waits && !g.parser_defers;
        if wake {
            g.parser_waits = false;
        }
        let watched = std::mem::take(&mut g.output_watch);
        drop(g);
        // Idle clients get a small chunk from here, not from their pump
        // (crate::fanout: one thread hand-off less per echo).
        if let Some(label) = label {
            let out = crate::line_socket::OutputLine::new(&label, seq, &chunk);
            for q in &direct {
                q.deliver_direct(&out, seq, &chunk);
            }
        }
        if wake {
            self.work.notify_one();
        }
        if let Some(batch) = inline {
            // Never waits for the model: busy (a redraw, a screen read, a
            // classification), the parser thread takes it.
            match self.model.try_lock() {
                Ok(m) => self.apply_with(m, batch),
                Err(std::sync::TryLockError::Poisoned(p)) => self.apply_with(p.into_inner(), batch),
                Err(std::sync::TryLockError::WouldBlock) => self.work.notify_one(),
            }
        }
        if watched {
            self.notify();
        }
    }

    fn stream_label(g: &Inner) -> String {
        g.life.session_id.clone().unwrap_or_default()
    }

    /// A redraw of the model at its parsed position, with `q` (emptied by
    /// the caller) seeded with the backlog from there: under both locks.
    fn resync_locked(g: &Inner, m: &Model, q: &ClientQueue, reason: ResyncReason) -> Resync {
        for p in &g.backlog {
            if let Pending::Bytes(seq, c) = p {
                if *seq >= m.parsed {
                    q.seed(*seq, c);
                }
            }
        }
        let (rows, cols) = m.screen.size();
        Resync {
            session: Self::stream_label(g),
            seq: m.parsed,
            size: TermSize { cols, rows },
            reason,
            data: m.screen.redraw(),
        }
    }

    /// Register a client; returns its queue and the initial redraw, taken
    /// atomically with the registration.
    pub fn attach(&self, mode: AttachMode) -> (Arc<ClientQueue>, Resync) {
        let (mut g, m) = self.caught_up_for_redraw();
        let q = g.fanout.add(mode, self.queue_cap);
        let r = Self::resync_locked(&g, &m, &q, ResyncReason::Attach);
        tracing::info!(client = q.id(), mode = ?mode, seq = r.seq, "client attached");
        (q, r)
    }

    /// A full redraw for a client whose queue overflowed; its queue restarts
    /// at the redraw's position.
    pub fn resync(&self, q: &ClientQueue) -> Resync {
        let (g, m) = self.caught_up_for_redraw();
        q.reset_after_resync(true);
        let r = Self::resync_locked(&g, &m, q, ResyncReason::Overflow);
        tracing::debug!(client = q.id(), seq = r.seq, "client resynced");
        r
    }

    /// Bytes of output waiting for the model now (at most the backlog's
    /// cap, or one PTY read when it was empty).
    pub fn backlog_bytes(&self) -> usize {
        self.lock().backlog_bytes
    }

    /// Tests: stop every parse (the parser thread's and on demand) until the
    /// returned guard is dropped, so the model falls behind for sure.
    #[doc(hidden)]
    pub fn pause_parse(&self) -> ParsePause<'_> {
        ParsePause(self.model())
    }

    /// The label output chunks carry.
    pub fn label(&self) -> String {
        Self::stream_label(&self.lock())
    }

    /// Input for the PTY ([`crate::pty_io::PtyInput`]) from a client or a
    /// person. Waits while a walk types ([`Session::hold_input`]); blocks
    /// while the writer's queue is full (the child is not reading), never
    /// while holding the session lock.
    pub fn send_input(&self, bytes: Vec<u8>) -> Result<(), SessionError> {
        if self.lock().exit.is_some() {
            return Err(SessionError::Exited);
        }
        let mut walking = self.gate.walking.lock().unwrap_or_else(|p| p.into_inner());
        while *walking {
            walking = self
                .gate
                .open
                .wait_timeout(walking, IDLE_SAFETY)
                .unwrap_or_else(|p| p.into_inner())
                .0;
            if self.lock().exit.is_some() {
                return Err(SessionError::Exited);
            }
        }
        // Still under `walking`: no walk starts before this is queued.
        self.push_input(bytes)
    }

    /// Input a walk (or the lifecycle driver walking the trust dialog)
    /// types: not held by the gate.
    pub(crate) fn send_walk_input(&self, bytes: Vec<u8>) -> Result<(), SessionError> {
        if self.lock().exit.is_some() {
            return Err(SessionError::Exited);
        }
        self.push_input(bytes)
    }

    fn push_input(&self, bytes: Vec<u8>) -> Result<(), SessionError> {
        self.input.send(bytes).map_err(|()| SessionError::Exited)?;
        self.last_input_ms.store(unix_ms(), Ordering::Release);
        Ok(())
    }

    /// Holds every other writer's input ([`Session::send_input`]) until the
    /// guard is dropped; waits for a walk already typing. See [`InputGate`].
    pub(crate) fn hold_input(&self) -> InputHeld<'_> {
        let one_walk = self.gate.walks.lock().unwrap_or_else(|p| p.into_inner());
        *self.gate.walking.lock().unwrap_or_else(|p| p.into_inner()) = true;
        InputHeld {
            session: self,
            _one_walk: one_walk,
        }
    }

    /// Unix ms of the last input written to the PTY; `None` before any.
    pub fn last_input_at(&self) -> Option<i64> {
        Some(self.last_input_ms.load(Ordering::Acquire)).filter(|&ms| ms > 0)
    }

    /// The PTY's current size.
    pub fn size(&self) -> Size {
        self.lock().size
    }

    /// Resize PTY and model together.
    /// The size is clamped to the protocol's bounds (callers refuse an
    /// out-of-range size first; this keeps the model bounded regardless).
    pub fn resize(&self, size: Size) -> Result<(), SessionError> {
        let size = size.clamped();
        let mut g = self.lock();
        crate::spawn::resize(g.master.as_ref(), size)
            .map_err(|e| SessionError::Resize(format!("{e:#}")))?;
        if self.applied.load(Ordering::Acquire) >= g.backlog_front + g.backlog.len() as u64 {
            // Everything read so far is parsed: resize the model now.
            self.model().screen.resize(size.rows, size.cols);
        } else {
            g.backlog.push_back(Pending::Resize(size));
            if std::mem::take(&mut g.parser_waits) {
                self.work.notify_one();
            }
        }
        g.size = size;
        tracing::info!(rows = size.rows, cols = size.cols, "resized");
        Ok(())
    }

    /// Send a signal unless the child is already gone. Ok(false): gone.
    pub fn signal(&self, sig: i32) -> Result<bool, SessionError> {
        let g = self.lock();
        if g.child_gone {
            return Ok(false);
        }
        exit::send_signal(self.fixed.pid, sig)?;
        tracing::info!(pid = self.fixed.pid, signal = sig, "signal sent");
        drop(g);
        Ok(true)
    }

    /// SIGTERM/SIGHUP now, SIGKILL after `grace` if the child still runs.
    pub fn kill_with_grace(
        self: &Arc<Self>,
        sig: i32,
        grace: Option<Duration>,
    ) -> Result<bool, SessionError> {
        // The id it ends on is the one its entry names now (a `/clear` just
        // before the kill is not lost with the entry).
        self.follow_registry();
        let sent = self.signal(sig)?;
        if let (true, Some(grace)) = (sent, grace) {
            let me = Arc::clone(self);
            std::thread::Builder::new()
                .name("holder-kill-grace".into())
                .spawn(move || {
                    let (g, gone) = me.wait_for(grace, |g| g.child_gone);
                    drop(g);
                    if !gone && !me.stopping() {
                        if let Err(e) = me.signal(libc::SIGKILL) {
                            tracing::warn!(error = %e, "SIGKILL after grace failed");
                        }
                    }
                })
                .map_err(SessionError::Signal)?;
        }
        Ok(sent)
    }

    /// A connection is served (counted for `holder.info`).
    pub(crate) fn count_connection(&self) {
        self.connections.fetch_add(1, Ordering::Relaxed);
    }

    /// Text of the visible screen.
    pub fn screen_text(&self) -> String {
        self.model().screen.contents()
    }

    /// `holder.screen`: the screen once everything read so far is parsed
    /// (on demand: the backlog is bounded in bytes and in parse time).
    pub fn screen(&self, format: ScreenFormat) -> ScreenResult {
        self.catch_up();
        let m = self.model();
        let s = &m.screen;
        let (row, col) = s.cursor_position();
        let (rows, cols) = s.size();
        let modes = s.modes();
        ScreenResult {
            rows: s.rows_text(),
            text: s.contents(),
            ansi: match format {
                ScreenFormat::Text => None,
                ScreenFormat::Ansi => Some(String::from_utf8_lossy(&s.redraw()).into_owned()),
            },
            cursor: Cursor {
                row,
                col,
                visible: !modes.hide_cursor,
            },
            size: Size { rows, cols },
            modes,
            title: s.title().to_owned(),
            verdict: classify_screen(s),
        }
    }
}
