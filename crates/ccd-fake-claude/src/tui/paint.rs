//! Drawing primitives: styled spans placed at columns, and a painter that turns lines into
//! cursor movements plus text.

/// 256-colour palette entries used by the real TUI.
pub mod color {
    pub const ORANGE: u8 = 174;
    pub const YELLOW: u8 = 220;
    pub const GREY: u8 = 246;
    pub const RULE: u8 = 244;
    pub const SELECT: u8 = 153;
    pub const ERROR: u8 = 211;
}

/// Text at a 1-based column, with optional colour, bold and reverse video.
#[derive(Debug, Clone, Default)]
pub struct Span {
    pub col: u16,
    pub fg: Option<u8>,
    pub bold: bool,
    pub reverse: bool,
    pub text: String,
}

impl Span {
    pub fn new(col: u16, text: impl Into<String>) -> Span {
        Span {
            col,
            text: text.into(),
            ..Span::default()
        }
    }
    pub fn fg(mut self, c: u8) -> Span {
        self.fg = Some(c);
        self
    }
    pub fn bold(mut self) -> Span {
        self.bold = true;
        self
    }
    pub fn reverse(mut self) -> Span {
        self.reverse = true;
        self
    }
}

/// One screen row.
pub type Line = Vec<Span>;

/// A horizontal rule across `cols` columns.
pub fn rule(cols: u16, fg: u8) -> Line {
    vec![Span::new(1, "─".repeat(cols as usize)).fg(fg)]
}

/// Splits `text` into lines of at most `width` characters at spaces.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines = Vec::new();
    for para in text.split('\n') {
        let mut cur = String::new();
        for word in para.split(' ') {
            let wlen = word.chars().count();
            let clen = cur.chars().count();
            if clen > 0 && clen + 1 + wlen > width {
                lines.push(std::mem::take(&mut cur));
            }
            if !cur.is_empty() {
                cur.push(' ');
            }
            cur.push_str(word);
            while cur.chars().count() > width {
                let head: String = cur.chars().take(width).collect();
                let tail: String = cur.chars().skip(width).collect();
                lines.push(head);
                cur = tail;
            }
        }
        lines.push(cur);
    }
    lines
}

/// Accumulates escape sequences and text for one write.
#[derive(Default)]
pub struct Painter {
    buf: String,
}

impl Painter {
    pub fn raw(&mut self, s: &str) -> &mut Self {
        self.buf.push_str(s);
        self
    }

    pub fn goto(&mut self, row: u16, col: u16) -> &mut Self {
        self.buf.push_str(&format!("\x1b[{row};{col}H"));
        self
    }

    pub fn clear_row(&mut self, row: u16) -> &mut Self {
        self.goto(row, 1).raw("\x1b[2K")
    }

    /// Clears `row` and paints `line` on it. Words are placed with column moves
    /// (`ESC[<col>G`), never with runs of plain spaces between them.
    pub fn line(&mut self, row: u16, line: &[Span]) -> &mut Self {
        self.clear_row(row);
        for span in line {
            if span.text.is_empty() {
                continue;
            }
            if let Some(c) = span.fg {
                self.buf.push_str(&format!("\x1b[38;5;{c}m"));
            }
            if span.bold {
                self.buf.push_str("\x1b[1m");
            }
            if span.reverse {
                self.buf.push_str("\x1b[7m");
            }
            let mut col = span.col;
            let mut first = true;
            let mut word = String::new();
            let mut word_col = col;
            let flush = |buf: &mut String, word: &mut String, at: u16, first: &mut bool| {
                if !word.is_empty() {
                    if *first {
                        buf.push_str(&format!("\x1b[{row};{at}H"));
                        *first = false;
                    } else {
                        buf.push_str(&format!("\x1b[{at}G"));
                    }
                    buf.push_str(word);
                    word.clear();
                }
            };
            for ch in span.text.chars() {
                if ch == ' ' && !span.reverse {
                    flush(&mut self.buf, &mut word, word_col, &mut first);
                    col += 1;
                    word_col = col;
                } else {
                    word.push(ch);
                    col += 1;
                }
            }
            flush(&mut self.buf, &mut word, word_col, &mut first);
            if span.reverse {
                self.buf.push_str("\x1b[27m");
            }
            if span.bold {
                self.buf.push_str("\x1b[22m");
            }
            if span.fg.is_some() {
                self.buf.push_str("\x1b[39m");
            }
        }
        self
    }

    pub fn take(&mut self) -> String {
        std::mem::take(&mut self.buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_placed_by_column() {
        let mut p = Painter::default();
        p.line(3, &[Span::new(2, "Yes, I trust")]);
        assert_eq!(
            p.take(),
            "\x1b[3;1H\x1b[2K\x1b[3;2HYes,\x1b[7GI\x1b[9Gtrust"
        );
    }

    #[test]
    fn wrapping() {
        assert_eq!(wrap("aa bb cc", 5), vec!["aa bb", "cc"]);
        assert_eq!(wrap("a\nb", 5), vec!["a", "b"]);
    }
}
