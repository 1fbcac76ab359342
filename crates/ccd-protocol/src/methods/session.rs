//! Sessions as things: list, inspect, start, fork, kill, look at the screen.
//!
//! Session state is computed from Claude Code's registry at the moment of
//! each request, never from a cache, so two calls may disagree.

use serde::{Deserialize, Serialize};

use crate::ErrorCode;

use super::{Method, SessionRef, TermSize, Wait};

/// Liveness of a session, verified against the process table at the moment
/// of the request (Claude Code's registry entry's pid runs with the start
/// time the entry records).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionState {
    /// A process holds it (under ccd when `ccd` is set, else elsewhere).
    Live,
    /// A registry entry exists but cannot be verified (another pid
    /// namespace, unreadable `/proc`, ...). Treated as live: never resumed.
    Unknown,
    /// No live process holds it; attaching resumes it in its original cwd.
    Dead,
    /// A state added by a later daemon; treat like `unknown`.
    #[serde(other)]
    Other,
}

/// What Claude Code says it is doing (the registry's `status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActivityStatus {
    /// At the prompt, waiting for the user.
    Idle,
    /// A turn is running.
    Busy,
    /// Waiting for the user on a dialog (e.g. a permission prompt); see
    /// `waiting_for`.
    Waiting,
    /// A value this client does not know.
    #[serde(other)]
    Other,
}

/// The context window a percentage assumes, and where the figure came from
/// (`config`: ccd's config file; `built-in`: ccd's table; `default`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextWindow {
    pub tokens: u64,
    pub source: String,
}

/// A process that holds (may be writing) a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WriterInfo {
    pub pid: u32,
    /// `live` or `unknown`.
    pub liveness: SessionState,
    pub kind: Option<String>,
    pub cwd: Option<String>,
    /// RFC 3339.
    pub started_at: Option<String>,
    pub status: Option<ActivityStatus>,
    pub waiting_for: Option<String>,
    pub version: Option<String>,
}

/// What ccd knows of a session it holds in a PTY.
/// ccd's lifecycle of a session it holds, on the wire as its name
/// (`starting`, `trust`, `ready`; then Claude Code's status `idle`, `busy`,
/// `waiting` once ready; `needs-attention`; and how it ended: `exited`,
/// `failed`, `reaped`, `discarded`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum Lifecycle {
    Starting,
    Trust,
    Ready,
    Idle,
    Busy,
    Waiting,
    NeedsAttention,
    Exited,
    Failed,
    Reaped,
    Discarded,
    /// A name this version does not know (a later daemon's state, or a
    /// status Claude Code added), kept as named.
    Other(String),
}

impl Lifecycle {
    /// The wire name.
    pub fn as_str(&self) -> &str {
        match self {
            Lifecycle::Starting => "starting",
            Lifecycle::Trust => "trust",
            Lifecycle::Ready => "ready",
            Lifecycle::Idle => "idle",
            Lifecycle::Busy => "busy",
            Lifecycle::Waiting => "waiting",
            Lifecycle::NeedsAttention => "needs-attention",
            Lifecycle::Exited => "exited",
            Lifecycle::Failed => "failed",
            Lifecycle::Reaped => "reaped",
            Lifecycle::Discarded => "discarded",
            Lifecycle::Other(s) => s,
        }
    }

    /// The session's process has ended (`exited`, `failed`, `reaped`,
    /// `discarded`).
    pub fn ended(&self) -> bool {
        matches!(
            self,
            Lifecycle::Exited | Lifecycle::Failed | Lifecycle::Reaped | Lifecycle::Discarded
        )
    }
}

impl From<String> for Lifecycle {
    fn from(s: String) -> Self {
        match s.as_str() {
            "starting" => Lifecycle::Starting,
            "trust" => Lifecycle::Trust,
            "ready" => Lifecycle::Ready,
            "idle" => Lifecycle::Idle,
            "busy" => Lifecycle::Busy,
            "waiting" => Lifecycle::Waiting,
            "needs-attention" => Lifecycle::NeedsAttention,
            "exited" => Lifecycle::Exited,
            "failed" => Lifecycle::Failed,
            "reaped" => Lifecycle::Reaped,
            "discarded" => Lifecycle::Discarded,
            _ => Lifecycle::Other(s),
        }
    }
}

