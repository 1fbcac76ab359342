//! The main screen: a header, the conversation, and at the bottom either the input box
//! (`❯` between two rules, hint line below) or an open dialog.

use super::paint::{color, rule, wrap, Line, Painter, Span};
use crate::settings::Variant;

/// One item of the conversation shown above the input box.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    User(String),
    Reply(String),
    Note(String),
}

/// Static facts shown by the main screen.
pub struct MainView {
    pub variant: Variant,
    pub version: String,
    pub model_name: String,
    pub cwd: String,
    /// The permission mode the footer shows (Shift-Tab cycles it).
    pub mode: crate::mode::Mode,
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let keep: String = s.chars().take(max.saturating_sub(1)).collect();
        format!("{keep}…")
    }
}

fn centered(text: &str, left: u16, width: u16) -> u16 {
    let len = text.chars().count() as u16;
    left + width.saturating_sub(len) / 2
}

impl MainView {
    fn header(&self, cols: u16) -> Vec<Line> {
        match self.variant {
            Variant::V2_1_332 => self.header_332(cols),
            Variant::V2_1_173 => self.header_173(cols),
        }
    }

    fn header_332(&self, cols: u16) -> Vec<Line> {
        let ver = format!("v{}", self.version);
        let max = cols.saturating_sub(12) as usize;
        vec![
            vec![],
            vec![
                Span::new(2, "▐▛███▛█").fg(color::ORANGE),
                Span::new(12, "Claude Code").bold(),
                Span::new(24, ver).fg(color::GREY),
            ],
            vec![
                Span::new(1, "▝▜██████▀").fg(color::ORANGE),
                Span::new(
                    12,
                    truncate(&format!("{} · API Usage Billing", self.model_name), max),
                ),
            ],
            vec![
                Span::new(2, "▝▝   ▝▝").fg(color::ORANGE),
                Span::new(12, truncate(&self.cwd, max)),
            ],
            vec![],
        ]
    }

    fn header_173(&self, cols: u16) -> Vec<Line> {
        let w = cols.clamp(20, 104);
        let o = color::ORANGE;
        let ver = format!("v{}", self.version);
        let ver_end = 18 + ver.chars().count() as u16;
        let two_panels = w >= 80;
        let left_w: u16 = if two_panels { 47 } else { w - 2 };
        let mut top = vec![
            Span::new(1, "╭───").fg(o),
            Span::new(6, "Claude Code").fg(o),
            Span::new(18, ver).fg(color::GREY),
        ];
        if w > ver_end + 2 {
            top.push(
                Span::new(
                    ver_end + 1,
                    format!("{}╮", "─".repeat((w - ver_end - 2) as usize)),
                )
                .fg(o),
            );
        }
        let mut lines = vec![top];
        let frame = |mut inner: Vec<Span>| -> Line {
            let mut l = vec![Span::new(1, "│").fg(o)];
            if two_panels {
                l.push(Span::new(49, "│").fg(o));
            }
            l.push(Span::new(w, "│").fg(o));
            l.append(&mut inner);
            l
        };
        let left = |text: String, fg: Option<u8>, bold: bool| -> Vec<Span> {
            let t = truncate(&text, left_w.saturating_sub(2) as usize);
            let mut s = Span::new(centered(&t, 2, left_w), t);
            s.fg = fg;
            s.bold = bold;
            vec![s]
        };
        let right_w = w.saturating_sub(52) as usize;
        let right = |text: &str, fg: Option<u8>, bold: bool| -> Vec<Span> {
            if !two_panels {
                return vec![];
            }
            let mut s = Span::new(51, truncate(text, right_w));
            s.fg = fg;
            s.bold = bold;
            vec![s]
        };
        let rows: Vec<Vec<Span>> = vec![
            right("Tips for getting started", Some(o), true),
            [
                left("Welcome back!".into(), None, true),
                right(
                    "Ask Claude to create a new app or clone a repository",
                    None,
                    false,
                ),
            ]
            .concat(),
            right(&"─".repeat(right_w), Some(o), false),
            [
                left("▐▛███▜▌".into(), Some(o), false),
                right("What's new", None, true),
            ]
            .concat(),
            [
                left("▝▜█████▛▘".into(), Some(o), false),
                right(
                    "Check the Claude Code changelog for updates",
                    Some(color::GREY),
                    false,
                ),
            ]
            .concat(),
            left("▘▘ ▝▝".into(), Some(o), false),
            vec![],
            left(
                format!("{} · API Usage Billing", self.model_name),
                Some(color::GREY),
                false,
            ),
            left(self.cwd.clone(), Some(color::GREY), false),
        ];
        for r in rows {
            lines.push(frame(r));
        }
        lines.push(vec![Span::new(
            1,
            format!("╰{}╯", "─".repeat((w - 2) as usize)),
        )
        .fg(o)]);
        lines.push(vec![]);
        lines
    }

