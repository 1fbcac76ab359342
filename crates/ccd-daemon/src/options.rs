//! How the daemon was started: the settings every part reads, handed down
//! by value or by reference (a leaf: it imports nothing of the crate).

use ccd_claude::context::ContextWindows;
use ccd_claude::ClaudeConfigDir;
use ccd_socket_dir::SocketDir;
use std::path::PathBuf;

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
    /// idle ones (config `memory_budget`; see `tasks::reap`).
    pub memory_budget: Option<u64>,
    /// How long a session must be idle before the budget may stop it.
    pub reap_min_idle: std::time::Duration,
    /// How often the costs of live sessions are sampled.
    pub cost_interval: std::time::Duration,
    /// How long a resumed session must stay up after `ready` to count as
    /// resumed (an exit within it is a failed resume; another process
    /// taking the id within it, a refused one).
    pub resume_settle: std::time::Duration,
    /// The `[notify]` table (`tasks::notify`).
    pub notify: ccd_notify::NotifyConfig,
    /// The config's `restore`: what a start does with lost sessions.
    pub restore: RestoreMode,
    /// The config's `restore_at_once`: how many lost sessions are resumed
    /// at once (`restore::DEFAULT_AT_ONCE`, at most `restore::MAX_AT_ONCE`).
    pub restore_at_once: usize,
    /// The config's `archive = "auto"`: archive dead conversations before
    /// Claude Code's retention sweep reaches them (`tasks::archive`).
    pub archive_auto: bool,
    /// The price table (built in, with the config's `[prices]`) the usage
    /// board prices conversations with (`crate::usage`).
    pub prices: ccd_usage::PriceTable,
}

/// The config's `restore`: what a daemon start does with lost sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RestoreMode {
    /// Listed as `lost`; `ccd restore` brings them back.
    #[default]
    Ask,
    /// Brought back at daemon start.
    Auto,
    /// Forgotten.
    Off,
}

impl std::str::FromStr for RestoreMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "ask" => Ok(Self::Ask),
            "auto" => Ok(Self::Auto),
            "off" => Ok(Self::Off),
            other => Err(format!(
                "restore = {other:?}: write \"ask\", \"auto\" or \"off\""
            )),
        }
    }
}
