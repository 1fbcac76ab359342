//! Full-screen redraw snapshots, and the cell-level view tests compare them by.
//!
//! A client that attaches late, or whose queue overflowed and was dropped, is
//! resynced by writing [`Screen::redraw`] to its terminal, then the live stream.

use std::io::Write as _;

use alacritty_terminal::index::Column;
use alacritty_terminal::term::cell::{Cell, Flags};
use alacritty_terminal::term::{Config, TermMode};
use alacritty_terminal::vte::ansi::{Color, CursorShape, NamedColor};

use crate::screen::{input_modes_bytes, shown_in, Screen};

/// Cell flags that are attributes (as opposed to wrap and wide-character
/// bookkeeping).
const ATTRIBUTES: Flags = Flags::INVERSE
    .union(Flags::BOLD)
    .union(Flags::ITALIC)
    .union(Flags::UNDERLINE)
    .union(Flags::DIM)
    .union(Flags::HIDDEN)
    .union(Flags::STRIKEOUT)
    .union(Flags::DOUBLE_UNDERLINE)
    .union(Flags::UNDERCURL)
    .union(Flags::DOTTED_UNDERLINE)
    .union(Flags::DASHED_UNDERLINE);

/// How a cell is drawn: colours, attributes, underline colour, hyperlink.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pen {
    fg: Color,
    bg: Color,
    flags: Flags,
    underline: Option<Color>,
    /// Hyperlink `(id, uri)`.
    link: Option<(String, String)>,
}

impl Default for Pen {
    fn default() -> Self {
        Self {
            fg: Color::Named(NamedColor::Foreground),
            bg: Color::Named(NamedColor::Background),
            flags: Flags::empty(),
            underline: None,
            link: None,
        }
    }
}

/// A pen's colour as a renderer outside this crate needs it (the web page's
/// screen, `ccd-web`'s `render`): the terminal's default, one of the 256
/// indexed colours (the 16 named ones are 0–15), or a true colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PenColor {
    /// The terminal's default foreground or background.
    Default,
    /// An indexed colour: 0–15 the named ones, 16–255 the xterm cube and greys.
    Indexed(u8),
    /// A true colour `(r, g, b)`.
    Rgb(u8, u8, u8),
}

impl PenColor {
    fn of(c: Color) -> Self {
        match c {
            Color::Named(n) if (n as usize) < 16 => Self::Indexed(n as u8),
            // The defaults, and the renderer-only named colours a cell
            // never holds (dim ones: the dim attribute says it).
            Color::Named(_) => Self::Default,
            Color::Indexed(i) => Self::Indexed(i),
            Color::Spec(rgb) => Self::Rgb(rgb.r, rgb.g, rgb.b),
        }
    }
}

impl Pen {
    /// The foreground colour.
    pub fn fg(&self) -> PenColor {
        PenColor::of(self.fg)
    }

    /// The background colour.
    pub fn bg(&self) -> PenColor {
        PenColor::of(self.bg)
    }

    /// SGR 1.
    pub fn bold(&self) -> bool {
        self.flags.contains(Flags::BOLD)
    }

    /// SGR 2.
    pub fn dim(&self) -> bool {
        self.flags.contains(Flags::DIM)
    }

    /// SGR 3.
    pub fn italic(&self) -> bool {
        self.flags.contains(Flags::ITALIC)
    }

    /// Any underline style (SGR 4, 4:2–4:5, 21).
    pub fn underline(&self) -> bool {
        self.flags.intersects(
            Flags::UNDERLINE
                | Flags::DOUBLE_UNDERLINE
                | Flags::UNDERCURL
                | Flags::DOTTED_UNDERLINE
                | Flags::DASHED_UNDERLINE,
        )
    }

    /// SGR 7: foreground and background swapped.
    pub fn inverse(&self) -> bool {
        self.flags.contains(Flags::INVERSE)
    }

    /// SGR 8.
    pub fn hidden(&self) -> bool {
        self.flags.contains(Flags::HIDDEN)
    }

    /// SGR 9.
    pub fn strikeout(&self) -> bool {
        self.flags.contains(Flags::STRIKEOUT)
    }

