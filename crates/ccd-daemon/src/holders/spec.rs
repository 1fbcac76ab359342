//! What the daemon hands a new holder process (JSON on its stdin), and the
//! metadata it keeps beside each holder's socket so a restarted daemon
//! knows what it adopts.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Everything `ccd __holder` needs; converted to a `HolderConfig`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HolderSpec {
    pub socket: PathBuf,
    pub program: PathBuf,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    pub rows: u16,
    pub cols: u16,
    pub claude_config_dir: Option<PathBuf>,
    /// Set on top of the holder's environment for the child.
    pub env: Vec<(String, String)>,
    pub auto_trust: bool,
    pub trust_stable_ms: u64,
    /// The holder's own log file.
    pub log_file: Option<PathBuf>,
    /// The session id ccd expects (`None` for a fork).
    #[serde(default)]
    pub session_id: Option<String>,
}

impl HolderSpec {
    pub fn into_config(self) -> ccd_holder::HolderConfig {
        let mut c = ccd_holder::HolderConfig::new(self.socket, self.program, self.cwd);
        c.args = self.args.into_iter().map(Into::into).collect();
        c.env = self
            .env
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        // The handlers refused out-of-range sizes; a spec from elsewhere is
        // clamped (the holder clamps again).
        c.size = ccd_holder::Size {
            rows: self.rows,
            cols: self.cols,
        }
        .clamped();
        c.claude_config_dir = self.claude_config_dir;
        c.auto_trust = self.auto_trust;
        c.trust_stable = std::time::Duration::from_millis(self.trust_stable_ms);
        c.expected_session_id = self.session_id;
        c
    }
}

/// Why a holder was started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    New,
    Resume,
    Fork,
}

/// Kept in `holders/<id>.json` for the life of the holder.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HolderMeta {
    pub id: String,
    /// The id ccd expects (`--session-id` for new sessions, the resumed id);
    /// `None` for a fork until the registry tells.
    pub session_id: Option<String>,
    pub name: Option<String>,
    pub cwd: String,
    pub origin: Origin,
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