impl From<&str> for Lifecycle {
    fn from(s: &str) -> Self {
        Lifecycle::from(s.to_string())
    }
}

impl From<Lifecycle> for String {
    fn from(l: Lifecycle) -> String {
        match l {
            Lifecycle::Other(s) => s,
            l => l.as_str().to_string(),
        }
    }
}

impl std::fmt::Display for Lifecycle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OwnedInfo {
    /// The holder process's id (stable while the session runs).
    pub holder: String,
    /// `starting`, `trust`, `ready`, `idle`, `busy`, `waiting`,
    /// `needs-attention`, `exited`, `failed`, `reaped`.
    pub lifecycle: Lifecycle,
    /// Why the session needs a person (with `lifecycle: needs-attention`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attention: Option<String>,
    /// The tool permission dialog on its screen, as `<tool> <detail>`
    /// (e.g. `Bash command echo hi`); absent when none is shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission: Option<String>,
    /// The id of that permission prompt (for `session.respond`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_prompt: Option<String>,
    /// The context window (tokens) the CLI's welcome banner states, e.g.
    /// 1,000,000 for "Opus 4.8 (1M context)"; absent when it states none.
    /// When set, the session's `context_window` is this one (`source:
    /// "screen"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stated_context_window: Option<u64>,
    /// Clients attached now.
    #[serde(default)]
    pub attached: u32,
    /// Exit code, once exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Exempt from idle reaping (`session.pin`).
    #[serde(default)]
    pub pinned: bool,
    /// Per attached client: what its queue lost and how often it was
    /// redrawn after falling behind.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clients: Vec<ClientCounters>,
    /// The conversations this process wrote before the session's id,
    /// oldest first (each is listed on its own as a `dead` session with
    /// `superseded_by`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub earlier: Vec<EarlierConversation>,
}

/// A conversation that a held process wrote before the one it writes now
/// (it moved on: `/clear`, another conversation resumed inside the TUI).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Superseded {
    /// The id the process wrote next.
    pub session: String,
    /// `clear` (a new, empty conversation), `resume` (an existing one taken
    /// up inside the TUI) or `unknown`.
    pub reason: String,
    /// RFC 3339: when ccd saw the switch.
    pub at: Option<String>,
    /// The holder of that process.
    pub holder: String,
    /// The id that reaches that process now (`session`, unless it moved on
    /// again since).
    pub writes_now: String,
}

/// An id that the process a holder runs wrote before its current one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EarlierConversation {
    pub session: String,
    /// The id the process wrote after it.
    pub next: String,
    /// `clear`, `resume` or `unknown`: why the process left it.
    pub reason: String,
    /// RFC 3339: when ccd saw the switch.
    pub until: Option<String>,
}

/// Counters of one client attached to a session ccd holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientCounters {
    /// `interactive` or `observe`.
    pub mode: String,
    /// Output bytes dropped from its queue (it fell behind).
    pub bytes_dropped: u64,
    /// Full redraws sent after it fell behind.
    pub resyncs: u64,
}

/// One session, with exactly the fields of `ccd ls --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionInfo {
    /// Full session id (a UUID).
    pub session_id: String,
    pub state: SessionState,
    /// The pid of the process holding it; `null` when dead.
    pub pid: Option<u32>,
    /// The session's original working directory.
    pub cwd: Option<String>,
    /// Claude Code's status; `null` when dead.
    pub status: Option<ActivityStatus>,
    /// What a `waiting` session waits for, e.g. `"permission prompt"`.
    pub waiting_for: Option<String>,
    /// `interactive`, `bg`, ... (the registry's `kind`).
    pub kind: Option<String>,
    /// Display name from the registry (e.g. `"proj1-b7"`).
    pub name: Option<String>,
    /// Claude Code version of the live process.
    pub version: Option<String>,
    /// RFC 3339.
    pub started_at: Option<String>,
    /// RFC 3339: the newest transcript record, else the registry's update.
    pub last_activity: Option<String>,
    /// The first prompt, else the newest `last-prompt`.
    pub title: Option<String>,
    /// The model of the last assistant record.
    pub model: Option<String>,
    /// Input + cache-creation + cache-read tokens of the last assistant
    /// record.
    pub context_tokens: Option<u64>,
    /// `context_tokens` as a percentage of `context_window.tokens`.
    pub context_percent: Option<f64>,
    pub context_window: Option<ContextWindow>,
    /// Path of the transcript file.
    pub transcript: Option<String>,
    pub transcript_bytes: Option<u64>,
    /// Every process that may be writing the session.
    #[serde(default)]
    pub writers: Vec<WriterInfo>,
    /// Two or more writers: someone resumed a running session by hand.
    #[serde(default)]
    pub several_writers: bool,
    /// Set on a conversation that a process ccd holds wrote before and
    /// nobody writes now: what that process moved on to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<Superseded>,
    /// Set when ccd holds the session in a PTY.
    #[serde(default)]
    pub ccd: Option<OwnedInfo>,
    /// What the live process costs the machine now; absent when dead, when
    /// the process cannot be read, or when the list asked for no costs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<SessionCost>,
}

