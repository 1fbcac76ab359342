//! What a session is — [`SessionInfo`] and its parts (state, activity,
//! the lifecycle of one ccd holds, writers, cost) — and the methods that
//! look at sessions: `sessions.list`, `sessions.get`, `sessions.costs`.

use serde::{Deserialize, Serialize};

use crate::ErrorCode;

use crate::methods::{Method, SessionRef};

/// The permission mode vocabulary (`OwnedInfo::permission_mode`), the
/// holder's (`holder.info`) type.
pub use crate::holder::screen::PermissionMode;

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
    /// Moved out of Claude Code's folder by `ccd archive` (listed by `ccd ls`
    /// from ccd's state dir); attaching puts it back and resumes it.
    Archived,
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

open_enum! {
    /// ccd's lifecycle of a session it holds, on the wire as its name
    /// (`starting`, `trust`, `ready`; then Claude Code's status `idle`,
    /// `busy`, `waiting` once ready; `needs-attention`; and how it ended:
    /// `exited`, `failed`, `reaped`, `discarded`; `lost`: held when the
    /// machine went down, restorable with `sessions.restore`).
    pub enum Lifecycle {
        Starting = "starting",
        Trust = "trust",
        Ready = "ready",
        Idle = "idle",
        Busy = "busy",
        Waiting = "waiting",
        NeedsAttention = "needs-attention",
        Exited = "exited",
        Failed = "failed",
        Reaped = "reaped",
        Discarded = "discarded",
        Lost = "lost";
        /// A name this version does not know (a later daemon's state, or a
        /// status Claude Code added), kept as named.
        Other(String),
    }
}

impl Lifecycle {
    /// The session's process has ended (`exited`, `failed`, `reaped`,
    /// `discarded`, `lost`).
    pub fn ended(&self) -> bool {
        matches!(
            self,
            Lifecycle::Exited
                | Lifecycle::Failed
                | Lifecycle::Reaped
                | Lifecycle::Discarded
                | Lifecycle::Lost
        )
    }
}

/// What ccd knows of a session it holds in a PTY.
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
    /// The permission mode its footer showed last (`default`,
    /// `acceptEdits`, `plan`, `auto`, `bypassPermissions`, `dontAsk`,
    /// Claude Code's names for `--permission-mode`; `unknown` for a mode
    /// ccd cannot name), Shift-Tab changes included; absent until read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_mode: Option<PermissionMode>,
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
    /// What the conversation cost in tokens and dollars, read from its
    /// transcripts (its subagents' included); absent when it has no usage
    /// yet, when the list asked for no costs, or from a daemon that does
    /// not count it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<SessionUsage>,
}

/// A conversation's tokens and dollars (issue 56): each assistant
/// message's usage counted once, priced with ccd's dated price table and
/// the config's `[prices]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Cache writes.
    pub cache_creation_tokens: u64,
    pub cache_read_tokens: u64,
    /// The four added.
    pub total_tokens: u64,
    /// US dollars for the models the price table names.
    pub cost_usd: f64,
    /// Models used.
    #[serde(default)]
    pub models: Vec<String>,
    /// Models the price table does not name: their tokens add no dollars,
    /// so `cost_usd` is a lower bound.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unpriced: Vec<String>,
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
