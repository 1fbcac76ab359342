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
//! feeds backlog chunks to the model under the model lock alone, so clients
//! get output while the model catches up, and the reader reads on while the
//! model parses. A chunk leaves the backlog only after it was parsed, so
//! under both locks `backlog` holds exactly the stream from `Model::parsed`
//! (past a parsed-but-not-yet-removed front) to `Inner::seq`. A redraw for
//! a client (attach, resync) is taken under both locks: the model at
//! `parsed`, followed in the client's queue by the backlog from there — the
//! stream lines up exactly. The backlog is bounded ([`BACKLOG_CAP`], and
//! half a client queue): when full, the reader waits for the parser, which
//! then paces the PTY. A resize reaches the model in stream order (queued in
//! the backlog unless it is empty).
//!
//! Lock order: the session lock, then the model lock, then a client queue's
//! lock. The parser never holds the session and model locks together.
//! Nobody does I/O on a client socket while holding any of them. PTY input
//! goes through the single writer thread ([`crate::pty_io`]), never under a
//! lock.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::mpsc::SyncSender;
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

/// Transitions kept for `holder.info`.
const TRANSITIONS_KEPT: usize = 10;

/// Earlier conversation ids kept for `holder.info` (a process that was
/// `/clear`ed more often than this forgets the oldest; their transcripts
/// are still listed, as dead sessions without a successor named).
pub const EARLIER_IDS_KEPT: usize = 32;

/// Most bytes of output waiting for the model before the reader waits.
pub const BACKLOG_CAP: usize = 4 << 20;

/// Longest idle wait of a thread that new work, the output's end and a
/// stop all wake anyway (a safety net, not a poll).
pub(crate) const IDLE_SAFETY: Duration = Duration::from_secs(30);

/// Most bytes the parser takes from the backlog per model-lock hold (a
/// redraw or a screen request waits at most for this much parsing).
const PARSE_BATCH: usize = 256 << 10;

/// Output not yet in the model, in stream order.
#[derive(Debug)]
pub(crate) enum Pending {
    /// Bytes starting at stream offset `.0`.
    Bytes(u64, Arc<[u8]>),
    /// The PTY was resized at this point of the stream.
    Resize(Size),
}

/// The screen model and how far into the stream it has parsed.
pub(crate) struct Model {
    pub screen: Screen,
    pub parsed: u64,
}

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
}

