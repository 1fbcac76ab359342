//! The session's shared state: screen model, stream position, fan-out, PTY
//! master, exit status and lifecycle record, behind one mutex.
//!
//! Lock order: the session lock, then a client queue's lock (both the PTY
//! reader and a resync take them in that order). Nobody does I/O on a client
//! socket while holding either. PTY input goes through the single writer
//! thread ([`crate::pty_io`]), never under the lock.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
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
use crate::rpc::types::{
    Attention, Cursor, InfoResult, RegistryStatus, ScreenFormat, ScreenResult, Transition,
};

/// Transitions kept for `holder.info`.
const TRANSITIONS_KEPT: usize = 10;

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
    pub session_id: Option<String>,
    pub transitions: VecDeque<Transition>,
}

pub(crate) struct Inner {
    pub screen: Screen,
    pub seq: u64,
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
    /// The session id the launcher expects (`--session-id`, `--resume`):
    /// reported and used to label output until the registry says otherwise.
    pub expected_session_id: Option<String>,
}

/// One session, shared by the holder's threads.
pub struct Session {
    inner: Mutex<Inner>,
    changed: Condvar,
    input: SyncSender<Vec<u8>>,
    stop: AtomicBool,
    /// Fixed facts.
    pub fixed: Fixed,
    queue_cap: usize,
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
                screen,
                seq: 0,
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
                    session_id: fixed.expected_session_id.clone(),
                    transitions: VecDeque::new(),
                },
                collected: false,
            }),
            changed: Condvar::new(),
            input,
            stop: AtomicBool::new(false),
            fixed,
            queue_cap,
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wake everyone waiting on a change (exit, EOF, collect).
    pub(crate) fn notify(&self) {
        self.changed.notify_all();
    }

    /// Ask every thread to stop.
    pub fn request_stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        self.notify();
    }

    /// True once the holder is shutting down.
    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// The PTY reader: wait for room at the interactive clients that keep
    /// reading (outside the lock, [`crate::fanout`]), then feed the model,
    /// advance the stream, fan out.
    pub(crate) fn on_output(&self, bytes: &[u8]) {
        let interactive = self.lock().fanout.interactive();
        for q in &interactive {
            q.wait_room(bytes.len(), crate::fanout::CLIENT_STALL);
        }
        drop(interactive);
        let mut g = self.lock();
        g.screen.process(bytes);
        let seq = g.seq;
        g.seq += bytes.len() as u64;
        g.fanout.push(seq, bytes);
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

    fn resync_locked(g: &Inner, reason: ResyncReason) -> Resync {
        Resync {
            session: Self::stream_label(g),
            seq: g.seq,
            size: TermSize {
                cols: g.size.cols,
                rows: g.size.rows,
            },
            reason,
            data: g.screen.redraw(),
        }
    }

    /// Register a client; returns its queue and the initial redraw, taken
    /// atomically with the registration.
    pub fn attach(&self, mode: AttachMode) -> (Arc<ClientQueue>, Resync) {
        let mut g = self.lock();
        let q = g.fanout.add(mode, self.queue_cap);
        let r = Self::resync_locked(&g, ResyncReason::Attach);
        tracing::info!(client = q.id(), mode = ?mode, seq = r.seq, "client attached");
        (q, r)
    }

    /// A full redraw for a client whose queue overflowed; its queue restarts
    /// at the redraw's position.
    pub fn resync(&self, q: &ClientQueue) -> Resync {
        let g = self.lock();
        q.reset_after_resync(true);
        let r = Self::resync_locked(&g, ResyncReason::Overflow);
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

    /// Resize PTY and model together.
    pub fn resize(&self, size: Size) -> Result<(), SessionError> {
        let size = Size {
            rows: size.rows.max(1),
            cols: size.cols.max(1),
        };
        let mut g = self.lock();
        crate::spawn::resize(g.master.as_ref(), size)
            .map_err(|e| SessionError::Resize(format!("{e:#}")))?;
        g.screen.resize(size.rows, size.cols);
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
        self.lock().screen.contents()
    }

    /// `holder.screen`.
    pub fn screen(&self, format: ScreenFormat) -> ScreenResult {
        let g = self.lock();
        let s = &g.screen;
        let (row, col) = s.cursor_position();
        ScreenResult {
            rows: s.rows_text(),
            text: s.contents(),
            ansi: match format {
                ScreenFormat::Text => None,
                ScreenFormat::Ansi => Some(s.vt().contents_formatted()),
            },
            cursor: Cursor { row, col },
            size: g.size,
            modes: s.modes(),
            title: s.title().to_owned(),
            verdict: classify_screen(s),
        }
    }

    /// `holder.info`.
    pub fn info(&self) -> InfoResult {
        let status = self.registry_status();
        let mut g = self.lock();
        let clients = g.fanout.stats();
        InfoResult {
            holder_pid: std::process::id(),
            child_pid: self.fixed.pid,
            session_id: g.life.session_id.clone(),
            cwd: self.fixed.cwd.to_string_lossy().into_owned(),
            argv: self.fixed.argv.clone(),
            state: g.life.state,
            failure: g.life.failure.clone(),
            needs_attention: g.life.attention.clone(),
            status,
            exit: g.exit.clone(),
            started_at: self.fixed.started_at,
            size: g.size,
            clients,
            transitions: g.life.transitions.iter().cloned().collect(),
            output_bytes: g.seq,
        }
    }

    /// Status from the registry entry, read now (no liveness: the child is ours).
    pub fn registry_status(&self) -> Option<RegistryStatus> {
        let e = ccd_claude::registry::read_entry(&self.fixed.registry_path).ok()?;
        Some(RegistryStatus {
            status: e.status,
            waiting_for: e.waiting_for,
            session_id: e.session_id,
        })
    }

    /// Record a lifecycle transition with the screen at that moment.
    pub(crate) fn record_transition(&self, state: &str, detail: Option<String>) {
        let mut g = self.lock();
        let screen = g.screen.contents();
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
            let mut g = self.lock();
            g.life.attention = reason.map(|reason| Attention {
                reason,
                screen: g.screen.contents(),
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

    /// The session id learned from the registry.
    pub(crate) fn set_session_id(&self, sid: String) {
        self.lock().life.session_id = Some(sid);
    }
}
