//! [`Csi`]: a CSI sequence in its plain form, parsed and dispatched to the
//! terminal as `vte` parses and dispatches it, SGR included.

use alacritty_terminal::event::EventListener;
use alacritty_terminal::grid::Dimensions;
use alacritty_terminal::term::cell::{Cell, Flags};
use alacritty_terminal::term::Term;
use alacritty_terminal::vte::ansi::{ClearMode, Color, Handler, LineClearMode, NamedColor, Rgb};

/// Most parameters `vte` keeps (its `Params`); a sequence with more is
/// ignored by it, and left to it by the lane.
const MAX_PARAMS: usize = 32;

/// A CSI sequence in its plain form, parsed as `vte` parses it.
#[derive(Debug, Default)]
pub(super) struct Csi {
    /// Bytes from the ESC to the final byte, both included.
    pub(super) len: usize,
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
    pub(super) fn parse(&mut self, bytes: &[u8]) -> Option<()> {
        if bytes.get(1) != Some(&b'[') {
            return None;
        }
        let csi = self;
        csi.private = None;
        csi.intermediates = 0;
        csi.colon = false;
        let mut i = 2;
        if let Some(&p @ 0x3c..=0x3f) = bytes.get(i) {
            csi.private = Some(p);
            i += 1;
        }
        // `vte` saturates each step at `u16::MAX`; so does `min` here. The
        // count is kept in a local: the parameters' stores could otherwise
        // be its own, to the compiler, and it was read back after each.
        let mut param: u32 = 0;
        let mut n = 0;
        loop {
            match *bytes.get(i)? {
                d @ b'0'..=b'9' => {
                    param = (param * 10 + u32::from(d - b'0')).min(u32::from(u16::MAX));
                }
                b @ (b';' | b':') => {
                    csi.colon |= b == b':';
                    *csi.params.get_mut(n)? = u16::try_from(param).unwrap_or(u16::MAX);
                    n += 1;
                    param = 0;
                }
                _ => break,
            }
            i += 1;
        }
        *csi.params.get_mut(n)? = u16::try_from(param).unwrap_or(u16::MAX);
        csi.n = n + 1;
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

    /// The final byte.
    pub(super) fn action(&self) -> u8 {
        self.action
    }

    /// No private marker, no intermediates, no sub-parameters: a form the
    /// lane may dispatch (by its final byte).
    fn dispatchable(&self) -> bool {
        self.private.is_none() && self.intermediates == 0 && !self.colon
    }

    /// Dispatch to the terminal as `vte` does, for the sequences the lane
    /// knows; [`Dispatched::NotKnown`] (nothing done) for the others.
    pub(super) fn dispatch<L: EventListener>(&self, term: &mut Term<L>) -> Dispatched {
        if !self.dispatchable() {
            return Dispatched::NotKnown;
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
                    _ => return Dispatched::Done,
                };
                term.clear_screen(mode);
            }
            b'K' => {
                let mode = match p.or(0) {
                    0 => LineClearMode::Right,
                    1 => LineClearMode::Left,
                    2 => LineClearMode::All,
                    _ => return Dispatched::Done,
                };
                term.clear_line(mode);
            }
            b'L' => term.insert_blank_lines(usize::from(p.or(1))),
            b'M' => term.delete_lines(usize::from(p.or(1))),
            b'P' => term.delete_chars(usize::from(p.or(1))),
            b'S' => term.scroll_up(usize::from(p.or(1))),
            b'T' => term.scroll_down(usize::from(p.or(1))),
            b'X' => term.erase_chars(usize::from(p.or(1))),
            b'm' => sgr(&mut term.grid_mut().cursor.template, params),
            b'r' => {
                let top = usize::from(p.or(1));
                let bottom = p.0.next().map(|&b| usize::from(b)).filter(|&b| b != 0);
                term.set_scrolling_region(top, bottom);
                // `Term`'s rule: the region is `top - 1 .. bottom` within
                // the screen, unless empty (then nothing changes).
                let rows = term.screen_lines();
                let bottom = bottom.unwrap_or(rows);
                if top >= bottom {
                    return Dispatched::Done;
                }
                return Dispatched::Region {
                    full: top == 1 && bottom >= rows,
                };
            }
            _ => return Dispatched::NotKnown,
        }
        Dispatched::Done
    }
}

/// `ESC [ 0 m` or `ESC [ m` (SGR 0, the most frequent sequence in a
/// TUI's output: a third of them) at the start of `bytes`, applied to
/// `pen` as [`Csi::dispatch`] would, without the parse: how many bytes.
#[inline(always)]
fn sgr_reset(pen: &mut Cell, bytes: &[u8]) -> Option<usize> {
    let len = match bytes {
        [0x1b, b'[', b'm', ..] => 3,
        [0x1b, b'[', b'0', b'm', ..] => 4,
        _ => return None,
    };
    sgr(pen, &[0]);
    Some(len)
}

