//! Full-screen redraw snapshots.
//!
//! A client that attaches late, or whose queue overflowed and was dropped, is
//! resynced by writing [`Screen::redraw`] to its terminal, then the live stream.

use crate::screen::Screen;

impl Screen {
    /// Bytes that, written to a fresh terminal of the same size (or a fresh
    /// [`Screen`]), reproduce the visible screen, the cursor, the window title and
    /// every mode in [`Screen::modes`](crate::TerminalModes).
    ///
    /// Layout: begin synchronized update (`?2026h`, so real terminals paint it in
    /// one go); kitty keyboard stack of the main screen; if the alternate screen is
    /// active, `?1049h` and its kitty stack; `vt100`'s `state_formatted()` (cursor
    /// visibility, clear, every row with attributes, cursor position, current SGR
    /// attributes, keypad/cursor-key/bracketed-paste/mouse modes, cursor style);
    /// focus events, colour-scheme updates, modifyOtherKeys; the title; end of the
    /// synchronized update, re-opened if the application is itself mid-update.
    ///
    /// Not reproduced: scrollback, the main screen hidden behind an active
    /// alternate screen (vt100 gives no access to it), the scroll region, saved
    /// cursor, character sets. Claude Code repaints all of these itself.
    ///
    /// It assumes the target terminal starts in its default modes; to hand a
    /// terminal back, write [`TerminalModes::reset_bytes`](crate::TerminalModes::reset_bytes).
    pub fn redraw(&self) -> Vec<u8> {
        let modes = self.modes();
        let vt = self.vt();
        let mut out = Vec::with_capacity(8 * 1024);
        out.extend_from_slice(b"\x1b[?2026h");
        modes.kitty_main.replay_bytes(&mut out);
        if modes.alternate_screen {
            out.extend_from_slice(b"\x1b[?1049h");
            modes.kitty_alternate.replay_bytes(&mut out);
        } else if modes.kitty_alternate != Default::default() {
            // The alternate screen keeps its own kitty stack while the main
            // screen shows (a later `?47h` brings it back): set it there
            // without clearing anything, then come back.
            out.extend_from_slice(b"\x1b[?47h");
            modes.kitty_alternate.replay_bytes(&mut out);
            out.extend_from_slice(b"\x1b[?47l");
        }
        out.extend_from_slice(vt.state_formatted().as_bytes());
        if modes.focus_events {
            out.extend_from_slice(b"\x1b[?1004h");
        }
        if modes.color_scheme_updates {
            out.extend_from_slice(b"\x1b[?2031h");
        }
        if modes.modify_other_keys != 0 {
            out.extend_from_slice(format!("\x1b[>4;{}m", modes.modify_other_keys).as_bytes());
        }
        let title = self.title();
        if !title.is_empty() {
            out.extend_from_slice(b"\x1b]0;");
            out.extend_from_slice(title.as_bytes());
            out.push(0x07);
        }
        out.extend_from_slice(b"\x1b[?2026l");
        if modes.synchronized_output {
            out.extend_from_slice(b"\x1b[?2026h");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use crate::Screen;

    fn roundtrip(s: &Screen) {
        let (rows, cols) = s.size();
        let mut fresh = Screen::new(rows, cols);
        fresh.process(&s.redraw());
        assert_eq!(fresh.vt().contents_formatted(), s.vt().contents_formatted());
        assert_eq!(fresh.cursor_position(), s.cursor_position());
        assert_eq!(fresh.modes(), s.modes());
        assert_eq!(fresh.title(), s.title());
    }

    #[test]
    fn alternate_kitty_stack_kept_while_the_main_screen_shows() {
        // Found by the `screen` fuzz target.
        let mut s = Screen::new(1, 1);
        s.process(b"\x1b[?47h\x1b[>u\x1b[?47l");
        roundtrip(&s);
    }

    #[test]
    fn roundtrip_modes() {
        let mut s = Screen::new(10, 30);
        s.process(b"\x1b[?1004h\x1b[?2004h\x1b[>4;2m\x1b[>1u\x1b[>3u\x1b[?1002h\x1b[?1006h");
        s.process(b"\x1b[31mred\x1b[1;44m bold\r\n\x1b[?25l\x1b[?1h\x1b=\x1b]2;t\x07");
        roundtrip(&s);
        s.process(b"\x1b[?1049h\x1b[>9uin alt\x1b[?2026h");
        roundtrip(&s);
        s.process(b"\x1b[=5;1u");
        roundtrip(&s);
    }

    #[test]
    fn roundtrip_pending_wrap() {
        let mut s = Screen::new(3, 5);
        s.process(b"abcde");
        roundtrip(&s);
        s.process(b"fghij\r\nklmno");
        roundtrip(&s);
    }
}
