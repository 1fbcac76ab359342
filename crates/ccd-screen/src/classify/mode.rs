//! The permission mode, read off the footer under the input box.
//!
//! Recorded on both pinned versions (`tests/recordings/claude-cli/mode-*`,
//! docs/claude-cli-compat.md, "Permission modes"): the footer's first
//! segments (` · ` between them) carry the mode indicator, a glyph and the
//! mode's words ending in `on`, with `(shift+tab to cycle)` after them on
//! most:
//!
//! ```text
//! ? for shortcuts · ← for agents                        (2.1.1xx, default: no indicator)
//! ⏸ manual mode on · ? for shortcuts · ← for agents     (2.1.332, default)
//! ⏵⏵ accept edits on (shift+tab to cycle) · ← for agents
//! ⏸ plan mode on (shift+tab to cycle) · ← for agents
//! ⏵⏵ auto mode on (shift+tab to cycle) · ← for agents
//! ⏵⏵ bypass permissions on (shift+tab to cycle) · ← for agents
//! ⏵⏵ don't ask on (shift+tab to cycle) · ← for agents
//! ```
//!
//! # Rules
//!
//! 1. A segment that starts with an indicator glyph (`⏵`, `⏸`) or carries
//!    `shift+tab to cycle` is the mode indicator: its words before ` on`
//!    name the mode ([`MODE_WORDS`]); words ccd does not know give
//!    [`PermissionMode::Unknown`], never a guess. Words that do not end in
//!    ` on` are a frame half painted: `None`.
//! 2. No indicator, and a `? for shortcuts` segment: the default mode (the
//!    way 2.1.1xx shows it; every other mode of either version shows an
//!    indicator in that place).
//! 3. Anything else (a blank footer, a draft's or a transient notice's
//!    text): `None`, the footer says nothing of the mode now. A reader
//!    keeps the mode it read last.
//!
//! The footer is the [`ReadyPrompt::hint`](super::ReadyPrompt) line:
//! under a dialog there is none, and the mode is not read.

use super::ready;
use crate::text::ScreenText;

pub use ccd_protocol::holder::screen::PermissionMode;

/// The words of each mode indicator (before ` on`), as both pinned
/// versions print them. 2.1.332's "manual mode" is the mode 2.1.1xx calls
/// default (2.1.332 takes `--permission-mode default` and shows it).
pub const MODE_WORDS: &[(&str, PermissionMode)] = &[
    ("accept edits", PermissionMode::AcceptEdits),
    ("plan mode", PermissionMode::Plan),
    ("auto mode", PermissionMode::Auto),
    ("bypass permissions", PermissionMode::BypassPermissions),
    ("don't ask", PermissionMode::DontAsk),
    ("manual mode", PermissionMode::Default),
    ("default mode", PermissionMode::Default),
];

/// Glyphs that open a mode indicator.
const GLYPHS: &[char] = &['⏵', '⏸', '▶', '⏯'];

/// The mode the footer line `hint` shows (rules in the module doc).
pub fn from_footer(hint: &str) -> Option<PermissionMode> {
    let mut default_hint = false;
    for seg in hint.split(" · ").map(str::trim) {
        let glyph = seg.starts_with(GLYPHS);
        let cycles = seg.contains("shift+tab to cycle");
        if glyph || cycles {
            return indicator(seg);
        }
        if seg == "? for shortcuts" {
            default_hint = true;
        }
    }
    default_hint.then_some(PermissionMode::Default)
}

/// The mode an indicator segment names; `None` when its words do not end
/// in ` on` (a frame half painted: 2.1.1xx draws without synchronized
/// output, so a read between its writes sees e.g. `⏵⏵ or shortcuts`).
fn indicator(seg: &str) -> Option<PermissionMode> {
    let words = seg.trim_start_matches(|c: char| GLYPHS.contains(&c) || c.is_whitespace());
    let words = words.split_once(" (").map_or(words, |(w, _)| w).trim_end();
    let name = words.strip_suffix(" on")?.trim();
    Some(
        MODE_WORDS
            .iter()
            .find(|(w, _)| *w == name)
            .map_or(PermissionMode::Unknown, |(_, m)| m.clone()),
    )
}

/// The mode the screen's footer shows, when the input prompt is up.
pub fn detect(text: &ScreenText) -> Option<PermissionMode> {
    ready::detect(text)?.hint.as_deref().and_then(from_footer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_footer_recorded_names_its_mode() {
        for (footer, mode) in [
            (
                "? for shortcuts · ← for agents            ● high · /effort",
                PermissionMode::Default,
            ),
            (
                "⏸ manual mode on · ? for shortcuts · ← for agents",
                PermissionMode::Default,
            ),
            (
                "⏵⏵ accept edits on (shift+tab to cycle) · ← for agents",
                PermissionMode::AcceptEdits,
            ),
            (
                "⏸ plan mode on (shift+tab to cycle) · ← for agents",
                PermissionMode::Plan,
            ),
            (
                "⏵⏵ auto mode on (shift+tab to cycle) · ← for agents",
                PermissionMode::Auto,
            ),
            (
                "⏵⏵ bypass permissions on (shift+tab to cycle)",
                PermissionMode::BypassPermissions,
            ),
            (
                "⏵⏵ don't ask on (shift+tab to cycle) · ← for agents",
                PermissionMode::DontAsk,
            ),
            // Narrower: the cycle hint dropped.
            ("⏵⏵ accept edits on", PermissionMode::AcceptEdits),
        ] {
            assert_eq!(from_footer(footer), Some(mode), "{footer}");
        }
    }

    #[test]
    fn an_indicator_ccd_cannot_name_is_unknown_never_a_guess() {
        for footer in [
            "⏵⏵ yolo mode on (shift+tab to cycle) · ← for agents",
            "⏸ accept some edits on",
            "careful mode on (shift+tab to cycle)",
            // An indicator beside the default hint: the indicator decides.
            "⏵⏵ rocket on · ? for shortcuts",
        ] {
            assert_eq!(
                from_footer(footer),
                Some(PermissionMode::Unknown),
                "{footer}"
            );
        }
    }

    #[test]
    fn a_footer_without_an_indicator_or_the_default_hint_says_nothing() {
        for footer in [
            "",
            "← for agents",
            "Press Ctrl-C again to exit",
            "esc to interrupt",
            "accept edits on",
            // Half painted (2.1.173 between two writes of one frame).
            "⏵⏵ or shortcuts · ← for agents",
            "⏵⏵ accept edits",
        ] {
            assert_eq!(from_footer(footer), None, "{footer:?}");
        }
    }

    #[test]
    fn the_mode_is_read_only_under_the_input_box() {
        let rule = "─".repeat(60);
        let t = ScreenText::from_lines([
            rule.clone(),
            "❯ ".into(),
            rule.clone(),
            "  ⏵⏵ accept edits on (shift+tab to cycle) · ← for agents".into(),
        ]);
        assert_eq!(detect(&t), Some(PermissionMode::AcceptEdits));
        // The same words in the conversation, no prompt: nothing.
        let t = ScreenText::from_lines(["⏵⏵ accept edits on (shift+tab to cycle)".to_string()]);
        assert_eq!(detect(&t), None);
    }
}
