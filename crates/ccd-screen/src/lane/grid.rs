//! Text written into the terminal's grid a row segment at a time, exactly
//! as `vte` and `Term::input` would take it character by character, its
//! UTF-8 checked where it is decoded.

use alacritty_terminal::event::EventListener;
use alacritty_terminal::grid::Dimensions;
use alacritty_terminal::index::Column;
use alacritty_terminal::term::cell::{Cell, Flags};
use alacritty_terminal::term::{Term, TermMode};
use alacritty_terminal::vte::ansi::{CharsetIndex, Handler, StandardCharset};
use unicode_width::UnicodeWidthChar;

use super::csi;
use super::utf8::{char_len_at, decode, printable, printed_at, Repeated};

/// What [`write_text`] did with the text at the start of its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Written {
    /// Bytes taken: up to the first C0 control that is not the ESC of a
    /// plain SGR, or to invalid UTF-8.
    pub(super) len: usize,
    /// The last character `vte` would have printed (DEL included, C1
    /// controls not), if any.
    pub(super) last: Option<char>,
    /// Whether it stopped at invalid UTF-8 (or a character the text cuts).
    pub(super) invalid: bool,
    /// Whether it stopped at an ESC it looked at ([`csi::sgr_at`]), and
    /// then whether that is a plain CSI, parsed into the `Csi` given.
    pub(super) escape: Option<bool>,
}

