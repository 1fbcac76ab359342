//! What every connection shares.

use crate::holders::HolderTable;
use ccd_claude::context::ContextWindows;
use ccd_claude::ClaudeConfigDir;
use ccd_socket_dir::SocketDir;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::time::SystemTime;
use tokio::sync::watch;

/// How the daemon was started.
#[derive(Debug, Clone)]
pub struct DaemonOptions {
    pub socket_dir: SocketDir,
    /// Claude Code's config dir (for the session index; passed to children
    /// as `CLAUDE_CONFIG_DIR` when `claude_config_explicit`).
    pub claude_config: ClaudeConfigDir,
    pub claude_config_explicit: bool,
    /// The `claude` binary sessions run.
    pub claude_bin: PathBuf,
    /// The executable that runs `__holder` (normally this `ccd`).
    pub holder_exe: PathBuf,
    /// Where logs (the daemon's and the holders') go.
    pub state_dir: PathBuf,
    pub context_windows: ContextWindows,
    /// How long a holder's trust dialog must be stable before keys are sent.
    pub trust_stable_ms: u64,
    /// Auto-trust unless a request says otherwise (config `auto_trust`).
    pub auto_trust_default: bool,
    /// Stop held sessions idle (no client) for longer than this.
    pub reap_idle: Option<std::time::Duration>,
    /// Keep the held sessions' memory under this many bytes by stopping
    /// idle ones (config `memory_budget`; see `holders::reap`).
    pub memory_budget: Option<u64>,
    /// How long a session must be idle before the budget may stop it.
    pub reap_min_idle: std::time::Duration,
    /// How often the costs of live sessions are sampled.
    pub cost_interval: std::time::Duration,
    /// How long a resumed session must stay up after `ready` to count as
    /// resumed (an exit within it is a failed resume; another process
    /// taking the id within it, a refused one).
    pub resume_settle: std::time::Duration,
}

/// The daemon's shared state. Fields are immutable or internally locked;
/// no lock is held across an `.await`.
pub struct Daemon {
    pub options: DaemonOptions,
    pub started_at: SystemTime,
    pub holders: HolderTable,
    /// Open client connections.
    pub clients: AtomicUsize,
    /// Connections refused for a wrong peer uid.
    pub refused: AtomicU64,
    /// Set to true when the daemon is stopping.
    pub shutdown: watch::Sender<bool>,
    /// Set the moment `daemon.stop` is accepted: new requests are refused
    /// from then on, while the reply still goes out.
    pub stopping: std::sync::atomic::AtomicBool,
    /// Where events are published.
    pub events: crate::events::EventHub,
    /// What each live session costs, as last sampled.
    pub costs: std::sync::Arc<crate::cost::CostBoard>,
}

impl Daemon {
    pub fn new(options: DaemonOptions) -> Self {
        let events = crate::events::EventHub::default();
        let holders = HolderTable::new(options.socket_dir.holders_dir(), events.clone());
        Self {
            options,
            started_at: SystemTime::now(),
            holders,
            clients: AtomicUsize::new(0),
            refused: AtomicU64::new(0),
            shutdown: watch::channel(false).0,
            stopping: std::sync::atomic::AtomicBool::new(false),
            events,
            costs: Default::default(),
        }
    }

    pub fn is_stopping(&self) -> bool {
        *self.shutdown.borrow() || self.stopping.load(std::sync::atomic::Ordering::Acquire)
    }
}
