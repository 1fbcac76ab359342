//! [`Screen`]: the `alacritty_terminal` screen model plus the modes it does not
//! track.
//!
//! The model was `vt100` until its per-character path became the holder's
//! limit in a flood (about a core at the raw PTY's rate on a 2-core machine);
//! `alacritty_terminal` parses the same streams about twice as fast (`ccd-bench
//! parse`).

use std::num::NonZeroU16;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, MutexGuard};

use alacritty_terminal::event::{Event, EventListener};
use alacritty_terminal::grid::{Dimensions, Row};
use alacritty_terminal::index::{Column, Line};
use alacritty_terminal::term::cell::{Cell, Flags};
use alacritty_terminal::term::{Config, Term, TermMode};
use alacritty_terminal::vte::ansi::{Processor, Timeout};
use unicode_width::UnicodeWidthChar;

use crate::lane::Lane;
use crate::modes::{ModeScanner, MouseEncoding, MouseMode, TerminalModes};
use crate::text::ScreenText;

/// Default number of scrollback lines. The transcript is the history; the screen
/// model is only a cache, so keep this small.
pub const DEFAULT_SCROLLBACK: usize = 200;

/// Longest window title kept, in characters.
const MAX_TITLE_CHARS: usize = 256;

/// Receives the terminal's events: only the window title is kept. Replies the
/// terminal would write back to the application (cursor reports, colour
/// queries) are dropped: an attached client's own terminal answers those.
///
/// The terminal owns its listener and gives no access to it, so the title
/// lives behind an `Arc` the [`Screen`] shares (set only while the terminal
/// parses, which the `Screen`'s owner serializes: the mutex is never
/// contended).
#[derive(Clone, Debug, Default)]
pub(crate) struct Listener {
    title: Arc<Mutex<String>>,
}

impl Listener {
    fn title(&self) -> MutexGuard<'_, String> {
        self.title.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl EventListener for Listener {
    fn send_event(&self, event: Event) {
        match event {
            Event::Title(t) => *self.title() = clean_title(&t),
            Event::ResetTitle => self.title().clear(),
            _ => {}
        }
    }
}

fn clean_title(t: &str) -> String {
    t.chars()
        .filter(|c| !c.is_control())
        .take(MAX_TITLE_CHARS)
        .collect()
}

/// Synchronized updates (`?2026`) are not buffered: the model shows every
/// byte as soon as it is fed, so a redraw taken at a stream position matches
/// that position exactly. (The mode itself is tracked by [`ModeScanner`].)
#[derive(Debug, Default)]
pub(crate) struct Unbuffered;

impl Timeout for Unbuffered {
    fn set_timeout(&mut self, _: std::time::Duration) {}
    fn clear_timeout(&mut self) {}
    fn pending_timeout(&self) -> bool {
        false
    }
}

/// Rows and columns, as `alacritty_terminal` wants them.
#[derive(Clone, Copy, Debug)]
struct Size {
    rows: u16,
    cols: u16,
}

impl Dimensions for Size {
    fn total_lines(&self) -> usize {
        usize::from(self.rows)
    }
    fn screen_lines(&self) -> usize {
        usize::from(self.rows)
    }
    fn columns(&self) -> usize {
        usize::from(self.cols)
    }
}

/// The model's size for a terminal of `rows` x `cols`: at least 1 row and
/// [`MIN_COLS`] columns.
fn model_size(rows: u16, cols: u16) -> Size {
    Size {
        rows: NonZeroU16::new(rows).unwrap_or(NonZeroU16::MIN).get(),
        cols: cols.max(MIN_COLS),
    }
}

/// Fewest columns the model has: `alacritty_terminal` 0.26 indexes past the
/// row when a wide character is printed on a 1-column screen (found by the
/// `screen` fuzz target), so a narrower terminal is modelled 2 columns wide.
pub const MIN_COLS: u16 = 2;

/// A terminal screen model fed with a session's raw PTY output.
///
/// Wraps an `alacritty_terminal::Term` (screen contents, cursor, the modes it
/// knows) and a [`ModeScanner`] (the modes it does not). Sizes are clamped to
/// at least 1 row and [`MIN_COLS`] columns: a PTY may report 0x0 before anyone
/// sets its size.
///
/// # Panics inside the terminal model
///
/// [`Screen::process`] runs the parser under `catch_unwind`. If it panics, the
/// screen is rebuilt: a fresh model of the same size and scrollback, with the
/// input modes it had (alternate screen, mouse, cursor keys, ...) re-applied
/// when they can still be read, and **the chunk that caused the panic is
/// dropped** (it would likely panic again). The picture is then blank until the
/// application redraws (Claude Code redraws often). [`Screen::rebuilds`] counts
/// these events. The raw-stream [`ModeScanner`] is our own code and keeps its
/// state.
///
/// # UTF-8 split across chunks
///
/// `vte` 0.15 has lost the byte that follows a multi-byte character split
/// across two `advance` calls when the next chunk holds more than the rest of
/// that character (e.g. `"·"` then `" ←"` painting `"·←"`). So
/// [`Screen::process`] never hands the parser a chunk that ends inside a UTF-8
/// sequence: an incomplete tail (at most 3 bytes) is held back and prepended to
/// the next chunk.
pub struct Screen {
    pub(crate) term: Term<Listener>,
    /// The terminal's listener (shares the title with it).
    listener: Listener,
    parser: Processor<Unbuffered>,
    scanner: ModeScanner,
    /// Incomplete UTF-8 tail of the previous chunk, not yet given to the parser.
    carry: Vec<u8>,
    /// ccd's parser in front of `parser` ([`crate::lane`]).
    lane: Lane,
    /// Whether `parser` gets every byte ([`Screen::set_vte_only`]).
    vte_only: bool,
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

fn new_term(rows: u16, cols: u16, scrollback: usize, listener: &Listener) -> Term<Listener> {
    let config = Config {
        scrolling_history: scrollback,
        ..Config::default()
    };
    Term::new(config, &model_size(rows, cols), listener.clone())
}

impl Screen {
    /// A blank screen of `rows` x `cols` with [`DEFAULT_SCROLLBACK`] lines of
    /// scrollback.
    pub fn new(rows: u16, cols: u16) -> Self {
        Self::with_scrollback(rows, cols, DEFAULT_SCROLLBACK)
    }