/// Write the text at the start of `bytes` as `vte` and `Term::input`
/// would, character by character: C1 controls do nothing, DEL prints
/// nothing but is remembered, the rest is written a row segment at a time
/// where that is the same ([`write_segment`]), else through
/// `Term::input`. A plain SGR between characters (a colour between
/// words) is applied as the lane dispatches it ([`csi::sgr_at`]; within a
/// segment to the segment's copy of the pen) and the text goes on. Checked
/// as it is written: it stops at invalid UTF-8, and before any other C0
/// control (an ESC of another sequence parsed into `csi` when it is a
/// plain CSI, see [`Written::escape`]).
pub(super) fn write_text<L: EventListener>(
    term: &mut Term<L>,
    bytes: &[u8],
    csi: &mut csi::Csi,
) -> Written {
    let mut at = 0;
    let mut last = None;
    let mut escape = None;
    while let Some(&lead) = bytes.get(at) {
        if lead < 0x20 {
            if lead != 0x1b {
                break;
            }
            match csi::sgr_at(&mut term.grid_mut().cursor.template, &bytes[at..], csi) {
                csi::AtEscape::Sgr(n) => {
                    at += n;
                    continue;
                }
                csi::AtEscape::Other { parsed } => {
                    escape = Some(parsed);
                    break;
                }
            }
        }
        let segment = write_segment(term, &bytes[at..], csi);
        at += segment.len;
        last = segment.last.or(last);
        if segment.escape.is_some() {
            escape = segment.escape;
            break;
        }
        if segment.len > 0 {
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
        let Some((len, c1)) = char_len_at(&bytes[at..]) else {
            return Written {
                len: at,
                last,
                invalid: true,
                escape: None,
            };
        };
        if !c1 {
            let c = decode(&bytes[at..at + len]);
            Handler::input(term, c);
            last = Some(c);
        }
        at += len;
    }
    Written {
        len: at,
        last,
        invalid: false,
        escape,
    }
}

/// What [`write_segment`] did.
#[derive(Debug, Clone, Copy, Default)]
struct Segment {
    /// Bytes taken (0: the first character is not one a segment takes).
    len: usize,
    /// The last character written, if any.
    last: Option<char>,
    /// Stopped at an ESC that is not a plain SGR: as [`Written::escape`].
    escape: Option<bool>,
}

/// Write as much of the start of `run` as forms a row segment that
/// `Term::input` would write the same way: printable ASCII and valid UTF-8
/// that is not a C1 control, no insert mode, every charset ASCII, no wrap
/// pending, one- and two-cell characters only, the segment ends before the
/// last column, a cell holding part of a wide character is written over by
/// a one-cell character only, and only where the other part can be undone
/// inside the segment ([`unpair`]); a plain SGR between characters is
/// applied to the segment's copy of the pen, which becomes the cursor's
/// template when the segment ends.
///
/// The cells are taken as far as the row's last column but one (or as
/// many as there are bytes, if fewer), so the row is marked occupied that
/// far, past the cells written: a row cleared on scroll or erase is reset
/// as far as it is marked, and the cells past the mark already are as a
/// reset leaves them, so the mark costs a reset of blank cells, never a
/// cell left unreset. (Measuring the text first to mark it exactly cost
/// more than the resets it saves: a scan per segment.)
fn write_segment<L: EventListener>(term: &mut Term<L>, run: &[u8], csi: &mut csi::Csi) -> Segment {
    if term.mode().contains(TermMode::INSERT) {
        return Segment::default();
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
        return Segment::default();
    }
    let start = cursor.point.column.0;
    // Each character moves the cursor right but one that reaches the last
    // column: the segment stops short of it.
    let room = columns.saturating_sub(1).saturating_sub(start);
    let want = run.len().min(room);
    if want == 0 {
        return Segment::default();
    }
    let line = cursor.point.line;
    let mut pen = Pen {
        template: cursor.template.clone(),
        changed: false,
    };
    let cells = &mut grid[line][Column(start)..Column(start + want)];
    let (col, segment) = pen.write(cells, run, start, csi);
    grid.cursor.point.column.0 = start + col;
    if pen.changed {
        grid.cursor.template = pen.template;
    }
    segment
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

/// What the cursor's template gives each cell `Term::input` writes: a
/// copy of the template, for one segment.
struct Pen {
    /// Its extra storage shared; cloned only where a cell has one or gets
    /// one.
    template: Cell,
    /// Whether an SGR changed it (then it is the cursor's template after
    /// the segment).
    changed: bool,
}

impl Pen {
    /// The cell `Term::input` writes: the pen's, with the character (and
    /// the wide flag or the spacer's).
    #[inline(always)]
    fn put(&self, cell: &mut Cell, c: char, wide: Flags) {
        let pen = &self.template;
        cell.c = c;
        cell.fg = pen.fg;
        cell.bg = pen.bg;
        cell.flags = pen.flags | wide;
        if cell.extra.is_some() || pen.extra.is_some() {
            cell.extra.clone_from(&pen.extra);
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
    /// none of it the last column): how many cells, and what was done.
    fn write(
        &mut self,
        cells: &mut [Cell],
        run: &[u8],
        start: usize,
        csi: &mut csi::Csi,
    ) -> (usize, Segment) {
        let want = cells.len();
        let (mut col, mut at) = (0, 0);
        // The last character of two bytes or more looked up, and its width.
        let mut looked_up = ('\0', None);
        let mut wrote = None;
        let mut escape = None;
        while col < want {
            let Some(&lead) = run.get(at) else {
                break;
            };
            if lead == 0x1b {
                // A colour between words: the pen changes, the segment
                // goes on over the text after it.
                match csi::sgr_at(&mut self.template, &run[at..], csi) {
                    csi::AtEscape::Sgr(n) => {
                        self.changed = true;
                        at += n;
                        continue;
                    }
                    csi::AtEscape::Other { parsed } => {
                        escape = Some(parsed);
                        break;
                    }
                }
            }
            if lead < 0x80 {
                let n = self.put_ascii(&mut cells[col..], &run[at..]);
                col += n;
                at += n;
                if n > 0 {
                    wrote = Some(char::from(run[at - 1]));
                }
                match run.get(at) {
                    // Stopped at a cell holding part of a wide character.
                    Some(&b) if printable(b) && col < want => {
                        if !unpair(cells, col, start) {
                            break;
                        }
                        self.put(&mut cells[col], char::from(b), Flags::empty());
                        wrote = Some(char::from(b));
                        col += 1;
                        at += 1;
                    }
                    Some(&b) if b >= 0x80 || b == 0x1b => {}
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
            wrote = Some(c);
            at += len;
        }
        (
            col,
            Segment {
                len: at,
                last: wrote,
                escape,
            },
        )
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
