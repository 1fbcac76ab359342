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
//! - **text**: a run of characters up to the next C0 control, checked
//!   and decoded once, as it is written (a character repeated, once for
//!   the whole repeat); one- and two-cell characters are written into the
//!   grid a row segment at a time ([`write_text`]), anything else through
//!   `Term::input`. A plain SGR between characters (a colour between
//!   words) is applied where it is met and the text goes on, in the same
//!   row segment; the ESC of any other sequence ends the text, its CSI
//!   parsed once for the dispatch that follows;
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
//! `Screen::set_vte_only`; `tests/fixtures.rs` on the real CLI's
//! recordings at every chunk split).
//!
//! Plain lines (printable ASCII, CR, LF) that scroll out of the model
//! before anything could show them are stepped over, not written
//! ([`scroll_out`]): the lane puts the cursor where they would have left it.
//! It does so only while it knows the scrolling region is the whole screen
//! (it dispatches `CSI r` itself; one `vte` dispatches, or a resize, is
//! followed).
//!
//! The parts: [`mirror`] follows `vte`'s state machine, [`csi`] parses and
//! dispatches plain CSI sequences, [`grid`] writes text into the grid,
//! [`utf8`] reads characters as `vte` reads them, [`scroll_out`] finds the
//! lines that scroll out.

use alacritty_terminal::event::EventListener;
use alacritty_terminal::grid::Dimensions;
use alacritty_terminal::index::Line;
use alacritty_terminal::term::Term;
use alacritty_terminal::vte::ansi::{CharsetIndex, Handler, Processor};

use crate::modes::ModeScanner;
use crate::screen::Unbuffered;

mod csi;
mod grid;
mod mirror;
mod scroll_out;
mod utf8;

use csi::{AtEscape, Csi, Dispatched};
use grid::write_text;
use mirror::Mirror;
use utf8::unfinished_end;

/// The lane's state between chunks.
#[derive(Debug)]
pub(crate) struct Lane {
    /// Where `vte`'s state machine is.
    vte: Mirror,
    /// The last character the lane printed since `vte` last had bytes:
    /// `vte`'s `CSI b` repeats it, so `vte` is told before it next parses.
    unsynced: Option<char>,
    /// The plain CSI being read ([`Csi::parse`] fills it in place).
    csi: Csi,
    /// Text stopped at the ESC the next piece starts with, having looked
    /// at it ([`write_text`]): whether `csi` holds it, parsed (then it is
    /// dispatched without a second parse).
    csi_parsed: Option<bool>,
    /// The start of a character `vte` keeps for its next call (in
    /// [`Mirror::Utf8`]; at most 3 bytes).
    partial: Vec<u8>,
    /// Whether the scrolling region is known to be the whole screen (a new
    /// terminal's, a resize's, or one the lane set): plain lines that
    /// scroll out are stepped over only then.
    region_full: bool,
    /// Lines of scrollback the terminal keeps (at most).
    scrollback: usize,
    /// Bytes of plain lines stepped over so far (tests, benchmarks).
    stepped_over: u64,
    /// Bytes of the current [`Lane::advance`] call the mode scanner has.
    scanned: usize,
}

/// A handler that does nothing: `vte` prints the lane's last character to
/// it, to remember it for `CSI b`.
struct Discard;
impl Handler for Discard {}

impl Lane {
    /// The lane of a new terminal keeping `scrollback` lines.
    pub(crate) fn new(scrollback: usize) -> Self {
        Self {
            vte: Mirror::Ground,
            unsynced: None,
            csi: Csi::default(),
            csi_parsed: None,
            partial: Vec::new(),
            region_full: true,
            scrollback,
            stepped_over: 0,
            scanned: 0,
        }
    }

    /// Bytes of plain lines stepped over so far.
    pub(crate) fn stepped_over(&self) -> u64 {
        self.stepped_over
    }

    /// The terminal was resized: its scrolling region is the whole screen.
    pub(crate) fn resized(&mut self) {
        self.region_full = true;
    }

    /// Feed `bytes` to the terminal and to `scanner`: the same terminal as
    /// `parser.advance(term, bytes)` and the same scanner as
    /// `scanner.feed(bytes)` would leave. `bytes` never ends inside a UTF-8
    /// sequence (`Screen::process` holds such a tail back), so `vte` never
    /// holds part of a character between calls. `parser` never buffers a
    /// synchronized update ([`Unbuffered`]): the lane's bytes and `vte`'s
    /// reach the terminal in stream order.
    ///
    /// The scanner gets every byte but those it would pass over in its
    /// ground state without a change: text and C0 controls (no ESC), and
    /// the plain CSI sequences the lane dispatches (no private marker, no
    /// intermediate: none of the scanner's). [`Lane::scanned`] says how far
    /// the scanner has been fed, should the terminal panic (counted from
    /// [`Lane::clear_scanned`], which the caller calls before each call).
    pub(crate) fn advance<L: EventListener>(
        &mut self,
        parser: &mut Processor<Unbuffered>,
        term: &mut Term<L>,
        scanner: &mut ModeScanner,
        bytes: &[u8],
    ) {
        let mut i = 0;
        // Bytes before this were looked at for plain lines already.
        let mut plain_seen = 0;
        // Plain lines are looked for where a call starts and after a line
        // feed (a TUI's output rarely has one; a flood of lines always
        // does), not after every escape.
        let mut line_start = true;
        while i < bytes.len() {
            let rest = &bytes[i..];
            let ground = self.vte == Mirror::Ground;
            let lines = if line_start && i >= plain_seen && ground && self.region_full {
                let plain = scroll_out::plain_len(rest);
                plain_seen = i + plain;
                plain
            } else {
                0
            };
            let stepped = match lines {
                0 => 0,
                _ => self.step_over(term, &rest[..lines]),
            };
            let (n, passed_over) = if stepped > 0 {
                (stepped, true)
            } else if ground {
                self.ground(parser, term, rest)
            } else if self.vte == Mirror::Utf8 {
                parser.advance(term, &rest[..1]);
                self.vte = self.after_partial(rest[0]);
                (1, false)
            } else {
                let n = self.vte.until_ground(rest);
                parser.advance(term, &rest[..n]);
                if self.vte == Mirror::Ground && rest[n - 1] == b'r' {
                    // Perhaps a `CSI r` of `vte`'s: the region is unknown.
                    self.region_full = false;
                }
                (n, false)
            };
            if !(passed_over && scanner.in_ground()) {
                scanner.feed(&rest[..n]);
            }
            line_start = rest[n - 1] == b'\n';
            i += n;
            self.scanned = i;
        }
    }