    /// A blank screen with the given scrollback capacity (lines).
    pub fn with_scrollback(rows: u16, cols: u16, scrollback: usize) -> Self {
        let listener = Listener::default();
        Self {
            term: new_term(rows, cols, scrollback, &listener),
            listener,
            parser: Processor::new(),
            scanner: ModeScanner::new(),
            carry: Vec::new(),
            lane: Lane::new(scrollback),
            vte_only: false,
            scrollback,
            rebuilds: 0,
            #[cfg(test)]
            panic_next: false,
        }
    }

    /// Feed raw PTY output. Never panics; see the type docs for what happens if
    /// the terminal model does.
    pub fn process(&mut self, bytes: &[u8]) {
        if self.vte_only {
            // Else the lane feeds the scanner as it parses.
            self.scanner.feed(bytes);
        }
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
        self.lane.clear_scanned();
        let (parser, term, lane, scanner) = (
            &mut self.parser,
            &mut self.term,
            &mut self.lane,
            &mut self.scanner,
        );
        let vte_only = self.vte_only;
        let result = catch_unwind(AssertUnwindSafe(|| {
            #[cfg(test)]
            if panic_next {
                panic!("injected terminal model panic");
            }
            if vte_only {
                parser.advance(term, bytes);
            } else {
                lane.advance(parser, term, scanner, bytes);
            }
        }));
        if result.is_err() {
            if !vte_only {
                // The scanner gets what the lane had not given it.
                let scanned = self.lane.scanned().min(bytes.len());
                self.scanner.feed(&bytes[scanned..]);
            }
            self.rebuild();
        }
    }

    /// Give every byte to `vte`, as `alacritty_terminal`'s own parser loop
    /// does, instead of through ccd's lane in front of it (`ccd_screen::lane`):
    /// the reference the lane is tested and fuzzed against. Same model
    /// either way, only slower.
    pub fn set_vte_only(&mut self, on: bool) {
        self.vte_only = on;
    }

    /// Bytes of plain lines the lane stepped over because they scrolled out
    /// of the model before anything could show them (`ccd_screen::lane`).
    #[doc(hidden)]
    pub fn lines_stepped_over(&self) -> u64 {
        self.lane.stepped_over()
    }

