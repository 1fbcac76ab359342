//! Starting and stopping sessions: `session.new`, `session.fork`,
//! `session.kill`, the `session.progress` notification sent while one
//! starts, and `session.pin` (kept from idle reaping).

use serde::{Deserialize, Serialize};

use crate::ErrorCode;

use super::{yes, Lifecycle};
use crate::methods::{Method, NotificationKind, TermSize, Wait};

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

/// `session.progress`: a lifecycle step of a session being started
/// (`session.new` / `session.fork` with `wait`, and the resume of a
/// `session.attach`), sent before the reply.
pub struct SessionProgress;

impl NotificationKind for SessionProgress {
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
    /// lifecycle ([`ResumeStep`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<ResumeStep>,
    /// With `step` `resuming`: the session's original cwd.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// With `step` `stopping`: the other process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
}

open_enum! {
    /// A step of a resume beyond the lifecycle ([`Progress::step`]).
    pub enum ResumeStep {
        /// Starting `claude --resume` in the session's original cwd (`cwd`).
        Resuming = "resuming",
        /// Ready; making sure it stays up.
        Settling = "settling",
        /// Another process (`pid`) started the same session meanwhile: ccd
        /// stops its own copy and will refuse.
        Stopping = "stopping";
        /// A step added by a later daemon, kept as sent.
        Other(String),
    }
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
