//! [`Screen`]: the `vt100` screen model plus the modes `vt100` does not track.

use std::num::NonZeroU16;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::modes::{ModeScanner, TerminalModes};
use crate::text::ScreenText;

/// Default number of scrollback lines. The transcript is the history; the screen
/// model is only a cache, so keep this small.
pub const DEFAULT_SCROLLBACK: usize = 200;

/// Longest window title kept, in characters.
const MAX_TITLE_CHARS: usize = 256;

/// `vt100` callbacks: we only keep the window title (OSC 0 / OSC 2).
#[derive(Clone, Debug, Default)]
struct Callbacks {
    title: String,
}

impl vt100::Callbacks for Callbacks {
    fn set_window_title(&mut self, _: &mut vt100::Screen, title: &[u8]) {
        self.title = String::from_utf8_lossy(title)
            .chars()
            .filter(|c| !c.is_control())
            .take(MAX_TITLE_CHARS)
            .collect();
    }
}

fn nz(v: u16) -> NonZeroU16 {
    NonZeroU16::new(v).unwrap_or(NonZeroU16::MIN)
}

/// A terminal screen model fed with a session's raw PTY output.
///
/// Wraps `vt100::Parser` (screen contents, cursor, the modes vt100 knows) and a
/// [`ModeScanner`] (the modes it does not). Sizes of 0 are clamped to 1: a PTY
/// may report 0x0 before anyone sets its size.
///
/// # Panics inside vt100
///
/// [`Screen::process`] runs the parser under `catch_unwind`. If `vt100` panics, the
/// screen is rebuilt: a fresh parser of the same size and scrollback, with the
/// input modes vt100 had (alternate screen, mouse, cursor keys, ...) re-applied when
/// they can still be read, and **the chunk that caused the panic is dropped** (it
/// would likely panic again). The picture is then blank until the application
/// redraws (Claude Code redraws often). [`Screen::rebuilds`] counts these events.
/// The raw-stream [`ModeScanner`] is our own code and keeps its state.
///
/// # UTF-8 split across chunks
///
/// `vte` 0.15 (under `vt100` 0.18) loses the byte that follows a multi-byte
/// character split across two `process` calls when the next chunk holds more than
/// the rest of that character (e.g. `"·"` then `" ←"` paints `"·←"`). So
/// [`Screen::process`] never hands the parser a chunk that ends inside a UTF-8
/// sequence: an incomplete tail (at most 3 bytes) is held back and prepended to the
/// next chunk.
pub struct Screen {
    parser: vt100::Parser<Callbacks>,
    scanner: ModeScanner,
    /// Incomplete UTF-8 tail of the previous chunk, not yet given to the parser.
    carry: Vec<u8>,
    scrollback: usize,
    rebuilds: u64,
    #[cfg(test)]
    panic_next: bool,
}

impl std::fmt::Debug for Screen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Screen")
            .field("size", &self.size())
            .field("scrollback", &self.scrollback)
            .field("rebuilds", &self.rebuilds)
            .finish_non_exhaustive()
    }
}

impl Screen {
    /// A blank screen of `rows` x `cols` with [`DEFAULT_SCROLLBACK`] lines of
    /// scrollback.
    pub fn new(rows: u16, cols: u16) -> Self {
        Self::with_scrollback(rows, cols, DEFAULT_SCROLLBACK)
    }

    /// A blank screen with the given scrollback capacity (lines).
    pub fn with_scrollback(rows: u16, cols: u16, scrollback: usize) -> Self {
        Self {
            parser: vt100::Parser::new_with_callbacks(
                nz(rows),
                nz(cols),
                scrollback,
                Callbacks::default(),
            ),
            scanner: ModeScanner::new(),
            carry: Vec::new(),
            scrollback,
            rebuilds: 0,
            #[cfg(test)]
            panic_next: false,
        }
    }

    /// Feed raw PTY output. Never panics; see the type docs for what happens if
    /// `vt100` does.
    pub fn process(&mut self, bytes: &[u8]) {
        self.scanner.feed(bytes);
        if self.carry.is_empty() {
            let keep = incomplete_utf8_tail(bytes);
            let (now, later) = bytes.split_at(bytes.len() - keep);
            self.parse(now);
            self.carry.extend_from_slice(later);
        } else {
            let mut joined = std::mem::take(&mut self.carry);
            joined.extend_from_slice(bytes);
            let keep = incomplete_utf8_tail(&joined);
            let now_len = joined.len() - keep;
            self.parse(&joined[..now_len]);
            self.carry.extend_from_slice(&joined[now_len..]);
        }
    }

