//! A session's screen as the page draws it: rows of styled text runs.
//!
//! Pure (sans-IO, no async): [`rows`] turns a [`ccd_screen::Screen`] into one
//! `Vec<Run>` per visible row — neighbouring cells with the same look joined
//! into one run, colours resolved to `#rrggbb` with the xterm palette, the
//! trailing blanks of a row left out; [`changed`] says which rows differ from
//! the last frame sent, so a `{"t":"screen"}` message after the first carries
//! only those ([`frame`] builds the message the contract in `lib.rs` names).
//!
//! A wide character (two cells) is a run of its own with `w: true`, so the
//! page can give it two cells' width whatever its font does; its second cell
//! is not sent. Hidden text (SGR 8) is sent as blanks. Dim (SGR 2) is `d`.
//! Inverse is sent as `r` (the page swaps with its own default colours).

use std::collections::BTreeMap;

use ccd_screen::{CellView, Pen, PenColor, Screen};
use serde::Serialize;

/// Cells in a row with the same look, joined.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Run {
    /// The text (combining marks kept).
    pub s: String,
    /// Foreground `#rrggbb`, or `None` for the page's default.
    pub fg: Option<String>,
    /// Background `#rrggbb`, or `None` for the page's default.
    pub bg: Option<String>,
    /// Bold.
    pub b: bool,
    /// Italic.
    pub i: bool,
    /// Underlined (any underline style).
    pub u: bool,
    /// Inverse: foreground and background swapped.
    pub r: bool,
    /// Dim (faint).
    #[serde(skip_serializing_if = "is_false")]
    pub d: bool,
    /// One wide character taking two cells.
    #[serde(skip_serializing_if = "is_false")]
    pub w: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Where the cursor is and whether it shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Cursor {
    /// 0-based row.
    pub row: u16,
    /// 0-based column.
    pub col: u16,
    /// Not hidden by `?25l`.
    pub visible: bool,
}

/// The `{"t":"screen", …}` message: `lines` maps a row index (as a string,
/// JSON keys are strings) to its runs; an empty list is a blank row.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ScreenFrame {
    /// Always `"screen"`.
    pub t: &'static str,
    /// The session id.
    pub session: String,
    /// Columns.
    pub cols: u16,
    /// Rows.
    pub rows: u16,
    /// The cursor.
    pub cursor: Cursor,
    /// Every row is in `lines` (the first frame, or the size changed).
    pub full: bool,
    /// The rows sent (all of them in a full frame).
    pub lines: BTreeMap<String, Vec<Run>>,
}

/// The look of a cell, without its text: what runs are split by.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Look {
    fg: Option<String>,
    bg: Option<String>,
    b: bool,
    i: bool,
    u: bool,
    r: bool,
    d: bool,
    hidden: bool,
}

impl Look {
    fn of(pen: &Pen) -> Self {
        Self {
            fg: hex(pen.fg()),
            bg: hex(pen.bg()),
            b: pen.bold(),
            i: pen.italic(),
            u: pen.underline(),
            r: pen.inverse(),
            d: pen.dim(),
            hidden: pen.hidden(),
        }
    }

    /// A blank drawn with this look shows nothing (so it may be trimmed off
    /// the end of a row).
    fn is_plain(&self) -> bool {
        self.bg.is_none() && !self.u && !self.r
    }

    fn run(&self, s: String, w: bool) -> Run {
        Run {
            s,
            fg: self.fg.clone(),
            bg: self.bg.clone(),
            b: self.b,
            i: self.i,
            u: self.u,
            r: self.r,
            d: self.d,
            w,
        }
    }
}

/// The visible screen as rows of runs (exactly `rows` entries).
pub fn rows(screen: &Screen) -> Vec<Vec<Run>> {
    screen.cells().rows().iter().map(|r| row(r)).collect()
}

