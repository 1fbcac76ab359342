//! `sessions.restore`: bringing back the sessions ccd held when the
//! machine went down (lost, not ended), each resumed in its folder with
//! the flags it ran with; and the restore record those come from
//! ([`HeldRecord`], `<state dir>/held.json`), which the daemon writes and
//! `ccd doctor` reads.

use serde::{Deserialize, Serialize};

use crate::methods::{Method, Wait};
use crate::ErrorCode;

/// `sessions.restore`.
pub struct SessionsRestore;

impl Method for SessionsRestore {
    const NAME: &'static str = "sessions.restore";
    type Params = RestoreParams;
    type Result = RestoreResult;
    const ERRORS: &'static [ErrorCode] =
        &[ErrorCode::SessionNotFound, ErrorCode::AmbiguousSessionId];
    const WAIT: Wait = Wait::Start;
}

/// Params of `sessions.restore`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestoreParams {
    /// Lost sessions to bring back (full ids or unique prefixes); every
    /// lost session when empty.
    #[serde(default)]
    pub sessions: Vec<String>,
}

/// One lost session brought back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Restored {
    pub session: String,
    /// Its new holder.
    pub holder: String,
    pub cwd: String,
    /// The arguments claude was resumed with.
    pub args: Vec<String>,
}

/// One lost session that did not come back, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotRestored {
    pub session: String,
    pub cwd: String,
    /// The error code of the resume (`cwd_missing`, `transcript_missing`,
    /// `session_live_elsewhere`, `spawn_failed`, …).
    pub code: String,
    pub reason: String,
    /// Whether it stays listed as lost (a later `ccd restore` may work);
    /// `false` when its folder or transcript is gone.
    pub kept: bool,
}

/// Result of `sessions.restore`: one report of what came back and what
/// did not.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestoreResult {
    pub restored: Vec<Restored>,
    pub failed: Vec<NotRestored>,
}

/// The record's format version.
pub const RECORD_VERSION: u32 = 1;

/// What ccd holds, kept durably in the state dir (`held.json`) so that a
/// daemon started after a reboot knows which sessions were lost.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldRecord {
    pub version: u32,
    /// The machine's boot id when written (`ccd_os::boot`).
    pub boot_id: Option<String>,
    /// Sessions held when written.
    #[serde(default)]
    pub held: Vec<RecordEntry>,
    /// Sessions lost (found at a daemon start, not restored yet).
    #[serde(default)]
    pub lost: Vec<RecordEntry>,
}

/// One session in the record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordEntry {
    /// Its holder when held (`h…`).
    pub holder: String,
    /// The conversation it writes now (follows `/clear` and in-TUI
    /// resumes).
    pub session: String,
    /// The folder it was started in.
    pub cwd: String,
    /// The claude arguments ccd started it with (`--session-id`,
    /// `--resume` and `--fork-session` with their values included: a
    /// restore drops them).
    #[serde(default)]
    pub args: Vec<String>,
    /// The permission mode as last seen (`default`, `acceptEdits`,
    /// `plan`, `bypassPermissions`, `auto`).
    #[serde(default)]
    pub permission_mode: Option<String>,
    /// The model asked for (`--model`).
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub pinned: bool,
    /// `new`, `resume` or `fork`.
    #[serde(default)]
    pub origin: String,
    /// Unix ms.
    #[serde(default)]
    pub created_at: i64,
}
