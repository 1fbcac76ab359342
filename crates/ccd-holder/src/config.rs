//! [`HolderConfig`]: everything a holder needs to start one session.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Terminal size in cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Size {
    /// Rows (1..=`ccd_protocol::methods::MAX_ROWS`).
    pub rows: u16,
    /// Columns (1..=`ccd_protocol::methods::MAX_COLS`).
    pub cols: u16,
}

impl Size {
    /// This size if it is within the protocol's bounds
    /// (`ccd_protocol::methods::MAX_ROWS` / `MAX_COLS`, both at least 1).
    pub fn checked(self) -> Result<Size, ccd_protocol::methods::SizeOutOfRange> {
        self.term().checked().map(Size::from_term)
    }

    /// The nearest size within the protocol's bounds: what the holder
    /// applies whatever it was handed, so no caller can make it allocate a
    /// screen model of 65535×65535 cells.
    pub fn clamped(self) -> Size {
        Size::from_term(self.term().clamped())
    }

    fn term(self) -> ccd_protocol::methods::TermSize {
        ccd_protocol::methods::TermSize {
            cols: self.cols,
            rows: self.rows,
        }
    }

    fn from_term(t: ccd_protocol::methods::TermSize) -> Size {
        Size {
            rows: t.rows,
            cols: t.cols,
        }
    }
}

impl Default for Size {
    /// 40 rows x 120 columns.
    fn default() -> Self {
        Self {
            rows: 40,
            cols: 120,
        }
    }
}

/// How one holder runs its session.
#[derive(Debug, Clone)]
pub struct HolderConfig {
    /// Where the holder listens (created 0600; its directory must already
    /// exist and be private, the daemon creates it).
    pub socket_path: PathBuf,
    /// The `claude` binary (or any program, for tests).
    pub program: PathBuf,
    /// Arguments after the program name.
    pub args: Vec<OsString>,
    /// Working directory. Normalized; must be an existing directory.
    pub cwd: PathBuf,
    /// The environment the child starts from. `None`: this process's own.
    /// Every `CCD_*` variable is removed from it whatever its origin.
    pub base_env: Option<Vec<(OsString, OsString)>>,
    /// Variables set on top of the base environment (applied before the
    /// `CCD_*` filter and before `TERM=xterm-256color`).
    pub env: Vec<(OsString, OsString)>,
    /// Initial terminal size.
    pub size: Size,
    /// Claude Code's config dir (where `sessions/<pid>.json` appears). `None`:
    /// resolved from the child's environment (`CLAUDE_CONFIG_DIR`, else
    /// `$HOME/.claude`).
    pub claude_config_dir: Option<PathBuf>,
    /// Answer the folder trust dialog automatically (verified navigation,
    /// see [`crate::lifecycle`]). When false the dialog is reported as
    /// needing attention.
    pub auto_trust: bool,
    /// How long the trust dialog must stay unchanged before keys are sent.
    pub trust_stable: Duration,
    /// How many times navigation / Enter is retried before giving up.
    pub trust_max_attempts: u32,
    /// How long an unrecognized blocking screen may persist before the
    /// session is reported as needing attention (before ready only).
    pub blocking_grace: Duration,
    /// Lifecycle tick (screen re-classification, registry polling).
    pub tick: Duration,
    /// Scrollback lines of the screen model. None by default: the
    /// transcript is the history, redraws show the visible screen only, and
    /// keeping scrolled-off rows halves the model's speed on plain text
    /// (`ccd-bench parse --scrollback 100`).
    pub scrollback: usize,
    /// Bytes of output queued per client before its queue is dropped and it
    /// is resynced.
    pub client_queue_bytes: usize,
    /// The session id the launcher expects (`--session-id`, `--resume`);
    /// `None` for a fork, whose id only the registry tells.
    pub expected_session_id: Option<String>,
}

impl HolderConfig {
    /// A config with the defaults for everything but what must be given.
    pub fn new(socket_path: PathBuf, program: PathBuf, cwd: PathBuf) -> Self {
        Self {
            socket_path,
            program,
            args: Vec::new(),
            cwd,
            base_env: None,
            env: Vec::new(),
            size: Size::default(),
            claude_config_dir: None,
            auto_trust: true,
            trust_stable: Duration::from_millis(1000),
            trust_max_attempts: 4,
            blocking_grace: Duration::from_secs(3),
            tick: Duration::from_millis(100),
            scrollback: 0,
            client_queue_bytes: 8 << 20,
            expected_session_id: None,
        }
    }
}

/// A signal `holder.kill` may send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KillSignal {
    /// SIGTERM.
    Term,
    /// SIGKILL.
    Kill,
    /// SIGHUP.
    Hup,
}

impl KillSignal {
    /// The signal number.
    pub fn number(self) -> i32 {
        match self {
            KillSignal::Term => libc::SIGTERM,
            KillSignal::Kill => libc::SIGKILL,
            KillSignal::Hup => libc::SIGHUP,
        }
    }
}
