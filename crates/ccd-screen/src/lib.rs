//! ccd-screen: the screen model of a Claude Code session.
//!
//! Pure: no I/O, no async. Feed a session's raw PTY output to a [`Screen`]; ask it
//! for its text, its [`TerminalModes`], a [`Screen::redraw`] snapshot to resync a
//! client, or a [`ScreenState`] verdict ([`classify_screen`]) to decide what to do
//! (pass the trust dialog, report an error, notice the prompt is ready).

// No unsafe code here, and none may be added (docs/architecture.md, "Unsafe code").
#![forbid(unsafe_code)]

pub mod classify;
mod difference;
pub mod keys;
mod lane;
pub mod modes;
pub mod redraw;
pub mod screen;
pub mod text;

pub use classify::{
    classify_screen, classify_text, option_for, prompt_id, Answer, ApiKeyDialog, PermissionDialog,
    PermissionDialogExt, PermissionKind, PermissionMode, PermissionOption, ReadyPrompt,
    ScreenState, StartError, StartErrorKind, TrustAmbiguity, TrustDialog, TrustOption, TrustPath,
};
pub use keys::{KeyMoves, NavKey};
pub use modes::{KittyKeyboard, ModeScanner, MouseEncoding, MouseMode, TerminalModes};
pub use redraw::{CellView, Pen, PenColor, ScreenCells};
pub use screen::{Screen, DEFAULT_SCROLLBACK};
pub use text::ScreenText;