/// What [`sgr_at`] found at an ESC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum AtEscape {
    /// A plain SGR, applied: its length.
    Sgr(usize),
    /// Anything else, nothing done: whether it is a plain CSI, which the
    /// `Csi` given now holds (parsed, not dispatched).
    Other { parsed: bool },
}

/// The sequence at the start of `bytes` (an ESC first): a plain SGR (see
/// [`Csi::parse`]) is applied to `pen` (the cursor's template, or a
/// segment's copy of it) as [`Csi::dispatch`] applies it; anything else is
/// left, parsed into `csi` if it is a plain CSI, for the caller to
/// dispatch without a second parse.
pub(super) fn sgr_at(pen: &mut Cell, bytes: &[u8], csi: &mut Csi) -> AtEscape {
    if let Some(len) = sgr_reset(pen, bytes) {
        return AtEscape::Sgr(len);
    }
    if csi.parse(bytes).is_none() {
        return AtEscape::Other { parsed: false };
    }
    if csi.action != b'm' || !csi.dispatchable() {
        return AtEscape::Other { parsed: true };
    }
    sgr(pen, &csi.params[..csi.n]);
    AtEscape::Sgr(csi.len)
}

/// What [`Csi::dispatch`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Dispatched {
    /// Dispatched.
    Done,
    /// Set the scrolling region: the whole screen or not.
    Region { full: bool },
    /// Not a sequence the lane knows: nothing done.
    NotKnown,
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
/// `attrs_from_sgr_parameters` reads it, each applied to the cursor's
/// template as `Term::terminal_attribute` applies it (blinking, which it
/// does not handle, changes nothing), without building the `Attr` it
/// would match on again.
fn sgr(pen: &mut Cell, params: &[u16]) {
    let mut it = params.iter().copied();
    while let Some(p) = it.next() {
        match p {
            0 => {
                pen.fg = Color::Named(NamedColor::Foreground);
                pen.bg = Color::Named(NamedColor::Background);
                pen.flags = Flags::empty();
                clear_underline_color(pen);
            }
            1 => pen.flags.insert(Flags::BOLD),
            2 => pen.flags.insert(Flags::DIM),
            3 => pen.flags.insert(Flags::ITALIC),
            4 => {
                pen.flags.remove(Flags::ALL_UNDERLINES);
                pen.flags.insert(Flags::UNDERLINE);
            }
            7 => pen.flags.insert(Flags::INVERSE),
            8 => pen.flags.insert(Flags::HIDDEN),
            9 => pen.flags.insert(Flags::STRIKEOUT),
            21 => pen.flags.remove(Flags::BOLD),
            22 => pen.flags.remove(Flags::BOLD | Flags::DIM),
            23 => pen.flags.remove(Flags::ITALIC),
            24 => pen.flags.remove(Flags::ALL_UNDERLINES),
            27 => pen.flags.remove(Flags::INVERSE),
            28 => pen.flags.remove(Flags::HIDDEN),
            29 => pen.flags.remove(Flags::STRIKEOUT),
            30..=37 => pen.fg = Color::Named(NAMED[usize::from(p - 30)]),
            38 => {
                if let Some(c) = sgr_color(&mut it) {
                    pen.fg = c;
                }
            }
            39 => pen.fg = Color::Named(NamedColor::Foreground),
            40..=47 => pen.bg = Color::Named(NAMED[usize::from(p - 40)]),
            48 => {
                if let Some(c) = sgr_color(&mut it) {
                    pen.bg = c;
                }
            }
            49 => pen.bg = Color::Named(NamedColor::Background),
            58 => {
                if let Some(c) = sgr_color(&mut it) {
                    pen.set_underline_color(Some(c));
                }
            }
            59 => clear_underline_color(pen),
            90..=97 => pen.fg = Color::Named(BRIGHT[usize::from(p - 90)]),
            100..=107 => pen.bg = Color::Named(BRIGHT[usize::from(p - 100)]),
            // 5, 6 and 25 (blinking), and what `vte` does not map.
            _ => {}
        }
    }
}

/// `Cell::set_underline_color(None)`, which does nothing to a pen without
/// extra storage: not called then (SGR 0 is a third of a TUI's sequences).
fn clear_underline_color(pen: &mut Cell) {
    if pen.extra.is_some() {
        pen.set_underline_color(None);
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
        // Nine digits and more, with leading zeros: the value, capped.
        csi.parse(b"\x1b[000065534;0000000000001;00000000065536;4294967296;99999999999m")
            .expect("plain");
        assert_eq!(
            &csi.params[..csi.n],
            &[65534, 1, u16::MAX, u16::MAX, u16::MAX][..]
        );
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
