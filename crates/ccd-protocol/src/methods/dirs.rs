//! The daemon's machine's directories: `dirs.complete`, for a client that
//! asks where a new session starts (a dashboard on another machine
//! completes the path there, as it does here).

use serde::{Deserialize, Serialize};

use crate::ErrorCode;

use super::Method;

/// `dirs.complete`: completes a typed path to a directory on the daemon's
/// machine.
pub struct DirsComplete;

impl Method for DirsComplete {
    const NAME: &'static str = "dirs.complete";
    type Params = CompleteParams;
    type Result = CompleteResult;
    const ERRORS: &'static [ErrorCode] = &[];
}

/// The longest `input` taken (longer is `invalid_params`).
pub const MAX_COMPLETE_INPUT: usize = 4096;

/// The most directory entries read for one completion (so the most
/// `choices`).
pub const MAX_COMPLETE_ENTRIES: usize = 4096;

/// Params of `dirs.complete`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompleteParams {
    /// What was typed: an absolute path, `~`/`~/…` (the daemon's user's
    /// home) or `~name`/`~name/…` (user `name`'s; an unknown user is
    /// `invalid_params`). A relative path is not completed (it would name
    /// a place relative to the daemon's own directory).
    pub input: String,
}

/// Result of `dirs.complete`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompleteResult {
    /// `input` completed: one match taken whole (with a `/`), several
    /// extended to what they share, none left as typed.
    pub input: String,
    /// With several matches, each (sorted, each ending in `/`), to show.
    pub choices: Vec<String>,
}
