//! [`Lane`]: ccd's own parser for what Claude Code's output is mostly made
//! of, in front of `vte`'s, calling the terminal's [`Handler`] methods
//! itself.
//!
//! `vte` takes every byte through its state machine and hands the terminal
//! one character per call; `Term::input` then finds the cursor cell through
//! the grid's ring buffer, looks up the width, maps the charset and steps
//! the cursor, per character. On a flood that was most of the holder's CPU
//! (docs/architecture.md, "Where a holder's CPU goes in a flood"). The lane
//! takes, while `vte` is in its ground state:
//!
//! - **text**: a run of characters up to the next control byte, decoded
//!   once; one-cell characters are written into the grid a row segment at a
//!   time ([`write_run`]), anything else through `Term::input`;
//! - **C0 controls**, mapped as `vte` maps them;
//! - **CSI sequences** in their plain form (`ESC [`, an optional private
//!   marker, digits and separators, intermediates, the final byte, nothing
//!   else between) whole in the chunk: the cursor moves, erases, line and
//!   character edits and SGR without sub-parameters are dispatched exactly
//!   as `vte` dispatches them; any other plain CSI goes to `vte` whole.
//!
//! Everything else goes to `vte` as it is: an escape that is not a plain
//! CSI, a sequence split across chunks, invalid UTF-8. The lane then
//! follows `vte`'s state machine byte by byte ([`Mirror`], a copy of its
//! transitions without its actions) and gives `vte` every byte until it is
//! back in its ground state, so the lane never takes a byte `vte` is in the
//! middle of.
//!
//! `vte` remembers the last character printed, for `CSI b` (repeat). The
//! lane's own prints bypass it, so before `vte` next gets a byte the lane
//! prints its last character to `vte` with a handler that drops it
//! ([`Discard`]).
//!
//! The result is the same model as `vte` alone would leave, field for field
//! (`tests/lane.rs`, the `screen` fuzz target, both against
//! `Screen::set_per_char`).

use alacritty_terminal::event::EventListener;
use alacritty_terminal::grid::Dimensions;
use alacritty_terminal::index::Column;
use alacritty_terminal::term::cell::{Cell, Flags};
use alacritty_terminal::term::{Term, TermMode};
use alacritty_terminal::vte::ansi::{
    Attr, CharsetIndex, ClearMode, Color, Handler, LineClearMode, NamedColor, Processor, Rgb,
    StandardCharset,
};
use unicode_width::UnicodeWidthChar;

use crate::screen::Unbuffered;

/// The lane's state between chunks.
#[derive(Debug, Default)]
pub(crate) struct Lane {
    /// Where `vte`'s state machine is.
    vte: Mirror,
    /// The last character the lane printed since `vte` last had bytes:
    /// `vte`'s `CSI b` repeats it, so `vte` is told before it next parses.
    unsynced: Option<char>,
    /// The plain CSI being read ([`Csi::parse`] fills it in place).
    csi: Csi,
    /// The start of a character `vte` keeps for its next call (in
    /// [`Mirror::Utf8`]; at most 3 bytes).
    partial: Vec<u8>,
}

/// `vte` 0.15's parser states, moved between as its `Parser` moves (the
/// transitions of its `advance_*` functions, without their actions).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Mirror {
    #[default]
    Ground,
    Escape,
    EscapeIntermediate,
    CsiEntry,
    CsiParam,
    CsiIntermediate,
    CsiIgnore,
    DcsEntry,
    DcsParam,
    DcsIntermediate,
    DcsPassthrough,
    DcsIgnore,
    OscString,
    SosPmApcString,
    /// Ground, but holding the start of a character ([`Lane::partial`]):
    /// the lane's own state, which `vte` keeps in its `partial_utf8`.
    Utf8,
}

/// Whether `b` is a C0 control that `vte` executes (or ignores) inside a
/// sequence without leaving it: all but CAN, SUB and ESC.
fn inner_c0(b: u8) -> bool {
    matches!(b, 0x00..=0x17 | 0x19 | 0x1c..=0x1f)
}

impl Mirror {
    /// `vte`'s transitions that apply in any state not listed otherwise.
    fn anywhere(self, b: u8) -> Self {
        match b {
            0x18 | 0x1a => Self::Ground,
            0x1b => Self::Escape,
            _ => self,
        }
    }