/// What a live session costs: its `claude` process and every process under
/// it (shells, MCP servers, ...), as the daemon last sampled them (every
/// few seconds while sessions are live).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionCost {
    /// The process tree's memory, in bytes.
    pub memory_bytes: u64,
    /// How `memory_bytes` was counted.
    pub memory_kind: MemoryKind,
    /// CPU used over the last interval, in % of one core (200 = two cores
    /// busy); absent until the daemon has two samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_percent: Option<f64>,
    /// The interval `cpu_percent` covers, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_interval_ms: Option<u64>,
    /// Processes in the tree, `claude` included.
    pub processes: u32,
    /// RFC 3339: when it was sampled.
    pub measured_at: String,
}

/// How a memory figure was counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryKind {
    /// Proportional set size (Linux): a page shared by n processes counts
    /// 1/n in each, so a tree's sum is about what ending it frees.
    Pss,
    /// Resident set size: a shared page counts in every process mapping it
    /// (macOS, or where PSS cannot be read); a tree's sum can overstate.
    Rss,
    /// A kind added by a later daemon.
    #[serde(other)]
    Other,
}

/// `sessions.list`: every session on the machine, most recently active
/// first.
pub struct SessionsList;

impl Method for SessionsList {
    const NAME: &'static str = "sessions.list";
    type Params = ListParams;
    type Result = ListResult;
}

/// Params of `sessions.list` (all optional).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListParams {
    /// Only sessions whose original cwd is this directory or below it
    /// (compared after normalization).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Only sessions a process may be running (`live`, `unknown`). Default
    /// `false`.
    #[serde(default)]
    pub live_only: bool,
    /// Only sessions ccd holds, from its own table (no file scan: cheap).
    #[serde(default)]
    pub held_only: bool,
    /// Skip this many sessions (paging; see `next_offset`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u32>,
    /// At most this many entries (default and maximum 500, so a reply fits
    /// in one line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// `true`: leave out every row's `cost` (nothing is sampled for this
    /// call). Default `false`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_cost: bool,
}

/// Result of `sessions.list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ListResult {
    /// The sessions, most recently active first.
    pub sessions: Vec<SessionInfo>,
    /// How many sessions matched in all.
    pub total: u32,
    /// The `offset` of the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<u32>,
}

/// `sessions.costs`: what each live session's process tree costs now, by
/// the `claude` pid (the same figures `sessions.list` puts in `cost`), for
/// a client that lists sessions from the files itself (`ccd ls`).
pub struct SessionsCosts;

impl Method for SessionsCosts {
    const NAME: &'static str = "sessions.costs";
    type Params = CostsParams;
    type Result = CostsResult;
}

/// The most pids one `sessions.costs` may name.
pub const MAX_COST_PIDS: usize = 4096;

/// Params of `sessions.costs`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CostsParams {
    /// Only these processes (each sampled now if the daemon has no figure
    /// for it yet; at most [`MAX_COST_PIDS`]). Absent: every live
    /// session's process the daemon samples (the ones it holds and every
    /// one in Claude Code's registry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pids: Option<Vec<u32>>,
}

/// Result of `sessions.costs`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CostsResult {
    /// One entry per live process the daemon has a figure for; a pid that
    /// is gone or cannot be read is left out.
    pub costs: Vec<PidCost>,
}

/// One process tree's cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PidCost {
    /// The session's `claude` process (the tree's root).
    pub pid: u32,
    pub cost: SessionCost,
}