    fn parse(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        #[cfg(test)]
        let panic_next = std::mem::take(&mut self.panic_next);
        let parser = &mut self.parser;
        let result = catch_unwind(AssertUnwindSafe(|| {
            #[cfg(test)]
            if panic_next {
                panic!("injected vt100 panic");
            }
            parser.process(bytes);
        }));
        if result.is_err() {
            self.rebuild();
        }
    }

    fn rebuild(&mut self) {
        self.rebuilds += 1;
        let (rows, cols) = self.size();
        // Reading the old parser's modes could itself panic if its state is
        // inconsistent; if so, start from defaults.
        let old = &self.parser;
        let modes = catch_unwind(AssertUnwindSafe(|| {
            let s = old.screen();
            let mut b = Vec::new();
            if s.alternate_screen() {
                b.extend_from_slice(b"\x1b[?1049h");
            }
            b.extend_from_slice(s.input_mode_formatted().as_bytes());
            if s.hide_cursor() {
                b.extend_from_slice(b"\x1b[?25l");
            }
            (b, old.callbacks().title.clone())
        }))
        .ok();
        tracing::warn!(
            rebuilds = self.rebuilds,
            rows,
            cols,
            "vt100 panicked; screen model rebuilt and the chunk dropped"
        );
        self.parser = vt100::Parser::new_with_callbacks(
            nz(rows),
            nz(cols),
            self.scrollback,
            Callbacks::default(),
        );
        if let Some((bytes, title)) = modes {
            let parser = &mut self.parser;
            if catch_unwind(AssertUnwindSafe(|| parser.process(&bytes))).is_err() {
                self.parser = vt100::Parser::new_with_callbacks(
                    nz(rows),
                    nz(cols),
                    self.scrollback,
                    Callbacks::default(),
                );
            }
            self.parser.callbacks_mut().title = title;
        }
    }

    /// How many times the model was rebuilt after a panic in `vt100`.
    pub fn rebuilds(&self) -> u64 {
        self.rebuilds
    }

    /// Resize the model (clamped to at least 1x1). Call this whenever the PTY is
    /// resized, before feeding output produced at the new size.
    pub fn resize(&mut self, rows: u16, cols: u16) {
        self.parser.set_size(nz(rows), nz(cols));
    }

    /// `(rows, cols)`.
    pub fn size(&self) -> (u16, u16) {
        let (r, c) = self.parser.screen().size();
        (r.get(), c.get())
    }

    /// Plain text of the visible screen, rows joined by `\n` (wrapped rows are
    /// joined without one), trailing blanks dropped.
    pub fn contents(&self) -> String {
        self.parser.screen().contents()
    }

    /// Plain text of each visible row (exactly `rows` entries).
    pub fn rows_text(&self) -> Vec<String> {
        let (_, cols) = self.size();
        self.parser.screen().rows(0, cols).collect()
    }

    /// The visible text with per-row wrap flags, as classifiers consume it.
    pub fn text(&self) -> ScreenText {
        let screen = self.parser.screen();
        let rows = self.rows_text();
        let wrapped = (0..rows.len())
            .map(|i| u16::try_from(i).is_ok_and(|i| screen.row_wrapped(i)))
            .collect();
        ScreenText::with_wrapped(rows, wrapped)
    }

    /// Cursor `(row, col)`, 0-based.
    pub fn cursor_position(&self) -> (u16, u16) {
        self.parser.screen().cursor_position()
    }

    /// The window title last set by OSC 0 / OSC 2 (control characters removed).
    pub fn title(&self) -> &str {
        &self.parser.callbacks().title
    }

    /// The current terminal modes, from vt100 and from the raw-stream scanner.
    pub fn modes(&self) -> TerminalModes {
        let s = self.parser.screen();
        let scanned = self.scanner.modes();
        TerminalModes {
            alternate_screen: s.alternate_screen(),
            hide_cursor: s.hide_cursor(),
            application_cursor: s.application_cursor(),
            application_keypad: s.application_keypad(),
            bracketed_paste: s.bracketed_paste(),
            mouse_mode: s.mouse_protocol_mode().into(),
            mouse_encoding: s.mouse_protocol_encoding().into(),
            focus_events: scanned.focus_events,
            synchronized_output: scanned.synchronized_output,
            color_scheme_updates: scanned.color_scheme_updates,
            kitty_main: scanned.kitty_main.clone(),
            kitty_alternate: scanned.kitty_alternate.clone(),
            modify_other_keys: scanned.modify_other_keys,
        }
    }

