//! Typed params and results, one module per concern.
//!
//! Each method is a zero-sized marker type implementing [`Method`], which
//! ties its wire name to its params and result types; each server-sent
//! notification implements [`NotificationKind`]. There is deliberately no
//! enum of all methods: the daemon dispatches on [`Method::NAME`] and each
//! handler decodes its own params with [`crate::parse_params`].
//!
//! Compatibility rules for every type here: new optional fields may be added
//! at any time; readers ignore fields they do not know; enums a client reads
//! carry an `Other` variant for values added later.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

pub mod attach;
pub mod daemon;
pub mod events;
pub mod session;

/// A request/response method.
pub trait Method {
    /// The wire name, e.g. `"sessions.list"`.
    const NAME: &'static str;
    /// The `params` object.
    type Params: Serialize + DeserializeOwned;
    /// The `result` value.
    type Result: Serialize + DeserializeOwned;
}

/// A notification sent by the daemon (no id, no reply).
pub trait NotificationKind {
    /// The wire name, e.g. `"session.output"`.
    const NAME: &'static str;
    /// The `params` object.
    type Params: Serialize + DeserializeOwned;
}

/// Every method of this protocol version (for `method not found` checks and
/// documentation tests).
pub const ALL_METHODS: &[&str] = &[
    daemon::Hello::NAME,
    daemon::DaemonStatus::NAME,
    daemon::DaemonStop::NAME,
    session::SessionsList::NAME,
    session::SessionsGet::NAME,
    session::SessionNew::NAME,
    session::SessionFork::NAME,
    session::SessionKill::NAME,
    session::SessionScreen::NAME,
    attach::SessionAttach::NAME,
    attach::SessionDetach::NAME,
    attach::SessionInput::NAME,
    attach::SessionResize::NAME,
    session::SessionSend::NAME,
    session::SessionPin::NAME,
    events::EventsSubscribe::NAME,
];

/// Every notification the daemon sends in this protocol version.
pub const ALL_NOTIFICATIONS: &[&str] = &[
    crate::stream::SessionOutput::NAME,
    crate::stream::SessionResync::NAME,
    crate::stream::SessionExited::NAME,
    session::SessionProgress::NAME,
    crate::stream::SessionTranscript::NAME,
    events::EventNotification::NAME,
];

/// True if `name` is a method of this protocol version.
pub fn is_known_method(name: &str) -> bool {
    ALL_METHODS.contains(&name)
}

/// An empty object: params of methods that take none (absent params decode
/// to it too), and results that carry nothing. Unknown fields are ignored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Empty {}

/// Params naming one session: a full session id or a unique prefix of one
/// (ambiguous prefixes fail with `AmbiguousSessionId`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionRef {
    /// Session id or unique id prefix.
    pub session: String,
}

/// Terminal size in character cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TermSize {
    /// Columns (≥ 1).
    pub cols: u16,
    /// Rows (≥ 1).
    pub rows: u16,
}