/// `sessions.get`: one session in detail.
pub struct SessionsGet;

impl Method for SessionsGet {
    const NAME: &'static str = "sessions.get";
    type Params = SessionRef;
    type Result = SessionInfo;
    const ERRORS: &'static [ErrorCode] = naming_errors!();
}

/// `session.new`: start a fresh `claude` under a PTY ccd holds.
pub struct SessionNew;

impl Method for SessionNew {
    const NAME: &'static str = "session.new";
    type Params = NewParams;
    type Result = NewResult;
    const ERRORS: &'static [ErrorCode] = &[
        ErrorCode::CwdMissing,
        ErrorCode::SpawnFailed,
        ErrorCode::PermissionDenied,
    ];
    const WAIT: Wait = Wait::Start;
    fn wait(p: &NewParams) -> Wait {
        if p.wait {
            Wait::Start
        } else {
            Wait::Call
        }
    }
}

/// Params of `session.new`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewParams {
    /// Working directory for the session (normalized by the daemon; must be
    /// an existing directory).
    pub cwd: String,
    /// Extra arguments for `claude` (e.g. `["--model", "opus"]`). ccd adds
    /// `--session-id` itself, so the id is known at once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// A name for the session, usable wherever an id is (`ccd attach NAME`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Initial terminal size; default 120x40.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<TermSize>,
    /// Answer Claude Code's folder-trust dialog with "trust" (only ever after
    /// verifying the selected option on screen). Default `true`: the user
    /// asked ccd to open this folder. With `false` the dialog is left for
    /// the user and the session is `needs-attention`.
    #[serde(default = "yes")]
    pub auto_trust: bool,
    /// Reply only once the session is ready (or failed / needs attention),
    /// sending `session.progress` notifications meanwhile. Default `true`.
    #[serde(default = "yes")]
    pub wait: bool,
    /// The id to give the session (a UUID), chosen by the client so that
    /// it knows the id even if the daemon goes away before replying.
    /// Refused (`invalid_params`) unless a UUID no session ccd holds has
    /// and no transcript carries. Default: the daemon picks one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

/// Result of `session.new` and `session.fork`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewResult {
    /// The new session's id (for a fork not yet ready: `null`).
    pub session: Option<String>,
    /// The holder process's id.
    pub holder: String,
    /// The `claude` process id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// The session's working directory (normalized).
    pub cwd: String,
    /// Lifecycle at reply time (`ready` when `wait` succeeded).
    pub lifecycle: Lifecycle,
    /// Why the session needs a person, or why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The screen text when it failed or needs attention.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screen: Option<Vec<String>>,
    /// For a fork: the session it was forked from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<String>,
}

impl NewResult {
    /// The new session's id, unless its lifecycle at reply time says it
    /// did not come up (`failed`, `exited`, `needs-attention`).
    pub fn started(&self) -> Option<&str> {
        let down = matches!(
            self.lifecycle,
            Lifecycle::Failed | Lifecycle::Exited | Lifecycle::NeedsAttention
        );
        self.session.as_deref().filter(|_| !down)
    }
}

/// `session.fork`: branch a session (`claude --resume <id> --fork-session`
/// in its original cwd). Safe whatever the session's state, including live
/// elsewhere; the original is untouched.
pub struct SessionFork;

impl Method for SessionFork {
    const NAME: &'static str = "session.fork";
    type Params = ForkParams;
    type Result = NewResult;
    const ERRORS: &'static [ErrorCode] = naming_errors!(CwdMissing, SpawnFailed, PermissionDenied);
    const WAIT: Wait = Wait::Start;
}

/// Params of `session.fork`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForkParams {
    /// Session id or unique prefix of the session to fork.
    pub session: String,
    /// Initial terminal size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<TermSize>,
}

/// `session.kill`: end a session ccd holds. Sessions live elsewhere fail
/// with `SessionLiveElsewhere`: ccd does not signal processes it does not
/// own.
pub struct SessionKill;

impl Method for SessionKill {
    const NAME: &'static str = "session.kill";
    type Params = KillParams;
    type Result = KillResult;
    const ERRORS: &'static [ErrorCode] = held_errors!();
    const WAIT: Wait = Wait::Grace { ms: 3000 };
    fn wait(p: &KillParams) -> Wait {
        Wait::Grace {
            ms: p.grace_ms.unwrap_or(3000),
        }
    }
}

