//! Text written into the terminal's grid a row segment at a time, exactly
//! as `vte` and `Term::input` would take it character by character, its
//! UTF-8 checked where it is decoded.

use std::sync::Arc;

use alacritty_terminal::event::EventListener;
use alacritty_terminal::grid::Dimensions;
use alacritty_terminal::index::Column;
use alacritty_terminal::term::cell::{Cell, CellExtra, Flags};
use alacritty_terminal::term::{Term, TermMode};
use alacritty_terminal::vte::ansi::{CharsetIndex, Color, Handler, StandardCharset};
use unicode_width::UnicodeWidthChar;

use super::utf8::{char_len_at, decode, printable, printed_at, Repeated};

/// What [`write_text`] did with a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Written {
    /// Bytes taken: all of the text, or those before invalid UTF-8.
    pub(super) len: usize,
    /// The last character `vte` would have printed (DEL included, C1
    /// controls not), if any.
    pub(super) last: Option<char>,
    /// Whether it stopped at invalid UTF-8 (or a character the text cuts).
    pub(super) invalid: bool,
}

/// Write `text` (no C0 control) as `vte` and `Term::input` would,
/// character by character: C1 controls do nothing, DEL prints nothing but
/// is remembered, the rest is written a row segment at a time where that
/// is the same ([`write_segment`]), else through `Term::input`. Checked as
/// it is written: it stops at invalid UTF-8.
pub(super) fn write_text<L: EventListener>(term: &mut Term<L>, text: &[u8]) -> Written {
    let mut at = 0;
    let mut last = None;
    while let Some(&lead) = text.get(at) {
        let (n, written) = write_segment(term, &text[at..]);
        if n > 0 {
            at += n;
            last = Some(written);
            continue;
        }
        if lead < 0x80 {
            if lead != 0x7f {
                Handler::input(term, char::from(lead));
            }
            last = Some(char::from(lead));
            at += 1;
            continue;
        }
        let Some((len, c1)) = char_len_at(&text[at..]) else {
            return Written {
                len: at,
                last,
                invalid: true,
            };
        };
        if !c1 {
            let c = decode(&text[at..at + len]);
            Handler::input(term, c);
            last = Some(c);
        }
        at += len;
    }
    Written {
        len: at,
        last,
        invalid: false,
    }
}

/// Write as much of the start of `run` as forms a row segment that
/// `Term::input` would write the same way: printable ASCII and valid UTF-8
/// that is not a C1 control, no insert mode, every charset ASCII, no wrap
/// pending, one- and two-cell characters only, the segment ends before the
/// last column, a cell holding part of a wide character is written over by
/// a one-cell character only, and only where the other part can be undone
/// inside the segment ([`unpair`]). How many bytes (0: the first character
/// is not one of these), and the last character written.
fn write_segment<L: EventListener>(term: &mut Term<L>, run: &[u8]) -> (usize, char) {
    const NONE: (usize, char) = (0, '\0');
    if term.mode().contains(TermMode::INSERT) {
        return NONE;
    }
    let columns = term.columns();
    let grid = term.grid_mut();
    let cursor = &grid.cursor;
    let all_ascii = [
        CharsetIndex::G0,
        CharsetIndex::G1,
        CharsetIndex::G2,
        CharsetIndex::G3,
    ]
    .into_iter()
    .all(|i| cursor.charsets[i] == StandardCharset::Ascii);
    if !all_ascii || cursor.input_needs_wrap {
        return NONE;
    }
    let start = cursor.point.column.0;
    // Each character moves the cursor right but one that reaches the last
    // column: the segment stops short of it. The row is marked occupied as
    // far as the cells taken for writing reach (a row cleared on scroll is
    // reset that far): as many as there are bytes, at most — exactly as far
    // as `Term::input` marks it for ASCII. (A two-cell character takes at
    // least 3 bytes; one that does not fit ends the segment early.)
    let room = columns.saturating_sub(1).saturating_sub(start);
    let want = run.len().min(room);
    if want == 0 {
        return NONE;
    }
    let line = cursor.point.line;
    let template = &cursor.template;
    let pen = Pen {
        fg: template.fg,
        bg: template.bg,
        flags: template.flags,
        extra: template.extra.clone(),
    };
    let cells = &mut grid[line][Column(start)..Column(start + want)];
    let (col, at, last) = pen.write(cells, run, start);
    grid.cursor.point.column.0 = start + col;
    (at, last)
}

/// Whether `cell` holds no part of a wide character (one that does needs
/// its other part undone first, [`unpair`]).
fn plain(cell: &Cell) -> bool {
    !cell
        .flags
        .intersects(Flags::WIDE_CHAR | Flags::WIDE_CHAR_SPACER)
}