    fn rebuild(&mut self) {
        self.rebuilds += 1;
        let (rows, cols) = self.size();
        // Reading the old model's modes could itself panic if its state is
        // inconsistent; if so, start from defaults.
        let old = &self.term;
        let kept = catch_unwind(AssertUnwindSafe(|| {
            let mut b = Vec::new();
            let mode = *old.mode();
            if mode.contains(TermMode::ALT_SCREEN) {
                b.extend_from_slice(b"\x1b[?1049h");
            }
            input_modes_bytes(mode, &mut b);
            if !mode.contains(TermMode::SHOW_CURSOR) {
                b.extend_from_slice(b"\x1b[?25l");
            }
            b
        }))
        .ok();
        tracing::warn!(
            rebuilds = self.rebuilds,
            rows,
            cols,
            "the terminal model panicked; rebuilt and the chunk dropped"
        );
        // The title is kept: the new terminal shares the listener.
        self.term = new_term(rows, cols, self.scrollback, &self.listener);
        self.parser = Processor::new();
        self.lane = Lane::new(self.scrollback);
        if let Some(bytes) = kept {
            let (parser, term) = (&mut self.parser, &mut self.term);
            if catch_unwind(AssertUnwindSafe(|| parser.advance(term, &bytes))).is_err() {
                self.term = new_term(rows, cols, self.scrollback, &self.listener);
                self.parser = Processor::new();
            }
        }
    }

    /// How many times the model was rebuilt after a panic in the terminal model.
    pub fn rebuilds(&self) -> u64 {
        self.rebuilds
    }

    /// Resize the model (clamped to at least 1 row and [`MIN_COLS`] columns). Call this whenever the PTY is
    /// resized, before feeding output produced at the new size.
    pub fn resize(&mut self, rows: u16, cols: u16) {
        let before = self.size();
        self.term.resize(model_size(rows, cols));
        if self.size() != before {
            // `Term::resize` resets the scrolling region (when the size
            // changes; else it does nothing).
            self.lane.resized();
        }
    }

    /// `(rows, cols)`.
    pub fn size(&self) -> (u16, u16) {
        let g = self.term.grid();
        (
            u16::try_from(g.screen_lines()).unwrap_or(u16::MAX),
            u16::try_from(g.columns()).unwrap_or(u16::MAX),
        )
    }

    /// Visible row `i` (0 = top).
    pub(crate) fn row(&self, i: usize) -> &Row<Cell> {
        &self.term.grid()[Line(i as i32)]
    }

    /// Whether visible row `i` soft-wraps into the next.
    pub(crate) fn row_wrapped(&self, i: usize) -> bool {
        wraps(self.row(i))
    }

    /// Whether the cell at visible row `i`, column `col` only holds room
    /// for a wide character: its second cell (after the character), or the
    /// last cell of a row that wrapped because the character did not fit (the
    /// next row starts with it). A placeholder whose character is gone (line
    /// and character edits move rows and cells apart) is a blank like any
    /// other.
    pub(crate) fn is_spacer(&self, i: usize, col: usize) -> bool {
        self.is_spacer_in(self.row(i), i, col)
    }

    /// [`Screen::is_spacer`] with visible row `i` at hand (`row`): a
    /// redraw looks at every cell, and each lookup of a row by its
    /// number costs an index computation.
    pub(crate) fn is_spacer_in(&self, row: &Row<Cell>, i: usize, col: usize) -> bool {
        let flags = row[Column(col)].flags;
        if flags.contains(Flags::WIDE_CHAR_SPACER) {
            return col > 0 && wide_pair(row, col - 1);
        }
        flags.contains(Flags::LEADING_WIDE_CHAR_SPACER)
            && i + 1 < self.term.grid().screen_lines()
            && wraps(row)
            && self.is_wide_pair(i + 1, 0)
    }

    /// Whether the cell at row `i`, column `col` holds a wide character
    /// followed by its second cell, as writing the character leaves it.
    /// Cell edits (deleting or inserting characters) can leave other
    /// states; see [`Screen::shown`].
    pub(crate) fn is_wide_pair(&self, i: usize, col: usize) -> bool {
        wide_pair(self.row(i), col)
    }

    /// The character the cell at row `i`, column `col` shows:
    /// `alacritty_terminal` marks where a tab started with a `'\t'` in a
    /// blank cell (for copying), shown as the blank it is; a wide character
    /// that cell edits left in a single cell is shown as U+FFFD (no write can
    /// put it back in one cell, and a terminal would draw it over the next).
    pub(crate) fn shown(&self, i: usize, col: usize) -> char {
        shown_in(self.row(i), col)
    }

    /// Plain text of visible row `i`: each character once (a wide character's
    /// second cell is skipped), combining marks kept, trailing blanks kept,
    /// tab marks shown as the blanks they are.
    fn row_text_untrimmed(&self, i: usize) -> String {
        let row = self.row(i);
        let mut s = String::with_capacity(row.len());
        for col in 0..row.len() {
            let cell = &row[Column(col)];
            if self.is_spacer(i, col) {
                continue;
            }
            s.push(self.shown(i, col));
            if let Some(marks) = cell.zerowidth() {
                s.extend(marks);
            }
        }
        s
    }

