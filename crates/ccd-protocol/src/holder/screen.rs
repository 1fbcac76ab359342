//! The screen model's wire types: what a holder reports of its screen
//! (`holder.screen`'s `modes` and `verdict`), moved here from `ccd-screen`
//! (which re-exports them at their old paths and computes them: the
//! classifiers, the mode scanner) so the holder protocol is whole in this
//! crate without the screen model.
//!
//! - [`TerminalModes`] (with [`MouseMode`], [`MouseEncoding`],
//!   [`KittyKeyboard`]): everything a client terminal must be told to behave
//!   like the session's, and the bytes that set or undo it;
//! - [`ScreenState`]: the classifier's verdict, with the dialogs' contents
//!   ([`TrustDialog`], [`ApiKeyDialog`], [`PermissionDialog`]), start errors
//!   ([`StartError`]) and the ready prompt ([`ReadyPrompt`]);
//! - [`KeyMoves`] / [`NavKey`]: the keys a classifier suggests.

use serde::{Deserialize, Serialize};

/// A navigation key for moving a selection in a menu.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NavKey {
    /// Arrow up.
    Up,
    /// Arrow down.
    Down,
}

impl NavKey {
    /// The bytes a terminal sends for this key. With DECCKM (application cursor
    /// keys, [`TerminalModes::application_cursor`]) arrows are
    /// `ESC O A`/`ESC O B`, otherwise `ESC [ A`/`ESC [ B`.
    pub fn bytes(self, application_cursor: bool) -> &'static [u8] {
        match (self, application_cursor) {
            (Self::Up, false) => b"\x1b[A",
            (Self::Down, false) => b"\x1b[B",
            (Self::Up, true) => b"\x1bOA",
            (Self::Down, true) => b"\x1bOB",
        }
    }
}

/// "Press `key` `count` times". `count == 0` means the selection is already there.
///
/// Send the keys one at a time and re-classify the screen after each: keys sent
/// before a dialog's input handler is live can be lost.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyMoves {
    /// Which arrow.
    pub key: NavKey,
    /// How many presses.
    pub count: usize,
}

impl KeyMoves {
    /// Moves from menu index `from` to `to`.
    pub fn between(from: usize, to: usize) -> Self {
        if to >= from {
            Self {
                key: NavKey::Down,
                count: to - from,
            }
        } else {
            Self {
                key: NavKey::Up,
                count: from - to,
            }
        }
    }

    /// True when no key needs pressing.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// All the presses concatenated.
    pub fn to_bytes(&self, application_cursor: bool) -> Vec<u8> {
        self.key.bytes(application_cursor).repeat(self.count)
    }
}

/// Maximum number of kitty keyboard stack entries kept per screen. The kitty spec
/// lets terminals cap the stack and evict the oldest entry when it is full.
pub const KITTY_STACK_MAX: usize = 16;

/// Mouse reporting mode.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MouseMode {
    /// No mouse reporting.
    #[default]
    None,
    /// `?9`: press only (X10). Not produced by the current model, which
    /// does not implement X10 reporting.
    Press,
    /// `?1000`: press and release.
    PressRelease,
    /// `?1002`: press, release, and motion while a button is held.
    ButtonMotion,
    /// `?1003`: all motion.
    AnyMotion,
}

/// Mouse report encoding.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MouseEncoding {
    /// Classic single-byte encoding.
    #[default]
    Default,
    /// `?1005`.
    Utf8,
    /// `?1006`.
    Sgr,
}

/// The kitty keyboard protocol state of one screen (main or alternate; the spec
/// gives each its own stack).
///
/// `base` is the flags in effect when the stack is empty (changed only by
/// `CSI = flags ; mode u` on an empty stack); `stack` holds pushed entries, the last
/// one being current.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KittyKeyboard {
    /// Flags in effect when nothing is pushed.
    pub base: u32,
    /// Pushed entries, oldest first.
    pub stack: Vec<u32>,
}

impl KittyKeyboard {
    /// The flags currently in effect.
    pub fn flags(&self) -> u32 {
        self.stack.last().copied().unwrap_or(self.base)
    }

    /// True when nothing was ever changed (fresh terminal state).
    pub fn is_default(&self) -> bool {
        self.base == 0 && self.stack.is_empty()
    }

    /// `CSI > flags u`: push `flags` (the oldest entry is evicted when the
    /// stack holds [`KITTY_STACK_MAX`]).
    pub fn push(&mut self, flags: u32) {
        if self.stack.len() >= KITTY_STACK_MAX {
            self.stack.remove(0);
        }
        self.stack.push(flags);
    }

