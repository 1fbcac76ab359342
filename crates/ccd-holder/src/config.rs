//! [`HolderConfig`]: everything a holder needs to start one session.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// Terminal size in cells: the protocol's own (`{rows, cols}` on the
/// wire; checked with [`TermSize::checked`](ccd_protocol::methods::TermSize::checked),
/// clamped with `clamped`).
pub type Size = ccd_protocol::methods::TermSize;

/// The size a holder starts with unless told: 40 rows x 120 columns.
pub const DEFAULT_SIZE: Size = Size {
    rows: 40,
    cols: 120,
};

/// Bytes of output a client's queue holds by default before it is dropped
/// and the client resynced: what a stuck client pins.
pub const CLIENT_QUEUE: usize = 8 << 20;

/// Most bytes of output waiting for the model before the reader waits (a
/// burst this long passes at relay speed; the parser drains it after).
/// A flooded holder's RSS is this, what its stuck clients pin (their queues
/// outlive the backlog's chunks) and about 10 MiB of its own: 58 MiB
/// measured with none (`ccd-bench pty`, release).
pub const BACKLOG_CAP: usize = 48 << 20;

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
    /// is resynced ([`CLIENT_QUEUE`] by default).
    pub client_queue_bytes: usize,
    /// Most bytes of output waiting for the screen model before the PTY is
    /// paced ([`BACKLOG_CAP`] by default; the parse speed may lower it,
    /// see the session module's doc).
    pub parse_backlog_bytes: usize,
    /// The session id the launcher expects (`--session-id`, `--resume`);
    /// `None` for a fork, whose id only the registry tells.
    pub expected_session_id: Option<String>,
    /// The daemon's lock file, whose pid names the daemon: its
    /// connections may take the slots kept for it
    /// ([`crate::rpc::slots`]). `None` (by default): no daemon is known,
    /// those slots serve no one. From a spec: the lock beside the
    /// socket's `holders/` directory.
    pub daemon_lock: Option<PathBuf>,
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
            size: DEFAULT_SIZE,
            claude_config_dir: None,
            auto_trust: true,
            trust_stable: Duration::from_millis(1000),
            trust_max_attempts: 4,
            blocking_grace: Duration::from_secs(3),
            tick: Duration::from_millis(100),
            scrollback: 0,
            client_queue_bytes: CLIENT_QUEUE,
            parse_backlog_bytes: BACKLOG_CAP,
            expected_session_id: None,
            daemon_lock: None,
        }
    }
}

/// A signal `holder.kill` may send (the public protocol's).
pub use ccd_protocol::holder::KillSignal;

/// The signal number of `s`.
pub fn signal_number(s: KillSignal) -> i32 {
    match s {
        KillSignal::Term => libc::SIGTERM,
        KillSignal::Kill => libc::SIGKILL,
        KillSignal::Hup => libc::SIGHUP,
    }
}

impl From<ccd_protocol::holder::spec::HolderSpec> for HolderConfig {
    /// The configuration a holder started with `spec` runs with (what
    /// `ccd __holder` does with the spec the daemon wrote on its stdin).
    fn from(spec: ccd_protocol::holder::spec::HolderSpec) -> Self {
        let daemon_lock = crate::rpc::slots::daemon_lock_of(&spec.socket);
        let mut c = HolderConfig::new(spec.socket, spec.program, spec.cwd);
        c.daemon_lock = daemon_lock;
        c.args = spec.args.into_iter().map(Into::into).collect();
        c.env = spec
            .env
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        // The daemon's handlers refused out-of-range sizes; a spec from
        // elsewhere is clamped (the holder clamps again).
        c.size = Size {
            rows: spec.rows,
            cols: spec.cols,
        }
        .clamped();
        c.claude_config_dir = spec.claude_config_dir;
        c.auto_trust = spec.auto_trust;
        c.trust_stable = Duration::from_millis(spec.trust_stable_ms);
        c.expected_session_id = spec.session_id;
        c
    }
}