    /// The state after `b`.
    fn next(self, b: u8) -> Self {
        use Mirror::*;
        match self {
            // The lane never steps the mirror in these ([`Lane::advance`]).
            Ground | Utf8 => self,
            Escape => match b {
                0x18 | 0x1a | 0x30..=0x4f | 0x51..=0x57 | 0x59 | 0x5a | 0x5c | 0x60..=0x7e => {
                    Ground
                }
                0x20..=0x2f => EscapeIntermediate,
                0x50 => DcsEntry,
                0x58 | 0x5e | 0x5f => SosPmApcString,
                0x5b => CsiEntry,
                0x5d => OscString,
                _ => Escape,
            },
            EscapeIntermediate => match b {
                _ if inner_c0(b) => self,
                0x20..=0x2f | 0x7f => self,
                0x30..=0x7e => Ground,
                _ => self.anywhere(b),
            },
            CsiEntry => match b {
                _ if inner_c0(b) => self,
                0x20..=0x2f => CsiIntermediate,
                0x30..=0x3f => CsiParam,
                0x40..=0x7e => Ground,
                _ => self.anywhere(b),
            },
            CsiParam => match b {
                _ if inner_c0(b) => self,
                0x30..=0x3b | 0x7f => self,
                0x20..=0x2f => CsiIntermediate,
                0x3c..=0x3f => CsiIgnore,
                0x40..=0x7e => Ground,
                _ => self.anywhere(b),
            },
            CsiIntermediate => match b {
                _ if inner_c0(b) => self,
                0x20..=0x2f => self,
                0x30..=0x3f => CsiIgnore,
                0x40..=0x7e => Ground,
                _ => self.anywhere(b),
            },
            CsiIgnore => match b {
                _ if inner_c0(b) => self,
                0x20..=0x3f | 0x7f => self,
                0x40..=0x7e => Ground,
                _ => self.anywhere(b),
            },
            DcsEntry => match b {
                _ if inner_c0(b) => self,
                0x7f => self,
                0x20..=0x2f => DcsIntermediate,
                0x30..=0x3f => DcsParam,
                0x40..=0x7e => DcsPassthrough,
                _ => self.anywhere(b),
            },
            DcsIntermediate => match b {
                _ if inner_c0(b) => self,
                0x20..=0x2f | 0x7f => self,
                0x30..=0x3f => DcsIgnore,
                0x40..=0x7e => DcsPassthrough,
                _ => self.anywhere(b),
            },
            DcsParam => match b {
                _ if inner_c0(b) => self,
                0x30..=0x3b | 0x7f => self,
                0x20..=0x2f => DcsIntermediate,
                0x3c..=0x3f => DcsIgnore,
                0x40..=0x7e => DcsPassthrough,
                _ => self.anywhere(b),
            },
            DcsPassthrough => match b {
                0x18 | 0x1a | 0x9c => Ground,
                0x1b => Escape,
                _ => self,
            },
            OscString => match b {
                0x07 | 0x18 | 0x1a => Ground,
                0x1b => Escape,
                _ => self,
            },
            DcsIgnore | SosPmApcString => self.anywhere(b),
        }
    }

    /// Step over `bytes` until the state is back to ground: how many bytes
    /// that took (all of them if it is not there yet).
    fn until_ground(&mut self, bytes: &[u8]) -> usize {
        for (i, &b) in bytes.iter().enumerate() {
            *self = self.next(b);
            if *self == Mirror::Ground {
                return i + 1;
            }
        }
        bytes.len()
    }
}

/// A handler that does nothing: `vte` prints the lane's last character to
/// it, to remember it for `CSI b`.
struct Discard;
impl Handler for Discard {}