/// Before cell `col` of `cells` (a row segment from column `start`, none
/// of it the last column) is written over: if it holds part of a wide
/// character, what `Term::input` does to the other part first (the spacer
/// after a wide character loses its flag; the cell before a spacer is
/// cleared, `Cell::clear_wide`). Whether the cell can be written: not if
/// that other part is outside `cells`, nor in the row's first two columns,
/// where `Term::input` also clears the line above's leading spacer (the
/// character is then left to it).
fn unpair(cells: &mut [Cell], col: usize, start: usize) -> bool {
    if plain(&cells[col]) {
        return true;
    }
    let flags = cells[col].flags;
    if start + col <= 1 {
        return false;
    }
    if flags.contains(Flags::WIDE_CHAR) {
        let Some(spacer) = cells.get_mut(col + 1) else {
            return false;
        };
        spacer.flags.remove(Flags::WIDE_CHAR_SPACER);
    } else {
        let Some(wide) = col.checked_sub(1).map(|c| &mut cells[c]) else {
            return false;
        };
        wide.clear_wide();
    }
    true
}

/// What the cursor's template gives each cell `Term::input` writes.
struct Pen {
    fg: Color,
    bg: Color,
    flags: Flags,
    /// Shared; cloned only where a cell has one or gets one.
    extra: Option<Arc<CellExtra>>,
}

impl Pen {
    /// The cell `Term::input` writes: the pen's, with the character (and
    /// the wide flag or the spacer's).
    #[inline(always)]
    fn put(&self, cell: &mut Cell, c: char, wide: Flags) {
        cell.c = c;
        cell.fg = self.fg;
        cell.bg = self.bg;
        cell.flags = self.flags | wide;
        if cell.extra.is_some() || self.extra.is_some() {
            cell.extra.clone_from(&self.extra);
        }
    }

    /// The printable ASCII at the start of `text` into `cells`, one a
    /// byte, as far as they are plain: how many.
    #[inline(never)]
    fn put_ascii(&self, cells: &mut [Cell], text: &[u8]) -> usize {
        let mut n = 0;
        for (cell, &b) in cells.iter_mut().zip(text) {
            if !printable(b) || !plain(cell) {
                break;
            }
            self.put(cell, char::from(b), Flags::empty());
            n += 1;
        }
        n
    }

    /// The start of `run` into `cells` (a row segment from column `start`,
    /// none of it the last column): how many cells and bytes, and the last
    /// character written (meaningless if none).
    fn write(&self, cells: &mut [Cell], run: &[u8], start: usize) -> (usize, usize, char) {
        let want = cells.len();
        let (mut col, mut at) = (0, 0);
        // The last character of two bytes or more looked up, and its width.
        let mut looked_up = ('\0', None);
        // The last such character written.
        let mut wrote = '\0';
        while col < want {
            let Some(&lead) = run.get(at) else {
                break;
            };
            if lead < 0x80 {
                let n = self.put_ascii(&mut cells[col..], &run[at..]);
                col += n;
                at += n;
                match run.get(at) {
                    // Stopped at a cell holding part of a wide character.
                    Some(&b) if printable(b) && col < want => {
                        if !unpair(cells, col, start) {
                            break;
                        }
                        self.put(&mut cells[col], char::from(b), Flags::empty());
                        col += 1;
                        at += 1;
                    }
                    Some(&b) if b >= 0x80 => {}
                    _ => break,
                }
                continue;
            }
            // Checked here, where it is decoded: invalid UTF-8 and C1
            // controls are the caller's.
            let Some((len, c)) = printed_at(&run[at..]) else {
                break;
            };
            // Box drawing repeats a character: its width is looked up once.
            if c != looked_up.0 {
                looked_up = (c, width(c));
            }
            match looked_up.1 {
                Some(1) if unpair(cells, col, start) => {
                    self.put(&mut cells[col], c, Flags::empty());
                    col += 1;
                    // The same character again (a rule, a box's edge):
                    // neither checked, decoded nor looked up again.
                    let again = Repeated::new(&run[at..at + len]);
                    while col < want && again.at(run, at + len) {
                        if !unpair(cells, col, start) {
                            break;
                        }
                        self.put(&mut cells[col], c, Flags::empty());
                        col += 1;
                        at += len;
                    }
                }
                Some(2) if col + 1 < want && plain(&cells[col]) && plain(&cells[col + 1]) => {
                    self.put(&mut cells[col], c, Flags::WIDE_CHAR);
                    self.put(&mut cells[col + 1], ' ', Flags::WIDE_CHAR_SPACER);
                    col += 2;
                }
                _ => break,
            }
            wrote = c;
            at += len;
        }
        let last = match at.checked_sub(1).map(|i| run[i]) {
            Some(b) if b < 0x80 => char::from(b),
            _ => wrote,
        };
        (col, at, last)
    }
}

/// The cells `c` takes as `Term::input` counts them (`unicode-width`):
/// box drawing, which a TUI's frames are full of, known without the
/// tables.
#[inline(always)]
fn width(c: char) -> Option<usize> {
    if ('\u{2500}'..='\u{257f}').contains(&c) {
        return Some(1);
    }
    c.width()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn box_drawing_is_one_cell_as_the_tables_say() {
        for c in '\u{2500}'..='\u{257f}' {
            assert_eq!(width(c), c.width(), "{c}");
        }
    }
}