    /// `CSI < n u`: pop `n` entries (at least one); popping past the bottom
    /// resets the flags.
    pub fn pop(&mut self, n: usize) {
        let keep = self.stack.len().saturating_sub(n.max(1));
        let emptied = n > self.stack.len();
        self.stack.truncate(keep);
        if emptied {
            // Popping past the bottom resets the flags (kitty spec).
            self.base = 0;
        }
    }

    /// `CSI = flags ; mode u`: set (1), add (2) or remove (3) `flags` on the
    /// current entry.
    pub fn set(&mut self, flags: u32, mode: u32) {
        let cur = match self.stack.last_mut() {
            Some(top) => top,
            None => &mut self.base,
        };
        match mode {
            2 => *cur |= flags,
            3 => *cur &= !flags,
            // 1 (and the default) replaces all flags.
            _ => *cur = flags,
        }
    }

    /// Bytes that bring a fresh terminal (empty stack, flags 0) to this state.
    pub fn replay_bytes(&self, out: &mut Vec<u8>) {
        if self.base != 0 {
            out.extend_from_slice(format!("\x1b[={};1u", self.base).as_bytes());
        }
        for f in &self.stack {
            out.extend_from_slice(format!("\x1b[>{f}u").as_bytes());
        }
    }
}

/// Everything a client terminal must be told to behave like the session's terminal.
///
/// Fields read from the screen model: `alternate_screen`, `hide_cursor`, `application_cursor`,
/// `application_keypad`, `bracketed_paste`, `mouse_mode`, `mouse_encoding`.
/// Fields recovered by `ccd_screen::ModeScanner` from the raw stream: the rest.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TerminalModes {
    /// `?1049` / `?1047` / `?47`.
    pub alternate_screen: bool,
    /// `?25l`.
    pub hide_cursor: bool,
    /// DECCKM `?1`: arrows send `ESC O A` instead of `ESC [ A`.
    pub application_cursor: bool,
    /// DECKPAM `ESC =`.
    pub application_keypad: bool,
    /// `?2004`.
    pub bracketed_paste: bool,
    /// Mouse reporting mode.
    pub mouse_mode: MouseMode,
    /// Mouse report encoding.
    pub mouse_encoding: MouseEncoding,
    /// `?1004`: focus in/out reports (`ESC [ I` / `ESC [ O`).
    pub focus_events: bool,
    /// `?2026`: synchronized output in progress. While set, the screen may be
    /// mid-frame; classifiers are best run once it is cleared.
    pub synchronized_output: bool,
    /// `?2031`: colour-scheme change notifications.
    pub color_scheme_updates: bool,
    /// Kitty keyboard state of the main screen.
    pub kitty_main: KittyKeyboard,
    /// Kitty keyboard state of the alternate screen.
    pub kitty_alternate: KittyKeyboard,
    /// xterm modifyOtherKeys level (0 = off, 1, 2).
    pub modify_other_keys: u32,
}

impl TerminalModes {
    /// Kitty keyboard flags in effect on the active screen.
    pub fn kitty_flags(&self) -> u32 {
        if self.alternate_screen {
            self.kitty_alternate.flags()
        } else {
            self.kitty_main.flags()
        }
    }

    /// Bytes that undo every mode here on a real terminal, e.g. when a client
    /// detaches and hands its terminal back to the user's shell.
    pub fn reset_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        if self.synchronized_output {
            out.extend_from_slice(b"\x1b[?2026l");
        }
        if self.alternate_screen {
            let n = self.kitty_alternate.stack.len();
            if n > 0 {
                out.extend_from_slice(format!("\x1b[<{n}u").as_bytes());
            }
            out.extend_from_slice(b"\x1b[?1049l");
        }
        let n = self.kitty_main.stack.len();
        if n > 0 {
            out.extend_from_slice(format!("\x1b[<{n}u").as_bytes());
        }
        if self.kitty_main.base != 0 {
            out.extend_from_slice(b"\x1b[=0;1u");
        }
        if self.modify_other_keys != 0 {
            out.extend_from_slice(b"\x1b[>4m");
        }
        if self.mouse_mode != MouseMode::None {
            out.extend_from_slice(b"\x1b[?1003l\x1b[?1002l\x1b[?1000l\x1b[?9l");
        }
        if self.mouse_encoding != MouseEncoding::Default {
            out.extend_from_slice(b"\x1b[?1006l\x1b[?1005l");
        }
        if self.focus_events {
            out.extend_from_slice(b"\x1b[?1004l");
        }
        if self.bracketed_paste {
            out.extend_from_slice(b"\x1b[?2004l");
        }
        if self.color_scheme_updates {
            out.extend_from_slice(b"\x1b[?2031l");
        }
        if self.application_cursor {
            out.extend_from_slice(b"\x1b[?1l");
        }
        if self.application_keypad {
            out.extend_from_slice(b"\x1b>");
        }
        out.extend_from_slice(b"\x1b[?25h\x1b[0m");
        out
    }
}

