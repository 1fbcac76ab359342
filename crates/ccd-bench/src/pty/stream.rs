//! The seeded streams every contender carries, byte for byte the same.
//!
//! - `tui`: frames of a full-screen TUI, each inside synchronized output
//!   (`ESC[?2026h … ESC[?2026l`): absolute and relative cursor movement,
//!   SGR colours (16, 256 and truecolor, bold, reverse), box drawing, erase
//!   in line/display, and text mixing ASCII with wide characters (CJK and
//!   emoji). Text never crosses the right margin, so terminals that differ
//!   on edge cases of wide characters at the margin cannot differ here.
//! - `plain`: lines of ASCII words ending in `\r\n` (the emitter's tty is in
//!   raw mode, so no output processing changes the bytes).
//!
//! The generator is deterministic (splitmix64 from `--seed`): the bench
//! generates the same bytes in-process for the expected length and the
//! reference screen.

use std::io::Write;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Tui,
    Plain,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Tui => "tui",
            Kind::Plain => "plain",
        }
    }
}

/// splitmix64: tiny, fast, good enough for test data.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed ^ 0x9e37_79b9_7f4a_7c15)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

const WORDS: &[&str] = &[
    "the", "session", "holder", "daemon", "render", "frame", "cursor", "screen", "build", "test",
    "cargo", "rust", "async", "buffer", "stream", "socket", "thread", "queue", "flush", "write",
    "read", "parse", "token", "context", "model", "reply", "prompt", "agent", "tool", "result",
    "error", "warning", "compile", "link", "crate", "module", "function", "value", "string",
    "vector", "option", "mutex", "channel", "signal", "process", "terminal", "escape", "colour",
];

/// Wide (two-column) words: CJK and emoji.
const WIDE: &[&str] = &[
    "漢字",
    "テスト",
    "中文",
    "한국어",
    "日本語",
    "终端",
    "画面",
    "🚀",
    "🙂",
    "🔥",
    "📦",
    "🌟",
    "🎉",
    "🧪",
];