    fn of(cell: &Cell) -> Self {
        Self {
            fg: cell.fg,
            bg: cell.bg,
            flags: cell.flags & ATTRIBUTES,
            underline: cell.underline_color(),
            link: cell
                .hyperlink()
                .map(|h| (h.id().to_owned(), h.uri().to_owned())),
        }
    }

    /// Writes what turns the terminal's pen `from` into `self`.
    fn write_from(&self, from: &Pen, out: &mut Vec<u8>) {
        if (&self.fg, &self.bg, self.flags, &self.underline)
            != (&from.fg, &from.bg, from.flags, &from.underline)
        {
            self.write_sgr(out);
        }
        if self.link != from.link {
            match &self.link {
                Some((id, uri)) => {
                    let _ = write!(out, "\x1b]8;id={id};{uri}\x1b\\");
                }
                None => out.extend_from_slice(b"\x1b]8;;\x1b\\"),
            }
        }
    }

    /// SGR from the default pen: `ESC [ 0 ; ... m`.
    fn write_sgr(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"\x1b[0");
        let f = self.flags;
        for (flag, code) in [
            (Flags::BOLD, "1"),
            (Flags::DIM, "2"),
            (Flags::ITALIC, "3"),
            (Flags::UNDERLINE, "4"),
            (Flags::DOUBLE_UNDERLINE, "4:2"),
            (Flags::UNDERCURL, "4:3"),
            (Flags::DOTTED_UNDERLINE, "4:4"),
            (Flags::DASHED_UNDERLINE, "4:5"),
            (Flags::INVERSE, "7"),
            (Flags::HIDDEN, "8"),
            (Flags::STRIKEOUT, "9"),
        ] {
            if f.contains(flag) {
                out.push(b';');
                out.extend_from_slice(code.as_bytes());
            }
        }
        write_color(out, self.fg, 30, 90, 38);
        write_color(out, self.bg, 40, 100, 48);
        if let Some(c) = self.underline {
            write_color(out, c, 58, 58, 58);
        }
        out.push(b'm');
    }
}

/// `;code` for a colour: `base + n` / `bright + n` for the 16 named ones,
/// `extended;5;n` for an indexed one, `extended;2;r;g;b` for a true colour.
/// The defaults (and the renderer-only named colours a cell never holds)
/// write nothing.
fn write_color(out: &mut Vec<u8>, c: Color, base: u8, bright: u8, extended: u8) {
    let mut param = |n: u8| {
        out.push(b';');
        push_number(out, usize::from(n));
    };
    match c {
        Color::Named(n) if (n as usize) < 8 => param(base + n as u8),
        Color::Named(n) if (n as usize) < 16 => param(bright + n as u8 - 8),
        Color::Named(_) => {}
        Color::Indexed(i) => {
            param(extended);
            param(5);
            param(i);
        }
        Color::Spec(rgb) => {
            param(extended);
            param(2);
            param(rgb.r);
            param(rgb.g);
            param(rgb.b);
        }
    }
}

/// `n` in decimal (what `write!(out, "{n}")` writes, without the
/// formatting machinery: a redraw writes a few numbers per cell whose pen
/// changes).
fn push_number(out: &mut Vec<u8>, n: usize) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut n = n;
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// A cell showing `shown` ([`Screen::shown`]) that a cleared terminal
/// already shows.
fn is_blank(shown: char, cell: &Cell) -> bool {
    shown == ' '
        && cell.zerowidth().is_none()
        && !cell.flags.intersects(ATTRIBUTES | Flags::WIDE_CHAR)
        && Pen::of(cell) == Pen::default()
}

fn write_cell(shown: char, cell: &Cell, out: &mut Vec<u8>) {
    let mut b = [0; 4];
    out.extend_from_slice(shown.encode_utf8(&mut b).as_bytes());
    for m in cell.zerowidth().unwrap_or_default() {
        out.extend_from_slice(m.encode_utf8(&mut b).as_bytes());
    }
}

