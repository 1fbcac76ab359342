//! Terminal modes the screen model does not track, recovered from the raw byte stream.
//!
//! The model (`alacritty_terminal`) tracks the screen, cursor visibility, alternate
//! screen, mouse protocol, bracketed paste and application cursor/keypad. Claude Code
//! also turns on focus events (`?1004`), synchronized output (`?2026`; the model is
//! fed unbuffered, see [`crate::Screen`]), colour-scheme notifications (`?2031`), the
//! kitty keyboard protocol (`CSI > flags u` & co., which the model leaves off) and
//! xterm's modifyOtherKeys (`CSI > 4 ; n m`). A client that attaches later must be put
//! into the same modes, so [`ModeScanner`] watches the raw output for them.
//!
//! The scanner is a small byte-level state machine. It keeps its state between
//! calls, so an escape sequence split across two reads (`"\x1b[?10"` + `"04h"`) is
//! recognised exactly as if it had arrived whole. It never allocates per byte and
//! caps the parameter buffer, so hostile input cannot make it grow.

pub use ccd_protocol::holder::screen::KITTY_STACK_MAX;

/// Longest CSI parameter string we bother to decode; longer ones are ignored.
const MAX_CSI_PARAMS: usize = 64;

/// The terminal modes a client is told (holder-protocol types: they travel
/// in `holder.screen` and `session.resync`'s source).
pub use ccd_protocol::holder::screen::{KittyKeyboard, MouseEncoding, MouseMode, TerminalModes};

/// The modes only the scanner knows (a subset of [`TerminalModes`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScannedModes {
    /// `?1004`.
    pub focus_events: bool,
    /// `?2026`.
    pub synchronized_output: bool,
    /// `?2031`.
    pub color_scheme_updates: bool,
    /// Kitty keyboard, main screen.
    pub kitty_main: KittyKeyboard,
    /// Kitty keyboard, alternate screen.
    pub kitty_alternate: KittyKeyboard,
    /// modifyOtherKeys level.
    pub modify_other_keys: u32,
    /// Whether the scanner believes the alternate screen is active (used only to
    /// pick the kitty stack; the authoritative value comes from the model).
    pub alternate_screen: bool,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum State {
    Ground,
    Escape,
    /// `ESC` followed by intermediates (e.g. `ESC ( B`): wait for the final byte.
    EscapeIntermediate,
    Csi,
    /// A CSI without a private marker (`?`, `>`, `<`, `=`): none of those set
    /// a mode this scanner tracks (SGR, cursor moves, erases… the bulk of a
    /// TUI's output), so it is skipped to its final byte.
    CsiIgnore,
    /// OSC / DCS / SOS / PM / APC payload: skip until BEL (OSC only) or ST.
    String {
        osc: bool,
    },
    /// ESC seen inside a string: `\` ends it, anything else starts a new escape.
    StringEscape,
}

/// Parser state of [`ModeScanner`] (kept across chunks).
#[derive(Clone, Debug)]
struct ScannedState {
    state: State,
    params: [u8; MAX_CSI_PARAMS],
    params_len: usize,
    params_overflow: bool,
    intermediate: Option<u8>,
    intermediates_overflow: bool,
}

/// Byte-stream scanner plus the modes it has recovered so far.
#[derive(Clone, Debug)]
pub struct ModeScanner {
    parse: ScannedState,
    modes: ScannedModes,
}

impl Default for ModeScanner {
    fn default() -> Self {
        Self::new()
    }
}

impl ModeScanner {
    /// A scanner in the state of a freshly reset terminal.
    pub fn new() -> Self {
        Self {
            parse: ScannedState {
                state: State::Ground,
                params: [0; MAX_CSI_PARAMS],
                params_len: 0,
                params_overflow: false,
                intermediate: None,
                intermediates_overflow: false,
            },
            modes: ScannedModes::default(),
        }
    }

    /// The modes recovered so far.
    pub fn modes(&self) -> &ScannedModes {
        &self.modes
    }

    /// Whether no sequence is under way: text and C0 controls other than
    /// ESC would change nothing now.
    pub(crate) fn in_ground(&self) -> bool {
        self.parse.state == State::Ground
    }

