//! Screen classifiers: pure functions from visible text to a typed verdict.
//!
//! One module per concern, each documenting the markers it relies on and why:
//!
//! - [`trust`]: the folder trust dialog (which option is "trust", how to reach it);
//! - [`api_key`]: the custom API key approval dialog (detect only);
//! - [`banner`]: the welcome banner's model and stated context window;
//! - [`permission`]: tool permission dialogs (kind, command or path, options; detect only);
//! - [`errors`]: start/resume errors (unknown session id, id in use, prompt too
//!   long, folder not trusted);
//! - [`ready`]: the idle input prompt;
//! - [`mode`]: the permission mode its footer shows (read beside the
//!   verdict, not part of it);
//! - [`blocking`]: generic "something is waiting for the user" hints.
//!
//! [`classify_screen`] composes them into one small [`ScreenState`]. Text comes
//! from the screen model, never from the raw byte stream: Claude Code paints text
//! by cursor movement, so stripping escapes from the stream loses the spaces.
//!
//! Claude Code repaints in frames; classify a screen that has been stable for a
//! moment (and, when the application uses it, outside synchronized output, see
//! [`TerminalModes::synchronized_output`](crate::TerminalModes)).

pub mod api_key;
pub mod banner;
pub mod blocking;
pub mod errors;
pub mod menu;
pub mod mode;
pub mod permission;
pub mod ready;
pub mod trust;

use crate::screen::Screen;
use crate::text::ScreenText;

pub use api_key::ApiKeyDialog;
pub use errors::{StartError, StartErrorKind};
pub use mode::PermissionMode;
pub use permission::{
    option_for, prompt_id, Answer, PermissionDialog, PermissionDialogExt, PermissionKind,
    PermissionOption,
};
pub use ready::ReadyPrompt;
pub use trust::{TrustAmbiguity, TrustDialog, TrustOption, TrustPath};

/// What the screen shows, as far as ccd cares (a holder-protocol type:
/// `holder.screen`'s `verdict`).
pub use ccd_protocol::holder::screen::ScreenState;

/// Classify a [`Screen`]. See [`classify_text`].
pub fn classify_screen(screen: &Screen) -> ScreenState {
    classify_text(&screen.text())
}

/// Classify visible text. Dialogs first (they block, and each also contains a
/// `❯` that a looser check could take for the prompt), then errors, then the
/// ready prompt.
pub fn classify_text(text: &ScreenText) -> ScreenState {
    if let Some(d) = trust::detect(text) {
        return ScreenState::TrustDialog(d);
    }
    if let Some(d) = api_key::detect(text) {
        return ScreenState::ApiKeyDialog(d);
    }
    if let Some(p) = permission::detect(text) {
        return ScreenState::PermissionDialog(p);
    }
    if let Some(e) = errors::detect(text) {
        return ScreenState::Error(e);
    }
    if let Some(r) = ready::detect(text) {
        return ScreenState::Ready(r);
    }
    if text.is_blank() {
        return ScreenState::Loading;
    }
    ScreenState::Unknown {
        blocking_hint: blocking::hint(text),
    }
}