fn cup(out: &mut Vec<u8>, row: usize, col: usize) {
    out.extend_from_slice(b"\x1b[");
    push_number(out, row + 1);
    out.push(b';');
    push_number(out, col + 1);
    out.push(b'H');
}

impl Screen {
    /// Bytes that, written to a fresh terminal of the same size (or a fresh
    /// [`Screen`]), reproduce the visible screen, the cursor (position,
    /// pending wrap, pen, style), the window title and every mode in
    /// [`Screen::modes`](crate::TerminalModes).
    ///
    /// Layout: begin synchronized update (`?2026h`, so real terminals paint it in
    /// one go); kitty keyboard stack of the main screen; if the alternate screen is
    /// active, `?1049h` and its kitty stack; the rows (cleared screen, then each
    /// row's cells with their attributes, colours and hyperlinks, a soft-wrapped
    /// row written through to the next so the terminal wraps it too); the cursor;
    /// autowrap, insert and newline modes; keypad/cursor-key/bracketed-paste/mouse
    /// modes, cursor visibility and style; focus events, colour-scheme updates,
    /// modifyOtherKeys; the title; end of the synchronized update, re-opened if the
    /// application is itself mid-update.
    ///
    /// Not reproduced: scrollback, the main screen hidden behind an active
    /// alternate screen, the scroll region and origin mode, the saved cursor
    /// (the redraw may leave its own: the cursor waiting to wrap), character
    /// sets, tab stops, the colour palette. Claude Code repaints all of these
    /// itself.
    ///
    /// It assumes the target terminal starts in its default modes; to hand a
    /// terminal back, write [`TerminalModes::reset_bytes`](crate::TerminalModes::reset_bytes).
    pub fn redraw(&self) -> Vec<u8> {
        let modes = self.modes();
        let mode = *self.term.mode();
        let (rows, cols) = self.size();
        let mut out = Vec::with_capacity(usize::from(rows) * usize::from(cols) + 512);
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
        let (pen, saved) = self.paint_rows(&mut out);
        self.restore_cursor(pen, saved, &mut out);
        if !mode.contains(TermMode::LINE_WRAP) {
            out.extend_from_slice(b"\x1b[?7l");
        }
        if mode.contains(TermMode::INSERT) {
            out.extend_from_slice(b"\x1b[4h");
        }
        if mode.contains(TermMode::LINE_FEED_NEW_LINE) {
            out.extend_from_slice(b"\x1b[20h");
        }
        input_modes_bytes(mode, &mut out);
        if !mode.contains(TermMode::SHOW_CURSOR) {
            out.extend_from_slice(b"\x1b[?25l");
        }
        let style = self.term.cursor_style();
        if style != Config::default().default_cursor_style {
            let n = match style.shape {
                CursorShape::Underline => 3,
                CursorShape::Beam => 5,
                _ => 1,
            } + u8::from(!style.blinking);
            let _ = write!(out, "\x1b[{n} q");
        }
        if modes.focus_events {
            out.extend_from_slice(b"\x1b[?1004h");
        }
        if modes.color_scheme_updates {
            out.extend_from_slice(b"\x1b[?2031h");
        }
        if modes.modify_other_keys != 0 {
            let _ = write!(out, "\x1b[>4;{}m", modes.modify_other_keys);
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

    /// Clears the screen and writes every row; returns the pen left set.
    ///
    /// A soft-wrapped row (but the last) is written to its last column and the
    /// next row's cells follow without a cursor move, so the terminal wraps
    /// and marks the row itself; at least one cell of the next row is written
    /// to make it do so. Other rows are written from a cursor move up to their
    /// last non-blank cell. The second cell of a wide character is never
    /// written (the character fills it), nor the placeholder a wide character
    /// that did not fit leaves at the end of a row (writing the character at
    /// the start of the next row leaves it again).
    ///
    /// The cursor waiting to wrap (after writing the last column) is put
    /// back by writing its row through to the last column and saving the
    /// cursor (`ESC 7`) right there, in exactly that state; the pen then in
    /// effect is returned with the final one for [`Screen::restore_cursor`].
    /// (Writing the cell under it again instead would clear marks: the wrap
    /// mark of a wrapped row, the placeholder before a wide character at the
    /// start of a row — both found by the fuzz target.)
    fn paint_rows(&self, out: &mut Vec<u8>) -> (Pen, Option<Pen>) {
        let (rows, cols) = self.size();
        let (rows, cols) = (usize::from(rows), usize::from(cols));
        let cursor = &self.term.grid().cursor;
        let pending_row = (cursor.input_needs_wrap && cursor.point.column.0 + 1 == cols)
            .then_some(cursor.point.line.0)
            .and_then(|l| usize::try_from(l).ok());
        let mut saved = None;
        out.extend_from_slice(b"\x1b[0m\x1b[H\x1b[2J");
        let mut pen = Pen::default();
        let mut continuing = false;
        for i in 0..rows {
            let row = self.row(i);
            let wrapped = i + 1 < rows && self.row_wrapped(i);
            let mut end = if wrapped || pending_row == Some(i) {
                cols
            } else {
                (0..cols)
                    .rev()
                    .find(|&c| !is_blank(shown_in(row, c), &row[Column(c)]))
                    .map_or(0, |c| c + 1)
            };
            if continuing {
                end = end.max(1);
            } else if end > 0 {
                cup(out, i, 0);
            }
            for c in 0..end {
                let cell = &row[Column(c)];
                if self.is_spacer_in(row, i, c) {
                    continue;
                }
                let p = Pen::of(cell);
                p.write_from(&pen, out);
                pen = p;
                write_cell(shown_in(row, c), cell, out);
            }
            // Unless the last cell was a placeholder left for the next row
            // (not written), the terminal now waits to wrap there.
            let placeholder = row[Column(cols - 1)]
                .flags
                .contains(Flags::LEADING_WIDE_CHAR_SPACER)
                && self.is_spacer_in(row, i, cols - 1);
            if pending_row == Some(i) && !placeholder {
                out.extend_from_slice(b"\x1b7");
                saved = Some(pen.clone());
            }
            continuing = wrapped;
        }
        (pen, saved)
    }

    /// Puts the cursor where it is: restores it where [`Screen::paint_rows`]
    /// saved it waiting to wrap (`saved`: the pen then), else moves it; then
    /// sets its pen.
    fn restore_cursor(&self, mut pen: Pen, saved: Option<Pen>, out: &mut Vec<u8>) {
        let cursor = &self.term.grid().cursor;
        match saved {
            Some(at_save) => {
                out.extend_from_slice(b"\x1b8");
                pen = at_save;
            }
            None => {
                let (row, col) = self.cursor_position();
                cup(out, usize::from(row), usize::from(col));
            }
        }
        Pen::of(&cursor.template).write_from(&pen, out);
    }

    /// What a redraw must reproduce, cell by cell: the test oracle for
    /// [`Screen::redraw`] (equal views mean equal screens).
    pub fn cells(&self) -> ScreenCells {
        let (rows, cols) = self.size();
        let (rows, cols) = (usize::from(rows), usize::from(cols));
        let cursor = &self.term.grid().cursor;
        let compared = TermMode::LINE_WRAP
            | TermMode::INSERT
            | TermMode::LINE_FEED_NEW_LINE
            | TermMode::APP_CURSOR
            | TermMode::APP_KEYPAD
            | TermMode::BRACKETED_PASTE
            | TermMode::MOUSE_MODE
            | TermMode::SGR_MOUSE
            | TermMode::UTF8_MOUSE
            | TermMode::ALT_SCREEN
            | TermMode::SHOW_CURSOR;
        ScreenCells {
            rows: (0..rows)
                .map(|i| {
                    let row = self.row(i);
                    (0..cols)
                        .map(|c| {
                            let cell = &row[Column(c)];
                            if self.is_spacer(i, c) {
                                CellView::Spacer(cell.flags & !Flags::WRAPLINE)
                            } else {
                                let mut text = String::new();
                                text.push(self.shown(i, c));
                                text.extend(cell.zerowidth().unwrap_or_default());
                                CellView::Char {
                                    text,
                                    wide: self.is_wide_pair(i, c),
                                    pen: Pen::of(cell),
                                }
                            }
                        })
                        .collect()
                })
                .collect(),
            // The last row's flag cannot be reproduced (nothing follows it).
            wrapped: (0..rows.saturating_sub(1))
                .map(|i| self.row_wrapped(i))
                .collect(),
            cursor: self.cursor_position(),
            pending_wrap: cursor.input_needs_wrap,
            pen: Pen::of(&cursor.template),
            mode: (*self.term.mode() & compared).bits(),
            cursor_style: format!("{:?}", self.term.cursor_style()),
        }
    }
}

/// One cell as [`Screen::cells`] shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CellView {
    /// A character (with its combining marks).
    Char {
        /// The character and its combining marks.
        text: String,
        /// Whether it takes two cells.
        wide: bool,
        /// How it is drawn.
        pen: Pen,
    },
    /// The second cell of a wide character, or the placeholder left at the
    /// end of a row by a wide character that did not fit.
    Spacer(Flags),
}

/// Everything [`Screen::redraw`] reproduces below the modes: see [`Screen::cells`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScreenCells {
    rows: Vec<Vec<CellView>>,
    wrapped: Vec<bool>,
    cursor: (u16, u16),
    pending_wrap: bool,
    pen: Pen,
    mode: u32,
    cursor_style: String,
}

