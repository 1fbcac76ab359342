//! Being inside a session: attach/observe, detach, type, resize, focus.
//!
//! After a successful `session.attach` the daemon sends, on the same
//! connection, one `session.resync` (a full redraw, terminal modes included)
//! and then `session.output` notifications as the session writes; see
//! [`crate::stream`]. One connection may attach to several sessions: every
//! notification names its session. Closing the connection detaches it from
//! everything.

use serde::{Deserialize, Serialize};

use crate::ErrorCode;

use super::{Empty, Method, SessionRef, TermSize, Wait};

/// How a client is attached.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttachMode {
    /// Read and write: the client's size counts, and a dead session is
    /// resumed (`claude --resume` in its original cwd).
    #[default]
    Interactive,
    /// Read-only: never resumes, never resizes. The only mode accepted for a
    /// session live elsewhere, when the daemon can follow it at all.
    Observe,
    /// A mode this client does not know.
    #[serde(other)]
    Other,
}

/// `session.attach`: get into a session, whatever state it is in (the
/// decision table of the design brief):
///
/// - `managed` → attach to its PTY;
/// - `elsewhere` / `unknown` → `interactive` fails with
///   `SessionLiveElsewhere` (resuming would split the conversation);
///   `observe` may be accepted;
/// - `dead` → resumed in its original cwd, then attached; failures name what
///   is missing (`CwdMissing`, `TranscriptMissing`, `SpawnFailed` with the
///   reason).
pub struct SessionAttach;

impl Method for SessionAttach {
    const NAME: &'static str = "session.attach";
    type Params = AttachParams;
    type Result = AttachResult;
    const ERRORS: &'static [ErrorCode] = naming_errors!(
        SessionLiveElsewhere,
        CwdMissing,
        SpawnFailed,
        PermissionDenied
    );
    const WAIT: Wait = Wait::Start;
}

/// Params of `session.attach`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttachParams {
    /// Session id or unique prefix.
    pub session: String,
    /// Default `interactive`.
    #[serde(default)]
    pub mode: AttachMode,
    /// The client's terminal size. For `interactive`, the session is resized
    /// to it (the most recent interactive attach or resize wins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<TermSize>,
    /// If resuming a dead session fails, start a fresh session in the same
    /// cwd instead (the result says so in `fresh_instead_of`). Default
    /// `false`: only on the user's explicit request.
    #[serde(default)]
    pub fresh_on_failure: bool,
    /// `observe` of a session running outside ccd: how many earlier
    /// transcript messages to send first (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last: Option<u32>,
    /// Ask for a direct stream: for a session ccd holds, the reply carries
    /// a connection to the session's holder (`SCM_RIGHTS`), attached there
    /// with this `mode` and `size` (the holder's reply, id
    /// [`DIRECT_ATTACH_ID`], is the first line on it), so output and keys
    /// no longer pass through the daemon (see "Direct streams" in
    /// `docs/protocol.md`). Ignored where there is no holder (observing a
    /// session running outside ccd).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub direct: bool,
}

/// The id of the `session.attach` request the daemon sends to the holder on
/// a direct stream's connection before passing it: the client reads the
/// reply to it first.
pub const DIRECT_ATTACH_ID: &str = "attach";

/// Result of `session.attach`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttachResult {
    /// Full id of the attached session (after a fresh start: the new one).
    pub session: String,
    /// The mode granted.
    pub mode: AttachMode,
    /// The session's terminal size now.
    pub size: TermSize,
    /// True if the session was dead and ccd resumed it for this attach.
    #[serde(default)]
    pub resumed: bool,
    /// Set when a resume failed and `fresh_on_failure` started a new session
    /// instead: the original session, its transcript and the failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fresh_instead_of: Option<FreshStart>,
    /// True when the reply carries a direct stream (asked with `direct`):
    /// the stream's notifications come on that connection, not this one.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub direct: bool,
    /// The holder protocol version the session's holder speaks (see "Holder
    /// protocol versions" in `docs/protocol.md`): 0 for a holder started by
    /// a ccd from before holder versions, which the daemon never passes as a
    /// direct stream. Absent from older daemons and for sessions without a
    /// holder (observing a session running outside ccd).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder_protocol: Option<u32>,
}

/// Why an attach landed in a fresh session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FreshStart {
    /// The session that could not be resumed.
    pub session: String,
    /// Its transcript, untouched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript: Option<String>,
    /// Why the resume failed.
    pub reason: String,
}

/// `session.detach`: stop receiving a session's stream. The session keeps
/// running.
pub struct SessionDetach;

impl Method for SessionDetach {
    const NAME: &'static str = "session.detach";
    type Params = SessionRef;
    type Result = DetachResult;
}

/// Result of `session.detach`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DetachResult {
    /// False if this connection was not attached to the session.
    pub detached: bool,
}

/// `session.input`: write bytes to a session's terminal, exactly as a
/// keyboard would (e.g. `"\r"` for Enter, `"\x1b[200~...\x1b[201~"` for a
/// bracketed paste). Works for any session ccd holds, attached or not; a
/// session live elsewhere fails with `SessionLiveElsewhere`, a connection
/// attached in `observe` mode with `PermissionDenied`.
pub struct SessionInput;

impl Method for SessionInput {
    const NAME: &'static str = "session.input";
    type Params = InputParams;
    type Result = InputResult;
    const ERRORS: &'static [ErrorCode] = held_errors!(PermissionDenied);
}

/// Params of `session.input`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputParams {
    /// Session id or unique prefix.
    pub session: String,
    /// Raw bytes (base64 on the wire, like terminal output).
    #[serde(with = "crate::b64")]
    pub data: Vec<u8>,
}

/// Result of `session.input`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputResult {
    /// Bytes queued for the PTY (all of `data`).
    pub written: u64,
}

/// `session.resize`: set a session's terminal size (interactive clients).
pub struct SessionResize;

impl Method for SessionResize {
    const NAME: &'static str = "session.resize";
    type Params = ResizeParams;
    type Result = Empty;
    const ERRORS: &'static [ErrorCode] = held_errors!();
}

/// `session.focus`: whether this client's terminal has the focus (focus
/// reports, `ESC [ I` / `ESC [ O`, read from it). A session counts as
/// focused while at least one connection says so; a connection says it of
/// one session at a time (a later `focused: true` for another session
/// replaces it), and its end, or `focused: false`, takes it back. The
/// notification rules hold back a notification for a focused session
/// unless `notify_when_focused`. Sent by interactive terminal clients
/// (`ccd attach`, the dashboard) on every change; a connection's changes
/// past [`FOCUS_CHANGES_PER_SEC`] a second are refused.
pub struct SessionFocus;

impl Method for SessionFocus {
    const NAME: &'static str = "session.focus";
    type Params = FocusParams;
    type Result = Empty;
}

/// At most this many `session.focus` changes a second from one connection
/// (a burst of as many, then one every `1/N` s); more are refused.
pub const FOCUS_CHANGES_PER_SEC: u32 = 20;

/// Params of `session.focus`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FocusParams {
    /// The full session id the client attached to (the `session` of the
    /// attach's reply).
    pub session: String,
    /// True: the terminal has the focus.
    pub focused: bool,
}

/// Params of `session.resize`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResizeParams {
    /// Session id or unique prefix.
    pub session: String,
    /// Columns (≥ 1).
    pub cols: u16,
    /// Rows (≥ 1).
    pub rows: u16,
}