/// How to end a session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KillSignal {
    /// SIGHUP, as when a terminal closes: Claude Code exits cleanly.
    Hup,
    /// SIGTERM (the default): Claude Code exits cleanly.
    #[default]
    Term,
    /// SIGKILL: leaves Claude Code's registry entry behind.
    Kill,
}

/// Params of `session.kill`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KillParams {
    /// Session id or unique prefix.
    pub session: String,
    /// Default `term`.
    #[serde(default)]
    pub signal: KillSignal,
    /// With `term`/`hup`: SIGKILL after this many ms if the process is still
    /// there (default 3000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grace_ms: Option<u64>,
}

/// Result of `session.kill`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct KillResult {
    /// True if a signal was sent; false if the session had already exited.
    pub signalled: bool,
    /// True once the process is gone (its exit collected).
    pub exited: bool,
    /// Exit status, if it exited normally.
    pub exit_code: Option<i32>,
    /// Signal number, if a signal ended it.
    pub exit_signal: Option<i32>,
}

/// `session.screen`: the current screen of a session ccd holds, from its
/// screen model (not the raw stream).
pub struct SessionScreen;

impl Method for SessionScreen {
    const NAME: &'static str = "session.screen";
    type Params = ScreenParams;
    type Result = ScreenResult;
    const ERRORS: &'static [ErrorCode] = held_errors!();
}

/// Which representation `session.screen` returns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScreenFormat {
    /// `lines`: the visible rows as plain text, trailing spaces trimmed.
    #[default]
    Text,
    /// `data`: base64 bytes that redraw the screen with colours and modes,
    /// as in `session.resync`.
    Ansi,
}

/// Params of `session.screen`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScreenParams {
    /// Session id or unique prefix.
    pub session: String,
    /// Default `text`.
    #[serde(default)]
    pub format: ScreenFormat,
}

/// Cursor position, 0-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cursor {
    /// Row, 0 = top.
    pub row: u16,
    /// Column, 0 = left.
    pub col: u16,
    /// False if the application hid the cursor.
    #[serde(default = "yes")]
    pub visible: bool,
}

fn yes() -> bool {
    true
}

/// Result of `session.screen`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScreenResult {
    /// Full session id.
    pub session: String,
    /// Screen size.
    pub size: TermSize,
    /// Cursor position.
    pub cursor: Cursor,
    /// `format: text`: one string per row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines: Option<Vec<String>>,
    /// `format: ansi`: redraw bytes (base64 on the wire).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::b64::option"
    )]
    pub data: Option<Vec<u8>>,
    /// What the screen shows, as classified by the daemon (`"prompt"`,
    /// `"busy"`, `"trust_dialog"`, `"permission_prompt"`, ...); free-form,
    /// for display and scripting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shows: Option<String>,
}

/// `session.progress`: a lifecycle step of a session being started
/// (`session.new` / `session.fork` with `wait`, and the resume of a
/// `session.attach`), sent before the reply.
pub struct SessionProgress;

impl super::NotificationKind for SessionProgress {
    const NAME: &'static str = "session.progress";
    type Params = Progress;
}

/// Params of `session.progress`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    /// The holder starting the session.
    pub holder: String,
    /// The session id, once known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// `starting`, `trust`, `ready`, `needs-attention`, `failed`, ...
    pub lifecycle: Lifecycle,
    /// For `needs-attention` and `failed`: why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// A step of a resume (`session.attach` of a dead session) beyond the
    /// lifecycle: `resuming` (in `cwd`), `settling` (ready; making sure it
    /// stays up), `stopping` (another process, `pid`, started the same
    /// session meanwhile: ccd stops its own copy and will refuse).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// With `step` `resuming`: the session's original cwd.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// With `step` `stopping`: the other process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
}

/// `session.pin`: exempt a session ccd holds from idle reaping (or undo).
pub struct SessionPin;

impl Method for SessionPin {
    const NAME: &'static str = "session.pin";
    type Params = PinParams;
    type Result = PinResult;
    const ERRORS: &'static [ErrorCode] = held_errors!();
}