impl Lane {
    /// Feed `bytes` to the terminal: the same terminal as
    /// `parser.advance(term, bytes)` would leave. `bytes` never ends inside
    /// a UTF-8 sequence (`Screen::process` holds such a tail back), so `vte`
    /// never holds part of a character between calls. `parser` never
    /// buffers a synchronized update ([`Unbuffered`]): the lane's bytes and
    /// `vte`'s reach the terminal in stream order.
    pub(crate) fn advance<L: EventListener>(
        &mut self,
        parser: &mut Processor<Unbuffered>,
        term: &mut Term<L>,
        bytes: &[u8],
    ) {
        let mut i = 0;
        while i < bytes.len() {
            let rest = &bytes[i..];
            i += if self.vte == Mirror::Ground {
                match rest[0] {
                    0x1b => self.escape(parser, term, rest),
                    b @ 0x00..=0x1f => {
                        execute(term, b);
                        1
                    }
                    _ => self.text(parser, term, rest),
                }
            } else if self.vte == Mirror::Utf8 {
                parser.advance(term, &rest[..1]);
                self.vte = self.after_partial(rest[0]);
                1
            } else {
                let n = self.vte.until_ground(rest);
                parser.advance(term, &rest[..n]);
                n
            };
        }
    }

    /// Give `bytes` to `vte` (in its ground state), after telling it the
    /// lane's last printed character.
    fn give_vte<L: EventListener>(
        &mut self,
        parser: &mut Processor<Unbuffered>,
        term: &mut Term<L>,
        bytes: &[u8],
    ) {
        if let Some(c) = self.unsynced.take() {
            let mut buf = [0; 4];
            parser.advance(&mut Discard, c.encode_utf8(&mut buf).as_bytes());
        }
        parser.advance(term, bytes);
    }

    /// `bytes` starts with ESC: a plain CSI the lane dispatches or gives to
    /// `vte` whole, else the ESC alone to `vte` (which the mirror follows).
    fn escape<L: EventListener>(
        &mut self,
        parser: &mut Processor<Unbuffered>,
        term: &mut Term<L>,
        bytes: &[u8],
    ) -> usize {
        if self.csi.parse(bytes).is_some() {
            let len = self.csi.len;
            if !self.csi.dispatch(term) {
                self.give_vte(parser, term, &bytes[..len]);
            }
            return len;
        }
        self.give_vte(parser, term, &bytes[..1]);
        self.vte = Mirror::Escape;
        1
    }

    /// `bytes` starts with a byte `vte` takes as text (0x20 and up): print
    /// up to the next control byte. At invalid UTF-8, `vte` gets the rest up
    /// to and with the next ESC, as it would have read it in one go; if
    /// there is no ESC and the chunk ends in the start of a character (one
    /// cut short by the next character's first byte, which `Screen::process`
    /// held back), `vte` keeps it for its next call ([`Mirror::Utf8`]).
    fn text<L: EventListener>(
        &mut self,
        parser: &mut Processor<Unbuffered>,
        term: &mut Term<L>,
        bytes: &[u8],
    ) -> usize {
        let (end, invalid_at) = self.print(term, bytes);
        if !invalid_at {
            return end;
        }
        let from = end;
        let Some(e) = memchr::memchr(0x1b, &bytes[from..]) else {
            self.give_vte(parser, term, &bytes[from..]);
            if let Some(p) = unfinished_end(&bytes[from..]) {
                self.partial = p.to_vec();
                self.vte = Mirror::Utf8;
            }
            return bytes.len();
        };
        let to = from + e + 1;
        self.give_vte(parser, term, &bytes[from..to]);
        self.vte = Mirror::Escape;
        to
    }

    /// Where `vte` is after reading `b` while keeping the start of a
    /// character (`advance_partial_utf8`, a byte at a time): the character
    /// finished, still unfinished, or a replacement printed and `b` read
    /// again in the ground state.
    fn after_partial(&mut self, b: u8) -> Mirror {
        self.partial.push(b);
        match std::str::from_utf8(&self.partial) {
            Ok(_) => {}
            Err(e) if e.error_len().is_none() => return Mirror::Utf8,
            Err(_) => {
                self.partial.clear();
                return match b {
                    0x1b => Mirror::Escape,
                    _ => match unfinished_end(&[b]) {
                        Some(_) => {
                            self.partial.push(b);
                            Mirror::Utf8
                        }
                        None => Mirror::Ground,
                    },
                };
            }
        }
        self.partial.clear();
        Mirror::Ground
    }