fn row(cells: &[CellView]) -> Vec<Run> {
    let mut runs: Vec<Run> = Vec::new();
    let mut current: Option<(Look, String)> = None;
    // The end of the last cell that is not a plain blank: the row is cut
    // there (in bytes of the run being built, and in runs).
    let mut keep: (usize, usize) = (0, 0);
    for cell in cells {
        let (text, wide, pen) = match cell {
            CellView::Spacer(_) => continue,
            CellView::Char { text, wide, pen } => (text, *wide, pen),
        };
        let look = Look::of(pen);
        let text: &str = if look.hidden {
            if wide {
                "  "
            } else {
                " "
            }
        } else {
            text
        };
        let same = matches!(&current, Some((l, _)) if *l == look) && !wide;
        if !same {
            if let Some((l, s)) = current.take() {
                runs.push(l.run(s, false));
            }
        }
        if wide {
            runs.push(look.run(text.to_owned(), true));
            keep = (runs.len(), 0);
            continue;
        }
        let (_, s) = current.get_or_insert_with(|| (look.clone(), String::new()));
        s.push_str(text);
        if text != " " || !look.is_plain() {
            keep = (runs.len() + 1, s.len());
        }
    }
    if let Some((l, s)) = current.take() {
        runs.push(l.run(s, false));
    }
    let (count, bytes) = keep;
    runs.truncate(count);
    if bytes > 0 {
        if let Some(last) = runs.last_mut() {
            last.s.truncate(bytes);
        }
    }
    runs
}

/// Where the cursor is, and whether it shows.
pub fn cursor(screen: &Screen) -> Cursor {
    let (row, col) = screen.cursor_position();
    Cursor {
        row,
        col,
        visible: !screen.modes().hide_cursor,
    }
}

/// The rows of `next` that differ from `last` (every row when the number
/// of rows changed).
pub fn changed(last: &[Vec<Run>], next: &[Vec<Run>]) -> Vec<usize> {
    if last.len() != next.len() {
        return (0..next.len()).collect();
    }
    (0..next.len()).filter(|&i| last[i] != next[i]).collect()
}

/// The message for `session`'s `screen`: every row when `last` is `None`
/// (the first frame, or the size changed), else only the rows that
/// changed since `last`; and the rows now (to pass as `last` next time).
/// `None` for the message when nothing changed (rows and cursor alike:
/// the cursor is compared by the caller's `last_cursor`).
pub fn frame(
    session: &str,
    screen: &Screen,
    last: Option<(&[Vec<Run>], Cursor)>,
) -> (Option<ScreenFrame>, Vec<Vec<Run>>) {
    let now = rows(screen);
    let cur = cursor(screen);
    let (rows_n, cols) = screen.size();
    let (full, sent): (bool, Vec<usize>) = match last {
        Some((last, _)) if last.len() == now.len() => (false, changed(last, &now)),
        _ => (true, (0..now.len()).collect()),
    };
    if sent.is_empty() && last.is_some_and(|(_, c)| c == cur) {
        return (None, now);
    }
    let lines = sent
        .iter()
        .map(|&i| (i.to_string(), now[i].clone()))
        .collect();
    let frame = ScreenFrame {
        t: "screen",
        session: session.to_owned(),
        cols,
        rows: rows_n,
        cursor: cur,
        full,
        lines,
    };
    (Some(frame), now)
}

/// `#rrggbb` of a pen colour (`None`: the page's default).
fn hex(c: PenColor) -> Option<String> {
    let (r, g, b) = match c {
        PenColor::Default => return None,
        PenColor::Indexed(i) => xterm(i),
        PenColor::Rgb(r, g, b) => (r, g, b),
    };
    Some(format!("#{r:02x}{g:02x}{b:02x}"))
}

