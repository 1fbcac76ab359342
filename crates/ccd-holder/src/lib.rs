//! ccd-holder: the per-session holder process ("the dtach idea").
//!
//! A holder owns one session's PTY master, the `claude` child and the screen
//! model, so the session outlives the daemon. It listens on its own Unix
//! socket and speaks ccd-protocol's JSON-RPC line framing with `holder.*`
//! methods (see the crate README). Std threads, no async runtime:
//!
//! | thread | owns | module |
//! |---|---|---|
//! | PTY reader | reads the master, fans out (a small chunk to an idle client's socket itself), queues for the parser | [`pty_io`], [`fanout`], [`line_socket`] |
//! | parser | feeds the output to the screen model beside the stream | [`pty_io`], [`session`] |
//! | PTY writer | PTY input (queued; keystrokes may go straight from a connection, in order) | [`pty_io`] |
//! | child waiter | waits, records the exit, reaps | [`pty_io`], [`exit`] |
//! | lifecycle | startup state machine, trust step | [`lifecycle`] |
//! | acceptor + one per connection (+ one pump per attached client) | the socket (who connected: [`peer`]); a connection's thread also walks a dialog it was asked to answer (`holder.respond`, `holder.submit`) | [`rpc`], [`walk`] |
//!
//! The writer and the connections ask for a short scheduler slice
//! ([`ccd_sched`]); the reader and the pumps too, except while their session
//! floods ([`ccd_sched::Adaptive`]: batch scheduling then); the parser always
//! runs batch, and weighs the holder's whole scheduling group down while it
//! parses a flood ([`ccd_sched::FloodGroup`]: the holder leads its own
//! session, so with autogroups its threads are a group of their own, and a
//! thread's policy or yield does not reach other sessions' threads).
//!
//! Stopping is ordered by one signal, not by timers: `holder.collect` is
//! the only request that ends a holder, and its connection raises the
//! stop ([`Session::request_stop`]) only after its reply's `write` has
//! returned. On a Unix stream socket a returned write has put the bytes in
//! the peer's receive queue (there is no send buffer of ours to flush),
//! so neither the sockets being shut nor the process exiting can lose
//! them. The accept loop wakes on the stop at once (a pipe beside the
//! listener) and shuts every connection's read side: a thread answering
//! a request (an input that made the child exit, racing the collect)
//! writes its reply, then reads the end. Once every connection ended
//! (at most [`rpc::server::STOP_GRACE`], for a client reading nothing,
//! whose connection is then shut both ways), [`run`] returns.
//!
//! Entry points: [`run`] (what the daemon's hidden subcommand calls),
//! [`Holder::spawn`] + [`Holder::serve`] (the same in two steps, for tests and
//! callers that want the spawn error before binding), and [`HolderClient`].

pub mod client;
pub mod config;
pub mod exit;
pub mod fanout;
pub mod focus;
pub mod keys;
pub mod lifecycle;
pub mod line_socket;
pub mod pty_io;
pub mod rpc;
pub mod session;
pub mod spawn;
mod stop;
pub mod terminal;
pub mod walk;

// The scheduling hints live in the leaf crate `ccd-sched` (the CLI and
// the daemon use them too); `crate::sched` names it inside this crate.
use ccd_sched as sched;

use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::mpsc::sync_channel;
use std::sync::Arc;

use anyhow::Context;
use ccd_screen::Screen;

pub use ccd_protocol::holder::{
    AttachResult, Attention, CollectResult, EarlierId, InfoResult, PermissionInfo, RegistryStatus,
    ScreenFormat, ScreenResult, Transition,
};
pub use client::{ClientError, HolderClient, StreamEvent};
pub use config::{HolderConfig, KillSignal, Size};
pub use exit::ExitInfo;
pub use fanout::{AttachMode, ClientStats};
pub use lifecycle::{AttentionReason, State};
pub use rpc::server::bind;

pub use session::Session;
pub use spawn::SpawnError;

/// PTY input chunks queued for the writer thread.
const INPUT_QUEUE: usize = 64;

/// How a holder ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The child's exit, if it was collected.
    pub exit: Option<ExitInfo>,
    /// Final lifecycle state.
    pub state: State,
}

/// A started session (child running, threads up), not yet serving.
pub struct Holder {
    session: Arc<Session>,
    socket_path: PathBuf,
    daemon_lock: Option<PathBuf>,
}