impl ScreenCells {
    /// The visible rows, top first, each `cols` cells long.
    pub fn rows(&self) -> &[Vec<CellView>] {
        &self.rows
    }

    /// The cursor `(row, col)`, 0-based.
    pub fn cursor(&self) -> (u16, u16) {
        self.cursor
    }

    /// The first difference from `other`, described (where, and both
    /// sides), or `None` when they are equal. For test failures: a whole
    /// screen's debug print is too long to read.
    pub fn first_difference(&self, other: &Self) -> Option<String> {
        if self.rows.len() != other.rows.len() {
            return Some(format!("{} rows vs {}", self.rows.len(), other.rows.len()));
        }
        for (r, (a, b)) in self.rows.iter().zip(&other.rows).enumerate() {
            if let Some(c) = (0..a.len().max(b.len())).find(|&c| a.get(c) != b.get(c)) {
                return Some(format!("row {r} col {c}: {:?} vs {:?}", a.get(c), b.get(c)));
            }
        }
        let fields = [
            (
                "wrapped",
                format!("{:?}", self.wrapped),
                format!("{:?}", other.wrapped),
            ),
            (
                "cursor",
                format!("{:?}", self.cursor),
                format!("{:?}", other.cursor),
            ),
            (
                "pending wrap",
                format!("{:?}", self.pending_wrap),
                format!("{:?}", other.pending_wrap),
            ),
            ("pen", format!("{:?}", self.pen), format!("{:?}", other.pen)),
            (
                "mode",
                format!("{:#x}", self.mode),
                format!("{:#x}", other.mode),
            ),
            (
                "cursor style",
                self.cursor_style.clone(),
                other.cursor_style.clone(),
            ),
        ];
        fields
            .into_iter()
            .find(|(_, a, b)| a != b)
            .map(|(what, a, b)| format!("{what}: {a} vs {b}"))
    }
}

