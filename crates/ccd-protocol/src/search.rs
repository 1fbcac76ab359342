//! One hit of a content search, as `ccd search --json` prints it and as
//! another machine's `ccd search --json` sends it back over ssh for
//! `ccd search --host` (issue 55). The one definition both ends read;
//! `sessions.search` on the socket will answer with the same rows.

use crate::methods::session::SessionState;
use serde::{Deserialize, Serialize};

/// A session that matched: its best matching message, located and cut
/// into a snippet, and how it ranks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchHit {
    /// The machine (`local` for this one, else the `--host` label).
    pub host: String,
    pub session_id: String,
    /// From the session index, liveness re-validated when searched.
    pub state: SessionState,
    /// The session's folder (its original cwd), when known.
    #[serde(default)]
    pub folder: Option<String>,
    /// The transcript searched, on its machine.
    pub path: String,
    /// The best message's role: `user`, `assistant`, `tool`, `title` or
    /// `summary`.
    pub role: String,
    /// The best message's time (RFC 3339), when known.
    #[serde(default)]
    pub timestamp: Option<String>,
    /// The byte offset of the best message's record in the transcript.
    pub offset: u64,
    pub snippet: SearchSnippet,
    /// How many of the session's messages matched.
    pub matches: u64,
    /// The rank (higher first; the rule is `ccd search --help`'s).
    pub score: f64,
}

/// The text around the first match, exact (not sanitized: a terminal
/// printer sanitizes it, JSON keeps it as it was).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchSnippet {
    pub before: String,
    pub matched: String,
    pub after: String,
}
