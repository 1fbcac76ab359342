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
//! 4. **One read is not enough** ([`ModeReader`]): a mode is taken only
//!    when read on a *settled* screen — the screen text unchanged for
//!    [`SETTLE`] after the read — or read the same on two screens in a
//!    row (two changes of the text, both showing it). 2.1.1xx draws
//!    without synchronized output, so a read between the writes of one
//!    frame can see a footer half painted over another; the very next
//!    change (the rest of the frame) then reads differently, and the
//!    passing read is dropped. A read that names nothing (rule 3) drops
//!    a mode waiting to settle and keeps the one taken.
//!
//! The footer is the [`ReadyPrompt::hint`](super::ReadyPrompt) line:
//! under a dialog there is none, and the mode is not read.

use super::ready;
use crate::text::ScreenText;
use std::time::{Duration, Instant};

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

/// How long the screen must stay as it was when a mode was read for that
/// read alone to be taken (rule 4). A frame's writes follow each other
/// within milliseconds; a person's Shift-Tab is taken this long after it
/// shows.
pub const SETTLE: Duration = Duration::from_millis(150);

/// Takes the permission mode only from settled reads (rule 4 of the
/// module doc), sans IO: fed each read of a changed screen
/// ([`Self::read`]) and, when the screen has not changed since, the time
/// ([`Self::settle`]).
#[derive(Debug, Default, Clone)]
pub struct ModeReader {
    /// The mode taken last.
    taken: Option<PermissionMode>,
    /// A mode read once, and when its screen was read.
    waiting: Option<(PermissionMode, Instant)>,
}

impl ModeReader {
    pub fn new() -> Self {
        Self::default()
    }

    /// The mode taken last (`None` until one has settled).
    pub fn taken(&self) -> Option<&PermissionMode> {
        self.taken.as_ref()
    }

    /// The footer of a screen whose text changed at `at` reads `read`
    /// ([`from_footer`]'s answer, `None` for no footer). Returns the mode
    /// taken by this read, if it took a new one.
    pub fn read(&mut self, read: Option<PermissionMode>, at: Instant) -> Option<PermissionMode> {
        let Some(mode) = read else {
            // Nothing of the mode on this screen: what waited did not
            // settle; what was taken is kept.
            self.waiting = None;
            return None;
        };
        match self.waiting.take() {
            // The same on two screens in a row.
            Some((w, _)) if w == mode => self.take(mode),
            _ if self.taken.as_ref() == Some(&mode) => None,
            _ => {
                self.waiting = Some((mode, at));
                None
            }
        }
    }

    /// The screen has not changed since the last read, at `now`: a mode
    /// read there is taken once it has stood for [`SETTLE`].
    pub fn settle(&mut self, now: Instant) -> Option<PermissionMode> {
        match &self.waiting {
            Some((_, at)) if now.saturating_duration_since(*at) >= SETTLE => {
                let (mode, _) = self.waiting.take()?;
                self.take(mode)
            }
            _ => None,
        }
    }

    /// How long until a mode waiting settles (when to call
    /// [`Self::settle`] if nothing changes meanwhile); `None` when none
    /// waits.
    pub fn due(&self, now: Instant) -> Option<Duration> {
        self.waiting
            .as_ref()
            .map(|(_, at)| SETTLE.saturating_sub(now.saturating_duration_since(*at)))
    }

    fn take(&mut self, mode: PermissionMode) -> Option<PermissionMode> {
        if self.taken.as_ref() == Some(&mode) {
            return None;
        }
        self.taken = Some(mode.clone());
        Some(mode)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mode_read_once_is_taken_only_once_its_screen_settles() {
        let t0 = Instant::now();
        let mut r = ModeReader::new();
        // Read once; the screen stays: taken after SETTLE, not before.
        assert_eq!(r.read(Some(PermissionMode::AcceptEdits), t0), None);
        assert_eq!(r.settle(t0 + SETTLE / 2), None);
        assert_eq!(r.due(t0 + SETTLE / 2), Some(SETTLE - SETTLE / 2));
        assert_eq!(r.settle(t0 + SETTLE), Some(PermissionMode::AcceptEdits));
        assert_eq!(r.taken(), Some(&PermissionMode::AcceptEdits));
        assert_eq!(r.due(t0 + SETTLE), None);
        // The same again: nothing new.
        assert_eq!(r.read(Some(PermissionMode::AcceptEdits), t0), None);
        assert_eq!(r.settle(t0 + SETTLE * 3), None);
    }

    #[test]
    fn a_footer_read_between_the_writes_of_a_frame_is_never_taken() {
        // Accept edits taken; a frame half painted reads plan; the rest
        // of the frame (the next change, 5 ms later) reads accept edits
        // again: plan never taken, however long the screen then stays.
        let t0 = Instant::now();
        let mut r = ModeReader::new();
        r.read(Some(PermissionMode::AcceptEdits), t0);
        r.settle(t0 + SETTLE);
        let t1 = t0 + SETTLE * 2;
        assert_eq!(r.read(Some(PermissionMode::Plan), t1), None);
        let t2 = t1 + Duration::from_millis(5);
        assert_eq!(r.read(Some(PermissionMode::AcceptEdits), t2), None);
        assert_eq!(r.settle(t2 + SETTLE * 10), None);
        assert_eq!(r.taken(), Some(&PermissionMode::AcceptEdits));
        // A half-painted read followed by a screen with no footer (a
        // dialog): dropped too.
        r.read(Some(PermissionMode::Plan), t2);
        assert_eq!(r.read(None, t2 + Duration::from_millis(5)), None);
        assert_eq!(r.settle(t2 + SETTLE * 10), None);
        assert_eq!(r.taken(), Some(&PermissionMode::AcceptEdits));
    }

    #[test]
    fn a_mode_read_on_two_screens_in_a_row_is_taken_at_once() {
        // A busy screen (a spinner) never settles: two changes that both
        // show the new mode are enough.
        let t0 = Instant::now();
        let mut r = ModeReader::new();
        assert_eq!(r.read(Some(PermissionMode::Plan), t0), None);
        assert_eq!(
            r.read(Some(PermissionMode::Plan), t0 + Duration::from_millis(1)),
            Some(PermissionMode::Plan)
        );
        // A blank footer keeps it.
        assert_eq!(r.read(None, t0), None);
        assert_eq!(r.settle(t0 + SETTLE * 2), None);
        assert_eq!(r.taken(), Some(&PermissionMode::Plan));
    }

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