impl Holder {
    /// Spawn the child and start the PTY, waiter and lifecycle threads.
    pub fn spawn(config: &HolderConfig) -> Result<Holder, SpawnError> {
        let spawned = spawn::spawn(config)?;
        let config_dir = config
            .claude_config_dir
            .clone()
            .unwrap_or_else(|| claude_config_dir_from_env(&spawned.env));
        let claude_config = ccd_claude::ClaudeConfigDir::new(config_dir);
        let registry_path = claude_config
            .sessions_dir()
            .join(format!("{}.json", spawned.pid));
        let (tx, rx) = sync_channel::<Vec<u8>>(INPUT_QUEUE);
        // Whoever built the config (the daemon's spec, a test), the model
        // and the PTY get a size within bounds (`pty_size` clamps too).
        let size = config.size.clamped();
        let screen = Screen::with_scrollback(size.rows, size.cols, config.scrollback);
        let input = Arc::new(pty_io::PtyInput::new(
            spawned.writer,
            spawn::master_fd(&*spawned.master),
            tx,
        ));
        let session = Arc::new(
            Session::new(
                screen,
                spawned.master,
                size,
                Arc::clone(&input),
                session::Fixed {
                    pid: spawned.pid,
                    cwd: spawned.cwd,
                    argv: spawned.argv,
                    started_at: session::unix_ms(),
                    registry_path,
                    projects_dir: claude_config.projects_dir(),
                    expected_session_id: config.expected_session_id.clone(),
                },
                config.client_queue_bytes,
                config.parse_backlog_bytes,
            )
            // Its typing mark beside its socket, the other holders' around it.
            .with_typing(sched::Typing::for_socket(&config.socket_path)),
        );
        let thread_err = |e: std::io::Error| SpawnError::Spawn {
            program: config.program.clone(),
            reason: format!("cannot start a holder thread: {e}"),
        };
        pty_io::spawn_writer(input, rx).map_err(thread_err)?;
        pty_io::spawn_parser(Arc::clone(&session)).map_err(thread_err)?;
        pty_io::spawn_reader(Arc::clone(&session), spawned.reader).map_err(thread_err)?;
        pty_io::spawn_waiter(Arc::clone(&session), spawned.child).map_err(thread_err)?;
        let mut core = lifecycle::CoreConfig::new(config.auto_trust, config.trust_stable);
        core.max_attempts = config.trust_max_attempts;
        core.blocking_grace = config.blocking_grace;
        lifecycle::driver::spawn_driver(Arc::clone(&session), core, config.tick)
            .map_err(thread_err)?;
        Ok(Holder {
            session,
            socket_path: config.socket_path.clone(),
            daemon_lock: config.daemon_lock.clone(),
        })
    }

    /// The shared session (for in-process inspection).
    pub fn session(&self) -> &Arc<Session> {
        &self.session
    }

    /// Serve `listener` until the child's exit is collected
    /// (`holder.collect`), then stop every thread that can be stopped.
    pub fn serve(self, listener: UnixListener) -> anyhow::Result<Outcome> {
        tracing::info!(socket = %self.socket_path.display(), pid = self.session.fixed.pid, "holder serving");
        let daemon = rpc::slots::DaemonLock::new(self.daemon_lock);
        let result = rpc::server::accept_loop(&self.session, &listener, &daemon);
        self.session.request_stop();
        let mut g = self.session.lock();
        g.fanout.close_all();
        let outcome = Outcome {
            exit: g.exit.clone(),
            state: g.life.state,
        };
        drop(g);
        result.map(|()| outcome)
    }
}

/// `CLAUDE_CONFIG_DIR` from `env`, else `$HOME/.claude`, else `~/.claude`
/// of this process.
fn claude_config_dir_from_env(env: &[(std::ffi::OsString, std::ffi::OsString)]) -> PathBuf {
    let get = |name: &str| {
        env.iter()
            .find(|(k, v)| k == name && !v.is_empty())
            .map(|(_, v)| PathBuf::from(v))
    };
    if let Some(dir) = get("CLAUDE_CONFIG_DIR") {
        return dir;
    }
    if let Some(home) = get("HOME") {
        return home.join(".claude");
    }
    ccd_claude::ClaudeConfigDir::resolve(None)
        .map(|c| c.root().to_path_buf())
        .unwrap_or_else(|_| PathBuf::from(".claude"))
}

/// Spawn the child in `config`, then serve it on a listener bound at
/// `config.socket_path`, until collected.
pub fn serve(config: HolderConfig, listener: UnixListener) -> anyhow::Result<Outcome> {
    let holder = Holder::spawn(&config).context("starting the session")?;
    holder.serve(listener)
}

/// The holder process's main: spawn, bind the socket (0600), serve until the
/// exit is collected, remove the socket (and the typing mark).
pub fn run(config: HolderConfig) -> anyhow::Result<()> {
    let holder = Holder::spawn(&config).context("starting the session")?;
    let listener = match bind(&config.socket_path) {
        Ok(l) => l,
        Err(e) => {
            // Nobody could ever reach this session: don't leave it running.
            let _ = holder.session().signal(libc::SIGHUP);
            return Err(e);
        }
    };
    let outcome = holder.serve(listener);
    if let Err(e) = std::fs::remove_file(&config.socket_path) {
        tracing::debug!(error = %e, "removing the holder socket");
    }
    // The typing mark, if anybody typed (sched::typing).
    let _ = std::fs::remove_file(sched::typing::mark_of(&config.socket_path));
    let outcome = outcome?;
    // The collect reply is already with the daemon (see the crate doc).
    tracing::info!(state = outcome.state.as_str(), exit = ?outcome.exit, "holder done");
    Ok(())
}
