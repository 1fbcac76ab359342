//! The daemon→holder startup contract, beside the holder's socket contract
//! ([`super`]): what the daemon hands a new holder process (a
//! [`HolderSpec`], JSON on the stdin of `ccd __holder`), and the metadata it
//! keeps beside each holder's socket (`holders/<id>.json`, a
//! [`HolderMeta`]) so a restarted daemon knows what it adopts.
//!
//! Both outlive a ccd upgrade the way holders do (a holder started by an
//! older daemon is adopted with its metadata): fields are only added, with
//! a default.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Everything `ccd __holder` needs (the daemon converts it to the holder's
/// own configuration).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HolderSpec {
    /// Where the holder listens.
    pub socket: PathBuf,
    /// The program to run (`claude`).
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Its working directory.
    pub cwd: PathBuf,
    /// Initial rows.
    pub rows: u16,
    /// Initial columns.
    pub cols: u16,
    /// `CLAUDE_CONFIG_DIR` for the child, if set.
    pub claude_config_dir: Option<PathBuf>,
    /// Set on top of the holder's environment for the child.
    pub env: Vec<(String, String)>,
    /// Answer the folder trust dialog.
    pub auto_trust: bool,
    /// How long the trust dialog must be still before it is answered.
    pub trust_stable_ms: u64,
    /// The holder's own log file.
    pub log_file: Option<PathBuf>,
    /// The session id ccd expects (`None` for a fork).
    #[serde(default)]
    pub session_id: Option<String>,
}

/// Why a holder was started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// `session.new`.
    New,
    /// A resume (`session.attach` of a dead session).
    Resume,
    /// `session.fork`.
    Fork,
}

/// Kept in `holders/<id>.json` for the life of the holder.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HolderMeta {
    /// The holder's id (its socket is `holders/<id>.sock`).
    pub id: String,
    /// The id ccd expects (`--session-id` for new sessions, the resumed id);
    /// `None` for a fork until the registry tells.
    pub session_id: Option<String>,
    /// A name given at start, if any.
    pub name: Option<String>,
    /// The session's working directory.
    pub cwd: String,
    /// Why it was started.
    pub origin: Origin,
    /// For a fork: the session it was forked from.
    #[serde(default)]
    pub forked_from: Option<String>,
    /// Unix ms.
    pub created_at: i64,
    /// Exempt from idle reaping.
    #[serde(default)]
    pub pinned: bool,
    /// The holder process's pid (set when the daemon starts it): matches
    /// its child's registry entry to it before the first `holder.info`.
    #[serde(default)]
    pub holder_pid: Option<u32>,
}