    /// Feed the next chunk of raw terminal output.
    pub fn feed(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            // Fast paths: text between escapes, and the body of a CSI that
            // cannot matter, are skipped without stepping byte by byte.
            let skip = match self.parse.state {
                State::Ground => memchr::memchr(0x1b, bytes),
                State::CsiIgnore => bytes
                    .iter()
                    .position(|&b| matches!(b, 0x40..=0x7e | 0x1b | 0x18 | 0x1a)),
                _ => Some(0),
            };
            match skip {
                Some(i) => bytes = &bytes[i..],
                None => return,
            }
            self.step(bytes[0]);
            bytes = &bytes[1..];
        }
    }

    fn begin_csi(&mut self) {
        self.parse.state = State::Csi;
        self.parse.params_len = 0;
        self.parse.params_overflow = false;
        self.parse.intermediate = None;
        self.parse.intermediates_overflow = false;
    }

    fn step(&mut self, b: u8) {
        match self.parse.state {
            State::Ground => {
                if b == 0x1b {
                    self.parse.state = State::Escape;
                }
            }
            State::Escape => match b {
                b'[' => self.begin_csi(),
                b']' => self.parse.state = State::String { osc: true },
                b'P' | b'X' | b'^' | b'_' => self.parse.state = State::String { osc: false },
                0x1b => {}
                0x18 | 0x1a => self.parse.state = State::Ground,
                0x20..=0x2f => self.parse.state = State::EscapeIntermediate,
                b'c' => {
                    // RIS: full reset.
                    self.modes = ScannedModes::default();
                    self.parse.state = State::Ground;
                }
                // C0 controls are executed inside escapes without aborting them.
                0x00..=0x1f => {}
                _ => self.parse.state = State::Ground,
            },
            State::EscapeIntermediate => match b {
                0x1b => self.parse.state = State::Escape,
                0x18 | 0x1a => self.parse.state = State::Ground,
                0x00..=0x2f => {}
                _ => self.parse.state = State::Ground,
            },
            State::Csi
                if self.parse.params_len == 0
                    && self.parse.intermediate.is_none()
                    && !matches!(b, b'?' | b'>' | b'<' | b'=' | 0x00..=0x1f) =>
            {
                // No private marker: nothing here for us (see CsiIgnore).
                self.parse.state = if (0x40..=0x7e).contains(&b) {
                    State::Ground
                } else {
                    State::CsiIgnore
                };
            }
            State::CsiIgnore => match b {
                0x1b => self.parse.state = State::Escape,
                0x18 | 0x1a | 0x40..=0x7e => self.parse.state = State::Ground,
                _ => {}
            },
            State::Csi => match b {
                0x1b => self.parse.state = State::Escape,
                0x18 | 0x1a => self.parse.state = State::Ground,
                0x30..=0x3f => {
                    if self.parse.intermediate.is_some() {
                        // Parameter after an intermediate: malformed; ignore at the end.
                        self.parse.intermediates_overflow = true;
                    }
                    if self.parse.params_len < MAX_CSI_PARAMS {
                        self.parse.params[self.parse.params_len] = b;
                        self.parse.params_len += 1;
                    } else {
                        self.parse.params_overflow = true;
                    }
                }
                0x20..=0x2f => {
                    if self.parse.intermediate.is_some() {
                        self.parse.intermediates_overflow = true;
                    }
                    self.parse.intermediate = Some(b);
                }
                0x40..=0x7e => {
                    self.parse.state = State::Ground;
                    if !self.parse.params_overflow && !self.parse.intermediates_overflow {
                        self.dispatch_csi(b);
                    }
                }
                // Other C0 controls execute without ending the sequence; DEL and
                // 8-bit bytes are ignored.
                _ => {}
            },
            State::String { osc } => match b {
                0x07 if osc => self.parse.state = State::Ground,
                0x1b => self.parse.state = State::StringEscape,
                0x18 | 0x1a => self.parse.state = State::Ground,
                _ => {}
            },
            State::StringEscape => {
                if b == b'\\' {
                    self.parse.state = State::Ground;
                } else {
                    // The ESC aborted the string and starts a new sequence.
                    self.parse.state = State::Escape;
                    self.step(b);
                }
            }
        }
    }

    fn dispatch_csi(&mut self, final_byte: u8) {
        let raw = &self.parse.params[..self.parse.params_len];
        let (prefix, rest) = match raw.first() {
            Some(&p @ (b'?' | b'>' | b'<' | b'=')) => (Some(p), &raw[1..]),
            _ => (None, raw),
        };
        // Parse up to 8 numeric parameters; `None` for empty ones. Sub-parameters
        // (`:`) are folded into their parameter's first value.
        let mut nums: [Option<u32>; 8] = [None; 8];
        let mut count = 0usize;
        let mut cur: Option<u32> = None;
        let mut in_sub = false;
        for &c in rest {
            match c {
                b'0'..=b'9' => {
                    if !in_sub {
                        let d = u32::from(c - b'0');
                        cur = Some(cur.unwrap_or(0).saturating_mul(10).saturating_add(d));
                    }
                }
                b':' => in_sub = true,
                b';' => {
                    if count < nums.len() {
                        nums[count] = cur;
                    }
                    count += 1;
                    cur = None;
                    in_sub = false;
                }
                // A second private marker or other odd byte: not a sequence we know.
                _ => return,
            }
        }
        if count < nums.len() {
            nums[count] = cur;
        }
        count += 1;
        let nums = &nums[..count.min(nums.len())];
        let intermediate = self.parse.intermediate;

        match (prefix, intermediate, final_byte) {
            (Some(b'?'), None, b'h') => {
                for &n in nums.iter().flatten() {
                    self.set_private(n, true);
                }
            }
            (Some(b'?'), None, b'l') => {
                for &n in nums.iter().flatten() {
                    self.set_private(n, false);
                }
            }
            (Some(b'>'), None, b'u') => {
                let flags = nums.first().copied().flatten().unwrap_or(0);
                self.kitty_mut().push(flags);
            }
            (Some(b'<'), None, b'u') => {
                let n = nums.first().copied().flatten().unwrap_or(1);
                self.kitty_mut().pop(n as usize);
            }
            (Some(b'='), None, b'u') => {
                let flags = nums.first().copied().flatten().unwrap_or(0);
                let mode = nums.get(1).copied().flatten().unwrap_or(1);
                self.kitty_mut().set(flags, mode);
            }
            // XTMODKEYS: `CSI > 4 ; n m` sets modifyOtherKeys, `CSI > 4 m` resets it.
            (Some(b'>'), None, b'm') if nums.first().copied().flatten() == Some(4) => {
                self.modes.modify_other_keys = nums.get(1).copied().flatten().unwrap_or(0);
            }
            // `CSI > 4 n` disables modifyOtherKeys.
            (Some(b'>'), None, b'n') if nums.first().copied().flatten() == Some(4) => {
                self.modes.modify_other_keys = 0;
            }
            (None, Some(b'!'), b'p') => {
                // DECSTR soft reset: xterm leaves these modes alone; nothing to do.
            }
            _ => {}
        }
    }

    fn kitty_mut(&mut self) -> &mut KittyKeyboard {
        if self.modes.alternate_screen {
            &mut self.modes.kitty_alternate
        } else {
            &mut self.modes.kitty_main
        }
    }

    fn set_private(&mut self, mode: u32, on: bool) {
        match mode {
            1004 => self.modes.focus_events = on,
            2026 => self.modes.synchronized_output = on,
            2031 => self.modes.color_scheme_updates = on,
            47 | 1047 | 1049 => {
                if on && !self.modes.alternate_screen && mode != 47 {
                    // Entering a cleared alternate screen starts a fresh kitty stack.
                    self.modes.kitty_alternate = KittyKeyboard::default();
                }
                self.modes.alternate_screen = on;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(chunks: &[&[u8]]) -> ScannedModes {
        let mut s = ModeScanner::new();
        for c in chunks {
            s.feed(c);
        }
        s.modes().clone()
    }

    #[test]
    fn decset_and_decrst() {
        let m = scan(&[b"\x1b[?1004h\x1b[?2004h\x1b[?2026;2031h"]);
        assert!(m.focus_events && m.synchronized_output && m.color_scheme_updates);
        let m = scan(&[b"\x1b[?1004h\x1b[?1004l"]);
        assert!(!m.focus_events);
    }

    #[test]
    fn sequences_without_a_private_marker_are_skipped_whole() {
        // SGR with many parameters, cursor moves, an erase, DECSTR: none
        // changes a tracked mode, and none swallows the real one after it.
        let stream = b"\x1b[38;2;1;2;3;48;5;17;1;4m\x1b[12;40H\x1b[2K\x1b[!p\x1b[?1004h\x1b[0m";
        for split in 0..stream.len() {
            let (a, b) = stream.split_at(split);
            assert!(scan(&[a, b]).focus_events, "split {split}");
        }
        // An ESC inside an ignored CSI aborts it and starts a real sequence.
        assert!(scan(&[b"\x1b[38;5\x1b[?1004h"]).focus_events);
        // CAN aborts it; what follows is text.
        assert!(!scan(&[b"\x1b[1\x18?1004h"]).focus_events);
    }

    #[test]
    fn split_sequences_survive() {
        let whole = b"ab\x1b[?1004h\x1b]0;title\x07\x1b[>5u\x1b[>4;2m";
        for split in 0..whole.len() {
            let (a, b) = whole.split_at(split);
            let m = scan(&[a, b]);
            assert!(m.focus_events, "split {split}");
            assert_eq!(m.kitty_main.flags(), 5, "split {split}");
            assert_eq!(m.modify_other_keys, 2, "split {split}");
        }
    }

    #[test]
    fn osc_payload_is_not_parsed() {
        let m = scan(&[b"\x1b]2;\x1b[?1004h\x07"]);
        // ESC inside the OSC aborts it and starts a real CSI, as xterm does.
        assert!(m.focus_events);
        let m = scan(&[b"\x1b]2;[?1004h\x07"]);
        assert!(!m.focus_events);
    }

    #[test]
    fn kitty_stack() {
        let m = scan(&[b"\x1b[>1u\x1b[>3u"]);
        assert_eq!(m.kitty_main.stack, vec![1, 3]);
        let m = scan(&[b"\x1b[>1u\x1b[>3u\x1b[<u"]);
        assert_eq!(m.kitty_main.flags(), 1);
        let m = scan(&[b"\x1b[>1u\x1b[>3u\x1b[<5u"]);
        assert_eq!(m.kitty_main.flags(), 0);
        let m = scan(&[b"\x1b[>1u\x1b[=4;2u"]);
        assert_eq!(m.kitty_main.flags(), 5);
        let m = scan(&[b"\x1b[>7u\x1b[=4;3u"]);
        assert_eq!(m.kitty_main.flags(), 3);
        let m = scan(&[b"\x1b[=9u"]);
        assert_eq!(m.kitty_main.base, 9);
        // Queries don't change anything.
        let m = scan(&[b"\x1b[?u\x1b[>0q\x1b[c"]);
        assert!(m.kitty_main.is_default());
        // Alternate screen has its own stack.
        let m = scan(&[b"\x1b[>1u\x1b[?1049h\x1b[>8u"]);
        assert_eq!(m.kitty_main.flags(), 1);
        assert_eq!(m.kitty_alternate.flags(), 8);
    }

    #[test]
    fn kitty_stack_is_bounded() {
        let mut s = ModeScanner::new();
        for _ in 0..1000 {
            s.feed(b"\x1b[>1u");
        }
        assert_eq!(s.modes().kitty_main.stack.len(), KITTY_STACK_MAX);
    }

    #[test]
    fn modify_other_keys() {
        assert_eq!(scan(&[b"\x1b[>4;2m"]).modify_other_keys, 2);
        assert_eq!(scan(&[b"\x1b[>4;2m\x1b[>4m"]).modify_other_keys, 0);
        assert_eq!(scan(&[b"\x1b[>4;1m\x1b[>4n"]).modify_other_keys, 0);
        // Plain SGR is not XTMODKEYS.
        assert_eq!(scan(&[b"\x1b[4;2m"]).modify_other_keys, 0);
    }

    #[test]
    fn utf8_continuation_bytes_are_not_c1() {
        // U+259B contains 0x9b, the 8-bit CSI; it must not start a sequence.
        let m = scan(&["▛?1004h".as_bytes()]);
        assert!(!m.focus_events);
    }

    #[test]
    fn ris_resets() {
        let m = scan(&[b"\x1b[?1004h\x1b[>1u\x1bc"]);
        assert_eq!(m, ScannedModes::default());
    }
}