    /// A call is about to start: the scanner has none of its bytes.
    pub(crate) fn clear_scanned(&mut self) {
        self.scanned = 0;
    }

    /// How many bytes of the last [`Lane::advance`] call the scanner has
    /// been given (or passed over): all of them once it returns.
    pub(crate) fn scanned(&self) -> usize {
        self.scanned
    }

    /// The piece at the start of `bytes` with `vte` in its ground state: how
    /// many bytes, and whether they are text, C0 controls or a plain CSI
    /// the lane dispatched (which the mode scanner passes over).
    fn ground<L: EventListener>(
        &mut self,
        parser: &mut Processor<Unbuffered>,
        term: &mut Term<L>,
        bytes: &[u8],
    ) -> (usize, bool) {
        match bytes[0] {
            0x1b => self.escape(parser, term, bytes),
            b @ 0x00..=0x1f => {
                execute(term, b);
                (1, true)
            }
            _ => self.text(parser, term, bytes),
        }
    }

    /// Step over the start of `lines` (plain lines) that scrolls out of the
    /// model ([`scroll_out`]): the cursor put where those lines leave it
    /// (column 0 of the bottom line, no wrap pending) and their last
    /// character kept for `CSI b`. How many bytes (0: none scroll out).
    fn step_over<L: EventListener>(&mut self, term: &mut Term<L>, lines: &[u8]) -> usize {
        let rows = term.screen_lines();
        let Some(end) = scroll_out::scrolled_out(lines, rows, self.scrollback) else {
            return 0;
        };
        if let Some(&c) = lines[..end].iter().rev().find(|&&b| b >= 0x20) {
            self.unsynced = Some(char::from(c));
        }
        self.stepped_over += end as u64;
        term.carriage_return();
        term.grid_mut().cursor.point.line = Line(i32::try_from(rows).unwrap_or(i32::MAX) - 1);
        end
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
    ) -> (usize, bool) {
        let parsed = match self.csi_parsed.take() {
            Some(parsed) => parsed,
            None => match csi::sgr_at(&mut term.grid_mut().cursor.template, bytes, &mut self.csi) {
                AtEscape::Sgr(len) => return (len, true),
                AtEscape::Other { parsed } => parsed,
            },
        };
        if parsed {
            let len = self.csi.len;
            match self.csi.dispatch(term) {
                Dispatched::Done => return (len, true),
                Dispatched::Region { full } => {
                    self.region_full = full;
                    return (len, true);
                }
                Dispatched::NotKnown => {
                    self.give_vte(parser, term, &bytes[..len]);
                    if self.csi.action() == b'r' {
                        self.region_full = false;
                    }
                    return (len, false);
                }
            }
        }
        self.give_vte(parser, term, &bytes[..1]);
        self.vte = Mirror::Escape;
        (1, false)
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
    ) -> (usize, bool) {
        let (end, invalid_at) = self.print(term, bytes);
        if !invalid_at {
            return (end, true);
        }
        let from = end;
        let Some(e) = memchr::memchr(0x1b, &bytes[from..]) else {
            self.give_vte(parser, term, &bytes[from..]);
            if let Some(p) = unfinished_end(&bytes[from..]) {
                self.partial = p.to_vec();
                self.vte = Mirror::Utf8;
            }
            return (bytes.len(), false);
        };
        let to = from + e + 1;
        self.give_vte(parser, term, &bytes[from..to]);
        self.vte = Mirror::Escape;
        (to, false)
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

    /// Print the text at the start of `bytes` up to the next C0 control
    /// (past the plain SGRs between its characters) as `vte` would
    /// ([`write_text`]), straight from `bytes`. Where it stopped, and
    /// whether at invalid UTF-8 (or the start of a character the chunk
    /// cuts).
    fn print<L: EventListener>(&mut self, term: &mut Term<L>, bytes: &[u8]) -> (usize, bool) {
        let written = write_text(term, bytes, &mut self.csi);
        self.csi_parsed = written.escape;
        if let Some(c) = written.last {
            self.unsynced = Some(c);
        }
        (written.len, written.invalid)
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