    /// Plain text of the visible screen, rows joined by `\n` (wrapped rows are
    /// joined without one), trailing blanks of each line and trailing empty
    /// lines dropped.
    pub fn contents(&self) -> String {
        let (rows, _) = self.size();
        let mut out = String::new();
        for i in 0..usize::from(rows) {
            let text = self.row_text_untrimmed(i);
            if self.row_wrapped(i) {
                out.push_str(&text);
            } else {
                out.push_str(text.trim_end_matches(' '));
                out.push('\n');
            }
        }
        out.truncate(out.trim_end_matches(['\n', ' ']).len());
        out
    }

    /// Plain text of each visible row (exactly `rows` entries), trailing blanks
    /// dropped.
    pub fn rows_text(&self) -> Vec<String> {
        let (rows, _) = self.size();
        (0..usize::from(rows))
            .map(|i| {
                let mut t = self.row_text_untrimmed(i);
                t.truncate(t.trim_end_matches(' ').len());
                t
            })
            .collect()
    }

    /// The visible text with per-row wrap flags, as classifiers consume it.
    pub fn text(&self) -> ScreenText {
        let (rows, _) = self.size();
        let rows = usize::from(rows);
        ScreenText::with_wrapped(
            (0..rows).map(|i| self.row_text_untrimmed(i)).collect(),
            (0..rows).map(|i| self.row_wrapped(i)).collect(),
        )
    }

    /// Cursor `(row, col)`, 0-based.
    pub fn cursor_position(&self) -> (u16, u16) {
        let p = self.term.grid().cursor.point;
        (
            u16::try_from(p.line.0.max(0)).unwrap_or(u16::MAX),
            u16::try_from(p.column.0).unwrap_or(u16::MAX),
        )
    }

    /// The window title last set by OSC 0 / OSC 2 (control characters removed).
    pub fn title(&self) -> String {
        self.listener.title().clone()
    }

    /// DECCKM: arrows send `ESC O A` instead of `ESC [ A`.
    pub fn application_cursor(&self) -> bool {
        self.term.mode().contains(TermMode::APP_CURSOR)
    }

    /// The current terminal modes, from the model and from the raw-stream scanner.
    pub fn modes(&self) -> TerminalModes {
        let m = *self.term.mode();
        let scanned = self.scanner.modes();
        TerminalModes {
            alternate_screen: m.contains(TermMode::ALT_SCREEN),
            hide_cursor: !m.contains(TermMode::SHOW_CURSOR),
            application_cursor: m.contains(TermMode::APP_CURSOR),
            application_keypad: m.contains(TermMode::APP_KEYPAD),
            bracketed_paste: m.contains(TermMode::BRACKETED_PASTE),
            mouse_mode: mouse_mode(m),
            mouse_encoding: mouse_encoding(m),
            focus_events: scanned.focus_events,
            synchronized_output: scanned.synchronized_output,
            color_scheme_updates: scanned.color_scheme_updates,
            kitty_main: scanned.kitty_main.clone(),
            kitty_alternate: scanned.kitty_alternate.clone(),
            modify_other_keys: scanned.modify_other_keys,
        }
    }

