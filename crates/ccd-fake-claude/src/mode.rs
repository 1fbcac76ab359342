//! The permission mode, as the real CLI shows and cycles it (recorded:
//! `tests/recordings/claude-cli/mode-*`): started by `--permission-mode`
//! (or `--dangerously-skip-permissions`: bypass), drawn as the footer's
//! first segment, moved on by Shift-Tab (`ESC [ Z`) in the order both
//! pinned versions cycle: default → acceptEdits → plan → (bypass, when
//! allowed) → auto → default. 2.1.332 starts in auto mode and calls
//! default "manual mode"; 2.1.173 starts in default and shows no
//! indicator for it (`? for shortcuts`).

use crate::settings::Variant;

/// One mode, by the CLI's `--permission-mode` name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Default,
    AcceptEdits,
    Plan,
    Auto,
    BypassPermissions,
    DontAsk,
}

impl Mode {
    /// The mode `--permission-mode <name>` asks for (`manual` is 2.1.332's
    /// name of default).
    pub fn from_flag(name: &str) -> Option<Mode> {
        Some(match name {
            "default" | "manual" => Mode::Default,
            "acceptEdits" => Mode::AcceptEdits,
            "plan" => Mode::Plan,
            "auto" => Mode::Auto,
            "bypassPermissions" => Mode::BypassPermissions,
            "dontAsk" => Mode::DontAsk,
            _ => return None,
        })
    }

    /// The mode a session starts in.
    pub fn initial(flag: Option<&str>, skip_permissions: bool, v: Variant) -> Mode {
        match flag.and_then(Mode::from_flag) {
            Some(m) => m,
            None if skip_permissions => Mode::BypassPermissions,
            None => match v {
                Variant::V2_1_332 => Mode::Auto,
                Variant::V2_1_173 => Mode::Default,
            },
        }
    }

    /// The mode after Shift-Tab; bypass is in the cycle only when the
    /// session may bypass (`--dangerously-skip-permissions`, or started
    /// in it).
    pub fn next(self, bypass_allowed: bool) -> Mode {
        match self {
            Mode::Default => Mode::AcceptEdits,
            Mode::AcceptEdits => Mode::Plan,
            Mode::Plan if bypass_allowed => Mode::BypassPermissions,
            Mode::Plan => Mode::Auto,
            Mode::BypassPermissions => Mode::Auto,
            Mode::Auto | Mode::DontAsk => Mode::Default,
        }
    }

    /// The footer's mode indicator (glyph and words), `None` for
    /// 2.1.173's default (no indicator).
    pub fn indicator(self, v: Variant) -> Option<&'static str> {
        Some(match self {
            Mode::Default => match v {
                Variant::V2_1_332 => "⏸ manual mode on",
                Variant::V2_1_173 => return None,
            },
            Mode::AcceptEdits => "⏵⏵ accept edits on",
            Mode::Plan => "⏸ plan mode on",
            Mode::Auto => "⏵⏵ auto mode on",
            Mode::BypassPermissions => "⏵⏵ bypass permissions on",
            Mode::DontAsk => "⏵⏵ don't ask on",
        })
    }

    /// The text after the indicator: `(shift+tab to cycle)` for a mode
    /// other than default, then the rest of the footer.
    pub fn after_indicator(self) -> &'static str {
        match self {
            Mode::Default => " · ? for shortcuts · ← for agents",
            _ => " (shift+tab to cycle) · ← for agents",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shift_tab_cycles_as_the_recordings_show() {
        // 2.1.332 without bypass: auto → manual → accept → plan → auto.
        let mut m = Mode::initial(None, false, Variant::V2_1_332);
        let mut seen = vec![m];
        for _ in 0..4 {
            m = m.next(false);
            seen.push(m);
        }
        assert_eq!(
            seen,
            [
                Mode::Auto,
                Mode::Default,
                Mode::AcceptEdits,
                Mode::Plan,
                Mode::Auto
            ]
        );
        // With bypass: bypass → auto → default → accept → plan → bypass.
        let mut m = Mode::initial(None, true, Variant::V2_1_173);
        let mut seen = vec![m];
        for _ in 0..5 {
            m = m.next(true);
            seen.push(m);
        }
        assert_eq!(
            seen,
            [
                Mode::BypassPermissions,
                Mode::Auto,
                Mode::Default,
                Mode::AcceptEdits,
                Mode::Plan,
                Mode::BypassPermissions
            ]
        );
        assert_eq!(
            Mode::initial(Some("plan"), false, Variant::V2_1_332),
            Mode::Plan
        );
        assert_eq!(Mode::Default.indicator(Variant::V2_1_173), None);
    }
}