/// What the screen shows, as far as ccd cares.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum ScreenState {
    /// Nothing drawn yet.
    Loading,
    /// The folder trust dialog.
    TrustDialog(TrustDialog),
    /// The custom API key dialog; the answer is the user's.
    ApiKeyDialog(ApiKeyDialog),
    /// A tool permission dialog; the answer is the user's. (Serialized as
    /// `permission_prompt`, the name `session.state`'s `shows` has used.)
    #[serde(rename = "permission_prompt")]
    PermissionDialog(PermissionDialog),
    /// A start/resume error.
    Error(StartError),
    /// The input prompt is up.
    Ready(ReadyPrompt),
    /// Something else. `blocking_hint` is set when it looks like it waits for
    /// the user (report it; don't wait on it silently).
    Unknown {
        /// What seems to be asked, if anything.
        blocking_hint: Option<String>,
    },
}

impl ScreenState {
    /// The word for what the screen shows, as `session.screen`'s `shows`
    /// and the errors that name a screen say it: `prompt` for the input
    /// prompt, else the state's wire name (`permission_prompt`,
    /// `trust_dialog`, `loading`, ...).
    pub fn shows(&self) -> &'static str {
        match self {
            ScreenState::Loading => "loading",
            ScreenState::TrustDialog(_) => "trust_dialog",
            ScreenState::ApiKeyDialog(_) => "api_key_dialog",
            ScreenState::PermissionDialog(_) => "permission_prompt",
            ScreenState::Error(_) => "error",
            ScreenState::Ready(_) => "prompt",
            ScreenState::Unknown { .. } => "unknown",
        }
    }
}

/// The API key dialog. Deliberately carries no suggested answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiKeyDialog {
    /// Option labels in screen order (for display).
    pub options: Vec<String>,
    /// Index of the option carrying the pointer, if exactly one does.
    pub selected: Option<usize>,
}

/// What went wrong.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum StartErrorKind {
    /// `--resume <sid>` with an unknown id (or from the wrong cwd on old versions).
    NoConversationFound {
        /// The id as printed.
        session_id: String,
    },
    /// `--session-id <uuid>` naming an id that already has a transcript.
    SessionIdInUse {
        /// The id as printed.
        session_id: String,
    },
    /// The transcript is too large for the model.
    PromptTooLong,
    /// The user (or a key sent too early) answered "No, exit" to the trust dialog.
    FolderNotTrusted,
}

/// An error found on screen, with the line it was read from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StartError {
    /// The classified error.
    pub kind: StartErrorKind,
    /// The whole line, trimmed.
    pub text: String,
}

/// What the dialog asks permission for (from its heading).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionKind {
    /// "Bash command".
    Bash,
    /// "Edit file", "Create file" (Edit / Write tools).
    FileEdit,
    /// "Fetch" (WebFetch).
    WebFetch,
    /// An MCP server's tool.
    Mcp,
    /// Another or an unreadable heading.
    Other,
}

impl PermissionKind {
    /// The wire name (`bash`, `file_edit`, `web_fetch`, `mcp`, `other`).
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionKind::Bash => "bash",
            PermissionKind::FileEdit => "file_edit",
            PermissionKind::WebFetch => "web_fetch",
            PermissionKind::Mcp => "mcp",
            PermissionKind::Other => "other",
        }
    }
}

/// One option of a permission dialog.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionOption {
    /// Its number (`2.` → 2), if the menu is numbered.
    pub number: Option<u32>,
    /// The label as shown, without pointer and number.
    pub label: String,
}

/// A tool permission dialog.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionDialog {
    /// What is asked for.
    pub kind: PermissionKind,
    /// The heading as shown ("Bash command", "Create file"), if found.
    pub heading: Option<String>,
    /// The command (Bash) or the file path (file edit), as shown.
    pub detail: Option<String>,
    /// The question, e.g. "Do you want to proceed?".
    pub question: String,
    /// Options in screen order.
    pub options: Vec<PermissionOption>,
    /// Index into `options` of the option carrying the pointer, if exactly
    /// one does (Enter answers with it).
    pub selected: Option<usize>,
}

/// The input prompt as read off the screen.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadyPrompt {
    /// Row of the prompt pointer.
    pub row: usize,
    /// Text already typed into the box (rows joined with `\n`), usually empty.
    pub input: String,
    /// The hint/status line under the box, if any.
    pub hint: Option<String>,
}