const BOX_LIGHT: [&str; 6] = ["┌", "─", "┐", "│", "└", "┘"];
const BOX_ROUND: [&str; 6] = ["╭", "─", "╮", "│", "╰", "╯"];
const BOX_DOUBLE: [&str; 6] = ["╔", "═", "╗", "║", "╚", "╝"];
const SPINNER: &[&str] = &["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

fn num(out: &mut Vec<u8>, n: u64) {
    let _ = write!(out, "{n}");
}

fn goto(out: &mut Vec<u8>, row: u16, col: u16) {
    out.extend_from_slice(b"\x1b[");
    num(out, u64::from(row));
    out.push(b';');
    num(out, u64::from(col));
    out.push(b'H');
}

fn sgr(out: &mut Vec<u8>, rng: &mut Rng) {
    match rng.below(7) {
        0 => out.extend_from_slice(b"\x1b[0m"),
        1 => {
            out.extend_from_slice(b"\x1b[1;");
            num(out, 30 + rng.below(8));
            out.push(b'm');
        }
        2 => {
            out.extend_from_slice(b"\x1b[0;");
            num(out, 90 + rng.below(8));
            out.push(b'm');
        }
        3 => {
            out.extend_from_slice(b"\x1b[38;5;");
            num(out, rng.below(256));
            out.push(b'm');
        }
        4 => {
            out.extend_from_slice(b"\x1b[48;5;");
            num(out, rng.below(256));
            out.extend_from_slice(b";38;5;");
            num(out, rng.below(256));
            out.push(b'm');
        }
        5 => {
            out.extend_from_slice(b"\x1b[38;2;");
            num(out, rng.below(256));
            out.push(b';');
            num(out, rng.below(256));
            out.push(b';');
            num(out, rng.below(256));
            out.push(b'm');
        }
        _ => {
            out.extend_from_slice(b"\x1b[48;2;");
            num(out, rng.below(64));
            out.push(b';');
            num(out, rng.below(64));
            out.push(b';');
            num(out, rng.below(64));
            out.extend_from_slice(b";1;3m");
        }
    }
}

/// Words (some wide, some coloured) filling at most `width` columns.
fn text(out: &mut Vec<u8>, rng: &mut Rng, width: u16) {
    let mut used = 0u16;
    loop {
        let (w, cols) = if rng.below(6) == 0 {
            let w = *rng.pick(WIDE);
            (w, (w.chars().count() * 2) as u16)
        } else {
            let w = *rng.pick(WORDS);
            (w, w.len() as u16)
        };
        let need = cols + u16::from(used > 0);
        if used + need > width {
            break;
        }
        if used > 0 {
            out.push(b' ');
        }
        if rng.below(4) == 0 {
            sgr(out, rng);
        }
        out.extend_from_slice(w.as_bytes());
        used += need;
    }
}

fn frame(out: &mut Vec<u8>, rng: &mut Rng, rows: u16, cols: u16, n: u64) {
    out.extend_from_slice(b"\x1b[?2026h");
    let full = n.is_multiple_of(8);
    if full {
        out.extend_from_slice(b"\x1b[0m\x1b[H\x1b[2J");
    }
    // A header line.
    goto(out, 1, 1);
    out.extend_from_slice(b"\x1b[0;1;38;2;215;119;87m");
    out.extend_from_slice(" ✻ Claude Code ".as_bytes());
    out.extend_from_slice(b"\x1b[0;2m");
    let _ = write!(out, "frame {n:08} ");
    out.extend_from_slice(b"\x1b[K\x1b[0m");
    // One or two boxes.
    for _ in 0..1 + rng.below(2) {
        let bw = 20 + rng.below(u64::from(cols - 24)) as u16; // interior + 2
        let bh = 3 + rng.below(u64::from(rows - 8)) as u16;
        let r0 = 2 + rng.below(u64::from(rows - bh - 3)) as u16;
        let c0 = 1 + rng.below(u64::from(cols - bw)) as u16;
        let b = match rng.below(3) {
            0 => BOX_LIGHT,
            1 => BOX_ROUND,
            _ => BOX_DOUBLE,
        };
        sgr(out, rng);
        goto(out, r0, c0);
        out.extend_from_slice(b[0].as_bytes());
        for _ in 0..bw - 2 {
            out.extend_from_slice(b[1].as_bytes());
        }
        out.extend_from_slice(b[2].as_bytes());
        for r in r0 + 1..r0 + bh - 1 {
            goto(out, r, c0);
            out.extend_from_slice(b[3].as_bytes());
            out.extend_from_slice(b"\x1b[0m");
            if rng.below(3) == 0 {
                // Erase the interior with ECH, then write less.
                out.extend_from_slice(b"\x1b[");
                num(out, u64::from(bw - 2));
                out.push(b'X');
            }
            let start = out.len();
            text(out, rng, bw - 2);
            let _ = start;
            out.extend_from_slice(b"\x1b[0m");
            goto(out, r, c0 + bw - 1);
            sgr(out, rng);
            out.extend_from_slice(b[3].as_bytes());
        }
        goto(out, r0 + bh - 1, c0);
        out.extend_from_slice(b[4].as_bytes());
        for _ in 0..bw - 2 {
            out.extend_from_slice(b[1].as_bytes());
        }
        out.extend_from_slice(b[5].as_bytes());
        out.extend_from_slice(b"\x1b[0m");
    }
    // A few loose lines, placed relatively.
    for _ in 0..rng.below(4) {
        goto(out, 2 + rng.below(u64::from(rows - 4)) as u16, 1);
        out.extend_from_slice(b"\x1b[");
        num(out, 1 + rng.below(20));
        out.push(b'C');
        sgr(out, rng);
        text(out, rng, cols - 24);
        out.extend_from_slice(b"\x1b[0m\x1b[K");
    }
    // The input box and status line at the bottom.
    goto(out, rows - 2, 1);
    out.extend_from_slice(b"\x1b[0;38;5;244m");
    for _ in 0..cols {
        out.extend_from_slice("─".as_bytes());
    }
    goto(out, rows - 1, 1);
    out.extend_from_slice(b"\x1b[0m");
    out.extend_from_slice(rng.pick(SPINNER).as_bytes());
    out.extend_from_slice(" ❯ ".as_bytes());
    text(out, rng, cols - 10);
    out.extend_from_slice(b"\x1b[K");
    goto(out, rows, 1);
    out.extend_from_slice(b"\x1b[7m");
    let _ = write!(out, " {n} ");
    out.extend_from_slice(b"\x1b[27;38;5;");
    num(out, rng.below(256));
    out.push(b'm');
    text(out, rng, cols - 20);
    out.extend_from_slice(b"\x1b[0m\x1b[K");
    // Park the cursor in the input line, move it about relatively.
    goto(out, rows - 1, 4);
    out.extend_from_slice(b"\x1b[");
    num(out, 1 + rng.below(40));
    out.extend_from_slice(b"C\x1b[1A\x1b[1B");
    out.extend_from_slice(b"\x1b[?2026l");
}

fn plain_line(out: &mut Vec<u8>, rng: &mut Rng, cols: u16) {
    let target = 10 + rng.below(u64::from(cols - 10)) as usize;
    let start = out.len();
    loop {
        let w = rng.pick(WORDS).as_bytes();
        if out.len() - start + w.len() + 1 > target {
            break;
        }
        if out.len() > start {
            out.push(b' ');
        }
        out.extend_from_slice(w);
    }
    out.extend_from_slice(b"\r\n");
}

/// The stream of `kind`: whole frames (or lines) until at least `bytes`.
pub fn generate(kind: Kind, bytes: usize, seed: u64, rows: u16, cols: u16) -> Vec<u8> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::with_capacity(bytes + 64 * 1024);
    if kind == Kind::Tui {
        // Reset attributes and clear once, like a TUI starting.
        out.extend_from_slice(b"\x1b[0m\x1b[H\x1b[2J\x1b[?25l");
    }
    let mut n = 0u64;
    while out.len() < bytes {
        match kind {
            Kind::Tui => frame(&mut out, &mut rng, rows, cols, n),
            Kind::Plain => plain_line(&mut out, &mut rng, cols),
        }
        n += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_valid_utf8() {
        let a = generate(Kind::Tui, 200_000, 7, 40, 120);
        let b = generate(Kind::Tui, 200_000, 7, 40, 120);
        assert_eq!(a, b);
        assert!(std::str::from_utf8(&a).is_ok());
        assert!(a.len() >= 200_000);
        let p = generate(Kind::Plain, 100_000, 7, 40, 120);
        assert!(p.ends_with(b"\r\n"));
    }

    #[test]
    fn tui_text_stays_inside_the_screen() {
        // Every row of the parsed final screen fits; no line wrapped.
        let s = generate(Kind::Tui, 300_000, 3, 40, 120);
        let mut screen = ccd_screen::Screen::new(40, 120);
        screen.process(&s);
        assert!(screen.contents().contains("Claude Code"));
    }
}
