//! `session.tail`: the last items of a session's conversation, read from
//! its transcript (what a dashboard previews for a session it cannot show
//! a screen of, on this machine or another).

use serde::{Deserialize, Serialize};

use crate::methods::Method;
use crate::stream::TranscriptItems;
use crate::ErrorCode;

/// `session.tail`: the conversation's last items, one line each, as
/// `session.transcript` carries them.
pub struct SessionTail;

impl Method for SessionTail {
    const NAME: &'static str = "session.tail";
    type Params = TailParams;
    type Result = TranscriptItems;
    const ERRORS: &'static [ErrorCode] = naming_errors!();
}

/// The most items one `session.tail` returns.
pub const MAX_TAIL_ITEMS: u32 = 500;
/// How many items `session.tail` returns when `items` is not given.
pub const DEFAULT_TAIL_ITEMS: u32 = 60;

/// Params of `session.tail`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TailParams {
    /// Session id, unique prefix, or name.
    pub session: String,
    /// How many of the last items (default [`DEFAULT_TAIL_ITEMS`], at most
    /// [`MAX_TAIL_ITEMS`]; more is cut to it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<u32>,
}

impl TailParams {
    /// The number of items asked, within the bound.
    pub fn count(&self) -> usize {
        self.items.unwrap_or(DEFAULT_TAIL_ITEMS).min(MAX_TAIL_ITEMS) as usize
    }
}
