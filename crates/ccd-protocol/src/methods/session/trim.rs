//! `session.trim`: shrink a dead session's transcript, or undo it.

use serde::{Deserialize, Serialize};

use crate::ErrorCode;

use crate::methods::{Method, Wait};

/// `session.trim`: shrink a dead session's transcript without changing
/// what Claude Code sends to the model when it resumes it (or, with
/// `undo`, put the original back). Refused (`trim_refused`, file
/// untouched) while the session may be running.
pub struct SessionTrim;

impl Method for SessionTrim {
    const NAME: &'static str = "session.trim";
    type Params = TrimParams;
    type Result = TrimResult;
    const ERRORS: &'static [ErrorCode] = naming_errors!(TrimRefused);
    const WAIT: Wait = Wait::Trim;
}

/// Params of `session.trim`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrimParams {
    /// Session id or unique prefix.
    pub session: String,
    /// Only say what would go.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dry_run: bool,
    /// Also drop `file-history-*` records (loses `/rewind` checkpoints).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub drop_file_history: bool,
    /// Keep only what follows the last compaction boundary.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub before_compact: bool,
    /// Trim despite record types ccd does not know (kept as they are).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub force: bool,
    /// Put the original back (the newest backup).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub undo: bool,
}

/// Records and bytes of one kind.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrimCount {
    /// Record kind: the `type`, `attachment:<type>`, `dead branch: <kind>`
    /// or `older <kind>`.
    pub kind: String,
    pub records: u64,
    pub bytes: u64,
}

/// Result of `session.trim`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrimResult {
    /// Full session id.
    pub session: String,
    /// The transcript's path.
    pub transcript: String,
    /// Nothing was written (a dry run).
    #[serde(default)]
    pub dry_run: bool,
    /// This was an undo.
    #[serde(default)]
    pub undo: bool,
    /// Nothing would change (nothing to drop): the file was left alone.
    #[serde(default)]
    pub unchanged: bool,
    pub bytes_before: u64,
    /// After (for a dry run: the estimate).
    pub bytes_after: u64,
    #[serde(default)]
    pub records_before: u64,
    /// What goes, by kind.
    #[serde(default)]
    pub dropped: Vec<TrimCount>,
    /// `toolUseResult` fields removed from `user` records (`kind`:
    /// `toolUseResult`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_result: Option<TrimCount>,
    /// Kept records re-pointed at their nearest kept ancestor.
    #[serde(default)]
    pub relinked: u64,
    /// Records kept because they hold the other half of a tool pair.
    #[serde(default)]
    pub rescued_for_tool_pairs: u64,
    /// CLI versions the records name.
    #[serde(default)]
    pub versions: Vec<String>,
    /// Those the drop rules were not measured on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unmeasured_versions: Vec<String>,
    /// Bytes of a half-written last line, kept as they are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub half_written_tail: Option<u64>,
    /// Where the original is kept (after a trim), or was restored from
    /// (after an undo).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup: Option<String>,
}