    /// Print the text at the start of `bytes` up to the next control byte
    /// as `vte` would, character by character: C1 controls do nothing, DEL
    /// prints nothing but is remembered, the rest is written a row segment
    /// at a time where it can be ([`write_run`]), straight from `bytes`.
    /// Where it stopped, and whether at invalid UTF-8 (or the start of a
    /// character the chunk cuts).
    fn print<L: EventListener>(&mut self, term: &mut Term<L>, bytes: &[u8]) -> (usize, bool) {
        // The text not yet written starts here.
        let mut run = 0;
        let mut i = 0;
        let invalid = loop {
            while i < bytes.len() && (0x20..0x7f).contains(&bytes[i]) {
                i += 1;
            }
            let Some(&b) = bytes.get(i) else {
                break false;
            };
            if b < 0x20 {
                break false;
            }
            if b == 0x7f {
                write_run(term, &bytes[run..i]);
                i += 1;
                run = i;
                continue;
            }
            let Some((c, len)) = char_at(&bytes[i..]) else {
                break true;
            };
            if ('\u{80}'..='\u{9f}').contains(&c) {
                write_run(term, &bytes[run..i]);
                run = i + len;
            }
            i += len;
        };
        write_run(term, &bytes[run..i]);
        if let Some(c) = last_char(&bytes[..i]) {
            self.unsynced = Some(c);
        }
        (i, invalid)
    }
}

/// The character that starts `bytes` (a byte 0x80 or above first) and its
/// length, if it is valid UTF-8 and whole (the ranges of the Unicode
/// standard's table 3-7, as `str::from_utf8` checks them).
fn char_at(bytes: &[u8]) -> Option<(char, usize)> {
    let b0 = *bytes.first()?;
    let (len, second) = match b0 {
        0xc2..=0xdf => (2, 0x80..=0xbf),
        0xe0 => (3, 0xa0..=0xbf),
        0xe1..=0xec | 0xee..=0xef => (3, 0x80..=0xbf),
        0xed => (3, 0x80..=0x9f),
        0xf0 => (4, 0x90..=0xbf),
        0xf1..=0xf3 => (4, 0x80..=0xbf),
        0xf4 => (4, 0x80..=0x8f),
        _ => return None,
    };
    let seq = bytes.get(..len)?;
    if !second.contains(&seq[1]) || seq[2..].iter().any(|&b| b & 0xc0 != 0x80) {
        return None;
    }
    Some((decode(seq), len))
}

/// The character `seq` encodes: one whole, valid UTF-8 sequence (checked by
/// [`char_at`] first); U+FFFD if it is not.
fn decode(seq: &[u8]) -> char {
    let lead = match seq.len() {
        0 => return char::REPLACEMENT_CHARACTER,
        1 => return char::from(seq[0]),
        2 => u32::from(seq[0] & 0x1f),
        3 => u32::from(seq[0] & 0x0f),
        _ => u32::from(seq[0] & 0x07),
    };
    let v = seq[1..]
        .iter()
        .fold(lead, |v, &b| (v << 6) | u32::from(b & 0x3f));
    char::from_u32(v).unwrap_or(char::REPLACEMENT_CHARACTER)
}

/// Bytes in the UTF-8 sequence `lead` starts (1 for ASCII and for a byte
/// that cannot start one).
fn seq_len(lead: u8) -> usize {
    match lead {
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf7 => 4,
        _ => 1,
    }
}

/// The last character `vte` printed of `text` (valid UTF-8, no C0 control):
/// the last one that is not a C1 control.
fn last_char(text: &[u8]) -> Option<char> {
    let mut end = text.len();
    while end > 0 {
        let start = (end.saturating_sub(4)..end)
            .rev()
            .find(|&i| text[i] & 0xc0 != 0x80)?;
        let c = decode(&text[start..end]);
        if !('\u{80}'..='\u{9f}').contains(&c) {
            return Some(c);
        }
        end = start;
    }
    None
}

/// The start of a character that more bytes could finish at the end of
/// `text`, read as `vte` reads text in its ground state (each invalid
/// sequence replaced, reading on after it): what `vte` keeps for its next
/// call.
fn unfinished_end(mut text: &[u8]) -> Option<&[u8]> {
    loop {
        let e = std::str::from_utf8(text).err()?;
        match e.error_len() {
            None => return Some(&text[e.valid_up_to()..]),
            Some(n) => text = &text[e.valid_up_to() + n..],
        }
    }
}