    #[cfg(test)]
    pub(crate) fn inject_panic_on_next_process(&mut self) {
        self.panic_next = true;
    }
}

fn mouse_mode(m: TermMode) -> MouseMode {
    if m.contains(TermMode::MOUSE_MOTION) {
        MouseMode::AnyMotion
    } else if m.contains(TermMode::MOUSE_DRAG) {
        MouseMode::ButtonMotion
    } else if m.contains(TermMode::MOUSE_REPORT_CLICK) {
        MouseMode::PressRelease
    } else {
        MouseMode::None
    }
}

fn mouse_encoding(m: TermMode) -> MouseEncoding {
    if m.contains(TermMode::SGR_MOUSE) {
        MouseEncoding::Sgr
    } else if m.contains(TermMode::UTF8_MOUSE) {
        MouseEncoding::Utf8
    } else {
        MouseEncoding::Default
    }
}

/// The keyboard and mouse modes of `m` as the sequences that set them on a
/// terminal in its default modes.
pub(crate) fn input_modes_bytes(m: TermMode, out: &mut Vec<u8>) {
    if m.contains(TermMode::APP_CURSOR) {
        out.extend_from_slice(b"\x1b[?1h");
    }
    if m.contains(TermMode::APP_KEYPAD) {
        out.extend_from_slice(b"\x1b=");
    }
    if m.contains(TermMode::BRACKETED_PASTE) {
        out.extend_from_slice(b"\x1b[?2004h");
    }
    match mouse_mode(m) {
        MouseMode::PressRelease => out.extend_from_slice(b"\x1b[?1000h"),
        MouseMode::ButtonMotion => out.extend_from_slice(b"\x1b[?1002h"),
        MouseMode::AnyMotion => out.extend_from_slice(b"\x1b[?1003h"),
        MouseMode::Press | MouseMode::None => {}
    }
    if m.contains(TermMode::SGR_MOUSE) {
        out.extend_from_slice(b"\x1b[?1006h");
    }
    if m.contains(TermMode::UTF8_MOUSE) {
        out.extend_from_slice(b"\x1b[?1005h");
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

/// Whether `row` soft-wraps into the next ([`Screen::row_wrapped`]).
fn wraps(row: &Row<Cell>) -> bool {
    row.len() > 0 && row[Column(row.len() - 1)].flags.contains(Flags::WRAPLINE)
}

/// [`Screen::is_wide_pair`] in `row`.
fn wide_pair(row: &Row<Cell>, col: usize) -> bool {
    let cell = &row[Column(col)];
    cell.flags.contains(Flags::WIDE_CHAR)
        && cell.c.width() == Some(2)
        && col + 1 < row.len()
        && row[Column(col + 1)].flags.contains(Flags::WIDE_CHAR_SPACER)
}

/// [`Screen::shown`] in `row`.
pub(crate) fn shown_in(row: &Row<Cell>, col: usize) -> char {
    match row[Column(col)].c {
        '\t' => ' ',
        // No ASCII character is wide: no width lookup.
        c if c.is_ascii() => c,
        c if c.width() == Some(2) && !wide_pair(row, col) => '\u{fffd}',
        c => c,
    }
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
    fn panic_in_the_model_rebuilds_and_keeps_modes() {
        let mut s = Screen::new(5, 20);
        s.process(b"\x1b]0;hello\x07\x1b[?2004h\x1b[?1004h\x1b[?1000h\x1b[?1049hsome text");
        assert_eq!(s.title(), "hello");
        let before = s.modes();
        s.inject_panic_on_next_process();
        // (The default panic hook prints the injected panic; that is expected.)
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
        // The mode scanner still reads a chunk the model drops.
        assert!(s.modes().focus_events);
        s.inject_panic_on_next_process();
        s.process(b"text\x1b[?1004lmore");
        assert_eq!(s.rebuilds(), 2);
        assert!(!s.modes().focus_events);
    }

    #[test]
    fn zero_size_is_clamped() {
        let mut s = Screen::new(0, 0);
        assert_eq!(s.size(), (1, MIN_COLS));
        s.resize(0, 7);
        assert_eq!(s.size(), (1, 7));
        s.process(b"hello world");
        // A wide character on the narrowest screen (alacritty_terminal
        // panics on a 1-column one).
        s.resize(1, 1);
        s.process("abcd\u{65e5}x".as_bytes());
        assert_eq!(s.rebuilds(), 0);
    }

    #[test]
    fn title_is_tracked() {
        let mut s = Screen::new(5, 20);
        s.process("\x1b]0;\u{2733} Claude Code\x07".as_bytes());
        assert_eq!(s.title(), "\u{2733} Claude Code");
        s.process(b"\x1b]2;x\x1b\\");
        assert_eq!(s.title(), "x");
        s.process(b"\x1b]2;a\x01b\x07");
        assert_eq!(s.title(), "ab");
    }

    #[test]
    fn synchronized_frames_show_at_once() {
        let mut s = Screen::new(3, 20);
        s.process(b"\x1b[?2026hmid-frame");
        assert_eq!(s.rows_text()[0], "mid-frame");
        assert!(s.modes().synchronized_output);
        s.process(b"\x1b[?2026l");
        assert!(!s.modes().synchronized_output);
    }

    #[test]
    fn text_rows_wraps_and_wide_characters() {
        let mut s = Screen::new(3, 6);
        s.process("ab界cdefg\r\n  x  ".as_bytes());
        assert_eq!(s.rows_text(), vec!["ab界cd", "efg", "  x"]);
        assert!(s.row_wrapped(0));
        assert!(!s.row_wrapped(1));
        assert_eq!(s.contents(), "ab界cdefg\n  x");
        // A wide character that does not fit wraps whole.
        let mut s = Screen::new(2, 3);
        s.process("ab界".as_bytes());
        assert_eq!(s.rows_text(), vec!["ab", "界"]);
        assert_eq!(s.contents(), "ab界");
        // Combining marks stay with their character.
        let mut s = Screen::new(1, 5);
        s.process("e\u{301}x".as_bytes());
        assert_eq!(s.rows_text()[0], "e\u{301}x");
    }
}