/// xterm's default 256-colour palette.
fn xterm(i: u8) -> (u8, u8, u8) {
    const SIXTEEN: [(u8, u8, u8); 16] = [
        (0x00, 0x00, 0x00),
        (0xcd, 0x00, 0x00),
        (0x00, 0xcd, 0x00),
        (0xcd, 0xcd, 0x00),
        (0x00, 0x00, 0xee),
        (0xcd, 0x00, 0xcd),
        (0x00, 0xcd, 0xcd),
        (0xe5, 0xe5, 0xe5),
        (0x7f, 0x7f, 0x7f),
        (0xff, 0x00, 0x00),
        (0x00, 0xff, 0x00),
        (0xff, 0xff, 0x00),
        (0x5c, 0x5c, 0xff),
        (0xff, 0x00, 0xff),
        (0x00, 0xff, 0xff),
        (0xff, 0xff, 0xff),
    ];
    const LEVELS: [u8; 6] = [0, 95, 135, 175, 215, 255];
    match i {
        0..=15 => SIXTEEN[usize::from(i)],
        16..=231 => {
            let n = i - 16;
            (
                LEVELS[usize::from(n / 36)],
                LEVELS[usize::from(n / 6 % 6)],
                LEVELS[usize::from(n % 6)],
            )
        }
        _ => {
            let v = 8 + 10 * (i - 232);
            (v, v, v)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn screen(rows: u16, cols: u16, bytes: &[u8]) -> Screen {
        let mut s = Screen::new(rows, cols);
        s.process(bytes);
        s
    }

    fn text(runs: &[Run]) -> String {
        runs.iter().map(|r| r.s.as_str()).collect()
    }

    #[test]
    fn plain_text_is_one_run_per_row_without_trailing_blanks() {
        let s = screen(3, 20, b"hello  world   \r\nnext");
        let r = rows(&s);
        assert_eq!(r.len(), 3);
        assert_eq!(r[0].len(), 1);
        assert_eq!(r[0][0].s, "hello  world");
        assert_eq!(r[0][0].fg, None);
        assert_eq!(r[0][0].bg, None);
        assert!(!r[0][0].b && !r[0][0].i && !r[0][0].u && !r[0][0].r);
        assert_eq!(text(&r[1]), "next");
        assert!(r[2].is_empty());
    }

    #[test]
    fn sgr_colours_resolve_to_the_xterm_palette() {
        let s = screen(
            1,
            40,
            b"\x1b[31mr\x1b[91mR\x1b[38;5;160mi\x1b[38;5;244mg\x1b[38;2;1;2;3mt\x1b[44mb\x1b[0mz",
        );
        let r = &rows(&s)[0];
        let fg: Vec<_> = r.iter().map(|r| r.fg.as_deref()).collect();
        assert_eq!(
            fg,
            [
                Some("#cd0000"),
                Some("#ff0000"),
                Some("#d70000"),
                Some("#808080"),
                Some("#010203"),
                Some("#010203"),
                None
            ]
        );
        assert_eq!(r[5].bg.as_deref(), Some("#0000ee"));
        assert_eq!(r[4].bg, None);
        assert_eq!(text(r), "rRigtbz");
    }

    #[test]
    fn the_palette_cube_and_greys() {
        assert_eq!(xterm(16), (0, 0, 0));
        assert_eq!(xterm(231), (255, 255, 255));
        assert_eq!(xterm(16 + 36 + 6 * 2 + 3), (95, 135, 175));
        assert_eq!(xterm(232), (8, 8, 8));
        assert_eq!(xterm(255), (238, 238, 238));
    }

    #[test]
    fn attributes_split_runs() {
        let s = screen(
            1,
            40,
            b"a\x1b[1mb\x1b[3mc\x1b[4md\x1b[7me\x1b[0m\x1b[2mf\x1b[0m\x1b[8mhid\x1b[0m.",
        );
        let r = &rows(&s)[0];
        assert_eq!(
            r.iter().map(|r| r.s.as_str()).collect::<Vec<_>>(),
            ["a", "b", "c", "d", "e", "f", "   ", "."]
        );
        let flags: Vec<_> = r.iter().map(|r| (r.b, r.i, r.u, r.r, r.d)).collect();
        assert_eq!(flags[0], (false, false, false, false, false));
        assert_eq!(flags[1], (true, false, false, false, false));
        assert_eq!(flags[2], (true, true, false, false, false));
        assert_eq!(flags[3], (true, true, true, false, false));
        assert_eq!(flags[4], (true, true, true, true, false));
        assert_eq!(flags[5], (false, false, false, false, true));
    }

    #[test]
    fn styled_trailing_blanks_are_kept_plain_ones_dropped() {
        let s = screen(2, 10, b"x\x1b[41m   \x1b[0m   \r\ny\x1b[4m  \x1b[0m");
        let r = rows(&s);
        assert_eq!(text(&r[0]), "x   ");
        assert_eq!(r[0][1].bg.as_deref(), Some("#cd0000"));
        assert_eq!(text(&r[1]), "y  ");
        assert!(r[1][1].u);
    }

    #[test]
    fn a_wide_character_is_its_own_run_and_its_second_cell_is_not_sent() {
        let s = screen(1, 10, "a日本b".as_bytes());
        let r = &rows(&s)[0];
        assert_eq!(
            r.iter().map(|r| (r.s.as_str(), r.w)).collect::<Vec<_>>(),
            [("a", false), ("日", true), ("本", true), ("b", false)]
        );
        let json = serde_json::to_string(&r[0]).expect("json");
        assert_eq!(
            json,
            r#"{"s":"a","fg":null,"bg":null,"b":false,"i":false,"u":false,"r":false}"#
        );
        assert!(serde_json::to_string(&r[1])
            .expect("json")
            .contains(r#""w":true"#));
    }

    #[test]
    fn combining_marks_stay_with_their_character() {
        let s = screen(1, 10, "e\u{301}x".as_bytes());
        assert_eq!(text(&rows(&s)[0]), "e\u{301}x");
    }

    #[test]
    fn cursor_position_and_visibility() {
        let mut s = screen(5, 20, b"ab\r\ncd");
        assert_eq!(
            cursor(&s),
            Cursor {
                row: 1,
                col: 2,
                visible: true
            }
        );
        s.process(b"\x1b[?25l\x1b[4;7H");
        assert_eq!(
            cursor(&s),
            Cursor {
                row: 3,
                col: 6,
                visible: false
            }
        );
    }

    #[test]
    fn frames_send_everything_first_then_only_the_rows_that_changed() {
        let mut s = screen(4, 20, b"one\r\ntwo\r\nthree");
        let (first, last) = frame("sid", &s, None);
        let first = first.expect("a first frame");
        assert_eq!(first.lines.len(), 4);
        assert!(first.full);
        assert_eq!((first.cols, first.rows), (20, 4));
        let json = serde_json::to_value(&first).expect("json");
        assert_eq!(json["t"], "screen");
        assert_eq!(json["session"], "sid");
        assert_eq!(json["lines"]["1"][0]["s"], "two");
        assert_eq!(json["cursor"]["row"], 2);
        let cur = first.cursor;

        // Nothing moved: no message.
        let (none, last) = frame("sid", &s, Some((&last, cur)));
        assert!(none.is_none());

        s.process(b"\x1b[2;1HTWO");
        let (next, _) = frame("sid", &s, Some((&last, cur)));
        let next = next.expect("a change");
        assert!(!next.full);
        assert_eq!(next.lines.keys().collect::<Vec<_>>(), ["1"]);
        assert_eq!(text(&next.lines["1"]), "TWO");
        assert_eq!((next.cursor.row, next.cursor.col), (1, 3));
    }

    #[test]
    fn a_cursor_move_alone_is_a_frame_with_no_rows() {
        let mut s = screen(2, 10, b"x");
        let (first, last) = frame("s", &s, None);
        let cur = first.expect("first").cursor;
        s.process(b"\x1b[2;5H");
        let (f, _) = frame("s", &s, Some((&last, cur)));
        let f = f.expect("the cursor moved");
        assert!(f.lines.is_empty());
        assert_eq!((f.cursor.row, f.cursor.col), (1, 4));
    }

    #[test]
    fn a_resize_changes_every_row() {
        let mut s = screen(2, 10, b"x");
        let before = rows(&s);
        s.resize(3, 10);
        assert_eq!(changed(&before, &rows(&s)), [0, 1, 2]);
    }

    /// A recorded Claude Code permission dialog: the rows' text is the
    /// screen's text, colours are there, and feeding the rest of the stream
    /// after a first frame changes exactly the rows whose runs differ.
    #[test]
    fn recorded_permission_dialogs_render_to_the_screens_text() {
        for (name, bin) in [
            (
                "permission-bash-2.1.332",
                &include_bytes!("../../../tests/recordings/claude-cli/permission-bash-2.1.332.bin")
                    [..],
            ),
            (
                "permission-write-2.1.173",
                &include_bytes!(
                    "../../../tests/recordings/claude-cli/permission-write-2.1.173.bin"
                )[..],
            ),
        ] {
            let mut s = Screen::new(40, 120);
            let half = bin.len() / 2;
            s.process(&bin[..half]);
            let before = rows(&s);
            s.process(&bin[half..]);
            let after = rows(&s);
            // Styled blanks stay (the prompt row's background runs to the
            // edge); the text is the screen's.
            let texts: Vec<String> = after
                .iter()
                .map(|r| text(r).trim_end_matches(' ').to_string())
                .collect();
            assert_eq!(texts, s.rows_text(), "{name}");
            assert!(
                after.iter().flatten().any(|r| r.bg.is_some()),
                "{name}: a background is drawn"
            );
            assert!(
                texts.iter().any(|t| t.contains("Do you want")),
                "{name}: the dialog is on screen"
            );
            assert!(
                after.iter().flatten().any(|r| r.fg.is_some()),
                "{name}: Claude Code draws in colour"
            );
            let diff = changed(&before, &after);
            assert!(!diff.is_empty(), "{name}");
            for i in 0..after.len() {
                assert_eq!(diff.contains(&i), before[i] != after[i], "{name} row {i}");
            }
        }
    }
}