    /// The underlying `vt100` screen, for anything not wrapped here
    /// (`contents_formatted`, cells, colours, ...).
    pub fn vt(&self) -> &vt100::Screen {
        self.parser.screen()
    }

    #[cfg(test)]
    pub(crate) fn inject_panic_on_next_process(&mut self) {
        self.panic_next = true;
    }
}

/// Length of an incomplete UTF-8 sequence at the end of `bytes` (0 if none).
fn incomplete_utf8_tail(bytes: &[u8]) -> usize {
    // Walk back over at most 3 continuation bytes to the lead byte.
    for back in 1..=bytes.len().min(4) {
        let b = bytes[bytes.len() - back];
        if b & 0xc0 == 0x80 {
            continue; // continuation byte
        }
        let need = match b {
            0xc2..=0xdf => 2,
            0xe0..=0xef => 3,
            0xf0..=0xf4 => 4,
            // ASCII, or a byte that can't start a sequence: nothing to hold back.
            _ => return 0,
        };
        return if back < need { back } else { 0 };
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_tail() {
        assert_eq!(incomplete_utf8_tail(b"abc"), 0);
        assert_eq!(incomplete_utf8_tail(b"ab\xc2"), 1);
        assert_eq!(incomplete_utf8_tail("a·".as_bytes()), 0);
        assert_eq!(incomplete_utf8_tail(b"a\xe2\x86"), 2);
        assert_eq!(incomplete_utf8_tail("a←".as_bytes()), 0);
        assert_eq!(incomplete_utf8_tail(b"\xf0\x9f\x98"), 3);
        assert_eq!(incomplete_utf8_tail(b"\x80\x80\x80\x80"), 0);
    }

    #[test]
    fn utf8_split_across_chunks_keeps_following_bytes() {
        let whole = "x · ← for agents".as_bytes();
        for cut in 0..whole.len() {
            let mut s = Screen::new(2, 40);
            s.process(&whole[..cut]);
            s.process(&whole[cut..]);
            assert_eq!(s.rows_text()[0], "x · ← for agents", "cut at {cut}");
        }
        // Byte by byte too.
        let mut s = Screen::new(2, 40);
        for b in whole {
            s.process(std::slice::from_ref(b));
        }
        assert_eq!(s.rows_text()[0], "x · ← for agents");
    }

    #[test]
    fn panic_in_vt100_rebuilds_and_keeps_modes() {
        let mut s = Screen::new(5, 20);
        s.process(b"\x1b]0;hello\x07\x1b[?2004h\x1b[?1004h\x1b[?1000h\x1b[?1049hsome text");
        assert_eq!(s.title(), "hello");
        let before = s.modes();
        s.inject_panic_on_next_process();
        // (The default panic hook prints "injected vt100 panic"; that is expected.)
        s.process(b"more");
        assert_eq!(s.rebuilds(), 1);
        assert_eq!(s.size(), (5, 20));
        // The chunk was dropped and the old text is gone.
        assert!(!s.contents().contains("more"));
        assert!(!s.contents().contains("some text"));
        assert_eq!(s.modes(), before);
        assert_eq!(s.title(), "hello");
        // It keeps working afterwards.
        s.process(b"\x1b[Hafter");
        assert!(s.contents().contains("after"));
    }

    #[test]
    fn zero_size_is_clamped() {
        let mut s = Screen::new(0, 0);
        assert_eq!(s.size(), (1, 1));
        s.resize(0, 7);
        assert_eq!(s.size(), (1, 7));
        s.process(b"hello world");
    }

    #[test]
    fn title_is_tracked() {
        let mut s = Screen::new(5, 20);
        s.process("\x1b]0;\u{2733} Claude Code\x07".as_bytes());
        assert_eq!(s.title(), "\u{2733} Claude Code");
        s.process(b"\x1b]2;x\x1b\\");
        assert_eq!(s.title(), "x");
    }
}