#[cfg(test)]
mod tests {
    use crate::Screen;

    fn roundtrip(s: &Screen) {
        let (rows, cols) = s.size();
        let mut fresh = Screen::new(rows, cols);
        fresh.process(&s.redraw());
        assert_eq!(fresh.cells().first_difference(&s.cells()), None);
        assert_eq!(fresh.cells(), s.cells());
        assert_eq!(fresh.modes(), s.modes());
        assert_eq!(fresh.title(), s.title());
    }

    #[test]
    fn cells_and_pens_read_from_outside() {
        use crate::{CellView, PenColor};
        let mut s = Screen::new(2, 10);
        s.process(
            b"\x1b[1;3;4;7;2;8;9;31;48;5;200ma\x1b[0;38;2;1;2;3mb\x1b[0;97mc\x1b[0md\r\n\x1b[4:3me",
        );
        let cells = s.cells();
        assert_eq!(cells.rows().len(), 2);
        assert_eq!(cells.cursor(), (1, 1));
        let pen = |r: usize, c: usize| match &cells.rows()[r][c] {
            CellView::Char { pen, .. } => pen.clone(),
            CellView::Spacer(_) => panic!("a spacer at {r},{c}"),
        };
        let a = pen(0, 0);
        assert!(a.bold() && a.italic() && a.underline() && a.inverse());
        assert!(a.dim() && a.hidden() && a.strikeout());
        assert_eq!(
            (a.fg(), a.bg()),
            (PenColor::Indexed(1), PenColor::Indexed(200))
        );
        assert_eq!(pen(0, 1).fg(), PenColor::Rgb(1, 2, 3));
        assert!(!pen(0, 1).bold());
        assert_eq!(pen(0, 2).fg(), PenColor::Indexed(15));
        assert_eq!(
            (pen(0, 3).fg(), pen(0, 3).bg()),
            (PenColor::Default, PenColor::Default)
        );
        assert!(pen(1, 0).underline(), "undercurl is an underline");
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
        s.process(b"\x1b[=5;1u\x1b[5 q\x1b[?7l\x1b[4h");
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

    #[test]
    fn roundtrip_attributes_colours_links_and_wide_characters() {
        let mut s = Screen::new(4, 7);
        s.process(
            "\x1b[2;3;4:3;7;9;38;5;200;48;2;1;2;3;58;2;9;8;7mx\x1b[0;95;100m界\x1b[0m \x1b]8;;https://a\x1b\\link\x1b]8;;\x1b\\"
                .as_bytes(),
        );
        s.process("\r\n\x1b[44m\x1b[K\x1b[0mab界界x\u{301}".as_bytes());
        s.process(b"\x1b[1;35m\x1b]8;id=k;u\x1b\\");
        roundtrip(&s);
        // A wrapped row followed by a blank one, and a wide character at the
        // end of a wrapped row.
        let mut s = Screen::new(4, 3);
        s.process("abc   ab界z\x1b[4;1H".as_bytes());
        roundtrip(&s);
        // The placeholder of a wide character that did not fit, once a line
        // edit took the character away (found by the fuzz target).
        let mut s = Screen::new(3, 3);
        s.process("ab界\x1b[2;1H\x1b[Mxy".as_bytes());
        assert_eq!(s.rows_text()[0], "ab");
        let last = s.row(0)[alacritty_terminal::index::Column(2)].flags;
        assert!(last.contains(alacritty_terminal::term::cell::Flags::LEADING_WIDE_CHAR_SPACER));
        assert!(!s.is_spacer(0, 2), "the character is gone");
        roundtrip(&s);
        // The cursor waiting to wrap at the end of a row marked wrapped: saved
        // there, wrapped, restored (found by the fuzz target).
        let mut s = Screen::new(3, 2);
        s.process(b"ab\x1b7cd\x1b8\x1b[31m");
        assert!(s.row_wrapped(0) && s.term.grid().cursor.input_needs_wrap);
        roundtrip(&s);
        // Character edits can split a wide character from its second cell
        // (found by the fuzz target): one left alone in a cell shows as
        // U+FFFD, a second cell left alone as a blank.
        let mut s = Screen::new(2, 8);
        s.process("a界b\x1b[1;3H\x1b[P\r\nc界d\x1b[2;2H\x1b[P".as_bytes());
        assert_eq!(s.rows_text(), vec!["a\u{fffd}b", "c d"]);
        roundtrip(&s);
        // The cursor waiting to wrap on a wide character that starts a row
        // after a placeholder (found by the fuzz target).
        let mut s = Screen::new(2, 2);
        s.process(".❔".as_bytes());
        roundtrip(&s);
        // Tabs leave a mark in the cell they start from: shown as a blank.
        let mut s = Screen::new(2, 20);
        s.process(b"a\tb\x1b[44m\tc");
        assert_eq!(s.rows_text()[0], "a       b       c");
        roundtrip(&s);
    }
}
