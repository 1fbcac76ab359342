//! Typing into a session ccd holds: `session.send` (a prompt) and
//! `session.respond` (the answer to a permission prompt), with the bound on
//! typed text.

use serde::{Deserialize, Serialize};

use crate::ErrorCode;

use crate::methods::{Method, Wait};

/// `session.send`: type `text` into a session ccd holds as a prompt and
/// submit it. Refused with `not_at_prompt` while the screen does not show
/// Claude Code's prompt (a dialog, a running turn), unless `force`.
pub struct SessionSend;

impl Method for SessionSend {
    const NAME: &'static str = "session.send";
    type Params = SendParams;
    type Result = SendResult;
    const ERRORS: &'static [ErrorCode] = held_errors!(NotAtPrompt);
    const WAIT: Wait = Wait::Slow;
}

/// The most UTF-8 bytes of text `session.send` (`text`) and
/// `session.respond` (`message`) type. A prompt is pasted in one piece;
/// 256 KiB is about 4,000 lines of code, and keeps the holder's `input`
/// line (base64) well under its 1 MiB frame bound. Longer text is refused
/// before anything is read or typed ([`TextTooLong`]).
pub const MAX_TYPED_TEXT: usize = 256 * 1024;

/// Text over [`MAX_TYPED_TEXT`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error, Serialize)]
#[error("the {field} is {bytes} bytes; at most {max_bytes} bytes (256 KiB) are typed, so nothing was typed")]
pub struct TextTooLong {
    /// Which param: `text` or `message`.
    pub field: &'static str,
    /// Its length in UTF-8 bytes.
    pub bytes: usize,
    /// [`MAX_TYPED_TEXT`].
    pub max_bytes: usize,
}

impl TextTooLong {
    /// `Err` when `text` (the param `field`) is over [`MAX_TYPED_TEXT`].
    pub fn check(field: &'static str, text: &str) -> Result<(), TextTooLong> {
        if text.len() > MAX_TYPED_TEXT {
            Err(TextTooLong {
                field,
                bytes: text.len(),
                max_bytes: MAX_TYPED_TEXT,
            })
        } else {
            Ok(())
        }
    }
}

/// Why a text was not typed at all (`-32602`, before anything is read or
/// typed), with `data` = this.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextRefused {
    /// Which param: `text` or `message`.
    pub field: String,
    /// What is wrong with it.
    pub reason: RefusedReason,
    /// Escape sequences and controls removed before it was judged (absent
    /// when none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub removed: u64,
}

/// [`TextRefused`]'s reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefusedReason {
    /// Nothing but white space, line breaks and controls: nothing to submit.
    Empty,
    /// It starts with `!`: Claude Code would run it as a shell command
    /// (bash mode) at once, without a model turn or a permission prompt.
    /// `session.send` takes it with `shell: true`.
    Shell,
    /// It starts with `/` (past blanks) where words were asked for
    /// (`literal`, a deny `message`): Claude Code would run a slash command.
    Command,
}

impl std::fmt::Display for TextRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let field = &self.field;
        match self.reason {
            RefusedReason::Empty if self.removed > 0 => write!(
                f,
                "the {field} holds only white space, line breaks, escape sequences and control characters ({} removed): nothing to submit; nothing was typed",
                self.removed
            ),
            RefusedReason::Empty => write!(
                f,
                "the {field} is empty or only white space and line breaks: nothing to submit; nothing was typed"
            ),
            RefusedReason::Shell => write!(
                f,
                "the {field} starts with '!', which Claude Code runs at once as a shell command (bash mode: no model turn, no permission prompt); nothing was typed. To run it, ask for it (session.send's shell: true, `ccd send --shell`); to send it as words, use literal: true (`ccd send --literal`)"
            ),
            RefusedReason::Command => write!(
                f,
                "the {field} starts with '/', which Claude Code runs as a slash command, and words were asked for; nothing was typed. No typing makes Claude Code read a leading '/' as words (leading spaces are skipped): start the text with another character"
            ),
        }
    }
}

impl std::error::Error for TextRefused {}

/// Params of `session.send`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendParams {
    /// Session id, unique prefix, or name.
    pub session: String,
    /// The prompt, at most [`MAX_TYPED_TEXT`] bytes. Typed as text, never
    /// as keys: escape sequences and control characters are removed (a
    /// line break stays one), then it is sent as a bracketed paste when the
    /// session accepts one (else with line breaks as spaces), then Enter.
    pub text: String,
    /// Type it even when the prompt is not showing.
    #[serde(default)]
    pub force: bool,
    /// Run `text` as a shell command in Claude Code's bash mode (typed
    /// after a `!`, added when missing). Without it, a text starting with
    /// `!` is refused ([`RefusedReason::Shell`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shell: bool,
    /// Words for the model, never a command: a leading `!` is typed after a
    /// space (a prompt), a leading `/` is refused
    /// ([`RefusedReason::Command`]). Without it, a leading `/` runs a
    /// slash command.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub literal: bool,
}

/// Result of `session.send`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendResult {
    /// Full session id.
    pub session: String,
    /// Bytes typed (paste markers and every Enter included).
    pub bytes: u64,
    /// Whether the screen showed the prompt take the text (the draft left
    /// the input box); absent when `force` typed past another screen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submitted: Option<bool>,
    /// Characters of `text` that were not typed: escape sequences, control
    /// characters, bidi controls (a `\r\n` counts one). Absent when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub removed: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// `session.respond`: answer the tool permission prompt a session ccd
/// holds shows. The daemon finds the option `choice` means by its label,
/// moves the pointer there one arrow at a time (re-reading the screen after
/// each), presses Enter and checks that the prompt went. With `prompt`
/// (the id an attention event or `sessions.get` gave), a screen showing
/// another prompt — or none — is refused with `prompt_not_shown` and
/// nothing is typed; without it, whatever prompt is shown is answered.
pub struct SessionRespond;

impl Method for SessionRespond {
    const NAME: &'static str = "session.respond";
    type Params = RespondParams;
    type Result = RespondResult;
    const ERRORS: &'static [ErrorCode] = held_errors!(PromptNotShown, NotAtPrompt);
    const WAIT: Wait = Wait::Slow;
}

/// How to answer a permission prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RespondChoice {
    /// Allow once ("Yes").
    Yes,
    /// Allow and do not ask again ("Yes, and always allow …" / "… don't
    /// ask again …"); refused when the prompt offers no such option.
    Always,
    /// Refuse ("No").
    No,
}

/// Params of `session.respond`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RespondParams {
    /// Session id, unique prefix, or name.
    pub session: String,
    /// The answer.
    pub choice: RespondChoice,
    /// With `no`: what Claude should do instead, sent as the next prompt
    /// once the session is back at its prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The prompt id the caller saw (`session.attention`'s `prompt`); the
    /// answer is refused unless the screen shows that prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
}

/// Result of `session.respond`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RespondResult {
    /// Full session id.
    pub session: String,
    /// The id of the prompt answered.
    pub prompt: String,
    /// The answer given.
    pub choice: RespondChoice,
    /// The label of the option chosen, as shown.
    pub option: String,
    /// With `message`: whether it was submitted (see `session.send`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_submitted: Option<bool>,
}
