//! Text written into the terminal's grid a row segment at a time, exactly
//! as `Term::input` would write it character by character.

use alacritty_terminal::event::EventListener;
use alacritty_terminal::grid::Dimensions;
use alacritty_terminal::index::Column;
use alacritty_terminal::term::cell::{Cell, Flags};
use alacritty_terminal::term::{Term, TermMode};
use alacritty_terminal::vte::ansi::{CharsetIndex, Handler, StandardCharset};
use unicode_width::UnicodeWidthChar;

use super::utf8::{decode, seq_len};

/// Write `run` (valid UTF-8, no control character) as `Term::input`
/// would, character by character, but a row segment at a time where that
/// is the same ([`write_segment`]).
pub(super) fn write_run<L: EventListener>(term: &mut Term<L>, mut run: &[u8]) {
    while let Some(&lead) = run.first() {
        let n = write_segment(term, run);
        if n > 0 {
            run = &run[n..];
            continue;
        }
        let len = seq_len(lead).min(run.len());
        Handler::input(term, decode(&run[..len]));
        run = &run[len..];
    }
}

/// Write as much of the start of `run` as forms a row segment that
/// `Term::input` would write the same way: no insert mode, every charset
/// ASCII, no wrap pending, one- and two-cell characters only, the segment
/// ends before the last column, none of its cells holds part of a wide
/// character. How many bytes (0: the first character needs `Term::input`).
fn write_segment<L: EventListener>(term: &mut Term<L>, run: &[u8]) -> usize {
    if term.mode().contains(TermMode::INSERT) {
        return 0;
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
        return 0;
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
        return 0;
    }
    let line = cursor.point.line;
    let template = &cursor.template;
    let (fg, bg, flags) = (template.fg, template.bg, template.flags);
    let extra = template.extra.clone();
    // The cell `Term::input` writes: the pen's, with the character (and
    // the wide flag or the spacer's). Its shared extra is cloned only where
    // a cell has one or gets one.
    let fill = |cell: &mut Cell, c: char, wide: Flags| {
        cell.c = c;
        cell.fg = fg;
        cell.bg = bg;
        cell.flags = flags | wide;
        if cell.extra.is_some() || extra.is_some() {
            cell.extra.clone_from(&extra);
        }
    };
    let cells = &mut grid[line][Column(start)..Column(start + want)];
    // A cell holding part of a wide character needs its pair cleared too:
    // the segment stops before it.
    let plain = |c: &Cell| {
        !c.flags
            .intersects(Flags::WIDE_CHAR | Flags::WIDE_CHAR_SPACER)
    };
    let (mut col, mut at) = (0, 0);
    let mut last = ('\0', None);
    while let (Some(&lead), true) = (run.get(at), col < want) {
        if lead < 0x80 {
            // A stretch of ASCII: one cell a byte.
            for (cell, &b) in cells[col..].iter_mut().zip(&run[at..]) {
                if b >= 0x80 || !plain(cell) {
                    break;
                }
                fill(cell, char::from(b), Flags::empty());
                col += 1;
                at += 1;
            }
            if run.get(at).is_none_or(|&b| b < 0x80) {
                break;
            }
            continue;
        }
        let len = seq_len(lead).min(run.len() - at);
        let c = decode(&run[at..at + len]);
        // Box drawing repeats a character: its width is looked up once.
        if c != last.0 {
            last = (c, c.width());
        }
        match last.1 {
            Some(1) if plain(&cells[col]) => {
                fill(&mut cells[col], c, Flags::empty());
                col += 1;
                // The same character again (a rule, a box's edge): neither
                // decoded nor looked up again.
                let seq = &run[at..at + len];
                while col < want && run.get(at + len..at + 2 * len) == Some(seq) {
                    if !plain(&cells[col]) {
                        break;
                    }
                    fill(&mut cells[col], c, Flags::empty());
                    col += 1;
                    at += len;
                }
            }
            Some(2) if col + 1 < want && plain(&cells[col]) && plain(&cells[col + 1]) => {
                fill(&mut cells[col], c, Flags::WIDE_CHAR);
                fill(&mut cells[col + 1], ' ', Flags::WIDE_CHAR_SPACER);
                col += 2;
            }
            _ => break,
        }
        at += len;
    }
    grid.cursor.point.column.0 = start + col;
    at
}
