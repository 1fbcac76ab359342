//! Typed `data` of the error codes whose `data` a client reads (the `data`
//! column of the error table in `docs/protocol.md`).
//!
//! Read one with [`RpcError::data_as`](crate::RpcError::data_as); build one
//! with `RpcError::new(code, message).with_data(serde_json::to_value(d)?)`.
//! As for results, members may be added: readers ignore those they do not
//! know, and every member a daemon may leave out is optional here.

use serde::{Deserialize, Serialize};

use crate::methods::session::SessionState;
use crate::RpcError;

/// `data` of `session_live_elsewhere` (-32005): the process that holds
/// the session outside ccd.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveElsewhereData {
    /// Full session id.
    pub session: String,
    /// `live`, or `unknown` when its liveness cannot be verified.
    pub state: SessionState,
    /// The process holding it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Its working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// RFC 3339: since when it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// The registry's `kind` (`interactive`, `bg`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// True when that process started the session while ccd was resuming
    /// it (ccd stopped its own copy).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub started_meanwhile: bool,
}

/// `data` of `spawn_failed` (-32009): why `claude` did not start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpawnFailedData {
    /// Why, in a few words.
    pub reason: String,
    /// Exit status of `claude`, if it exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Signal that ended `claude`, if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// The screen's rows when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screen: Option<Vec<String>>,
    /// A failed resume: the session that was resumed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// A failed resume: the session's original cwd.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// A failed resume: the session's transcript (untouched).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript: Option<String>,
    /// A failed resume: the transcript's size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript_bytes: Option<u64>,
}

/// `data` of `not_at_prompt` (-32008): what the screen shows instead.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotAtPromptData {
    /// Full session id.
    pub session: String,
    /// What the screen shows (as in `session.screen`'s `shows`).
    pub shows: String,
    /// The screen's rows.
    pub screen: Vec<String>,
}

/// The `screen` member that the `data` of several codes carries
/// (`not_at_prompt`, `spawn_failed`): for a client that shows the screen
/// of whatever failed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScreenData {
    /// The screen's rows, if the error carries them.
    #[serde(default)]
    pub screen: Option<Vec<String>>,
}

/// `data` of `session_not_found`: the session as the request named it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionData {
    /// The session (as given, or its full id).
    pub session: String,
}

/// `data` of `ambiguous_session_id`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AmbiguousData {
    /// The prefix as given.
    pub session: String,
    /// Ids it matches (at most 20).
    pub candidates: Vec<String>,
}

/// `data` of `cwd_missing`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CwdMissingData {
    /// The session whose cwd it is (absent for `session.new`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The directory (absent when the transcript records none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The session's transcript, untouched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript: Option<String>,
}

/// `data` of `transcript_missing`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TranscriptMissingData {
    /// The session.
    pub session: String,
    /// The transcript (empty, or gone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript: Option<String>,
    /// A registry entry naming the session that has no transcript.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry_entry: Option<String>,
}

/// `data` of `session_not_running`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotRunningData {
    /// The session.
    pub session: String,
    /// The process ccd holds that wrote it moved on to this conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<crate::methods::session::Superseded>,
}

/// `data` of `prompt_not_shown`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptNotShownData {
    /// The session.
    pub session: String,
    /// What the screen shows instead (`permission_dialog`: another one).
    pub shows: String,
    /// The prompt the request named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
    /// The prompt on screen now, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
}

/// Why `session.trim` changed nothing (`data.reason` of `trim_refused`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TrimRefusal {
    /// The session is live or its liveness is unknown (or ccd runs it).
    Live,
    /// A process wrote the transcript, or the session started, while it
    /// was being trimmed: the original stays (or was put back).
    WriterAppeared,
    /// Record types (listed in `types`) or shapes ccd does not know.
    FormatDrift,
    /// A line longer than the trim reads.
    LineTooLong,
    /// Undo: no backup of this session.
    NoBackup,
    /// Undo: the transcript changed since the trim.
    ChangedSinceTrim,
    /// A reason this client does not know.
    #[serde(other)]
    Other,
}

/// `data` of `trim_refused`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrimRefusedData {
    /// The session.
    pub session: String,
    /// Why.
    pub reason: TrimRefusal,
    /// The transcript (untouched).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript: Option<String>,
    /// With `format_drift`: the unknown record types and how many of each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub types: Vec<crate::methods::session::TrimCount>,
}

open_enum! {
    /// `data.reason` of a refusal over a cap ([`CapRefusedData`]).
    pub enum CapReason {
        /// Too many connections at once.
        TooManyConnections = "too_many_connections";
        /// A reason a later peer adds, kept as sent.
        Other(String),
    }
}

/// `data` of a refusal over a connection cap (`internal_error`, -32603,
/// the message saying which cap and what to do): the daemon's cap on its
/// connections (a reply with `id: null`, then the socket closes), a
/// holder's on its connections or on those besides the daemon's, and a
/// direct stream the holder did not take (`session.attach`'s error, which
/// adds `session` and `holder`). A client matches on this, not on the
/// message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapRefusedData {
    /// Why ([`CapReason::TooManyConnections`]).
    pub reason: CapReason,
    /// The cap that was reached.
    pub limit: u64,
    /// A refused direct stream: its session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// A refused direct stream: the holder that refused it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder: Option<String>,
}

impl CapRefusedData {
    /// Too many connections: at most `limit` are served.
    pub fn connections(limit: usize) -> Self {
        CapRefusedData {
            reason: CapReason::TooManyConnections,
            limit: u64::try_from(limit).unwrap_or(u64::MAX),
            session: None,
            holder: None,
        }
    }

    /// The `internal_error` refusal with `message` and this as its `data`.
    pub fn into_error(self, message: impl Into<String>) -> RpcError {
        let data = serde_json::to_value(&self).unwrap_or(serde_json::Value::Null);
        RpcError::internal(message).with_data(data)
    }

    /// `e`'s data when `e` is a refusal over a connection cap.
    pub fn of_refusal(e: &RpcError) -> Option<CapRefusedData> {
        e.data_as::<CapRefusedData>()
            .filter(|d| d.reason == CapReason::TooManyConnections)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;
    use serde_json::json;

    #[test]
    fn documented_shapes_read() {
        let e = RpcError::new(ErrorCode::SessionLiveElsewhere, "x").with_data(json!({
            "session": "9b1d", "state": "live", "pid": 3011, "cwd": "/p",
            "since": "2026-11-29T09:13:20.000Z", "kind": "interactive", "extra": 1
        }));
        let d: LiveElsewhereData = e.data_as().expect("live elsewhere");
        assert_eq!(d.pid, Some(3011));
        assert!(!d.started_meanwhile);
        let e = RpcError::new(ErrorCode::SpawnFailed, "x")
            .with_data(json!({"reason": "r", "screen": null, "transcript": "/t"}));
        let d: SpawnFailedData = e.data_as().expect("spawn failed");
        assert_eq!((d.screen, d.transcript.as_deref()), (None, Some("/t")));
        let s: ScreenData = e.data_as().expect("screen");
        assert_eq!(s.screen, None);
        assert!(RpcError::new(ErrorCode::SpawnFailed, "x")
            .data_as::<ScreenData>()
            .is_none());
    }
}
