//! `session.screen`: the current screen of a session ccd holds.

use serde::{Deserialize, Serialize};

use crate::ErrorCode;

use super::yes;
use crate::methods::{Method, TermSize};

/// `session.screen`: the current screen of a session ccd holds, from its
/// screen model (not the raw stream).
pub struct SessionScreen;

impl Method for SessionScreen {
    const NAME: &'static str = "session.screen";
    type Params = ScreenParams;
    type Result = ScreenResult;
    const ERRORS: &'static [ErrorCode] = held_errors!();
}

/// Which representation `session.screen` returns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScreenFormat {
    /// `lines`: the visible rows as plain text, trailing spaces trimmed.
    #[default]
    Text,
    /// `data`: base64 bytes that redraw the screen with colours and modes,
    /// as in `session.resync`.
    Ansi,
}

/// Params of `session.screen`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScreenParams {
    /// Session id or unique prefix.
    pub session: String,
    /// Default `text`.
    #[serde(default)]
    pub format: ScreenFormat,
}

/// Cursor position, 0-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cursor {
    /// Row, 0 = top.
    pub row: u16,
    /// Column, 0 = left.
    pub col: u16,
    /// False if the application hid the cursor.
    #[serde(default = "yes")]
    pub visible: bool,
}

/// Result of `session.screen`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScreenResult {
    /// Full session id.
    pub session: String,
    /// Screen size.
    pub size: TermSize,
    /// Cursor position.
    pub cursor: Cursor,
    /// `format: text`: one string per row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines: Option<Vec<String>>,
    /// `format: ansi`: redraw bytes (base64 on the wire).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::b64::option"
    )]
    pub data: Option<Vec<u8>>,
    /// What the screen shows, as classified by the daemon (`"prompt"`,
    /// `"busy"`, `"trust_dialog"`, `"permission_prompt"`, ...); free-form,
    /// for display and scripting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shows: Option<String>,
}