/// A C0 control in the ground state, as `vte` executes it.
fn execute<L: EventListener>(term: &mut Term<L>, b: u8) {
    match b {
        0x09 => term.put_tab(1),
        0x08 => term.backspace(),
        0x0d => term.carriage_return(),
        0x0a..=0x0c => term.linefeed(),
        0x07 => term.bell(),
        0x1a => term.substitute(),
        0x0f => term.set_active_charset(CharsetIndex::G0),
        0x0e => term.set_active_charset(CharsetIndex::G1),
        _ => {}
    }
}

/// Write `run` (valid UTF-8, no control character) as `Term::input`
/// would, character by character, but a row segment at a time where that
/// is the same ([`write_segment`]).
fn write_run<L: EventListener>(term: &mut Term<L>, mut run: &[u8]) {
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
    let pen = Cell {
        c: ' ',
        fg: cursor.template.fg,
        bg: cursor.template.bg,
        flags: cursor.template.flags,
        extra: cursor.template.extra.clone(),
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
                *cell = Cell {
                    c: char::from(b),
                    ..pen.clone()
                };
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
                cells[col] = Cell { c, ..pen.clone() };
                col += 1;
            }
            Some(2) if col + 1 < want && plain(&cells[col]) && plain(&cells[col + 1]) => {
                cells[col] = Cell { c, ..pen.clone() };
                cells[col].flags.insert(Flags::WIDE_CHAR);
                cells[col + 1] = pen.clone();
                cells[col + 1].flags.insert(Flags::WIDE_CHAR_SPACER);
                col += 2;
            }
            _ => break,
        }
        at += len;
    }
    grid.cursor.point.column.0 = start + col;
    at
}

/// Most parameters `vte` keeps (its `Params`); a sequence with more is
/// ignored by it, and left to it by the lane.
const MAX_PARAMS: usize = 32;

/// A CSI sequence in its plain form, parsed as `vte` parses it.
#[derive(Debug, Default)]
struct Csi {
    /// Bytes from the ESC to the final byte, both included.
    len: usize,
    /// The private marker (`?`, `<`, `=`, `>`), if any.
    private: Option<u8>,
    /// Intermediates between the parameters and the final byte.
    intermediates: usize,
    /// Whether a parameter has sub-parameters (`:`).
    colon: bool,
    params: [u16; MAX_PARAMS],
    n: usize,
    action: u8,
}

impl Csi {
    /// The plain CSI at the start of `bytes`: `ESC [`, an optional private
    /// marker, digits, `;` and `:`, intermediates, a final byte. `None` if
    /// it is anything else, has more than [`MAX_PARAMS`] parameters, or is
    /// not whole in `bytes` (and then what it holds is meaningless).
    fn parse(&mut self, bytes: &[u8]) -> Option<()> {
        if bytes.get(1) != Some(&b'[') {
            return None;
        }
        let csi = self;
        csi.private = None;
        csi.intermediates = 0;
        csi.colon = false;
        csi.n = 0;
        let mut i = 2;
        if let Some(&p @ 0x3c..=0x3f) = bytes.get(i) {
            csi.private = Some(p);
            i += 1;
        }
        // `vte` saturates each step at `u16::MAX`; so does `min` here.
        let mut param: u32 = 0;
        loop {
            match *bytes.get(i)? {
                d @ b'0'..=b'9' => {
                    param = (param * 10 + u32::from(d - b'0')).min(u32::from(u16::MAX));
                }
                b';' | b':' => {
                    if bytes[i] == b':' {
                        csi.colon = true;
                    }
                    *csi.params.get_mut(csi.n)? = u16::try_from(param).unwrap_or(u16::MAX);
                    csi.n += 1;
                    param = 0;
                }
                _ => break,
            }
            i += 1;
        }
        *csi.params.get_mut(csi.n)? = u16::try_from(param).unwrap_or(u16::MAX);
        csi.n += 1;
        while let 0x20..=0x2f = *bytes.get(i)? {
            csi.intermediates += 1;
            i += 1;
        }
        match *bytes.get(i)? {
            a @ 0x40..=0x7e => csi.action = a,
            _ => return None,
        }
        csi.len = i + 1;
        Some(())
    }

