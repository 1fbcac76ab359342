//! Terminal mode and query sequences, copied from the recordings of the real CLI.

use crate::settings::Variant;

/// First bytes written: reset scroll region, hide cursor, bracketed paste, colour-scheme
/// notifications, focus events.
pub fn startup(v: Variant) -> &'static str {
    match v {
        Variant::V2_1_173 => "\x1b7\x1b[r\x1b8\x1b[?25h\x1b[?25l\x1b[?2004h\x1b[?1004h\x1b[?2031h",
        Variant::V2_1_332 => "\x1b7\x1b[r\x1b8\x1b[?25h\x1b[?25l\x1b[?2004h\x1b[?2031h\x1b[?1004h",
    }
}

/// Terminal queries (XTVERSION, kitty keyboard flags, OSC 7501, primary DA). 2.1.173 did not
/// ask for the kitty flags nor send OSC 7501.
pub fn queries(v: Variant) -> &'static str {
    match v {
        Variant::V2_1_173 => "\x1b[>0q\x1b[c",
        Variant::V2_1_332 => "\x1b[>0q\x1b[?u\x1b]7501;?\x07\x1b[c",
    }
}

/// 2.1.332 drops its modes when the inline trust dialog closes, then turns them back on.
pub const DIALOG_MODES_OFF: &str = "\x1b[>4m\x1b[<u\x1b[?1004l\x1b[?2031l\x1b[?2004l";
pub const DIALOG_MODES_ON: &str = "\x1b[?2004h\x1b[?2031h\x1b[?1004h";

/// Window title set when the main screen starts.
pub const TITLE: &str = "\x1b]0;\u{2733} Claude Code\x07";

/// 2.1.332 runs the main screen in the alternate screen with mouse tracking.
pub const ENTER_FULLSCREEN: &str =
    "\x1b[?1049h\x1b[2J\x1b[H\x1b[?1000h\x1b[?1002h\x1b[?1003h\x1b[?1006h\x1b[?25l";

/// Everything undone on exit. `fullscreen` says whether the alternate screen is on.
pub fn exit(v: Variant, fullscreen: bool) -> String {
    let alt = if fullscreen { "\x1b[?1049l" } else { "" };
    match v {
        Variant::V2_1_173 => format!(
            "\x1b[?1006l\x1b[?1003l\x1b[?1002l\x1b[?1000l{alt}\x1b(B\x0f\x1b[>4m\x1b[<u\x1b[?1004l\x1b[?2031l\x1b[?2004l\x1b[?25h\x1b7\x1b[r\x1b8\x1b]0;\x07"
        ),
        Variant::V2_1_332 => format!(
            "\x1b[?1006l\x1b[?1003l\x1b[?1002l\x1b[?1000l\x1b[?25h\x1b[?1004l\x1b[<u{alt}\x1b[>4m\x1b[<u\x1b[?2031l\x1b[?2004l\x1b(B\x0f\x1b[?1016l\x1b[?7h\x1b[?25h\x1b7\x1b[r\x1b8\x1b]0;\x07\x1b[?25h"
        ),
    }
}