/// Params of `session.pin`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PinParams {
    /// Session id, unique prefix, or name.
    pub session: String,
    /// `true` to pin (never reaped), `false` to unpin. Default `true`.
    #[serde(default = "yes")]
    pub pinned: bool,
}

/// Result of `session.pin`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PinResult {
    pub session: String,
    pub pinned: bool,
}

/// `session.send`: type `text` into a session ccd holds as a prompt and
/// submit it. Refused with `not_at_prompt` while the screen does not show
/// Claude Code's prompt (a dialog, a running turn), unless `force`.
pub struct SessionSend;

impl Method for SessionSend {
    const NAME: &'static str = "session.send";
    type Params = SendParams;
    type Result = SendResult;
    const ERRORS: &'static [ErrorCode] = held_errors!(NotAtPrompt);
    const WAIT: Wait = Wait::Slow;
}

/// The most UTF-8 bytes of text `session.send` (`text`) and
/// `session.respond` (`message`) type. A prompt is pasted in one piece;
/// 256 KiB is about 4,000 lines of code, and keeps the holder's `input`
/// line (base64) well under its 1 MiB frame bound. Longer text is refused
/// before anything is read or typed ([`TextTooLong`]).
pub const MAX_TYPED_TEXT: usize = 256 * 1024;

/// Text over [`MAX_TYPED_TEXT`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error, Serialize)]
#[error("the {field} is {bytes} bytes; at most {max_bytes} bytes (256 KiB) are typed, so nothing was typed")]
pub struct TextTooLong {
    /// Which param: `text` or `message`.
    pub field: &'static str,
    /// Its length in UTF-8 bytes.
    pub bytes: usize,
    /// [`MAX_TYPED_TEXT`].
    pub max_bytes: usize,
}

impl TextTooLong {
    /// `Err` when `text` (the param `field`) is over [`MAX_TYPED_TEXT`].
    pub fn check(field: &'static str, text: &str) -> Result<(), TextTooLong> {
        if text.len() > MAX_TYPED_TEXT {
            Err(TextTooLong {
                field,
                bytes: text.len(),
                max_bytes: MAX_TYPED_TEXT,
            })
        } else {
            Ok(())
        }
    }
}

/// Params of `session.send`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendParams {
    /// Session id, unique prefix, or name.
    pub session: String,
    /// The prompt, at most [`MAX_TYPED_TEXT`] bytes. Typed as text, never
    /// as keys: escape sequences and control characters are removed (a
    /// line break stays one), then it is sent as a bracketed paste when the
    /// session accepts one (else with line breaks as spaces), then Enter.
    pub text: String,
    /// Type it even when the prompt is not showing.
    #[serde(default)]
    pub force: bool,
}

/// Result of `session.send`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendResult {
    /// Full session id.
    pub session: String,
    /// Bytes typed (paste markers and every Enter included).
    pub bytes: u64,
    /// Whether the screen showed the prompt take the text (the draft left
    /// the input box); absent when `force` typed past another screen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submitted: Option<bool>,
    /// Characters of `text` that were not typed: escape sequences, control
    /// characters, bidi controls (a `\r\n` counts one). Absent when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub removed: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// `session.respond`: answer the tool permission prompt a session ccd
/// holds shows. The daemon finds the option `choice` means by its label,
/// moves the pointer there one arrow at a time (re-reading the screen after
/// each), presses Enter and checks that the prompt went. With `prompt`
/// (the id an attention event or `sessions.get` gave), a screen showing
/// another prompt — or none — is refused with `prompt_not_shown` and
/// nothing is typed; without it, whatever prompt is shown is answered.
pub struct SessionRespond;

impl Method for SessionRespond {
    const NAME: &'static str = "session.respond";
    type Params = RespondParams;
    type Result = RespondResult;
    const ERRORS: &'static [ErrorCode] = held_errors!(PromptNotShown, NotAtPrompt);
    const WAIT: Wait = Wait::Slow;
}

/// How to answer a permission prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RespondChoice {
    /// Allow once ("Yes").
    Yes,
    /// Allow and do not ask again ("Yes, and always allow …" / "… don't
    /// ask again …"); refused when the prompt offers no such option.
    Always,
    /// Refuse ("No").
    No,
}