pub(crate) struct Inner {
    /// Stream offset of the next byte read from the PTY.
    pub seq: u64,
    /// Pushed to clients, not yet removed by the parser (see the module docs).
    pub backlog: VecDeque<Pending>,
    /// Bytes in `backlog`.
    pub backlog_bytes: usize,
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
    /// With the session lock: the backlog changed (work for the parser,
    /// room for the reader).
    backlog_changed: Condvar,
    input: SyncSender<Vec<u8>>,
    stop: StopSignal,
    /// Fixed facts.
    pub fixed: Fixed,
    queue_cap: usize,
    backlog_cap: usize,
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
        input: SyncSender<Vec<u8>>,
        fixed: Fixed,
        queue_cap: usize,
    ) -> Self {
        Self {
            inner: Mutex::new(Inner {
                seq: 0,
                backlog: VecDeque::new(),
                backlog_bytes: 0,
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
                    session_id: fixed.expected_session_id.clone(),
                    session_seen_at: 0,
                    earlier_ids: VecDeque::new(),
                    transitions: VecDeque::new(),
                    banner: None,
                },
                collected: false,
            }),
            model: Mutex::new(Model { screen, parsed: 0 }),
            changed: Condvar::new(),
            backlog_changed: Condvar::new(),
            input,
            stop: StopSignal::new(),
            fixed,
            queue_cap,
            backlog_cap: BACKLOG_CAP.min(queue_cap / 2).max(1),
        }
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
        self.backlog_changed.notify_all();
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
    pub(crate) fn on_output(&self, bytes: &[u8]) {
        let interactive = self.lock().fanout.interactive();
        for q in &interactive {
            q.wait_room(bytes.len(), crate::fanout::CLIENT_STALL);
        }
        drop(interactive);
        let mut g = self.lock();
        while g.backlog_bytes > 0
            && g.backlog_bytes + bytes.len() > self.backlog_cap
            && !self.stopping()
        {
            g = self
                .backlog_changed
                .wait_timeout(g, Duration::from_millis(100))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        let chunk: Arc<[u8]> = Arc::from(bytes);
        let seq = g.seq;
        g.seq += bytes.len() as u64;
        g.fanout.push_shared(seq, &chunk);
        g.backlog.push_back(Pending::Bytes(seq, chunk));
        g.backlog_bytes += bytes.len();
        drop(g);
        self.backlog_changed.notify_all();
    }

    /// Wake the parser (the output ended).
    pub(crate) fn wake_parser(&self) {
        self.backlog_changed.notify_all();
    }

    /// The parser thread's step: parse what the backlog holds (up to
    /// [`PARSE_BATCH`]) into the model, then remove it from the backlog.
    /// Waits for work; false once the output ended and all of it is parsed,
    /// or the holder stops.
    pub(crate) fn parse_step(&self) -> bool {
        let batch: Vec<Pending> = {
            let mut g = self.lock();
            while g.backlog.is_empty() {
                if g.output_eof || self.stopping() {
                    return false;
                }
                g = self
                    .backlog_changed
                    .wait_timeout(g, IDLE_SAFETY)
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
            }
            let mut bytes = 0;
            g.backlog
                .iter()
                .take_while(|p| {
                    let first = bytes == 0;
                    if let Pending::Bytes(_, c) = p {
                        bytes += c.len();
                    }
                    first || bytes <= PARSE_BATCH
                })
                .map(|p| match p {
                    Pending::Bytes(seq, c) => Pending::Bytes(*seq, Arc::clone(c)),
                    Pending::Resize(s) => Pending::Resize(*s),
                })
                .collect()
        };
        {
            let mut m = self.model();
            for p in &batch {
                match p {
                    Pending::Bytes(seq, c) => {
                        m.screen.process(c);
                        m.parsed = seq + c.len() as u64;
                    }
                    Pending::Resize(size) => m.screen.resize(size.rows, size.cols),
                }
            }
        }
        {
            let mut g = self.lock();
            for _ in 0..batch.len() {
                if let Some(Pending::Bytes(_, c)) = g.backlog.pop_front() {
                    g.backlog_bytes -= c.len();
                }
            }
        }
        self.backlog_changed.notify_all();
        self.notify();
        true
    }

    /// Wait until `pred` holds on the state, or `timeout`. Returns the final
    /// guard and whether `pred` held.
    pub(crate) fn wait_for<'a>(
        &'a self,
        timeout: Duration,
        mut pred: impl FnMut(&Inner) -> bool,
    ) -> (MutexGuard<'a, Inner>, bool) {
        let deadline = Instant::now() + timeout;
        let mut g = self.lock();
        loop {
            if pred(&g) {
                return (g, true);
            }
            let now = Instant::now();
            if now >= deadline || self.stopping() {
                return (g, false);
            }
            let (ng, _) = self
                .changed
                .wait_timeout(g, deadline - now)
                .unwrap_or_else(|p| p.into_inner());
            g = ng;
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
        let mut g = self.lock();
        let q = g.fanout.add(mode, self.queue_cap);
        let m = self.model();
        let r = Self::resync_locked(&g, &m, &q, ResyncReason::Attach);
        tracing::info!(client = q.id(), mode = ?mode, seq = r.seq, "client attached");
        (q, r)
    }

    /// A full redraw for a client whose queue overflowed; its queue restarts
    /// at the redraw's position.
    pub fn resync(&self, q: &ClientQueue) -> Resync {
        let g = self.lock();
        let m = self.model();
        q.reset_after_resync(true);
        let r = Self::resync_locked(&g, &m, q, ResyncReason::Overflow);
        tracing::debug!(client = q.id(), seq = r.seq, "client resynced");
        r
    }

    /// The label output chunks carry.
    pub fn label(&self) -> String {
        Self::stream_label(&self.lock())
    }

    /// Queue input for the PTY writer. Blocks while the writer's queue is
    /// full (the child is not reading), never while holding the lock.
    pub fn send_input(&self, bytes: Vec<u8>) -> Result<(), SessionError> {
        if self.lock().exit.is_some() {
            return Err(SessionError::Exited);
        }
        self.input.send(bytes).map_err(|_| SessionError::Exited)
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
        if g.backlog.is_empty() {
            // Everything read so far is parsed: resize the model now.
            self.model().screen.resize(size.rows, size.cols);
        } else {
            g.backlog.push_back(Pending::Resize(size));
            self.backlog_changed.notify_all();
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

    /// Text of the visible screen.
    pub fn screen_text(&self) -> String {
        self.model().screen.contents()
    }

    /// Waits (at most `limit`) until the model has parsed everything read
    /// from the PTY before the call.
    fn wait_parsed(&self, limit: Duration) {
        let target = self.lock().seq;
        let (g, _) = self.wait_for(limit, |g| {
            g.backlog.iter().all(|p| match p {
                Pending::Bytes(seq, _) => *seq >= target,
                Pending::Resize(_) => false,
            })
        });
        drop(g);
    }

    /// `holder.screen`: the screen once everything read so far is parsed
    /// (a bounded backlog: milliseconds).
    pub fn screen(&self, format: ScreenFormat) -> ScreenResult {
        self.wait_parsed(Duration::from_millis(500));
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

    /// `holder.info`.
    pub fn info(&self) -> InfoResult {
        let status = self.follow_registry();
        let mut g = self.lock();
        let clients = g.fanout.stats();
        InfoResult {
            holder_pid: std::process::id(),
            child_pid: self.fixed.pid,
            session_id: g.life.session_id.clone(),
            earlier_ids: g.life.earlier_ids.iter().cloned().collect(),
            cwd: self.fixed.cwd.to_string_lossy().into_owned(),
            argv: self.fixed.argv.clone(),
            state: g.life.state,
            failure: g.life.failure.clone(),
            needs_attention: g.life.attention.clone(),
            permission: g.life.permission.clone(),
            model: g.life.banner.as_ref().and_then(|b| b.model.clone()),
            context_window: g.life.banner.as_ref().and_then(|b| b.context_window),
            status,
            exit: g.exit.clone(),
            started_at: self.fixed.started_at,
            size: g.size,
            clients,
            transitions: g.life.transitions.iter().cloned().collect(),
            output_bytes: g.seq,
        }
    }

    /// The child's registry entry read now, following the conversation it
    /// names: once the session is ready, an entry of the child's (its pid,
    /// its start time) naming another id than the recorded one means the
    /// child moved on (`/clear`, a conversation resumed inside the TUI) —
    /// the new id becomes the session's and the old one is kept among
    /// `earlier_ids`, with why. Before ready the lifecycle learns the id;
    /// an entry that is not the child's (a stale file of an earlier process
    /// with the same pid) changes nothing. Returns the entry's status.
    pub fn follow_registry(&self) -> Option<RegistryStatus> {
        let e = ccd_claude::registry::read_entry(&self.fixed.registry_path).ok()?;
        let status = RegistryStatus {
            status: e.status.clone(),
            waiting_for: e.waiting_for.clone(),
            session_id: e.session_id.clone(),
        };
        let (known, seen_at) = {
            let g = self.lock();
            if g.life.state != State::Ready || g.exit.is_some() {
                return Some(status);
            }
            (g.life.session_id.clone(), g.life.session_seen_at)
        };
        let now = unix_ms();
        let ours = e.pid == self.fixed.pid
            && ccd_claude::liveness::check(&e, probe())
                .liveness
                .may_be_running();
        if !ours {
            return Some(status);
        }
        if known.as_deref() == Some(e.session_id.as_str()) {
            self.lock().life.session_seen_at = now;
            return Some(status);
        }
        let Some(from) = known else {
            // Learned, not switched (a fork's id before the lifecycle saw it).
            let mut g = self.lock();
            g.life.session_id = Some(e.session_id.clone());
            g.life.session_seen_at = now;
            return Some(status);
        };
        // The new id's transcript decides the reason (file reads: no lock).
        let cwd = self.fixed.cwd.to_string_lossy();
        let reason = ccd_claude::id_switch::reason(
            &self.fixed.projects_dir,
            &e.session_id,
            Some(&cwd),
            if seen_at > 0 { seen_at } else { now },
            now,
        );
        let mut g = self.lock();
        if g.life.session_id.as_deref() != Some(from.as_str()) {
            // Another thread recorded this switch meanwhile.
            return Some(status);
        }
        tracing::info!(from = %from, to = %e.session_id, reason = reason.as_str(), "the child writes another conversation now");
        if g.life.earlier_ids.len() == EARLIER_IDS_KEPT {
            g.life.earlier_ids.pop_front();
        }
        g.life.earlier_ids.push_back(EarlierId {
            session_id: from,
            until: now,
            superseded_by: e.session_id.clone(),
            reason,
        });
        g.life.session_id = Some(e.session_id);
        g.life.session_seen_at = now;
        drop(g);
        self.notify();
        Some(status)
    }

    /// Record a lifecycle transition with the screen at that moment.
    pub(crate) fn record_transition(&self, state: &str, detail: Option<String>) {
        let screen = self.screen_text();
        let mut g = self.lock();
        let t = &mut g.life.transitions;
        if t.len() == TRANSITIONS_KEPT {
            t.pop_front();
        }
        // Also in the holder's log, so a detection that went wrong can be
        // diagnosed after the holder is gone.
        tracing::info!(state, detail = ?detail, screen = %screen.trim_end(), "lifecycle transition: screen at this moment");
        t.push_back(Transition {
            state: state.to_owned(),
            at: unix_ms(),
            detail,
            screen,
        });
    }

    /// Update the lifecycle state.
    pub(crate) fn set_state(&self, state: State, detail: Option<String>) {
        {
            let mut g = self.lock();
            g.life.state = state;
            if state == State::Failed {
                g.life.failure = detail.clone();
            }
        }
        self.record_transition(state.as_str(), detail);
        self.notify();
    }

    /// Update needs_attention.
    pub(crate) fn set_attention(&self, reason: Option<AttentionReason>) {
        let detail = reason.as_ref().map(|r| format!("{r:?}"));
        {
            let screen = self.screen_text();
            let mut g = self.lock();
            g.life.attention = reason.map(|reason| Attention {
                reason,
                screen,
                since: unix_ms(),
            });
        }
        let name = if detail.is_some() {
            "needs_attention"
        } else {
            "attention_cleared"
        };
        self.record_transition(name, detail);
    }

    /// Record the permission dialog the screen shows (None: none).
    pub(crate) fn set_permission(&self, p: Option<PermissionInfo>) {
        let mut g = self.lock();
        if g.life.permission != p {
            tracing::info!(permission = ?p, "permission dialog");
            g.life.permission = p;
            drop(g);
            self.notify();
        }
    }

    /// Whether the welcome banner has been read.
    pub(crate) fn has_banner(&self) -> bool {
        self.lock().life.banner.is_some()
    }

    /// Record what the welcome banner says (once).
    pub(crate) fn set_banner(&self, b: ccd_screen::classify::banner::Banner) {
        let mut g = self.lock();
        if g.life.banner.is_none() {
            tracing::info!(model = ?b.model, context_window = ?b.context_window, "welcome banner");
            g.life.banner = Some(b);
        }
    }

    /// The session id learned from the registry.
    pub(crate) fn set_session_id(&self, sid: String) {
        let mut g = self.lock();
        g.life.session_id = Some(sid);
        g.life.session_seen_at = unix_ms();
    }
}
