//! Events: what happens to sessions, pushed to subscribers.
//!
//! After `events.subscribe` the connection receives `event` notifications.
//! One struct carries every event type (fields that do not apply are
//! absent); clients skip types they do not know.

use serde::{Deserialize, Serialize};

use super::session::{Lifecycle, SessionState};
use super::{Method, NotificationKind};

/// `events.subscribe`: start receiving `event` notifications on this
/// connection (until it closes).
pub struct EventsSubscribe;

impl Method for EventsSubscribe {
    const NAME: &'static str = "events.subscribe";
    type Params = SubscribeParams;
    type Result = SubscribeResult;
}

/// Params of `events.subscribe`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubscribeParams {
    /// Only these event types (default: all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub types: Option<Vec<String>>,
}

/// Result of `events.subscribe`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubscribeResult {
    pub subscribed: bool,
    /// Every process that may be running a session at the moment of the
    /// subscription, as the events that follow change it: folding
    /// `session.appeared`, `session.id_changed` and `session.disappeared`
    /// into this gives the writers `sessions.list` shows (absent from
    /// daemons before it).
    #[serde(default)]
    pub writers: Vec<LiveWriter>,
}

/// One process that may be writing a session (a registry entry judged
/// `live` or `unknown`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveWriter {
    pub session: String,
    pub pid: u32,
    /// `live` or `unknown`.
    pub state: WriterState,
    /// The holder, when ccd runs this process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder: Option<String>,
}

/// `event`: something happened to a session.
pub struct EventNotification;

impl NotificationKind for EventNotification {
    const NAME: &'static str = "event";
    type Params = Event;
}

open_enum! {
    /// An event's `type` (see [`Event`]), on the wire as its name
    /// (`session.appeared`, ...).
    pub enum EventKind {
        Appeared = "session.appeared",
        Disappeared = "session.disappeared",
        IdChanged = "session.id_changed",
        Writers = "session.writers",
        Status = "session.status",
        Attention = "session.attention",
        AttentionCleared = "session.attention_cleared",
        Lifecycle = "session.lifecycle",
        Context = "session.context",
        Exited = "session.exited",
        Reaped = "session.reaped",
        Focus = "session.focus",
        Restored = "session.restored",
        RestoreReport = "sessions.restore_report",
        Lagged = "events.lagged";
        /// A type added by a later daemon, kept as named (a client shows or
        /// skips it; this daemon never sends one).
        Other(String),
    }
}

impl EventKind {
    /// Every kind this protocol version sends.
    pub const ALL: &'static [EventKind] = EventKind::KNOWN;
}

open_enum! {
    /// Whether a process that may write a session runs (`state` of
    /// [`LiveWriter`] and of [`Event`]): the public [`SessionState`]'s
    /// names, with a later daemon's value kept as sent.
    pub enum WriterState {
        /// The process runs (its start time matches the registry's).
        Live = "live",
        /// Its liveness cannot be verified; treated as live.
        Unknown = "unknown",
        /// It no longer runs.
        Dead = "dead";
        /// A value added by a later daemon, kept as sent.
        Other(String),
    }
}

impl From<SessionState> for WriterState {
    fn from(s: SessionState) -> Self {
        match s {
            SessionState::Live => WriterState::Live,
            SessionState::Unknown => WriterState::Unknown,
            SessionState::Dead => WriterState::Dead,
            SessionState::Archived => WriterState::Other("archived".into()),
            SessionState::Other => WriterState::Other("other".into()),
        }
    }
}

impl WriterState {
    /// The same state as a [`SessionState`] (a later value: `Other`).
    pub fn session_state(&self) -> SessionState {
        match self {
            WriterState::Live => SessionState::Live,
            WriterState::Unknown => SessionState::Unknown,
            WriterState::Dead => SessionState::Dead,
            WriterState::Other(_) => SessionState::Other,
        }
    }
}

