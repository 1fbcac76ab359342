//! Sessions as things: list, inspect, start, fork, kill, look at the screen.
//!
//! Session state is computed from Claude Code's registry at the moment of
//! each request, never from a cache, so two calls may disagree.

use serde::{Deserialize, Serialize};

use super::{Method, SessionRef, TermSize};

/// Where a session runs, as verified at the moment of the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionState {
    /// Live, in a PTY ccd holds: attach, input, screen all work.
    Managed,
    /// Live in a process ccd does not own (a plain terminal, an IDE).
    /// ccd refuses to resume it; observe or fork instead.
    Elsewhere,
    /// A registry entry exists but liveness cannot be verified (e.g. another
    /// pid namespace). Treated as live: same rules as `elsewhere`.
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

/// One session in a listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionSummary {
    /// Full session id (a UUID).
    pub id: String,
    /// Where it runs now.
    pub state: SessionState,
    /// The session's original working directory, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Claude Code's own status, for live sessions that report one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ActivityStatus>,
    /// What a `waiting` session waits for, e.g. `"permission prompt"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_for: Option<String>,
    /// Process id of the live `claude` process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Display name from the registry (e.g. `"proj1-b7"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Claude Code version that runs (or last wrote) the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// When the live process started, unix milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<u64>,
    /// Last activity (transcript or status change), unix milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<u64>,
    /// The latest prompt text, possibly shortened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_prompt: Option<String>,
    /// Clients attached through ccd (0 unless `managed`).
    #[serde(default)]
    pub attached: u32,
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
    /// Only sessions whose original cwd is this directory (exact match after
    /// normalization).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Only live sessions (`managed`, `elsewhere`, `unknown`). Default
    /// `false`.
    #[serde(default)]
    pub live_only: bool,
    /// At most this many entries; the daemon also caps the reply to fit in
    /// one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

/// Result of `sessions.list`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListResult {
    /// The sessions, most recently active first.
    pub sessions: Vec<SessionSummary>,
    /// True if more sessions matched than were returned.
    #[serde(default)]
    pub truncated: bool,
}

/// `sessions.get`: one session in detail.
pub struct SessionsGet;

impl Method for SessionsGet {
    const NAME: &'static str = "sessions.get";
    type Params = SessionRef;
    type Result = SessionDetail;
}

/// Result of `sessions.get`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionDetail {
    /// The summary, as in `sessions.list`.
    pub session: SessionSummary,
    /// Path of the transcript file, if found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript: Option<String>,
    /// Context in use after the last turn, if the transcript tells.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<ContextUsage>,
}

/// Tokens of context in use after the last assistant turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextUsage {
    /// Input + cache-creation + cache-read tokens of the last assistant
    /// record.
    pub tokens: u64,
    /// The context window assumed for the model, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<u64>,
    /// True when `window` is a configured or default guess rather than a
    /// figure reported by Claude Code.
    #[serde(default)]
    pub window_assumed: bool,
    /// The model of the last assistant record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// `session.new`: start a fresh `claude` under a PTY ccd holds.
pub struct SessionNew;

impl Method for SessionNew {
    const NAME: &'static str = "session.new";
    type Params = NewParams;
    type Result = NewResult;
}

/// Params of `session.new`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewParams {
    /// Absolute working directory for the session.
    pub cwd: String,
    /// Extra arguments for `claude` (e.g. `["--model", "opus"]`). ccd adds
    /// `--session-id` itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Initial terminal size; default 80x24 (or the first attacher's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<TermSize>,
    /// If Claude Code shows its folder trust dialog, answer "trust" on the
    /// user's behalf. Default `false`: the dialog is left for the user, and
    /// the session stays in `starting` until someone attaches and answers.
    #[serde(default)]
    pub trust_folder: bool,
}

/// Result of `session.new` and `session.fork`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewResult {
    /// The new session's id.
    pub session: String,
    /// The `claude` process id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// The session's working directory.
    pub cwd: String,
    /// For a fork: the session it was forked from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<String>,
}

/// `session.fork`: branch a session (`claude --resume <id> --fork-session`
/// in its original cwd). Safe whatever the session's state, including live
/// elsewhere; the original is untouched.
pub struct SessionFork;

impl Method for SessionFork {
    const NAME: &'static str = "session.fork";
    type Params = ForkParams;
    type Result = NewResult;
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
}

/// How to end a session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KillSignal {
    /// SIGHUP, as when a terminal closes: Claude Code exits cleanly.
    #[default]
    Hup,
    /// SIGTERM.
    Term,
    /// SIGKILL: leaves Claude Code's registry entry behind.
    Kill,
}

/// Params of `session.kill`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KillParams {
    /// Session id or unique prefix.
    pub session: String,
    /// Default `hup`.
    #[serde(default)]
    pub signal: KillSignal,
}

/// Result of `session.kill`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct KillResult {
    /// True if a signal was sent; false if the session had already exited.
    /// Attached clients get `session.exited` when it is gone.
    pub signalled: bool,
}

/// `session.screen`: the current screen of a session ccd holds, from its
/// screen model (not the raw stream).
pub struct SessionScreen;

impl Method for SessionScreen {
    const NAME: &'static str = "session.screen";
    type Params = ScreenParams;
    type Result = ScreenResult;
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