    fn entries(&self, entries: &[Entry], cols: u16) -> Vec<Line> {
        let width = cols.saturating_sub(4).max(10) as usize;
        let mut lines = Vec::new();
        for (i, e) in entries.iter().enumerate() {
            if i > 0 {
                lines.push(vec![]);
            }
            let (mark, mark_col, text_col, text, fg) = match e {
                Entry::User(t) => (Span::new(1, ">").fg(color::GREY), 1, 3, t, None),
                Entry::Reply(t) => (Span::new(1, "⏺"), 1, 3, t, None),
                Entry::Note(t) => (
                    Span::new(3, "⎿").fg(color::GREY),
                    3,
                    6,
                    t,
                    Some(color::GREY),
                ),
            };
            let _ = mark_col;
            for (j, l) in wrap(text, width).into_iter().enumerate() {
                let mut s = Span::new(text_col, l);
                s.fg = fg;
                if j == 0 {
                    lines.push(vec![mark.clone(), s]);
                } else {
                    lines.push(vec![s]);
                }
            }
        }
        lines
    }

    /// The `❯` line of the input box, with a reverse-video block as the cursor.
    pub fn input_line(&self, text: &str, cols: u16) -> Line {
        let shown: String = text.replace('\n', "⏎");
        let max = cols.saturating_sub(4) as usize;
        let n = shown.chars().count();
        let shown: String = shown.chars().skip(n.saturating_sub(max)).collect();
        let end = 3 + shown.chars().count() as u16;
        vec![
            Span::new(1, "❯"),
            Span::new(3, shown),
            Span::new(end, " ").reverse(),
        ]
    }

    /// Spinner/effort row, rules, `❯` line and hint line. The `❯` line is the third.
    pub fn input_box(&self, text: &str, busy: bool, cols: u16) -> Vec<Line> {
        let status: Line = if busy {
            vec![Span::new(1, "✻ Working… (esc to interrupt)").fg(color::ORANGE)]
        } else {
            match self.variant {
                Variant::V2_1_332 => vec![Span::new(
                    cols.saturating_sub(19).max(1),
                    "◐ medium · /effort",
                )],
                Variant::V2_1_173 => vec![],
            }
        };
        let hint: Line = match self.mode.indicator(self.variant) {
            Some(ind) => {
                let after = 3 + ind.chars().count() as u16;
                let mut l = vec![
                    Span::new(3, ind).fg(color::YELLOW),
                    Span::new(after, self.mode.after_indicator()).fg(color::GREY),
                ];
                if self.variant == Variant::V2_1_173 {
                    let end = after + self.mode.after_indicator().chars().count() as u16 + 2;
                    l.push(
                        Span::new(cols.saturating_sub(17).max(end), "● high · /effort")
                            .fg(color::GREY),
                    );
                }
                l
            }
            None => vec![
                Span::new(3, "? for shortcuts · ← for agents").fg(color::GREY),
                Span::new(cols.saturating_sub(17).max(34), "● high · /effort").fg(color::GREY),
            ],
        };
        vec![
            status,
            rule(cols, color::RULE),
            self.input_line(text, cols),
            rule(cols, color::RULE),
            hint,
        ]
    }

    /// Paints the whole screen; returns the output and the row of the first footer line.
    pub fn draw(&self, entries: &[Entry], footer: &[Line], rows: u16, cols: u16) -> (String, u16) {
        let mut body = self.header(cols);
        body.extend(self.entries(entries, cols));
        let flen = footer.len() as u16;
        let bottom_top = rows.saturating_sub(flen) + 1;
        let footer_top = match self.variant {
            Variant::V2_1_332 => bottom_top,
            Variant::V2_1_173 => bottom_top.min(body.len() as u16 + 1),
        }
        .max(1);
        let visible = (footer_top - 1) as usize;
        let skip = body.len().saturating_sub(visible);
        let mut p = Painter::default();
        for row in 1..footer_top {
            match body.get(skip + row as usize - 1) {
                Some(line) => p.line(row, line),
                None => p.clear_row(row),
            };
        }
        for (i, line) in footer.iter().enumerate() {
            let row = footer_top + i as u16;
            if row <= rows {
                p.line(row, line);
            }
        }
        for row in (footer_top + flen)..=rows {
            p.clear_row(row);
        }
        (p.take(), footer_top)
    }
}