/// One event. `type` is one of:
/// - `session.appeared` / `session.disappeared`: a process started or
///   stopped holding a session (any session on the machine, ccd's or not);
/// - `session.id_changed`: a running process now writes another
///   conversation (`from` → `to`, `reason` `clear` / `resume` /
///   `unknown`; `holder` when ccd runs it): `from` is no longer written by
///   it, `to` is (`session` is `to`);
/// - `session.status`: Claude Code's status changed (`idle`, `busy`,
///   `waiting`); `previous` says from what;
/// - `session.writers`: a second process writes a conversation (someone
///   resumed a running session by hand): `pid` is the newcomer, `pids`
///   every writer now, `holder` the one ccd runs if any; two writers
///   split the conversation;
/// - `session.lifecycle`: ccd's lifecycle of a session it holds changed;
/// - `session.attention`: the session needs a person (`reason`); for a
///   tool permission dialog of a held session, `reason` is `permission`,
///   with `tool`, `detail` and `options`, once per dialog;
/// - `session.attention_cleared`: that dialog went (answered either way);
/// - `session.context`: the context in use changed;
/// - `session.exited`: a session ccd held ended (`exit_code` /
///   `exit_signal`);
/// - `session.reaped`: ccd stopped a session it held to free the machine
///   (it stays resumable): `reason` `memory_budget` (the held sessions
///   were over `memory_budget`) or `idle` (idle longer than
///   `reap_idle_minutes`), `freed_bytes` the session's memory when
///   stopped;
/// - `session.focus`: whether an interactive client's terminal attached
///   to the session has the focus changed (`focused`: at least one has it;
///   from the clients' `session.focus`, a client that leaves counting as
///   not focused);
/// - `session.restored`: a lost session brought back (`held: true`,
///   `holder`) or not (`held: false`, `status: lost`, `reason`), by
///   `sessions.restore` or `restore = "auto"`;
/// - `sessions.restore_report`: a restore ended (no `session`): `reason`
///   `N restored, M not restored`, `missed` M;
/// - `events.lagged`: this subscriber fell behind and `missed` events were
///   dropped (re-list sessions to resync).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    #[serde(rename = "type")]
    pub kind: EventKind,
    /// Full session id (absent for `events.lagged`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Unix milliseconds when the daemon saw it.
    pub at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The session's title (Claude Code's summary of the conversation, or
    /// the name it was given), when the daemon knows one: on
    /// `session.attention` and `session.exited` (absent from daemons
    /// before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// `live` / `unknown` / `dead`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<WriterState>,
    /// Whether ccd holds the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<bool>,
    /// The holder of the process, when ccd runs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder: Option<String>,
    /// `session.id_changed`: the id the process wrote before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// `session.id_changed`: the id it writes now (= `session`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// `session.writers`: every process writing the session now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pids: Option<Vec<u32>>,
    /// New status (`session.status`: Claude Code's `idle`, `busy`,
    /// `waiting`, or whatever it wrote) or lifecycle (`session.lifecycle`);
    /// also on `session.appeared` and `session.id_changed`. One vocabulary,
    /// [`Lifecycle`]'s, holds both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Lifecycle>,
    /// What `status` was before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<Lifecycle>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_for: Option<String>,
    /// Why attention is needed (`session.attention`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `session.attention` for a permission dialog: what asks (the
    /// dialog's heading, e.g. "Bash command", else its kind).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// `session.attention` for a permission dialog: the command or the
    /// path, as shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// `session.attention` for a permission dialog: the option labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<String>>,
    /// `session.attention` for a permission dialog: the prompt's id, to
    /// name in `session.respond` (answers only this prompt).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_percent: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_signal: Option<i32>,
    /// `session.reaped`: the memory the stopped session held, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub freed_bytes: Option<u64>,
    /// `session.focus`: whether an attached terminal has the focus now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub focused: Option<bool>,
    /// `events.lagged`: how many events were dropped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missed: Option<u64>,
}

impl Event {
    /// An event of `kind` about `session`, at `at`, with no other field.
    pub fn new(kind: EventKind, session: Option<String>, at: i64) -> Self {
        Self {
            kind,
            session,
            at,
            pid: None,
            cwd: None,
            title: None,
            state: None,
            held: None,
            holder: None,
            from: None,
            to: None,
            pids: None,
            status: None,
            previous: None,
            waiting_for: None,
            reason: None,
            tool: None,
            detail: None,
            options: None,
            prompt: None,
            context_tokens: None,
            context_percent: None,
            exit_code: None,
            exit_signal: None,
            freed_bytes: None,
            focused: None,
            missed: None,
        }
    }
}

#[cfg(test)]
mod kind_tests {
    use super::*;

    #[test]
    fn kinds_are_their_wire_names_and_a_new_one_is_other() {
        for k in EventKind::ALL {
            let v = serde_json::to_value(k).unwrap();
            assert_eq!(v, k.as_str());
            assert_eq!(&serde_json::from_value::<EventKind>(v).unwrap(), k);
        }
        let later: EventKind =
            serde_json::from_value(serde_json::json!("session.teleported")).unwrap();
        assert_eq!(later, EventKind::Other("session.teleported".into()));
        assert_eq!(serde_json::to_value(&later).unwrap(), "session.teleported");
    }
}