/// Params of `session.respond`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RespondParams {
    /// Session id, unique prefix, or name.
    pub session: String,
    /// The answer.
    pub choice: RespondChoice,
    /// With `no`: what Claude should do instead, sent as the next prompt
    /// once the session is back at its prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The prompt id the caller saw (`session.attention`'s `prompt`); the
    /// answer is refused unless the screen shows that prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
}

/// Result of `session.respond`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RespondResult {
    /// Full session id.
    pub session: String,
    /// The id of the prompt answered.
    pub prompt: String,
    /// The answer given.
    pub choice: RespondChoice,
    /// The label of the option chosen, as shown.
    pub option: String,
    /// With `message`: whether it was submitted (see `session.send`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_submitted: Option<bool>,
}

/// `session.trim`: shrink a dead session's transcript without changing
/// what Claude Code sends to the model when it resumes it (or, with
/// `undo`, put the original back). Refused (`trim_refused`, file
/// untouched) while the session may be running.
pub struct SessionTrim;

impl Method for SessionTrim {
    const NAME: &'static str = "session.trim";
    type Params = TrimParams;
    type Result = TrimResult;
    const ERRORS: &'static [ErrorCode] = naming_errors!(TrimRefused);
    const WAIT: Wait = Wait::Trim;
}

/// Params of `session.trim`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrimParams {
    /// Session id or unique prefix.
    pub session: String,
    /// Only say what would go.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dry_run: bool,
    /// Also drop `file-history-*` records (loses `/rewind` checkpoints).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub drop_file_history: bool,
    /// Keep only what follows the last compaction boundary.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub before_compact: bool,
    /// Trim despite record types ccd does not know (kept as they are).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub force: bool,
    /// Put the original back (the newest backup).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub undo: bool,
}

/// Records and bytes of one kind.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrimCount {
    /// Record kind: the `type`, `attachment:<type>`, `dead branch: <kind>`
    /// or `older <kind>`.
    pub kind: String,
    pub records: u64,
    pub bytes: u64,
}

/// Result of `session.trim`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrimResult {
    /// Full session id.
    pub session: String,
    /// The transcript's path.
    pub transcript: String,
    /// Nothing was written (a dry run).
    #[serde(default)]
    pub dry_run: bool,
    /// This was an undo.
    #[serde(default)]
    pub undo: bool,
    /// Nothing would change (nothing to drop): the file was left alone.
    #[serde(default)]
    pub unchanged: bool,
    pub bytes_before: u64,
    /// After (for a dry run: the estimate).
    pub bytes_after: u64,
    #[serde(default)]
    pub records_before: u64,
    /// What goes, by kind.
    #[serde(default)]
    pub dropped: Vec<TrimCount>,
    /// `toolUseResult` fields removed from `user` records (`kind`:
    /// `toolUseResult`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_result: Option<TrimCount>,
    /// Kept records re-pointed at their nearest kept ancestor.
    #[serde(default)]
    pub relinked: u64,
    /// Records kept because they hold the other half of a tool pair.
    #[serde(default)]
    pub rescued_for_tool_pairs: u64,
    /// CLI versions the records name.
    #[serde(default)]
    pub versions: Vec<String>,
    /// Those the drop rules were not measured on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unmeasured_versions: Vec<String>,
    /// Bytes of a half-written last line, kept as they are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub half_written_tail: Option<u64>,
    /// Where the original is kept (after a trim), or was restored from
    /// (after an undo).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup: Option<String>,
}

#[cfg(test)]
mod lifecycle_tests {
    use super::Lifecycle;

    #[test]
    fn lifecycles_are_their_wire_names_and_a_new_one_is_kept() {
        for name in [
            "starting",
            "trust",
            "ready",
            "idle",
            "busy",
            "waiting",
            "needs-attention",
            "exited",
            "failed",
            "reaped",
            "discarded",
        ] {
            let l: Lifecycle = serde_json::from_value(serde_json::json!(name)).unwrap();
            assert!(!matches!(l, Lifecycle::Other(_)), "{name}");
            assert_eq!(serde_json::to_value(&l).unwrap(), name);
        }
        let later: Lifecycle = serde_json::from_value(serde_json::json!("hibernating")).unwrap();
        assert_eq!(later, Lifecycle::Other("hibernating".into()));
        assert_eq!(later.to_string(), "hibernating");
        assert!(Lifecycle::Reaped.ended() && !Lifecycle::Idle.ended());
    }
}