    /// Dispatch to the terminal as `vte` does, for the sequences the lane
    /// knows; `false` (nothing done) for the others.
    fn dispatch<L: EventListener>(&self, term: &mut Term<L>) -> bool {
        if self.private.is_some() || self.intermediates > 0 || self.colon {
            return false;
        }
        let params = &self.params[..self.n];
        let mut p = Params(params.iter());
        match self.action {
            b'@' => term.insert_blank(usize::from(p.or(1))),
            b'A' => term.move_up(usize::from(p.or(1))),
            b'B' | b'e' => term.move_down(usize::from(p.or(1))),
            b'C' | b'a' => term.move_forward(usize::from(p.or(1))),
            b'D' => term.move_backward(usize::from(p.or(1))),
            b'd' => term.goto_line(i32::from(p.or(1)) - 1),
            b'E' => term.move_down_and_cr(usize::from(p.or(1))),
            b'F' => term.move_up_and_cr(usize::from(p.or(1))),
            b'G' | b'`' => term.goto_col(usize::from(p.or(1)) - 1),
            b'H' | b'f' => {
                let y = i32::from(p.or(1));
                let x = usize::from(p.or(1));
                term.goto(y - 1, x - 1);
            }
            b'J' => {
                let mode = match p.or(0) {
                    0 => ClearMode::Below,
                    1 => ClearMode::Above,
                    2 => ClearMode::All,
                    3 => ClearMode::Saved,
                    _ => return true,
                };
                term.clear_screen(mode);
            }
            b'K' => {
                let mode = match p.or(0) {
                    0 => LineClearMode::Right,
                    1 => LineClearMode::Left,
                    2 => LineClearMode::All,
                    _ => return true,
                };
                term.clear_line(mode);
            }
            b'L' => term.insert_blank_lines(usize::from(p.or(1))),
            b'M' => term.delete_lines(usize::from(p.or(1))),
            b'P' => term.delete_chars(usize::from(p.or(1))),
            b'S' => term.scroll_up(usize::from(p.or(1))),
            b'T' => term.scroll_down(usize::from(p.or(1))),
            b'X' => term.erase_chars(usize::from(p.or(1))),
            b'm' => sgr(term, params),
            _ => return false,
        }
        true
    }
}

/// `vte`'s walk over a CSI's parameters.
struct Params<'a>(std::slice::Iter<'a, u16>);

impl Params<'_> {
    /// The next parameter, or `default` if there is none or it is 0.
    fn or(&mut self, default: u16) -> u16 {
        match self.0.next() {
            Some(&p) if p != 0 => p,
            _ => default,
        }
    }
}

/// Colours 0-7 in SGR order.
const NAMED: [NamedColor; 8] = [
    NamedColor::Black,
    NamedColor::Red,
    NamedColor::Green,
    NamedColor::Yellow,
    NamedColor::Blue,
    NamedColor::Magenta,
    NamedColor::Cyan,
    NamedColor::White,
];

/// Colours 8-15 in SGR order.
const BRIGHT: [NamedColor; 8] = [
    NamedColor::BrightBlack,
    NamedColor::BrightRed,
    NamedColor::BrightGreen,
    NamedColor::BrightYellow,
    NamedColor::BrightBlue,
    NamedColor::BrightMagenta,
    NamedColor::BrightCyan,
    NamedColor::BrightWhite,
];

/// SGR without sub-parameters, attribute by attribute as `vte`'s
/// `attrs_from_sgr_parameters` reads it.
fn sgr<L: EventListener>(term: &mut Term<L>, params: &[u16]) {
    let mut it = params.iter().copied();
    while let Some(p) = it.next() {
        let attr = match p {
            0 => Some(Attr::Reset),
            1 => Some(Attr::Bold),
            2 => Some(Attr::Dim),
            3 => Some(Attr::Italic),
            4 => Some(Attr::Underline),
            5 => Some(Attr::BlinkSlow),
            6 => Some(Attr::BlinkFast),
            7 => Some(Attr::Reverse),
            8 => Some(Attr::Hidden),
            9 => Some(Attr::Strike),
            21 => Some(Attr::CancelBold),
            22 => Some(Attr::CancelBoldDim),
            23 => Some(Attr::CancelItalic),
            24 => Some(Attr::CancelUnderline),
            25 => Some(Attr::CancelBlink),
            27 => Some(Attr::CancelReverse),
            28 => Some(Attr::CancelHidden),
            29 => Some(Attr::CancelStrike),
            30..=37 => Some(Attr::Foreground(Color::Named(NAMED[usize::from(p - 30)]))),
            38 => sgr_color(&mut it).map(Attr::Foreground),
            39 => Some(Attr::Foreground(Color::Named(NamedColor::Foreground))),
            40..=47 => Some(Attr::Background(Color::Named(NAMED[usize::from(p - 40)]))),
            48 => sgr_color(&mut it).map(Attr::Background),
            49 => Some(Attr::Background(Color::Named(NamedColor::Background))),
            58 => sgr_color(&mut it).map(|c| Attr::UnderlineColor(Some(c))),
            59 => Some(Attr::UnderlineColor(None)),
            90..=97 => Some(Attr::Foreground(Color::Named(BRIGHT[usize::from(p - 90)]))),
            100..=107 => Some(Attr::Background(Color::Named(BRIGHT[usize::from(p - 100)]))),
            _ => None,
        };
        if let Some(attr) = attr {
            term.terminal_attribute(attr);
        }
    }
}