open_enum! {
    /// A session's permission mode as Claude Code names it on its command
    /// line (`--permission-mode <mode>`), read off the footer under the
    /// input box (`ccd_screen::classify::mode`). `unknown`: the footer
    /// shows a mode indicator whose words ccd does not know (never guessed
    /// as a known one); a value a later ccd names reads as `Other`.
    pub enum PermissionMode {
        /// No indicator with `? for shortcuts` (2.1.1xx), `⏸ manual mode
        /// on` (2.1.332, which also takes `--permission-mode default`).
        Default = "default",
        /// `⏵⏵ accept edits on`.
        AcceptEdits = "acceptEdits",
        /// `⏸ plan mode on`.
        Plan = "plan",
        /// `⏵⏵ auto mode on`.
        Auto = "auto",
        /// `⏵⏵ bypass permissions on`.
        BypassPermissions = "bypassPermissions",
        /// `⏵⏵ don't ask on`.
        DontAsk = "dontAsk",
        /// A mode indicator ccd cannot name.
        Unknown = "unknown";
        /// A name a later ccd sends.
        Other(String),
    }
}

impl PermissionMode {
    /// The value to give `claude --permission-mode` to start in this
    /// mode: the names both pinned CLI versions accept; `None` for
    /// `unknown` and names this version does not know.
    pub fn flag_value(&self) -> Option<&'static str> {
        match self {
            PermissionMode::Default => Some("default"),
            PermissionMode::AcceptEdits => Some("acceptEdits"),
            PermissionMode::Plan => Some("plan"),
            PermissionMode::Auto => Some("auto"),
            PermissionMode::BypassPermissions => Some("bypassPermissions"),
            PermissionMode::DontAsk => Some("dontAsk"),
            PermissionMode::Unknown | PermissionMode::Other(_) => None,
        }
    }
}

/// One option of the trust dialog.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrustOption {
    /// Label as shown, without pointer and number.
    pub label: String,
    /// This is the option that trusts the folder.
    pub is_trust: bool,
    /// This option refuses / exits.
    pub is_exit: bool,
}

/// Why the trust option cannot be chosen automatically.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "reason")]
pub enum TrustAmbiguity {
    /// No option reads as "trust".
    NoTrustOption,
    /// More than one option reads as "trust".
    SeveralTrustOptions {
        /// How many.
        count: usize,
    },
    /// No option (or more than one) carries the selection pointer.
    NoSelection,
}

/// How to get the selection onto the trust option.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TrustPath {
    /// Press these keys (possibly none), re-classify to verify the pointer is on
    /// the trust option, then press Enter.
    Keys(KeyMoves),
    /// Do not press anything; report the dialog to the user.
    Ambiguous(TrustAmbiguity),
}

/// The trust dialog as read off the screen.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrustDialog {
    /// Options in screen order.
    pub options: Vec<TrustOption>,
    /// Index of the option carrying `❯`, if exactly one does.
    pub selected: Option<usize>,
    /// Index of the trust option, if exactly one qualifies.
    pub trust_index: Option<usize>,
    /// What to press to get from `selected` to `trust_index`.
    pub to_trust: TrustPath,
}

impl TrustDialog {
    /// True when the selection is already on the (unambiguous) trust option, i.e.
    /// Enter would trust the folder.
    pub fn trust_selected(&self) -> bool {
        matches!(&self.to_trust, TrustPath::Keys(k) if k.is_empty())
    }

    /// The keys to reach the trust option, if it can be reached safely.
    pub fn keys_to_trust(&self) -> Option<KeyMoves> {
        match &self.to_trust {
            TrustPath::Keys(k) => Some(*k),
            TrustPath::Ambiguous(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_word_for_a_screen_is_its_wire_name_and_prompt_for_the_input_prompt() {
        for v in [
            ScreenState::Loading,
            ScreenState::Unknown {
                blocking_hint: None,
            },
        ] {
            let wire = serde_json::to_value(&v).expect("serializes");
            assert_eq!(wire["state"], v.shows());
        }
        let ready = ScreenState::Ready(ReadyPrompt {
            row: 3,
            input: String::new(),
            hint: None,
        });
        let wire = serde_json::to_value(&ready).expect("serializes");
        assert_eq!(wire["state"], "ready");
        assert_eq!(ready.shows(), "prompt");
    }

    #[test]
    fn a_permission_mode_is_its_cli_name_and_only_known_names_are_flag_values() {
        for m in PermissionMode::KNOWN {
            let wire = serde_json::to_value(m).expect("serializes");
            assert_eq!(wire, m.as_str());
            if *m == PermissionMode::Unknown {
                assert_eq!(m.flag_value(), None);
            } else {
                assert_eq!(m.flag_value(), Some(m.as_str()));
            }
        }
        let later: PermissionMode = serde_json::from_str("\"rocket\"").expect("reads");
        assert_eq!(later, PermissionMode::Other("rocket".into()));
        assert_eq!(later.flag_value(), None);
    }
}