/// `vte`'s `parse_sgr_color`: `2;r;g;b` or `5;index`, the parameters it
/// reads consumed even when they do not make a colour.
fn sgr_color(it: &mut impl Iterator<Item = u16>) -> Option<Color> {
    match it.next() {
        Some(2) => Some(Color::Spec(Rgb {
            r: u8::try_from(it.next()?).ok()?,
            g: u8::try_from(it.next()?).ok()?,
            b: u8::try_from(it.next()?).ok()?,
        })),
        Some(5) => Some(Color::Indexed(u8::try_from(it.next()?).ok()?)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mirror_follows_vte_through_each_kind_of_sequence() {
        let cases: [(&[u8], Mirror); 9] = [
            (b"\x1b[1;2H", Mirror::Ground),
            (b"\x1b[1;2", Mirror::CsiParam),
            (b"\x1b]0;title\x07", Mirror::Ground),
            (b"\x1b]0;title\x1b", Mirror::Escape),
            (b"\x1bP1$qm", Mirror::DcsPassthrough),
            (b"\x1bP1$qm\x1b\\", Mirror::Ground),
            (b"\x1b[1\x18", Mirror::Ground),
            (b"\x1b_apc", Mirror::SosPmApcString),
            (b"\x1b(0", Mirror::Ground),
        ];
        for (bytes, want) in cases {
            let mut m = Mirror::Escape;
            let n = m.until_ground(&bytes[1..]);
            assert_eq!(m, want, "{:?}", String::from_utf8_lossy(bytes));
            if want == Mirror::Ground {
                assert_eq!(n, bytes.len() - 1);
            }
        }
    }

    #[test]
    fn a_plain_csi_is_parsed_as_vte_parses_it() {
        let mut csi = Csi::default();
        csi.parse(b"\x1b[;5Hx").expect("plain");
        assert_eq!(
            (csi.len, &csi.params[..csi.n], csi.action),
            (5, &[0, 5][..], b'H')
        );
        csi.parse(b"\x1b[?2026h").expect("plain");
        assert_eq!(
            (csi.private, &csi.params[..csi.n]),
            (Some(b'?'), &[2026][..])
        );
        csi.parse(b"\x1b[99999m").expect("plain");
        assert_eq!(&csi.params[..csi.n], &[u16::MAX][..]);
        csi.parse(b"\x1b[6553;6554;65535;655359m").expect("plain");
        assert_eq!(&csi.params[..csi.n], &[6553, 6554, u16::MAX, u16::MAX][..]);
        assert!(csi.parse(b"\x1b[1;2").is_none(), "not whole");
        assert!(csi.parse(b"\x1b[1\n2H").is_none(), "a control inside");
        assert!(
            csi.parse(b"\x1b[1?H").is_none(),
            "a marker after a parameter"
        );
        assert!(csi.parse(b"\x1b(0").is_none(), "not a CSI");
        let many = format!("\x1b[{}m", ";".repeat(MAX_PARAMS));
        assert!(csi.parse(many.as_bytes()).is_none(), "more than vte keeps");
        let most = format!("\x1b[{}m", ";".repeat(MAX_PARAMS - 1));
        assert!(csi.parse(most.as_bytes()).is_some());
    }
}
